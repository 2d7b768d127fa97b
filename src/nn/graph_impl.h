/*
 * graph_impl.h — the graph's state, shared by the three files of the graph builder.
 * INTERNAL: include only from src/nn/graph*.c.
 *
 *   graph.c         the builder core: the two passes, parameters and groups, statistics,
 *                   per-step values, arena tensors, the op lists and the program
 *   graph_layers.c  the layer builders (dbk_nn_*): each appends its plain forward and
 *                   backward ops, and marks where a fusion may apply (a fusion site)
 *   graph_fusion.c  the fusion pass: rewrites the built op lists at the marked sites
 *                   (docs/fusion.md)
 *
 * The op lists hold what the builders pushed, unfused. What the accessors return
 * (dbk_graph_forward_ops, dbk_graph_backward_ops, dbk_graph_program) is the fusion pass's
 * output, rebuilt from those lists whenever a push made it stale.
 */
#ifndef DBK_GRAPH_IMPL_H
#define DBK_GRAPH_IMPL_H

#include "nn/graph.h"

/* Ops with their labels (op.label points into labels). */
typedef struct dbk_graph_op_list {
    dbk_op_desc *ops;
    char       (*labels)[64];
    int          count, cap;
} dbk_graph_op_list;

#define DBK_GRAPH_MAX_GROUPS 16

typedef struct dbk_graph_param_group {
    char   name[32];
    size_t base;                     /* first float of the group in params (build pass) */
    size_t count;                    /* floats, padding included */
} dbk_graph_param_group;

/* Where a fusion may apply: the layer that pushed ops [fwd_begin, fwd_end) of the forward
 * list and [bwd_begin, bwd_end) of the backward list (push order), and the values it took and
 * made. The ops just before fwd_begin and bwd_begin are what the layer followed. */
typedef enum dbk_fusion_site_kind {
    DBK_FUSION_SITE_RELU,            /* dbk_nn_relu on x */
    DBK_FUSION_SITE_ADD,             /* dbk_nn_add: y = a + b */
    DBK_FUSION_SITE_MAXPOOL,         /* a max pool of x into y with pool */
} dbk_fusion_site_kind;

typedef struct dbk_fusion_site {
    dbk_fusion_site_kind kind;
    int             fwd_begin, fwd_end, bwd_begin, bwd_end;
    dbk_value       x, a, b, y;
    dbk_pool_params pool;
} dbk_fusion_site;

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
    dbk_graph_param_group groups[DBK_GRAPH_MAX_GROUPS];
    size_t           planned_group_count[DBK_GRAPH_MAX_GROUPS];  /* sizes the planning pass found */
    int              n_groups, group;                            /* groups seen; the current one */
    dbk_step_value_info *steps;
    int              n_steps, cap_steps;
    size_t           step_host_bytes, step_counter_bytes;
    size_t           planned_step_host_bytes;          /* where counters start in the build pass */
    bool             reusing;                          /* layers take the parameters declared so far */
    int              reuse_param, reuse_state;         /* the next ones they take */
    dbk_graph_op_list fwd, bwd, upd;                   /* as pushed (bwd in push order) */
    dbk_fusion_site *sites;
    int              n_sites, cap_sites;
    dbk_graph_op_list fused_fwd, fused_bwd;            /* the fusion pass's output */
    bool             fused_stale;                      /* a push since the pass ran */
    dbk_op_desc     *bwd_ordered;    /* fused_bwd reversed, rebuilt on request */
    dbk_op_desc     *program;        /* fused fwd + bwd (ordered) + upd, rebuilt on request */
};

/* Grows *p (of *cap elements of elem bytes) to hold need; false when out of memory. */
bool dbk_graph_grow(void **p, int *cap, int need, size_t elem);

/* A trainable tensor "<prefix>.<suffix>" in group (NULL = the current one): its view into
 * params and into grads (no gradient, ndim 0, when the group is frozen). */
void dbk_graph_add_param_in(dbk_graph *g, const char *group, const char *prefix, const char *suffix,
                            dbk_param_init init, int64_t fan_in, int ndim, const int64_t *shape, dbk_tensor *data,
                            dbk_tensor *grad);
/* A batch-norm statistic "<prefix>.<suffix>" of count floats starting at init. */
dbk_tensor dbk_graph_add_state(dbk_graph *g, const char *prefix, const char *suffix, int64_t count, float init);

/* A fusion site opened before a layer pushes its ops and closed after (build pass only; in
 * the planning pass, which records no ops, closing does nothing). */
dbk_fusion_site dbk_graph_open_site(const dbk_graph *g, dbk_fusion_site_kind kind);
void            dbk_graph_close_site(dbk_graph *g, dbk_fusion_site *site);

/* The fusion pass: fills fused_fwd and fused_bwd from fwd, bwd and the sites (a copy where
 * the graph does not fuse: evaluation graphs, cfg.no_fusion). */
dbk_status dbk_graph_fuse(dbk_graph *g);

#endif
