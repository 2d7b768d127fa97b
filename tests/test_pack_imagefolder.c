/*
 * test_pack_imagefolder.c — an image folder in a dataset pack, end to end through the command
 * line: a part of the real Imagenette subset in $DAYBREAK_DATA (4 training and 2 validation
 * photographs per class, linked into a folder of the ImageNet layout) is packed with `daybreak
 * pack-data --dataset imagenette`; its JPEGs must be stored as they are; then `daybreak train
 * --recipe imagenette-resnet18` for one epoch (5 steps of 8 images at 32x32) from the folder and
 * from the pack must give the same losses and accuracies to the last digit (same images, same
 * order: the loader depends on the seed only); a pack with a damaged JPEG byte, and a truncated
 * pack, must stop the run with a one-line error naming the pack.
 *
 * usage: test_pack_imagefolder <daybreak executable>
 */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "data/imagefolder.h"
#include "data/pack.h"
#include "test_util.h"

#define SUBSET     "imagenette2-224-mini"
#define TRAIN_EACH 4
#define VAL_EACH   2

static const char *exe, *data_root;
static char tmp[4096], folder_root[4200], pack_path[4200];
static char out[65536];

/* Links the first `each` images of every class of split into dst/split/<class>/. */
static int link_split(const char *src, const char *dst, dbk_dataset_split split, const char *name, int each) {
    dbk_imagefolder_list l;
    DBK_CHECK_OK(dbk_imagefolder_scan(src, split, &l));
    for (int32_t i = 0, taken = 0, label = -1; i < l.count; i++) {
        if (l.labels[i] != label) label = l.labels[i], taken = 0;
        if (taken++ >= each) continue;
        const char *path = dbk_imagefolder_path(&l, i), *file = strrchr(path, '/') + 1;
        char dir[4400], link_path[4600];
        snprintf(dir, sizeof dir, "%s/%s/%s", dst, name, l.class_names[label]);
        DBK_CHECK_OK(dbk_mkdir_p(dir));
        snprintf(link_path, sizeof link_path, "%s/%s", dir, file);
        DBK_CHECK_MSG(symlink(path, link_path) == 0, "symlink %s", link_path);
    }
    dbk_imagefolder_list_deinit(&l);
    return 0;
}

static int pack_data_should_store_the_jpegs(void) {
    char src[4400], dst[4400], args[9000];
    snprintf(src, sizeof src, "%s/" SUBSET, data_root);
    snprintf(folder_root, sizeof folder_root, "%s/folder", tmp);
    snprintf(dst, sizeof dst, "%s/" SUBSET, folder_root);
    if (link_split(src, dst, DBK_DATASET_SPLIT_TRAIN, "train", TRAIN_EACH)) return 1;
    if (link_split(src, dst, DBK_DATASET_SPLIT_TEST, "val", VAL_EACH)) return 1;
    snprintf(src, sizeof src, "%s/" SUBSET "/classes.txt", data_root);
    char classes[4600];
    snprintf(classes, sizeof classes, "%s/classes.txt", dst);
    DBK_CHECK(symlink(src, classes) == 0);

    snprintf(pack_path, sizeof pack_path, "%s/mini.dbkpack", tmp);
    snprintf(args, sizeof args, "pack-data --dataset imagenette --data '%s' --out '%s' --level 1", folder_root, pack_path);
    int rc = dbk_test_run_daybreak(exe, args, out, sizeof out);
    printf("%s", out);
    DBK_CHECK_MSG(rc == 0, "pack-data exited %d", rc);
    /* 10 classes x (4 + 2) JPEGs stored, classes.txt compressed */
    DBK_CHECK_MSG(strstr(out, "61 files") && strstr(out, "60 stored as they are"), "%s", out);
    return 0;
}

/* Trains one epoch from data into tmp/<name>; its epoch record into *epoch (caller deletes). */
static int train_from(const char *data, const char *name, cJSON **epoch) {
    char run[4400], args[9000], path[4600];
    snprintf(run, sizeof run, "%s/%s", tmp, name);
    snprintf(args, sizeof args,
             "train --recipe imagenette-resnet18 --backend cpu --data '%s' --epochs 1 --batch 8 --all-epochs --seed 3 "
             "--loader-threads 2 --no-progress --quiet --out '%s'", data, run);
    int rc = dbk_test_run_daybreak(exe, args, out, sizeof out);
    DBK_CHECK_MSG(rc == 0 || rc == 3, "daybreak train from %s exited %d:\n%s", data, rc, out);
    snprintf(path, sizeof path, "%s/result.json", run);
    void *text;
    size_t n;
    DBK_CHECK_OK(dbk_file_read_all(path, &text, &n));
    cJSON *root = cJSON_ParseWithLength(text, n);
    dbk_free(text);
    DBK_CHECK(root != NULL);
    *epoch = cJSON_DetachItemFromArray(cJSON_GetObjectItemCaseSensitive(root, "epochs"), 0);
    cJSON_Delete(root);
    DBK_CHECK(*epoch != NULL);
    return 0;
}

static int training_from_the_pack_should_match_the_folder(void) {
    cJSON *a = NULL, *b = NULL;
    if (train_from(folder_root, "from-folder", &a) || train_from(pack_path, "from-pack", &b)) return 1;
    static const char *keys[] = {"train_loss", "train_accuracy", "test_loss", "test_accuracy", "test_top5_accuracy"};
    int same = 1;
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        const double x = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(a, keys[k]));
        const double y = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(b, keys[k]));
        printf("  %-19s folder %.9g  pack %.9g\n", keys[k], x, y);
        same &= x == y;
    }
    cJSON_Delete(a);
    cJSON_Delete(b);
    DBK_CHECK_MSG(same, "the run from the pack differs from the run from the folder");
    return 0;
}

/* A copy of the pack with one byte changed (at, value) or cut to `at` bytes; then a run from
 * it must fail with one line naming it and with `expect` in it. */
static int damaged_pack_should_be_named(const char *name, size_t at, bool truncate, const char *expect) {
    void *bytes;
    size_t n;
    char bad[4400], cmd[14000], run[4600];
    DBK_CHECK_OK(dbk_file_read_all(pack_path, &bytes, &n));
    DBK_CHECK(at < n);
    if (!truncate) ((unsigned char *)bytes)[at] ^= 0x5a;
    snprintf(bad, sizeof bad, "%s/%s.dbkpack", tmp, name);
    DBK_CHECK_OK(dbk_file_write_atomic(bad, bytes, truncate ? at : n));
    dbk_free(bytes);
    snprintf(run, sizeof run, "%s/run-%s", tmp, name);
    /* stderr only: the error line */
    snprintf(cmd, sizeof cmd,
             "{ '%s' train --recipe imagenette-resnet18 --backend cpu --data '%s' --epochs 1 --batch 8 --seed 3 "
             "--loader-threads 2 --no-progress --quiet --out '%s' 2>&1 >/dev/null; }", exe, bad, run);
    int rc = dbk_test_run_command(cmd, out, sizeof out);
    printf("  %s: exit %d: %s", name, rc, out);
    DBK_CHECK_MSG(rc == 1, "exit %d, expected 1", rc);
    DBK_CHECK_MSG(strstr(out, bad) && strstr(out, expect), "the error names neither %s nor '%s'", bad, expect);
    DBK_CHECK_MSG(strchr(out, '\n') == out + strlen(out) - 1, "more than one line");
    return 0;
}

static int damaged_packs_should_be_refused(void) {
    /* a third of the way into the file is inside a training JPEG (classes.txt is a few hundred
     * bytes at the start, then the 40 training JPEGs: train/ sorts before val/): its checksum
     * fails when the loader reads it */
    size_t size = 0;
    void *bytes;
    DBK_CHECK_OK(dbk_file_read_all(pack_path, &bytes, &size));
    dbk_free(bytes);
    if (damaged_pack_should_be_named("damaged", size / 3, false, "checksum mismatch")) return 1;
    return damaged_pack_should_be_named("truncated", size - 7, true, "truncated");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_pack_imagefolder <daybreak executable>\n");
        return 2;
    }
    exe = argv[1];
    data_root = getenv("DAYBREAK_DATA");
    if (!dbk_test_imagenette_dir()) return dbk_test_skip_or_fail_in_ci(DBK_TEST_NO_IMAGENETTE);
    const char *d = dbk_test_tmpdir("pack-imagefolder");
    if (!d) return 1;
    snprintf(tmp, sizeof tmp, "%s", d);
    DBK_RUN(pack_data_should_store_the_jpegs);
    DBK_RUN(training_from_the_pack_should_match_the_folder);
    DBK_RUN(damaged_packs_should_be_refused);
    return dbk_test_finish();
}
