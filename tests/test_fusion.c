/*
 * test_fusion.c — the fused and the unfused training graphs train alike (docs/fusion.md):
 * `daybreak train` runs the quick recipe twice on a few real CIFAR-10 steps, once as built
 * (batch norm + ReLU fused into DBK_OP_BATCHNORM_RELU_FWD_TRAIN / _BWD) and once with
 * DBK_FUSE=0 (batch norm and ReLU as separate ops). Both runs' --profile tables must show the
 * ops each path is meant to run, and the trained weights, batch-norm statistics and losses
 * must agree within TOLERANCE.
 *
 * usage: test_fusion <path to daybreak> <backend>
 *
 * TOLERANCE: the fused kernels do the same float operations as the pair they replace (the
 * clamp and the mask are exact; the batch norm's passes are unchanged), so the runs are
 * expected to agree bit for bit; the bound, a relative 1e-6 of each tensor's largest
 * magnitude, leaves room only for a compiler contracting the fused kernel differently. A
 * wrong mask or a missing clamp changes the weights after the first step by far more.
 * A backend that is not compiled in or has no device is skipped, or fails when CI=true; so
 * does a missing CIFAR-10.
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

#define TRAIN_IMAGES 64
#define TEST_IMAGES  16
#define BATCH        16
#define SEED         11
#define TOLERANCE    1e-6

static const char *exe, *backend;
static char run_dir[2][4200];
static char out[2][262144];

/* Run 0 fused (as built), run 1 with DBK_FUSE=0. */
static int run_training(int which) {
    char args[8192];
    snprintf(args, sizeof args,
             "train --recipe quick --backend %s --train-subset %d --test-subset %d --batch %d --epochs 1 "
             "--all-epochs --seed %d --profile --no-progress --out '%s'",
             backend, TRAIN_IMAGES, TEST_IMAGES, BATCH, SEED, run_dir[which]);
    if (which) setenv("DBK_FUSE", "0", 1);
    else unsetenv("DBK_FUSE");
    const int rc = dbk_test_run_daybreak(exe, args, out[which], sizeof out[which]);
    unsetenv("DBK_FUSE");
    /* Exit 3 is a finished run that did not reach the recipe's target: 4 steps do not. */
    DBK_CHECK_MSG(rc == 3, "daybreak train (%s) exited %d, expected 3 (target not reached):\n%s",
                  which ? "DBK_FUSE=0" : "fused", rc, out[which]);
    return 0;
}

static int both_runs_should_finish(void) {
    if (run_training(0)) return 1;
    return run_training(1);
}

/* The profile table names each op's kind: the fused run has the fused ops and no separate
 * ReLU, the unfused run the reverse. */
static int profiles_should_show_each_path(void) {
    static const char *const fused[] = {" batchnorm_relu_fwd_train ", " batchnorm_relu_bwd "};
    static const char *const plain[] = {" relu_fwd ", " relu_bwd ", " batchnorm_fwd_train ", " batchnorm_bwd "};
    for (int i = 0; i < 2; i++) {
        DBK_CHECK_MSG(strstr(out[0], fused[i]), "the fused run's profile lacks%s", fused[i]);
        DBK_CHECK_MSG(!strstr(out[1], fused[i]), "the DBK_FUSE=0 run's profile has%s", fused[i]);
    }
    for (int i = 0; i < 4; i++) DBK_CHECK_MSG(strstr(out[1], plain[i]), "the DBK_FUSE=0 run's profile lacks%s", plain[i]);
    /* quick's ReLUs all follow a batch norm: none is left unfused */
    DBK_CHECK_MSG(!strstr(out[0], " relu_fwd "), "the fused run's profile still has relu_fwd");
    printf("  profiles: fused ops in the fused run only, relu_fwd / relu_bwd in the DBK_FUSE=0 run only\n");
    return 0;
}

static double train_loss(int which) {
    char path[4400];
    snprintf(path, sizeof path, "%s/result.json", run_dir[which]);
    void *text = NULL;
    size_t n = 0;
    if (dbk_file_read_all(path, &text, &n) != DBK_OK) return (double)NAN;
    cJSON *root = cJSON_ParseWithLength(text, n);
    dbk_free(text);
    const cJSON *epochs = cJSON_GetObjectItemCaseSensitive(root, "epochs");
    const cJSON *loss = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(epochs, 0), "train_loss");
    const double v = cJSON_IsNumber(loss) ? loss->valuedouble : (double)NAN;
    cJSON_Delete(root);
    return v;
}

static int train_losses_should_agree(void) {
    const double a = train_loss(0), b = train_loss(1);
    DBK_CHECK_MSG(isfinite(a) && isfinite(b), "result.json train_loss: %g and %g", a, b);
    printf("  train_loss fused %.9g, unfused %.9g\n", a, b);
    DBK_CHECK_MSG(fabs(a - b) <= TOLERANCE * fabs(a), "train_loss differs by more than %g relative", TOLERANCE);
    return 0;
}

static int checkpoints_should_agree(void) {
    dbk_checkpoint *c[2] = {NULL, NULL};
    for (int i = 0; i < 2; i++) {
        char path[4400];
        snprintf(path, sizeof path, "%s/model.ckpt", run_dir[i]);
        DBK_CHECK_OK(dbk_checkpoint_load(path, &c[i]));
    }
    const int count = dbk_checkpoint_count(c[0]);
    int differing = 0, exact = 0;
    double worst = 0.0;
    for (int t = 0; t < count; t++) {
        const dbk_ckpt_tensor *a = dbk_checkpoint_tensor(c[0], t), *b = dbk_checkpoint_find(c[1], a->name);
        int64_t n = 1;
        for (int d = 0; d < a->ndim; d++) n *= a->shape[d];
        if (!b || b->ndim != a->ndim || memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim)) {
            printf("  tensor %s: missing or of another shape in the DBK_FUSE=0 run\n", a->name);
            differing++;
            continue;
        }
        const float *x = a->data, *y = b->data;
        double scale = 0.0, diff = 0.0;
        for (int64_t i = 0; i < n; i++) {
            scale = fmax(scale, fabs((double)x[i]));
            diff = fmax(diff, fabs((double)x[i] - (double)y[i]));
        }
        const double rel = scale > 0.0 ? diff / scale : diff;
        exact += diff == 0.0;
        worst = fmax(worst, rel);
        if (!(rel <= TOLERANCE)) {
            printf("  tensor %s: largest difference %.3g of its largest magnitude\n", a->name, rel);
            differing++;
        }
    }
    printf("  %d tensors, %d bit for bit; largest difference %.3g of a tensor's largest magnitude\n", count, exact,
           worst);
    const int other_count = dbk_checkpoint_count(c[1]);
    dbk_checkpoint_destroy(c[0]);
    dbk_checkpoint_destroy(c[1]);
    DBK_CHECK_MSG(count > 0 && other_count == count, "checkpoints hold %d and %d tensors", count, other_count);
    DBK_CHECK_MSG(differing == 0, "%d of %d tensors differ by more than %g", differing, count, TOLERANCE);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: test_fusion <daybreak executable> <backend>\n");
        return 2;
    }
    exe = argv[1];
    backend = argv[2];
    dbk_backend_kind kind;
    int index;
    const int unavailable = dbk_test_resolve_backend(backend, &kind, &index);
    if (unavailable) return unavailable;
    if (!dbk_test_cifar_dir()) return dbk_test_skip_or_fail_in_ci(DBK_TEST_NO_CIFAR);
    const char *d = dbk_test_backend_tmpdir("fusion", backend, NULL);
    if (!d) return 1;
    for (int i = 0; i < 2; i++) snprintf(run_dir[i], sizeof run_dir[i], "%s/run%d", d, i + 1);
    printf("%s: quick recipe, %d real training images at batch %d, seed %d: fused, then DBK_FUSE=0\n", backend,
           TRAIN_IMAGES, BATCH, SEED);
    DBK_RUN(both_runs_should_finish);
    if (dbk_test_failed_checks) return dbk_test_finish();
    DBK_RUN(profiles_should_show_each_path);
    DBK_RUN(train_losses_should_agree);
    DBK_RUN(checkpoints_should_agree);
    return dbk_test_finish();
}
