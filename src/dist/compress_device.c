/*
 * compress_device.c — compression on the training device (see compress_device.h): the segment
 * and chunk tables (random-k: the segments' first pairs and scales) are written once; each
 * step runs [ADD residual] -> SPARSE_SELECT -> read the count and the pairs (random-k: write
 * the host's draws -> SPARSE_GATHER -> read the pairs; TernGrad, QSGD: QUANT_ENCODE -> read
 * the fixed-size payload) -> [COPY, SPARSE_ADD or QUANT_ADD -1: the residual] and, after the
 * exchange, FILL 0 -> SPARSE_ADD or QUANT_ADD 1/ranks per rank. Reads block until the ops
 * before them have run, so no sync precedes them.
 */
#include "dist/compress_device.h"

#include <string.h>

#include "core/alloc.h"
#include "core/quant.h"

/* Elements per chunk of SPARSE_SELECT: one device work-item walks a chunk in order. */
#define SELECT_CHUNK 512
#define PAIR_BYTES   8u

struct dbk_device_compressor {
    dbk_backend          *be;
    dbk_compressor       *host;
    dbk_compress_spec     spec;
    int                   ranks;
    size_t                n, max_payload;
    int                   segment_count, chunk_count;
    size_t                stride;       /* bytes per rank's payload in recv (quantised: whole words) */
    dbk_buffer           *vector, *residual, *tables, *pairs, *count, *work, *recv;
    dbk_buffer           *indices;      /* random-k: the step's draws */
    int32_t              *drawn;        /* random-k: (max_payload / 8) the draws on the host */
};

bool dbk_device_compress_supported(const dbk_compress_spec *spec) { return spec->method != DBK_COMPRESS_NONE; }

static bool is_quantised(const dbk_device_compressor *dc) {
    return dc->spec.method == DBK_COMPRESS_TERNGRAD || dc->spec.method == DBK_COMPRESS_QSGD;
}

static int quant_levels(const dbk_device_compressor *dc) {
    return dc->spec.method == DBK_COMPRESS_TERNGRAD ? 0 : dc->spec.levels;
}

void dbk_device_compressor_destroy(dbk_device_compressor *dc) {
    if (!dc) return;
    dbk_buffer *bufs[] = {dc->vector, dc->residual, dc->tables, dc->pairs, dc->count, dc->work, dc->recv, dc->indices};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) dbk_buffer_destroy(bufs[i]);
    dbk_free(dc->drawn);
    dbk_free(dc);
}

static dbk_status create_buffer(dbk_backend *be, size_t bytes, dbk_buffer **out) {
    return dbk_buffer_create(be, bytes ? bytes : 4, out);
}

/* Random-k's table (S,2) {first pair, scale bits} into tables. */
static dbk_status write_scales(dbk_device_compressor *dc) {
    const dbk_segment *segs;
    const int S = dbk_compressor_segments(dc->host, &segs);
    int32_t *tab = dbk_malloc((size_t)S * 2 * sizeof *tab);
    if (!tab) return DBK_ERR_OUT_OF_HOST_MEMORY;
    int32_t first = 0;
    for (int s = 0; s < S; s++) {
        const float scale = dbk_compressor_randomk_scale(dc->host, segs[s].count);
        tab[2 * s] = first;
        memcpy(&tab[2 * s + 1], &scale, sizeof scale);
        first += (int32_t)dbk_compressor_kept(dc->host, segs[s].count);
    }
    dc->segment_count = S;
    dbk_status st = create_buffer(dc->be, (size_t)S * 2 * sizeof *tab, &dc->tables);
    if (st == DBK_OK) st = dbk_buffer_write(dc->tables, 0, tab, (size_t)S * 2 * sizeof *tab);
    if (st == DBK_OK) st = create_buffer(dc->be, dc->max_payload / 2, &dc->indices);
    if (st == DBK_OK && !(dc->drawn = dbk_malloc(dc->max_payload / 2 + 4))) st = DBK_ERR_OUT_OF_HOST_MEMORY;
    dbk_free(tab);
    return st;
}

/* The segment table seg (S,3) then its chunk table (C,3) of pieces of `chunk`, into tables. */
static dbk_status upload_tables(dbk_device_compressor *dc, const int32_t *seg, int S, int chunk) {
    const int C = dbk_select_chunks(seg, S, chunk, NULL);
    int32_t *tab = dbk_malloc((size_t)(S + C) * 3 * sizeof *tab);
    if (!tab) return DBK_ERR_OUT_OF_HOST_MEMORY;
    memcpy(tab, seg, (size_t)S * 3 * sizeof *tab);
    dbk_select_chunks(seg, S, chunk, tab + 3 * S);
    dc->segment_count = S;
    dc->chunk_count = C;
    dbk_status st = create_buffer(dc->be, (size_t)(S + C) * 3 * sizeof *tab, &dc->tables);
    if (st == DBK_OK) st = dbk_buffer_write(dc->tables, 0, tab, (size_t)(S + C) * 3 * sizeof *tab);
    dbk_free(tab);
    return st;
}

/* The segment table (S,3) {offset, count, third} per the host's segments: top-k's k, or
 * (quantised) the byte of the segment's payload; then the chunk table, into tables. */
static dbk_status write_tables(dbk_device_compressor *dc) {
    const dbk_segment *segs;
    const int S = dbk_compressor_segments(dc->host, &segs);
    const bool quantised = is_quantised(dc);
    const size_t bits = quantised ? (size_t)dbk_quant_code_bits(quant_levels(dc)) : 0;
    int32_t *seg = dbk_malloc((size_t)S * 3 * sizeof *seg);
    if (!seg) return DBK_ERR_OUT_OF_HOST_MEMORY;
    size_t byte = 0;
    for (int s = 0; s < S; s++) {
        seg[3 * s] = (int32_t)segs[s].offset;
        seg[3 * s + 1] = (int32_t)segs[s].count;
        seg[3 * s + 2] = quantised ? (int32_t)byte : (int32_t)dbk_compressor_kept(dc->host, segs[s].count);
        byte += 4 + (segs[s].count * bits + 7) / 8;
    }
    DBK_ASSERT(!quantised || byte == dc->max_payload);
    dbk_status st = upload_tables(dc, seg, S, quantised ? DBK_QUANT_CHUNK : SELECT_CHUNK);
    dbk_free(seg);
    const size_t work = quantised ? (size_t)(dc->chunk_count + S) * sizeof(float)
                                  : (size_t)(258 * S + 2 * dc->chunk_count) * sizeof(int32_t);
    return st == DBK_OK ? create_buffer(dc->be, work, &dc->work) : st;
}

dbk_tensor dbk_device_compressor_vector(const dbk_device_compressor *dc) {
    return dbk_tensor_make(dc->vector, 0, DBK_DTYPE_F32, 1, (int64_t)dc->n, 1, 1, 1);
}

static dbk_tensor residual_tensor(const dbk_device_compressor *dc) {
    return dbk_tensor_make(dc->residual, 0, DBK_DTYPE_F32, 1, (int64_t)dc->n, 1, 1, 1);
}

dbk_status dbk_device_compressor_create(dbk_backend *be, dbk_compressor *host, int ranks,
                                        dbk_device_compressor **out) {
    *out = NULL;
    const dbk_segment *segs;
    const int S = dbk_compressor_segments(host, &segs);
    dbk_device_compressor *dc = dbk_calloc(1, sizeof *dc);
    if (!dc) return DBK_ERR_OUT_OF_HOST_MEMORY;
    dc->be = be;
    dc->host = host;
    dc->ranks = ranks;
    dc->spec = *dbk_compressor_spec(host);
    dc->n = S > 0 ? segs[S - 1].offset + segs[S - 1].count : 0;
    dc->max_payload = dbk_compressor_max_payload(host);
    if (!dbk_device_compress_supported(&dc->spec)) {
        dbk_free(dc);
        return dbk_set_error(DBK_ERR_INVALID_ARG, "compression 'none' does not run on the device (an allreduce "
                             "averages the dense gradient)");
    }
    dc->stride = is_quantised(dc) ? (dc->max_payload + 3) / 4 * 4 : dc->max_payload;
    dbk_status st = dc->spec.method == DBK_COMPRESS_RANDOMK ? write_scales(dc) : write_tables(dc);
    if (st == DBK_OK) st = create_buffer(be, dc->n * sizeof(float), &dc->vector);
    if (st == DBK_OK) st = create_buffer(be, dc->n * sizeof(float), &dc->residual);
    if (st == DBK_OK) st = create_buffer(be, dc->stride, &dc->pairs);
    if (st == DBK_OK) st = create_buffer(be, sizeof(int32_t), &dc->count);
    if (st == DBK_OK) st = create_buffer(be, dc->stride * (size_t)ranks, &dc->recv);
    if (st == DBK_OK && dc->n) {
        const dbk_op_desc clear = {.op = DBK_OP_FILL,
                                   .dst = {residual_tensor(dc)},
                                   .p.fill.value = 0.0f,
                                   .label = "compress.residual"};
        st = dbk_backend_run(be, &clear);
    }
    if (st != DBK_OK) {
        dbk_device_compressor_destroy(dc);
        return st;
    }
    *out = dc;
    return DBK_OK;
}

/* acc += alpha * the `pairs` pairs at byte `offset` of buf. */
static dbk_status sparse_add(dbk_device_compressor *dc, dbk_buffer *buf, size_t offset, size_t pairs, float alpha,
                             dbk_tensor acc) {
    if (!pairs) return DBK_OK;
    const dbk_op_desc op = {.op = DBK_OP_SPARSE_ADD,
                            .src = {dbk_tensor_make(buf, offset, DBK_DTYPE_I32, 1, 2 * (int64_t)pairs, 1, 1, 1)},
                            .dst = {acc},
                            .p.scale.alpha = alpha,
                            .label = "compress.decode"};
    return dbk_backend_run(dc->be, &op);
}

static dbk_tensor segment_table(const dbk_device_compressor *dc) {
    return dbk_tensor_make(dc->tables, 0, DBK_DTYPE_I32, 2, dc->segment_count, 3, 1, 1);
}

/* TernGrad, QSGD: acc += alpha * the payload at byte `offset` (a multiple of 4) of buf. */
static dbk_status quant_add(dbk_device_compressor *dc, dbk_buffer *buf, size_t offset, float alpha, dbk_tensor acc) {
    const dbk_op_desc op = {.op = DBK_OP_QUANT_ADD,
                            .src = {dbk_tensor_make(buf, offset, DBK_DTYPE_I32, 1, (int64_t)(dc->stride / 4), 1, 1, 1),
                                    segment_table(dc)},
                            .dst = {acc},
                            .p.quant = {.levels = quant_levels(dc), .alpha = alpha},
                            .label = "compress.decode"};
    return dbk_backend_run(dc->be, &op);
}

/* TernGrad, QSGD: the vector's payload into pairs (max_payload bytes). */
static dbk_status quant_encode(dbk_device_compressor *dc, uint64_t seed) {
    const int S = dc->segment_count, C = dc->chunk_count;
    const dbk_op_desc op = {
        .op = DBK_OP_QUANT_ENCODE,
        .src = {dbk_device_compressor_vector(dc), segment_table(dc),
                dbk_tensor_make(dc->tables, (size_t)S * 3 * sizeof(int32_t), DBK_DTYPE_I32, 2, C, 3, 1, 1)},
        .dst = {dbk_tensor_make(dc->pairs, 0, DBK_DTYPE_I32, 1, (int64_t)(dc->stride / 4), 1, 1, 1),
                dbk_tensor_make(dc->work, 0, DBK_DTYPE_F32, 1, C + S, 1, 1, 1)},
        .p.quant = {.levels = quant_levels(dc), .seed_lo = (uint32_t)seed, .seed_hi = (uint32_t)(seed >> 32)},
        .label = "compress.quantise"};
    return dbk_backend_run(dc->be, &op);
}

/* Random-k: the host's draws to the device, gathered into the pairs; *count gets their number. */
static dbk_status gather(dbk_device_compressor *dc, uint64_t seed, int32_t *count) {
    const size_t k = dbk_compressor_randomk_draw(dc->host, seed, dc->drawn);
    DBK_TRY(dbk_buffer_write(dc->indices, 0, dc->drawn, k * sizeof *dc->drawn));
    const dbk_op_desc op = {
        .op = DBK_OP_SPARSE_GATHER,
        .src = {dbk_device_compressor_vector(dc), dbk_tensor_make(dc->indices, 0, DBK_DTYPE_I32, 1, (int64_t)k, 1, 1, 1),
                dbk_tensor_make(dc->tables, 0, DBK_DTYPE_I32, 2, dc->segment_count, 2, 1, 1)},
        .dst = {dbk_tensor_make(dc->pairs, 0, DBK_DTYPE_I32, 1, 2 * (int64_t)k, 1, 1, 1)},
        .label = "compress.gather"};
    DBK_TRY(dbk_backend_run(dc->be, &op));
    *count = (int32_t)k;
    return DBK_OK;
}

/* Top-k, threshold: the selection; *count gets the pairs' number (read back). */
static dbk_status select_pairs(dbk_device_compressor *dc, int32_t *count) {
    const dbk_tensor x = dbk_device_compressor_vector(dc);
    const int S = dc->segment_count, C = dc->chunk_count;
    const dbk_op_desc select = {
        .op = DBK_OP_SPARSE_SELECT,
        .src = {x, dbk_tensor_make(dc->tables, 0, DBK_DTYPE_I32, 2, S, 3, 1, 1),
                dbk_tensor_make(dc->tables, (size_t)S * 3 * sizeof(int32_t), DBK_DTYPE_I32, 2, C, 3, 1, 1)},
        .dst = {dbk_tensor_make(dc->pairs, 0, DBK_DTYPE_I32, 1, (int64_t)(dc->max_payload / 4), 1, 1, 1),
                dbk_tensor_make(dc->count, 0, DBK_DTYPE_I32, 1, 1, 1, 1, 1),
                dbk_tensor_make(dc->work, 0, DBK_DTYPE_I32, 1, 258 * S + 2 * C, 1, 1, 1)},
        .p.select = {dc->spec.method == DBK_COMPRESS_TOPK, (float)dc->spec.threshold},
        .label = "compress.select"};
    DBK_TRY(dbk_backend_run(dc->be, &select));
    return dbk_buffer_read(dc->count, 0, count, sizeof *count);
}

dbk_status dbk_device_compressor_encode(dbk_device_compressor *dc, uint64_t seed, uint8_t *payload, size_t *bytes) {
    const dbk_tensor x = dbk_device_compressor_vector(dc), r = residual_tensor(dc);
    *bytes = 0;
    if (!dc->n) return DBK_OK;
    if (dc->spec.error_feedback) {
        const dbk_op_desc add = {.op = DBK_OP_ADD, .src = {x, r}, .dst = {x}, .label = "compress.feedback"};
        DBK_TRY(dbk_backend_run(dc->be, &add));
    }
    int32_t count = 0;
    if (is_quantised(dc)) {
        DBK_TRY(quant_encode(dc, seed));
        *bytes = dc->max_payload;
    } else {
        if (dc->spec.method == DBK_COMPRESS_RANDOMK) DBK_TRY(gather(dc, seed, &count));
        else DBK_TRY(select_pairs(dc, &count));
        if (count < 0 || (size_t)count * PAIR_BYTES > dc->max_payload)
            return dbk_set_error(DBK_ERR_FORMAT, "device compression selected %d pairs; at most %zu fit", (int)count,
                                 dc->max_payload / PAIR_BYTES);
        *bytes = (size_t)count * PAIR_BYTES;
    }
    if (*bytes) DBK_TRY(dbk_buffer_read(dc->pairs, 0, payload, *bytes));
    if (dc->spec.error_feedback) { /* residual = what the payload leaves out of x */
        const dbk_op_desc copy = {.op = DBK_OP_COPY, .src = {x}, .dst = {r}, .label = "compress.residual"};
        DBK_TRY(dbk_backend_run(dc->be, &copy));
        if (is_quantised(dc)) DBK_TRY(quant_add(dc, dc->pairs, 0, -1.0f, r));
        else DBK_TRY(sparse_add(dc, dc->pairs, 0, (size_t)count, -1.0f, r));
    }
    return DBK_OK;
}

dbk_status dbk_device_compressor_decode_mean(dbk_device_compressor *dc, const uint8_t *recv, const int *counts,
                                             const int *displs) {
    size_t end = 0;
    for (int k = 0; k < dc->ranks; k++) {
        DBK_TRY(dbk_compressor_check_payload(dc->host, recv + displs[k], (size_t)counts[k]));
        const size_t e = (size_t)displs[k] + (size_t)counts[k];
        end = e > end ? e : end;
    }
    if (!dc->n) return DBK_OK;
    if (end > dc->max_payload * (size_t)dc->ranks)
        return dbk_set_error(DBK_ERR_FORMAT, "received payloads of %zu bytes; at most %zu fit", end,
                             dc->max_payload * (size_t)dc->ranks);
    if (is_quantised(dc)) { /* each rank's payload at a whole word, as QUANT_ADD reads it */
        for (int k = 0; k < dc->ranks; k++)
            DBK_TRY(dbk_buffer_write(dc->recv, (size_t)k * dc->stride, recv + displs[k], (size_t)counts[k]));
    } else if (end) {
        DBK_TRY(dbk_buffer_write(dc->recv, 0, recv, end));
    }
    const dbk_tensor x = dbk_device_compressor_vector(dc);
    const dbk_op_desc zero = {.op = DBK_OP_FILL, .dst = {x}, .p.fill.value = 0.0f, .label = "compress.mean"};
    DBK_TRY(dbk_backend_run(dc->be, &zero));
    const float alpha = 1.0f / (float)dc->ranks;
    for (int k = 0; k < dc->ranks; k++) {
        if (is_quantised(dc)) DBK_TRY(quant_add(dc, dc->recv, (size_t)k * dc->stride, alpha, x));
        else DBK_TRY(sparse_add(dc, dc->recv, (size_t)displs[k], (size_t)counts[k] / PAIR_BYTES, alpha, x));
    }
    return DBK_OK;
}

dbk_status dbk_device_compressor_read_residual(const dbk_device_compressor *dc, float *out) {
    return dc->n ? dbk_buffer_read(dc->residual, 0, out, dc->n * sizeof *out) : DBK_OK;
}

dbk_status dbk_device_compressor_write_residual(dbk_device_compressor *dc, const float *in) {
    return dc->n ? dbk_buffer_write(dc->residual, 0, in, dc->n * sizeof *in) : DBK_OK;
}
