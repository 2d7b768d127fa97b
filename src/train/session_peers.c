/*
 * session_peers.c — what data-parallel training needs of a session (session.h, "data-parallel
 * training"): the step split around the gradient exchange, the trainable tensors and the
 * batch-norm statistics buffer.
 */
#include "train/session_impl.h"

void dbk_session_set_exchange(dbk_session *s, dbk_session_exchange_fn fn, void *ctx) {
    DBK_ASSERT(s->update);
    s->exchange = fn;
    s->exchange_ctx = ctx;
}

dbk_status dbk_session_run_exchanged(dbk_session *s) {
    DBK_TRY(dbk_program_run(s->train.recorded));
    if (s->exchange) {
        DBK_TRY(dbk_backend_sync(s->be)); /* the gradients are complete */
        DBK_TRY(s->exchange(s->exchange_ctx, s->grads));
    }
    return dbk_program_run(s->update);
}

int dbk_session_trainable_tensors(const dbk_session *s, size_t *offsets, size_t *counts, int cap) {
    const dbk_graph *g = s->train.graph;
    int n = 0;
    for (int i = 0; g && i < dbk_graph_param_info_count(g); i++) {
        const dbk_param_info *p = dbk_graph_param_info(g, i);
        if (dbk_graph_group_frozen(g, p->group)) continue;
        if (n < cap) {
            size_t count = 1;
            for (int d = 0; d < p->ndim; d++) count *= (size_t)p->shape[d];
            offsets[n] = p->offset;
            counts[n] = count;
        }
        n++;
    }
    return n;
}

dbk_buffer *dbk_session_statistics(dbk_session *s, size_t *count) {
    *count = dbk_graph_state_count(s->eval.graph);
    return s->state;
}

dbk_backend *dbk_session_backend(const dbk_session *s) { return s->be; }

dbk_status dbk_session_read_params(dbk_session *s, float *out) {
    return dbk_buffer_read(s->params, 0, out, dbk_graph_param_count(s->eval.graph) * sizeof *out);
}

dbk_status dbk_session_write_params(dbk_session *s, const float *params) {
    return dbk_buffer_write(s->params, 0, params, dbk_graph_param_count(s->eval.graph) * sizeof *params);
}
