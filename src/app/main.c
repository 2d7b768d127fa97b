/*
 * main.c — the daybreak command line.
 *
 *   daybreak devices                 list every backend's devices
 *   daybreak recipes                 list the embedded recipes and models
 *   daybreak train [options]         one time-to-accuracy run
 *   daybreak eval --checkpoint FILE  test accuracy of a saved model
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

#include <cjson/cJSON.h>

#include "backend/backend.h"
#include "core/alloc.h"
#include "core/log.h"
#include "data/cifar10.h"
#include "models/models.h"
#include "train/checkpoint.h"
#include "train/recipe.h"
#include "train/session.h"
#include "train/trainer.h"
#include "app/cli.h"

enum { EXIT_OK = 0, EXIT_ERROR = 1, EXIT_USAGE = 2, EXIT_NOT_REACHED = 3, EXIT_DIVERGED = 4 };

static int fail(const char *what) {
    fprintf(stderr, "daybreak: error: %s%s%s\n", what ? what : "", what && *what ? ": " : "", dbk_last_error());
    return EXIT_ERROR;
}

static int usage_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static int usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "daybreak%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nrun 'daybreak %s%s--help' for usage\n", cmd ? cmd : "", cmd ? " " : "");
    return EXIT_USAGE;
}

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
           "  help CMD   the options of a command (also: daybreak CMD --help)\n\n"
           "environment:\n"
           "  DAYBREAK_DATA   folder holding cifar-10-batches-bin/ (default for --data)\n"
           "  DBK_BACKEND     default for --backend (e.g. cpu, opencl:0)\n"
           "  DBK_LOG         log level: debug, info, warn (default), error\n\n"
           "exit codes: 0 success, 1 error, 2 usage error, 3 target not reached, 4 diverged\n",
           DBK_VERSION);
}

static void help_train(void) {
    printf("usage: daybreak train [options]\n\n"
           "Trains a recipe on CIFAR-10 until the test accuracy reaches its target (checked after\n"
           "every epoch), timing it with the DAWNBench clock (preprocessing and training on the\n"
           "clock, evaluation off). Writes logs.tsv, dawnbench.json (the DAWNBench entry),\n"
           "result.json and model.ckpt to --out.\n\n"
           "options:\n"
           "  --recipe NAME       recipe to run (default: %s; see 'daybreak recipes')\n"
           "  --backend SPEC      cpu, opencl[:N] or vulkan[:N] (default: $DBK_BACKEND, else the\n"
           "                      first GPU, else cpu)\n"
           "  --device N          device index within the backend (default 0, or the :N of --backend)\n"
           "  --data DIR          data folder holding cifar-10-batches-bin/ (default: $DAYBREAK_DATA)\n"
           "  --epochs N          most epochs to run; the learning-rate schedule is stretched or\n"
           "                      compressed to N epochs (default: the recipe's)\n"
           "  --batch N           batch size (default: the recipe's)\n"
           "  --target PCT        test top-1 accuracy that stops the run (default: the recipe's)\n"
           "  --all-epochs        run every epoch even after the target is reached\n"
           "  --seed N            seed of initialisation, shuffling and augmentation (default 0);\n"
           "                      the same seed on the same device gives the same run\n"
           "  --out DIR           output folder (default: runs/<recipe>-<backend>-<UTC time>);\n"
           "                      refused if it already holds a result.json\n"
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
           "loss on the CIFAR-10 test set.\n\n"
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

typedef struct args {
    int    argc, i;
    char **argv;
    const char *cmd;
} args;

/* Matches --name or --name=value; for valued options stores the value. Returns 1 on a match,
 * 0 if not this option, -1 on a missing value. */
static int opt_match(args *a, const char *name, bool takes_value, const char **value) {
    const char *arg = a->argv[a->i];
    size_t n = strlen(name);
    if (strncmp(arg, name, n) != 0) return 0;
    if (arg[n] == '\0') {
        if (!takes_value) return 1;
        if (a->i + 1 >= a->argc) return -1;
        *value = a->argv[++a->i];
        return 1;
    }
    if (arg[n] == '=' && takes_value) {
        *value = arg + n + 1;
        return 1;
    }
    return 0;
}

static bool parse_long(const char *s, long min, long max, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < min || v > max) return false;
    *out = v;
    return true;
}

static bool parse_u64(const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    if (*s == '-') return false;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end != '\0') return false;
    *out = v;
    return true;
}

static bool parse_double(const char *s, double min, double max, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end != '\0' || !(v >= min && v <= max)) return false;
    *out = v;
    return true;
}

/* Resolves --backend/--device (or DBK_BACKEND, or the default device). */
static int resolve_device(const char *backend, long device, dbk_backend_kind *kind, int *index) {
    if (!backend) backend = getenv("DBK_BACKEND");
    if (backend && *backend) {
        if (dbk_backend_resolve(backend, (int)device, kind, index) != DBK_OK) return fail(NULL);
        return EXIT_OK;
    }
    dbk_backend_default(kind, index);
    if (device >= 0) {
        if (dbk_backend_resolve(dbk_backend_kind_name(*kind), (int)device, kind, index) != DBK_OK) return fail(NULL);
    }
    return EXIT_OK;
}

/* ---------------------------------------------------------------------------------- */
/* commands                                                                            */

static int cmd_devices(args *a) {
    for (a->i = 2; a->i < a->argc; a->i++) {
        if (!strcmp(a->argv[a->i], "--help") || !strcmp(a->argv[a->i], "-h")) {
            help_devices();
            return EXIT_OK;
        }
        return usage_error("devices", "unknown option '%s'", a->argv[a->i]);
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
    return EXIT_OK;
}

static int cmd_recipes(args *a) {
    for (a->i = 2; a->i < a->argc; a->i++) {
        if (!strcmp(a->argv[a->i], "--help") || !strcmp(a->argv[a->i], "-h")) {
            help_recipes();
            return EXIT_OK;
        }
        return usage_error("recipes", "unknown option '%s'", a->argv[a->i]);
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
        const dbk_model_spec *m = dbk_model_at(i);
        printf("  %-18s %s\n", m->name, m->description);
    }
    return EXIT_OK;
}

static void default_out_dir(char *out, size_t cap, const char *recipe, dbk_backend_kind kind) {
    time_t now = time(NULL);
    struct tm tmv;
    gmtime_r(&now, &tmv);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tmv);
    snprintf(out, cap, "runs/%s-%s-%s", recipe, dbk_backend_kind_name(kind), stamp);
}

static void join_command_line(int argc, char **argv, char *out, size_t cap) {
    size_t n = 0;
    out[0] = '\0';
    for (int i = 0; i < argc && n + 1 < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, "%s%s", i ? " " : "", argv[i]);
}

/* Rescales the schedule's knots so the last one lands on `epochs`. */
static void stretch_schedule(dbk_recipe *r, int epochs) {
    float last = r->lr_epochs[r->lr_knots - 1];
    if (last <= 0.0f || epochs == r->epochs) return;
    for (int i = 0; i < r->lr_knots; i++) r->lr_epochs[i] *= (float)epochs / last;
    r->epochs = epochs;
}

static int cmd_train(args *a) {
    const char *recipe_name = dbk_recipe_default_name(), *backend = NULL, *data = NULL, *out = NULL;
    const char *platform = NULL, *author = NULL, *author_email = NULL;
    dbk_clock_mode clock = DBK_CLOCK_DAWNBENCH;
    long device = -1, epochs = -1, batch = -1, train_subset = 0, test_subset = 0;
    double target = -1.0;
    uint64_t seed = 0;
    bool all_epochs = false, quiet = false, no_progress = false, profile = false;

    for (a->i = 2; a->i < a->argc; a->i++) {
        const char *v = NULL, *arg = a->argv[a->i];
        int m;
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            help_train();
            return EXIT_OK;
        }
#define VALUE(name) ((m = opt_match(a, name, true, &v)) != 0)
        if (VALUE("--recipe")) recipe_name = v;
        else if (VALUE("--backend")) backend = v;
        else if (VALUE("--data")) data = v;
        else if (VALUE("--out")) out = v;
        else if (VALUE("--platform")) platform = v;
        else if (VALUE("--author")) author = v;
        else if (VALUE("--author-email")) author_email = v;
        else if (VALUE("--clock")) {
            if (m > 0 && dbk_cli_parse_clock(v, &clock) != 0)
                return usage_error("train", "bad --clock '%s' (dawnbench or mlperf)", v);
        } else if (VALUE("--device")) {
            if (m > 0 && !parse_long(v, 0, 1000, &device)) return usage_error("train", "bad --device '%s'", v);
        } else if (VALUE("--epochs")) {
            if (m > 0 && !parse_long(v, 1, DBK_MAX_EPOCHS, &epochs))
                return usage_error("train", "bad --epochs '%s' (1..1000)", v);
        } else if (VALUE("--batch")) {
            if (m > 0 && !parse_long(v, 1, 65536, &batch)) return usage_error("train", "bad --batch '%s'", v);
        } else if (VALUE("--target")) {
            if (m > 0 && !parse_double(v, 0.0, 100.0, &target))
                return usage_error("train", "bad --target '%s' (a percentage, 0..100)", v);
        } else if (VALUE("--seed")) {
            if (m > 0 && !parse_u64(v, &seed)) return usage_error("train", "bad --seed '%s'", v);
        } else if (VALUE("--train-subset")) {
            if (m > 0 && !parse_long(v, 1, 50000, &train_subset))
                return usage_error("train", "bad --train-subset '%s' (1..50000)", v);
        } else if (VALUE("--test-subset")) {
            if (m > 0 && !parse_long(v, 1, 10000, &test_subset))
                return usage_error("train", "bad --test-subset '%s' (1..10000)", v);
        } else if (opt_match(a, "--all-epochs", false, NULL) > 0) all_epochs = true;
        else if (opt_match(a, "--quiet", false, NULL) > 0) quiet = true;
        else if (opt_match(a, "--profile", false, NULL) > 0) profile = true;
        else if (opt_match(a, "--no-progress", false, NULL) > 0) no_progress = true;
        else return usage_error("train", "unknown option '%s'", arg);
#undef VALUE
        if (m < 0) return usage_error("train", "option '%s' needs a value", arg);
    }

    dbk_train_options opt;
    memset(&opt, 0, sizeof opt);
    const dbk_recipe *recipe;
    if (dbk_recipe_find(recipe_name, &recipe) != DBK_OK) return fail(NULL);
    opt.recipe = *recipe;
    if (epochs > 0) stretch_schedule(&opt.recipe, (int)epochs);
    if (batch > 0) opt.recipe.batch = (int)batch;
    if (target >= 0.0) opt.recipe.target = (float)target;
    int rc = resolve_device(backend, device, &opt.backend, &opt.device);
    if (rc != EXIT_OK) return rc;
    if (platform) { /* an unknown --platform fails before the data is read */
        dbk_platform_info pl;
        if (dbk_platform_resolve(platform, dbk_backend_kind_name(opt.backend), "", &pl) != DBK_OK) return fail(NULL);
    }

    char cifar_dir[4096];
    if (dbk_data_resolve_cifar10(data, cifar_dir, sizeof cifar_dir) != DBK_OK) return fail(NULL);
    if (dbk_cifar10_check_dir(cifar_dir) != DBK_OK) return fail(NULL);

    char out_buf[4096], json_path[4200];
    if (!out) {
        default_out_dir(out_buf, sizeof out_buf, opt.recipe.name, opt.backend);
        out = out_buf;
    }
    snprintf(json_path, sizeof json_path, "%s/result.json", out);
    if (access(json_path, F_OK) == 0) {
        fprintf(stderr, "daybreak: error: %s already exists; choose another --out or remove it\n", json_path);
        return EXIT_ERROR;
    }

    char cmdline[2048];
    join_command_line(a->argc, a->argv, cmdline, sizeof cmdline);
    opt.cifar_dir = cifar_dir;
    opt.seed = seed;
    opt.out_dir = out;
    opt.all_epochs = all_epochs;
    opt.train_limit = (int32_t)train_subset;
    opt.test_limit = (int32_t)test_subset;
    opt.progress = !no_progress && !quiet && isatty(STDOUT_FILENO);
    opt.quiet = quiet;
    opt.profile = profile;
    opt.command_line = cmdline;
    opt.clock = clock;
    opt.platform = platform;
    opt.author = author;
    opt.author_email = author_email;

    dbk_device_info info;
    if (dbk_backend_device_info(opt.backend, opt.device, &info) != DBK_OK) return fail(NULL);
    if (!quiet) {
        printf("daybreak %s: recipe %s (model %s, batch %d, up to %d epochs, target %.2f%%), seed %llu\n", DBK_VERSION,
               opt.recipe.name, opt.recipe.model, opt.recipe.batch, opt.recipe.epochs, (double)opt.recipe.target,
               (unsigned long long)seed);
        printf("device %s:%d %s (%s)\noutput %s\n", dbk_backend_kind_name(opt.backend), opt.device, info.name, info.driver,
               out);
        fflush(stdout);
    }

    dbk_train_report *rep = dbk_calloc(1, sizeof *rep);
    if (!rep) return fail("train");
    dbk_status st = dbk_train_run(&opt, rep);
    int code;
    if (st == DBK_ERR_DIVERGED) {
        fprintf(stderr, "daybreak: error: %s\n", dbk_last_error());
        code = EXIT_DIVERGED;
    } else if (st != DBK_OK) {
        code = fail(NULL);
    } else if (rep->status == DBK_RUN_REACHED) {
        const dbk_epoch_record *hit = &rep->epochs[rep->epochs_to_target - 1];
        printf("target %.2f%% reached in epoch %d: %.2f%% test accuracy, %.1f s (%.6f h) on the clock\n",
               (double)opt.recipe.target, rep->epochs_to_target, hit->test_accuracy, rep->seconds_to_target,
               rep->seconds_to_target / 3600.0);
        code = EXIT_OK;
    } else {
        double best = 0.0;
        for (int i = 0; i < rep->epochs_run; i++)
            if (rep->epochs[i].test_accuracy > best) best = rep->epochs[i].test_accuracy;
        printf("target %.2f%% not reached in %d epochs (best %.2f%%)\n", (double)opt.recipe.target, rep->epochs_run, best);
        code = EXIT_NOT_REACHED;
    }
    if (st == DBK_OK || st == DBK_ERR_DIVERGED) printf("results in %s (logs.tsv, dawnbench.json, result.json%s)\n", out,
                                                       st == DBK_OK ? ", model.ckpt" : "");
    dbk_free(rep);
    return code;
}

static int cmd_eval(args *a) {
    const char *ckpt = NULL, *backend = NULL, *data = NULL;
    long device = -1, batch = 500, test_subset = 0;
    for (a->i = 2; a->i < a->argc; a->i++) {
        const char *v = NULL, *arg = a->argv[a->i];
        int m;
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            help_eval();
            return EXIT_OK;
        }
        if ((m = opt_match(a, "--checkpoint", true, &v)) != 0) ckpt = v;
        else if ((m = opt_match(a, "--backend", true, &v)) != 0) backend = v;
        else if ((m = opt_match(a, "--data", true, &v)) != 0) data = v;
        else if ((m = opt_match(a, "--device", true, &v)) != 0) {
            if (m > 0 && !parse_long(v, 0, 1000, &device)) return usage_error("eval", "bad --device '%s'", v);
        } else if ((m = opt_match(a, "--batch", true, &v)) != 0) {
            if (m > 0 && !parse_long(v, 1, 65536, &batch)) return usage_error("eval", "bad --batch '%s'", v);
        } else if ((m = opt_match(a, "--test-subset", true, &v)) != 0) {
            if (m > 0 && !parse_long(v, 1, 10000, &test_subset))
                return usage_error("eval", "bad --test-subset '%s' (1..10000)", v);
        } else return usage_error("eval", "unknown option '%s'", arg);
        if (m < 0) return usage_error("eval", "option '%s' needs a value", arg);
    }
    if (!ckpt) return usage_error("eval", "%s", "--checkpoint FILE is required");

    /* The checkpoint names its model and recipe; the recipe gives the normalisation. */
    dbk_checkpoint *c = NULL;
    if (dbk_checkpoint_load(ckpt, &c) != DBK_OK) return fail(NULL);
    char model_name[64], recipe_name[64] = "";
    snprintf(model_name, sizeof model_name, "%s", dbk_checkpoint_model(c));
    cJSON *meta = cJSON_Parse(dbk_checkpoint_meta(c));
    const cJSON *rn = meta ? cJSON_GetObjectItemCaseSensitive(meta, "recipe") : NULL;
    if (cJSON_IsString(rn)) snprintf(recipe_name, sizeof recipe_name, "%s", rn->valuestring);
    cJSON_Delete(meta);
    dbk_checkpoint_destroy(c);

    const dbk_recipe *recipe;
    const dbk_model_spec *model;
    if (dbk_recipe_find(recipe_name, &recipe) != DBK_OK) return fail(ckpt);
    if (dbk_model_find(model_name, &model) != DBK_OK) return fail(ckpt);
    dbk_backend_kind kind;
    int index;
    int rc = resolve_device(backend, device, &kind, &index);
    if (rc != EXIT_OK) return rc;
    char cifar_dir[4096];
    if (dbk_data_resolve_cifar10(data, cifar_dir, sizeof cifar_dir) != DBK_OK) return fail(NULL);

    dbk_dataset test;
    memset(&test, 0, sizeof test);
    dbk_backend *be = NULL;
    dbk_session *s = NULL;
    dbk_epoch_counters ec;
    int code = EXIT_ERROR;
    if (dbk_cifar10_load(cifar_dir, DBK_CIFAR10_TEST, (int32_t)test_subset, &test) != DBK_OK) goto done;
    if (dbk_backend_create(kind, index, &be) != DBK_OK) goto done;
    dbk_session_config cfg = {.recipe = recipe, .model = model, .batch = (int)batch, .eval_batch = (int)batch,
                              .train_count = 0, .test_count = test.count};
    if (dbk_session_create(be, &cfg, &s) != DBK_OK) goto done;
    if (dbk_session_upload_data(s, NULL, &test) != DBK_OK) goto done;
    if (dbk_session_load(s, ckpt) != DBK_OK) goto done;
    if (dbk_session_evaluate(s, &ec) != DBK_OK) goto done;
    printf("%s: model %s, recipe %s, %s:%d: test accuracy %.2f%% (%lld images), mean loss %.4f\n", ckpt, model_name,
           recipe_name, dbk_backend_kind_name(kind), index, 100.0 * ec.correct / (double)ec.images, (long long)ec.images,
           ec.loss_sum / (double)ec.images);
    code = EXIT_OK;
done:
    if (code != EXIT_OK) fail(NULL);
    dbk_session_destroy(s);
    dbk_backend_destroy(be);
    dbk_dataset_deinit(&test);
    return code;
}

int main(int argc, char **argv) {
    dbk_log_init();
    args a = {.argc = argc, .argv = argv, .i = 1};
    if (argc < 2) {
        help_main();
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        help_main();
        return EXIT_OK;
    }
    if (!strcmp(cmd, "--version")) {
        printf("daybreak %s\n", DBK_VERSION);
        return EXIT_OK;
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
        else help_main();
        return EXIT_OK;
    }
    a.cmd = cmd;
    if (!strcmp(cmd, "train")) return cmd_train(&a);
    if (!strcmp(cmd, "eval")) return cmd_eval(&a);
    if (!strcmp(cmd, "devices")) return cmd_devices(&a);
    if (!strcmp(cmd, "recipes")) return cmd_recipes(&a);
    dbk_cli_args ca = {.argc = argc, .argv = argv, .i = 1};
    if (!strcmp(cmd, "bench")) return dbk_cmd_bench(&ca);
    if (!strcmp(cmd, "infer")) return dbk_cmd_infer(&ca);
    if (!strcmp(cmd, "report")) return dbk_cmd_report(&ca);
    if (!strcmp(cmd, "platforms")) return dbk_cmd_platforms(&ca);
    return usage_error(NULL,
                       "unknown command '%s' (commands: train, eval, devices, recipes, bench, infer, report, platforms)",
                       cmd);
}
