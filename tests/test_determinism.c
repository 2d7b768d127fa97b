/*
 * test_determinism.c — the same seed on the same device gives the same run, bit for bit:
 * `daybreak train` runs twice with one seed on a short real-data run, and the two runs must
 * agree exactly in every loss and accuracy of result.json (per epoch and overall), in the
 * accuracy column of logs.tsv (its hours column is wall time and may differ), and in every
 * value of every tensor of model.ckpt (the trained weights and batch-norm statistics).
 *
 * usage: test_determinism <path to daybreak> <backend> [fusion | fusion-resnet18]
 *
 * With `fusion` the second run has DBK_FUSE=0 (docs/fusion.md): the first trains with batch
 * norm + ReLU fused into DBK_OP_BATCHNORM_RELU_FWD_TRAIN / _BWD and the residual adds of the
 * quick recipe's ResNet9 fused into DBK_OP_BATCHNORM_RELU_ADD_FWD_TRAIN / _BWD, the second
 * with the separate ops, both with --profile, whose tables must show each path's ops; the
 * comparison stays bit for bit (the tolerance of the fused path: the fused kernels do the
 * same float operations as the ops they replace, the clamp and the mask being exact, the add
 * one rounding either way, and the recomputed mask the forward's own expression).
 * `fusion-resnet18` does the same with ResNet-18 (the imagenette-resnet18 recipe at 32x32
 * pixels, real Imagenette images), whose add + ReLU fuse into DBK_OP_BATCHNORM_ADD_RELU_FWD_TRAIN.
 *
 * test_model's same_seed_should_give_the_same_run covers the CPU backend in-process; this
 * test covers the device backends through the command line, so the trainer's shuffling,
 * per-step values, on-device augmentation, reductions (batch norm, loss and accuracy
 * counters) and the result writers are all inside the comparison. The run is tiny (16 real
 * training images in 2 steps of 8, 16 test images): lavapipe spends ~10 CPU-seconds creating
 * its pipelines and ~2 per image of training on this 2-core machine. The second step's loss
 * and the evaluation depend on the first update, so a nondeterministic reduction anywhere in
 * forward, backward or update shows up. A backend that is not compiled in or has no device is skipped, or fails when
 * CI=true; so does a missing CIFAR-10.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "test_util.h"
#include "train/checkpoint.h"

#define TRAIN_IMAGES 16
#define TEST_IMAGES  16
#define BATCH        8
#define SEED         7

static const char *exe, *backend;
static bool fusion;   /* the second run unfused (DBK_FUSE=0) */
static bool resnet18; /* fusion-resnet18: ResNet-18 instead of the quick recipe */
static char run_dir[2][4200];
static char out[2][65536];

static int run_training(int which) {
    char args[8192];
    snprintf(args, sizeof args,
             "train --recipe %s --backend %s --train-subset %d --test-subset %d --batch %d --epochs 1 "
             "--all-epochs --seed %d --quiet --no-progress%s --out '%s'",
             resnet18 ? "imagenette-resnet18 --image-size 32" : "quick", backend, TRAIN_IMAGES, TEST_IMAGES, BATCH,
             SEED, fusion ? " --profile" : "", run_dir[which]);
    if (fusion && which) setenv("DBK_FUSE", "0", 1);
    else if (fusion) unsetenv("DBK_FUSE");
    const int rc = dbk_test_run_daybreak(exe, args, out[which], sizeof out[which]);
    if (fusion) unsetenv("DBK_FUSE");
    printf("%s", out[which]);
    /* Exit 3 is a finished run that did not reach the recipe's target: 2 steps do not. */
    DBK_CHECK_MSG(rc == 3, "daybreak train (run %d) exited %d, expected 3 (target not reached)", which + 1, rc);
    return 0;
}

static int two_runs_should_finish(void) {
    if (run_training(0)) return 1;
    return run_training(1);
}

/* The --profile tables name each op's kind: the fused run has the fused ops, the DBK_FUSE=0
 * run none of them but the plain ones. quick's ReLUs all follow a batch norm, its two
 * residual adds and three 2x2 max pools a batch norm + ReLU, so the fused run has no plain
 * batch norm or ReLU op left (its global max pool stays a max pool); ResNet-18 keeps
 * the batch norm of a branch whose add fused into the projection shortcut's batch norm, and
 * RELU_BWD gives the skips' gradients, so there only the forward ReLU is gone. */
static int profiles_should_show_each_path(void) {
    static const char *const quick_fused[] = {" batchnorm_relu_fwd_train ", " batchnorm_relu_bwd ",
                                              " batchnorm_relu_add_fwd_train ", " batchnorm_relu_add_bwd ",
                                              " batchnorm_relu_pool_fwd_train ", " batchnorm_relu_pool_bwd ", NULL};
    static const char *const resnet18_fused[] = {" batchnorm_relu_fwd_train ", " batchnorm_relu_bwd ",
                                                 " batchnorm_add_relu_fwd_train ", NULL};
    static const char *const plain[] = {" relu_fwd ", " relu_bwd ", " batchnorm_fwd_train ", " batchnorm_bwd ", NULL};
    const char *const *fused = resnet18 ? resnet18_fused : quick_fused;
    for (int i = 0; fused[i]; i++) {
        DBK_CHECK_MSG(strstr(out[0], fused[i]), "the fused run's profile lacks%s", fused[i]);
        DBK_CHECK_MSG(!strstr(out[1], fused[i]), "the DBK_FUSE=0 run's profile has%s", fused[i]);
    }
    for (int i = 0; plain[i]; i++) {
        DBK_CHECK_MSG(strstr(out[1], plain[i]), "the DBK_FUSE=0 run's profile lacks%s", plain[i]);
        DBK_CHECK_MSG((resnet18 && i > 0) || !strstr(out[0], plain[i]),
                      "the fused run's profile has%s", plain[i]);
    }
    return 0;
}

static void *read_file(const char *dir, const char *name, size_t *n) {
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    void *data = NULL;
    if (dbk_file_read_all(path, &data, n) != DBK_OK) {
        printf("  cannot read %s: %s\n", path, dbk_last_error());
        return NULL;
    }
    return data;
}

/* The accuracy column of logs.tsv (everything after the last tab of each row). */
static int logs_tsv_accuracies_should_be_identical(void) {
    size_t n[2];
    char *text[2];
    for (int i = 0; i < 2; i++) DBK_CHECK((text[i] = read_file(run_dir[i], "logs.tsv", &n[i])) != NULL);
    /* Both are subset runs: their first line is the subset marker, not a row. */
    char *rows_text[2] = {dbk_test_skip_subset_marker(text[0]), dbk_test_skip_subset_marker(text[1])};
    DBK_CHECK_MSG(rows_text[0] && rows_text[1], "logs.tsv lacks the subset marker line");
    char *save[2], *line[2] = {strtok_r(rows_text[0], "\n", &save[0]), strtok_r(rows_text[1], "\n", &save[1])};
    int rows = 0;
    while (line[0] && line[1]) {
        const char *acc0 = strrchr(line[0], '\t'), *acc1 = strrchr(line[1], '\t');
        DBK_CHECK_MSG(acc0 && acc1 && !strcmp(acc0, acc1), "logs.tsv rows differ: '%s' vs '%s'", line[0], line[1]);
        rows++;
        line[0] = strtok_r(NULL, "\n", &save[0]);
        line[1] = strtok_r(NULL, "\n", &save[1]);
    }
    DBK_CHECK_MSG(!line[0] && !line[1], "logs.tsv have different row counts");
    DBK_CHECK_MSG(rows == 2, "logs.tsv has %d lines, expected the header and 1 epoch", rows);
    dbk_free(text[0]);
    dbk_free(text[1]);
    return 0;
}

static const cJSON *get(const cJSON *o, const char *key) { return cJSON_GetObjectItemCaseSensitive(o, key); }

/* Both runs' value of key in a and b must be the same finite number, bit for bit. */
static int same_number(const cJSON *a, const cJSON *b, const char *where, const char *key) {
    const cJSON *x = get(a, key), *y = get(b, key);
    DBK_CHECK_MSG(cJSON_IsNumber(x) && cJSON_IsNumber(y), "%s.%s is missing or not a number", where, key);
    DBK_CHECK_MSG(isfinite(x->valuedouble), "%s.%s is %g", where, key, x->valuedouble);
    DBK_CHECK_MSG(!memcmp(&x->valuedouble, &y->valuedouble, sizeof(double)), "%s.%s differs: %.17g vs %.17g", where,
                  key, x->valuedouble, y->valuedouble);
    printf("  %s.%s %.17g in both runs\n", where, key, x->valuedouble);
    return 0;
}

static int result_json_losses_and_accuracies_should_be_identical(void) {
    cJSON *root[2] = {NULL, NULL};
    for (int i = 0; i < 2; i++) {
        size_t n;
        char *text = read_file(run_dir[i], "result.json", &n);
        DBK_CHECK(text != NULL);
        root[i] = cJSON_ParseWithLength(text, n);
        dbk_free(text);
        DBK_CHECK_MSG(root[i] != NULL, "result.json of run %d is not valid JSON", i + 1);
    }
    int rc = 0;
    static const char *const overall[] = {"best_test_accuracy", "final_test_accuracy", "seed", "train_images"};
    for (size_t k = 0; k < sizeof overall / sizeof overall[0]; k++)
        rc |= same_number(root[0], root[1], "result", overall[k]);
    const cJSON *epochs[2] = {get(root[0], "epochs"), get(root[1], "epochs")};
    const int count = cJSON_GetArraySize(epochs[0]);
    if (count != 1 || cJSON_GetArraySize(epochs[1]) != count) {
        printf("  FAIL: result.json epochs: %d and %d entries, expected 1\n", count, cJSON_GetArraySize(epochs[1]));
        rc = 1;
    }
    static const char *const per_epoch[] = {"train_loss", "train_accuracy", "test_loss", "test_accuracy", "lr_end"};
    for (int e = 0; e < count && !rc; e++)
        for (size_t k = 0; k < sizeof per_epoch / sizeof per_epoch[0]; k++)
            rc |= same_number(cJSON_GetArrayItem(epochs[0], e), cJSON_GetArrayItem(epochs[1], e), "epochs[0]",
                              per_epoch[k]);
    if (!rc && get(root[0], "train_images")->valueint != TRAIN_IMAGES) {
        printf("  FAIL: result.json train_images is not %d\n", TRAIN_IMAGES);
        rc = 1;
    }
    cJSON_Delete(root[0]);
    cJSON_Delete(root[1]);
    DBK_CHECK_MSG(rc == 0, "the two runs' result.json differ (above)");
    return 0;
}

static int checkpoint_tensors_should_be_identical(void) {
    dbk_checkpoint *c[2] = {NULL, NULL};
    for (int i = 0; i < 2; i++) {
        char path[4400];
        snprintf(path, sizeof path, "%s/model.ckpt", run_dir[i]);
        DBK_CHECK_OK(dbk_checkpoint_load(path, &c[i]));
    }
    const int count = dbk_checkpoint_count(c[0]);
    int differing = 0;
    int64_t values = 0;
    for (int t = 0; t < count; t++) {
        const dbk_ckpt_tensor *a = dbk_checkpoint_tensor(c[0], t);
        const dbk_ckpt_tensor *b = dbk_checkpoint_find(c[1], a->name);
        int64_t n = 1;
        for (int d = 0; d < a->ndim; d++) n *= a->shape[d];
        values += n;
        if (!b || b->ndim != a->ndim || memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim) ||
            memcmp(a->data, b->data, sizeof(float) * (size_t)n)) {
            printf("  tensor %s differs between the runs\n", a->name);
            differing++;
        }
    }
    printf("  %d tensors, %lld values compared\n", count, (long long)values);
    const int other_count = dbk_checkpoint_count(c[1]);
    dbk_checkpoint_destroy(c[0]);
    dbk_checkpoint_destroy(c[1]);
    DBK_CHECK_MSG(count > 0 && other_count == count, "checkpoints hold %d and %d tensors", count, other_count);
    DBK_CHECK_MSG(differing == 0, "%d of %d tensors differ", differing, count);
    return 0;
}

int main(int argc, char **argv) {
    resnet18 = argc == 4 && !strcmp(argv[3], "fusion-resnet18");
    fusion = resnet18 || (argc == 4 && !strcmp(argv[3], "fusion"));
    if (argc != 3 && !fusion) {
        fprintf(stderr, "usage: test_determinism <daybreak executable> <backend> [fusion | fusion-resnet18]\n");
        return 2;
    }
    exe = argv[1];
    backend = argv[2];
    dbk_backend_kind kind;
    int index;
    const int unavailable = dbk_test_resolve_backend(backend, &kind, &index);
    if (unavailable) return unavailable;
    if (resnet18 && !dbk_test_imagenette_dir()) return dbk_test_skip_or_fail_in_ci(DBK_TEST_NO_IMAGENETTE);
    if (!resnet18 && !dbk_test_cifar_dir()) return dbk_test_skip_or_fail_in_ci(DBK_TEST_NO_CIFAR);
    const char *what = resnet18 ? "fusion-resnet18" : fusion ? "fusion" : "determinism";
    const char *d = dbk_test_backend_tmpdir(what, backend, NULL);
    if (!d) return 1;
    for (int i = 0; i < 2; i++) snprintf(run_dir[i], sizeof run_dir[i], "%s/run%d", d, i + 1);
    printf("%s: %s, %d real training images at batch %d, %d test images, seed %d, twice%s\n", backend,
           resnet18 ? "ResNet-18 at 32x32" : "quick recipe", TRAIN_IMAGES, BATCH, TEST_IMAGES, SEED,
           fusion ? ": fused, then DBK_FUSE=0" : "");
    DBK_RUN(two_runs_should_finish);
    if (dbk_test_failed_checks) return dbk_test_finish();
    if (fusion) DBK_RUN(profiles_should_show_each_path);
    DBK_RUN(logs_tsv_accuracies_should_be_identical);
    DBK_RUN(result_json_losses_and_accuracies_should_be_identical);
    DBK_RUN(checkpoint_tensors_should_be_identical);
    return dbk_test_finish();
}
