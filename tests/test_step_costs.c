/*
 * test_step_costs.c — what a training step asks of the device (train/session.h
 * dbk_step_costs, backend.h's counters), on one backend: a CPU device hides these costs, a
 * GPU's 10-millisecond step does not (DESIGN.md decision 9).
 *
 *   test_step_costs <backend>     (cpu, opencl, vulkan, vulkan:1; DAYBREAK_DATA: CIFAR-10)
 *
 * Cases: the counters see a read and a sync as syncs and a step's small scalar write as none;
 * training steps of quick and airbench94 (its lookahead included) never make the host wait for
 * the device (0 syncs: a step that gains a read-back or a drain fails here), and launch what
 * their recordings hold.
 */
#include <string.h>

#include "bench/throughput.h"
#include "data/dataset.h"
#include "test_util.h"

static dbk_backend_kind kind;
static int device;
static dbk_dataset train, test;

static int load_data(void) {
    const dbk_dataset_kind *k;
    dbk_dataset_info info = {0};
    DBK_CHECK_OK(dbk_dataset_kind_find("cifar10", &k));
    DBK_CHECK_OK(dbk_dataset_open(k, dbk_test_cifar_dir(), &info));
    /* five batches of 8 (one warm-up step, four timed ones) and an evaluation batch */
    dbk_status st = dbk_dataset_load(&info, DBK_DATASET_SPLIT_TRAIN, 64, &train);
    if (st == DBK_OK) st = dbk_dataset_load(&info, DBK_DATASET_SPLIT_TEST, 16, &test);
    dbk_dataset_info_deinit(&info);
    DBK_CHECK_OK(st);
    return 0;
}

static int reads_and_syncs_should_count_and_small_writes_not(void) {
    dbk_backend *be;
    DBK_CHECK_OK(dbk_backend_create(kind, device, &be));
    dbk_buffer *b = NULL;
    dbk_status st = dbk_buffer_create(be, 4096, &b);
    float v[16] = {1.0f}, back[16];
    dbk_backend_counters c0, c1, c2;
    dbk_backend_get_counters(be, &c0);
    if (st == DBK_OK) st = dbk_buffer_write(b, 0, v, sizeof v);   /* a step's scalars: staged, no wait */
    dbk_backend_get_counters(be, &c1);
    if (st == DBK_OK) st = dbk_buffer_read(b, 0, back, sizeof back);
    if (st == DBK_OK) st = dbk_backend_sync(be);
    dbk_backend_get_counters(be, &c2);
    dbk_buffer_destroy(b);
    dbk_backend_destroy(be);
    DBK_CHECK_OK(st);
    DBK_CHECK_MSG(c1.syncs == c0.syncs, "a 64-byte write counted %llu syncs", (unsigned long long)(c1.syncs - c0.syncs));
    DBK_CHECK_MSG(c2.syncs - c1.syncs == 2, "a read and a sync counted %llu syncs",
                  (unsigned long long)(c2.syncs - c1.syncs));
    DBK_CHECK(c2.host_bytes - c0.host_bytes == 2 * sizeof v);
    DBK_CHECK(back[0] == 1.0f);
    return 0;
}

/* One warm-up step and `steps` timed ones of the recipe at batch 8 (bench/throughput.h). */
static int measure(const char *recipe_name, bool fp16, int steps, dbk_step_costs *out) {
    const dbk_recipe *recipe;
    DBK_CHECK_OK(dbk_recipe_find(recipe_name, &recipe));
    dbk_backend *be;
    DBK_CHECK_OK(dbk_backend_create(kind, device, &be));
    dbk_throughput t;
    const dbk_status st = dbk_bench_throughput(be, recipe, 8, fp16, 1, steps, &train, &test, &t);
    dbk_backend_destroy(be);
    DBK_CHECK_OK(st);
    *out = t.costs;
    char line[256];
    dbk_session_format_step_costs(out, line, sizeof line);
    printf("  %s %s: %s\n", recipe_name, fp16 ? "fp16" : "fp32", line);
    return 0;
}

static int steps_should_not_wait_for_the_device(void) {
    /* airbench94's fifth step is followed by its lookahead */
    const char *recipes[] = {"quick", "airbench94"};
    const int steps[] = {2, 4};
    for (size_t i = 0; i < sizeof recipes / sizeof recipes[0]; i++) {
        dbk_step_costs c;
        if (measure(recipes[i], false, steps[i], &c)) return 1;
        DBK_CHECK(c.steps == steps[i]);
        DBK_CHECK_MSG(c.syncs == 0.0, "%s: %.2f syncs per step", recipes[i], c.syncs);
        DBK_CHECK(c.launches >= 10.0);
        /* the launches read and write at least what the ops' tensors hold, minus the augment
         * op's dataset (counted by the rows it reads) */
        DBK_CHECK_MSG(c.device_bytes > 0.5 * c.min_bytes, "%s: %.0f bytes moved, %.0f the tensors'", recipes[i],
                      c.device_bytes, c.min_bytes);
        DBK_CHECK(c.host_seconds >= 0.0 && c.host_bytes > 0.0);
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_step_costs <backend>\n");
        return 2;
    }
    const int rc = dbk_test_resolve_backend(argv[1], &kind, &device);
    if (rc) return rc;
    if (!dbk_test_cifar_dir()) return dbk_test_skip_or_fail_in_ci(DBK_TEST_NO_CIFAR);
    if (load_data()) return dbk_test_finish();
    DBK_RUN(reads_and_syncs_should_count_and_small_writes_not);
    DBK_RUN(steps_should_not_wait_for_the_device);
    dbk_dataset_deinit(&train);
    dbk_dataset_deinit(&test);
    return dbk_test_finish();
}
