/*
 * graph.c — the builder core of the two-pass graph (see graph.h): the passes, parameters and
 * their groups, statistics, per-step values, arena tensors, the op lists and the program. The
 * layer builders are in graph_layers.c, the fusion pass in graph_fusion.c (graph_impl.h).
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
#include "nn/graph_impl.h"

#define ARENA_ALIGN 256

typedef dbk_graph_op_list op_list;
typedef dbk_graph_param_group param_group;
#define MAX_GROUPS DBK_GRAPH_MAX_GROUPS

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
    op_list_free(&g->fused_fwd);
    op_list_free(&g->fused_bwd);
    dbk_free(g->sites);
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
    g->n_sites = 0;
    g->fused_stale = true;
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

bool dbk_graph_grow(void **p, int *cap, int need, size_t elem) { return grow(p, cap, need, elem); }

static void push(dbk_graph *g, op_list *l, const dbk_op_desc *op, const char *label) {
    if (g->planning) return;
    g->fused_stale = true;
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

dbk_fusion_site dbk_graph_open_site(const dbk_graph *g, dbk_fusion_site_kind kind) {
    return (dbk_fusion_site){.kind = kind, .fwd_begin = g->fwd.count, .bwd_begin = g->bwd.count};
}

void dbk_graph_close_site(dbk_graph *g, dbk_fusion_site *site) {
    if (g->planning) return;
    site->fwd_end = g->fwd.count;
    site->bwd_end = g->bwd.count;
    if (!grow((void **)&g->sites, &g->cap_sites, g->n_sites + 1, sizeof *g->sites))
        return fail(g, DBK_ERR_OUT_OF_HOST_MEMORY);
    g->sites[g->n_sites++] = *site;
    g->fused_stale = true;
}

/* The fusion pass's lists, run again where a push made them stale; NULL when it failed
 * (the error is the graph's status). The lists are a cache of fwd, bwd and the sites, so
 * the const accessors may refresh them. */
static dbk_graph *fused(const dbk_graph *g) {
    dbk_graph *mg = (dbk_graph *)(uintptr_t)g;
    if (mg->fused_stale) {
        const dbk_status st = dbk_graph_fuse(mg);
        if (st != DBK_OK) {
            fail(mg, st);
            mg->fused_fwd.count = mg->fused_bwd.count = 0;
            return NULL;
        }
        mg->fused_stale = false;
    }
    return mg;
}

int dbk_graph_forward_count(const dbk_graph *g) { return fused(g) ? g->fused_fwd.count : 0; }
const dbk_op_desc *dbk_graph_forward_ops(const dbk_graph *g) { return fused(g) ? g->fused_fwd.ops : NULL; }
int dbk_graph_backward_count(const dbk_graph *g) { return fused(g) ? g->fused_bwd.count : 0; }

const dbk_op_desc *dbk_graph_backward_ops(const dbk_graph *g) {
    dbk_graph *mg = fused(g); /* the ordered copy is a cache of fused_bwd */
    if (!mg) return NULL;
    const op_list *bwd = &mg->fused_bwd;
    dbk_free(mg->bwd_ordered);
    mg->bwd_ordered = dbk_malloc(sizeof(dbk_op_desc) * (size_t)(bwd->count ? bwd->count : 1));
    if (!mg->bwd_ordered) return NULL;
    for (int i = 0; i < bwd->count; i++) mg->bwd_ordered[i] = bwd->ops[bwd->count - 1 - i];
    return mg->bwd_ordered;
}

/* memcpy of count ops; an empty list may have no array at all (memcpy from NULL is undefined
 * even for 0 bytes, which UBSan reports). */
static void copy_ops(dbk_op_desc *dst, const dbk_op_desc *src, int count) {
    if (count > 0) memcpy(dst, src, sizeof *dst * (size_t)count);
}

dbk_op_desc *dbk_graph_program(dbk_graph *g, int *count) {
    const dbk_op_desc *bwd = dbk_graph_backward_ops(g);
    const op_list *fwd = &g->fused_fwd;
    const int nb = g->fused_bwd.count, n = fwd->count + nb + g->upd.count;
    dbk_free(g->program);
    g->program = bwd ? dbk_malloc(sizeof *g->program * (size_t)(n ? n : 1)) : NULL;
    *count = g->program ? n : 0;
    if (!g->program) return NULL;
    /* Labels stay pointers into the lists' label arrays, which live as long as the graph. */
    copy_ops(g->program, fwd->ops, fwd->count);
    copy_ops(g->program + fwd->count, bwd, nb);
    copy_ops(g->program + fwd->count + nb, g->upd.ops, g->upd.count);
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

dbk_tensor dbk_graph_add_state(dbk_graph *g, const char *prefix, const char *suffix, int64_t count, float init) {
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

void dbk_graph_add_param_in(dbk_graph *g, const char *group, const char *prefix, const char *suffix,
                            dbk_param_init init, int64_t fan_in, int ndim, const int64_t *shape, dbk_tensor *data,
                            dbk_tensor *grad) {
    const int current = g->n_groups ? g->group : -1;
    if (group) dbk_graph_set_group(g, group);
    add_param(g, prefix, suffix, init, fan_in, ndim, shape, data, grad);
    if (group) dbk_graph_set_group(g, current >= 0 ? g->groups[current].name : "");
}

void dbk_graph_batch_state_rule(const dbk_step_ctx *ctx, const double k[4], void *dst) {
    (void)k;
    int32_t v[4] = {ctx->first, (int32_t)ctx->seed, ctx->epoch, (int32_t)ctx->run_seed};
    memcpy(dst, v, sizeof v);
}

