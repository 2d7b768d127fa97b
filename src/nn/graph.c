/*
 * graph.c — the two-pass graph builder and the layer builders (see graph.h).
 *
 * Backward bookkeeping: every layer pushes its backward ops when it is built, so pushing
 * happens in forward order; dbk_graph_backward_ops returns them reversed. A layer whose
 * backward takes several ops pushes them in reverse of the order they must run.
 */
#include "nn/graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

#define ARENA_ALIGN 256

typedef struct op_list {
    dbk_op_desc *ops;
    char       (*labels)[64];
    int          count, cap;
} op_list;

#define MAX_GROUPS 16

typedef struct param_group {
    char   name[32];
    size_t base;                     /* first float of the group in params (build pass) */
    size_t count;                    /* floats, padding included */
} param_group;

struct dbk_graph {
    dbk_graph_config cfg;
    bool             planning;
    dbk_status       status;
    dbk_graph_buffers bufs;
    size_t           n_params, n_state, arena_bytes;
    dbk_param_info  *param_infos;
    int              n_param_infos, cap_param_infos;
    dbk_state_info  *state_infos;
    int              n_state_infos, cap_state_infos;
    param_group      groups[MAX_GROUPS];
    size_t           planned_group_count[MAX_GROUPS];  /* sizes the planning pass found */
    int              n_groups, group;                  /* groups seen; the current one */
    dbk_step_value_info *steps;
    int              n_steps, cap_steps;
    size_t           step_host_bytes, step_counter_bytes;
    size_t           planned_step_host_bytes;          /* where counters start in the build pass */
    bool             reusing;                          /* layers take the parameters declared so far */
    int              reuse_param, reuse_state;         /* the next ones they take */
    op_list          fwd, bwd, upd;
    dbk_op_desc     *bwd_ordered;    /* bwd reversed, rebuilt on request */
    dbk_op_desc     *program;        /* fwd + bwd (ordered) + upd, rebuilt on request */
};

dbk_status dbk_graph_create(const dbk_graph_config *cfg, dbk_graph **out) {
    dbk_graph *g = dbk_calloc(1, sizeof *g);
    if (!g) return DBK_ERR_OUT_OF_HOST_MEMORY;
    g->cfg = *cfg;
    g->planning = true;
    *out = g;
    return DBK_OK;
}

static void op_list_free(op_list *l) {
    dbk_free(l->ops);
    dbk_free(l->labels);
    memset(l, 0, sizeof *l);
}

void dbk_graph_destroy(dbk_graph *g) {
    if (!g) return;
    op_list_free(&g->fwd);
    op_list_free(&g->bwd);
    op_list_free(&g->upd);
    dbk_free(g->bwd_ordered);
    dbk_free(g->program);
    dbk_free(g->steps);
    dbk_free(g->param_infos);
    dbk_free(g->state_infos);
    dbk_free(g);
}

static void reset_pass(dbk_graph *g) {
    g->n_params = g->n_state = g->arena_bytes = 0;
    g->n_param_infos = g->n_state_infos = 0;
    g->n_groups = g->group = 0;
    g->n_steps = 0;
    g->step_host_bytes = g->step_counter_bytes = 0;
    g->fwd.count = g->bwd.count = g->upd.count = 0;
    g->reusing = false;
    g->reuse_param = g->reuse_state = 0;
    g->status = DBK_OK;
}

void dbk_graph_begin_build(dbk_graph *g, const dbk_graph_buffers *bufs) {
    /* Keep what the planning pass measured: group sizes place each group contiguously, and
     * the host-written step values come before the counters. */
    for (int i = 0; i < g->n_groups; i++) g->planned_group_count[i] = g->groups[i].count;
    g->planned_step_host_bytes = g->step_host_bytes;
    reset_pass(g);
    g->planning = false;
    g->bufs = *bufs;
}

bool dbk_graph_is_planning(const dbk_graph *g) { return g->planning; }
bool dbk_graph_is_training(const dbk_graph *g) { return g->cfg.training; }
size_t dbk_graph_param_count(const dbk_graph *g) { return g->n_params; }
size_t dbk_graph_state_count(const dbk_graph *g) { return g->n_state; }
size_t dbk_graph_arena_bytes(const dbk_graph *g) { return g->arena_bytes; }
int dbk_graph_param_info_count(const dbk_graph *g) { return g->n_param_infos; }
const dbk_param_info *dbk_graph_param_info(const dbk_graph *g, int i) { return &g->param_infos[i]; }
int dbk_graph_state_info_count(const dbk_graph *g) { return g->n_state_infos; }
const dbk_state_info *dbk_graph_state_info(const dbk_graph *g, int i) { return &g->state_infos[i]; }
int dbk_graph_forward_count(const dbk_graph *g) { return g->fwd.count; }
const dbk_op_desc *dbk_graph_forward_ops(const dbk_graph *g) { return g->fwd.ops; }
int dbk_graph_backward_count(const dbk_graph *g) { return g->bwd.count; }
int dbk_graph_group_count(const dbk_graph *g) { return g->n_groups; }
const char *dbk_graph_group_name(const dbk_graph *g, int group) { return g->groups[group].name; }
bool dbk_graph_group_frozen(const dbk_graph *g, int group) {
    return !strcmp(g->groups[group].name, DBK_GRAPH_GROUP_FROZEN) ||
           (g->cfg.frozen_group && !strcmp(g->groups[group].name, g->cfg.frozen_group));
}
size_t dbk_graph_step_bytes(const dbk_graph *g) { return g->step_host_bytes + g->step_counter_bytes; }
size_t dbk_graph_step_host_bytes(const dbk_graph *g) { return g->step_host_bytes; }
int dbk_graph_step_value_count(const dbk_graph *g) { return g->n_steps; }
const dbk_step_value_info *dbk_graph_step_value_at(const dbk_graph *g, int i) { return &g->steps[i]; }
dbk_status dbk_graph_status(const dbk_graph *g) { return g->status; }

const dbk_op_desc *dbk_graph_backward_ops(const dbk_graph *g) {
    dbk_graph *mg = (dbk_graph *)(uintptr_t)g; /* the ordered copy is a cache of bwd */
    dbk_free(mg->bwd_ordered);
    mg->bwd_ordered = dbk_malloc(sizeof(dbk_op_desc) * (size_t)(g->bwd.count ? g->bwd.count : 1));
    if (!mg->bwd_ordered) return NULL;
    for (int i = 0; i < g->bwd.count; i++) mg->bwd_ordered[i] = g->bwd.ops[g->bwd.count - 1 - i];
    return mg->bwd_ordered;
}

/* ---------------------------------------------------------------------------------- */

static void fail(dbk_graph *g, dbk_status s) {
    if (g->status == DBK_OK) g->status = s;
}

static bool grow(void **p, int *cap, int need, size_t elem) {
    if (need <= *cap) return true;
    int ncap = *cap ? *cap * 2 : 64;
    while (ncap < need) ncap *= 2;
    void *np = dbk_malloc((size_t)ncap * elem);
    if (!np) return false;
    if (*p) memcpy(np, *p, (size_t)*cap * elem);
    dbk_free(*p);
    *p = np;
    *cap = ncap;
    return true;
}

static void push(dbk_graph *g, op_list *l, const dbk_op_desc *op, const char *label) {
    if (g->planning) return;
    int cap = l->cap;
    if (!grow((void **)&l->ops, &cap, l->count + 1, sizeof *l->ops)) return fail(g, DBK_ERR_OUT_OF_HOST_MEMORY);
    cap = l->cap;
    if (!grow((void **)&l->labels, &cap, l->count + 1, sizeof *l->labels)) return fail(g, DBK_ERR_OUT_OF_HOST_MEMORY);
    l->cap = cap;
    /* Re-point the labels of earlier ops: the label array may have moved. */
    for (int i = 0; i < l->count; i++) l->ops[i].label = l->labels[i];
    l->ops[l->count] = *op;
    snprintf(l->labels[l->count], sizeof l->labels[0], "%s", label ? label : dbk_op_name(op->op));
    l->ops[l->count].label = l->labels[l->count];
    l->count++;
}

void dbk_graph_forward(dbk_graph *g, const dbk_op_desc *op, const char *label) { push(g, &g->fwd, op, label); }
void dbk_graph_backward(dbk_graph *g, const dbk_op_desc *op, const char *label) { push(g, &g->bwd, op, label); }
void dbk_graph_update(dbk_graph *g, const dbk_op_desc *op, const char *label) { push(g, &g->upd, op, label); }

/* memcpy of count ops; an empty list may have no array at all (memcpy from NULL is undefined
 * even for 0 bytes, which UBSan reports). */
static void copy_ops(dbk_op_desc *dst, const dbk_op_desc *src, int count) {
    if (count > 0) memcpy(dst, src, sizeof *dst * (size_t)count);
}

dbk_op_desc *dbk_graph_program(dbk_graph *g, int *count) {
    const dbk_op_desc *bwd = dbk_graph_backward_ops(g);
    const int n = g->fwd.count + g->bwd.count + g->upd.count;
    dbk_free(g->program);
    g->program = bwd ? dbk_malloc(sizeof *g->program * (size_t)(n ? n : 1)) : NULL;
    *count = g->program ? n : 0;
    if (!g->program) return NULL;
    /* Labels stay pointers into the lists' label arrays, which live as long as the graph. */
    copy_ops(g->program, g->fwd.ops, g->fwd.count);
    copy_ops(g->program + g->fwd.count, bwd, g->bwd.count);
    copy_ops(g->program + g->fwd.count + g->bwd.count, g->upd.ops, g->upd.count);
    return g->program;
}

/* ---------------------------------------------------------------------------------- */
/* parameter groups and per-step values                                               */

void dbk_graph_set_group(dbk_graph *g, const char *name) {
    const char *n = name ? name : "";
    for (int i = 0; i < g->n_groups; i++) {
        if (!strcmp(g->groups[i].name, n)) {
            g->group = i;
            return;
        }
    }
    if (g->n_groups == MAX_GROUPS || strlen(n) >= sizeof g->groups[0].name) {
        fail(g, dbk_set_error(DBK_ERR_INVALID_ARG, "graph: parameter group '%s': at most %d groups of names "
                                                   "below %zu characters", n, MAX_GROUPS, sizeof g->groups[0].name));
        return;
    }
    param_group *pg = &g->groups[g->n_groups];
    memset(pg, 0, sizeof *pg);
    snprintf(pg->name, sizeof pg->name, "%s", n);
    /* In the build pass the group starts where the planned sizes of earlier groups end. */
    if (!g->planning)
        for (int i = 0; i < g->n_groups; i++) pg->base += g->planned_group_count[i];
    g->group = g->n_groups++;
}

static dbk_tensor flat_view(dbk_buffer *b, size_t first, size_t count) {
    return dbk_tensor_make(b, first * 4, DBK_DTYPE_F32, 1, (int64_t)count, 1, 1, 1);
}

dbk_tensor dbk_graph_group_params(const dbk_graph *g, int group) {
    return flat_view(g->bufs.params, g->groups[group].base, g->groups[group].count);
}

dbk_tensor dbk_graph_group_grads(const dbk_graph *g, int group) {
    return flat_view(g->bufs.grads, g->groups[group].base, g->groups[group].count);
}

const dbk_step_value_info *dbk_graph_step_value_find(const dbk_graph *g, const char *name) {
    for (int i = 0; i < g->n_steps; i++)
        if (!strcmp(g->steps[i].name, name)) return &g->steps[i];
    return NULL;
}

/* Host values and counters are two regions, each 16-byte aligned per value; in the build
 * pass the counters start where the planning pass's host values ended. */
static dbk_tensor add_step(dbk_graph *g, const char *name, dbk_dtype dtype, int64_t count, dbk_step_rule rule,
                           const double k[4]) {
    if (dbk_graph_step_value_find(g, name) || strlen(name) >= sizeof g->steps[0].name) {
        fail(g, dbk_set_error(DBK_ERR_INVALID_ARG, "graph: per-step value '%s' is declared twice or its name is too long",
                              name));
        return (dbk_tensor){0};
    }
    if (!grow((void **)&g->steps, &g->cap_steps, g->n_steps + 1, sizeof *g->steps)) {
        fail(g, DBK_ERR_OUT_OF_HOST_MEMORY);
        return (dbk_tensor){0};
    }
    dbk_step_value_info *v = &g->steps[g->n_steps++];
    memset(v, 0, sizeof *v);
    snprintf(v->name, sizeof v->name, "%s", name);
    v->dtype = dtype;
    v->count = count;
    v->rule = rule;
    if (k) memcpy(v->k, k, sizeof v->k);
    size_t bytes = ((size_t)count * dbk_dtype_size(dtype) + 15) / 16 * 16;
    if (rule) {
        v->offset = g->step_host_bytes;
        g->step_host_bytes += bytes;
    } else {
        v->offset = (g->planning ? 0 : g->planned_step_host_bytes) + g->step_counter_bytes;
        g->step_counter_bytes += bytes;
    }
    return dbk_tensor_make(g->bufs.steps, v->offset, dtype, 1, count, 1, 1, 1);
}

dbk_tensor dbk_graph_step_value(dbk_graph *g, const char *name, dbk_dtype dtype, int64_t count, dbk_step_rule rule,
                                const double k[4]) {
    DBK_ASSERT(rule);
    return add_step(g, name, dtype, count, rule, k);
}

dbk_tensor dbk_graph_counter(dbk_graph *g, const char *name) {
    return add_step(g, name, DBK_DTYPE_F32, 1, NULL, NULL);
}

void dbk_graph_fill_step(const dbk_graph *g, const dbk_step_ctx *ctx, void *host) {
    for (int i = 0; i < g->n_steps; i++) {
        const dbk_step_value_info *v = &g->steps[i];
        if (v->rule) v->rule(ctx, v->k, (char *)host + v->offset);
    }
}

dbk_tensor dbk_graph_tensor(dbk_graph *g, dbk_dtype dtype, int ndim, int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    dbk_tensor t = dbk_tensor_make(g->bufs.arena, g->arena_bytes, dtype, ndim, d0, d1, d2, d3);
    g->arena_bytes += (dbk_tensor_nbytes(&t) + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
    return t;
}

dbk_value dbk_graph_value(dbk_graph *g, bool want_grad, int64_t n, int64_t c, int64_t h, int64_t w) {
    dbk_value v = {0};
    v.data = dbk_graph_tensor(g, DBK_DTYPE_F32, 4, n, c, h, w);
    if (want_grad && g->cfg.training) v.grad = dbk_graph_tensor(g, DBK_DTYPE_F32, 4, n, c, h, w);
    return v;
}

/* A trainable tensor: a view into params (data) and into grads (gradient). */
void dbk_graph_reuse_params(dbk_graph *g) {
    if (g->cfg.training) {
        fail(g, dbk_set_error(DBK_ERR_INVALID_ARG, "graph: parameters can be reused only in an evaluation graph "
                                                   "(backward ops overwrite gradients, they do not add)"));
        return;
    }
    g->reusing = true;
    g->reuse_param = g->reuse_state = 0;
}

static dbk_tensor view_of(dbk_buffer *b, size_t offset_floats, int ndim, const int64_t *shape) {
    return dbk_tensor_make(b, offset_floats * 4, DBK_DTYPE_F32, ndim, shape[0], ndim > 1 ? shape[1] : 1,
                           ndim > 2 ? shape[2] : 1, ndim > 3 ? shape[3] : 1);
}

/* In reuse mode: the next declared parameter, which must be the one asked for. */
static bool reuse_param(dbk_graph *g, const char *name, int ndim, const int64_t *shape, dbk_tensor *data,
                        dbk_tensor *grad) {
    const dbk_param_info *pi = g->reuse_param < g->n_param_infos ? &g->param_infos[g->reuse_param++] : NULL;
    bool same = pi && !strcmp(pi->name, name) && pi->ndim == ndim;
    for (int i = 0; same && i < ndim; i++) same = pi->shape[i] == shape[i];
    if (!same) {
        fail(g, dbk_set_error(DBK_ERR_INVALID_ARG, "graph: reused parameters differ at '%s'", name));
        return false;
    }
    *data = view_of(g->bufs.params, pi->offset, ndim, shape);
    *grad = (dbk_tensor){0};
    return true;
}

static void add_param(dbk_graph *g, const char *prefix, const char *suffix, dbk_param_init init, int64_t fan_in,
                      int ndim, const int64_t *shape, dbk_tensor *data, dbk_tensor *grad) {
    if (g->reusing) {
        char name[sizeof g->param_infos[0].name];
        snprintf(name, sizeof name, "%s.%s", prefix, suffix);
        if (!reuse_param(g, name, ndim, shape, data, grad)) *data = *grad = (dbk_tensor){0};
        return;
    }
    if (!grow((void **)&g->param_infos, &g->cap_param_infos, g->n_param_infos + 1, sizeof *g->param_infos))
        return fail(g, DBK_ERR_OUT_OF_HOST_MEMORY);
    dbk_param_info *pi = &g->param_infos[g->n_param_infos++];
    memset(pi, 0, sizeof *pi);
    snprintf(pi->name, sizeof pi->name, "%s.%s", prefix, suffix);
    pi->ndim = ndim;
    int64_t count = 1;
    for (int i = 0; i < ndim; i++) {
        pi->shape[i] = shape[i];
        count *= shape[i];
    }
    if (g->n_groups == 0) dbk_graph_set_group(g, "");
    param_group *pg = &g->groups[g->group];
    pi->group = g->group;
    pi->offset = pg->base + pg->count;
    pi->init = init;
    pi->fan_in = fan_in;
    /* Keep every parameter 16-float aligned so device kernels may use vector loads. */
    const size_t padded = (size_t)((count + 15) / 16 * 16);
    pg->count += padded;
    g->n_params += padded;
    *data = dbk_tensor_make(g->bufs.params, pi->offset * 4, DBK_DTYPE_F32, ndim, shape[0], ndim > 1 ? shape[1] : 1,
                            ndim > 2 ? shape[2] : 1, ndim > 3 ? shape[3] : 1);
    *grad = *data;
    grad->buf = g->bufs.grads;
    if (dbk_graph_group_frozen(g, g->group)) *grad = (dbk_tensor){0};
}

static dbk_tensor add_state(dbk_graph *g, const char *prefix, const char *suffix, int64_t count, float init) {
    if (g->reusing) {
        const dbk_state_info *si = g->reuse_state < g->n_state_infos ? &g->state_infos[g->reuse_state++] : NULL;
        char name[sizeof g->state_infos[0].name];
        snprintf(name, sizeof name, "%s.%s", prefix, suffix);
        if (!si || strcmp(si->name, name) || si->count != count) {
            fail(g, dbk_set_error(DBK_ERR_INVALID_ARG, "graph: reused statistics differ at '%s'", name));
            return (dbk_tensor){0};
        }
        return dbk_tensor_make(g->bufs.state, si->offset * 4, DBK_DTYPE_F32, 1, count, 1, 1, 1);
    }
    if (!grow((void **)&g->state_infos, &g->cap_state_infos, g->n_state_infos + 1, sizeof *g->state_infos)) {
        fail(g, DBK_ERR_OUT_OF_HOST_MEMORY);
        return (dbk_tensor){0};
    }
    dbk_state_info *si = &g->state_infos[g->n_state_infos++];
    snprintf(si->name, sizeof si->name, "%s.%s", prefix, suffix);
    si->count = count;
    si->offset = g->n_state;
    si->init = init;
    g->n_state += (size_t)((count + 15) / 16 * 16);
    return dbk_tensor_make(g->bufs.state, si->offset * 4, DBK_DTYPE_F32, 1, count, 1, 1, 1);
}

static char *label_of(char *buf, size_t cap, const char *name, const char *what) {
    snprintf(buf, cap, "%s.%s", name, what);
    return buf;
}

/* ---------------------------------------------------------------------------------- */
/* layers                                                                             */

/* Runs add_param in group (NULL = the current one) and switches back. */
static void add_param_in(dbk_graph *g, const char *group, const char *prefix, const char *suffix, dbk_param_init init,
                         int64_t fan_in, int ndim, const int64_t *shape, dbk_tensor *data, dbk_tensor *grad) {
    const int current = g->n_groups ? g->group : -1;
    if (group) dbk_graph_set_group(g, group);
    add_param(g, prefix, suffix, init, fan_in, ndim, shape, data, grad);
    if (group) dbk_graph_set_group(g, current >= 0 ? g->groups[current].name : "");
}

dbk_value dbk_nn_conv(dbk_graph *g, dbk_value x, int64_t k, int r, int stride, int pad, const char *name) {
    const dbk_conv_options o = {.r = r, .stride = stride, .pad = pad, .init = DBK_PARAM_INIT_KAIMING_UNIFORM};
    return dbk_nn_conv_ex(g, x, k, &o, name);
}

/* y += bias per channel (DBK_OP_BIAS_ADD, in place): the bias of a conv or linear layer. */
static void forward_bias(dbk_graph *g, dbk_value y, dbk_tensor bias, const char *name) {
    char lb[96];
    dbk_op_desc ba = {.op = DBK_OP_BIAS_ADD};
    ba.src[0] = y.data;
    ba.src[1] = bias;  /* (K) */
    ba.dst[0] = y.data;
    dbk_graph_forward(g, &ba, label_of(lb, sizeof lb, name, "bias"));
}

/* dbias = sum of dy over all but the channel (DBK_OP_CHANNEL_SUM); none for a frozen or
 * absent bias (dbias.ndim == 0). */
static void backward_bias(dbk_graph *g, dbk_value y, dbk_tensor dbias, const char *name) {
    char lb[96];
    if (!dbias.ndim) return;
    dbk_op_desc bb = {.op = DBK_OP_CHANNEL_SUM};
    bb.src[0] = y.grad;
    bb.dst[0] = dbias;
    dbk_graph_backward(g, &bb, label_of(lb, sizeof lb, name, "bias.bwd"));
}

/* Mixed precision (cfg.fp16): an f16 copy of t in the arena, made by a cast appended to the
 * forward list. Convolutions and GEMMs read these copies; the copy of their input is what
 * they keep for the backward pass, as batch norm keeps one of its input and ReLU of its
 * output. */
static dbk_tensor f16_copy(dbk_graph *g, dbk_tensor t, const char *name, const char *what) {
    char lb[96];
    dbk_tensor h = dbk_graph_tensor(g, DBK_DTYPE_F16, t.ndim, t.shape[0], t.shape[1], t.shape[2], t.shape[3]);
    dbk_op_desc op = {.op = DBK_OP_CAST_F32_F16};
    op.src[0] = t;
    op.dst[0] = h;
    dbk_graph_forward(g, &op, label_of(lb, sizeof lb, name, what));
    return h;
}

/* The backward cast of a gradient into its f16 tensor (declared before the ops that read it,
 * pushed after them so that it runs first). */
static void cast_into(dbk_graph *g, dbk_tensor grad, dbk_tensor h, const char *label) {
    dbk_op_desc op = {.op = DBK_OP_CAST_F32_F16};
    op.src[0] = grad;
    op.dst[0] = h;
    dbk_graph_backward(g, &op, label);
}

dbk_value dbk_nn_conv_ex(dbk_graph *g, dbk_value x, int64_t k, const dbk_conv_options *o, const char *name) {
    char lb[96];
    const int r = o->r, stride = o->stride, pad = o->pad;
    int64_t n = x.data.shape[0], c = x.data.shape[1], h = x.data.shape[2], w = x.data.shape[3];
    int64_t p = (h + 2 * pad - r) / stride + 1, q = (w + 2 * pad - r) / stride + 1;
    const int64_t wshape[4] = {k, c, r, r};
    dbk_tensor wt = {0}, dw = {0};
    add_param_in(g, o->weight_group, name, "weight", o->init, c * r * r, 4, wshape, &wt, &dw);
    dbk_tensor bias = {0}, dbias = {0};
    if (o->bias) {
        const int64_t bshape[1] = {k};
        add_param_in(g, o->bias_group, name, "bias", o->bias_uniform ? DBK_PARAM_INIT_KAIMING_UNIFORM : DBK_PARAM_INIT_ZEROS,
                     c * r * r, 1, bshape, &bias, &dbias);
    }
    /* The output needs a gradient only when something upstream trains: x, the weight or the
     * bias (airbench's whitening conv once its bias stops: nothing at all). */
    dbk_value y = dbk_graph_value(g, x.grad.ndim || dw.ndim || dbias.ndim, n, k, p, q);

    /* the operands: f32, or their f16 copies in mixed precision (x's own when it has one) */
    const bool half = g->cfg.fp16;
    const dbk_tensor xo = !half ? x.data : x.half.ndim ? x.half : f16_copy(g, x.data, name, "x.f16");
    const dbk_tensor wo = half ? f16_copy(g, wt, name, "weight.f16") : wt;
    dbk_op_desc op = {.op = DBK_OP_CONV2D_FWD, .p.conv = {stride, stride, pad, pad}};
    op.src[0] = xo;      /* (N,C,H,W) */
    op.src[1] = wo;      /* (K,C,R,S) */
    op.dst[0] = y.data;  /* (N,K,P,Q) */
    dbk_graph_forward(g, &op, name);
    if (o->bias) forward_bias(g, y, bias, name);
    if (!g->cfg.training) return y;

    /* Backward runs the bias gradient, (the f16 copy of dy,) then bwd_filter, then bwd_data:
     * pushed in reverse. A frozen weight or bias gets no gradient op. */
    dbk_tensor dyo = y.grad;
    if (half) dyo = dbk_graph_tensor(g, DBK_DTYPE_F16, 4, n, k, p, q);
    if (x.grad.ndim) {
        dbk_op_desc bd = {.op = DBK_OP_CONV2D_BWD_DATA, .p.conv = op.p.conv};
        bd.src[0] = dyo;
        bd.src[1] = wo;
        bd.dst[0] = x.grad;
        dbk_graph_backward(g, &bd, label_of(lb, sizeof lb, name, "bwd_data"));
    }
    if (dw.ndim) { /* not a frozen weight */
        dbk_op_desc bf = {.op = DBK_OP_CONV2D_BWD_FILTER, .p.conv = op.p.conv};
        bf.src[0] = xo;
        bf.src[1] = dyo;
        bf.dst[0] = dw;
        dbk_graph_backward(g, &bf, label_of(lb, sizeof lb, name, "bwd_filter"));
    }
    if (half) cast_into(g, y.grad, dyo, label_of(lb, sizeof lb, name, "dy.f16"));
    backward_bias(g, y, dbias, name);
    return y;
}

dbk_value dbk_nn_batchnorm(dbk_graph *g, dbk_value x, const char *name) {
    const dbk_batchnorm_options o = {0};
    return dbk_nn_batchnorm_ex(g, x, &o, name);
}

dbk_value dbk_nn_batchnorm_ex(dbk_graph *g, dbk_value x, const dbk_batchnorm_options *o, const char *name) {
    char lb[96];
    int64_t c = x.data.shape[1];
    const int64_t vshape[1] = {c};
    dbk_tensor gamma, dgamma, beta, dbeta;
    add_param_in(g, o->weight_group, name, "weight", o->weight_zero ? DBK_PARAM_INIT_ZEROS : DBK_PARAM_INIT_ONES, 0, 1,
                 vshape, &gamma, &dgamma);
    add_param_in(g, o->bias_group, name, "bias", DBK_PARAM_INIT_ZEROS, 0, 1, vshape, &beta, &dbeta);
    dbk_tensor rmean = add_state(g, name, "running_mean", c, 0.0f);
    dbk_tensor rvar = add_state(g, name, "running_var", c, 1.0f);
    dbk_value y = dbk_graph_value(g, true, x.data.shape[0], c, x.data.shape[2], x.data.shape[3]);

    if (!g->cfg.training) {
        dbk_op_desc op = {.op = DBK_OP_BATCHNORM_FWD_INFER, .p.bn = g->cfg.bn};
        op.src[0] = x.data;
        op.src[1] = gamma;
        op.src[2] = beta;
        op.src[3] = rmean;
        op.src[4] = rvar;
        op.dst[0] = y.data;
        dbk_graph_forward(g, &op, name);
        return y;
    }
    dbk_tensor mean = dbk_graph_tensor(g, DBK_DTYPE_F32, 1, c, 1, 1, 1);
    dbk_tensor invstd = dbk_graph_tensor(g, DBK_DTYPE_F32, 1, c, 1, 1, 1);
    dbk_op_desc op = {.op = DBK_OP_BATCHNORM_FWD_TRAIN, .p.bn = g->cfg.bn};
    op.src[0] = x.data;
    op.src[1] = gamma;
    op.src[2] = beta;
    op.dst[0] = y.data;
    op.dst[1] = mean;
    op.dst[2] = invstd;
    op.dst[3] = rmean;
    op.dst[4] = rvar;
    dbk_graph_forward(g, &op, name);

    /* The op always writes the input's gradient too; an input that needs none (a frozen
     * convolution of the images) gets it in scratch. */
    const dbk_tensor dx = x.grad.ndim ? x.grad
                                      : dbk_graph_tensor(g, DBK_DTYPE_F32, 4, x.data.shape[0], c, x.data.shape[2],
                                                         x.data.shape[3]);
    /* Mixed precision: the backward pass reads x from an f16 copy, so the f32 x (the
     * convolution's result) lives only through the forward pass. */
    dbk_tensor xs = x.data;
    if (g->cfg.fp16) xs = x.half.ndim ? x.half : f16_copy(g, x.data, name, "x.f16");
    /* The op always writes both parameter gradients; a frozen one goes to scratch. */
    if (!dgamma.ndim) dgamma = dbk_graph_tensor(g, DBK_DTYPE_F32, 1, c, 1, 1, 1);
    if (!dbeta.ndim) dbeta = dbk_graph_tensor(g, DBK_DTYPE_F32, 1, c, 1, 1, 1);
    dbk_op_desc b = {.op = DBK_OP_BATCHNORM_BWD, .p.bn = g->cfg.bn};
    b.src[0] = xs;
    b.src[1] = y.grad;
    b.src[2] = gamma;
    b.src[3] = mean;
    b.src[4] = invstd;
    b.dst[0] = dx;
    b.dst[1] = dgamma;
    b.dst[2] = dbeta;
    dbk_graph_backward(g, &b, label_of(lb, sizeof lb, name, "bwd"));
    return y;
}

static bool same_tensor(const dbk_tensor *a, const dbk_tensor *b) {
    return a->buf == b->buf && a->offset == b->offset && a->dtype == b->dtype && a->ndim == b->ndim &&
           !memcmp(a->shape, b->shape, sizeof a->shape);
}

/* Appends suffix to an op's label (a 64-byte entry of op_list.labels) where it fits. */
static void label_append(char *label, const char *suffix) {
    const size_t n = strlen(label), k = strlen(suffix);
    if (n + k < sizeof ((op_list *)0)->labels[0]) memcpy(label + n, suffix, k + 1);
}

/* Fusion (docs/fusion.md): a ReLU on the output of the training batch norm built just before
 * turns that batch norm's forward and backward ops into DBK_OP_BATCHNORM_RELU_FWD_TRAIN and
 * _BWD, which clamp y and mask dy in the batch norm's own passes (y and dy each cross memory
 * once less each way). f32 only. Returns false, changing nothing, where the pattern is not
 * there (and in the planning pass, which records no ops: the ReLU allocates nothing, so both
 * passes plan the same). */
static bool fuse_batchnorm_relu(dbk_graph *g, dbk_value x) {
    /* Not in fp16 mode: there the ReLU backward reads the f16 copy of the output (the copy the
     * next convolution takes), so the f32 output need not live until the backward pass. */
    if (g->cfg.no_fusion || g->cfg.fp16 || !g->cfg.training || !g->fwd.count || !g->bwd.count ||
        x.data.dtype != DBK_DTYPE_F32)
        return false;
    dbk_op_desc *f = &g->fwd.ops[g->fwd.count - 1], *b = &g->bwd.ops[g->bwd.count - 1];
    if (f->op != DBK_OP_BATCHNORM_FWD_TRAIN || !same_tensor(&f->dst[0], &x.data)) return false;
    if (b->op != DBK_OP_BATCHNORM_BWD || !same_tensor(&b->src[1], &x.grad)) return false;
    f->op = DBK_OP_BATCHNORM_RELU_FWD_TRAIN;
    b->op = DBK_OP_BATCHNORM_RELU_BWD;
    b->src[5] = x.data; /* the fused forward's output: ReLU's mask */
    label_append(g->fwd.labels[g->fwd.count - 1], "+relu");
    label_append(g->bwd.labels[g->bwd.count - 1], "+relu");
    return true;
}

/* Fusion of ResNet-18/50's add (docs/fusion.md): a ReLU on y = skip + o, where the add is the
 * last forward op and o the output of the training batch norm just before it, becomes
 * DBK_OP_BATCHNORM_ADD_RELU_FWD_TRAIN writing y; backward, the add's copies of dy (the last
 * backward ops) go: the batch norm's backward becomes DBK_OP_BATCHNORM_RELU_BWD reading y's
 * gradient with y as the mask, and skip's gradient is RELU_BWD's output instead of a copy.
 * o and its gradient are never written. Returns false, changing nothing, where the pattern is
 * not there (and in the planning pass, which records no ops). */
static bool fuse_add_relu(dbk_graph *g, dbk_value x) {
    if (g->cfg.no_fusion || g->cfg.fp16 || !g->cfg.training || g->fwd.count < 2 || !x.grad.ndim ||
        x.data.dtype != DBK_DTYPE_F32)
        return false;
    dbk_op_desc *add = &g->fwd.ops[g->fwd.count - 1], *f = &g->fwd.ops[g->fwd.count - 2];
    if (add->op != DBK_OP_ADD || !same_tensor(&add->dst[0], &x.data) || f->op != DBK_OP_BATCHNORM_FWD_TRAIN ||
        same_tensor(&add->src[0], &add->src[1]))
        return false;
    const int side = same_tensor(&add->src[0], &f->dst[0]) ? 0 : same_tensor(&add->src[1], &f->dst[0]) ? 1 : -1;
    if (side < 0) return false;
    /* the add's copies of dy, then (before them) the batch norm's backward */
    int copies = 0;
    while (copies < 2 && copies < g->bwd.count - 1) {
        const dbk_op_desc *c = &g->bwd.ops[g->bwd.count - 1 - copies];
        if (c->op != DBK_OP_COPY || !same_tensor(&c->src[0], &x.grad)) break;
        copies++;
    }
    dbk_op_desc *b = &g->bwd.ops[g->bwd.count - 1 - copies];
    if (!copies || b->op != DBK_OP_BATCHNORM_BWD || b->src[0].dtype != DBK_DTYPE_F32) return false;
    int to_bn = -1, to_skip = -1;   /* the copies into o's gradient and skip's */
    for (int i = 0; i < copies; i++) {
        const int at = g->bwd.count - 1 - i;
        if (same_tensor(&g->bwd.ops[at].dst[0], &b->src[1])) to_bn = at;
        else to_skip = at;
    }
    if (to_bn < 0) return false;

    f->op = DBK_OP_BATCHNORM_ADD_RELU_FWD_TRAIN;
    f->src[3] = add->src[1 - side];
    f->dst[0] = x.data;
    label_append(g->fwd.labels[g->fwd.count - 2], "+add+relu");
    g->fwd.count--;   /* the add */
    b->op = DBK_OP_BATCHNORM_RELU_BWD;
    b->src[1] = x.grad;
    b->src[5] = x.data; /* the fused forward's output: ReLU's mask */
    label_append(g->bwd.labels[g->bwd.count - 1 - copies], "+add+relu");
    dbk_op_desc skip_grad = {.op = DBK_OP_RELU_BWD};
    char label[sizeof g->bwd.labels[0]] = "";
    if (to_skip >= 0) {
        skip_grad.src[0] = x.data;
        skip_grad.src[1] = x.grad;
        skip_grad.dst[0] = g->bwd.ops[to_skip].dst[0];
        snprintf(label, sizeof label, "%s", g->bwd.labels[to_skip]);
        label_append(label, "+relu");
    }
    g->bwd.count -= copies;
    if (to_skip >= 0) dbk_graph_backward(g, &skip_grad, label);
    return true;
}

dbk_value dbk_nn_relu(dbk_graph *g, dbk_value x) {
    if (fuse_add_relu(g, x) || fuse_batchnorm_relu(g, x)) return x;
    dbk_op_desc op = {.op = DBK_OP_RELU_FWD};
    op.src[0] = x.data;
    op.dst[0] = x.data;
    dbk_graph_forward(g, &op, "relu");
    x.half = (dbk_tensor){0};   /* data changed in place */
    if (g->cfg.training && x.grad.ndim) {
        /* Mixed precision: the backward pass reads the sign of an f16 copy of the output,
         * the copy the next convolution takes too. */
        if (g->cfg.fp16) x.half = f16_copy(g, x.data, "relu", "y.f16");
        dbk_op_desc b = {.op = DBK_OP_RELU_BWD};
        b.src[0] = g->cfg.fp16 ? x.half : x.data; /* the forward output, computed in place */
        b.src[1] = x.grad;
        b.dst[0] = x.grad;
        dbk_graph_backward(g, &b, "relu.bwd");
    }
    return x;
}

/* An activation whose backward reads its input: op fwd (x -> a new y), op bwd (x, dy -> dx). */
static dbk_value input_activation(dbk_graph *g, dbk_value x, dbk_op fwd, dbk_op bwd, const char *name) {
    char lb[96];
    dbk_value y = dbk_graph_value(g, x.grad.ndim != 0, x.data.shape[0], x.data.shape[1], x.data.shape[2],
                                  x.data.shape[3]);
    dbk_op_desc op = {.op = fwd};
    op.src[0] = x.data;
    op.dst[0] = y.data;
    dbk_graph_forward(g, &op, name);
    if (g->cfg.training && x.grad.ndim) {
        dbk_op_desc b = {.op = bwd};
        b.src[0] = x.data; /* the forward input: GELU's and SiLU's derivatives depend on it */
        b.src[1] = y.grad;
        b.dst[0] = x.grad;
        dbk_graph_backward(g, &b, label_of(lb, sizeof lb, name, "bwd"));
    }
    return y;
}

dbk_value dbk_nn_gelu(dbk_graph *g, dbk_value x, const char *name) {
    return input_activation(g, x, DBK_OP_GELU_FWD, DBK_OP_GELU_BWD, name);
}

dbk_value dbk_nn_silu(dbk_graph *g, dbk_value x, const char *name) {
    return input_activation(g, x, DBK_OP_SILU_FWD, DBK_OP_SILU_BWD, name);
}

/* Fusion of the max pool (docs/fusion.md): a 2x2, stride-2 max pool of the fused batch norm +
 * ReLU built just before (its forward and backward the last ops, so nothing else reads its
 * output or writes that output's gradient) turns those into DBK_OP_BATCHNORM_RELU_POOL_FWD_TRAIN
 * writing the pooled y, and _BWD reading y's gradient: the full-size output and its gradient
 * are never written, no argmax is kept, and the backward finds each window's winner again from
 * the batch norm's input. Returns false, changing nothing, where the pattern is not there (and
 * in the planning pass: y and the argmax are allocated either way, so both passes plan the
 * same). */
static bool fuse_maxpool(dbk_graph *g, dbk_value x, const dbk_value *y, const dbk_pool_params *pp) {
    if (g->cfg.no_fusion || !g->cfg.training || !g->fwd.count || !g->bwd.count || !x.grad.ndim ||
        pp->size_h != 2 || pp->size_w != 2 || pp->stride_h != 2 || pp->stride_w != 2 || pp->pad_h || pp->pad_w)
        return false;
    dbk_op_desc *f = &g->fwd.ops[g->fwd.count - 1], *b = &g->bwd.ops[g->bwd.count - 1];
    if (f->op != DBK_OP_BATCHNORM_RELU_FWD_TRAIN || !same_tensor(&f->dst[0], &x.data)) return false;
    if (b->op != DBK_OP_BATCHNORM_RELU_BWD || !same_tensor(&b->src[1], &x.grad)) return false;
    f->op = DBK_OP_BATCHNORM_RELU_POOL_FWD_TRAIN;
    f->dst[0] = y->data;
    b->op = DBK_OP_BATCHNORM_RELU_POOL_BWD;
    b->src[1] = y->grad;
    b->src[5] = f->src[2]; /* beta: the winners and the mask are recomputed from x */
    label_append(g->fwd.labels[g->fwd.count - 1], "+pool");
    label_append(g->bwd.labels[g->bwd.count - 1], "+pool");
    return true;
}

static dbk_value maxpool(dbk_graph *g, dbk_value x, int sh, int sw, int sth, int stw, int pad, const char *name) {
    char lb[96];
    int64_t n = x.data.shape[0], c = x.data.shape[1];
    int64_t p = dbk_conv_out_len(x.data.shape[2], sh, sth, pad), q = dbk_conv_out_len(x.data.shape[3], sw, stw, pad);
    dbk_value y = dbk_graph_value(g, x.grad.ndim != 0, n, c, p, q);
    dbk_tensor arg = dbk_graph_tensor(g, DBK_DTYPE_I32, 4, n, c, p, q);
    const dbk_pool_params pp = {sh, sw, sth, stw, pad, pad};
    if (fuse_maxpool(g, x, &y, &pp)) return y;
    dbk_op_desc op = {.op = DBK_OP_MAXPOOL_FWD, .p.pool = pp};
    op.src[0] = x.data;
    op.dst[0] = y.data;
    op.dst[1] = arg;
    dbk_graph_forward(g, &op, name);
    if (g->cfg.training && x.grad.ndim) {
        dbk_op_desc b = {.op = DBK_OP_MAXPOOL_BWD, .p.pool = op.p.pool};
        b.src[0] = y.grad;
        b.src[1] = arg;
        b.dst[0] = x.grad;
        dbk_graph_backward(g, &b, label_of(lb, sizeof lb, name, "bwd"));
    }
    return y;
}

dbk_value dbk_nn_maxpool(dbk_graph *g, dbk_value x, int size, int stride, const char *name) {
    return maxpool(g, x, size, size, stride, stride, 0, name);
}

dbk_value dbk_nn_maxpool_padded(dbk_graph *g, dbk_value x, int size, int stride, int pad, const char *name) {
    return maxpool(g, x, size, size, stride, stride, pad, name);
}

dbk_value dbk_nn_global_maxpool(dbk_graph *g, dbk_value x, const char *name) {
    int h = (int)x.data.shape[2], w = (int)x.data.shape[3];
    return maxpool(g, x, h, w, h, w, 0, name);
}

dbk_value dbk_nn_global_avgpool(dbk_graph *g, dbk_value x, const char *name) {
    char lb[96];
    dbk_value y = dbk_graph_value(g, x.grad.ndim != 0, x.data.shape[0], x.data.shape[1], 1, 1);
    dbk_op_desc op = {.op = DBK_OP_GLOBAL_AVGPOOL_FWD};
    op.src[0] = x.data;
    op.dst[0] = y.data;
    dbk_graph_forward(g, &op, name);
    if (g->cfg.training && x.grad.ndim) {
        dbk_op_desc b = {.op = DBK_OP_GLOBAL_AVGPOOL_BWD};
        b.src[0] = y.grad;
        b.dst[0] = x.grad;
        dbk_graph_backward(g, &b, label_of(lb, sizeof lb, name, "bwd"));
    }
    return y;
}

dbk_value dbk_nn_leaky_relu(dbk_graph *g, dbk_value x, float slope) {
    dbk_op_desc op = {.op = DBK_OP_LEAKY_RELU_FWD, .p.leaky.slope = slope};
    op.src[0] = x.data;
    op.dst[0] = x.data;
    dbk_graph_forward(g, &op, "leaky_relu");
    x.half = (dbk_tensor){0};   /* data changed in place */
    if (g->cfg.training && x.grad.ndim) {
        dbk_op_desc b = {.op = DBK_OP_LEAKY_RELU_BWD, .p.leaky.slope = slope};
        b.src[0] = x.data; /* the forward output, computed in place */
        b.src[1] = x.grad;
        b.dst[0] = x.grad;
        dbk_graph_backward(g, &b, "leaky_relu.bwd");
    }
    return x;
}

void dbk_graph_batch_state_rule(const dbk_step_ctx *ctx, const double k[4], void *dst) {
    (void)k;
    int32_t v[4] = {ctx->first, (int32_t)ctx->seed, ctx->epoch, (int32_t)ctx->run_seed};
    memcpy(dst, v, sizeof v);
}

/* FNV-1a of the layer's name: each dropout layer draws its own mask. */
static uint32_t name_salt(const char *name) {
    uint32_t h = 2166136261u;
    for (const char *c = name; *c; c++) h = (h ^ (uint8_t)*c) * 16777619u;
    return h;
}

dbk_value dbk_nn_dropout(dbk_graph *g, dbk_value x, float p, const char *name) {
    if (!g->cfg.training || p <= 0.0f) return x; /* evaluation: the identity */
    char lb[96];
    const double none[4] = {0};
    dbk_tensor state = dbk_graph_step_value(g, label_of(lb, sizeof lb, name, "state"), DBK_DTYPE_I32, 4,
                                            dbk_graph_batch_state_rule, none);
    dbk_value y = dbk_graph_value(g, x.grad.ndim != 0, x.data.shape[0], x.data.shape[1], x.data.shape[2],
                                  x.data.shape[3]);
    const dbk_dropout_params dp = {p, name_salt(name)};
    dbk_op_desc op = {.op = DBK_OP_DROPOUT_FWD, .p.dropout = dp};
    op.src[0] = x.data;
    op.src[1] = state;
    op.dst[0] = y.data;
    dbk_graph_forward(g, &op, name);
    if (x.grad.ndim) {
        dbk_op_desc b = {.op = DBK_OP_DROPOUT_BWD, .p.dropout = dp};
        b.src[0] = y.grad;
        b.src[1] = state;
        b.dst[0] = x.grad;
        dbk_graph_backward(g, &b, label_of(lb, sizeof lb, name, "bwd"));
    }
    return y;
}

dbk_value dbk_nn_linear_bias(dbk_graph *g, dbk_value x, int64_t k, const char *name) {
    const int64_t c = dbk_tensor_numel(&x.data) / x.data.shape[0], bshape[1] = {k};
    dbk_value y = dbk_nn_linear(g, x, k, name);
    dbk_tensor bias, dbias;
    add_param(g, name, "bias", DBK_PARAM_INIT_KAIMING_UNIFORM, c, 1, bshape, &bias, &dbias);
    forward_bias(g, y, bias, name);
    if (g->cfg.training) backward_bias(g, y, dbias, name);
    return y;
}

dbk_value dbk_nn_linear(dbk_graph *g, dbk_value x, int64_t k, const char *name) {
    return dbk_nn_linear_init(g, x, k, DBK_PARAM_INIT_KAIMING_UNIFORM, name);
}

dbk_value dbk_nn_linear_init(dbk_graph *g, dbk_value x, int64_t k, dbk_param_init init, const char *name) {
    char lb[96];
    int64_t n = x.data.shape[0], c = dbk_tensor_numel(&x.data) / n;
    const int64_t wshape[2] = {k, c};
    dbk_tensor wt = {0}, dw = {0};
    add_param(g, name, "weight", init, c, 2, wshape, &wt, &dw);
    dbk_value y = dbk_graph_value(g, x.grad.ndim || dw.ndim, n, k, 1, 1);
    /* 2-D views of the (N,C,1,1) activations for GEMM. */
    dbk_tensor x2 = x.data, y2 = y.data, dx2 = x.grad, dy2 = y.grad;
    x2.ndim = y2.ndim = 2;
    x2.shape[1] = c;
    y2.shape[1] = k;
    if (dx2.ndim) {
        dx2.ndim = 2;
        dx2.shape[1] = c;
    }
    if (dy2.ndim) {
        dy2.ndim = 2;
        dy2.shape[1] = k;
    }

    /* the operands: f32, or their f16 copies in mixed precision (x's own when it has one) */
    const bool half = g->cfg.fp16;
    dbk_tensor xo = x2;
    if (half && x.half.ndim) {
        xo = x.half;
        xo.ndim = 2;
        xo.shape[1] = c;
    } else if (half) {
        xo = f16_copy(g, x2, name, "x.f16");
    }
    const dbk_tensor wo = half ? f16_copy(g, wt, name, "weight.f16") : wt;
    /* y (N,K) = x (N,C) * W^T (C,K) */
    dbk_op_desc op = {.op = DBK_OP_GEMM, .p.gemm = {false, true, 1.0f, 0.0f}};
    op.src[0] = xo;
    op.src[1] = wo;
    op.dst[0] = y2;
    dbk_graph_forward(g, &op, name);
    if (!g->cfg.training) return y;

    dbk_tensor dyo = dy2;
    if (half) dyo = dbk_graph_tensor(g, DBK_DTYPE_F16, 2, n, k, 1, 1);
    if (x.grad.ndim) { /* dx (N,C) = dy (N,K) * W (K,C) */
        dbk_op_desc bd = {.op = DBK_OP_GEMM, .p.gemm = {false, false, 1.0f, 0.0f}};
        bd.src[0] = dyo;
        bd.src[1] = wo;
        bd.dst[0] = dx2;
        dbk_graph_backward(g, &bd, label_of(lb, sizeof lb, name, "bwd_data"));
    }
    if (dw.ndim) { /* not a frozen weight: dW (K,C) = dy^T (K,N) * x (N,C) */
        dbk_op_desc bw = {.op = DBK_OP_GEMM, .p.gemm = {true, false, 1.0f, 0.0f}};
        bw.src[0] = dyo;
        bw.src[1] = xo;
        bw.dst[0] = dw;
        dbk_graph_backward(g, &bw, label_of(lb, sizeof lb, name, "bwd_filter"));
    }
    if (half) cast_into(g, dy2, dyo, label_of(lb, sizeof lb, name, "dy.f16"));
    return y;
}

dbk_value dbk_nn_scale(dbk_graph *g, dbk_value x, float alpha, const char *name) {
    char lb[96];
    dbk_op_desc op = {.op = DBK_OP_SCALE, .p.scale = {alpha}};
    op.src[0] = x.data;
    op.dst[0] = x.data;
    dbk_graph_forward(g, &op, name);
    x.half = (dbk_tensor){0};   /* data changed in place */
    if (g->cfg.training && x.grad.ndim) {
        dbk_op_desc b = op;
        b.src[0] = x.grad;
        b.dst[0] = x.grad;
        dbk_graph_backward(g, &b, label_of(lb, sizeof lb, name, "bwd"));
    }
    return x;
}

dbk_value dbk_nn_fork(dbk_graph *g, dbk_value x, const char *name) {
    char lb[96];
    dbk_value y = {.data = x.data, .half = x.half};
    if (!g->cfg.training || !x.grad.ndim) return y;
    y.grad = dbk_graph_tensor(g, DBK_DTYPE_F32, x.grad.ndim, x.grad.shape[0], x.grad.shape[1], x.grad.shape[2],
                              x.grad.shape[3]);
    /* Pushed first, so it runs last: by then both consumers have written their gradients. */
    dbk_op_desc b = {.op = DBK_OP_ADD};
    b.src[0] = x.grad;
    b.src[1] = y.grad;
    b.dst[0] = x.grad;
    dbk_graph_backward(g, &b, label_of(lb, sizeof lb, name, "grad_sum"));
    return y;
}

/* Fusion of the residual add (docs/fusion.md): y = skip + branch where branch is the output of
 * the fused batch norm + ReLU built just before (its forward and backward the last ops, so
 * nothing else reads branch or writes its gradient) becomes DBK_OP_BATCHNORM_RELU_ADD_FWD_TRAIN
 * writing y, and _BWD reading y's gradient: branch and its gradient are never written, and
 * the backward recomputes ReLU's mask from the batch norm's input. The add's backward then
 * only copies dy to skip. Returns false, changing nothing, where the pattern is not there
 * (and in the planning pass: y is allocated either way, so both passes plan the same). */
static bool fuse_residual_add(dbk_graph *g, const dbk_value *skip, const dbk_value *branch, const dbk_value *y) {
    if (g->cfg.no_fusion || g->cfg.fp16 || !g->cfg.training || !g->fwd.count || !g->bwd.count ||
        same_tensor(&skip->data, &branch->data) || skip->data.dtype != DBK_DTYPE_F32 || !branch->grad.ndim)
        return false;
    dbk_op_desc *f = &g->fwd.ops[g->fwd.count - 1], *b = &g->bwd.ops[g->bwd.count - 1];
    if (f->op != DBK_OP_BATCHNORM_RELU_FWD_TRAIN || !same_tensor(&f->dst[0], &branch->data)) return false;
    if (b->op != DBK_OP_BATCHNORM_RELU_BWD || !same_tensor(&b->src[1], &branch->grad)) return false;
    f->op = DBK_OP_BATCHNORM_RELU_ADD_FWD_TRAIN;
    f->src[3] = skip->data;
    f->dst[0] = y->data;
    b->op = DBK_OP_BATCHNORM_RELU_ADD_BWD;
    b->src[1] = y->grad;
    b->src[5] = f->src[2]; /* beta: the mask is recomputed, no ReLU output is kept */
    label_append(g->fwd.labels[g->fwd.count - 1], "+add");
    label_append(g->bwd.labels[g->bwd.count - 1], "+add");
    return true;
}

dbk_value dbk_nn_add(dbk_graph *g, dbk_value a, dbk_value b, const char *name) {
    char lb[96];
    dbk_value y = dbk_graph_value(g, a.grad.ndim || b.grad.ndim, a.data.shape[0], a.data.shape[1], a.data.shape[2],
                                  a.data.shape[3]);
    const dbk_value *skip = fuse_residual_add(g, &a, &b, &y) ? &a : fuse_residual_add(g, &b, &a, &y) ? &b : NULL;
    if (skip) {
        if (skip->grad.ndim) { /* d(skip + branch)/d skip = 1 */
            dbk_op_desc c = {.op = DBK_OP_COPY};
            c.src[0] = y.grad;
            c.dst[0] = skip->grad;
            dbk_graph_backward(g, &c, label_of(lb, sizeof lb, name, skip == &a ? "bwd_a" : "bwd_b"));
        }
        return y;
    }
    dbk_op_desc op = {.op = DBK_OP_ADD};
    op.src[0] = a.data;
    op.src[1] = b.data;
    op.dst[0] = y.data;
    dbk_graph_forward(g, &op, name);
    if (!g->cfg.training) return y;
    /* d(a+b)/da = d(a+b)/db = 1: both receive a copy of dy. */
    const dbk_value *in[2] = {&a, &b};
    for (int i = 1; i >= 0; i--) {
        if (!in[i]->grad.ndim) continue;
        dbk_op_desc c = {.op = DBK_OP_COPY};
        c.src[0] = y.grad;
        c.dst[0] = in[i]->grad;
        dbk_graph_backward(g, &c, label_of(lb, sizeof lb, name, i ? "bwd_b" : "bwd_a"));
    }
    return y;
}
