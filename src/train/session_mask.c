/*
 * session_mask.c — a session's sparse mask (see train/sparse_mask.h and session.h): the
 * empirical Fisher information accumulated on the training device from single images, the
 * top-k selection there, and the mask the optimizer reads.
 *
 * The device buffers: mask (one float per parameter, flat layout: 1 trains, 0 stays as it is),
 * importance (the same layout), mask_packed (the selectable parameters packed in range order:
 * first their importance, then their mask), and the selection's tables, pairs, count and work
 * (DBK_OP_SPARSE_SELECT over one segment). Every op is enqueued; a read blocks until the ops
 * before it have run.
 *
 * The Fisher program is a training step of one image without the update (session_step.c):
 * its batch norms normalise with the image's own statistics (training mode, as the model
 * trains) and write running statistics into a scratch buffer, so the model's are untouched.
 */
#include <string.h>

#include "core/alloc.h"
#include "core/rng.h"
#include "train/session_impl.h"

/* Elements per chunk of SPARSE_SELECT (one device work-item walks a chunk in order). */
#define SELECT_CHUNK 512

static dbk_tensor flat_view(dbk_buffer *b, dbk_dtype dt, size_t offset, size_t n) {
    return dbk_tensor_make(b, offset * 4, dt, 1, (int64_t)n, 1, 1, 1);
}

/* After the planning pass: the counts (sizes of the buffers); dbk_session_place_mask redoes
 * the layout at the final offsets. */
dbk_status dbk_session_alloc_mask(dbk_session *s) {
    const dbk_graph *g = s->train.graph;
    const int ranks = s->cfg.mask_ranks > 1 ? s->cfg.mask_ranks : 1;
    DBK_TRY(dbk_mask_layout_init(g, &s->mask_spec, ranks, &s->mask_layout));
    int samples = s->mask_spec.samples > 0 ? s->mask_spec.samples : DBK_MASK_DEFAULT_SAMPLES;
    if (samples > s->cfg.train_count) samples = s->cfg.train_count; /* FISH's loader runs out likewise */
    s->mask_spec.samples = s->mask_layout.samples = samples;
    const dbk_mask_layout *l = &s->mask_layout;
    const size_t np = dbk_graph_param_count(g), m = l->selectable_count;
    DBK_TRY(dbk_session_alloc(s, np * 4, "sparse mask", &s->mask));
    DBK_TRY(dbk_session_mask_dense(s)); /* defined from the start (resume.ckpt of epoch 0 holds it) */
    DBK_TRY(dbk_session_alloc(s, m * 4, "sparse mask (packed)", &s->mask_packed));
    DBK_TRY(dbk_session_alloc(s, l->select_count * 8, "sparse mask selection", &s->mask_pairs));
    if (s->mask_spec.method != DBK_MASK_FISHER) return DBK_OK;
    DBK_TRY(dbk_session_alloc(s, np * 4, "Fisher information", &s->importance));
    DBK_TRY(dbk_session_alloc(s, dbk_graph_state_count(g) * 4, "Fisher scratch statistics", &s->fisher_state));
    const size_t step_bytes = dbk_graph_step_bytes(s->fisher.graph);
    DBK_TRY(dbk_session_alloc(s, step_bytes, "Fisher per-step values", &s->fisher_steps));
    if (!(s->fisher_host = dbk_calloc(1, step_bytes + 1))) return DBK_ERR_OUT_OF_HOST_MEMORY;
    /* One segment, the whole packed vector; its k is written by each selection. */
    const int32_t seg[3] = {0, (int32_t)m, 1};
    const int C = dbk_select_chunks(seg, 1, SELECT_CHUNK, NULL);
    int32_t *tables = dbk_malloc((size_t)(3 + 3 * C) * sizeof *tables);
    if (!tables) return DBK_ERR_OUT_OF_HOST_MEMORY;
    memcpy(tables, seg, sizeof seg);
    dbk_select_chunks(seg, 1, SELECT_CHUNK, tables + 3);
    s->mask_chunks = C;
    dbk_status st = dbk_session_alloc(s, (size_t)(3 + 3 * C) * 4, "sparse mask tables", &s->mask_tables);
    if (st == DBK_OK) st = dbk_buffer_write(s->mask_tables, 0, tables, (size_t)(3 + 3 * C) * 4);
    dbk_free(tables);
    DBK_TRY(st);
    DBK_TRY(dbk_session_alloc(s, 4, "sparse mask selection count", &s->mask_count));
    return dbk_session_alloc(s, (size_t)(258 + 2 * C) * 4, "sparse mask selection work", &s->mask_work);
}

dbk_status dbk_session_place_mask(dbk_session *s) {
    const int samples = s->mask_layout.samples;
    dbk_mask_layout_deinit(&s->mask_layout);
    const int ranks = s->cfg.mask_ranks > 1 ? s->cfg.mask_ranks : 1;
    DBK_TRY(dbk_mask_layout_init(s->train.graph, &s->mask_spec, ranks, &s->mask_layout));
    s->mask_layout.samples = samples;
    return DBK_OK;
}

void dbk_session_free_mask(dbk_session *s) {
    dbk_buffer *bufs[] = {s->mask, s->importance, s->fisher_state, s->fisher_steps, s->mask_packed,
                          s->mask_tables, s->mask_pairs, s->mask_count, s->mask_work};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) dbk_buffer_destroy(bufs[i]);
    dbk_free(s->fisher_host);
    dbk_mask_layout_deinit(&s->mask_layout);
}

const dbk_mask_layout *dbk_session_mask_layout(const dbk_session *s) { return s->mask ? &s->mask_layout : NULL; }

static dbk_status fill(dbk_session *s, dbk_tensor t, float value) {
    dbk_op_desc op = {.op = DBK_OP_FILL, .p.fill.value = value};
    op.dst[0] = t;
    return dbk_backend_run(s->be, &op);
}

/* Copies between the flat layout and the packed selectable vector, range by range. */
static dbk_status copy_ranges(dbk_session *s, dbk_buffer *flat, bool to_packed) {
    const dbk_mask_layout *l = &s->mask_layout;
    size_t at = 0;
    for (int i = 0; i < l->range_count; i++) {
        const dbk_tensor f = flat_view(flat, DBK_DTYPE_F32, l->ranges[i].offset, l->ranges[i].count);
        const dbk_tensor p = flat_view(s->mask_packed, DBK_DTYPE_F32, at, l->ranges[i].count);
        dbk_op_desc op = {.op = DBK_OP_COPY};
        op.src[0] = to_packed ? f : p;
        op.dst[0] = to_packed ? p : f;
        DBK_TRY(dbk_backend_run(s->be, &op));
        at += l->ranges[i].count;
    }
    return DBK_OK;
}

dbk_status dbk_session_mask_dense(dbk_session *s) {
    DBK_ASSERT(s->mask);
    return fill(s, flat_view(s->mask, DBK_DTYPE_F32, 0, dbk_graph_param_count(s->train.graph)), 1.0f);
}

dbk_status dbk_session_fisher_select(dbk_session *s, int samples, uint32_t seed, size_t count) {
    DBK_ASSERT(s->fisher.recorded && count >= 1 && count <= s->mask_layout.select_count);
    const size_t np = dbk_graph_param_count(s->train.graph), m = s->mask_layout.selectable_count;
    if (samples <= 0 || samples > s->mask_layout.samples) samples = s->mask_layout.samples;
    DBK_TRY(fill(s, flat_view(s->importance, DBK_DTYPE_F32, 0, np), 0.0f));
    const dbk_graph *g = s->fisher.graph;
    for (int i = 0; i < samples; i++) {
        /* Image i of the epoch's shuffle, augmented as in training with the computation's own seed. */
        const dbk_step_ctx ctx = {.epoch = s->epoch > 0 ? s->epoch - 1 : 0, .step = i, .steps_per_epoch = samples,
                                  .first = i, .seed = seed, .run_seed = s->run_seed};
        dbk_graph_fill_step(g, &ctx, s->fisher_host);
        DBK_TRY(dbk_buffer_write(s->fisher_steps, 0, s->fisher_host, dbk_graph_step_host_bytes(g)));
        DBK_TRY(dbk_program_run(s->fisher.recorded));
    }
    DBK_TRY(copy_ranges(s, s->importance, true));
    const int32_t k = (int32_t)count;
    DBK_TRY(dbk_buffer_write(s->mask_tables, 8, &k, sizeof k)); /* the segment's k */
    dbk_op_desc op = {.op = DBK_OP_SPARSE_SELECT, .p.select = {.topk = true}};
    op.src[0] = flat_view(s->mask_packed, DBK_DTYPE_F32, 0, m);
    op.src[1] = dbk_tensor_make(s->mask_tables, 0, DBK_DTYPE_I32, 2, 1, 3, 1, 1);
    op.src[2] = dbk_tensor_make(s->mask_tables, 12, DBK_DTYPE_I32, 2, s->mask_chunks, 3, 1, 1);
    op.dst[0] = flat_view(s->mask_pairs, DBK_DTYPE_I32, 0, 2 * count);
    op.dst[1] = flat_view(s->mask_count, DBK_DTYPE_I32, 0, 1);
    op.dst[2] = flat_view(s->mask_work, DBK_DTYPE_I32, 0, 258 + 2 * (size_t)s->mask_chunks);
    DBK_TRY(dbk_backend_run(s->be, &op));
    s->mask_selected = count;
    return DBK_OK;
}

dbk_status dbk_session_read_selection(dbk_session *s, dbk_mask_pick *picks) {
    const size_t n = s->mask_selected;
    int32_t *pairs = dbk_malloc(n * 8 + 8);
    if (!pairs) return DBK_ERR_OUT_OF_HOST_MEMORY;
    dbk_status st = dbk_buffer_read(s->mask_pairs, 0, pairs, n * 8);
    for (size_t j = 0; st == DBK_OK && j < n; j++) {
        picks[j].index = pairs[2 * j];
        memcpy(&picks[j].importance, &pairs[2 * j + 1], sizeof picks[j].importance);
    }
    dbk_free(pairs);
    return st;
}

/* The mask from the first n pairs of the selection buffer: 1 at their packed indices, 0 at the
 * other selectable parameters, 1 at the rest (the classifier; frozen ones are never updated). */
static dbk_status mask_from_pairs(dbk_session *s, size_t n) {
    const size_t m = s->mask_layout.selectable_count;
    DBK_TRY(fill(s, flat_view(s->mask_packed, DBK_DTYPE_F32, 0, m), 0.0f));
    dbk_op_desc op = {.op = DBK_OP_SPARSE_SCATTER, .p.scatter = {.constant = true, .value = 1.0f}};
    op.src[0] = flat_view(s->mask_pairs, DBK_DTYPE_I32, 0, 2 * n);
    op.dst[0] = flat_view(s->mask_packed, DBK_DTYPE_F32, 0, m);
    if (n) DBK_TRY(dbk_backend_run(s->be, &op));
    DBK_TRY(dbk_session_mask_dense(s));
    return copy_ranges(s, s->mask, false);
}

dbk_status dbk_session_mask_from_selection(dbk_session *s) { return mask_from_pairs(s, s->mask_selected); }

dbk_status dbk_session_mask_from_indices(dbk_session *s, const int32_t *indices, size_t n) {
    DBK_ASSERT(n <= s->mask_layout.select_count);
    int32_t *pairs = dbk_malloc(n * 8 + 8);
    if (!pairs) return DBK_ERR_OUT_OF_HOST_MEMORY;
    const float one = 1.0f;
    for (size_t j = 0; j < n; j++) {
        pairs[2 * j] = indices[j];
        memcpy(&pairs[2 * j + 1], &one, sizeof one);
    }
    dbk_status st = n ? dbk_buffer_write(s->mask_pairs, 0, pairs, n * 8) : DBK_OK;
    dbk_free(pairs);
    DBK_TRY(st);
    return mask_from_pairs(s, n);
}

dbk_status dbk_session_warm_up_mask(dbk_session *s) {
    if (s->fisher.recorded) {
        DBK_TRY(dbk_session_fisher_select(s, 1, 0u, s->mask_layout.select_count));
        return dbk_session_mask_from_selection(s);
    }
    return dbk_session_mask_from_indices(s, NULL, 0);
}

dbk_status dbk_session_read_mask(dbk_session *s, float *out) {
    DBK_ASSERT(s->mask);
    return dbk_buffer_read(s->mask, 0, out, dbk_graph_param_count(s->train.graph) * 4);
}

dbk_status dbk_session_read_importance(dbk_session *s, float *out) {
    DBK_ASSERT(s->importance);
    return dbk_buffer_read(s->importance, 0, out, dbk_graph_param_count(s->train.graph) * 4);
}
