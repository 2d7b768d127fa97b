/*
 * session_step.c — assembling a session's programs (see session_impl.h).
 *
 *   training step  = augment, model forward, loss, accuracy, loss backward, model backward,
 *                    one optimizer update (SGD or AdamW) per parameter group
 *   evaluation     = normalise (augment without draws), model forward, loss, accuracy
 *   final (TTA)    = per view of the recipe's test-time augmentation: the view, the model
 *                    (same weights), the logits weighted into a sum; loss, accuracy of the sum
 *   lookahead      = the EMA of parameters and statistics, copied back (airbench94)
 *   Fisher         = a training step of one image without the update: its gradients
 *                    squared (or absolute) into the importance (sparse masks)
 *
 * Every value that changes from step to step is declared here on the graph with the rule
 * that computes it (dbk_graph_step_value): the augmentation state {first row, seed, epoch,
 * run seed} and the
 * learning rate of each parameter group (AdamW: with its bias corrections). The host computes them all into one small block and
 * writes it once per step; the loss and correct-count counters accumulate on the device, and
 * so does mixed precision's loss scaler (its state lives on the device: amp_view).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "train/session_impl.h"

/* ---------------------------------------------------------------------------------- */
/* per-step rules                                                                     */

/* airbench94's lookahead decay after run_step of run_steps steps, in fp32 as the source's
 * alpha_schedule tensor: base * (step / total)^power; 1 for the final update, which
 * dbk_session_lookahead_final asks for with run_steps 0 (params = ema). */
static void lookahead_decay_rule(const dbk_step_ctx *ctx, const double k[4], void *dst) {
    const float decay = dbk_recipe_lookahead_decay((float)k[0], (float)k[1], ctx->run_step, ctx->run_steps);
    memcpy(dst, &decay, sizeof decay);
}

/* The recipe's rule of group k[0] (its index in recipe.groups; -1: the defaults). */
static dbk_recipe_group rule_of(const dbk_recipe *r, double index) {
    return index >= 0 ? r->groups[(int)index] : dbk_recipe_group_rule(r, "");
}

/* A group's learning rate as dbk_recipe_group_step gives it for the step (the group k[0] at
 * batch k[1]; a group that stopped gets 0, which leaves SGD's parameters as they are), and
 * with a scheduled momentum that of the step: {lr} or {lr, momentum}. */
static void group_lr_rule(const dbk_step_ctx *ctx, const double k[4], void *dst) {
    const dbk_recipe *r = ctx->recipe;
    const dbk_recipe_group g = rule_of(r, k[0]);
    const dbk_group_step st = dbk_recipe_group_step(r, &g, (int)k[1], ctx->lr, ctx->run_step, ctx->steps_per_epoch);
    const float v[2] = {st.lr, dbk_recipe_momentum_at_step(r, ctx->run_step, ctx->steps_per_epoch, ctx->run_steps)};
    memcpy(dst, v, (dbk_recipe_momentum_scheduled(r) ? 2 : 1) * sizeof(float));
}

/* AdamW's step values {lr, step_size = lr / (1 - beta1^t), sqrt(1 - beta2^t)} for the 1-based
 * step t of the run (run_step + 1: a resumed run continues the count), and with a scheduled
 * beta1 (fastai's momentum) that beta1, which then also enters the bias correction as in
 * torch's Adam (group k[0] at batch k[1]). */
static void adamw_step_rule(const dbk_step_ctx *ctx, const double k[4], void *dst) {
    const dbk_recipe *r = ctx->recipe;
    const dbk_recipe_group g = rule_of(r, k[0]);
    const double lr = dbk_recipe_group_step(r, &g, (int)k[1], ctx->lr, ctx->run_step, ctx->steps_per_epoch).lr;
    const double beta1 = dbk_recipe_momentum_at_step(r, ctx->run_step, ctx->steps_per_epoch, ctx->run_steps);
    const double t = (double)ctx->run_step + 1;
    const float v[4] = {(float)lr, (float)(lr / (1.0 - pow(beta1, t))), (float)sqrt(1.0 - pow(r->adam_beta2, t)),
                        (float)beta1};
    memcpy(dst, v, (dbk_recipe_momentum_scheduled(r) ? 4 : 3) * sizeof(float));
}

/* Muon's step values for group k[0] at batch k[1]: its learning rate (k[2] = 0), the
 * renormalisation's gate (k[2] = 1: 1 on the steps that renormalise, 0 on the others), the
 * Newton-Schulz input's target norm (k[2] = 2), or 1 (k[2] = 3). */
static void muon_rule(const dbk_step_ctx *ctx, const double k[4], void *dst) {
    const dbk_recipe *r = ctx->recipe;
    float v = 1.0f;
    if (k[2] == 0.0) {
        const dbk_recipe_group g = rule_of(r, k[0]);
        v = dbk_recipe_group_step(r, &g, (int)k[1], ctx->lr, ctx->run_step, ctx->steps_per_epoch).lr;
    } else if (k[2] == 1.0) {
        v = dbk_recipe_muon_renorm_at(r, ctx->run_step, ctx->run_steps) ? 1.0f : 0.0f;
    } else if (k[2] == 2.0) {
        v = dbk_recipe_muon_ns_target(r, ctx->run_step, ctx->run_steps);
    }
    memcpy(dst, &v, sizeof v);
}

/* The index of group's rule in recipe.groups, -1 when the recipe has none (the defaults). */
static int rule_index(const dbk_recipe *r, const char *group) {
    for (int i = 0; i < r->group_count; i++)
        if (!strcmp(r->groups[i].name, group)) return i;
    return -1;
}

/* ---------------------------------------------------------------------------------- */

static dbk_tensor flat(dbk_buffer *b, dbk_dtype dt, int64_t n) { return dbk_tensor_make(b, 0, dt, 1, n, 1, 1, 1); }

/* Mixed precision: n floats from index i of the loss scaler's device state {S, 1/S, found,
 * clean, skipped, growths} (DBK_OP_AMP_UPDATE_SCALE), which the device keeps from step to step
 * so that no step reads its overflow flag back. */
enum { AMP_SCALE, AMP_INV_SCALE, AMP_FOUND };
static dbk_tensor amp_view(const dbk_session *s, int i, int64_t n) {
    return dbk_tensor_make(s->amp_state, (size_t)i * 4, DBK_DTYPE_F32, 1, n, 1, 1, 1);
}

/* The same view (offset, shape) of another buffer laid out like the parameters (momentum,
 * the sparse mask, the importance). */
static dbk_tensor with_buffer(dbk_tensor t, dbk_buffer *b) {
    t.buf = b;
    return t;
}

/* The augmentation state every augment op of a program reads. */
static dbk_tensor augment_state(dbk_graph *g) {
    const double none[4] = {0};
    return dbk_graph_step_value(g, "augment.state", DBK_DTYPE_I32, 4, dbk_graph_batch_state_rule, none);
}

/* Reads the batch from the resident dataset into x and labels; evaluation reads the view
 * (dy, dx, flip) of each test image. */
static void add_augment(dbk_session *s, dbk_graph *g, bool training, dbk_tensor state, const dbk_tta_view *view,
                        bool selected, dbk_tensor x, dbk_tensor labels) {
    const dbk_session_config *c = &s->cfg;
    if (dbk_graph_is_planning(g)) return;
    dbk_op_desc aug = {.op = DBK_OP_AUGMENT, .p.augment = c->recipe->augment};
    const int64_t ch = x.shape[1], h = x.shape[2], w = x.shape[3];
    if (!training || c->streamed) aug.p.augment.brightness = aug.p.augment.contrast = 0.0f; /* training draws */
    if (training && c->streamed) {
        /* The host cropped and flipped the batch (data/loader.h): normalise only. */
        aug.p.augment.train = false;
        aug.p.augment.flip_alternating = false;
        aug.src[0] = dbk_tensor_make(s->train_images, 0, DBK_DTYPE_U8, 4, x.shape[0], ch, h, w);
        aug.src[1] = flat(s->train_labels, DBK_DTYPE_U8, x.shape[0]);
    } else if (training) {
        aug.src[0] = dbk_tensor_make(s->train_images, 0, DBK_DTYPE_U8, 4, c->train_count, ch, h, w);
        aug.src[1] = flat(s->train_labels, DBK_DTYPE_U8, c->train_count);
        aug.src[2] = flat(s->indices, DBK_DTYPE_I32, (int64_t)c->train_count * dbk_session_passes(s));
    } else {
        aug.p.augment.train = false;
        aug.p.augment.flip_alternating = false;
        if (view) {
            aug.p.augment.view_dy = view->dy;
            aug.p.augment.view_dx = view->dx;
            aug.p.augment.view_flip = view->flip;
        }
        if (c->streamed_eval) { /* the host decoded the batch: its rows from 0 */
            aug.src[0] = dbk_tensor_make(s->eval_images, 0, DBK_DTYPE_U8, 4, x.shape[0], ch, h, w);
            aug.src[1] = flat(s->eval_zeros, DBK_DTYPE_U8, x.shape[0]);
        } else {
            aug.src[0] = dbk_tensor_make(s->test_images, 0, DBK_DTYPE_U8, 4, c->test_count, ch, h, w);
            aug.src[1] = flat(s->test_labels, DBK_DTYPE_U8, c->test_count);
            /* selective TTA: the batch's rows are the selected images (state.first into them) */
            if (selected) aug.src[2] = flat(s->tta_rows, DBK_DTYPE_I32, s->tta_k);
        }
    }
    aug.src[3] = state;
    aug.dst[0] = x;
    aug.dst[1] = labels;
    dbk_graph_forward(g, &aug, "augment");
}

/* Loss and accuracy into the graph's counters (an evaluation with config top5 also counts
 * top-5 hits on the device); in training also the loss backward, which is pushed last and so
 * runs first in the backward list. smoothing: the recipe's label smoothing, or 0 for the
 * Fisher information (FISH: the plain cross-entropy at the true label). */
static void add_loss(dbk_session *s, dbk_graph *g, int batch, dbk_value logits, dbk_tensor labels, float smoothing) {
    const dbk_recipe *r = s->cfg.recipe;
    const int64_t classes = logits.data.shape[1];
    dbk_tensor probs = dbk_graph_tensor(g, DBK_DTYPE_F32, 2, batch, classes, 1, 1);
    dbk_tensor loss_sum = dbk_graph_counter(g, "loss_sum");
    dbk_tensor correct = dbk_graph_counter(g, "correct");
    const bool top5 = s->cfg.top5 && !dbk_graph_is_training(g);
    dbk_tensor correct5 = top5 ? dbk_graph_counter(g, "correct5") : correct;
    if (dbk_graph_is_planning(g)) return;
    dbk_tensor z = logits.data, dz = logits.grad;
    z.ndim = 2;

    dbk_op_desc loss = {.op = DBK_OP_SOFTMAX_XENT_FWD, .p.xent.label_smoothing = smoothing};
    loss.src[0] = z;
    loss.src[1] = labels;
    loss.dst[0] = probs;
    loss.dst[1] = loss_sum;
    dbk_graph_forward(g, &loss, "loss");
    dbk_op_desc acc = {.op = DBK_OP_ACCURACY};
    acc.src[0] = z;
    acc.src[1] = labels;
    acc.dst[0] = correct;
    dbk_graph_forward(g, &acc, "accuracy");
    if (top5) {
        dbk_op_desc acc5 = {.op = DBK_OP_ACCURACY, .p.accuracy.k = 5};
        acc5.src[0] = z;
        acc5.src[1] = labels;
        acc5.dst[0] = correct5;
        dbk_graph_forward(g, &acc5, "accuracy top-5");
    }
    if (!dbk_graph_is_training(g)) return;

    dz.ndim = 2;
    if (s->cfg.fp16) { /* runs after loss.bwd (pushed before it): dlogits *= S */
        dbk_op_desc ls = {.op = DBK_OP_LOSS_SCALE};
        ls.src[0] = dz;
        ls.src[1] = amp_view(s, AMP_SCALE, 1);
        ls.dst[0] = dz;
        dbk_graph_backward(g, &ls, "amp.loss_scale");
    }
    dbk_op_desc lb = {.op = DBK_OP_SOFTMAX_XENT_BWD, .p.xent.label_smoothing = smoothing};
    const dbk_recipe_group defaults = dbk_recipe_group_rule(r, "");
    lb.p.xent.grad_scale = dbk_recipe_group_step(r, &defaults, batch, 0.0, 0, 1).grad_scale;
    lb.src[0] = probs;
    lb.src[1] = labels;
    lb.dst[0] = dz;
    dbk_graph_backward(g, &lb, "loss.bwd");
}

/* One AdamW update of parameter group i: its step values (lr, bias corrections) are one
 * per-step value; lr and weight decay are never scaled by the batch (Adam's step does not
 * depend on the loss's scale). */
static void add_adamw(dbk_session *s, dbk_graph *g, int i, int batch, bool stopped) {
    const dbk_recipe *r = s->cfg.recipe;
    const char *group = dbk_graph_group_name(g, i);
    char name[48], label[48];
    snprintf(name, sizeof name, group[0] ? "adamw.%s" : "adamw", group);
    const int index = rule_index(r, group);
    const double k[4] = {index, batch, 0, 0};
    const int count = dbk_recipe_momentum_scheduled(r) ? 4 : 3;
    dbk_tensor step = dbk_graph_step_value(g, name, DBK_DTYPE_F32, count, adamw_step_rule, k);
    if (dbk_graph_is_planning(g) || stopped) return;
    const dbk_recipe_group rule = rule_of(r, index);
    const float wd = dbk_recipe_group_step(r, &rule, batch, 0.0, 0, 1).weight_decay;
    dbk_op_desc op = {.op = DBK_OP_ADAMW_UPDATE, .p.adamw = {r->adam_beta1, r->adam_beta2, r->adam_eps, wd}};
    op.src[0] = dbk_graph_group_grads(g, i);
    op.src[1] = step;
    if (s->cfg.fp16) op.src[3] = amp_view(s, AMP_FOUND, 1);   /* skipped on an inf/NaN gradient */
    op.dst[0] = dbk_graph_group_params(g, i);
    op.dst[1] = op.dst[0];
    op.dst[1].buf = s->momentum;
    op.dst[2] = op.dst[0];
    op.dst[2].buf = s->exp_avg_sq;
    if (s->mask) op.src[2] = with_buffer(op.dst[0], s->mask);
    snprintf(label, sizeof label, "%s", name);
    dbk_graph_update(g, &op, label);
}

/* ---------------------------------------------------------------------------------- */
/* Muon                                                                               */

static dbk_tensor view2(dbk_tensor t, int64_t rows, int64_t cols) {
    t.ndim = 2;
    t.shape[0] = rows;
    t.shape[1] = cols;
    t.shape[2] = t.shape[3] = 1;
    return t;
}

/* Appends one update op (counted among the program's update ops). */
static void update_op(dbk_session_program *p, const dbk_op_desc *op, const char *label) {
    dbk_graph_update(p->graph, op, label);
    p->update_count++;
}

/* out = alpha * op(a) op(b) + beta * out. */
static void gemm(dbk_session_program *p, dbk_tensor a, bool ta, dbk_tensor b, bool tb, float alpha, float beta,
                 dbk_tensor out, const char *label) {
    dbk_op_desc op = {.op = DBK_OP_GEMM, .p.gemm = {ta, tb, alpha, beta}};
    op.src[0] = a;
    op.src[1] = b;
    op.dst[0] = out;
    update_op(p, &op, label);
}

static void scale(dbk_session_program *p, dbk_tensor x, float alpha, dbk_tensor out, const char *label) {
    dbk_op_desc op = {.op = DBK_OP_SCALE, .p.scale = {alpha}};
    op.src[0] = x;
    op.dst[0] = out;
    update_op(p, &op, label);
}

static void norm_scale(dbk_session_program *p, dbk_tensor x, dbk_tensor g, float alpha, float eps, dbk_tensor out,
                       const char *label) {
    dbk_op_desc op = {.op = DBK_OP_NORM_SCALE, .p.norm_scale = {alpha, eps}};
    op.src[0] = x;
    op.src[1] = g;
    op.dst[0] = out;
    update_op(p, &op, label);
}

/* One Muon update of a (K, C, R, S) filter at float offset `offset` of the flat buffers, as a
 * (K, C*R*S) matrix G (recipe.h dbk_muon_params): momentum, renormalisation, Newton-Schulz
 * (ns_steps of A = X X^T, B = b A + c A A, X = a X + B X, as GEMM and SCALE ops; on X^T when K
 * exceeds C*R*S), the step. Scratch tensors are arena tensors, declared in both passes. */
static void add_muon_filter(dbk_session *s, dbk_session_program *p, const dbk_param_info *pi, const dbk_tensor v[4],
                            float weight_decay) {
    dbk_graph *g = p->graph;
    const dbk_muon_params *m = &s->cfg.recipe->muon;
    const int64_t rows = pi->shape[0], cols = pi->shape[1] * pi->shape[2] * pi->shape[3];
    const bool wide = rows <= cols;            /* A = X X^T (rows x rows), else X^T X */
    const int64_t side = wide ? rows : cols;
    dbk_tensor u = dbk_graph_tensor(g, DBK_DTYPE_F32, 2, rows, cols, 1, 1);
    dbk_tensor x2 = dbk_graph_tensor(g, DBK_DTYPE_F32, 2, rows, cols, 1, 1);
    dbk_tensor a = dbk_graph_tensor(g, DBK_DTYPE_F32, 2, side, side, 1, 1);
    dbk_tensor b = dbk_graph_tensor(g, DBK_DTYPE_F32, 2, side, side, 1, 1);
    if (dbk_graph_is_planning(g)) return;
    char label[64];
    const size_t off = pi->offset * 4;
    dbk_tensor grad = view2(dbk_tensor_make(s->grads, off, DBK_DTYPE_F32, 1, rows * cols, 1, 1, 1), rows, cols);
    dbk_tensor param = grad, mom = grad;
    param.buf = s->params;
    mom.buf = s->momentum;

    dbk_op_desc mo = {.op = DBK_OP_MUON_MOMENTUM, .p.muon_momentum = {m->momentum, m->nesterov ? 1.0f : 0.0f}};
    mo.src[0] = grad;
    mo.dst[0] = mom;
    mo.dst[1] = u;
    snprintf(label, sizeof label, "muon.%.40s", pi->name);
    update_op(p, &mo, label);
    /* the weights to norm sqrt(K) on the steps that renormalise (before the step, as the source) */
    norm_scale(p, param, v[1], sqrtf((float)rows), m->renorm_eps, param, "muon.renorm");
    if (m->ns_target > 0.0f) norm_scale(p, u, v[2], 1.0f, m->ns_pre_eps, u, "muon.ns.target");
    norm_scale(p, u, v[3], 1.0f, m->ns_eps, u, "muon.ns.normalise");
    dbk_tensor x = u, next = x2;
    for (int i = 0; i < m->ns_steps; i++) {
        if (wide) gemm(p, x, false, x, true, 1.0f, 0.0f, a, "muon.ns.A");   /* A = X X^T */
        else gemm(p, x, true, x, false, 1.0f, 0.0f, a, "muon.ns.A");        /* A = X^T X */
        scale(p, a, m->ns_b, b, "muon.ns.B");                               /* B = b A */
        gemm(p, a, false, a, false, m->ns_c, 1.0f, b, "muon.ns.B");         /* B += c A A */
        scale(p, x, m->ns_a, next, "muon.ns.X");                            /* X' = a X */
        if (wide) gemm(p, b, false, x, false, 1.0f, 1.0f, next, "muon.ns.X"); /* X' += B X */
        else gemm(p, x, false, b, false, 1.0f, 1.0f, next, "muon.ns.X");      /* X' += X B (B symmetric) */
        const dbk_tensor t = x;
        x = next;
        next = t;
    }
    dbk_op_desc up = {.op = DBK_OP_MUON_UPDATE, .p.muon_update = {weight_decay}};
    up.src[0] = x;
    up.src[1] = v[0];
    up.dst[0] = param;
    update_op(p, &up, "muon.step");
}

/* Muon over every filter of group i: its step values (lr, the renormalisation's gate, the
 * Newton-Schulz target, 1), then one update per tensor. */
static void add_muon(dbk_session *s, dbk_session_program *p, int i, bool stopped) {
    dbk_graph *g = p->graph;
    const dbk_recipe *r = s->cfg.recipe;
    const char *group = dbk_graph_group_name(g, i);
    const int index = rule_index(r, group);
    static const char *const what[4] = {"lr", "renorm", "ns_target", "one"};
    dbk_tensor v[4];
    for (int k = 0; k < 4; k++) {
        char name[48];
        snprintf(name, sizeof name, "muon.%s.%.24s", what[k], group);
        const double kk[4] = {index, p->batch, k, 0};
        v[k] = dbk_graph_step_value(g, name, DBK_DTYPE_F32, 1, muon_rule, kk);
    }
    if (stopped) return;
    const dbk_recipe_group rule = rule_of(r, index);
    const float wd = dbk_recipe_group_step(r, &rule, p->batch, 0.0, 0, 1).weight_decay;
    for (int k = 0; k < dbk_graph_param_info_count(g); k++) {
        const dbk_param_info *pi = dbk_graph_param_info(g, k);
        if (pi->group == i) add_muon_filter(s, p, pi, v, wd);
    }
}

/* Mixed precision: every trained group's gradients divided by S and checked for inf/NaN into
 * the scaler state's found flag, before the optimizer, whose ops skip on it (these ops stay in
 * the training program with the update, so a distributed exchange would follow them). */
static void add_grad_unscale(dbk_session *s, dbk_graph *g) {
    if (dbk_graph_is_planning(g)) return;
    for (int i = 0; i < dbk_graph_group_count(g); i++) {
        if (dbk_graph_group_frozen(g, i)) continue;
        dbk_op_desc op = {.op = DBK_OP_GRAD_UNSCALE};
        op.src[0] = amp_view(s, AMP_INV_SCALE, 1);
        op.dst[0] = dbk_graph_group_grads(g, i);
        op.dst[1] = amp_view(s, AMP_FOUND, 1);
        dbk_graph_update(g, &op, "amp.grad_unscale");
    }
}

/* Mixed precision, after the update: the scaler's state machine on the device (S halved on an
 * overflow, doubled after growth_interval clean steps; the flag cleared). */
static void add_scale_update(dbk_session *s, dbk_session_program *p) {
    if (dbk_graph_is_planning(p->graph)) return;
    dbk_op_desc op = {.op = DBK_OP_AMP_UPDATE_SCALE, .p.amp.growth_interval = (float)s->scaler.growth_interval};
    op.dst[0] = amp_view(s, AMP_SCALE, DBK_SESSION_AMP_STATE);
    dbk_graph_update(p->graph, &op, "amp.update_scale");
    p->update_count++;
}

/* One optimizer update per parameter group (none for the frozen group): SGD with its learning
 * rate as a per-step value, or AdamW. */
static void add_optimizer(dbk_session *s, dbk_session_program *p) {
    dbk_graph *g = p->graph;
    const int batch = p->batch;
    const dbk_recipe *r = s->cfg.recipe;
    p->update_count = 0;
    if (s->cfg.fp16) add_grad_unscale(s, g);
    for (int i = 0; i < dbk_graph_group_count(g); i++) {
        const char *group = dbk_graph_group_name(g, i);
        if (!strcmp(group, DBK_GRAPH_GROUP_FROZEN)) continue;
        /* the default group of a model that puts every parameter in a named one (both passes) */
        const dbk_tensor members = dbk_graph_group_params(g, i);
        if (dbk_tensor_numel(&members) == 0) continue;
        /* A group frozen in this graph only (its training stopped) keeps its step value, so
         * that both training steps lay out their values, and counters, alike; no update. */
        const bool stopped = dbk_graph_group_frozen(g, i);
        const int index = rule_index(r, group);
        const dbk_recipe_group rule = rule_of(r, index);
        if (rule.muon) {
            add_muon(s, p, i, stopped);
            continue;
        }
        if (r->optimizer == DBK_OPTIMIZER_ADAMW) {
            add_adamw(s, g, i, batch, stopped);
            if (!dbk_graph_is_planning(g) && !stopped) p->update_count++;
            continue;
        }
        char name[48], label[48];
        snprintf(name, sizeof name, group[0] ? "lr.%s" : "lr", group);
        snprintf(label, sizeof label, group[0] ? "sgd.%s" : "sgd", group);
        const double k[4] = {index, batch, 0, 0};
        const int count = dbk_recipe_momentum_scheduled(r) ? 2 : 1; /* {lr} or {lr, momentum} */
        dbk_tensor lr = dbk_graph_step_value(g, name, DBK_DTYPE_F32, count, group_lr_rule, k);
        if (dbk_graph_is_planning(g) || stopped) continue;
        dbk_op_desc sgd = {.op = DBK_OP_SGD_MOMENTUM_UPDATE, .p.sgd = {.momentum = r->momentum, .nesterov = r->nesterov}};
        sgd.p.sgd.weight_decay = dbk_recipe_group_step(r, &rule, batch, 0.0, 0, 1).weight_decay;
        sgd.src[0] = dbk_graph_group_grads(g, i);
        sgd.src[1] = lr;
        if (s->cfg.fp16) sgd.src[3] = amp_view(s, AMP_FOUND, 1);   /* skipped on an inf/NaN gradient */
        sgd.dst[0] = dbk_graph_group_params(g, i);
        sgd.dst[1] = sgd.dst[0];
        sgd.dst[1].buf = s->momentum;
        if (s->mask) sgd.src[2] = with_buffer(sgd.dst[0], s->mask);
        dbk_graph_update(g, &sgd, label);
        p->update_count++;
    }
    if (s->cfg.fp16) add_scale_update(s, p);
}

/* The Fisher program's end: every trained group's gradients of the one image, squared or
 * absolute, added into the importance (FISH's calculate_the_importance_label). */
static void add_fisher(dbk_session *s, dbk_graph *g) {
    if (dbk_graph_is_planning(g)) return;
    for (int i = 0; i < dbk_graph_group_count(g); i++) {
        if (dbk_graph_group_frozen(g, i)) continue;
        dbk_op_desc op = {.op = DBK_OP_FISHER_ACCUMULATE, .p.fisher.absolute = s->mask_spec.absolute ? 1.0f : 0.0f};
        op.src[0] = dbk_graph_group_grads(g, i);
        op.dst[0] = with_buffer(dbk_graph_group_params(g, i), s->importance);
        dbk_graph_update(g, &op, "fisher.accumulate");
    }
}

/* Lookahead (airbench94's LookaheadState.update) over every parameter and every batch-norm
 * statistic: one op per flat buffer, its decay a per-step value. */
static dbk_status lay_out_lookahead(dbk_session *s, dbk_session_program *p) {
    dbk_graph *g = p->graph;
    const dbk_recipe *r = s->cfg.recipe;
    const double k[4] = {(double)r->lookahead_base, (double)r->lookahead_power, 0, 0};
    dbk_tensor decay = dbk_graph_step_value(g, "lookahead.decay", DBK_DTYPE_F32, 1, lookahead_decay_rule, k);
    DBK_TRY(dbk_graph_status(g));
    if (dbk_graph_is_planning(g)) return DBK_OK;
    const size_t counts[2] = {dbk_graph_param_count(s->eval.graph), dbk_graph_state_count(s->eval.graph)};
    dbk_buffer *ema[2] = {s->ema_params, s->ema_state}, *live[2] = {s->params, s->state};
    const char *labels[2] = {"lookahead.params", "lookahead.statistics"};
    for (int i = 0; i < 2; i++) {
        if (!counts[i]) continue;
        dbk_op_desc op = {.op = DBK_OP_LOOKAHEAD};
        op.src[0] = decay;
        op.dst[0] = flat(ema[i], DBK_DTYPE_F32, (int64_t)counts[i]);
        op.dst[1] = flat(live[i], DBK_DTYPE_F32, (int64_t)counts[i]);
        dbk_graph_update(g, &op, labels[i]);
    }
    p->ops = dbk_graph_program(g, &p->count);
    return p->ops ? DBK_OK : DBK_ERR_OUT_OF_HOST_MEMORY;
}

/* Test-time augmentation: the model applied to every view with the same weights, the logits
 * summed with the views' weights into one (N, classes) tensor; selected: of the selective
 * TTA's rows. */
static dbk_value add_tta_forward(dbk_session *s, dbk_graph *g, int batch, dbk_tensor state, bool selected,
                                 dbk_tensor labels) {
    const dbk_session_config *c = &s->cfg;
    const dbk_tta_view *views;
    const int n = dbk_tta_views(c->recipe->tta_level, &views);
    dbk_value sum = {.data = dbk_graph_tensor(g, DBK_DTYPE_F32, 4, batch, c->num_classes, 1, 1)};
    for (int v = 0; v < n; v++) {
        char label[48];
        if (v) dbk_graph_reuse_params(g);
        dbk_value x = dbk_graph_value(g, false, batch, c->input.channels, c->input.height, c->input.width);
        add_augment(s, g, false, state, &views[v], selected, x.data, labels);
        dbk_value z = dbk_model_forward(g, c->model, x, c->num_classes);
        if (dbk_graph_is_planning(g)) continue;
        snprintf(label, sizeof label, "tta.view%d", v);
        dbk_op_desc w = {.op = DBK_OP_SCALE, .p.scale.alpha = views[v].weight};
        w.src[0] = z.data;
        w.dst[0] = v ? z.data : sum.data;
        dbk_graph_forward(g, &w, label);
        if (!v) continue;
        dbk_op_desc add = {.op = DBK_OP_ADD};
        add.src[0] = sum.data;
        add.src[1] = z.data;
        add.dst[0] = sum.data;
        dbk_graph_forward(g, &add, label);
    }
    return sum;
}

/* The test set's logits table of selective TTA as an (M, classes) tensor. */
static dbk_tensor tta_table(const dbk_session *s) {
    return dbk_tensor_make(s->tta_table, 0, DBK_DTYPE_F32, 2, s->cfg.test_count, s->cfg.num_classes, 1, 1);
}

/* rows (N, classes) into the table at the batch's rows, or through the selected rows. */
static void add_scatter(dbk_session *s, dbk_graph *g, dbk_tensor rows, dbk_tensor state, bool selected) {
    dbk_op_desc op = {.op = DBK_OP_SCATTER_ROWS};
    rows.ndim = 2;
    op.src[0] = rows;
    if (selected) op.src[1] = flat(s->tta_rows, DBK_DTYPE_I32, s->tta_k);
    op.src[2] = state;
    op.dst[0] = tta_table(s);
    dbk_graph_forward(g, &op, selected ? "tta.scatter" : "logits.scatter");
}

/* The evaluation programs' per-step layout without their ops: the augment state and the
 * counters, in add_loss's order (selective TTA's select and selected programs count nothing). */
static void eval_layout(dbk_session *s, dbk_graph *g) {
    (void)augment_state(g);
    (void)dbk_graph_counter(g, "loss_sum");
    (void)dbk_graph_counter(g, "correct");
    if (s->cfg.top5) (void)dbk_graph_counter(g, "correct5");
}

/* Selective TTA's programs: the least confident rows of the table; their views' mean logits
 * into the table; the table's loss and accuracy (src/train/session_run.c runs them in turn). */
static dbk_status lay_out_selective(dbk_session *s, dbk_session_program *p) {
    dbk_graph *g = p->graph;
    if (p->kind == DBK_SESSION_PROGRAM_TTA_SCORE) {
        (void)augment_state(g);
        dbk_value logits = {.data = tta_table(s)}; /* shapes only while planning */
        add_loss(s, g, s->cfg.test_count, logits, flat(s->test_labels_i32, DBK_DTYPE_I32, s->cfg.test_count),
                 s->cfg.recipe->label_smoothing);
    } else if (p->kind == DBK_SESSION_PROGRAM_TTA_SELECT) {
        eval_layout(s, g);
        if (!dbk_graph_is_planning(g) && s->tta_k > 0) {
            dbk_op_desc op = {.op = DBK_OP_CONFIDENCE_SELECT};
            op.src[0] = tta_table(s);
            op.dst[0] = flat(s->tta_rows, DBK_DTYPE_I32, s->tta_k);
            op.dst[1] = flat(s->tta_work, DBK_DTYPE_F32, s->cfg.test_count);
            dbk_graph_forward(g, &op, "tta.select");
        }
    } else { /* TTA_SELECTED */
        dbk_tensor labels = dbk_graph_tensor(g, DBK_DTYPE_I32, 1, p->batch, 1, 1, 1);
        dbk_tensor state = augment_state(g);
        dbk_value sum = add_tta_forward(s, g, p->batch, state, true, labels);
        (void)dbk_graph_counter(g, "loss_sum");
        (void)dbk_graph_counter(g, "correct");
        if (s->cfg.top5) (void)dbk_graph_counter(g, "correct5");
        if (!dbk_graph_is_planning(g)) add_scatter(s, g, sum.data, state, true);
    }
    DBK_TRY(dbk_graph_status(g));
    if (dbk_graph_is_planning(g)) return DBK_OK;
    p->ops = dbk_graph_program(g, &p->count);
    return p->ops ? DBK_OK : DBK_ERR_OUT_OF_HOST_MEMORY;
}

dbk_status dbk_session_lay_out(dbk_session *s, dbk_session_program *p) {
    dbk_graph *g = p->graph;
    const dbk_session_config *c = &s->cfg;
    const dbk_session_program_kind kind = p->kind;
    const bool fisher = kind == DBK_SESSION_PROGRAM_FISHER, training = kind == DBK_SESSION_PROGRAM_TRAIN || fisher;
    if (kind == DBK_SESSION_PROGRAM_LOOKAHEAD) return lay_out_lookahead(s, p);
    if (kind == DBK_SESSION_PROGRAM_TTA_SELECT || kind == DBK_SESSION_PROGRAM_TTA_SELECTED ||
        kind == DBK_SESSION_PROGRAM_TTA_SCORE)
        return lay_out_selective(s, p);
    dbk_tensor labels = dbk_graph_tensor(g, DBK_DTYPE_I32, 1, p->batch, 1, 1, 1);
    dbk_tensor state = augment_state(g);
    dbk_value logits;
    if (kind == DBK_SESSION_PROGRAM_TTA) {
        logits = add_tta_forward(s, g, p->batch, state, false, labels);
    } else {
        dbk_value x = dbk_graph_value(g, false, p->batch, c->input.channels, c->input.height, c->input.width);
        add_augment(s, g, training, state, NULL, false, x.data, labels);
        logits = dbk_model_forward(g, c->model, x, c->num_classes);
        /* Streamed: the augment op's labels are zeros; the host wrote the real ones. */
        if (training && c->streamed) labels = flat(s->batch_labels, DBK_DTYPE_I32, p->batch);
    }
    if (!training && c->streamed_eval) labels = flat(s->eval_batch_labels, DBK_DTYPE_I32, p->batch);
    add_loss(s, g, p->batch, logits, labels, fisher ? 0.0f : c->recipe->label_smoothing);
    /* selective TTA's plain pass: every evaluation batch's logits into the table */
    if (kind == DBK_SESSION_PROGRAM_EVAL && s->tta_score.graph && !dbk_graph_is_planning(g))
        add_scatter(s, g, logits.data, state, false);
    if (fisher) add_fisher(s, g);
    else if (training) add_optimizer(s, p);
    DBK_TRY(dbk_graph_status(g));
    if (dbk_graph_is_planning(g)) return DBK_OK;
    p->ops = dbk_graph_program(g, &p->count);
    return p->ops ? DBK_OK : DBK_ERR_OUT_OF_HOST_MEMORY;
}
