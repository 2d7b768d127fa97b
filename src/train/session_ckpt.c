/*
 * session_ckpt.c — a session's weights and batch-norm statistics to and from a checkpoint
 * (train/checkpoint.h). Tensors are matched by name, so the file does not depend on how the
 * parameters are laid out in the flat buffers.
 * The training state also travels through host memory from one session to the next when
 * progressive resizing rebuilds the session at another image size (dbk_session_state_*).
 */
#include <string.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "train/checkpoint.h"
#include "train/ckpt_diff.h"
#include "train/session_impl.h"

dbk_status dbk_session_save(dbk_session *s, const char *path, const char *meta_json) {
    const dbk_graph *g = s->eval.graph;
    size_t np = dbk_graph_param_count(g), ns = dbk_graph_state_count(g);
    int npi = dbk_graph_param_info_count(g), nsi = dbk_graph_state_info_count(g);
    float *params = dbk_malloc(np * 4 + 4), *state = dbk_malloc(ns * 4 + 4);
    dbk_ckpt_tensor *t = dbk_calloc((size_t)(npi + nsi), sizeof *t);
    dbk_status st = DBK_ERR_OUT_OF_HOST_MEMORY;
    if (!params || !state || !t) goto done;
    if ((st = dbk_backend_sync(s->be)) != DBK_OK) goto done;
    if ((st = dbk_buffer_read(s->params, 0, params, np * 4)) != DBK_OK) goto done;
    if ((st = dbk_buffer_read(s->state, 0, state, ns * 4)) != DBK_OK) goto done;
    for (int i = 0; i < npi; i++) {
        const dbk_param_info *pi = dbk_graph_param_info(g, i);
        t[i].name = pi->name;
        t[i].ndim = pi->ndim;
        memcpy(t[i].shape, pi->shape, sizeof pi->shape);
        t[i].data = params + pi->offset;
    }
    for (int i = 0; i < nsi; i++) {
        const dbk_state_info *si = dbk_graph_state_info(g, i);
        t[npi + i].name = si->name;
        t[npi + i].ndim = 1;
        t[npi + i].shape[0] = si->count;
        t[npi + i].data = state + si->offset;
    }
    st = dbk_checkpoint_save(path, s->cfg.model->name, meta_json, t, npi + nsi);
done:
    dbk_free(params);
    dbk_free(state);
    dbk_free(t);
    return st;
}

static dbk_status load_tensor(const dbk_checkpoint *c, const char *path, const char *name, int ndim,
                              const int64_t *shape, float *dst) {
    const dbk_ckpt_tensor *t = dbk_checkpoint_find(c, name);
    if (!t) return dbk_set_error(DBK_ERR_FORMAT, "%s: checkpoint has no tensor '%s'", path, name);
    bool same = t->ndim == ndim;
    int64_t n = 1;
    for (int d = 0; same && d < ndim; d++) {
        same = t->shape[d] == shape[d];
        n *= shape[d];
    }
    if (!same) return dbk_set_error(DBK_ERR_FORMAT, "%s: tensor '%s' has another shape than the model's", path, name);
    memcpy(dst, t->data, (size_t)n * 4);
    return DBK_OK;
}

/* A checkpoint of the session's model into host arrays in the flat layout (np and ns floats). */
static dbk_status load_flat(const dbk_session *s, const char *path, float *params, float *state) {
    dbk_checkpoint *c = NULL;
    DBK_TRY(dbk_checkpoint_load(path, &c));
    const dbk_graph *g = s->eval.graph;
    dbk_status st = DBK_OK;
    if (strcmp(dbk_checkpoint_model(c), s->cfg.model->name) != 0)
        st = dbk_set_error(DBK_ERR_FORMAT, "%s holds model '%s', not '%s'", path, dbk_checkpoint_model(c),
                           s->cfg.model->name);
    for (int i = 0; st == DBK_OK && i < dbk_graph_param_info_count(g); i++) {
        const dbk_param_info *pi = dbk_graph_param_info(g, i);
        st = load_tensor(c, path, pi->name, pi->ndim, pi->shape, params + pi->offset);
    }
    for (int i = 0; st == DBK_OK && i < dbk_graph_state_info_count(g); i++) {
        const dbk_state_info *si = dbk_graph_state_info(g, i);
        st = load_tensor(c, path, si->name, 1, &si->count, state + si->offset);
    }
    dbk_checkpoint_destroy(c);
    return st;
}

dbk_status dbk_session_load(dbk_session *s, const char *path) {
    const dbk_graph *g = s->eval.graph;
    size_t np = dbk_graph_param_count(g), ns = dbk_graph_state_count(g);
    float *params = dbk_calloc(np + 1, 4), *state = dbk_calloc(ns + 1, 4);
    dbk_status st = params && state ? load_flat(s, path, params, state) : DBK_ERR_OUT_OF_HOST_MEMORY;
    if (st == DBK_OK) st = dbk_buffer_write(s->params, 0, params, np * 4);
    if (st == DBK_OK) st = dbk_buffer_write(s->state, 0, state, ns * 4);
    dbk_free(params);
    dbk_free(state);
    return st;
}

dbk_status dbk_session_start_from(dbk_session *s, const char *path) {
    DBK_TRY(dbk_session_load(s, path));
    /* Lookahead's averages start as the starting model, as after dbk_session_init_params. */
    dbk_buffer *ema[2] = {s->ema_params, s->ema_state}, *live[2] = {s->params, s->state};
    const size_t counts[2] = {dbk_graph_param_count(s->eval.graph), dbk_graph_state_count(s->eval.graph)};
    for (int i = 0; i < 2; i++) {
        if (!ema[i] || !counts[i]) continue;
        dbk_op_desc copy = {.op = DBK_OP_COPY};
        copy.src[0] = dbk_tensor_make(live[i], 0, DBK_DTYPE_F32, 1, (int64_t)counts[i], 1, 1, 1);
        copy.dst[0] = dbk_tensor_make(ema[i], 0, DBK_DTYPE_F32, 1, (int64_t)counts[i], 1, 1, 1);
        DBK_TRY(dbk_backend_run(s->be, &copy));
    }
    return dbk_backend_sync(s->be);
}

/* ---------------------------------------------------------------------------------- */
/* small checkpoints: the difference against a base (train/ckpt_diff.h)               */

/* The difference's parameter count: the tensors' sizes (the flat buffer aligns each tensor, so
 * dbk_graph_param_count may be larger). */
static size_t canonical_params(const dbk_graph *g) {
    size_t n = 0;
    for (int i = 0; i < dbk_graph_param_info_count(g); i++) {
        const dbk_param_info *pi = dbk_graph_param_info(g, i);
        size_t e = 1;
        for (int d = 0; d < pi->ndim; d++) e *= (size_t)pi->shape[d];
        n += e;
    }
    return n;
}

/* Between the flat layout and the difference's order (parameters and statistics in
 * declaration order). */
static void reorder(const dbk_graph *g, float *params, float *state, float *canon, bool to_canonical) {
    size_t at = 0;
    for (int i = 0; i < dbk_graph_param_info_count(g); i++) {
        const dbk_param_info *pi = dbk_graph_param_info(g, i);
        size_t n = 1;
        for (int d = 0; d < pi->ndim; d++) n *= (size_t)pi->shape[d];
        if (to_canonical) memcpy(canon + at, params + pi->offset, n * 4);
        else memcpy(params + pi->offset, canon + at, n * 4);
        at += n;
    }
    for (int i = 0; i < dbk_graph_state_info_count(g); i++) {
        const dbk_state_info *si = dbk_graph_state_info(g, i);
        if (to_canonical) memcpy(canon + at, state + si->offset, (size_t)si->count * 4);
        else memcpy(state + si->offset, canon + at, (size_t)si->count * 4);
        at += (size_t)si->count;
    }
}

/* The session's model (or, with path, that checkpoint's) in the difference's order: the
 * canonical_params parameters then ns statistics in canon. */
static dbk_status read_canonical(dbk_session *s, const char *path, float *canon) {
    const dbk_graph *g = s->eval.graph;
    const size_t np = dbk_graph_param_count(g), ns = dbk_graph_state_count(g);
    float *params = dbk_malloc(np * 4 + 4), *state = dbk_malloc(ns * 4 + 4);
    dbk_status st = params && state ? DBK_OK : DBK_ERR_OUT_OF_HOST_MEMORY;
    if (st == DBK_OK && path) st = load_flat(s, path, params, state);
    if (st == DBK_OK && !path) st = dbk_backend_sync(s->be);
    if (st == DBK_OK && !path) st = dbk_buffer_read(s->params, 0, params, np * 4);
    if (st == DBK_OK && !path) st = dbk_buffer_read(s->state, 0, state, ns * 4);
    if (st == DBK_OK) reorder(g, params, state, canon, true);
    dbk_free(params);
    dbk_free(state);
    return st;
}

dbk_status dbk_session_save_diff(dbk_session *s, const char *base_path, const char *path, const char *meta_json,
                                 dbk_diff_summary *out) {
    memset(out, 0, sizeof *out);
    const size_t np = canonical_params(s->eval.graph), ns = dbk_graph_state_count(s->eval.graph);
    float *base = dbk_malloc((np + ns) * 4 + 4), *trained = dbk_malloc((np + ns) * 4 + 4);
    dbk_ckpt_diff d;
    memset(&d, 0, sizeof d);
    dbk_status st = base && trained ? DBK_OK : DBK_ERR_OUT_OF_HOST_MEMORY;
    if (st == DBK_OK) st = read_canonical(s, base_path, base);
    if (st == DBK_OK) st = read_canonical(s, NULL, trained);
    if (st == DBK_OK)
        st = dbk_ckpt_diff_make(s->cfg.model->name, meta_json, base, base + np, trained, trained + np, np, ns, &d);
    if (st == DBK_OK) st = dbk_ckpt_diff_save(path, &d);
    if (st == DBK_OK) {
        out->param_count = np;
        out->stat_count = ns;
        out->changed = d.changed;
        out->bytes = (double)dbk_ckpt_diff_bytes(&d);
        out->base_hash = d.base_hash;
    }
    dbk_ckpt_diff_deinit(&d);
    dbk_free(base);
    dbk_free(trained);
    return st;
}

dbk_status dbk_session_load_diff(dbk_session *s, const char *base_path, const char *path) {
    const dbk_graph *g = s->eval.graph;
    const size_t nflat = dbk_graph_param_count(g), np = canonical_params(g), ns = dbk_graph_state_count(g);
    dbk_ckpt_diff d;
    DBK_TRY(dbk_ckpt_diff_load(path, &d));
    float *canon = dbk_malloc((np + ns) * 4 + 4), *params = dbk_calloc(nflat + 1, 4), *state = dbk_malloc(ns * 4 + 4);
    dbk_status st = canon && params && state ? DBK_OK : DBK_ERR_OUT_OF_HOST_MEMORY;
    if (st == DBK_OK) st = read_canonical(s, NULL, canon);
    if (st == DBK_OK) st = dbk_ckpt_diff_apply(&d, path, s->cfg.model->name, base_path, canon, np, canon + np, ns);
    if (st == DBK_OK) {
        reorder(g, params, state, canon, false);
        st = dbk_buffer_write(s->params, 0, params, nflat * 4);
    }
    if (st == DBK_OK) st = dbk_buffer_write(s->state, 0, state, ns * 4);
    dbk_ckpt_diff_deinit(&d);
    dbk_free(canon);
    dbk_free(params);
    dbk_free(state);
    return st;
}

/* ---------------------------------------------------------------------------------- */
/* the training state (--resume)                                                       */

/* The flat buffers of the training state, by tensor name; absent ones are NULL. */
typedef struct state_buffer {
    const char *name;
    dbk_buffer *buf;
    size_t      count;
} state_buffer;

enum { STATE_BUFFERS = 7 };

/* The optimizer's state goes by its optimizer's names (SGD: "momentum"; AdamW: "adamw.exp_avg"
 * and "adamw.exp_avg_sq", PyTorch's), so a state saved by one optimizer does not resume the
 * other. */
static void state_buffers(const dbk_session *s, state_buffer out[STATE_BUFFERS]) {
    const dbk_graph *g = s->eval.graph;
    size_t np = dbk_graph_param_count(g), ns = dbk_graph_state_count(g);
    const bool adamw = s->exp_avg_sq != NULL;
    out[0] = (state_buffer){"params", s->params, np};
    out[1] = (state_buffer){"statistics", s->state, ns};
    out[2] = (state_buffer){adamw ? "adamw.exp_avg" : "momentum", s->momentum, np};
    out[3] = (state_buffer){"adamw.exp_avg_sq", s->exp_avg_sq, np};
    out[4] = (state_buffer){"lookahead.params", s->ema_params, np};
    out[5] = (state_buffer){"lookahead.statistics", s->ema_state, ns};
    out[6] = (state_buffer){"sparse_mask", s->mask, np};   /* a fixed mask is kept across --resume */
}

dbk_status dbk_session_save_state(dbk_session *s, const char *path, const char *meta_json) {
    return dbk_session_save_state_extra(s, path, meta_json, NULL);
}

dbk_status dbk_session_save_state_extra(dbk_session *s, const char *path, const char *meta_json,
                                        const dbk_ckpt_tensor *extra) {
    state_buffer b[STATE_BUFFERS];
    state_buffers(s, b);
    dbk_ckpt_tensor t[STATE_BUFFERS + 1];
    float *host[STATE_BUFFERS] = {0};
    int n = 0;
    dbk_status st = dbk_backend_sync(s->be);
    for (int i = 0; i < STATE_BUFFERS && st == DBK_OK; i++) {
        if (!b[i].buf) continue;
        if (!(host[n] = dbk_malloc(b[i].count * 4 + 4))) st = DBK_ERR_OUT_OF_HOST_MEMORY;
        else st = dbk_buffer_read(b[i].buf, 0, host[n], b[i].count * 4);
        t[n] = (dbk_ckpt_tensor){.name = b[i].name, .ndim = 1, .shape = {(int64_t)b[i].count}, .data = host[n]};
        n++;
    }
    const int buffers = n;
    if (extra) t[n++] = *extra;
    if (st == DBK_OK) st = dbk_checkpoint_save(path, s->cfg.model->name, meta_json, t, n);
    for (int i = 0; i < buffers; i++) dbk_free(host[i]);
    return st;
}

dbk_status dbk_session_load_state(dbk_session *s, const dbk_checkpoint *c, const char *path) {
    if (strcmp(dbk_checkpoint_model(c), s->cfg.model->name) != 0)
        return dbk_set_error(DBK_ERR_FORMAT, "%s holds model '%s', not '%s'", path, dbk_checkpoint_model(c),
                             s->cfg.model->name);
    state_buffer b[STATE_BUFFERS];
    state_buffers(s, b);
    for (int i = 0; i < STATE_BUFFERS; i++) {
        if (!b[i].buf) continue;
        const dbk_ckpt_tensor *t = dbk_checkpoint_find(c, b[i].name);
        if (!t) return dbk_set_error(DBK_ERR_FORMAT, "%s: no tensor '%s' in the training state", path, b[i].name);
        if (t->ndim != 1 || t->shape[0] != (int64_t)b[i].count)
            return dbk_set_error(DBK_ERR_FORMAT, "%s: tensor '%s' holds %lld values, the run has %zu", path, b[i].name,
                                 (long long)t->shape[0], b[i].count);
        DBK_TRY(dbk_buffer_write(b[i].buf, 0, t->data, b[i].count * 4));
    }
    return dbk_backend_sync(s->be);
}

/* ---------------------------------------------------------------------------------- */
/* the training state between two sessions of one run (progressive resizing)         */

struct dbk_session_state {
    float          *host[STATE_BUFFERS];   /* NULL where the session has no such buffer */
    size_t          count[STATE_BUFFERS];
    dbk_loss_scaler scaler;
};

void dbk_session_state_destroy(dbk_session_state *st) {
    if (!st) return;
    for (int i = 0; i < STATE_BUFFERS; i++) dbk_free(st->host[i]);
    dbk_free(st);
}

dbk_status dbk_session_state_take(dbk_session *s, dbk_session_state **out) {
    *out = NULL;
    dbk_session_state *st = dbk_calloc(1, sizeof *st);
    if (!st) return DBK_ERR_OUT_OF_HOST_MEMORY;
    state_buffer b[STATE_BUFFERS];
    state_buffers(s, b);
    dbk_status rc = dbk_backend_sync(s->be);
    if (rc == DBK_OK) rc = dbk_session_read_scaler(s);
    for (int i = 0; i < STATE_BUFFERS && rc == DBK_OK; i++) {
        if (!b[i].buf) continue;
        st->count[i] = b[i].count;
        if (!(st->host[i] = dbk_malloc(b[i].count * 4 + 4))) rc = DBK_ERR_OUT_OF_HOST_MEMORY;
        else rc = dbk_buffer_read(b[i].buf, 0, st->host[i], b[i].count * 4);
    }
    st->scaler = s->scaler;
    if (rc != DBK_OK) {
        dbk_session_state_destroy(st);
        return rc;
    }
    *out = st;
    return DBK_OK;
}

dbk_status dbk_session_state_put(dbk_session *s, const dbk_session_state *st) {
    state_buffer b[STATE_BUFFERS];
    state_buffers(s, b);
    for (int i = 0; i < STATE_BUFFERS; i++) {
        if (!b[i].buf && !st->host[i]) continue;
        if (!b[i].buf || !st->host[i] || b[i].count != st->count[i])
            return dbk_set_error(DBK_ERR_INVALID_ARG, "model %s: '%s' holds %zu values at %dx%d, %zu before; its "
                                 "parameters depend on the image size", s->cfg.model->name, b[i].name, b[i].count,
                                 s->cfg.input.height, s->cfg.input.width, st->count[i]);
    }
    for (int i = 0; i < STATE_BUFFERS; i++)
        if (b[i].buf) DBK_TRY(dbk_buffer_write(b[i].buf, 0, st->host[i], b[i].count * 4));
    s->scaler = st->scaler;
    s->amp_dirty = s->cfg.fp16;
    return dbk_backend_sync(s->be);
}
