/*
 * main.c — the daybreak command line.
 *
 *   daybreak devices                 list every backend's devices
 *   daybreak recipes                 list the embedded recipes and models
 *   daybreak train [options]         one time-to-accuracy run
 *   daybreak eval --checkpoint FILE  test accuracy of a saved model
 *   daybreak check [options]         a device against the CPU reference (cmd_check.c)
 *
 * Exit codes (README "Exit codes"): 0 success (train: target reached), 1 error, 2 usage
 * error, 3 train finished without reaching the target, 4 training diverged (NaN/Inf).
 * This file and tools/ are the only places that exit.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "bench/infer.h"
#include "core/alloc.h"
#include "core/log.h"
#include "data/dataset.h"
#include "models/models.h"
#include "train/recipe.h"
#include "train/session.h"
#include "train/results.h"
#include "train/trainer.h"
#include "app/cli.h"


/* ---------------------------------------------------------------------------------- */
/* help texts                                                                          */

static void help_main(void) {
    printf("daybreak %s — time-to-accuracy training benchmark (DAWNBench rules)\n\n"
           "usage: daybreak <command> [options]\n\n"
           "commands:\n"
           "  train      train a recipe to its target accuracy and record the time\n"
           "  eval       evaluate a saved checkpoint on the test set\n"
           "  devices    list the devices of every backend\n"
           "  recipes    list the embedded recipes and models\n"
           "  bench      N runs of a recipe with distinct seeds, and their summary\n"
           "  infer      DAWNBench inference latency of a checkpoint\n"
           "  report     Markdown report and SVG charts from result folders\n"
           "  platforms  list the hardware profiles (peak FLOP/s, bandwidth, price)\n"
           "  check      check a device against the CPU reference (ops, training curve)\n"
           "  help CMD   the options of a command (also: daybreak CMD --help)\n\n"
           "environment:\n"
           "  DAYBREAK_DATA   folder holding cifar-10-batches-bin/ (default for --data)\n"
           "  DBK_BACKEND     default for --backend (e.g. cpu, opencl:0)\n"
           "  DBK_LOG         log level: debug, info, warn (default), error\n"
           "  DBK_PLATFORMS_DIR  hardware profiles from this folder instead of the built-in ones\n"
           "  DBK_KERNEL_DIR  OpenCL kernel sources from this folder instead of the built-in ones\n"
           "  DBK_CACHE_DIR   compiled-kernel cache folder (off: no cache)\n"
           "  DBK_VK_VALIDATION  1: Vulkan under the validation layer, validation errors fail\n\n"
           "exit codes: 0 success, 1 error, 2 usage error, 3 target not reached, 4 diverged\n",
           DBK_VERSION);
}

static void help_train(void) {
    printf("usage: daybreak train [options]\n\n"
           "Trains a recipe on CIFAR-10 until the test accuracy reaches its target (checked after\n"
           "every epoch), timing it with the DAWNBench clock (preprocessing and training on the\n"
           "clock, evaluation off). Writes logs.tsv, dawnbench.json (the DAWNBench entry when the\n"
           "run conforms: full data sets, 94%% reached, dawnbench clock), mlperf.log, result.json\n"
           "and model.ckpt to --out.\n\n"
           "options:\n"
           "  --recipe NAME       recipe to run (default: %s; see 'daybreak recipes')\n"
           "  --backend SPEC      cpu, opencl[:N] or vulkan[:N] (default: $DBK_BACKEND, else the\n"
           "                      first GPU, else cpu)\n"
           "  --device N          device index within the backend (default 0, or the :N of --backend)\n"
           "  --data DIR          data folder holding cifar-10-batches-bin/ (default: $DAYBREAK_DATA)\n"
           "  --epochs N          most epochs to run; the learning-rate schedule is stretched or\n"
           "                      compressed to N epochs (default: the recipe's)\n"
           "  --batch N           batch size (default: the recipe's)\n"
           "  --target PCT        test top-1 accuracy that stops the run, at most two decimals,\n"
           "                      compared as logs.tsv prints it (default: the recipe's)\n"
           "  --all-epochs        run every epoch even after the target is reached\n"
           "  --seed N            seed of initialisation, shuffling and augmentation (default 0);\n"
           "                      the same seed on the same device gives the same run\n"
           "  --out DIR           output folder (default: runs/<recipe>-<backend>-<UTC time>);\n"
           "                      refused if it already holds a result.json or is the data folder\n"
           "  --train-subset N    train on the first N training images only (quick checks; the\n"
           "                      result is not comparable to full runs)\n"
           "  --test-subset N     evaluate on the first N test images only (same caveat)\n"
           "  --quiet             no per-epoch lines\n"
           "  --profile           time every op of every training step (synchronising after each,\n"
           "                      so the run is slower) and print a per-op table at the end\n"
           "  --no-progress       no live progress bar (it is shown only on a terminal anyway)\n"
           "  --clock MODE        dawnbench (default: evaluation off the clock) or mlperf (on it)\n"
           "  --platform ID       hardware profile for cost and peak FLOP/s (default: matched by\n"
           "                      device name; see 'daybreak platforms')\n"
           "  --author NAME       author of the DAWNBench entry dawnbench.json (default daybreak)\n"
           "  --author-email ADDR its authorEmail (default empty)\n",
           dbk_recipe_default_name());
}

static void help_eval(void) {
    printf("usage: daybreak eval --checkpoint FILE [options]\n\n"
           "Loads a model.ckpt written by 'daybreak train' and prints its top-1 accuracy and mean\n"
           "loss on the recipe's test set; for a recipe with test-time augmentation (airbench94)\n"
           "also the accuracy with it, the one its runs record.\n\n"
           "options:\n"
           "  --checkpoint FILE   the checkpoint (required)\n"
           "  --backend SPEC      as for train\n"
           "  --device N          as for train\n"
           "  --data DIR          as for train\n"
           "  --batch N           evaluation batch size (default 500)\n"
           "  --test-subset N     evaluate the first N test images only\n");
}

static void help_devices(void) {
    printf("usage: daybreak devices\n\nLists every device of every backend compiled into this daybreak,\n"
           "with the index to pass to --backend NAME:INDEX or --device.\n");
}

static void help_recipes(void) {
    printf("usage: daybreak recipes\n\nLists the embedded recipes (with model, batch, epochs and target)\n"
           "and the models they can use.\n");
}

/* ---------------------------------------------------------------------------------- */
/* option parsing                                                                      */

/* ---------------------------------------------------------------------------------- */
/* commands                                                                            */

static int cmd_devices(dbk_cli_args *a) {
    for (a->i = 2; a->i < a->argc; a->i++) {
        if (!strcmp(a->argv[a->i], "--help") || !strcmp(a->argv[a->i], "-h")) {
            help_devices();
            return DBK_EXIT_OK;
        }
        return dbk_cli_usage_error("devices", "unknown option '%s'", a->argv[a->i]);
    }
    dbk_backend_kind dk;
    int di;
    dbk_backend_default(&dk, &di);
    for (int k = 0; k < DBK_BACKEND_KIND_COUNT; k++) {
        const char *name = dbk_backend_kind_name((dbk_backend_kind)k);
        if (!dbk_backend_kind_compiled((dbk_backend_kind)k)) {
            printf("%s: not compiled in (its development packages were missing at build time)\n\n", name);
            continue;
        }
        int n = dbk_backend_device_count((dbk_backend_kind)k);
        printf("%s: %d device%s\n", name, n, n == 1 ? "" : "s");
        for (int i = 0; i < n; i++) {
            dbk_device_info info;
            if (dbk_backend_device_info((dbk_backend_kind)k, i, &info) != DBK_OK) {
                printf("  %s:%d  (unavailable: %s)\n", name, i, dbk_last_error());
                continue;
            }
            const char *type = info.type == DBK_DEVICE_TYPE_GPU ? "gpu" : info.type == DBK_DEVICE_TYPE_CPU ? "cpu" : "other";
            printf("  %s:%d  %s%s\n", name, i, info.name, (k == (int)dk && i == di) ? "  [default]" : "");
            printf("      type %s, vendor %s, %d compute units, %.1f GiB memory", type, info.vendor, info.compute_units,
                   (double)info.global_mem_bytes / (1024.0 * 1024.0 * 1024.0));
            if (info.max_alloc_bytes)
                printf(", max allocation %.1f MiB", (double)info.max_alloc_bytes / (1024.0 * 1024.0));
            if (info.local_mem_bytes) printf(", local memory %llu KiB", (unsigned long long)info.local_mem_bytes / 1024);
            printf(", fp16 %s\n", info.fp16 ? "yes" : "no");
            printf("      driver %s; %s\n", info.driver, info.api_version);
            if (info.details[0]) printf("      %s\n", info.details);
        }
        printf("\n");
    }
    return DBK_EXIT_OK;
}

static int cmd_recipes(dbk_cli_args *a) {
    for (a->i = 2; a->i < a->argc; a->i++) {
        if (!strcmp(a->argv[a->i], "--help") || !strcmp(a->argv[a->i], "-h")) {
            help_recipes();
            return DBK_EXIT_OK;
        }
        return dbk_cli_usage_error("recipes", "unknown option '%s'", a->argv[a->i]);
    }
    printf("recipes:\n");
    for (int i = 0; i < dbk_recipe_count(); i++) {
        const dbk_recipe *r = dbk_recipe_at(i);
        printf("  %-18s %s%s\n", r->name, r->description, strcmp(r->name, dbk_recipe_default_name()) ? "" : " [default]");
        printf("  %-18s model %s, batch %d, %d epochs, target %.1f%% (%s)\n", "", r->model, r->batch, r->epochs,
               (double)r->target, r->target_note);
    }
    printf("\nmodels:\n");
    for (int i = 0; i < dbk_model_count(); i++) {
        const dbk_model_def *m = dbk_model_at(i);
        printf("  %-18s %s\n", m->name, m->description);
    }
    printf("\ndatasets:\n");
    for (int i = 0; i < dbk_dataset_kind_count(); i++) {
        const dbk_dataset_kind *k = dbk_dataset_kind_at(i);
        printf("  %-18s %s\n", k->name, k->description);
    }
    return DBK_EXIT_OK;
}

static int cmd_train(dbk_cli_args *a) {
    dbk_cli_train_args t;
    dbk_cli_train_args_init(&t);
    uint64_t seed = 0;
    for (a->i = 2; a->i < a->argc; a->i++) {
        const char *v = NULL, *arg = a->argv[a->i];
        int m = 0, rc;
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            help_train();
            return DBK_EXIT_OK;
        }
        if ((m = dbk_cli_match(a, "--seed", true, &v)) != 0) {
            if (m > 0 && !dbk_cli_parse_u64(v, &seed)) return dbk_cli_usage_error("train", "bad --seed '%s'", v);
        } else if (dbk_cli_train_option(a, "train", &t, &rc)) {
            if (rc != DBK_EXIT_OK) return rc;
        } else return dbk_cli_usage_error("train", "unknown option '%s'", arg);
        if (m < 0) return dbk_cli_usage_error("train", "option '%s' needs a value", arg);
    }

    dbk_train_options opt;
    int rc = dbk_cli_train_setup(&t, &opt);
    if (rc != DBK_EXIT_OK) return rc;
    if (t.platform) { /* an unknown --platform fails before the data is read */
        dbk_platform_info pl;
        if (dbk_platform_resolve(t.platform, dbk_backend_kind_name(opt.backend), "", &pl) != DBK_OK)
            return dbk_cli_fail(NULL);
    }
    const char *data = t.data, *out = t.out;
    const bool quiet = t.quiet;

    /* The trainer opens the folder again; here it is checked and gives the split sizes. */
    dbk_dataset_info data_info;
    rc = dbk_cli_open_dataset("train", opt.recipe.dataset, data, t.train_subset, t.test_subset, &data_info);
    if (rc != DBK_EXIT_OK) return rc;
    char data_dir[sizeof data_info.dir];
    snprintf(data_dir, sizeof data_dir, "%s", data_info.dir);
    dbk_dataset_info_deinit(&data_info);

    char out_buf[4096], json_path[4200];
    if (!out) {
        char stamp[32];
        dbk_cli_utc_stamp(stamp, sizeof stamp);
        snprintf(out_buf, sizeof out_buf, "runs/%s-%s-%s", opt.recipe.name, dbk_backend_kind_name(opt.backend), stamp);
        out = out_buf;
    }
    rc = dbk_cli_refuse_out_on_data(out, data, data_dir);
    if (rc != DBK_EXIT_OK) return rc;
    snprintf(json_path, sizeof json_path, "%s/result.json", out);
    if (access(json_path, F_OK) == 0) {
        fprintf(stderr, "daybreak: error: %s already exists; choose another --out or remove it\n", json_path);
        return DBK_EXIT_ERROR;
    }

    char cmdline[2048];
    dbk_cli_join(a->argc, a->argv, cmdline, sizeof cmdline);
    opt.data_dir = data_dir;
    opt.seed = seed;
    opt.out_dir = out;
    opt.command_line = cmdline;

    dbk_device_info info;
    if (dbk_backend_device_info(opt.backend, opt.device, &info) != DBK_OK) return dbk_cli_fail(NULL);
    if (!quiet) {
        printf("daybreak %s: recipe %s (model %s, batch %d, up to %d epochs, target %.2f%%), seed %llu\n", DBK_VERSION,
               opt.recipe.name, opt.recipe.model, opt.recipe.batch, opt.recipe.epochs, (double)opt.recipe.target,
               (unsigned long long)seed);
        printf("device %s:%d %s (%s)\noutput %s\n", dbk_backend_kind_name(opt.backend), opt.device, info.name, info.driver,
               out);
        fflush(stdout);
    }

    dbk_train_report *rep = dbk_calloc(1, sizeof *rep);
    if (!rep) return dbk_cli_fail("train");
    dbk_status st = dbk_train_run(&opt, rep);
    int code;
    if (st == DBK_ERR_DIVERGED) {
        fprintf(stderr, "daybreak: error: %s\n", dbk_last_error());
        code = DBK_EXIT_DIVERGED;
    } else if (st != DBK_OK) {
        code = dbk_cli_fail(NULL);
    } else if (rep->status == DBK_RUN_REACHED) {
        const dbk_epoch_record *hit = &rep->epochs[rep->epochs_to_target - 1];
        printf("target %.2f%% reached in epoch %d: %.2f%% test accuracy, %.1f s (%.6f h) on the clock\n",
               (double)opt.recipe.target, rep->epochs_to_target, hit->test_accuracy, rep->seconds_to_target,
               rep->seconds_to_target / 3600.0);
        code = DBK_EXIT_OK;
    } else {
        printf("target %.2f%% not reached in %d epochs (best %.2f%%)\n", (double)opt.recipe.target, rep->epochs_run,
               dbk_results_best_accuracy(rep));
        code = DBK_EXIT_NOT_REACHED;
    }
    if (st == DBK_OK || st == DBK_ERR_DIVERGED) dbk_results_print_conformance(stdout, &opt, rep);
    if (st == DBK_OK || st == DBK_ERR_DIVERGED) printf("results in %s (logs.tsv, dawnbench.json, mlperf.log, result.json%s)\n", out,
                                                       st == DBK_OK ? ", model.ckpt" : "");
    dbk_free(rep);
    return code;
}

static int cmd_eval(dbk_cli_args *a) {
    const char *ckpt = NULL, *backend = NULL, *data = NULL;
    long device = -1, batch = 500, test_subset = 0;
    for (a->i = 2; a->i < a->argc; a->i++) {
        const char *v = NULL, *arg = a->argv[a->i];
        int m;
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            help_eval();
            return DBK_EXIT_OK;
        }
        if ((m = dbk_cli_match(a, "--checkpoint", true, &v)) != 0) ckpt = v;
        else if ((m = dbk_cli_match(a, "--backend", true, &v)) != 0) backend = v;
        else if ((m = dbk_cli_match(a, "--data", true, &v)) != 0) data = v;
        else if ((m = dbk_cli_match(a, "--device", true, &v)) != 0) {
            if (m > 0 && !dbk_cli_parse_long(v, 0, 1000, &device)) return dbk_cli_usage_error("eval", "bad --device '%s'", v);
        } else if ((m = dbk_cli_match(a, "--batch", true, &v)) != 0) {
            if (m > 0 && !dbk_cli_parse_long(v, 1, 65536, &batch)) return dbk_cli_usage_error("eval", "bad --batch '%s'", v);
        } else if ((m = dbk_cli_match(a, "--test-subset", true, &v)) != 0) {
            if (m > 0 && !dbk_cli_parse_long(v, 1, DBK_CLI_MAX_SUBSET, &test_subset))
                return dbk_cli_usage_error("eval", "bad --test-subset '%s' (a number of images, at least 1)", v);
        } else return dbk_cli_usage_error("eval", "unknown option '%s'", arg);
        if (m < 0) return dbk_cli_usage_error("eval", "option '%s' needs a value", arg);
    }
    if (!ckpt) return dbk_cli_usage_error("eval", "%s", "--checkpoint FILE is required");

    /* The checkpoint names its model and recipe; the recipe gives the dataset and the
     * normalisation. */
    const dbk_recipe *recipe;
    const dbk_model_def *model;
    if (dbk_infer_checkpoint(ckpt, &recipe, &model) != DBK_OK) return dbk_cli_fail(NULL);
    const char *model_name = model->name, *recipe_name = recipe->name;
    dbk_backend_kind kind;
    int index;
    int rc = dbk_cli_resolve_device(backend, device, &kind, &index);
    if (rc != DBK_EXIT_OK) return rc;
    dbk_dataset_info info;
    rc = dbk_cli_open_dataset("eval", recipe->dataset, data, 0, test_subset, &info);
    if (rc != DBK_EXIT_OK) return rc;

    dbk_dataset test;
    memset(&test, 0, sizeof test);
    dbk_backend *be = NULL;
    dbk_session *s = NULL;
    dbk_epoch_counters ec;
    int code = DBK_EXIT_ERROR;
    if (dbk_dataset_load(&info, DBK_DATASET_SPLIT_TEST, (int32_t)test_subset, &test) != DBK_OK) goto done;
    if (dbk_backend_create(kind, index, &be) != DBK_OK) goto done;
    dbk_session_config cfg = {.recipe = recipe, .model = model, .input = info.shape, .num_classes = info.num_classes,
                              .batch = (int)batch, .eval_batch = (int)batch, .train_count = 0,
                              .test_count = test.count};
    if (dbk_session_create(be, &cfg, &s) != DBK_OK) goto done;
    if (dbk_session_upload_data(s, NULL, &test) != DBK_OK) goto done;
    if (dbk_session_load(s, ckpt) != DBK_OK) goto done;
    if (dbk_session_evaluate(s, &ec) != DBK_OK) goto done;
    printf("%s: model %s, recipe %s, %s:%d: test accuracy %.2f%% (%lld images), mean loss %.4f\n", ckpt, model_name,
           recipe_name, dbk_backend_kind_name(kind), index, 100.0 * ec.correct / (double)ec.images, (long long)ec.images,
           ec.loss_sum / (double)ec.images);
    /* A recipe judged with test-time augmentation (airbench94) reports that accuracy too:
     * it is the one its runs record as their result. */
    if (recipe->tta_level > 0) {
        if (dbk_session_evaluate_final(s, &ec) != DBK_OK) goto done;
        printf("%s: with test-time augmentation level %d: test accuracy %.2f%%, mean loss %.4f\n", ckpt,
               recipe->tta_level, 100.0 * ec.correct / (double)ec.images, ec.loss_sum / (double)ec.images);
    }
    code = DBK_EXIT_OK;
done:
    if (code != DBK_EXIT_OK) dbk_cli_fail(NULL);
    dbk_session_destroy(s);
    dbk_backend_destroy(be);
    dbk_dataset_deinit(&test);
    dbk_dataset_info_deinit(&info);
    return code;
}

int main(int argc, char **argv) {
    dbk_log_init();
    dbk_cli_args a = {.argc = argc, .argv = argv, .i = 1};
    if (argc < 2) {
        help_main();
        return DBK_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        help_main();
        return DBK_EXIT_OK;
    }
    if (!strcmp(cmd, "--version")) {
        printf("daybreak %s\n", DBK_VERSION);
        return DBK_EXIT_OK;
    }
    if (!strcmp(cmd, "help")) {
        const char *topic = argc > 2 ? argv[2] : "";
        if (!strcmp(topic, "train")) help_train();
        else if (!strcmp(topic, "eval")) help_eval();
        else if (!strcmp(topic, "devices")) help_devices();
        else if (!strcmp(topic, "recipes")) help_recipes();
        else if (!strcmp(topic, "bench")) dbk_help_bench();
        else if (!strcmp(topic, "infer")) dbk_help_infer();
        else if (!strcmp(topic, "report")) dbk_help_report();
        else if (!strcmp(topic, "platforms")) dbk_help_platforms();
        else if (!strcmp(topic, "check")) dbk_help_check();
        else help_main();
        return DBK_EXIT_OK;
    }
    if (!strcmp(cmd, "train")) return cmd_train(&a);
    if (!strcmp(cmd, "eval")) return cmd_eval(&a);
    if (!strcmp(cmd, "devices")) return cmd_devices(&a);
    if (!strcmp(cmd, "recipes")) return cmd_recipes(&a);
    if (!strcmp(cmd, "bench")) return dbk_cmd_bench(&a);
    if (!strcmp(cmd, "infer")) return dbk_cmd_infer(&a);
    if (!strcmp(cmd, "report")) return dbk_cmd_report(&a);
    if (!strcmp(cmd, "platforms")) return dbk_cmd_platforms(&a);
    if (!strcmp(cmd, "check")) return dbk_cmd_check(&a);
    fprintf(stderr, "daybreak: unknown command '%s' (commands: train, eval, devices, recipes, bench, infer, report, "
                    "platforms, check)\nrun 'daybreak --help' for usage\n", cmd);
    return DBK_EXIT_USAGE;
}
