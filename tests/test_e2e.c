/*
 * test_e2e.c — end-to-end training on real CIFAR-10 through the command line, as a user
 * runs it: `daybreak train` on a subset of the real training images, evaluated on real test
 * images, must reach a stated accuracy; logs.tsv must be exactly DAWNBench's format;
 * result.json must agree with it; and `daybreak eval` on the saved checkpoint must reproduce
 * the last epoch's test accuracy (the checkpoint holds the trained weights and statistics).
 *
 * usage: test_e2e <path to daybreak> [backend [full|small|smoke]]
 *
 * Three sizes (see the table below): "full" (the default; by hand, 150 s on the CPU backend) and
 * "small" (e2e_cpu in CI), each with its own accuracy bar, and "smoke" for the device backends
 * (e2e_opencl in CI; lavapipe by hand), which checks everything but an accuracy bar and compares its
 * training loss with the CPU's instead: PoCL's accuracy on real data is airbench_opencl's bar,
 * and both devices' learning is the curve tests' job. A backend that is not compiled in or has
 * no device is skipped, or fails when CI=true.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "core/status.h"
#include "test_util.h"

/* The run: quick recipe on the first train_images real training images for `epochs`
 * epochs (the schedule compressed to them) at the recipe's batch (256) unless batch is set,
 * scored on the first test_images test images. The target stops nothing (--all-epochs); it
 * checks the target bookkeeping. Chance is 10%. */
typedef struct e2e_size {
    const char *name;
    int         train_images, test_images, epochs, batch;
    double      target;
    double      accuracy_bar;   /* final test accuracy the run must reach (0: none) */
    double      cpu_loss_gap;   /* > 0: each epoch's training loss within this of the CPU's same run */
} e2e_size;

#define MAX_EPOCHS 4

static const e2e_size sizes[] = {
    {"full", 10000, 2000, 4, 0, 50.0, 55.0, 0.0},
    /* Measured on the CPU backend: 46.90% final test accuracy with seed 1 (the test's),
     * 44.60% and 45.20% with seeds 2 and 3 (epoch 2 of seed 1: 37.80%). The bar, 35%, is
     * ~10 points under the worst of them, so a device whose rounding sends training down
     * another path still passes, and 25 points above chance, so a device that does not
     * learn fails. */
    {"small", 5000, 1000, 3, 0, 30.0, 35.0, 0.0},
    /* For lavapipe, about 100x slower than the CPU backend here (2026-11-23: 2.7 training
     * images/s at batch 16 against 27 on the CPU), where the earlier "tiny" size (640 images,
     * 2 epochs, an accuracy bar of 17%) took 576 s of a 31-minute CI run. No size that lavapipe
     * trains in a minute or two learns clearly: one epoch of 320 images reached 10.5-20.5% test
     * accuracy on the CPU (seeds 1-3), chance level for some seeds. So this size checks the
     * whole command line path (training, logs.tsv, result.json, the checkpoint evaluated again)
     * on 10 steps and, in place of a bar, that the device's training loss stays within 0.05 of
     * the CPU's for the same run (measured on 2026-11-23: 0.012 at this size, seed 1, 2.4155
     * against 2.4038; 0.020 and 0.015 at 320 images, seeds 1 and 2). It took 133 s at load ~4
     * (e2e_vulkan). That the device learns is the curve tests' job (curve_airbench_<b>: every
     * step's loss against the CPU's, and the CPU's falls). */
    {"smoke", 160, 200, 1, 16, 0.0, 0.0, 0.05},
};

static const char *exe, *backend;
static const e2e_size *size;
static dbk_backend_kind kind;
static char dir[4096];
static char out[65536];

static int run(const char *args) { return dbk_test_run_daybreak(exe, args, out, sizeof out); }

static double hours[MAX_EPOCHS + 1], acc[MAX_EPOCHS + 1];

/* The test's `daybreak train` on backend b into out_dir; its exit code. */
static int train_into(const char *b, const char *out_dir) {
    char args[8192], batch[32] = "";
    if (size->batch) snprintf(batch, sizeof batch, " --batch %d", size->batch);
    snprintf(args, sizeof args,
             "train --recipe quick%s --backend %s --train-subset %d --test-subset %d --epochs %d --target %.1f "
             "--all-epochs --seed 1 --no-progress --out '%s'",
             batch, b, size->train_images, size->test_images, size->epochs, size->target, out_dir);
    return run(args);
}

static int training_should_reach_the_accuracy_bar(void) {
    int rc = train_into(backend, dir);
    printf("%s", out);
    DBK_CHECK_MSG(rc == 0, "daybreak train exited %d", rc);
    return 0;
}

static int logs_tsv_should_be_dawnbench_format(void) {
    dbk_test_log_row rows[MAX_EPOCHS + 1];
    int epochs = 0;
    if (dbk_test_read_logs_tsv(dir, false, rows, MAX_EPOCHS + 1, &epochs)) return 1;
    DBK_CHECK_MSG(epochs == size->epochs, "%d rows, expected %d", epochs, size->epochs);
    for (int e = 1; e <= epochs; e++) {
        hours[e] = rows[e].hours;
        acc[e] = rows[e].top1;
    }
    const int last = size->epochs;
    printf("  final test accuracy %.2f%% (bar %.1f%%, %s size)\n", acc[last], size->accuracy_bar, size->name);
    if (size->accuracy_bar > 0)
        DBK_CHECK_MSG(acc[last] >= size->accuracy_bar, "final test accuracy %.2f%% is below the bar %.1f%%", acc[last],
                  size->accuracy_bar);
    return 0;
}

static const cJSON *get(const cJSON *o, const char *key) { return cJSON_GetObjectItemCaseSensitive(o, key); }

static int result_json_should_match_the_log(void) {
    char path[4200];
    snprintf(path, sizeof path, "%s/result.json", dir);
    void *data;
    size_t n;
    DBK_CHECK_OK(dbk_file_read_all(path, &data, &n));
    cJSON *root = cJSON_ParseWithLength(data, n);
    dbk_free(data);
    DBK_CHECK_MSG(root != NULL, "result.json is not valid JSON");
    int first_hit = 0;
    const int epochs = size->epochs;
    for (int e = 1; e <= epochs && !first_hit; e++)
        if (acc[e] >= size->target) first_hit = e;
    DBK_CHECK(first_hit > 0);
    int ok = cJSON_IsString(get(root, "status")) && !strcmp(get(root, "status")->valuestring, "reached") &&
             cJSON_IsTrue(get(root, "target_reached")) && get(root, "epochs_to_target")->valueint == first_hit &&
             fabs(get(root, "hours_to_target")->valuedouble - hours[first_hit]) < 1e-7 &&
             !strcmp(get(get(root, "recipe"), "name")->valuestring, "quick") &&
             !strcmp(get(get(root, "device"), "backend")->valuestring, dbk_backend_kind_name(kind)) &&
             get(root, "seed")->valueint == 1 && cJSON_GetArraySize(get(root, "epochs")) == epochs &&
             cJSON_IsString(get(get(root, "device"), "driver")) && get(root, "parameters")->valuedouble > 1000;
    if (ok) {
        const cJSON *last = cJSON_GetArrayItem(get(root, "epochs"), epochs - 1);
        ok = fabs(get(last, "test_accuracy")->valuedouble - acc[epochs]) < 0.006 &&
             get(last, "images_per_second")->valuedouble > 0;
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    DBK_CHECK_MSG(ok, "result.json disagrees with logs.tsv or misses fields:\n%s", text);
    cJSON_free(text);
    return 0;
}

/* Each epoch's train_loss in dir/result.json into loss[1..epochs]. */
static int read_train_losses(const char *run_dir, double *loss) {
    char path[4200];
    snprintf(path, sizeof path, "%s/result.json", run_dir);
    void *data;
    size_t n;
    DBK_CHECK_OK(dbk_file_read_all(path, &data, &n));
    cJSON *root = cJSON_ParseWithLength(data, n);
    dbk_free(data);
    DBK_CHECK_MSG(root != NULL, "%s is not valid JSON", path);
    const cJSON *epochs = get(root, "epochs");
    int ok = cJSON_GetArraySize(epochs) == size->epochs;
    for (int e = 0; ok && e < size->epochs; e++) {
        const cJSON *l = get(cJSON_GetArrayItem(epochs, e), "train_loss");
        ok = cJSON_IsNumber(l);
        if (ok) loss[e + 1] = l->valuedouble;
    }
    cJSON_Delete(root);
    DBK_CHECK_MSG(ok, "%s lacks a train_loss per epoch", path);
    return 0;
}

static int training_loss_should_match_the_cpu_run(void) {
    char cpu_dir[4200];
    snprintf(cpu_dir, sizeof cpu_dir, "%s-cpu", dir);
    int rc = train_into("cpu", cpu_dir);
    DBK_CHECK_MSG(rc == 0, "daybreak train --backend cpu exited %d:\n%s", rc, out);
    double device[MAX_EPOCHS + 1], cpu[MAX_EPOCHS + 1];
    if (read_train_losses(dir, device) || read_train_losses(cpu_dir, cpu)) return 1;
    for (int e = 1; e <= size->epochs; e++) {
        printf("  epoch %d training loss %.4f, CPU %.4f (allowed gap %.2f)\n", e, device[e], cpu[e], size->cpu_loss_gap);
        DBK_CHECK_MSG(fabs(device[e] - cpu[e]) <= size->cpu_loss_gap,
                      "epoch %d: training loss %.4f is %.4f from the CPU's %.4f", e, device[e], fabs(device[e] - cpu[e]),
                      cpu[e]);
    }
    return 0;
}

static int checkpoint_should_reproduce_the_last_accuracy(void) {
    return dbk_test_eval_should_report(exe, dir, backend, size->test_images, acc[size->epochs]);
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 4) {
        fprintf(stderr, "usage: test_e2e <daybreak executable> [backend [full|small|smoke]]\n");
        return 2;
    }
    exe = argv[1];
    backend = argc > 2 ? argv[2] : "cpu";
    const char *size_name = argc > 3 ? argv[3] : "full";
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (!strcmp(sizes[i].name, size_name)) size = &sizes[i];
    if (!size) {
        fprintf(stderr, "test_e2e: unknown size '%s' (full, small or smoke)\n", size_name);
        return 2;
    }
    int index;
    const int unavailable = dbk_test_resolve_backend(backend, &kind, &index);
    if (unavailable) return unavailable;
    if (!dbk_test_cifar_dir()) return dbk_test_skip_or_fail_in_ci(DBK_TEST_NO_CIFAR);
    const char *d = dbk_test_backend_tmpdir("e2e", backend, size->name);
    if (!d) return 1;
    snprintf(dir, sizeof dir, "%s/run", d);
    printf("%s size: %d training images, %d epochs, %d test images, bar %.1f%%\n", size->name, size->train_images,
           size->epochs, size->test_images, size->accuracy_bar);
    DBK_RUN(training_should_reach_the_accuracy_bar);
    if (dbk_test_failed_checks) return dbk_test_finish();
    DBK_RUN(logs_tsv_should_be_dawnbench_format);
    DBK_RUN(result_json_should_match_the_log);
    DBK_RUN(checkpoint_should_reproduce_the_last_accuracy);
    if (size->cpu_loss_gap > 0) DBK_RUN(training_loss_should_match_the_cpu_run);
    return dbk_test_finish();
}
