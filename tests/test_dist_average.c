/*
 * test_dist_average.c — sparse model averaging over MPI (`mpirun -np 2 daybreak train
 * --distributed --local-steps M`, docs/sparse-masks.md) on real CIFAR-10 images:
 *  - fisher: each rank trains its interleaved share of the top 2 x K Fisher positions for
 *    M = 3 steps, then the copies are averaged: every average sends, per rank, exactly its
 *    share, the classifier and the batch-norm statistics (4 bytes each); the averages come
 *    every 3 steps, after the last, and before each recomputed mask; the run learns (the training loss falls by 0.1 over
 *    3 epochs and the training accuracy reaches 20%: measured 2.30 -> 2.07 and 26.6% on
 *    2026-11-27, CPU backend, 2 ranks sharing 2 loaded cores); model.diff and result.json
 *    report it;
 *  - all: the dense model average sends every trainable value and the statistics;
 *  - the command line's refusals (one line each, exit 2).
 * quick recipe (quarter-width ResNet9), batch 32 per rank on the first 640 training images
 * (10 steps per epoch), 200 test images. About 40 s on the loaded 2-core machine.
 *
 *   test_dist_average DAYBREAK MPIRUN BACKEND   (MPIRUN "none": no MPI in the build)
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/timer.h"
#include "test_util.h"
#include "train/results.h"

static const char *exe, *mpirun, *backend, *tmp;
static char out[1 << 16];

static int train(const char *name, const char *args) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s --oversubscribe -np 2 %s train --distributed --recipe quick --backend %s "
             "--train-subset 640 --test-subset 200 --batch 32 --no-progress --quiet --all-epochs --target 99 %s "
             "--out %s/%s", mpirun, exe, backend, args, tmp, name);
    const double t0 = dbk_time_now();
    const int rc = dbk_test_run_command(cmd, out, sizeof out);
    printf("  %s: exit %d in %.1f s\n", name, rc, dbk_time_now() - t0);
    return rc;
}

static cJSON *result_of(const char *name) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", tmp, name);
    cJSON *root;
    return dbk_results_read_json(dir, &root) == DBK_OK ? root : NULL;
}

static double number(const cJSON *o, const char *path) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    const cJSON *v = o;
    for (char *k = strtok(buf, "."); k && v; k = strtok(NULL, ".")) v = cJSON_GetObjectItemCaseSensitive(v, k);
    return cJSON_IsNumber(v) ? v->valuedouble : (double)NAN;
}

static double epoch_value(const cJSON *root, int epoch, const char *key) {
    const cJSON *e = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "epochs"), epoch - 1);
    const cJSON *v = cJSON_GetObjectItem(e, key);
    return cJSON_IsNumber(v) ? v->valuedouble : (double)NAN;
}

static int fisher_average_should_send_the_mask_and_learn(void) {
    const int rc = train("fisher", "--epochs 3 --local-steps 3 --sparse-mask fisher:10% --mask-samples 16 "
                         "--checkpoint-diff");
    DBK_CHECK_MSG(rc == 3, "exit %d, expected 3 (target not reached):\n%s", rc, out);
    cJSON *r = result_of("fisher");
    DBK_CHECK(r);
    const double keep = number(r, "sparse_mask.kept_parameters"), c = number(r, "sparse_mask.classifier_parameters");
    const double stats = number(r, "distributed.averaging.statistics_values");
    const double values = number(r, "distributed.averaging.values_per_average");
    const double bytes = number(r, "distributed.averaging.bytes_per_average");
    const double averages = number(r, "distributed.averaging.averages"), steps = number(r, "distributed.averaging.train_steps");
    const double dense = number(r, "distributed.averaging.dense_average_bytes");
    const double l1 = epoch_value(r, 1, "train_loss"), l3 = epoch_value(r, 3, "train_loss");
    const double acc3 = epoch_value(r, 3, "train_accuracy");
    printf("  per rank per average: %.0f values (%.0f kept + %.0f classifier + %.0f statistics), %.0f bytes, dense "
           "%.0f; %.0f averages over %.0f steps; training loss %.4f -> %.4f, accuracy %.2f%%\n", values, keep, c, stats,
           bytes, dense, averages, steps, l1, l3, acc3);
    DBK_CHECK(number(r, "sparse_mask.selected_parameters") == 2 * keep);
    DBK_CHECK_MSG(values == keep + c + stats && bytes == 4 * values, "sent %.0f values, %.0f bytes", values, bytes);
    /* After steps 3, 6, ..., 30 (the last too), and before each recomputed mask (epochs 2 and 3 start
     * after steps 10 and 20, between two scheduled averages): 10 + 2. */
    DBK_CHECK(steps == 30 && averages == 12);
    DBK_CHECK(number(r, "distributed.averaging.bytes_per_run") == bytes * averages);
    DBK_CHECK_MSG(l3 <= l1 - 0.1 && acc3 >= 20.0, "did not learn: loss %.4f -> %.4f, accuracy %.2f%%", l1, l3, acc3);
    DBK_CHECK(number(r, "checkpoint_diff.changed_parameters") > 0);
    cJSON_Delete(r);
    return 0;
}

static int dense_average_should_send_every_trainable_value(void) {
    const int rc = train("dense", "--epochs 1 --train-subset 320 --local-steps 2 --sparse-mask all");
    DBK_CHECK_MSG(rc == 3, "exit %d:\n%s", rc, out);
    cJSON *r = result_of("dense");
    DBK_CHECK(r);
    const double values = number(r, "distributed.averaging.values_per_average");
    const double trainable = number(r, "distributed.averaging.trainable_values");
    const double stats = number(r, "distributed.averaging.statistics_values");
    printf("  dense: %.0f values per average (%.0f trainable + %.0f statistics)\n", values, trainable, stats);
    DBK_CHECK(values == trainable + stats && trainable == number(r, "parameters"));
    DBK_CHECK(number(r, "distributed.averaging.dense_average_bytes") == 4 * values);
    DBK_CHECK(number(r, "distributed.averaging.averages") == 3); /* 5 steps: after 2, 4 and the last */
    DBK_CHECK(!cJSON_GetObjectItem(r, "sparse_mask"));
    cJSON_Delete(r);
    return 0;
}

static int options_should_be_refused_with_one_line(void) {
    static const struct {
        const char *args, *want;
    } cases[] = {
        {"train --local-steps 10", "'--local-steps' needs --distributed"},
        {"train --distributed --local-steps x", "bad --local-steps 'x'"},
        {"train --distributed --local-steps 5 --compress topk:1%", "--compress and --error-feedback do not apply"},
        {"train --mask-samples 64", "--mask-samples needs --sparse-mask fisher:K or random:K"},
        {"train --sparse-mask fisher:0", "needs the kept fraction"},
        {"train --sparse-mask gzip:1%", "unknown sparse mask 'gzip:1%'"},
        {"train --sparse-mask fisher:1% --mask-grad cube", "unknown mask gradient 'cube'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int rc = dbk_test_run_daybreak(exe, cases[i].args, out, sizeof out);
        DBK_CHECK_MSG(rc == 2 && strstr(out, cases[i].want), "daybreak %s: exit %d, output:\n%s", cases[i].args, rc, out);
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: test_dist_average DAYBREAK MPIRUN BACKEND\n");
        return 2;
    }
    exe = argv[1];
    mpirun = argv[2];
    backend = argv[3];
    DBK_RUN(options_should_be_refused_with_one_line);
    if (!strcmp(mpirun, "none")) return dbk_test_skip_or_fail_in_ci("this build has no MPI (libopenmpi-dev)");
    if (!dbk_test_cifar_dir()) return dbk_test_skip_or_fail_in_ci(DBK_TEST_NO_CIFAR);
    if (!(tmp = dbk_test_backend_tmpdir("dist-average", backend, NULL))) return 1;
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1); /* CI runs as root */
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    DBK_RUN(fisher_average_should_send_the_mask_and_learn);
    DBK_RUN(dense_average_should_send_every_trainable_value);
    return dbk_test_finish();
}
