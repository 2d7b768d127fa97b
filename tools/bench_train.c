/*
 * bench_train.c — training throughput side by side: ResNet9 (cifar10-resnet9 recipe, batch
 * 512), the quick recipe and airbench94 (batch 1024), or the one CIFAR-10 recipe --recipe
 * names, on every device of every backend compiled in, one line each.
 *
 * usage: bench_train [--steps N] [--warmup N] [--data DIR] [--backend SPEC] [--recipe NAME] [--batch N]
 *                    [--precision fp32|fp16]
 * --batch replaces every recipe's own batch (tools/bench_vs_pytorch.sh runs ResNet9 at 128 and 512).
 * --precision fp16 times mixed precision (docs/precision.md); a device without the fp16 path
 * gets an error line naming what it lacks. The precision is a column of the table.
 * Needs the recipes' dataset, CIFAR-10 (the batches are real images), via --data or DAYBREAK_DATA.
 *
 * Columns: backend, device index and name, recipe, precision; what a timed step asked of the
 * device (train/session.h dbk_step_costs): launches, syncs (host waits inside the step),
 * host_ms (the step's time outside those waits and, on the CPU backend, outside the ops),
 * MB_moved by the launches and MB_min, the tensors' minimum (each op's tensors once); cpu_s,
 * the process's CPU seconds per step (every thread: on a CPU device the work a step costs,
 * comparable when other jobs share the cores); then batch, img/s and ms/step, the last three
 * fields (tools/bench_vs_pytorch.sh reads them).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/throughput.h"

static int run_one(dbk_backend_kind kind, int index, const char *recipe_name, int batch, bool fp16, int steps,
                   int warmup, const dbk_dataset *train, const dbk_dataset *test) {
    const char *precision = fp16 ? "fp16" : "fp32";
    const dbk_recipe *recipe;
    if (dbk_recipe_find(recipe_name, &recipe) != DBK_OK) return 1;
    dbk_backend *be;
    if (dbk_backend_create(kind, index, &be) != DBK_OK) {
        printf("%-8s %-2d %-40.40s %-16s %-4s error: %s\n", dbk_backend_kind_name(kind), index, "?", recipe_name,
               precision, dbk_last_error());
        return 1;
    }
    dbk_throughput t;
    if (batch <= 0) batch = recipe->batch;
    dbk_status st = dbk_bench_throughput(be, recipe, batch, fp16, warmup, steps, train, test, &t);
    if (st == DBK_OK)
        printf("%-8s %-2d %-40.40s %-16s %-4s %8.0f %5.2f %7.2f %9.0f %8.0f %8.2f %5d %9.1f %10.1f\n",
               dbk_backend_kind_name(kind), index, dbk_backend_get_info(be)->name, recipe_name, precision,
               t.costs.launches, t.costs.syncs, 1000.0 * t.costs.host_seconds, t.costs.device_bytes * 1e-6,
               t.costs.min_bytes * 1e-6, t.cpu_seconds_per_step, batch, t.images_per_second,
               1000.0 * t.seconds_per_step);
    else
        printf("%-8s %-2d %-40.40s %-16s %-4s error: %s\n", dbk_backend_kind_name(kind), index,
               dbk_backend_get_info(be)->name, recipe_name, precision, dbk_last_error());
    fflush(stdout);
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
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc) batch = atoi(argv[++i]) >= 1 ? atoi(argv[i]) : -1;
        else if (!strcmp(argv[i], "--precision") && i + 1 < argc && !strcmp(argv[i + 1], "fp32")) fp16 = false, i++;
        else if (!strcmp(argv[i], "--precision") && i + 1 < argc && !strcmp(argv[i + 1], "fp16")) fp16 = true, i++;
        else {
            fprintf(stderr, "usage: bench_train [--steps N] [--warmup N] [--data DIR] [--backend SPEC] [--recipe NAME] "
                            "[--batch N] [--precision fp32|fp16]\n");
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
    printf("%-8s %-2s %-40s %-16s %-4s %8s %5s %7s %9s %8s %8s %5s %9s %10s\n", "backend", "#", "device", "recipe",
           "prec", "launches", "syncs", "host_ms", "MB_moved", "MB_min", "cpu_s", "batch", "img/s", "ms/step");
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
