/*
 * test_record_recipes.c — the record recipes' optimizer and final evaluation as a session runs
 * them, on one backend, against independent computations (a few seconds on the CPU and PoCL).
 *
 *   - Muon (airbench94-muon, cifar10-speedrun): one training step of each recipe at reduced
 *     width (blocks 8, 16, 16) on real CIFAR-10 images; every 3x3 filter's new weights must be
 *     the sources' arithmetic computed here in double from the step's gradient (the momentum
 *     buffer after a first step is the gradient): airbench94_muon's Muon.step (u = g + 0.6 v,
 *     W *= sqrt(K) / ||W||, X = u / (||u|| + 1e-7), three quintic Newton-Schulz steps, W -= lr
 *     X), speedrun's (X = u t / (||u|| + 1e-5), X /= ||X|| + 1e-5, no renormalisation at its
 *     first step, W = (W - lr X) (1 - lr wd)). On a device backend this checks its GEMMs too.
 *   - Selective TTA (cifar10-speedrun): with every test image selected the final evaluation
 *     must count the same correct predictions as the full six-view TTA of the same weights, and
 *     with none selected the same as the plain evaluation (its logits table, selection,
 *     scattering and scoring, end to end).
 *   - A short run of each recipe's whole schedule (at widths 8, 16, 16) on 256 real training
 *     images must reach a measured accuracy with its final evaluation on 200 test images.
 *
 * usage: test_record_recipes [backend]     (cpu by default; a missing backend skips, or fails
 * with CI=true)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/alloc.h"
#include "data/cifar10.h"
#include "models/airbench.h"
#include "test_util.h"
#include "train/checkpoint.h"
#include "train/recipe.h"
#include "train/session.h"

enum { BATCH = 16, IMAGES = 64, TESTS = 48 };
/* the short training run: TRAIN_N images at batch TRAIN_BATCH, scored on TRAIN_TESTS */
enum { TRAIN_N = 256, TRAIN_BATCH = 32, TRAIN_TESTS = 200 };

static dbk_backend_kind kind;
static int device;
static dbk_dataset train_all, test_all;   /* owned */
static dbk_dataset train_set, test_set;   /* views of their first images for the session in use */
static const dbk_airbench_config muon_small = {.widths = {8, 16, 16}, .logit_scale = 1.0f / 16.0f, .muon_groups = true,
                                               .head_unit_std = true, .whiten_bias_uniform = true};
static const dbk_airbench_config speedrun_small = {.widths = {8, 16, 16}, .logit_scale = 1.0f / 16.0f, .silu = true,
                                                   .muon_groups = true, .head_unit_std = true,
                                                   .whiten_bias_uniform = true};

typedef struct run {
    dbk_recipe    recipe;
    dbk_model_def model;
    dbk_backend  *be;
    dbk_session  *s;
} run;

/* The first n training and m test images as the datasets sessions take. */
static void use_images(int32_t n, int32_t m) {
    train_set = train_all;
    train_set.count = n;
    test_set = test_all;
    test_set.count = m;
}

static dbk_status open_run_at(run *r, const char *recipe, const dbk_airbench_config *cfg, int batch, uint64_t seed) {
    const dbk_recipe *found;
    DBK_TRY(dbk_recipe_find(recipe, &found));
    r->recipe = *found;
    r->recipe.batch = batch;
    r->recipe.eval_batch = batch;
    r->model = (dbk_model_def){"small", "test", "cifar10", dbk_airbench_forward, cfg};
    const dbk_session_config sc = {.recipe = &r->recipe, .model = &r->model, .batch = batch, .eval_batch = batch,
                                   .train_count = train_set.count, .test_count = test_set.count,
                                   .num_classes = train_set.num_classes,
                                   .input = {train_set.channels, train_set.height, train_set.width}};
    DBK_TRY(dbk_backend_create(kind, device, &r->be));
    DBK_TRY(dbk_session_create(r->be, &sc, &r->s));
    DBK_TRY(dbk_session_upload_data(r->s, &train_set, &test_set));
    DBK_TRY(dbk_session_init_params(r->s, seed));
    return dbk_session_init_from_data(r->s, &train_set);
}

static dbk_status open_run(run *r, const char *recipe, const dbk_airbench_config *cfg) {
    return open_run_at(r, recipe, cfg, BATCH, 3);
}

static void close_run(run *r) {
    dbk_session_destroy(r->s);
    dbk_backend_destroy(r->be);
}

static dbk_checkpoint *saved(dbk_session *s, const char *name, bool state) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s.ckpt", dbk_test_backend_tmpdir("record_recipes", dbk_backend_kind_name(kind), NULL),
             name);
    dbk_checkpoint *c = NULL;
    const dbk_status st = state ? dbk_session_save_state(s, path, "{}") : dbk_session_save(s, path, "{}");
    return st == DBK_OK && dbk_checkpoint_load(path, &c) == DBK_OK ? c : NULL;
}

/* (K x n) row-major: out = a b^T (K x K). */
static void mul_abt(const double *a, const double *b, int k, int n, double *out) {
    for (int i = 0; i < k; i++)
        for (int j = 0; j < k; j++) {
            double acc = 0.0;
            for (int e = 0; e < n; e++) acc += a[i * n + e] * b[j * n + e];
            out[i * k + j] = acc;
        }
}

static double norm(const double *x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s += x[i] * x[i];
    return sqrt(s);
}

/* The source's Newton-Schulz on X (K x n, K <= n) in place, in double. */
static void newton_schulz(double *x, int k, int n, const dbk_muon_params *m) {
    double *a = malloc(sizeof(double) * (size_t)(k * k)), *b = malloc(sizeof(double) * (size_t)(k * k));
    double *bx = malloc(sizeof(double) * (size_t)(k * n));
    for (int it = 0; it < m->ns_steps; it++) {
        mul_abt(x, x, k, n, a);                                  /* A = X X^T */
        for (int i = 0; i < k; i++)
            for (int j = 0; j < k; j++) {
                double aa = 0.0;                                 /* (A A)_ij */
                for (int e = 0; e < k; e++) aa += a[i * k + e] * a[e * k + j];
                b[i * k + j] = (double)m->ns_b * a[i * k + j] + (double)m->ns_c * aa;
            }
        for (int i = 0; i < k; i++)
            for (int e = 0; e < n; e++) {
                double acc = 0.0;                                /* (B X)_ie */
                for (int j = 0; j < k; j++) acc += b[i * k + j] * x[j * n + e];
                bx[i * n + e] = acc;
            }
        for (int i = 0; i < k * n; i++) x[i] = (double)m->ns_a * x[i] + bx[i];
    }
    free(a); free(b); free(bx);
}

static const char *const filters[] = {"block1.conv1.weight", "block1.conv2.weight", "block2.conv1.weight",
                                      "block2.conv2.weight", "block3.conv1.weight", "block3.conv2.weight"};

/* One step of a Muon recipe: each filter against the source's arithmetic in double. */
static int muon_first_step_should_follow(const char *recipe, const dbk_airbench_config *cfg) {
    run r = {0};
    DBK_CHECK_OK(open_run(&r, recipe, cfg));
    const int spe = dbk_session_steps_per_epoch(r.s);
    const long total = dbk_recipe_total_steps(&r.recipe, spe);
    dbk_checkpoint *before = saved(r.s, "before", false);
    DBK_CHECK_OK(dbk_session_begin_epoch(r.s, 1, 3));
    DBK_CHECK_OK(dbk_session_train_step(r.s, 0, dbk_recipe_lr_at_step(&r.recipe, 0, spe, total)));
    dbk_epoch_counters c;
    DBK_CHECK_OK(dbk_session_end_epoch(r.s, &c));
    dbk_checkpoint *after = saved(r.s, "after", false), *state = saved(r.s, "state", true);
    DBK_CHECK(before && after && state);
    /* the momentum buffer is the flat layout's: find each filter by its offset in "params" */
    const dbk_ckpt_tensor *params = dbk_checkpoint_find(state, "params"), *mom = dbk_checkpoint_find(state, "momentum");
    DBK_CHECK(params && mom);
    const dbk_muon_params *m = &r.recipe.muon;
    const dbk_recipe_group g = dbk_recipe_group_rule(&r.recipe, "filters");
    const double lr = dbk_recipe_group_step(&r.recipe, &g, BATCH, dbk_recipe_lr_at_step(&r.recipe, 0, spe, total), 0, spe).lr;
    const double wd = (double)m->weight_decay * BATCH;
    const bool renorm = dbk_recipe_muon_renorm_at(&r.recipe, 0, total);
    const double target = dbk_recipe_muon_ns_target(&r.recipe, 0, total);
    double worst = 0.0;
    for (size_t f = 0; f < sizeof filters / sizeof filters[0]; f++) {
        const dbk_ckpt_tensor *w0 = dbk_checkpoint_find(before, filters[f]), *w1 = dbk_checkpoint_find(after, filters[f]);
        DBK_CHECK_MSG(w0 && w1, "no %s", filters[f]);
        const int k = (int)w0->shape[0], n = (int)(w0->shape[1] * w0->shape[2] * w0->shape[3]);
        /* the filter's gradient: its new weights are in "params" at some offset; the momentum
         * buffer at the same offset holds g after the first step */
        int64_t at = -1;
        for (int64_t o = 0; o + k * n <= params->shape[0] && at < 0; o += 16)
            if (!memcmp(params->data + o, w1->data, sizeof(float) * (size_t)(k * n))) at = o;
        DBK_CHECK_MSG(at >= 0, "%s not found in the flat parameters", filters[f]);
        double *x = malloc(sizeof(double) * (size_t)(k * n)), *w = malloc(sizeof(double) * (size_t)(k * n));
        for (int i = 0; i < k * n; i++) {
            x[i] = (double)mom->data[at + i] * (1.0 + (m->nesterov ? (double)m->momentum : 0.0)); /* u = g + mu g */
            w[i] = w0->data[i];
        }
        if (renorm) {
            const double s = sqrt((double)k) / (norm(w, k * n) + (double)m->renorm_eps);
            for (int i = 0; i < k * n; i++) w[i] *= s;
        }
        if (m->ns_target > 0.0f) {
            const double s = target / (norm(x, k * n) + (double)m->ns_pre_eps);
            for (int i = 0; i < k * n; i++) x[i] *= s;
        }
        const double s = 1.0 / (norm(x, k * n) + (double)m->ns_eps);
        for (int i = 0; i < k * n; i++) x[i] *= s;
        newton_schulz(x, k, n, m);
        double err = 0.0, step = 0.0;
        for (int i = 0; i < k * n; i++) {
            const double want = (w[i] - lr * x[i]) * (1.0 - lr * wd);
            err = fmax(err, fabs((double)w1->data[i] - want));
            step = fmax(step, fabs(want - (double)w0->data[i]));
        }
        DBK_CHECK_MSG(err <= 2e-4 * step, "%s %s: largest difference %.3g against a step of %.3g", recipe, filters[f], err,
                      step);
        worst = fmax(worst, err / step);
        free(x); free(w);
    }
    printf("  %s first step: every filter within %.2g of its step from the source's arithmetic (renormalised: %s)\n",
           recipe, worst, renorm ? "yes" : "no");
    dbk_checkpoint_destroy(before);
    dbk_checkpoint_destroy(after);
    dbk_checkpoint_destroy(state);
    close_run(&r);
    return 0;
}

static int muon_steps_should_follow_the_sources(void) {
    return muon_first_step_should_follow("airbench94-muon", &muon_small) |
           muon_first_step_should_follow("cifar10-speedrun", &speedrun_small);
}

/* cifar10-speedrun's small network trained one epoch (so the logits differ between views),
 * saved to the checkpoint `trained`. */
static char trained[4200];

static int train_one_epoch(void) {
    run r = {0};
    DBK_CHECK_OK(open_run(&r, "cifar10-speedrun", &speedrun_small));
    const int spe = dbk_session_steps_per_epoch(r.s);
    DBK_CHECK_OK(dbk_session_begin_epoch(r.s, 1, 3));
    for (int step = 0; step < spe; step++) DBK_CHECK_OK(dbk_session_train_step(r.s, step, 1.0f));
    dbk_epoch_counters c;
    DBK_CHECK_OK(dbk_session_end_epoch(r.s, &c));
    snprintf(trained, sizeof trained, "%s/trained.ckpt",
             dbk_test_backend_tmpdir("record_recipes", dbk_backend_kind_name(kind), NULL));
    DBK_CHECK_OK(dbk_session_save(r.s, trained, "{}"));
    close_run(&r);
    return 0;
}

/* The final evaluation of the trained weights by a session whose recipe selects `fraction`
 * (< 0: the plain evaluation). */
static int final_with(float fraction, int level, dbk_epoch_counters *out) {
    run e = {0};
    const dbk_recipe *found;
    DBK_CHECK_OK(dbk_recipe_find("cifar10-speedrun", &found));
    e.recipe = *found;
    e.recipe.batch = e.recipe.eval_batch = BATCH;
    e.recipe.tta_select.fraction = fraction;
    e.recipe.tta_level = level;
    e.model = (dbk_model_def){"small", "test", "cifar10", dbk_airbench_forward, &speedrun_small};
    const dbk_session_config sc = {.recipe = &e.recipe, .model = &e.model, .batch = BATCH, .eval_batch = BATCH,
                                   .train_count = train_set.count, .test_count = test_set.count,
                                   .num_classes = train_set.num_classes,
                                   .input = {train_set.channels, train_set.height, train_set.width}};
    DBK_CHECK_OK(dbk_backend_create(kind, device, &e.be));
    DBK_CHECK_OK(dbk_session_create(e.be, &sc, &e.s));
    DBK_CHECK_OK(dbk_session_upload_data(e.s, &train_set, &test_set));
    DBK_CHECK_OK(dbk_session_load(e.s, trained));
    DBK_CHECK_OK(fraction < 0 ? dbk_session_evaluate(e.s, out) : dbk_session_evaluate_final(e.s, out));
    close_run(&e);
    return 0;
}

static int selective_tta_should_agree_with_full_and_plain(void) {
    use_images(IMAGES, TESTS);
    DBK_CHECK(train_one_epoch() == 0);
    dbk_epoch_counters all, full, none, plain;
    DBK_CHECK(final_with(1.0f, 3, &all) == 0);      /* every row selected */
    DBK_CHECK(final_with(0.0f, 3, &full) == 0);     /* tta_select off: all six views of every row */
    DBK_CHECK(final_with(0.01f, 3, &none) == 0);    /* int(0.01 * 48) = 0 rows */
    DBK_CHECK(final_with(-1.0f, 3, &plain) == 0);   /* the plain evaluation */
    printf("  correct of %d: selective with all rows %g, full TTA %g; with none %g, plain %g\n", TESTS, all.correct,
           full.correct, none.correct, plain.correct);
    DBK_CHECK_MSG(all.correct == full.correct && fabs(all.loss_sum - full.loss_sum) <= 1e-4 * fabs(full.loss_sum),
                  "selecting every row: %g correct, loss %g; full TTA %g, %g", all.correct, all.loss_sum, full.correct,
                  full.loss_sum);
    DBK_CHECK_MSG(none.correct == plain.correct && fabs(none.loss_sum - plain.loss_sum) <= 1e-4 * fabs(plain.loss_sum),
                  "selecting no row: %g correct, loss %g; plain %g, %g", none.correct, none.loss_sum, plain.correct,
                  plain.loss_sum);
    DBK_CHECK_MSG(all.images == TESTS && none.images == TESTS, "images %lld, %lld", (long long)all.images,
                  (long long)none.images);
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* a short training run                                                               */

/* The recipe's whole schedule (its steps at TRAIN_BATCH, the whitening bias's last steps, the
 * late step, jitter and selective TTA) on TRAIN_N real training images, then its final
 * evaluation on TRAIN_TESTS test images, as the trainer runs them. The network is the
 * recipe's at widths 8, 16, 16 (lavapipe trains it in about 20 s of CPU time). */
#define muon_train muon_small
#define speedrun_train speedrun_small

static dbk_status train_recipe(const char *recipe, const dbk_airbench_config *cfg, uint64_t seed, double *accuracy) {
    run r = {0};
    use_images(TRAIN_N, TRAIN_TESTS);
    dbk_status st = open_run_at(&r, recipe, cfg, TRAIN_BATCH, seed);
    const int spe = st == DBK_OK ? dbk_session_steps_per_epoch(r.s) : 0;
    const long total = dbk_recipe_total_steps(&r.recipe, spe);
    for (int epoch = 1; st == DBK_OK && (long)(epoch - 1) * spe < total; epoch++) {
        st = dbk_session_begin_epoch(r.s, epoch, seed);
        for (int step = 0; st == DBK_OK && step < spe && (long)(epoch - 1) * spe + step < total; step++)
            st = dbk_session_train_step(r.s, step, dbk_recipe_lr_at_step(&r.recipe, (long)(epoch - 1) * spe + step, spe,
                                                                        total));
        dbk_epoch_counters c;
        if (st == DBK_OK) st = dbk_session_end_epoch(r.s, &c);
    }
    dbk_epoch_counters f = {0};
    if (st == DBK_OK) st = dbk_session_evaluate_final(r.s, &f);
    if (st == DBK_OK) *accuracy = 100.0 * f.correct / (double)f.images;
    close_run(&r);
    return st;
}

/* Bars (final TTA accuracy, percent): on the CPU backend (2026-11-27) seeds 1, 2, 3 reached
 * 33.0%, 31.5%, 26.0% (airbench94-muon) and 35.0%, 34.0%, 31.0% (cifar10-speedrun); the bars
 * sit 6-9 points under the worst, so a device whose rounding takes training elsewhere passes,
 * and 10-12 above chance (10%), so one that does not learn fails. */
#define MUON_BAR     20.0
#define SPEEDRUN_BAR 22.0

static int short_runs_should_reach_their_bars(void) {
    const char *env = getenv("DBK_TEST_SEED");
    const uint64_t seed = env ? strtoull(env, NULL, 10) : 1;
    double muon = 0.0, speedrun = 0.0;
    DBK_CHECK_OK(train_recipe("airbench94-muon", &muon_train, seed, &muon));
    DBK_CHECK_OK(train_recipe("cifar10-speedrun", &speedrun_train, seed, &speedrun));
    printf("  seed %llu: airbench94-muon %.2f%% (bar %.1f%%), cifar10-speedrun %.2f%% (bar %.1f%%)\n",
           (unsigned long long)seed, muon, MUON_BAR, speedrun, SPEEDRUN_BAR);
    DBK_CHECK_MSG(muon >= MUON_BAR, "airbench94-muon reached %.2f%%, below its bar %.1f%%", muon, MUON_BAR);
    DBK_CHECK_MSG(speedrun >= SPEEDRUN_BAR, "cifar10-speedrun reached %.2f%%, below its bar %.1f%%", speedrun,
                  SPEEDRUN_BAR);
    return 0;
}

int main(int argc, char **argv) {
    const char *spec = argc > 1 ? argv[1] : "cpu";
    const int unavailable = dbk_test_resolve_backend(spec, &kind, &device);
    if (unavailable) return unavailable;
    const char *cifar = dbk_test_cifar_dir();
    if (!cifar) return dbk_test_skip_or_fail_in_ci(DBK_TEST_NO_CIFAR);
    if (dbk_cifar10_load(cifar, DBK_CIFAR10_TRAIN, TRAIN_N, &train_all) != DBK_OK ||
        dbk_cifar10_load(cifar, DBK_CIFAR10_TEST, TRAIN_TESTS, &test_all) != DBK_OK) {
        printf("cannot load CIFAR-10: %s\n", dbk_last_error());
        return 1;
    }
    printf("record recipes on %s\n", spec);
    use_images(IMAGES, TESTS);
    DBK_RUN(muon_steps_should_follow_the_sources);
    DBK_RUN(selective_tta_should_agree_with_full_and_plain);
    DBK_RUN(short_runs_should_reach_their_bars);
    dbk_dataset_deinit(&train_all);
    dbk_dataset_deinit(&test_all);
    return dbk_test_finish();
}
