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
 * error, 3 train finished without reaching the target, 4 training diverged (NaN/Inf), 130/143
 * train stopped by SIGINT/SIGTERM (resumable).
 * This file and tools/ are the only places that exit.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <signal.h>
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
#include "train/resume.h"
#include "train/session.h"
#include "train/results.h"
#include "train/trainer.h"
#include "app/cli_dist.h"
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
           "  pack-data  pack a dataset folder into one compressed file for --data\n"
           "  tune       search a device's kernel parameters and write its profile\n"
           "  help CMD   the options of a command (also: daybreak CMD --help)\n\n"
           "environment:\n"
           "  DAYBREAK_DATA   folder holding cifar-10-batches-bin/, or a dataset pack (default for --data)\n"
           "  DBK_BACKEND     default for --backend (e.g. cpu, opencl:0)\n"
           "  DBK_LOG         log level: debug, info, warn (default), error\n"
           "  DBK_PLATFORMS_DIR  hardware profiles from this folder instead of the built-in ones\n"
           "  DBK_KERNEL_DIR  OpenCL kernel sources from this folder instead of the built-in ones\n"
           "  DBK_CACHE_DIR   compiled-kernel cache, tune measurements and tuned profiles (off: none)\n"
           "  DBK_FORCE_CONV  im2col, winograd, winograd4 or (OpenCL) direct: the convolution algorithm\n"
           "                  of every eligible layer, over the profile's choice\n"
           "  DBK_OCL_KERNEL_TIMES  TEXT: train --profile on OpenCL prints each kernel's time in the ops\n"
           "                  whose label contains TEXT (stderr)\n"
           "  DBK_FUSE        0: batch norm, ReLU, residual add and max pool as separate ops (no fusion)\n"
           "  DBK_TUNE_CORRUPT  N (test hook): daybreak tune corrupts its N-th candidate's results\n"
           "  DBK_VK_VALIDATION  1: Vulkan under the validation layer, validation errors fail\n"
           "  DBK_SHADER_DIR  Vulkan shaders (<name>.spv) from this folder over the built-in ones\n"
           "  DBK_VK_MEMORY   staged: Vulkan host copies through a staging buffer, as on a discrete GPU\n"
           "  DBK_ENERGY_ROOT, DBK_NVML_LIBRARY  test hooks: energy readers on a recorded sysfs tree\n"
           "                  (ROOT/sys/class/...), NVML from another library\n\n"
           "exit codes: 0 success, 1 error, 2 usage error, 3 target not reached, 4 diverged (train) or\n"
           "            not finite outputs (eval, infer),\n"
           "            130/143/129 train stopped by SIGINT/SIGTERM/SIGHUP (continue it with train --resume DIR)\n"
           "errors: one line on stderr, 'daybreak: error: ...'; warnings 'daybreak: warn: ...'\n",
           DBK_VERSION);
}

static void help_train(void) {
    printf("usage: daybreak train [options]\n\n"
           "Trains a recipe on its dataset (CIFAR-10, or an image folder such as Imagenette) until the\n"
           "test accuracy reaches its target (checked after every epoch), timing it with the DAWNBench\n"
           "clock (preprocessing and training on the clock, evaluation off). Writes logs.tsv,\n"
           "dawnbench.json (the DAWNBench entry when the run conforms: full data sets, DAWNBench's\n"
           "threshold reached, dawnbench clock; otherwise marked as not conforming, with the reasons),\n"
           "mlperf.log, result.json and model.ckpt to --out, and resume.ckpt after every epoch until\n"
           "the run finishes. Ctrl-C, SIGTERM or SIGHUP stop it at the next step (status interrupted,\n"
           "exit 130, 143 or 129);\n"
           "--resume DIR continues it, or a run that was killed.\n\n"
           "options:\n"
           "  --recipe NAME       recipe to run (default: %s; see 'daybreak recipes')\n"
           "  --backend SPEC      cpu, opencl[:N] or vulkan[:N] (default: $DBK_BACKEND, else the\n"
           "                      first GPU, else PoCL (OpenCL on the CPU), else cpu)\n"
           "  --device N          device index within the backend (default 0, or the :N of --backend)\n"
           "  --data DIR          data folder holding the recipe's dataset, e.g. cifar-10-batches-bin/\n"
           "                      or imagenette2-224-mini/, or a dataset pack made by\n"
           "                      'daybreak pack-data' (default: $DAYBREAK_DATA)\n"
           "  --epochs N          most epochs to run; the learning-rate schedule is stretched or\n"
           "                      compressed to N epochs (default: the recipe's)\n"
           "  --batch N           batch size (default: the recipe's)\n"
           "  --lr PEAK           scale the learning-rate schedule so that its peak is PEAK\n"
           "  --target PCT        test accuracy (top-1, or top-5 for ImageNet recipes) that stops the\n"
           "                      run, at most two decimals,\n"
           "                      compared as logs.tsv prints it (default: the recipe's)\n"
           "  --all-epochs        run every epoch even after the target is reached\n"
           "  --seed N            seed of initialisation, shuffling and augmentation, 0..2^53-1\n"
           "                      (default 0);\n"
           "                      the same seed on the same device gives the same run\n"
           "  --out DIR           output folder (default: runs/<recipe>-<backend>-<UTC time>);\n"
           "                      refused if it already holds a result.json or resume.ckpt, is\n"
           "                      the data folder, or another run holds its lock\n"
           "  --resume DIR        continue the stopped or killed run in DIR with the options it was\n"
           "                      started with (only --data, --quiet, --no-progress, and for a\n"
           "                      distributed run --distributed, may be added)\n"
           "  --train-subset N    train on the first N training images only (quick checks; the\n"
           "                      result is not comparable to full runs)\n"
           "  --test-subset N     evaluate on the first N test images only (same caveat); image\n"
           "                      folders take N images spread evenly over the classes (both)\n"
           "  --loader-threads N  image-folder datasets: decode threads (default: the online cores)\n"
           "  --image-size N      image-folder datasets: train and evaluate on N x N crops\n"
           "                      (8..1024; default: the recipe's)\n"
           "  --image-sizes E:S,..  image-folder datasets: progressive resizing, S x S crops from the\n"
           "                      0-based epoch E on, e.g. 0:128,14:224 (default: the recipe's phases)\n"
           "  --quiet             no per-epoch lines\n"
           "  --profile           time every op of every training step (synchronising after each,\n"
           "                      so the run is slower) and print a per-op table at the end\n"
           "  --no-progress       no live progress bar (it is shown only on a terminal anyway)\n"
           "  --clock MODE        dawnbench (default: evaluation off the clock) or mlperf (on it)\n"
           "  --precision P       fp32 (default), fp16 (mixed precision; refused where the device lacks it)\n"
           "                      or auto (fp16 where the device has it, else fp32)\n"
           "  --loss-scale-interval N  fp16: clean steps before the loss scale doubles (default 2000)\n"
           "  --platform ID       hardware profile for cost and peak FLOP/s (default: matched by\n"
           "                      device name; see 'daybreak platforms')\n"
           "  --price USD         this device's price per hour for the cost, over the profile's\n"
           "                      (what the run would cost on an instance at that price)\n"
           "  --energy-price USD  price per kWh for the energy cost, over the profile's\n"
           "                      energy.price_per_kwh (energy is measured where the device has a\n"
           "                      counter: NVML, hwmon, RAPL; result.json says which, or why not)\n"
           "  --author NAME       author of the DAWNBench entry dawnbench.json (default daybreak)\n"
           "  --author-email ADDR its authorEmail (default empty)\n",
           dbk_recipe_default_name());
    dbk_cli_mask_help();
    dbk_cli_dist_help();
}

static void help_eval(void) {
    printf("usage: daybreak eval --checkpoint FILE [options]\n\n"
           "Loads a model.ckpt written by 'daybreak train' and prints its top-1 accuracy and mean\n"
           "loss on the recipe's test set; for a recipe with test-time augmentation (airbench94)\n"
           "also the accuracy with it, the one its runs record.\n\n"
           "options:\n"
           "  --checkpoint FILE   the checkpoint (required)\n"
           "  --diff FILE         a small checkpoint (model.diff of train --checkpoint-diff) applied to\n"
           "                      --checkpoint, which must be its base (its base.ckpt, or --base)\n"
           "  --backend SPEC      as for train\n"
           "  --device N          as for train\n"
           "  --data DIR          as for train\n"
           "  --batch N           evaluation batch size (default 500)\n"
           "  --test-subset N     evaluate the first N test images only\n");
}

static void help_devices(void) {
    printf("usage: daybreak devices\n\nLists every device of every backend compiled into this daybreak,\n"
           "with the index to pass to --backend NAME:INDEX or --device, and for OpenCL and Vulkan the\n"
           "drivers' ICD files the loaders find (/etc/OpenCL/vendors or $OCL_ICD_VENDORS; the Vulkan\n"
           "icd.d folders or $VK_DRIVER_FILES) and why a driver library does not load.\n");
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
        dbk_cli_print_icd((dbk_backend_kind)k);
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
            if (info.memory[0]) printf("      buffers: %s\n", info.memory);
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
        printf("  %-18s model %s, batch %d, %d epoch%s, target %.1f%% (%s)\n", "", r->model, r->batch, r->epochs,
               r->epochs == 1 ? "" : "s", (double)r->target, r->target_note);
        if (r->sparse_mask) { /* FISH recipes: the defaults of the mask options */
            printf("  %-18s sparse mask %s, %d Fisher samples, %d dense warm-up epoch%s%s", "", r->sparse_mask,
                   r->mask_samples > 0 ? r->mask_samples : 1024, r->mask_warmup, r->mask_warmup == 1 ? "" : "s",
                   r->mask_same ? ", the same mask on every rank" : "");
            if (r->local_steps > 0) printf("; with --distributed: model averaging every %d steps", r->local_steps);
            printf("\n");
        }
        if (r->size_phase_count > 0) { /* progressive resizing: first epoch (0-based) and size */
            char sizes[128];
            dbk_recipe_format_size_phases(r, sizes, sizeof sizes);
            printf("  %-18s image sizes %s (from epoch:size, 0-based)\n", "", sizes);
        }
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

/* The options --resume accepts: the others are the run's own, recorded in its resume.ckpt. */
static bool allowed_with_resume(const char *arg) {
    static const char *const names[] = {"--resume", "--data", "--quiet", "--no-progress", "--distributed", "--help",
                                        "-h"};
    const size_t len = strcspn(arg, "=");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i]) == len && !strncmp(arg, names[i], len)) return true;
    return false;
}

/* The train options of argv[2..]: into t, seed and resume (--resume DIR). *fixed is the first
 * option that --resume does not accept. Returns -1 when parsed, else the exit code. */
static int parse_train_args(dbk_cli_args *a, dbk_cli_train_args *t, dbk_cli_dist_args *dist, uint64_t *seed,
                            const char **resume, const char **fixed) {
    for (a->i = 2; a->i < a->argc; a->i++) {
        const char *v = NULL, *arg = a->argv[a->i];
        int m = 0, rc;
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            help_train();
            return DBK_EXIT_OK;
        }
        if (!allowed_with_resume(arg) && !*fixed) *fixed = arg;
        if ((m = dbk_cli_match(a, "--seed", true, &v)) != 0) {
            if (m > 0 && !dbk_cli_parse_seed(v, seed))
                return dbk_cli_usage_error("train", "bad --seed '%s' (0..%llu)", v, DBK_CLI_MAX_SEED);
        } else if ((m = dbk_cli_match(a, "--resume", true, &v)) != 0) {
            *resume = v;
        } else if (dbk_cli_train_option(a, "train", t, &rc) || dbk_cli_dist_option(a, dist, &rc)) {
            if (rc != DBK_EXIT_OK) return rc;
        } else return dbk_cli_usage_error("train", "unknown option '%s'", arg);
        if (m < 0) return dbk_cli_usage_error("train", "option '%s' needs a value", arg);
    }
    return -1;
}

/* --resume DIR: the options recorded in DIR/resume.ckpt replace t, dist and seed (keeping
 * --data, --quiet and --no-progress of this command line), on the backend and device the run
 * used; recorded receives "daybreak train <recorded options>" as argv. A distributed run is
 * resumed only with --distributed (dist->distributed), another only without. Returns -1, or
 * the exit code. */
static int resume_options(const char *dir, dbk_cli_train_args *t, dbk_cli_dist_args *dist, uint64_t *seed,
                          dbk_resume_header *h, char **recorded) {
    if (dbk_resume_read(dir, h, NULL, NULL) != DBK_OK) return dbk_cli_fail(NULL);
    if (h->argc < 0) {
        fprintf(stderr, "daybreak: error: %s was not started by 'daybreak train' (its options are not recorded); "
                        "it cannot be resumed\n", dir);
        return DBK_EXIT_ERROR;
    }
    static char program[] = "daybreak", command[] = "train";
    recorded[0] = program;
    recorded[1] = command;
    for (int i = 0; i < h->argc; i++) recorded[i + 2] = h->argv[i];
    dbk_cli_args ra = {.argc = h->argc + 2, .argv = recorded};
    dbk_cli_train_args rt;
    dbk_cli_train_args_init(&rt);
    const char *nested = NULL, *unused = NULL;
    dbk_cli_dist_args rd;
    dbk_cli_dist_args_init(&rd);
    int rc = parse_train_args(&ra, &rt, &rd, seed, &nested, &unused);
    if (rc != -1) return rc;
    if (rd.distributed != dist->distributed)
        return dbk_cli_usage_error("train", rd.distributed ? "%s is a distributed run: resume it with mpirun and "
                                   "--distributed --resume %s" : "%s is not a distributed run: resume it without "
                                   "--distributed (--resume %s)", dir, dir);
    *dist = rd;
    if (t->data) rt.data = t->data;
    rt.quiet = rt.quiet || t->quiet;
    rt.no_progress = rt.no_progress || t->no_progress;
    rt.out = dir;
    rt.backend = h->backend;
    rt.device = h->device;
    *t = rt;
    return -1;
}

/* SIGINT, SIGTERM and SIGHUP stop the run at the next step boundary (dbk_cli_catch_signals). */
static volatile sig_atomic_t stop_signal;

/* airbench's metric next to the time to target: the whole schedule's accuracy and clock. */
static void print_fixed_schedule(const dbk_train_report *rep) {
    const dbk_schedule_result *sc = &rep->schedule;
    if (sc->completed) {
        printf("fixed schedule (%d epoch%s, %ld step%s): %.2f%% test accuracy", sc->epochs, sc->epochs == 1 ? "" : "s",
               sc->steps, sc->steps == 1 ? "" : "s", sc->accuracy);
        if (rep->top5) printf(" (top-5 %.2f%%)", sc->top5);
        printf(", %.1f s (%.6f h) on the clock\n", sc->seconds, sc->seconds / 3600.0);
        return;
    }
    char note[256];
    dbk_results_schedule_note(rep, note, sizeof note);
    printf("fixed schedule (%d epoch%s): no result, %s\n", sc->epochs, sc->epochs == 1 ? "" : "s", note);
}

/* The console's last lines of a run and its exit code (README "Exit codes"). */
static int train_outcome(const dbk_train_options *opt, const dbk_train_report *rep, dbk_status st) {
    int code;
    if (st == DBK_ERR_DIVERGED) {
        fprintf(stderr, "daybreak: error: %s\n", dbk_last_error());
        code = DBK_EXIT_DIVERGED;
    } else if (st != DBK_OK) {
        return dbk_cli_fail(NULL);
    } else if (rep->status == DBK_RUN_INTERRUPTED) {
        const char *sig = dbk_cli_signal_name(rep->stop_signal);
        if (rep->peers.local_steps > 0)
            printf("interrupted by %s after epoch %d; a --local-steps run cannot be resumed yet (each rank's model "
                   "since the last average is not saved)\n", sig, rep->epochs_run);
        else if (opt->peers)
            printf("interrupted by %s after epoch %d; resume with: mpirun -np %d daybreak train --distributed --resume %s\n",
                   sig, rep->epochs_run, opt->peers->size, opt->out_dir);
        else printf("interrupted by %s after epoch %d; resume with: daybreak train --resume %s\n", sig, rep->epochs_run,
                    opt->out_dir);
        return 128 + rep->stop_signal;
    } else if (rep->status == DBK_RUN_REACHED) {
        const dbk_epoch_record *hit = &rep->epochs[rep->epochs_to_target - 1];
        printf("target %.2f%% reached in epoch %d: %.2f%% test accuracy, %.1f s (%.6f h) on the clock\n",
               (double)opt->recipe.target, rep->epochs_to_target, hit->test_accuracy, rep->seconds_to_target,
               rep->seconds_to_target / 3600.0);
        code = DBK_EXIT_OK;
    } else {
        printf("target %.2f%% not reached in %d epoch%s (best %.2f%%)\n", (double)opt->recipe.target, rep->epochs_run,
               rep->epochs_run == 1 ? "" : "s", dbk_results_best_accuracy(rep));
        code = DBK_EXIT_NOT_REACHED;
    }
    print_fixed_schedule(rep);
    const dbk_peers_summary *p = &rep->peers;
    if (p->local_steps > 0 && p->averages > 0) /* what model averaging sent, against the alternatives */
        printf("model averaging every %d steps: %ld averages, %.0f bytes per rank in all (%.0f per average); the dense "
               "average would send %.0f, the gradient allreduce %.0f\n", p->local_steps, p->averages,
               p->bytes_sent / p->ranks, p->bytes_sent / p->ranks / (double)p->averages,
               4.0 * (p->trainable_values + p->statistics_values) * (double)p->averages,
               4.0 * p->trainable_values * (double)p->train_steps);
    dbk_results_print_energy(stdout, rep);
    dbk_results_print_conformance(stdout, opt, rep);
    printf("results in %s (logs.tsv, dawnbench.json, mlperf.log, result.json%s)\n", opt->out_dir,
           st == DBK_OK ? ", model.ckpt" : "");
    return code;
}

/* One run with the parsed options; argc/argv are the train arguments to record (argv[0] is
 * "daybreak", argv[1] "train"); peers: the distributed job, or NULL. */
static int train(const dbk_cli_train_args *t, uint64_t seed, bool resume, int argc, char **argv,
                 const dbk_peers *peers, bool device_per_rank, int local_rank) {
    dbk_train_options opt;
    int rc = dbk_cli_train_setup(t, &opt);
    if (rc != DBK_EXIT_OK) return rc;
    opt.peers = peers;
    if (device_per_rank) {
        const int devices = dbk_backend_device_count(opt.backend);
        opt.device = devices > 0 ? local_rank % devices : 0;
    }
    if (t->platform) { /* an unknown --platform fails before the data is read */
        dbk_platform_info pl;
        if (dbk_platform_resolve(t->platform, dbk_backend_kind_name(opt.backend), "", &pl) != DBK_OK)
            return dbk_cli_fail(NULL);
    }

    /* The trainer opens the folder again; here it is checked and gives the split sizes. */
    dbk_dataset_info data_info;
    rc = dbk_cli_open_dataset("train", opt.recipe.dataset, t->data, t->train_subset, t->test_subset, &data_info);
    if (rc != DBK_EXIT_OK) return rc;
    char data_dir[sizeof data_info.dir];
    snprintf(data_dir, sizeof data_dir, "%s", data_info.dir);
    dbk_dataset_info_deinit(&data_info);

    char out_buf[4096];
    const char *out = t->out;
    if (!out) {
        char stamp[32];
        dbk_cli_utc_stamp(stamp, sizeof stamp);
        snprintf(out_buf, sizeof out_buf, "runs/%s-%s-%s", opt.recipe.name, dbk_backend_kind_name(opt.backend), stamp);
        out = out_buf;
    }
    rc = dbk_cli_check_run_out(out, t->data, data_dir);
    if (rc != DBK_EXIT_OK) return rc;
    opt.data_dir = data_dir;
    opt.seed = seed;
    opt.out_dir = out;
    opt.resume = resume;
    opt.stop_signal = &stop_signal;
    opt.arg_count = argc - 2;
    opt.args = argv + 2;

    dbk_device_info info;
    if (dbk_backend_device_info(opt.backend, opt.device, &info) != DBK_OK) return dbk_cli_fail(NULL);
    if (!t->quiet) {
        printf("daybreak %s: recipe %s (model %s, batch %d, up to %d epoch%s, target %.2f%%), seed %llu\n",
               DBK_VERSION, opt.recipe.name, opt.recipe.model, opt.recipe.batch, opt.recipe.epochs,
               opt.recipe.epochs == 1 ? "" : "s", (double)opt.recipe.target, (unsigned long long)seed);
        printf("device %s:%d %s (%s)\noutput %s\n", dbk_backend_kind_name(opt.backend), opt.device, info.name,
               info.driver, out);
        fflush(stdout);
    }

    char *cmdline = dbk_cli_join(argc, argv);
    dbk_train_report *rep = dbk_calloc(1, sizeof *rep);
    if (!rep || !cmdline) {
        dbk_free(rep);
        dbk_free(cmdline);
        return dbk_cli_fail("train");
    }
    opt.command_line = cmdline;
    dbk_cli_catch_signals(&stop_signal); /* distributed: the ranks agree on the stop (docs/distributed.md) */
    dbk_status st = dbk_train_run(&opt, rep);
    if (peers && st != DBK_OK && st != DBK_ERR_DIVERGED && strncmp(dbk_last_error(), "rank ", 5) != 0) {
        char reason[1024]; /* a copy: the message is rewritten in the buffer it lives in */
        snprintf(reason, sizeof reason, "%s", dbk_last_error());
        dbk_set_error(st, "rank %d: %s", peers->rank, reason);
    }
    rc = train_outcome(&opt, rep, st);
    dbk_free(rep);
    dbk_free(cmdline);
    return rc;
}

/* A rank of a distributed job: only rank 0 prints to stdout (every rank's errors go to
 * stderr). A rank that fails ends every rank of the job (dbk_dist_abort) after printing why,
 * so no rank waits for it. */
static int train_distributed(const dbk_cli_train_args *t, dbk_cli_dist_args *dist, uint64_t seed, bool resume,
                             int argc, char **argv) {
    dbk_dist *d = NULL;
    int rc = dbk_cli_dist_recipe_defaults(dist, t->recipe);
    if (rc == DBK_EXIT_OK) rc = dbk_cli_dist_start(dist, seed, &d);
    if (rc != DBK_EXIT_OK) return rc;
    dbk_peers peers;
    dbk_dist_peers(d, &peers);
    if (peers.rank > 0 && !freopen("/dev/null", "w", stdout)) rc = dbk_cli_fail("rank output");
    if (rc == DBK_EXIT_OK) rc = train(t, seed, resume, argc, argv, &peers, dist->device_per_rank, dbk_dist_local_rank(d));
    if (rc == DBK_EXIT_ERROR || rc == DBK_EXIT_USAGE) {
        fflush(NULL);
        dbk_dist_abort(d, rc);
    }
    dbk_dist_finalize(d);
    return rc;
}

static int cmd_train(dbk_cli_args *a) {
    dbk_cli_train_args t;
    dbk_cli_train_args_init(&t);
    uint64_t seed = 0;
    const char *resume = NULL, *fixed = NULL;
    dbk_cli_dist_args dist;
    dbk_cli_dist_args_init(&dist);
    int rc = parse_train_args(a, &t, &dist, &seed, &resume, &fixed);
    if (rc != -1) return rc;
    if ((rc = dbk_cli_dist_check(&dist)) != DBK_EXIT_OK) return rc;
    if (dist.distributed && t.profile) return dbk_cli_usage_error("train", "--distributed cannot be combined with --profile");
    if (dist.distributed && !resume) return train_distributed(&t, &dist, seed, false, a->argc, a->argv);
    dbk_resume_header h;
    memset(&h, 0, sizeof h);
    char *recorded[DBK_RESUME_MAX_ARGS + 2];
    int argc = a->argc;
    char **argv = a->argv;
    if (resume) {
        if (fixed)
            return dbk_cli_usage_error("train", "--resume goes on with the options %s/%s recorded; '%s' cannot be "
                                       "given with it (only --data, --quiet, --no-progress and --distributed can)", resume,
                                       DBK_RESUME_FILE, fixed);
        rc = resume_options(resume, &t, &dist, &seed, &h, recorded);
        if (rc != -1) {
            dbk_resume_header_deinit(&h);
            return rc;
        }
        argc = h.argc + 2;
        argv = recorded;
    }
    if (dist.distributed) rc = train_distributed(&t, &dist, seed, true, argc, argv);
    else rc = train(&t, seed, resume != NULL, argc, argv, NULL, false, 0);
    dbk_resume_header_deinit(&h);
    return rc;
}

static int cmd_eval(dbk_cli_args *a) {
    const char *ckpt = NULL, *backend = NULL, *data = NULL, *diff = NULL;
    long device = -1, batch = 500, test_subset = 0;
    for (a->i = 2; a->i < a->argc; a->i++) {
        const char *v = NULL, *arg = a->argv[a->i];
        int m;
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            help_eval();
            return DBK_EXIT_OK;
        }
        if ((m = dbk_cli_match(a, "--checkpoint", true, &v)) != 0) ckpt = v;
        else if ((m = dbk_cli_match(a, "--diff", true, &v)) != 0) diff = v;
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
    dbk_backend_kind kind;
    int index;
    int rc = dbk_cli_resolve_device(backend, device, &kind, &index);
    if (rc != DBK_EXIT_OK) return rc;
    dbk_dataset_info info;
    rc = dbk_cli_open_dataset("eval", recipe->dataset, data, 0, test_subset, &info);
    if (rc != DBK_EXIT_OK) return rc;

    /* The evaluation `infer` times, at --batch, with the recipe's test-time augmentation. */
    const dbk_infer_eval_config cfg = {.kind = kind, .index = index, .checkpoint = ckpt, .diff = diff, .data = &info,
                                       .test_limit = (int)test_subset, .batch = (int)batch, .tta = true};
    dbk_infer_evaluation ev;
    const dbk_status st = dbk_infer_evaluate(&cfg, &ev);
    dbk_dataset_info_deinit(&info);
    const dbk_epoch_counters *ec = &ev.plain;
    if (ev.evaluated)
        printf("%s%s%s: model %s, recipe %s, %s:%d: test accuracy %.2f%% (%lld images), mean loss %.4f\n", ckpt,
               diff ? " + " : "", diff ? diff : "", model->name, recipe->name, dbk_backend_kind_name(kind), index,
               100.0 * ec->correct / (double)ec->images, (long long)ec->images, ec->loss_sum / (double)ec->images);
    if (st == DBK_ERR_DIVERGED) {
        fprintf(stderr, "daybreak: error: %s\n", dbk_last_error());
        return DBK_EXIT_DIVERGED;
    }
    if (st != DBK_OK) return dbk_cli_fail(NULL);
    /* A recipe judged with test-time augmentation (airbench94) reports that accuracy too:
     * it is the one its runs record as their result. */
    if (ev.tta_done)
        printf("%s: with test-time augmentation level %d: test accuracy %.2f%%, mean loss %.4f\n", ckpt,
               recipe->tta_level, 100.0 * ev.tta.correct / (double)ev.tta.images,
               ev.tta.loss_sum / (double)ev.tta.images);
    return DBK_EXIT_OK;
}

int main(int argc, char **argv) {
    dbk_log_init();
    dbk_cli_catch_signals(NULL);
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
        else if (!strcmp(topic, "pack-data")) dbk_help_pack_data();
        else if (!strcmp(topic, "tune")) dbk_help_tune();
        else if (!*topic) help_main();
        else {
            fprintf(stderr, "daybreak: error: help: no command '%s' (commands: train, eval, devices, recipes, bench, "
                            "infer, report, platforms, check, pack-data, tune)\n", topic);
            return DBK_EXIT_USAGE;
        }
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
    if (!strcmp(cmd, "pack-data")) return dbk_cmd_pack_data(&a);
    if (!strcmp(cmd, "tune")) return dbk_cmd_tune(&a);
    fprintf(stderr, "daybreak: error: unknown command '%s' (commands: train, eval, devices, recipes, bench, infer, "
                    "report, platforms, check, pack-data, tune; see 'daybreak --help')\n", cmd);
    return DBK_EXIT_USAGE;
}
