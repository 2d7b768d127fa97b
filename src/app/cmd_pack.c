/*
 * cmd_pack.c — `daybreak pack-data`: a dataset folder into one dataset pack (data/pack.h),
 * which --data then accepts in place of the folder (docs/gpu.md "Dataset packs").
 */
#define _XOPEN_SOURCE 700
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "app/cli.h"
#include "core/alloc.h"
#include "core/timer.h"
#include "data/dataset.h"
#include "data/pack.h"
#include "data/pack_write.h"
#include "data/source.h"

void dbk_help_pack_data(void) {
    printf("usage: daybreak pack-data --out FILE [options]\n\n"
           "Packs a dataset's folder into FILE: one file with a checksum per entry, each entry\n"
           "zstd-compressed or, when zstd does not shrink it (JPEG, PNG), stored as it is; --data\n"
           "(and DAYBREAK_DATA) accept FILE in place of the data folder, recognised by its content,\n"
           "and image folders are decoded straight from it. The folder is checked first as\n"
           "training would check it; the pack is then read back, every entry verified, and checked\n"
           "the same way. Prints the sizes and times. FILE is written whole or not at all.\n\n"
           "options:\n"
           "  --out FILE      the pack to write (required; an existing file is replaced only when it\n"
           "                  is a dataset pack; never inside a dataset folder)\n"
           "  --dataset NAME  dataset kind (default cifar10; 'daybreak recipes' lists them)\n"
           "  --data DIR      data folder holding the dataset's folder (default: $DAYBREAK_DATA)\n"
           "  --level N       zstd level 1..19 (default %d; 1 packs fastest)\n",
           DBK_PACK_DEFAULT_LEVEL);
}

/* Decompresses and verifies every entry; the largest entry's buffer is reused. */
static dbk_status verify_entries(const char *path) {
    dbk_pack *p = NULL;
    DBK_TRY(dbk_pack_open(path, &p));
    size_t cap = 0;
    for (int i = 0; i < dbk_pack_count(p); i++)
        if (dbk_pack_raw_bytes(p, i) > cap) cap = (size_t)dbk_pack_raw_bytes(p, i);
    void *buf = dbk_malloc(cap ? cap : 1);
    dbk_status st = buf ? DBK_OK : DBK_ERR_OUT_OF_HOST_MEMORY;
    for (int i = 0; st == DBK_OK && i < dbk_pack_count(p); i++) st = dbk_pack_read(p, i, buf, cap);
    dbk_free(buf);
    dbk_pack_close(p);
    return st;
}

int dbk_cmd_pack_data(dbk_cli_args *a) {
    const char *out = NULL, *data = NULL, *dataset = "cifar10", *v;
    long level = DBK_PACK_DEFAULT_LEVEL;
    for (a->i = 2; a->i < a->argc; a->i++) {
        int m;
        if (!strcmp(a->argv[a->i], "--help") || !strcmp(a->argv[a->i], "-h")) {
            dbk_help_pack_data();
            return DBK_EXIT_OK;
        }
        if ((m = dbk_cli_match(a, "--out", true, &v))) {
            if (m < 0 || !*v) return dbk_cli_usage_error("pack-data", "--out needs a file name, not an empty one");
            out = v;
        } else if ((m = dbk_cli_match(a, "--data", true, &v))) {
            if (m < 0) return dbk_cli_usage_error("pack-data", "--data needs a folder");
            data = v;
        } else if ((m = dbk_cli_match(a, "--dataset", true, &v))) {
            if (m < 0) return dbk_cli_usage_error("pack-data", "--dataset needs a name");
            dataset = v;
        } else if ((m = dbk_cli_match(a, "--level", true, &v))) {
            if (m < 0 || !dbk_cli_parse_long(v, 1, 19, &level))
                return dbk_cli_usage_error("pack-data", "--level needs a whole number from 1 to 19");
        } else {
            return dbk_cli_usage_error("pack-data", "unknown option '%s'", a->argv[a->i]);
        }
    }
    if (!out) return dbk_cli_usage_error("pack-data", "--out FILE is required");

    const dbk_dataset_kind *kind;
    if (dbk_dataset_kind_find(dataset, &kind) != DBK_OK) return dbk_cli_fail(NULL);
    dbk_dataset_info info;
    if (dbk_dataset_open(kind, data, &info) != DBK_OK) return dbk_cli_fail(NULL);
    char dir[DBK_DATASET_PATH_BYTES];
    snprintf(dir, sizeof dir, "%s", info.dir);
    dbk_dataset_info_deinit(&info);
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "daybreak: error: %s is already inside a dataset pack; pack-data reads folders\n", dir);
        return DBK_EXIT_ERROR;
    }
    dbk_output_spec spec = {.flag = "--out", .what = "dataset pack", .kind = DBK_OUTPUT_FILE,
                            .is_earlier_output = dbk_pack_is_pack};
    dbk_output_add_input(&spec, "the data folder", data ? data : getenv("DAYBREAK_DATA"), false);
    dbk_output_add_input(&spec, "the dataset folder", dir, true);
    int rc = dbk_cli_check_output(&spec, out);
    if (rc != DBK_EXIT_OK) return rc;

    double t0 = dbk_time_now();
    dbk_pack_write_stats stats;
    if (dbk_pack_write_dir(dir, kind->folder, out, (int)level, &stats) != DBK_OK) return dbk_cli_fail("pack-data");
    double t1 = dbk_time_now();
    if (verify_entries(out) != DBK_OK) return dbk_cli_fail("reading the pack back");
    double t2 = dbk_time_now();
    char inner[DBK_DATASET_PATH_BYTES + 256];
    snprintf(inner, sizeof inner, "%s/%s", out, kind->folder);
    if (dbk_dataset_open_dir(kind, inner, &info) != DBK_OK) return dbk_cli_fail("checking the pack as a dataset");
    dbk_dataset_info_deinit(&info);
    printf("packed %s from %s: %d files (%d stored as they are), %llu bytes -> %s: %llu bytes (%.1f%%), zstd level "
           "%ld, %.1f s; read back and verified in %.1f s\n", kind->name, dir, stats.entries, stats.stored_entries,
           (unsigned long long)stats.raw_bytes, out, (unsigned long long)stats.pack_bytes,
           100.0 * (double)stats.pack_bytes / (double)stats.raw_bytes, level, t1 - t0, t2 - t1);
    return DBK_EXIT_OK;
}
