/*
 * cmd_infer.c — `daybreak infer`: DAWNBench inference latency of a checkpoint (bench/infer.h),
 * printed and written as the DAWNBench inference entry.
 */
#define _POSIX_C_SOURCE 200809L
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/cli.h"
#include "bench/infer.h"
#include "data/dataset.h"

void dbk_help_infer(void) {
    printf("usage: daybreak infer --checkpoint FILE [options]\n\n"
           "Classifies the test images of the checkpoint's dataset one at a time (batch 1, the device\n"
           "waited for after every image) with a model.ckpt written by 'daybreak train', and reports\n"
           "DAWNBench's inference latency (time for all images / number of images, in ms), the top-1\n"
           "accuracy and, where the hardware profile has a price, the cost per image. An image\n"
           "folder's validation split is decoded by threads while the device classifies; their wait\n"
           "is printed and left out of the latency. Writes the DAWNBench inference entry JSON.\n\n"
           "options:\n"
           "  --checkpoint FILE   the checkpoint (required)\n"
           "  --diff FILE         a small checkpoint (model.diff of train --checkpoint-diff) applied to\n"
           "                      --checkpoint, which must be its base\n"
           "  --out FILE          entry to write (default: dawnbench_inference.json beside FILE)\n"
           "  --backend SPEC, --device N, --data DIR   as for train\n"
           "  --test-subset N     classify the first N test images only (DAWNBench uses all 10,000)\n"
           "  --platform ID       hardware profile for the cost (default: matched by device name)\n"
           "  --author NAME, --author-email ADDR   author fields of the entry\n");
}

/* --out against the inputs (the dataset's folder once known, else NULL): core/output.h. */
static int check_out(const char *out, const char *ckpt, const char *diff, const char *data, const char *dataset_dir) {
    dbk_output_spec spec = {.flag = "--out", .what = "DAWNBench inference entry", .kind = DBK_OUTPUT_FILE,
                            .is_earlier_output = dbk_infer_is_entry};
    dbk_output_add_input(&spec, "the --checkpoint file", ckpt, false);
    dbk_output_add_input(&spec, "the --diff file", diff, false);
    dbk_output_add_input(&spec, "the data folder", data ? data : getenv("DAYBREAK_DATA"), false);
    dbk_output_add_input(&spec, "the dataset folder", dataset_dir, true);
    return dbk_cli_check_output(&spec, out);
}

int dbk_cmd_infer(dbk_cli_args *a) {
    const char *ckpt = NULL, *backend = NULL, *data = NULL, *out = NULL, *platform = NULL, *diff = NULL;
    const char *author = NULL, *author_email = NULL;
    long device = -1, test_subset = 0;
    for (a->i = 2; a->i < a->argc; a->i++) {
        const char *v = NULL, *arg = a->argv[a->i];
        int m;
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            dbk_help_infer();
            return DBK_EXIT_OK;
        }
#define VALUE(name) ((m = dbk_cli_match(a, name, true, &v)) != 0)
        if (VALUE("--checkpoint")) ckpt = v;
        else if (VALUE("--diff")) diff = v;
        else if (VALUE("--backend")) backend = v;
        else if (VALUE("--data")) data = v;
        else if (VALUE("--out")) {
            if (m > 0 && !*v) return dbk_cli_usage_error("infer", "--out needs a file name, not an empty one");
            out = v;
        }
        else if (VALUE("--platform")) platform = v;
        else if (VALUE("--author")) author = v;
        else if (VALUE("--author-email")) author_email = v;
        else if (VALUE("--device")) {
            if (m > 0 && !dbk_cli_parse_long(v, 0, 1000, &device))
                return dbk_cli_usage_error("infer", "bad --device '%s'", v);
        } else if (VALUE("--test-subset")) {
            if (m > 0 && !dbk_cli_parse_long(v, 1, DBK_CLI_MAX_SUBSET, &test_subset))
                return dbk_cli_usage_error("infer", "bad --test-subset '%s' (a number of images, at least 1)", v);
        } else return dbk_cli_usage_error("infer", "unknown option '%s'", arg);
#undef VALUE
        if (m < 0) return dbk_cli_usage_error("infer", "option '%s' needs a value", arg);
    }
    if (!ckpt) return dbk_cli_usage_error("infer", "%s", "--checkpoint FILE is required");
    char out_buf[4200];
    if (!out) {
        char copy[4096];
        snprintf(copy, sizeof copy, "%s", ckpt);
        snprintf(out_buf, sizeof out_buf, "%s/dawnbench_inference.json", dirname(copy));
        out = out_buf;
    }
    /* Before the checkpoint is read (a missing one is named by the read). */
    int rc = access(ckpt, F_OK) == 0 ? check_out(out, ckpt, diff, data, NULL) : DBK_EXIT_OK;
    if (rc != DBK_EXIT_OK) return rc;

    dbk_backend_kind kind;
    int index;
    rc = dbk_cli_resolve_device(backend, device, &kind, &index);
    if (rc != DBK_EXIT_OK) return rc;
    dbk_device_info info;
    if (dbk_backend_device_info(kind, index, &info) != DBK_OK) return dbk_cli_fail(NULL);
    dbk_platform_info pl;
    if (dbk_platform_resolve(platform, dbk_backend_kind_name(kind), info.name, &pl) != DBK_OK)
        return dbk_cli_fail(NULL);
    /* The checkpoint's recipe names the dataset. */
    const dbk_recipe *recipe;
    const dbk_model_def *model;
    if (dbk_infer_checkpoint(ckpt, &recipe, &model) != DBK_OK) return dbk_cli_fail(NULL);
    dbk_dataset_info data_info;
    rc = dbk_cli_open_dataset("infer", recipe->dataset, data, 0, test_subset, &data_info);
    if (rc != DBK_EXIT_OK) return rc;

    /* Again with the dataset's folder, before the images are classified. */
    rc = check_out(out, ckpt, diff, data, data_info.dir);
    if (rc != DBK_EXIT_OK) {
        dbk_dataset_info_deinit(&data_info);
        return rc;
    }
    dbk_infer_result r;
    dbk_status st = dbk_infer_run(kind, index, ckpt, diff, &data_info, (int)test_subset, &r);
    dbk_dataset_info_deinit(&data_info);
    if (st == DBK_ERR_DIVERGED) { /* non-finite outputs: no latency or accuracy worth an entry */
        fprintf(stderr, "daybreak: error: %s\n", dbk_last_error());
        return DBK_EXIT_DIVERGED;
    }
    if (st != DBK_OK) return dbk_cli_fail(NULL);
    printf("%s%s%s: model %s, recipe %s, %s:%d %s\n", ckpt, diff ? " + " : "", diff ? diff : "", r.model, r.recipe,
           dbk_backend_kind_name(kind), index, r.device.name);
    printf("latency %.4f ms per image (%d images one at a time, %.2f s", r.latency_ms, r.images, r.seconds);
    if (r.streamed) printf("; loader wait %.2f s, not counted", r.loader_wait_seconds);
    printf("), top-1 accuracy %.2f%%", r.accuracy);
    if (pl.price_per_hour > 0)
        printf(", cost USD %.3g per image (USD %.2f/h, profile %s)\n", r.latency_ms / 3600000.0 * pl.price_per_hour,
               pl.price_per_hour, pl.id);
    else printf(", cost n/a (profile %s has no price)\n", pl.id);
    if (dbk_infer_write_entry(out, ckpt, &r, &pl, author, author_email) != DBK_OK) return dbk_cli_fail(NULL);
    dbk_conformance c;
    dbk_infer_conformance(&r, &c);
    dbk_conformance_print(stdout, out, &c);
    printf("entry written to %s\n", out);
    return DBK_EXIT_OK;
}
