/*
 * session_init.c — initial parameters, batch-norm statistics and optimizer state (see
 * session.h, dbk_session_init_params), and the initialisations computed from the training
 * data (dbk_session_init_from_data).
 */
#include <math.h>
#include <string.h>

#include "core/alloc.h"
#include "core/rng.h"
#include "train/session_impl.h"
#include "train/whiten.h"

/* torch.nn.init.dirac_(w[:C]) on a (K,C,R,S) weight: filter i < min(K,C) becomes the
 * identity on input channel i at the centre tap (R/2, S/2), zero elsewhere. */
static void dirac(const dbk_param_info *pi, float *w) {
    const int64_t k = pi->shape[0], c = pi->shape[1], r = pi->shape[2], sz = pi->shape[3];
    const int64_t n = k < c ? k : c;
    for (int64_t i = 0; i < n; i++) {
        float *f = w + i * c * r * sz;
        for (int64_t j = 0; j < c * r * sz; j++) f[j] = 0.0f;
        f[(i * r + r / 2) * sz + sz / 2] = 1.0f;
    }
}

/* w *= 1 / w.std() (torch's unbiased standard deviation over every element). */
static void scale_to_unit_std(float *w, int64_t n) {
    double sum = 0.0, sq = 0.0;
    for (int64_t j = 0; j < n; j++) sum += (double)w[j];
    const double mean = sum / (double)n;
    for (int64_t j = 0; j < n; j++) sq += ((double)w[j] - mean) * ((double)w[j] - mean);
    const double sd = n > 1 ? sqrt(sq / (double)(n - 1)) : 0.0;
    if (sd > 0.0)
        for (int64_t j = 0; j < n; j++) w[j] = (float)((double)w[j] / sd);
}

/* Draws in creation order (not layout order), so a model's initial weights do not depend on
 * how its parameter groups are laid out. */
static void init_param(const dbk_param_info *pi, dbk_rng *rng, float *host) {
    int64_t n = 1;
    for (int d = 0; d < pi->ndim; d++) n *= pi->shape[d];
    const float bound = pi->fan_in > 0 ? 1.0f / sqrtf((float)pi->fan_in) : 0.0f;
    /* kaiming_normal_(mode='fan_out', nonlinearity='relu'): std = sqrt(2) / sqrt(K*R*S) */
    const int64_t fan_out = pi->ndim == 4 ? pi->shape[0] * pi->shape[2] * pi->shape[3] : pi->shape[0];
    const float fan_out_std = sqrtf(2.0f / (float)fan_out);
    for (int64_t j = 0; j < n; j++) {
        float v = 0.0f;
        switch (pi->init) {
        case DBK_PARAM_INIT_KAIMING_UNIFORM:
        case DBK_PARAM_INIT_DIRAC:
        case DBK_PARAM_INIT_UNIT_STD:
        case DBK_PARAM_INIT_WHITEN: v = (2.0f * dbk_rng_uniform(rng) - 1.0f) * bound; break;
        case DBK_PARAM_INIT_KAIMING_NORMAL_FAN_OUT: v = dbk_rng_normal(rng) * fan_out_std; break;
        case DBK_PARAM_INIT_NORMAL_001: v = dbk_rng_normal(rng) * 0.01f; break;
        case DBK_PARAM_INIT_ONES: v = 1.0f; break;
        case DBK_PARAM_INIT_ZEROS: v = 0.0f; break;
        }
        host[pi->offset + (size_t)j] = v;
    }
    if (pi->init == DBK_PARAM_INIT_DIRAC) dirac(pi, host + pi->offset);
    if (pi->init == DBK_PARAM_INIT_UNIT_STD) scale_to_unit_std(host + pi->offset, n);
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
    /* Lookahead's averages start as the initial model (airbench snapshots before whitening). */
    if (st == DBK_OK && s->ema_params) st = dbk_buffer_write(s->ema_params, 0, host, np * 4);
    if (st == DBK_OK && s->momentum) {
        memset(host, 0, np * 4);
        st = dbk_buffer_write(s->momentum, 0, host, np * 4);
        if (st == DBK_OK && s->exp_avg_sq) st = dbk_buffer_write(s->exp_avg_sq, 0, host, np * 4);
    }
    if (st == DBK_OK) {
        memset(host, 0, ns * 4);
        for (int i = 0; i < dbk_graph_state_info_count(g); i++) {
            const dbk_state_info *si = dbk_graph_state_info(g, i);
            for (int64_t j = 0; j < si->count; j++) host[si->offset + (size_t)j] = si->init;
        }
        st = dbk_buffer_write(s->state, 0, host, ns * 4);
        if (st == DBK_OK && s->ema_state) st = dbk_buffer_write(s->ema_state, 0, host, ns * 4);
    }
    dbk_free(host);
    return st;
}

/* ---------------------------------------------------------------------------------- */
/* data-dependent initialisation                                                      */

/* A WHITEN weight (2d, C, k, k), d = C*k*k: the patch whitening of the first recipe
 * whiten_images (airbench's DBK_WHITEN_AIRBENCH_IMAGES) training images, normalised as the
 * network input is, in the recipe's filter order. */
static dbk_status whiten(dbk_session *s, const dbk_param_info *pi, const dbk_dataset *train) {
    const dbk_augment_params *a = &s->cfg.recipe->augment;
    dbk_whiten_config wc = {.channels = (int)pi->shape[1],
                            .height = train->height,
                            .width = train->width,
                            .patch = (int)pi->shape[2],
                            .eps = DBK_WHITEN_AIRBENCH_EPS,
                            .ascending = s->cfg.recipe->whiten_ascending};
    if (pi->ndim != 4 || pi->shape[2] != pi->shape[3] || wc.channels != train->channels ||
        wc.channels > (int)(sizeof a->mean / sizeof a->mean[0]) || pi->shape[0] != 2 * (int64_t)dbk_whiten_dim(&wc))
        return dbk_set_error(DBK_ERR_INVALID_ARG, "%s: a whitening weight must be (2*C*k*k, C, k, k) for %d-channel images",
                             pi->name, train->channels);
    for (int c = 0; c < wc.channels; c++) {
        wc.mean[c] = a->mean[c];
        wc.std[c] = a->std[c];
    }
    const int want = s->cfg.recipe->whiten_images > 0 ? s->cfg.recipe->whiten_images : DBK_WHITEN_AIRBENCH_IMAGES;
    const int count = train->count < want ? train->count : want;
    const size_t n = (size_t)pi->shape[0] * (size_t)dbk_whiten_dim(&wc);
    float *w = dbk_malloc(n * sizeof *w);
    if (!w) return DBK_ERR_OUT_OF_HOST_MEMORY;
    dbk_status st = dbk_whiten_filters(&wc, train->images, count, w, NULL);
    if (st == DBK_OK) st = dbk_buffer_write(s->params, pi->offset * 4, w, n * sizeof *w);
    dbk_free(w);
    return st;
}

dbk_status dbk_session_init_from_data(dbk_session *s, const dbk_dataset *train) {
    const dbk_graph *g = s->eval.graph;
    for (int i = 0; i < dbk_graph_param_info_count(g); i++) {
        const dbk_param_info *pi = dbk_graph_param_info(g, i);
        if (pi->init != DBK_PARAM_INIT_WHITEN) continue;
        if (!train || train->count == 0)
            return dbk_set_error(DBK_ERR_UNSUPPORTED, "%s is initialised from the training images, which a streamed "
                                 "dataset does not hold in memory", pi->name);
        DBK_TRY(whiten(s, pi, train));
    }
    return DBK_OK;
}
