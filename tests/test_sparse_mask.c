/*
 * test_sparse_mask.c — training with fixed sparse masks (train/sparse_mask.h) and small
 * checkpoints (train/ckpt_diff.h), docs/sparse-masks.md:
 *  - the spec's parsing and refusals, the layout (classifier and frozen parameters left out,
 *    fisher.py's keep count), the interleaved split of a selection between ranks;
 *  - the Fisher mask against a brute-force reference on a small model: each sample's
 *    gradient recovered from a batch-1 SGD step of a separate session (p0 - p1 = lr g with
 *    momentum and decay 0), squared and summed on the host in double, against the importance
 *    the device accumulated; and the mask against a host sort of that importance (ties by
 *    index), exactly;
 *  - masked-out parameters bit for bit unchanged after training resnet9-quarter on real
 *    CIFAR-10 images with momentum, weight decay and a recomputed Fisher mask, and with a
 *    fixed random mask under airbench-style lookahead; their momentum stays exactly zero;
 *  - the difference file's round trip, its refusal of the wrong base and of damaged files;
 *    base + difference evaluates exactly as the trained model.
 * The device is the CPU reference here; the ops' device kernels are held to it by
 * test_ops_backend (fisher_accumulate, sparse_scatter, the masked updates). About 10-20 s.
 *
 *   test_sparse_mask DAYBREAK       (also: the command line: train --checkpoint-diff, then
 *                                    eval and infer of base + difference against model.ckpt;
 *                                    a fixed mask stopped by SIGTERM after its mask was
 *                                    computed and resumed gives the uninterrupted run's
 *                                    model.ckpt and model.diff byte for byte)
 *   test_sparse_mask BACKEND
 * With a device backend (opencl, vulkan) it runs the small model's pipeline there instead: the
 * importance of 8 real images against the CPU's (NMSE < 1e-8: the backward passes differ in
 * summation order only), the device's mask against a host sort of the device's importance
 * exactly, and 4 masked training steps with momentum and weight decay leaving every
 * masked-out parameter bit for bit (a few seconds on PoCL; lavapipe builds its pipelines).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "core/rng.h"
#include "data/cifar10.h"
#include "models/models.h"
#include "test_util.h"
#include "train/checkpoint.h"
#include "train/ckpt_diff.h"
#include "train/recipe.h"
#include "train/session.h"
#include "train/sparse_mask.h"

/* ---------------------------------------------------------------------------------- */
/* the spec, the layout, the split                                                     */

static int spec_should_parse_fractions_and_refuse_the_rest(void) {
    dbk_mask_spec s;
    dbk_mask_spec_init(&s);
    DBK_CHECK(s.method == DBK_MASK_ALL && s.samples == 1024 && !s.fixed && !s.absolute);
    DBK_CHECK_OK(dbk_mask_spec_parse("fisher:0.5%", &s));
    DBK_CHECK(s.method == DBK_MASK_FISHER && fabs(s.keep - 0.005) < 1e-15);
    DBK_CHECK_OK(dbk_mask_spec_parse("random:0.02", &s));
    DBK_CHECK(s.method == DBK_MASK_RANDOM && s.keep == 0.02);
    DBK_CHECK_OK(dbk_mask_spec_parse("all", &s));
    DBK_CHECK(s.method == DBK_MASK_ALL);
    const char *bad[] = {"fisher", "fisher:", "fisher:0", "fisher:1.5", "fisher:-1%", "topk:1%", "random:abc",
                         "all:1", "fisher:2%x", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        dbk_mask_spec t = s;
        DBK_CHECK_MSG(dbk_mask_spec_parse(bad[i], &t) == DBK_ERR_INVALID_ARG, "'%s' accepted", bad[i]);
        DBK_CHECK_MSG(strstr(dbk_last_error(), bad[i]) != NULL, "error for '%s' does not name it: %s", bad[i],
                      dbk_last_error());
        DBK_CHECK(t.method == s.method && t.keep == s.keep);
    }
    DBK_CHECK_OK(dbk_mask_grad_parse("absolute", &s));
    DBK_CHECK(s.absolute);
    DBK_CHECK(dbk_mask_grad_parse("cube", &s) == DBK_ERR_INVALID_ARG);
    DBK_CHECK_OK(dbk_mask_split_parse("same", &s));
    DBK_CHECK(s.same_for_ranks);
    DBK_CHECK(dbk_mask_split_parse("random", &s) == DBK_ERR_INVALID_ARG);
    return 0;
}

/* A small model of its own: a frozen stem, a trained conv-bn block, a classifier. */
static dbk_value small_forward(dbk_graph *g, const void *config, dbk_value x, int num_classes) {
    (void)config;
    dbk_graph_set_group(g, DBK_GRAPH_GROUP_FROZEN);
    dbk_value y = dbk_nn_conv(g, x, 8, 3, 1, 1, "stem.conv");           /* 216, frozen */
    dbk_graph_set_group(g, "");
    y = dbk_nn_relu(g, dbk_nn_batchnorm(g, y, "stem.bn"));             /* 16 */
    y = dbk_nn_conv(g, y, 8, 3, 1, 1, "block.conv");                    /* 576 */
    y = dbk_nn_relu(g, dbk_nn_batchnorm(g, y, "block.bn"));            /* 16 */
    y = dbk_nn_global_maxpool(g, y, "pool");
    return dbk_nn_linear(g, y, num_classes, "linear");                  /* 80, the classifier */
}

static const dbk_model_def small_model = {
    .name = "fish-small", .description = "test", .dataset = "cifar10", .forward = small_forward, .config = NULL,
};

static int layout_should_leave_out_the_classifier_and_frozen_parameters(void) {
    dbk_graph *g;
    const dbk_graph_config gc = {.training = true, .bn = {1e-5f, 0.1f}};
    DBK_CHECK_OK(dbk_graph_create(&gc, &g));
    dbk_value x = dbk_graph_value(g, false, 2, 3, 8, 8);
    dbk_model_forward(g, &small_model, x, 10);
    DBK_CHECK_OK(dbk_graph_status(g));
    dbk_mask_spec s;
    dbk_mask_spec_init(&s);
    DBK_CHECK_OK(dbk_mask_spec_parse("fisher:20%", &s));
    dbk_mask_layout l;
    DBK_CHECK_OK(dbk_mask_layout_init(g, &s, 1, &l));
    int bad = strcmp(l.classifier, "linear") || l.param_count != 904 || l.classifier_count != 80 ||
              l.frozen_count != 216 || l.selectable_count != 608 || l.keep_count != 180 - 80 || l.select_count != 100;
    printf("  classifier '%s', P %zu, C %zu, frozen %zu, selectable %zu in %d range(s), keep %zu\n", l.classifier,
           l.param_count, l.classifier_count, l.frozen_count, l.selectable_count, l.range_count, l.keep_count);
    size_t in_ranges = 0;
    for (int i = 0; i < l.range_count; i++) in_ranges += l.ranges[i].count;
    bad |= in_ranges != l.selectable_count;
    dbk_mask_layout_deinit(&l);
    DBK_CHECK(!bad);
    /* Two ranks interleaved need twice as many; 40% of 904 leaves 361 - 80 = 281 each, 562 <= 608. */
    DBK_CHECK_OK(dbk_mask_spec_parse("fisher:40%", &s));
    DBK_CHECK_OK(dbk_mask_layout_init(g, &s, 2, &l));
    DBK_CHECK(l.keep_count == 281 && l.select_count == 562);
    dbk_mask_layout_deinit(&l);
    /* 50% x 2 ranks do not fit the 608 selectable parameters; 8% is no more than the classifier. */
    DBK_CHECK_OK(dbk_mask_spec_parse("fisher:50%", &s));
    DBK_CHECK(dbk_mask_layout_init(g, &s, 2, &l) == DBK_ERR_INVALID_ARG);
    DBK_CHECK_MSG(strstr(dbk_last_error(), "608") != NULL, "%s", dbk_last_error());
    DBK_CHECK_OK(dbk_mask_spec_parse("random:8%", &s));
    DBK_CHECK(dbk_mask_layout_init(g, &s, 1, &l) == DBK_ERR_INVALID_ARG);
    DBK_CHECK_MSG(strstr(dbk_last_error(), "classifier 'linear'") != NULL, "%s", dbk_last_error());
    dbk_graph_destroy(g);
    return 0;
}

/* fisher.py's MultiFisherMask: positions r, r + N, ... of the descending order go to rank r. */
static int share_should_interleave_by_importance(void) {
    dbk_mask_pick picks[7] = {{40, 0.5f}, {10, 3.0f}, {30, 3.0f}, {20, 9.0f}, {50, 0.1f}, {60, 2.0f}, {0, 1.0f}};
    /* descending: 20 (9), 10 (3, lower index first), 30 (3), 60 (2), 0 (1), 40 (0.5), 50 (0.1) */
    int32_t out[8];
    size_t n = dbk_mask_share(picks, 7, 2, 0, false, out);
    DBK_CHECK(n == 4 && out[0] == 0 && out[1] == 20 && out[2] == 30 && out[3] == 50);   /* 20, 30, 0, 50 sorted */
    n = dbk_mask_share(picks, 7, 2, 1, false, out);
    DBK_CHECK(n == 3 && out[0] == 10 && out[1] == 40 && out[2] == 60);
    n = dbk_mask_share(picks, 7, 2, 1, true, out);
    DBK_CHECK(n == 7 && out[0] == 0 && out[6] == 60);
    /* Random draws: distinct, in range, the same for the same seed. */
    dbk_mask_pick a[100], b[100];
    DBK_CHECK(dbk_mask_draw_random(1000, 100, 42, a) && dbk_mask_draw_random(1000, 100, 42, b));
    char seen[1000] = {0};
    for (int i = 0; i < 100; i++) {
        DBK_CHECK(a[i].index == b[i].index && a[i].index >= 0 && a[i].index < 1000 && !seen[a[i].index]);
        seen[a[i].index] = 1;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* sessions                                                                            */

static dbk_dataset train_set, test_set;
static char tmp[4096];
static dbk_backend_kind device_kind;
static int device_index;
static const char *exe;   /* the daybreak executable, for the command-line case */

/* The quick recipe without random augmentation, SGD at a constant lr without momentum and
 * weight decay: one batch-1 step moves every parameter by lr x its gradient. */
static dbk_recipe plain_recipe(float lr) {
    const dbk_recipe *q;
    dbk_recipe_find("quick", &q);
    dbk_recipe r = *q;
    r.lr_knots = 2;
    r.lr_epochs[0] = 0.0f;
    r.lr_epochs[1] = 100.0f;
    r.lr_values[0] = r.lr_values[1] = lr;
    r.momentum = 0.0f;
    r.weight_decay = 0.0f;
    r.nesterov = false;
    r.label_smoothing = 0.0f;
    r.augment.pad = 0;
    r.augment.flip = false;
    r.augment.cutout = 0;
    return r;
}

static dbk_status make_session(const dbk_recipe *r, const dbk_model_def *model, int batch, const dbk_mask_spec *mask,
                               dbk_backend *be, dbk_session **s) {
    const dbk_session_config cfg = {.recipe = r, .model = model, .input = {3, 32, 32}, .num_classes = 10,
                                    .batch = batch, .eval_batch = 100, .train_count = train_set.count,
                                    .test_count = test_set.count, .mask = mask};
    DBK_TRY(dbk_session_create(be, &cfg, s));
    DBK_TRY(dbk_session_upload_data(*s, &train_set, &test_set));
    DBK_TRY(dbk_session_init_params(*s, 5));
    return dbk_session_init_from_data(*s, &train_set);
}

/* A checkpoint's parameters in the difference order (P floats), by the model's names. */
static float *read_params(const char *path, size_t *count) {
    dbk_checkpoint *c;
    if (dbk_checkpoint_load(path, &c) != DBK_OK) return NULL;
    size_t n = 0;
    for (int i = 0; i < dbk_checkpoint_count(c); i++) {
        const dbk_ckpt_tensor *t = dbk_checkpoint_tensor(c, i);
        if (strstr(t->name, "running_")) continue;
        int64_t e = 1;
        for (int d = 0; d < t->ndim; d++) e *= t->shape[d];
        n += (size_t)e;
    }
    float *v = dbk_malloc(n * 4 + 4);
    size_t at = 0;
    for (int i = 0; v && i < dbk_checkpoint_count(c); i++) {
        const dbk_ckpt_tensor *t = dbk_checkpoint_tensor(c, i);
        if (strstr(t->name, "running_")) continue;
        int64_t e = 1;
        for (int d = 0; d < t->ndim; d++) e *= t->shape[d];
        memcpy(v + at, t->data, (size_t)e * 4);
        at += (size_t)e;
    }
    dbk_checkpoint_destroy(c);
    *count = n;
    return v;
}

static int by_importance_desc(const void *a, const void *b) {
    const dbk_mask_pick *x = a, *y = b;
    if (x->importance != y->importance) return x->importance > y->importance ? -1 : 1;
    return x->index - y->index;
}

/* The small model's Fisher importance of N images, on the device, against each image's
 * gradient from a separate batch-1 SGD session; then the mask against a host top-k. */
static int fisher_mask_should_match_a_brute_force_reference(void) {
    const int N = 8;
    const float lr = 1024.0f; /* a power of two: p0 - p1 = lr g to within an ulp of p0 */
    const dbk_recipe r = plain_recipe(lr);
    dbk_mask_spec spec;
    dbk_mask_spec_init(&spec);
    DBK_CHECK_OK(dbk_mask_spec_parse("fisher:20%", &spec));
    spec.samples = N;
    dbk_backend *be;
    DBK_CHECK_OK(dbk_backend_create(DBK_BACKEND_KIND_CPU, 0, &be));
    dbk_session *ms = NULL, *rs = NULL;
    DBK_CHECK_OK(make_session(&r, &small_model, 16, &spec, be, &ms));
    DBK_CHECK_OK(make_session(&r, &small_model, 1, NULL, be, &rs));
    char base[4200], after[4200];
    snprintf(base, sizeof base, "%s/small-base.ckpt", tmp);
    snprintf(after, sizeof after, "%s/small-after.ckpt", tmp);
    DBK_CHECK_OK(dbk_session_save(rs, base, "{}"));
    const size_t P = dbk_session_param_count(ms);
    float *importance = dbk_malloc(P * 4), *mask = dbk_malloc(P * 4);
    double *ref = dbk_calloc(P, sizeof *ref);
    DBK_CHECK(importance && mask && ref);

    /* The device: rows 0..N-1 of epoch 1's shuffle. */
    DBK_CHECK_OK(dbk_session_begin_epoch(ms, 1, 9));
    const dbk_mask_layout *l = dbk_session_mask_layout(ms);
    DBK_CHECK(l && l->samples == N);
    DBK_CHECK_OK(dbk_session_fisher_select(ms, N, 1234u, l->select_count));
    DBK_CHECK_OK(dbk_session_mask_from_selection(ms));
    DBK_CHECK_OK(dbk_session_read_importance(ms, importance));
    DBK_CHECK_OK(dbk_session_read_mask(ms, mask));

    /* The reference: the same rows, one SGD step each from the same start. Its flat layout is
     * the mask session's (the same model); the checkpoint lists tensors in declaration order. */
    DBK_CHECK_OK(dbk_session_begin_epoch(rs, 1, 9));
    size_t n0 = 0, n1 = 0;
    float *p0 = read_params(base, &n0);
    DBK_CHECK_MSG(p0 && n0 == l->param_count, "%zu parameters in %s, the mask counts %zu", n0, base, l->param_count);
    for (int i = 0; i < N; i++) {
        DBK_CHECK_OK(dbk_session_load(rs, base));
        DBK_CHECK_OK(dbk_session_train_step(rs, i, lr));
        DBK_CHECK_OK(dbk_session_save(rs, after, "{}"));
        float *p1 = read_params(after, &n1);
        DBK_CHECK(p1 && n1 == n0);
        for (size_t j = 0; j < n0; j++) {
            const double g = ((double)p0[j] - (double)p1[j]) / (double)lr;
            ref[j] += g * g;
        }
        dbk_free(p1);
    }
    /* The reference is in declaration order, the device's buffers in the flat layout (each
     * tensor 16-float aligned): the planned graph gives every tensor's offset. */
    dbk_graph *g;
    const dbk_graph_config gc = {.training = true, .bn = r.bn};
    DBK_CHECK_OK(dbk_graph_create(&gc, &g));
    for (int pass = 0; pass < 2; pass++) { /* offsets are final after the build pass */
        if (pass) dbk_graph_begin_build(g, &(dbk_graph_buffers){0});
        dbk_model_forward(g, &small_model, dbk_graph_value(g, false, 1, 3, 32, 32), 10);
    }
    DBK_CHECK_OK(dbk_graph_status(g));
    size_t *flat = dbk_malloc(n0 * sizeof *flat), at0 = 0;
    for (int t = 0; t < dbk_graph_param_info_count(g); t++) {
        const dbk_param_info *pi = dbk_graph_param_info(g, t);
        size_t e = 1;
        for (int d = 0; d < pi->ndim; d++) e *= (size_t)pi->shape[d];
        for (size_t j = 0; j < e; j++) flat[at0++] = pi->offset + j;
    }
    dbk_graph_destroy(g);
    DBK_CHECK(at0 == n0);
    double num = 0, den = 0;
    for (size_t j = 0; j < n0; j++) {
        const double e = (double)importance[flat[j]] - ref[j];
        num += e * e;
        den += ref[j] * ref[j];
    }
    const double nmse = den > 0 ? num / den : 1.0;
    printf("  importance of %d images over %zu parameters: NMSE %.3g against the SGD-step reference\n", N, n0, nmse);
    DBK_CHECK_MSG(den > 0 && nmse < 1e-8, "NMSE %g", nmse);
    for (size_t j = 0; j < 216; j++)
        DBK_CHECK_MSG(importance[flat[j]] == 0.0f, "frozen parameter %zu has importance", j);

    /* The selection: the host's top-k of the device's importance over the selectable ranges. */
    dbk_mask_pick *picks = dbk_malloc(l->selectable_count * sizeof *picks);
    size_t m = 0;
    for (int q = 0; q < l->range_count; q++)
        for (size_t j = 0; j < l->ranges[q].count; j++, m++)
            picks[m] = (dbk_mask_pick){(int32_t)m, importance[l->ranges[q].offset + j]};
    qsort(picks, m, sizeof *picks, by_importance_desc);
    char *want = dbk_calloc(m, 1);
    for (size_t j = 0; j < l->select_count; j++) want[picks[j].index] = 1;
    size_t at = 0, ones = 0;
    for (int q = 0; q < l->range_count; q++)
        for (size_t j = 0; j < l->ranges[q].count; j++, at++) {
            const float v = mask[l->ranges[q].offset + j];
            DBK_CHECK_MSG(v == (want[at] ? 1.0f : 0.0f), "packed %zu: mask %g, host top-k %d", at, (double)v, want[at]);
            ones += v == 1.0f;
        }
    DBK_CHECK(ones == l->select_count);
    for (size_t j = n0 - 80; j < n0; j++) DBK_CHECK_MSG(mask[flat[j]] == 1.0f, "classifier parameter %zu masked out", j);
    dbk_free(flat);
    dbk_free(want);
    dbk_free(picks);
    dbk_free(p0);
    dbk_free(ref);
    dbk_free(mask);
    dbk_free(importance);
    dbk_session_destroy(ms);
    dbk_session_destroy(rs);
    dbk_backend_destroy(be);
    return 0;
}

/* resnet9-quarter on real images, two epochs of 4 steps with momentum 0.9, weight decay and
 * the recipe's schedule; rep: the mask of each epoch (recomputed Fisher, or a fixed random
 * one), optionally lookahead every 2 steps. Every parameter outside every epoch's mask must
 * come back bit for bit, its momentum exactly 0. */
static int train_and_compare(const char *mask_text, bool fixed, bool lookahead, const char *name) {
    const dbk_recipe *q;
    DBK_CHECK_OK(dbk_recipe_find("quick", &q));
    dbk_recipe r = *q;
    if (lookahead) { /* airbench94's lookahead: decay 0.95^5 x (step / total)^3 */
        r.lookahead_every = 2;
        r.lookahead_base = 0.77378094f;
        r.lookahead_power = 3.0f;
    }
    const dbk_model_def *model;
    DBK_CHECK_OK(dbk_model_find(r.model, &model));
    dbk_mask_spec spec;
    dbk_mask_spec_init(&spec);
    DBK_CHECK_OK(dbk_mask_spec_parse(mask_text, &spec));
    spec.samples = 32;
    spec.fixed = fixed;
    dbk_backend *be;
    dbk_session *s;
    DBK_CHECK_OK(dbk_backend_create(DBK_BACKEND_KIND_CPU, 0, &be));
    DBK_CHECK_OK(make_session(&r, model, 64, &spec, be, &s));
    char base[4200], trained[4200], state[4200];
    snprintf(base, sizeof base, "%s/%s-base.ckpt", tmp, name);
    snprintf(trained, sizeof trained, "%s/%s-model.ckpt", tmp, name);
    snprintf(state, sizeof state, "%s/%s-state.ckpt", tmp, name);
    DBK_CHECK_OK(dbk_session_save(s, base, "{\"recipe\": \"quick\"}"));
    const size_t P = dbk_session_param_count(s);
    float *mask = dbk_malloc(P * 4);
    char *ever = dbk_calloc(P, 1);
    DBK_CHECK(mask && ever);
    dbk_mask_report rep = {0};
    dbk_mask_report_init(&rep, &spec, s);
    const int steps = 4, epochs = 2;
    for (int e = 1; e <= epochs; e++) {
        DBK_CHECK_OK(dbk_session_begin_epoch(s, e, 3));
        DBK_CHECK_OK(dbk_mask_begin_epoch(s, &spec, NULL, 3, e, &rep));
        DBK_CHECK_OK(dbk_session_read_mask(s, mask));
        for (size_t j = 0; j < P; j++) ever[j] |= mask[j] != 0.0f;
        for (int k = 0; k < steps; k++) {
            const long done = (long)(e - 1) * steps + k + 1, total = (long)epochs * steps;
            DBK_CHECK_OK(dbk_session_train_step(s, k, 0.2f));
            if (lookahead && done % 2 == 0) DBK_CHECK_OK(dbk_session_lookahead(s, done, total));
        }
        dbk_epoch_counters c;
        DBK_CHECK_OK(dbk_session_end_epoch(s, &c));
    }
    if (lookahead) DBK_CHECK_OK(dbk_session_lookahead_final(s));
    DBK_CHECK(rep.computations == (fixed ? 1 : epochs));
    DBK_CHECK_OK(dbk_session_save(s, trained, "{\"recipe\": \"quick\"}"));
    DBK_CHECK_OK(dbk_session_save_state(s, state, "{}"));
    size_t n0, n1;
    float *p0 = read_params(base, &n0), *p1 = read_params(trained, &n1);
    dbk_checkpoint *st;
    DBK_CHECK_OK(dbk_checkpoint_load(state, &st));
    const dbk_ckpt_tensor *mom = dbk_checkpoint_find(st, "momentum"), *saved_mask = dbk_checkpoint_find(st, "sparse_mask");
    DBK_CHECK(p0 && p1 && n0 == P && n1 == P && mom && saved_mask);
    /* resnet9-quarter has one parameter group: flat order is declaration order. */
    size_t outside = 0, inside = 0, moved = 0, bad = 0, bad_momentum = 0;
    for (size_t j = 0; j < P; j++) {
        if (ever[j]) {
            inside++;
            moved += memcmp(&p0[j], &p1[j], 4) != 0;
            continue;
        }
        outside++;
        bad += memcmp(&p0[j], &p1[j], 4) != 0;
        bad_momentum += mom->data[j] != 0.0f || signbit(mom->data[j]);
    }
    printf("  %s: %zu parameters trained in some epoch (%zu of them moved), %zu never: %zu of those changed, %zu "
           "with momentum != +0\n", name, inside, moved, outside, bad, bad_momentum);
    DBK_CHECK(bad == 0 && bad_momentum == 0);
    DBK_CHECK(outside > P / 2 && moved > inside / 2);
    DBK_CHECK(memcmp(saved_mask->data, mask, P * 4) == 0); /* resume.ckpt keeps the last mask */
    dbk_checkpoint_destroy(st);
    dbk_free(p0);
    dbk_free(p1);
    dbk_free(ever);
    dbk_free(mask);
    dbk_session_destroy(s);
    dbk_backend_destroy(be);
    return 0;
}

static int masked_out_parameters_should_not_change_with_a_recomputed_fisher_mask(void) {
    return train_and_compare("fisher:5%", false, false, "fisher");
}

static int masked_out_parameters_should_not_change_under_lookahead(void) {
    return train_and_compare("random:5%", true, true, "lookahead");
}

/* The small model's parameters in declaration order -> flat offsets (n of them), from a graph
 * built as the session builds (offsets are final after the build pass). */
static size_t *flat_offsets(size_t n) {
    dbk_graph *g;
    const dbk_graph_config gc = {.training = true, .bn = {1e-5f, 0.1f}};
    if (dbk_graph_create(&gc, &g) != DBK_OK) return NULL;
    for (int pass = 0; pass < 2; pass++) {
        if (pass) dbk_graph_begin_build(g, &(dbk_graph_buffers){0});
        dbk_model_forward(g, &small_model, dbk_graph_value(g, false, 1, 3, 32, 32), 10);
    }
    size_t *flat = dbk_malloc(n * sizeof *flat), at = 0;
    for (int t = 0; flat && t < dbk_graph_param_info_count(g); t++) {
        const dbk_param_info *pi = dbk_graph_param_info(g, t);
        size_t e = 1;
        for (int d = 0; d < pi->ndim; d++) e *= (size_t)pi->shape[d];
        for (size_t j = 0; j < e && at < n; j++) flat[at++] = pi->offset + j;
    }
    dbk_graph_destroy(g);
    return flat;
}

/* On a device: the small model's Fisher importance against the CPU's, the device's selection
 * against a host sort, and masked training steps there. */
static int device_mask_should_match_the_cpu(void) {
    dbk_recipe r = plain_recipe(0.05f);
    r.momentum = 0.9f; /* the masked steps: with momentum and weight decay */
    r.nesterov = true;
    r.weight_decay = 5e-4f;
    dbk_mask_spec spec;
    dbk_mask_spec_init(&spec);
    DBK_CHECK_OK(dbk_mask_spec_parse("fisher:20%", &spec));
    spec.samples = 8;
    float *imp[2] = {NULL, NULL};
    size_t P = 0;
    for (int side = 0; side < 2; side++) { /* 0: the CPU, 1: the device */
        dbk_backend *be;
        dbk_session *s;
        DBK_CHECK_OK(dbk_backend_create(side ? device_kind : DBK_BACKEND_KIND_CPU, side ? device_index : 0, &be));
        DBK_CHECK_OK(make_session(&r, &small_model, 16, &spec, be, &s));
        P = dbk_session_param_count(s);
        imp[side] = dbk_malloc(P * 4);
        DBK_CHECK_OK(dbk_session_begin_epoch(s, 1, 9));
        dbk_mask_report rep = {0};
        dbk_mask_report_init(&rep, &spec, s);
        DBK_CHECK_OK(dbk_mask_begin_epoch(s, &spec, NULL, 9, 1, &rep));
        DBK_CHECK_OK(dbk_session_read_importance(s, imp[side]));
        if (side) { /* the device's selection and masked steps */
            const dbk_mask_layout *l = dbk_session_mask_layout(s);
            float *mask = dbk_malloc(P * 4);
            DBK_CHECK_OK(dbk_session_read_mask(s, mask));
            dbk_mask_pick *picks = dbk_malloc(l->selectable_count * sizeof *picks);
            size_t m = 0;
            for (int q = 0; q < l->range_count; q++)
                for (size_t j = 0; j < l->ranges[q].count; j++, m++)
                    picks[m] = (dbk_mask_pick){(int32_t)m, imp[1][l->ranges[q].offset + j]};
            qsort(picks, m, sizeof *picks, by_importance_desc);
            char *want = dbk_calloc(m, 1);
            for (size_t j = 0; j < l->select_count; j++) want[picks[j].index] = 1;
            size_t at = 0, wrong = 0;
            for (int q = 0; q < l->range_count; q++)
                for (size_t j = 0; j < l->ranges[q].count; j++, at++)
                    wrong += mask[l->ranges[q].offset + j] != (want[at] ? 1.0f : 0.0f);
            DBK_CHECK_MSG(wrong == 0, "%zu positions of the device's mask differ from the top-k of its importance",
                          wrong);
            char base[4200], trained[4200];
            snprintf(base, sizeof base, "%s/device-base.ckpt", tmp);
            snprintf(trained, sizeof trained, "%s/device-trained.ckpt", tmp);
            DBK_CHECK_OK(dbk_session_save(s, base, "{}"));
            for (int k = 0; k < 4; k++) DBK_CHECK_OK(dbk_session_train_step(s, k, 0.05f));
            DBK_CHECK_OK(dbk_session_save(s, trained, "{}"));
            size_t n0, n1;
            float *p0 = read_params(base, &n0), *p1 = read_params(trained, &n1);
            size_t *flat = flat_offsets(n0);
            DBK_CHECK(p0 && p1 && flat && n0 == n1);
            size_t changed_out = 0, changed_in = 0, in = 0;
            for (size_t j = 216; j < n0; j++) { /* past the frozen stem */
                const bool trains = mask[flat[j]] != 0.0f, moved = memcmp(&p0[j], &p1[j], 4) != 0;
                in += trains;
                changed_in += trains && moved;
                changed_out += !trains && moved;
            }
            printf("  device: mask = top-k of its importance; 4 steps: %zu of %zu trained parameters moved, %zu "
                   "masked-out ones changed\n", changed_in, in, changed_out);
            DBK_CHECK(changed_out == 0 && changed_in > in / 2);
            dbk_free(flat);
            dbk_free(p0);
            dbk_free(p1);
            dbk_free(want);
            dbk_free(picks);
            dbk_free(mask);
        }
        dbk_session_destroy(s);
        dbk_backend_destroy(be);
    }
    /* The parameters only: the flat buffer's alignment padding holds whatever the device left there. */
    const size_t n = 904;
    size_t *flat = flat_offsets(n);
    DBK_CHECK(flat && flat[n - 1] < P);
    double num = 0, den = 0;
    for (size_t j = 0; j < n; j++) {
        const double e = (double)imp[1][flat[j]] - (double)imp[0][flat[j]];
        num += e * e;
        den += (double)imp[0][flat[j]] * (double)imp[0][flat[j]];
    }
    dbk_free(flat);
    printf("  importance of 8 images on the device against the CPU: NMSE %.3g\n", den > 0 ? num / den : 1.0);
    DBK_CHECK(den > 0 && num / den < 1e-8);
    dbk_free(imp[0]);
    dbk_free(imp[1]);
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* small checkpoints                                                                   */

static int difference_should_round_trip_and_refuse_the_wrong_base(void) {
    const size_t P = 5000, S = 40;
    float *base = dbk_test_uniform((int64_t)(P + S), -1.0f, 1.0f, 1), *trained = dbk_malloc((P + S) * 4);
    memcpy(trained, base, (P + S) * 4);
    for (size_t j = 0; j < P; j += 97) trained[j] += 0.25f;
    base[3] = 0.0f;
    trained[3] = -0.0f;               /* equal as numbers, a change of bits: kept */
    for (size_t j = P; j < P + S; j++) trained[j] = (float)j;
    dbk_ckpt_diff d, back;
    DBK_CHECK_OK(dbk_ckpt_diff_make("fish-small", "{\"k\": 1}", base, base + P, trained, trained + P, P, S, &d));
    size_t expect = 0;
    for (size_t j = 0; j < P; j++) expect += memcmp(&base[j], &trained[j], 4) != 0;
    DBK_CHECK(d.changed == expect && expect >= P / 97);
    char path[4200];
    snprintf(path, sizeof path, "%s/round.diff", tmp);
    DBK_CHECK_OK(dbk_ckpt_diff_save(path, &d));
    DBK_CHECK_OK(dbk_ckpt_diff_load(path, &back));
    float *applied = dbk_malloc((P + S) * 4);
    memcpy(applied, base, (P + S) * 4);
    DBK_CHECK_OK(dbk_ckpt_diff_apply(&back, path, "fish-small", "base", applied, P, applied + P, S));
    DBK_CHECK(memcmp(applied, trained, (P + S) * 4) == 0);
    /* A file of exactly the documented size. */
    void *bytes;
    size_t n;
    DBK_CHECK_OK(dbk_file_read_all(path, &bytes, &n));
    DBK_CHECK(n == 60 + strlen("fish-small") + strlen("{\"k\": 1}") + 8 * d.changed + 4 * S);
    /* The trained model is not its base; nor is a base one bit away. */
    memcpy(applied, trained, (P + S) * 4);
    DBK_CHECK(dbk_ckpt_diff_apply(&back, path, "fish-small", "other.ckpt", applied, P, applied + P, S) ==
              DBK_ERR_INVALID_ARG);
    DBK_CHECK_MSG(strstr(dbk_last_error(), "not that base") && strstr(dbk_last_error(), "other.ckpt"), "%s",
                  dbk_last_error());
    DBK_CHECK(dbk_ckpt_diff_apply(&back, path, "resnet9", "b", base, P, base + P, S) == DBK_ERR_INVALID_ARG);
    DBK_CHECK(dbk_ckpt_diff_apply(&back, path, "fish-small", "b", base, P - 1, base + P, S) == DBK_ERR_INVALID_ARG);
    /* Damaged bytes: a flipped value (checksum), a cut, a wrong magic; each a format error. */
    unsigned char *b = bytes;
    dbk_ckpt_diff bad;
    b[n / 2] ^= 1;
    DBK_CHECK(dbk_ckpt_diff_parse(b, n, "flipped", &bad) == DBK_ERR_FORMAT);
    b[n / 2] ^= 1;
    DBK_CHECK(dbk_ckpt_diff_parse(b, n - 9, "cut", &bad) == DBK_ERR_FORMAT);
    b[0] = 'X';
    DBK_CHECK(dbk_ckpt_diff_parse(b, n, "magic", &bad) == DBK_ERR_FORMAT);
    DBK_CHECK_MSG(strstr(dbk_last_error(), "not a daybreak checkpoint difference"), "%s", dbk_last_error());
    dbk_free(bytes);
    dbk_ckpt_diff_deinit(&d);
    dbk_ckpt_diff_deinit(&back);
    free(base);
    dbk_free(trained);
    dbk_free(applied);
    return 0;
}

/* base.ckpt + model.diff of the Fisher run above evaluates exactly as its model.ckpt. */
static int base_and_difference_should_evaluate_as_the_trained_model(void) {
    const dbk_recipe *r;
    DBK_CHECK_OK(dbk_recipe_find("quick", &r));
    const dbk_model_def *model;
    DBK_CHECK_OK(dbk_model_find(r->model, &model));
    char base[4200], trained[4200], diff[4200];
    snprintf(base, sizeof base, "%s/fisher-base.ckpt", tmp);
    snprintf(trained, sizeof trained, "%s/fisher-model.ckpt", tmp);
    snprintf(diff, sizeof diff, "%s/fisher.diff", tmp);
    dbk_backend *be;
    DBK_CHECK_OK(dbk_backend_create(DBK_BACKEND_KIND_CPU, 0, &be));
    const dbk_session_config cfg = {.recipe = r, .model = model, .input = {3, 32, 32}, .num_classes = 10,
                                    .batch = 100, .eval_batch = 100, .test_count = test_set.count};
    dbk_session *s;
    DBK_CHECK_OK(dbk_session_create(be, &cfg, &s));
    DBK_CHECK_OK(dbk_session_upload_data(s, NULL, &test_set));
    DBK_CHECK_OK(dbk_session_load(s, trained));
    dbk_diff_summary sum;
    DBK_CHECK_OK(dbk_session_save_diff(s, base, diff, "{}", &sum));
    dbk_epoch_counters full, small;
    DBK_CHECK_OK(dbk_session_evaluate(s, &full));
    DBK_CHECK_OK(dbk_session_load(s, base));
    DBK_CHECK_OK(dbk_session_load_diff(s, base, diff));
    DBK_CHECK_OK(dbk_session_evaluate(s, &small));
    printf("  %llu of %llu parameters changed, %.0f bytes; full %.0f/%lld correct, base + difference %.0f, losses "
           "%.9g %.9g\n", (unsigned long long)sum.changed, (unsigned long long)sum.param_count, sum.bytes, full.correct,
           (long long)full.images, small.correct, full.loss_sum, small.loss_sum);
    DBK_CHECK(full.correct == small.correct && full.loss_sum == small.loss_sum);
    DBK_CHECK(sum.changed > 0 && sum.changed < sum.param_count / 10);
    /* The trained model is not the base this difference was made against. */
    DBK_CHECK_OK(dbk_session_load(s, trained));
    DBK_CHECK(dbk_session_load_diff(s, trained, diff) == DBK_ERR_INVALID_ARG);
    DBK_CHECK_MSG(strstr(dbk_last_error(), "not that base"), "%s", dbk_last_error());
    dbk_session_destroy(s);
    dbk_backend_destroy(be);
    return 0;
}

/* The accuracy and loss figures `eval` / `infer` print ("accuracy 12.34%", "loss 2.3456"). */
static double figure(const char *out, const char *key) {
    const char *p = strstr(out, key);
    return p ? atof(p + strlen(key)) : -1.0;
}

/* The command line: a tiny Fisher run with --checkpoint-diff; eval and infer of base.ckpt +
 * model.diff print model.ckpt's accuracy and loss; the wrong base is refused, exit 1. */
static int command_line_should_round_trip_the_difference(void) {
    static char out[4][1 << 14];
    char args[8192];
    snprintf(args, sizeof args, "train --backend cpu --train-subset 128 --test-subset 100 --batch 64 --epochs 1 --quiet "
             "--no-progress --sparse-mask fisher:10%% --mask-samples 4 --checkpoint-diff --out %s/cli", tmp);
    int rc = dbk_test_run_daybreak(exe, args, out[0], sizeof out[0]);
    DBK_CHECK_MSG(rc == 3, "train: exit %d\n%s", rc, out[0]);
    static const char *const cmds[4] = {"eval", "eval", "infer", "infer"};
    for (int i = 0; i < 4; i++) {
        const char *base = i % 2 ? "base.ckpt" : "model.ckpt";
        const int n = snprintf(args, sizeof args, "%s --backend cpu --test-subset %d --checkpoint %s/cli/%s", cmds[i],
                               i >= 2 ? 20 : 100, tmp, base); /* infer classifies one image at a time */
        if (i % 2) snprintf(args + n, sizeof args - (size_t)n, " --diff %s/cli/model.diff", tmp);
        if (i >= 2) snprintf(args + strlen(args), sizeof args - strlen(args), " --out %s/cli/infer%d.json", tmp, i);
        rc = dbk_test_run_daybreak(exe, args, out[i], sizeof out[i]);
        DBK_CHECK_MSG(rc == 0, "%s: exit %d\n%s", args, rc, out[i]);
    }
    const double acc[4] = {figure(out[0], "test accuracy "), figure(out[1], "test accuracy "),
                           figure(out[2], "top-1 accuracy "), figure(out[3], "top-1 accuracy ")};
    printf("  eval %.2f%% and %.2f%% (loss %.4f, %.4f); infer %.2f%% and %.2f%%\n", acc[0], acc[1],
           figure(out[0], "mean loss "), figure(out[1], "mean loss "), acc[2], acc[3]);
    DBK_CHECK(acc[0] >= 0 && acc[2] >= 0 && acc[0] == acc[1] && acc[2] == acc[3]);
    DBK_CHECK(figure(out[0], "mean loss ") == figure(out[1], "mean loss "));
    const int n = snprintf(args, sizeof args, "eval --backend cpu --test-subset 100 --checkpoint %s/cli/model.ckpt", tmp);
    snprintf(args + n, sizeof args - (size_t)n, " --diff %s/cli/model.diff", tmp);
    rc = dbk_test_run_daybreak(exe, args, out[0], sizeof out[0]);
    DBK_CHECK_MSG(rc == 1 && strstr(out[0], "it is not that base"), "wrong base: exit %d\n%s", rc, out[0]);
    return 0;
}

/* Whether dir/logs.tsv has a row for epoch. */
static bool has_epoch(const char *dir, int epoch) {
    char path[4400], row[16];
    snprintf(path, sizeof path, "%s/logs.tsv", dir);
    snprintf(row, sizeof row, "\n%d\t", epoch);
    void *data = NULL;
    size_t n;
    if (dbk_file_read_all(path, &data, &n) != DBK_OK) return false;
    const bool found = strstr(data, row) != NULL;
    dbk_free(data);
    return found;
}

static int wait_exit(pid_t pid) {
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static bool same_file(const char *a, const char *b) {
    void *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0;
    const bool same = dbk_file_read_all(a, &x, &nx) == DBK_OK && dbk_file_read_all(b, &y, &ny) == DBK_OK && nx == ny &&
                      memcmp(x, y, nx) == 0;
    dbk_free(x);
    dbk_free(y);
    return same;
}

/* A fixed Fisher mask after one dense epoch: the run stopped by SIGTERM during epoch 3 (the mask
 * computed at the start of epoch 2 is then only in resume.ckpt) and resumed ends with the
 * uninterrupted run's model.ckpt and model.diff, byte for byte. */
static int fixed_mask_should_resume_bit_for_bit(void) {
    static char out[1 << 14];
    char options[2048], ref[4200], cut[4200], cmd[16384];
    snprintf(options, sizeof options, "--backend cpu --train-subset 256 --test-subset 100 --batch 64 --epochs 3 "
             "--all-epochs --quiet --no-progress --sparse-mask fisher:5%% --fix-mask --mask-samples 16 "
             "--mask-warmup 1 --checkpoint-diff");
    snprintf(ref, sizeof ref, "%s/resume-ref", tmp);
    snprintf(cut, sizeof cut, "%s/resume-cut", tmp);
    snprintf(cmd, sizeof cmd, "train %s --out %s", options, ref);
    int rc = dbk_test_run_daybreak(exe, cmd, out, sizeof out);
    DBK_CHECK_MSG(rc == 3, "uninterrupted run: exit %d\n%s", rc, out);
    snprintf(cmd, sizeof cmd, "exec '%s' train %s --out '%s' > '%s.log' 2>&1", exe, options, cut, cut);
    const pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    const struct timespec tick = {0, 20 * 1000 * 1000};
    bool reached = false;
    for (int i = 0; i < 300 * 50 && !reached; i++) {
        reached = has_epoch(cut, 2);
        if (!reached && waitpid(pid, NULL, WNOHANG) == pid) break;
        if (!reached) nanosleep(&tick, NULL);
    }
    DBK_CHECK_MSG(reached, "the run to stop ended before epoch 2");
    kill(pid, SIGTERM);
    rc = wait_exit(pid);
    DBK_CHECK_MSG(rc == 143, "SIGTERM during epoch 3: exit %d, expected 143", rc);
    snprintf(cmd, sizeof cmd, "train --resume %s --quiet --no-progress", cut);
    rc = dbk_test_run_daybreak(exe, cmd, out, sizeof out);
    DBK_CHECK_MSG(rc == 3, "--resume: exit %d\n%s", rc, out);
    char a[4400], b[4400];
    for (int f = 0; f < 2; f++) {
        const char *file = f ? "model.diff" : "model.ckpt";
        snprintf(a, sizeof a, "%s/%s", ref, file);
        snprintf(b, sizeof b, "%s/%s", cut, file);
        DBK_CHECK_MSG(same_file(a, b), "%s of the resumed run differs from the uninterrupted run's", file);
    }
    printf("  stopped in epoch 3, resumed: model.ckpt and model.diff byte for byte the uninterrupted run's\n");
    return 0;
}

static int load_data(const char *cifar) {
    if (dbk_cifar10_load(cifar, DBK_CIFAR10_TRAIN, 256, &train_set) != DBK_OK ||
        dbk_cifar10_load(cifar, DBK_CIFAR10_TEST, 200, &test_set) != DBK_OK) {
        printf("cannot load CIFAR-10: %s\n", dbk_last_error());
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 2) {
        fprintf(stderr, "usage: test_sparse_mask [DAYBREAK | BACKEND]\n");
        return 2;
    }
    if (argc == 2 && strchr(argv[1], '/')) exe = argv[1];
    else if (argc == 2) { /* the pipeline on a device against the CPU */
        const int rc = dbk_test_resolve_backend(argv[1], &device_kind, &device_index);
        if (rc) return rc;
        const char *dir = dbk_test_backend_tmpdir("sparse-mask", argv[1], NULL);
        const char *cifar = dbk_test_cifar_dir();
        if (!dir) return 1;
        if (!cifar) return dbk_test_skip_or_fail_in_ci(DBK_TEST_NO_CIFAR);
        snprintf(tmp, sizeof tmp, "%s", dir);
        if (load_data(cifar)) return 1;
        DBK_RUN(device_mask_should_match_the_cpu);
        return dbk_test_finish();
    }
    DBK_RUN(spec_should_parse_fractions_and_refuse_the_rest);
    DBK_RUN(layout_should_leave_out_the_classifier_and_frozen_parameters);
    DBK_RUN(share_should_interleave_by_importance);
    const char *dir = dbk_test_tmpdir("sparse-mask");
    if (!dir) return 1;
    snprintf(tmp, sizeof tmp, "%s", dir);
    DBK_RUN(difference_should_round_trip_and_refuse_the_wrong_base);
    const char *cifar = dbk_test_cifar_dir();
    if (!cifar) {
        dbk_test_note_missing("the training cases", DBK_TEST_NO_CIFAR);
        return dbk_test_finish();
    }
    if (load_data(cifar)) return 1;
    DBK_RUN(fisher_mask_should_match_a_brute_force_reference);
    DBK_RUN(masked_out_parameters_should_not_change_with_a_recomputed_fisher_mask);
    DBK_RUN(masked_out_parameters_should_not_change_under_lookahead);
    DBK_RUN(base_and_difference_should_evaluate_as_the_trained_model);
    if (exe) DBK_RUN(command_line_should_round_trip_the_difference);
    if (exe) DBK_RUN(fixed_mask_should_resume_bit_for_bit);
    dbk_dataset_deinit(&train_set);
    dbk_dataset_deinit(&test_set);
    return dbk_test_finish();
}
