/*
 * test_airbench_session.c — airbench94's training step once its whitening bias stops, on the CPU
 * backend with real CIFAR-10 images (about 2 s).
 *
 * The source stops the bias's requires_grad after 3 epochs (legacy/airbench94.py L410); autograd
 * then computes neither the bias's gradient (DBK_OP_CHANNEL_SUM) nor anything only it needed: the
 * whitening GELU's backward and block1.conv1's input gradient. The session records a second
 * training step without them and runs it from step ceil(3 * steps per epoch) on. Asserted:
 *   - the late step's FLOPs are the full step's less exactly those three ops';
 *   - training across the switch gives bit for bit the parameters of the full step every time
 *     (profiling mode runs the full step): the full step's bias update has learning rate 0, so
 *     both leave every parameter the same;
 *   - the bias does not move after its last step.
 * The network is airbench94's at reduced width (blocks 8, 16, 16), the recipe airbench94's at
 * batch 16 on the first 64 training images (4 steps per epoch, the bias's last step is 11).
 *
 * usage: test_airbench_session
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "data/cifar10.h"
#include "models/airbench.h"
#include "test_util.h"
#include "train/checkpoint.h"
#include "train/recipe.h"
#include "train/session.h"

enum { BATCH = 16, IMAGES = 64, EPOCHS = 4 };

static dbk_dataset train_set, test_set;
static const dbk_airbench_config small = {.widths = {8, 16, 16}, .logit_scale = 1.0f / 9.0f};
static const dbk_model_def small_model = {"airbench94-small", "test", "cifar10", dbk_airbench_forward, &small};
static dbk_recipe recipe;

static dbk_status open_session(bool full_step, dbk_backend **be, dbk_session **s) {
    const dbk_session_config cfg = {.recipe = &recipe, .model = &small_model, .batch = BATCH, .eval_batch = BATCH,
                                    .train_count = train_set.count, .test_count = test_set.count,
                                    .num_classes = train_set.num_classes,
                                    .input = {train_set.channels, train_set.height, train_set.width}};
    DBK_TRY(dbk_backend_create(DBK_BACKEND_KIND_CPU, 0, be));
    DBK_TRY(dbk_session_create(*be, &cfg, s));
    if (full_step) dbk_session_set_op_timing(*s, true); /* profiling times the full step's ops */
    DBK_TRY(dbk_session_upload_data(*s, &train_set, &test_set));
    DBK_TRY(dbk_session_init_params(*s, 5));
    return dbk_session_init_from_data(*s, &train_set);
}

/* The session's model checkpoint (tensors by name) and, with whole, its training state ("params",
 * "momentum", ...). */
static dbk_checkpoint *state_of(dbk_session *s, const char *name, bool whole) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s.ckpt", dbk_test_tmpdir("airbench_session"), name);
    dbk_checkpoint *c = NULL;
    const dbk_status st = whole ? dbk_session_save_state(s, path, "{}") : dbk_session_save(s, path, "{}");
    if (st != DBK_OK || dbk_checkpoint_load(path, &c) != DBK_OK) return NULL;
    return c;
}

static bool same(const dbk_ckpt_tensor *a, const dbk_ckpt_tensor *b) {
    return a && b && a->shape[0] == b->shape[0] && !memcmp(a->data, b->data, (size_t)a->shape[0] * sizeof(float));
}

static int train_epoch(dbk_session *s, int epoch, long total) {
    const int spe = dbk_session_steps_per_epoch(s);
    DBK_CHECK_OK(dbk_session_begin_epoch(s, epoch, 5));
    for (int step = 0; step < spe; step++) {
        const long run_step = (long)(epoch - 1) * spe + step;
        DBK_CHECK_OK(dbk_session_train_step(s, step, dbk_recipe_lr_at_step(&recipe, run_step, spe, total)));
    }
    dbk_epoch_counters c;
    DBK_CHECK_OK(dbk_session_end_epoch(s, &c));
    return 0;
}

static int late_step_should_drop_the_bias_backward_and_train_the_same(void) {
    dbk_backend *be_a, *be_b;
    dbk_session *a, *b;
    DBK_CHECK_OK(open_session(false, &be_a, &a));
    DBK_CHECK_OK(open_session(true, &be_b, &b));
    const int spe = dbk_session_steps_per_epoch(a);
    const long total = dbk_recipe_total_steps(&recipe, spe), last = 3L * spe; /* the bias trains steps 0..last-1 */
    DBK_CHECK(spe == IMAGES / BATCH && total >= last + spe);

    /* FLOPs: the late step lacks the bias's CHANNEL_SUM (N*24*31*31), the whitening GELU's
     * backward (15 per element of the same) and block1.conv1's BWD_DATA (2*N*K*C*R*S*P*Q) */
    const double whiten_out = (double)BATCH * 24 * 31 * 31;
    const double dropped = whiten_out + 15.0 * whiten_out + 2.0 * BATCH * small.widths[0] * 24 * 9 * 31 * 31;
    const double full = dbk_session_steps_flops(a, 0, 1), late = dbk_session_steps_flops(a, last, 1);
    printf("  step FLOPs: %.6g before step %ld, %.6g from it (%.4g%% less)\n", full, last, late,
           100.0 * (full - late) / full);
    DBK_CHECK_MSG(fabs((full - late) - dropped) < 1e-6 * full, "late step saves %.9g FLOPs, expected %.9g", full - late,
                  dropped);
    DBK_CHECK(dbk_session_steps_flops(b, last, 1) == full); /* profiling: the full step throughout */
    DBK_CHECK(dbk_session_steps_flops(a, 0, last + 2) == full * (double)last + 2.0 * late);

    for (int epoch = 1; epoch <= 3; epoch++) {
        DBK_CHECK(train_epoch(a, epoch, total) == 0);
        DBK_CHECK(train_epoch(b, epoch, total) == 0);
    }
    dbk_checkpoint *at_stop = state_of(a, "at_stop", false);
    for (int epoch = 4; epoch <= EPOCHS; epoch++) {
        DBK_CHECK(train_epoch(a, epoch, total) == 0);
        DBK_CHECK(train_epoch(b, epoch, total) == 0);
    }
    dbk_checkpoint *ca = state_of(a, "late", true), *cb = state_of(b, "full", true), *end = state_of(a, "end", false);
    DBK_CHECK(at_stop && ca && cb && end);
    DBK_CHECK_MSG(same(dbk_checkpoint_find(ca, "params"), dbk_checkpoint_find(cb, "params")),
                  "the late step trained other parameters than the full one");
    DBK_CHECK_MSG(same(dbk_checkpoint_find(at_stop, "whiten.bias"), dbk_checkpoint_find(end, "whiten.bias")),
                  "the whitening bias moved after its last step");
    DBK_CHECK_MSG(!same(dbk_checkpoint_find(at_stop, "block1.conv1.weight"), dbk_checkpoint_find(end, "block1.conv1.weight")),
                  "block1.conv1 did not train after the stop");
    dbk_checkpoint_destroy(at_stop);
    dbk_checkpoint_destroy(end);
    dbk_checkpoint_destroy(ca);
    dbk_checkpoint_destroy(cb);
    dbk_session_destroy(a);
    dbk_session_destroy(b);
    dbk_backend_destroy(be_a);
    dbk_backend_destroy(be_b);
    return 0;
}

int main(void) {
    const char *cifar = dbk_test_cifar_dir();
    if (!cifar) return dbk_test_skip_or_fail_in_ci(DBK_TEST_NO_CIFAR);
    if (dbk_cifar10_load(cifar, DBK_CIFAR10_TRAIN, IMAGES, &train_set) != DBK_OK ||
        dbk_cifar10_load(cifar, DBK_CIFAR10_TEST, BATCH, &test_set) != DBK_OK) {
        printf("cannot load CIFAR-10: %s\n", dbk_last_error());
        return 1;
    }
    const dbk_recipe *r;
    if (dbk_recipe_find("airbench94", &r) != DBK_OK) return 1;
    recipe = *r;
    recipe.batch = BATCH;
    recipe.eval_batch = BATCH;
    dbk_recipe_set_epochs(&recipe, EPOCHS + 1);
    DBK_RUN(late_step_should_drop_the_bias_backward_and_train_the_same);
    dbk_dataset_deinit(&train_set);
    dbk_dataset_deinit(&test_set);
    return dbk_test_finish();
}
