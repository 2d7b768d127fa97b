/*
 * bench_train.c — training throughput side by side: ResNet9 (cifar10-resnet9 recipe, batch
 * 512), the quick recipe and airbench94 (batch 1024), or the one CIFAR-10 recipe --recipe
 * names, on every device of every backend compiled in, one line each.
 *
 * usage: bench_train [--steps N] [--warmup N] [--data DIR] [--backend SPEC] [--recipe NAME] [--batch N]
 *                    [--precision fp32|fp16] [--tsv]
 * --batch replaces every recipe's own batch (tools/bench_vs_pytorch.sh runs ResNet9 at 128 and 512).
 * --precision fp16 times mixed precision (docs/precision.md); a device without the fp16 path
 * gets an error line naming what it lacks. The precision is a column of the table.
 * --tsv prints tab-separated columns with a header (backend, index, device, recipe, precision,
 * batch, img_per_s, ms_per_step, build_s, error), for scripts; a failed line has its error in
 * the last column and empty figures.
 * build_s: creating the backend (the OpenCL program compiled or read from the cache), the
 * session (Vulkan pipelines) and its warm-up pass (lazy driver compilation), before the timing.
 * Needs the recipes' dataset, CIFAR-10 (the batches are real images), via --data or DAYBREAK_DATA.
 *
 * Before batch, what a timed step asked of the device (train/session.h dbk_step_costs):
 * launches, syncs (host waits inside the step), host_ms (the step's time outside those waits
 * and, on the CPU backend, outside the ops), MB_moved by the launches and MB_min, the tensors'
 * minimum (each op's tensors once); and cpu_s, the process's CPU seconds per step (every
 * thread: on a CPU device the work a step costs, comparable when other jobs share the cores).
 * --tsv names them launches, syncs, host_ms, mb_moved, mb_min, cpu_s, before error (last).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/throughput.h"
#include "core/timer.h"

/* One line of the table: a timing, or the error that stopped it (error non-empty). */
typedef struct bench_line {
    const char *backend, *device, *recipe, *precision;
    int         index, batch;
    double      images_per_second, ms_per_step, build_seconds;
    dbk_step_costs costs;
    double      cpu_seconds;   /* per step, every thread */
    char        error[1024];
} bench_line;

/* The last error into l->error as one table cell: tabs and line breaks become spaces. */
static void take_error(bench_line *l) {
    snprintf(l->error, sizeof l->error, "%s", dbk_last_error());
    for (char *p = l->error; *p; p++)
        if (*p == '\t' || *p == '\n' || *p == '\r') *p = ' ';
}

static bool tsv;   /* --tsv: tab-separated, a header line first, for scripts (tools/gpu-check.sh) */

static void print_header(void) {
    if (tsv)
        printf("backend\tindex\tdevice\trecipe\tprecision\tbatch\timg_per_s\tms_per_step\tbuild_s\tlaunches\tsyncs\t"
               "host_ms\tmb_moved\tmb_min\tcpu_s\terror\n");
    else
        printf("%-8s %-2s %-40s %-16s %-4s %8s %5s %7s %9s %8s %8s %5s %9s %10s %8s\n", "backend", "#", "device",
               "recipe", "prec", "launches", "syncs", "host_ms", "MB_moved", "MB_min", "cpu_s", "batch", "img/s",
               "ms/step", "build_s");
}

static void print_line(const bench_line *l) {
    const dbk_step_costs *c = &l->costs;
    if (tsv && l->error[0])
        printf("%s\t%d\t%s\t%s\t%s\t%d\t\t\t\t\t\t\t\t\t\t%s\n", l->backend, l->index, l->device, l->recipe,
               l->precision, l->batch, l->error);
    else if (tsv)
        printf("%s\t%d\t%s\t%s\t%s\t%d\t%.1f\t%.1f\t%.2f\t%.0f\t%.2f\t%.3f\t%.0f\t%.0f\t%.2f\t\n", l->backend,
               l->index, l->device, l->recipe, l->precision, l->batch, l->images_per_second, l->ms_per_step,
               l->build_seconds, c->launches, c->syncs, 1e3 * c->host_seconds, c->device_bytes * 1e-6,
               c->min_bytes * 1e-6, l->cpu_seconds);
    else if (l->error[0])
        printf("%-8s %-2d %-40.40s %-16s %-4s error: %s\n", l->backend, l->index, l->device, l->recipe, l->precision,
               l->error);
    else
        printf("%-8s %-2d %-40.40s %-16s %-4s %8.0f %5.2f %7.2f %9.0f %8.0f %8.2f %5d %9.1f %10.1f %8.2f\n",
               l->backend, l->index, l->device, l->recipe, l->precision, c->launches, c->syncs, 1e3 * c->host_seconds,
               c->device_bytes * 1e-6, c->min_bytes * 1e-6, l->cpu_seconds, l->batch, l->images_per_second,
               l->ms_per_step, l->build_seconds);
    fflush(stdout);
}

static int run_one(dbk_backend_kind kind, int index, const char *recipe_name, int batch, bool fp16, int steps,
                   int warmup, const dbk_dataset *train, const dbk_dataset *test) {
    const dbk_recipe *recipe;
    if (dbk_recipe_find(recipe_name, &recipe) != DBK_OK) return 1;
    bench_line l = {.backend = dbk_backend_kind_name(kind), .device = "?", .recipe = recipe_name,
                    .precision = fp16 ? "fp16" : "fp32", .index = index, .batch = batch > 0 ? batch : recipe->batch};
    dbk_backend *be;
    const double created0 = dbk_time_now();
    if (dbk_backend_create(kind, index, &be) != DBK_OK) {
        take_error(&l);
        print_line(&l);
        return 1;
    }
    const double backend_seconds = dbk_time_now() - created0;
    l.device = dbk_backend_get_info(be)->name;
    dbk_throughput t;
    dbk_status st = dbk_bench_throughput(be, recipe, l.batch, fp16, warmup, steps, train, test, &t);
    if (st == DBK_OK) {
        l.images_per_second = t.images_per_second;
        l.ms_per_step = 1000.0 * t.seconds_per_step;
        l.build_seconds = backend_seconds + t.session_seconds + t.warmup_seconds;
        l.costs = t.costs;
        l.cpu_seconds = t.cpu_seconds_per_step;
    } else {
        take_error(&l);
    }
    print_line(&l);
    dbk_backend_destroy(be);
    return st == DBK_OK ? 0 : 1;
}

int main(int argc, char **argv) {
    int steps = 5, warmup = 1, batch = 0;
    bool fp16 = false;
    const char *data = NULL, *only = NULL, *only_recipe = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--warmup") && i + 1 < argc) warmup = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--data") && i + 1 < argc) data = argv[++i];
        else if (!strcmp(argv[i], "--backend") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--recipe") && i + 1 < argc) only_recipe = argv[++i];
        else if (!strcmp(argv[i], "--tsv")) tsv = true;
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc) batch = atoi(argv[++i]) >= 1 ? atoi(argv[i]) : -1;
        else if (!strcmp(argv[i], "--precision") && i + 1 < argc && !strcmp(argv[i + 1], "fp32")) fp16 = false, i++;
        else if (!strcmp(argv[i], "--precision") && i + 1 < argc && !strcmp(argv[i + 1], "fp16")) fp16 = true, i++;
        else {
            fprintf(stderr, "usage: bench_train [--steps N] [--warmup N] [--data DIR] [--backend SPEC] [--recipe NAME] "
                            "[--batch N] [--precision fp32|fp16] [--tsv]\n");
            return 2;
        }
    }
    if (steps < 1 || warmup < 0 || batch < 0) {
        fprintf(stderr, "bench_train: --steps and --batch must be >= 1 and --warmup >= 0\n");
        return 2;
    }
    /* By default the three CIFAR-10 workloads of the table; --recipe runs any one CIFAR-10 recipe. */
    const char *recipes[3] = {"cifar10-resnet9", "quick", "airbench94"};
    size_t recipe_count = 3;
    const dbk_recipe *named;
    if (only_recipe) {
        if (dbk_recipe_find(only_recipe, &named) != DBK_OK) {
            fprintf(stderr, "bench_train: %s\n", dbk_last_error());
            return 2;
        }
        if (strcmp(named->dataset, "cifar10")) {
            fprintf(stderr, "bench_train: recipe %s trains on %s; bench_train loads CIFAR-10 only\n", only_recipe,
                    named->dataset);
            return 2;
        }
        recipes[0] = only_recipe;
        recipe_count = 1;
    }
    const dbk_recipe *first;
    const dbk_dataset_kind *kind;
    dbk_dataset_info info = {0};
    dbk_dataset train = {0}, test = {0};
    /* The recipes train on the same dataset; it is loaded once. */
    if (dbk_recipe_find(recipes[0], &first) != DBK_OK || dbk_dataset_kind_find(first->dataset, &kind) != DBK_OK ||
        dbk_dataset_open(kind, data, &info) != DBK_OK ||
        dbk_dataset_load(&info, DBK_DATASET_SPLIT_TRAIN, 0, &train) != DBK_OK ||
        dbk_dataset_load(&info, DBK_DATASET_SPLIT_TEST, 1000, &test) != DBK_OK) {
        fprintf(stderr, "bench_train: %s\n", dbk_last_error());
        return 1;
    }
    dbk_dataset_info_deinit(&info);
    print_header();
    int failures = 0;
    for (int k = 0; k < DBK_BACKEND_KIND_COUNT; k++) {
        int n = dbk_backend_device_count((dbk_backend_kind)k);
        for (int i = 0; i < n; i++) {
            if (only) {
                dbk_backend_kind ok;
                int oi;
                if (dbk_backend_resolve(only, -1, &ok, &oi) != DBK_OK) {
                    fprintf(stderr, "bench_train: %s\n", dbk_last_error());
                    return 2;
                }
                if ((int)ok != k || oi != i) continue;
            }
            for (size_t r = 0; r < recipe_count; r++)
                failures += run_one((dbk_backend_kind)k, i, recipes[r], batch, fp16, steps, warmup, &train, &test);
        }
    }
    dbk_dataset_deinit(&train);
    dbk_dataset_deinit(&test);
    return failures ? 1 : 0;
}
