/*
 * session_init.c — initial parameters, batch-norm statistics and optimizer state (see
 * session.h, dbk_session_init_params).
 */
#include <math.h>
#include <string.h>

#include "core/alloc.h"
#include "core/rng.h"
#include "train/session_impl.h"

/* Draws in creation order (not layout order), so a model's initial weights do not depend on
 * how its parameter groups are laid out. */
static void init_param(const dbk_param_info *pi, dbk_rng *rng, float *host) {
    int64_t n = 1;
    for (int d = 0; d < pi->ndim; d++) n *= pi->shape[d];
    float bound = pi->fan_in > 0 ? 1.0f / sqrtf((float)pi->fan_in) : 0.0f;
    for (int64_t j = 0; j < n; j++) {
        float v = 0.0f;
        switch (pi->init) {
        case DBK_PARAM_INIT_KAIMING_UNIFORM: v = (2.0f * dbk_rng_uniform(rng) - 1.0f) * bound; break;
        case DBK_PARAM_INIT_ONES: v = 1.0f; break;
        case DBK_PARAM_INIT_ZEROS: v = 0.0f; break;
        }
        host[pi->offset + (size_t)j] = v;
    }
}

dbk_status dbk_session_init_params(dbk_session *s, uint64_t seed) {
    const dbk_graph *g = s->eval.graph;
    size_t np = dbk_graph_param_count(g), ns = dbk_graph_state_count(g);
    float *host = dbk_calloc(np > ns ? np : ns, sizeof *host);
    if (!host) return DBK_ERR_OUT_OF_HOST_MEMORY;
    dbk_rng rng;
    dbk_rng_init(&rng, seed);
    for (int i = 0; i < dbk_graph_param_info_count(g); i++) init_param(dbk_graph_param_info(g, i), &rng, host);
    dbk_status st = dbk_buffer_write(s->params, 0, host, np * 4);
    if (st == DBK_OK && s->momentum) {
        memset(host, 0, np * 4);
        st = dbk_buffer_write(s->momentum, 0, host, np * 4);
    }
    if (st == DBK_OK) {
        memset(host, 0, ns * 4);
        for (int i = 0; i < dbk_graph_state_info_count(g); i++) {
            const dbk_state_info *si = dbk_graph_state_info(g, i);
            for (int64_t j = 0; j < si->count; j++) host[si->offset + (size_t)j] = si->init;
        }
        st = dbk_buffer_write(s->state, 0, host, ns * 4);
    }
    dbk_free(host);
    return st;
}
