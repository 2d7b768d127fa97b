/*
 * cmd_bench.c — `daybreak bench`: N time-to-accuracy runs of one recipe on one device with
 * distinct, recorded seeds (seed0, seed0+1, ...), each into its own subfolder of --out
 * (run-01, run-02, ...), then the summary: a printed table and summary.json (bench/runs.h).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/cli.h"
#include "bench/runs.h"
#include "core/alloc.h"
#include "core/fileio.h"
#include "data/dataset.h"
#include "train/results.h"

#define MAX_RUNS 1000

void dbk_help_bench(void) {
    printf("usage: daybreak bench --runs N [--recipe R] [--seed0 S] [--clock dawnbench|mlperf] [train options]\n\n"
           "Runs the recipe N times on one device with seeds S, S+1, ..., S+N-1 (each run exactly as\n"
           "'daybreak train' with that --seed), each into its own folder --out/run-01, run-02, ...;\n"
           "then prints every run and the summary (median and olympic mean time to the target,\n"
           "epochs to the target, coefficient of variation, fraction of runs that reached it, cost\n"
           "where the hardware profile has a price, utilisation, and the time to each accuracy\n"
           "threshold 90..94%% and the target) and writes it to --out/summary.json. A run that misses\n"
           "the target counts as not converged; it is never dropped.\n\n"
           "options:\n"
           "  --runs N            number of runs (1..%d, required)\n"
           "  --seed0 S           seed of the first run (default 0; the last, S+N-1, at most 2^53-1)\n"
           "  --out DIR           output folder (default: runs/bench-<recipe>-<backend>-<UTC time>);\n"
           "                      refused if it already holds a summary.json or run-01\n"
           "  --clock MODE        dawnbench (default) or mlperf (evaluation on the clock)\n"
           "  --precision P       fp32 (default), fp16 or auto (as train)\n"
           "  --recipe, --backend, --device, --data, --epochs, --batch, --target, --all-epochs,\n"
           "  --train-subset, --test-subset, --quiet, --profile, --no-progress, --platform,\n"
           "  --loss-scale-interval, --price, --energy-price, --lr, --sparse-mask, --mask-samples,\n"
           "  --mask-grad, --fix-mask, --mask-warmup, --checkpoint-diff, --base,\n"
           "  --author, --author-email   as for 'daybreak train'\n\n"
           "exit code: 0 if at least one run reached the target, 3 if none did, 1 on an error.\n",
           MAX_RUNS);
}

int dbk_cmd_bench(dbk_cli_args *a) {
    dbk_cli_train_args t;
    dbk_cli_train_args_init(&t);
    long runs = 0;
    uint64_t seed0 = 0;
    for (a->i = 2; a->i < a->argc; a->i++) {
        const char *v = NULL, *arg = a->argv[a->i];
        int m, rc;
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            dbk_help_bench();
            return DBK_EXIT_OK;
        }
        if ((m = dbk_cli_match(a, "--runs", true, &v)) != 0) {
            if (m > 0 && !dbk_cli_parse_long(v, 1, MAX_RUNS, &runs))
                return dbk_cli_usage_error("bench", "bad --runs '%s' (1..%d)", v, MAX_RUNS);
        } else if ((m = dbk_cli_match(a, "--seed0", true, &v)) != 0) {
            if (m > 0 && !dbk_cli_parse_seed(v, &seed0))
                return dbk_cli_usage_error("bench", "bad --seed0 '%s' (0..%llu)", v, DBK_CLI_MAX_SEED);
        } else if (dbk_cli_train_option(a, "bench", &t, &rc)) {
            if (rc != DBK_EXIT_OK) return rc;
        } else return dbk_cli_usage_error("bench", "unknown option '%s'", arg);
        if (m < 0) return dbk_cli_usage_error("bench", "option '%s' needs a value", arg);
    }
    if (runs < 1) return dbk_cli_usage_error("bench", "%s", "--runs N is required");
    if (seed0 > DBK_CLI_MAX_SEED - (uint64_t)(runs - 1)) /* the last seed, never wrapped past 2^64 to 0 */
        return dbk_cli_usage_error("bench", "--seed0 %llu with --runs %ld: the last seed would pass %llu",
                                   (unsigned long long)seed0, runs, DBK_CLI_MAX_SEED);

    dbk_train_options opt;
    int rc = dbk_cli_train_setup(&t, &opt);
    if (rc != DBK_EXIT_OK) return rc;
    dbk_device_info info;
    if (dbk_backend_device_info(opt.backend, opt.device, &info) != DBK_OK) return dbk_cli_fail(NULL);
    dbk_platform_info pl;
    if (dbk_platform_resolve(t.platform, dbk_backend_kind_name(opt.backend), info.name, &pl) != DBK_OK)
        return dbk_cli_fail(NULL);
    const char *data = t.data, *out = t.out;
    const dbk_clock_mode clock = t.clock;

    /* Each run opens the folder again; here it is checked and gives the split sizes. */
    dbk_dataset_info data_info;
    rc = dbk_cli_open_dataset("bench", opt.recipe.dataset, data, t.train_subset, t.test_subset, &data_info);
    if (rc != DBK_EXIT_OK) return rc;
    char data_dir[sizeof data_info.dir];
    snprintf(data_dir, sizeof data_dir, "%s", data_info.dir);
    dbk_dataset_info_deinit(&data_info);

    char out_buf[4096], path[4200], stamp[32];
    if (!out) {
        dbk_cli_utc_stamp(stamp, sizeof stamp);
        snprintf(out_buf, sizeof out_buf, "runs/bench-%s-%s-%s", opt.recipe.name, dbk_backend_kind_name(opt.backend),
                 stamp);
        out = out_buf;
    }
    rc = dbk_cli_check_run_out(out, data, data_dir);
    if (rc != DBK_EXIT_OK) return rc;
    snprintf(path, sizeof path, "%s/summary.json", out);
    bool taken = access(path, F_OK) == 0;
    snprintf(path, sizeof path, "%s/run-01", out);
    taken = taken || access(path, F_OK) == 0;
    if (taken) {
        fprintf(stderr, "daybreak: error: %s already holds a benchmark; choose another --out or remove it\n", out);
        return DBK_EXIT_ERROR;
    }
    if (dbk_mkdir_p(out) != DBK_OK) return dbk_cli_fail(NULL);

    opt.data_dir = data_dir;
    opt.command_line = dbk_cli_join(a->argc, a->argv);

    printf("daybreak %s bench: %ld run%s of recipe %s (model %s, batch %d, up to %d epoch%s, target %.2f%%), "
           "seeds %llu..%llu, clock %s\n",
           DBK_VERSION, runs, runs == 1 ? "" : "s", opt.recipe.name, opt.recipe.model, opt.recipe.batch,
           opt.recipe.epochs, opt.recipe.epochs == 1 ? "" : "s", (double)opt.recipe.target, (unsigned long long)seed0,
           (unsigned long long)(seed0 + (uint64_t)runs - 1), dbk_clock_mode_name(clock));
    printf("device %s:%d %s (%s), profile %s\noutput %s\n", dbk_backend_kind_name(opt.backend), opt.device, info.name,
           info.driver, pl.id, out);
    fflush(stdout);

    dbk_train_report *rep = dbk_calloc(1, sizeof *rep);
    if (!rep) return dbk_cli_fail("bench");
    static volatile sig_atomic_t stop;
    opt.stop_signal = &stop;
    dbk_cli_catch_signals(&stop);
    char run_dir[4200];
    for (long i = 0; i < runs; i++) {
        snprintf(run_dir, sizeof run_dir, "%s/run-%02ld", out, i + 1);
        opt.seed = seed0 + (uint64_t)i;
        opt.out_dir = run_dir;
        printf("\nrun %ld/%ld: seed %llu -> %s\n", i + 1, runs, (unsigned long long)opt.seed, run_dir);
        fflush(stdout);
        dbk_status st = dbk_train_run(&opt, rep);
        if (st == DBK_ERR_DIVERGED) {
            printf("run %ld diverged (counted as not converged): %s\n", i + 1, dbk_last_error());
        } else if (st != DBK_OK) {
            dbk_free(rep);
            return dbk_cli_fail(run_dir);
        } else if (rep->status == DBK_RUN_INTERRUPTED) {
            /* The run's files say "interrupted"; the benchmark ends without a summary. */
            const int sig = rep->stop_signal;
            printf("run %ld interrupted by %s after epoch %d; the benchmark stops without a summary (the runs so far "
                   "are in %s)\n", i + 1, dbk_cli_signal_name(sig), rep->epochs_run, out);
            dbk_free(rep);
            return 128 + sig;
        } else if (rep->status == DBK_RUN_REACHED) {
            printf("run %ld: target reached in epoch %d, %.1f s on the clock\n", i + 1, rep->epochs_to_target,
                   rep->seconds_to_target);
        } else {
            printf("run %ld: target not reached in %d epoch%s\n", i + 1, rep->epochs_run, rep->epochs_run == 1 ? "" : "s");
        }
        if (st == DBK_OK && rep->schedule.completed)
            printf("run %ld: fixed schedule %.2f%% test accuracy, %.1f s on the clock\n", i + 1, rep->schedule.accuracy,
                   rep->schedule.seconds);
        if (st == DBK_OK || st == DBK_ERR_DIVERGED) dbk_results_print_conformance(stdout, &opt, rep);
        fflush(stdout);
    }
    dbk_free(rep);

    dbk_run_set set = {0};
    dbk_run_group *groups = NULL;
    int ngroups = 0;
    if (dbk_run_set_add(&set, out) != DBK_OK || dbk_run_groups_build(&set, &groups, &ngroups) != DBK_OK) {
        dbk_run_set_deinit(&set);
        return dbk_cli_fail(out);
    }
    dbk_runs_print_summary(stdout, &set, groups, ngroups);
    snprintf(path, sizeof path, "%s/summary.json", out);
    dbk_status st = dbk_runs_write_summary_json(path, &set, groups, ngroups);
    int converged = 0;
    for (int g = 0; g < ngroups; g++) converged += groups[g].seconds.converged;
    dbk_run_groups_destroy(groups, ngroups);
    dbk_run_set_deinit(&set);
    if (st != DBK_OK) return dbk_cli_fail(NULL);
    printf("\nsummary in %s (one folder per run: logs.tsv, dawnbench.json, mlperf.log, result.json, model.ckpt)\n", path);
    return converged > 0 ? DBK_EXIT_OK : DBK_EXIT_NOT_REACHED;
}
