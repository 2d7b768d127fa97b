/*
 * test_seed_models.c — the networks of the seed CIFAR-10 entries (src/models/seed_models.h)
 * and AdamW in a training session, on real CIFAR-10 images:
 *   - every seed model, at reduced width but with every layer kind of the full one, trains
 *     with its own recipe's optimizer settings (SGD or AdamW, loss scaling, batch norm,
 *     augmentation) for three short passes over 256 real CIFAR-10 images on the CPU backend
 *     and learns: the training loss falls from the first pass to the third and the third
 *     pass's accuracy clears a bar above chance (10%) measured over several seeds;
 *   - on a device backend (argument: opencl or vulkan) each model builds and runs two
 *     training steps whose loss matches the CPU backend's (relative 1e-4);
 *   - AdamW's state (both moments) goes through a training-state checkpoint and back
 *     unchanged, and a state saved by SGD (no AdamW moments) is refused by name.
 * usage: test_seed_models [cpu|opencl[:N]|vulkan[:N]]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "data/cifar10.h"
#include "models/seed_models.h"
#include "train/checkpoint.h"
#include "train/recipe.h"
#include "train/session.h"
#include "test_util.h"

static dbk_dataset train_set, test_set;
static uint64_t seed_of_run = 1;        /* DBK_TEST_SEED overrides it (measuring the bars) */
static dbk_backend_kind device_kind;   /* the device under test (argument) */
static int device_index;

/* Reduced widths, every layer kind of the full networks (fast.ai's activated shortcut, 1x1
 * projections, the avg+max head, dropout, leaky ReLU, residual layers). */
static const dbk_preact_config wrn_small = {.groups = 3, .blocks = 1, .stem = 8, .widths = {16, 32, 64},
                                            .group_stride = {1, 2, 2}, .shortcut_after_activation = true};
static const dbk_preact_config resnet18_small = {.groups = 4, .blocks = 1, .stem = 16, .widths = {16, 32, 64, 64},
                                                 .group_stride = {1, 2, 2, 2}, .head_avg_max_linear = true};
static const dbk_alexnet_config alexnet_small = {{16, 32, 48, 32, 32}, 128, 0.5f};
static const dbk_darknet_config darknet_small = {8, 3, {1, 1, 1}, 0.1f};

typedef struct seed_case {
    const char         *recipe;   /* its optimizer, loss scaling, batch norm and augmentation */
    dbk_model_def       model;
    float               lr;       /* constant for the short epoch (the recipe's scale) */
    /* Training accuracy, percent: set from the second pass's over seeds 1-3 (2026-11-23, CPU
     * backend) less about 3 points, above chance (10%); the third pass's clears it on seeds 1-6
     * with three OpenBLAS kernel sets (docs/models.md lists the runs). */
    double              bar;
} seed_case;

static const seed_case cases[] = {
    /* bar 12: the recipe's cycled momentum (0.95 first) since 2026-11-27, third pass 14.8-25.0% */
    {"cifar10-wrn22", {"wrn22-small", "test", "cifar10", dbk_preact_forward, &wrn_small}, 0.1f, 12.0},
    {"cifar10-wrn22-adamw", {"wrn22-small", "test", "cifar10", dbk_preact_forward, &wrn_small}, 2e-3f, 18.0},
    {"cifar10-resnet18", {"resnet18-small", "test", "cifar10", dbk_preact_forward, &resnet18_small}, 0.05f, 15.0},
    /* plain SGD since the recipe follows the study's --momentum 0: its peak rate 0.4 */
    {"cifar10-alexnet", {"alexnet-small", "test", "cifar10", dbk_alexnet_forward, &alexnet_small}, 0.4f, 11.0},
    {"cifar10-darknet", {"darknet-small", "test", "cifar10", dbk_darknet_forward, &darknet_small}, 0.1f, 11.0},
};
#define CASE_COUNT (int)(sizeof cases / sizeof cases[0])

enum { BATCH = 32, PASSES = 3 };   /* PASSES: see each_seed_model_should_learn_in_one_short_epoch */

static dbk_status open_session(const seed_case *c, dbk_backend_kind kind, int index, uint64_t seed, dbk_backend **be,
                               dbk_session **s) {
    *be = NULL;
    *s = NULL;
    dbk_session_config cfg = {.model = &c->model, .batch = BATCH, .eval_batch = BATCH, .train_count = train_set.count,
                              .test_count = test_set.count, .num_classes = train_set.num_classes,
                              .input = {train_set.channels, train_set.height, train_set.width}};
    DBK_TRY(dbk_recipe_find(c->recipe, &cfg.recipe));
    DBK_TRY(dbk_backend_create(kind, index, be));
    dbk_status st = dbk_session_create(*be, &cfg, s);
    if (st == DBK_OK) st = dbk_session_upload_data(*s, &train_set, &test_set);
    if (st == DBK_OK) st = dbk_session_init_params(*s, seed);
    if (st != DBK_OK) {
        dbk_session_destroy(*s);
        dbk_backend_destroy(*be);
        *s = NULL;
        *be = NULL;
    }
    return st;
}

/* `steps` training steps (all of the epoch when < 0). */
static dbk_status train(dbk_session *s, const seed_case *c, int steps, uint64_t seed, dbk_epoch_counters *out) {
    DBK_TRY(dbk_session_begin_epoch(s, 1, seed));
    const int n = steps < 0 ? dbk_session_steps_per_epoch(s) : steps;
    for (int step = 0; step < n; step++) DBK_TRY(dbk_session_train_step(s, step, c->lr));
    return dbk_session_end_epoch(s, out);
}

/* ---------------------------------------------------------------------------------- */
/* learning on the CPU backend                                                        */

/* Three passes over the small training subset (the later ones see the same images under other
 * augmentations): the mean training loss must fall from the first pass to the third and the
 * third pass's training accuracy must clear the case's bar. Two passes were too few: with
 * OpenBLAS's AVX-512 (Cooperlake) kernels wrn22-small's loss went 2.2959 -> 2.3007 on seed 1
 * while the Haswell kernels gave 2.2875, so the test passed or failed by the host's CPU.
 * Training counters, not an evaluation: after 24 steps the batch-norm running statistics
 * (DarkNet's momentum is 0.01) have not yet followed the weights, so the test loss says little
 * about learning. */
static int each_seed_model_should_learn_in_one_short_epoch(void) {
    int rc = 0;
    for (int i = 0; i < CASE_COUNT; i++) {
        const seed_case *c = &cases[i];
        dbk_backend *be;
        dbk_session *s;
        dbk_epoch_counters ep[PASSES];
        DBK_CHECK_OK(open_session(c, DBK_BACKEND_KIND_CPU, 0, seed_of_run, &be, &s));
        for (int e = 0; e < PASSES; e++) {
            DBK_CHECK_OK(dbk_session_begin_epoch(s, e + 1, seed_of_run));
            for (int step = 0; step < dbk_session_steps_per_epoch(s); step++)
                DBK_CHECK_OK(dbk_session_train_step(s, step, c->lr));
            DBK_CHECK_OK(dbk_session_end_epoch(s, &ep[e]));
        }
        dbk_session_destroy(s);
        dbk_backend_destroy(be);
        const dbk_epoch_counters *last = &ep[PASSES - 1];
        const double l0 = ep[0].loss_sum / (double)ep[0].images, l1 = last->loss_sum / (double)last->images;
        const double acc = 100.0 * last->correct / (double)last->images;
        printf("  %-20s %-15s train loss %.4f -> %.4f, accuracy %.1f%% (bar %.0f%%)\n", c->recipe, c->model.name, l0, l1,
               acc, c->bar);
        if (!(l1 < l0) || !(acc > c->bar)) {
            printf("  FAIL %s did not learn\n", c->model.name);
            rc = 1;
        }
    }
    return rc;
}

/* ---------------------------------------------------------------------------------- */
/* device backends                                                                     */

static int each_seed_model_should_run_on_the_device_as_on_the_cpu(void) {
    const dbk_backend_kind kind = device_kind;
    const int index = device_index;
    int rc = 0;
    for (int i = 0; i < CASE_COUNT; i++) {
        const seed_case *c = &cases[i];
        dbk_epoch_counters tr[2];
        for (int side = 0; side < 2; side++) {
            dbk_backend *be;
            dbk_session *s;
            DBK_CHECK_OK(open_session(c, side ? kind : DBK_BACKEND_KIND_CPU, side ? index : 0, 5, &be, &s));
            DBK_CHECK_OK(train(s, c, 2, 5, &tr[side]));
            dbk_session_destroy(s);
            dbk_backend_destroy(be);
        }
        /* Two steps from the same weights and batches: the second step's loss depends on the
         * first update, so forward, backward and optimizer all take part; the device's
         * rounding differs from the CPU's in the last bits only (measured <= 3e-6 relative
         * on PoCL, 2026-11-23). */
        const double rel = fabs(tr[1].loss_sum - tr[0].loss_sum) / fabs(tr[0].loss_sum);
        printf("  %-20s loss of 2 steps: cpu %.5f device %.5f (relative difference %.1e)\n", c->recipe, tr[0].loss_sum,
               tr[1].loss_sum, rel);
        if (!isfinite(tr[1].loss_sum) || !(rel <= 1e-4) || tr[1].correct < 0) {
            printf("  FAIL %s: the device's run differs from the CPU's\n", c->model.name);
            rc = 1;
        }
    }
    return rc;
}

/* ---------------------------------------------------------------------------------- */
/* AdamW state in checkpoints                                                          */

static int same_tensor(const dbk_checkpoint *a, const dbk_checkpoint *b, const char *name) {
    const dbk_ckpt_tensor *ta = dbk_checkpoint_find(a, name), *tb = dbk_checkpoint_find(b, name);
    DBK_CHECK_MSG(ta && tb, "tensor %s missing", name);
    DBK_CHECK(ta->ndim == 1 && tb->ndim == 1 && ta->shape[0] == tb->shape[0]);
    double sum = 0.0;
    for (int64_t i = 0; i < ta->shape[0]; i++) sum += fabs((double)ta->data[i]);
    DBK_CHECK_MSG(sum > 0.0, "%s is all zero after training", name);
    DBK_CHECK_MSG(memcmp(ta->data, tb->data, (size_t)ta->shape[0] * 4) == 0, "%s changed in the round trip", name);
    return 0;
}

static int adamw_state_should_survive_a_checkpoint_round_trip(void) {
    const seed_case *adamw = &cases[1], *sgd = &cases[0];
    const char *dir = dbk_test_tmpdir("seed_models_ckpt");
    DBK_CHECK(dir != NULL);
    char first[4200], second[4200], sgd_path[4200];
    snprintf(first, sizeof first, "%s/adamw.state", dir);
    snprintf(second, sizeof second, "%s/adamw2.state", dir);
    snprintf(sgd_path, sizeof sgd_path, "%s/sgd.state", dir);
    dbk_backend *be;
    dbk_session *s;
    dbk_epoch_counters ec;
    DBK_CHECK_OK(open_session(adamw, DBK_BACKEND_KIND_CPU, 0, 9, &be, &s));
    DBK_CHECK_OK(train(s, adamw, 3, 9, &ec));
    DBK_CHECK_OK(dbk_session_save_state(s, first, "{}"));
    dbk_session_destroy(s);
    dbk_backend_destroy(be);

    /* a fresh session (other weights, zero moments) takes the state and saves it again */
    DBK_CHECK_OK(open_session(adamw, DBK_BACKEND_KIND_CPU, 0, 10, &be, &s));
    dbk_checkpoint *c1 = NULL, *c2 = NULL, *c3 = NULL;
    DBK_CHECK_OK(dbk_checkpoint_load(first, &c1));
    DBK_CHECK_OK(dbk_session_load_state(s, c1, first));
    DBK_CHECK_OK(dbk_session_save_state(s, second, "{}"));
    DBK_CHECK_OK(dbk_checkpoint_load(second, &c2));
    int rc = same_tensor(c1, c2, "params") | same_tensor(c1, c2, "adamw.exp_avg") |
             same_tensor(c1, c2, "adamw.exp_avg_sq");
    DBK_CHECK_MSG(dbk_checkpoint_find(c1, "momentum") == NULL, "an AdamW state holds SGD momentum");

    /* an SGD run's state has no AdamW moments: refused, naming the missing tensor */
    dbk_backend *be2;
    dbk_session *s2;
    DBK_CHECK_OK(open_session(sgd, DBK_BACKEND_KIND_CPU, 0, 9, &be2, &s2));
    DBK_CHECK_OK(dbk_session_save_state(s2, sgd_path, "{}"));
    dbk_session_destroy(s2);
    dbk_backend_destroy(be2);
    DBK_CHECK_OK(dbk_checkpoint_load(sgd_path, &c3));
    const dbk_status st = dbk_session_load_state(s, c3, sgd_path);
    printf("  SGD state into an AdamW run: %s\n", dbk_last_error());
    DBK_CHECK(st == DBK_ERR_FORMAT && strstr(dbk_last_error(), "adamw.exp_avg") != NULL);
    dbk_checkpoint_destroy(c1);
    dbk_checkpoint_destroy(c2);
    dbk_checkpoint_destroy(c3);
    dbk_session_destroy(s);
    dbk_backend_destroy(be);
    return rc;
}

int main(int argc, char **argv) {
    const char *spec = argc > 1 ? argv[1] : "cpu";
    const int resolved = dbk_test_resolve_backend(spec, &device_kind, &device_index);
    if (resolved) return resolved;
    const char *cifar = dbk_test_cifar_dir();
    if (!cifar) return dbk_test_skip_or_fail_in_ci(DBK_TEST_NO_CIFAR);
    /* 256 training images (8 steps of 32 per pass) and 256 test images: the first ones of the files */
    if (getenv("DBK_TEST_SEED")) seed_of_run = strtoull(getenv("DBK_TEST_SEED"), NULL, 10);
    if (dbk_cifar10_load(cifar, DBK_CIFAR10_TRAIN, 256, &train_set) != DBK_OK ||
        dbk_cifar10_load(cifar, DBK_CIFAR10_TEST, 256, &test_set) != DBK_OK) {
        printf("cannot load CIFAR-10: %s\n", dbk_last_error());
        return 1;
    }
    if (device_kind == DBK_BACKEND_KIND_CPU) {
        DBK_RUN(each_seed_model_should_learn_in_one_short_epoch);
        DBK_RUN(adamw_state_should_survive_a_checkpoint_round_trip);
    } else {
        DBK_RUN(each_seed_model_should_run_on_the_device_as_on_the_cpu);
    }
    dbk_dataset_deinit(&train_set);
    dbk_dataset_deinit(&test_set);
    return dbk_test_finish();
}
