/*
 * compress.c — the gradient-compression ops of data-parallel training (op_list.h:
 * SPARSE_SELECT, SPARSE_ADD, SPARSE_GATHER, QUANT_ENCODE, QUANT_ADD) for the CPU reference
 * backend. QUANT_ENCODE and QUANT_ADD are core/quant.h's coding of TernGrad and QSGD.
 *
 * SPARSE_SELECT keeps, per segment of x and in index order, the k elements of largest
 * magnitude (top-k) or every element with |x| >= V (threshold), as {index, value bits} pairs:
 * the same payload as the host compressor (src/dist/compress.c). Magnitudes compare as the
 * bits of |x| (bits & 0x7fffffff), whose unsigned order is the float order. Top-k's
 * threshold t is the k-th largest magnitude, here found plainly by sorting a copy of the
 * segment's magnitudes; ties at t are taken in index order until k are kept. The op's work
 * tensor ends as the contract says (per segment t and its ties, per chunk its first pair and
 * the ties left at its start, zero histograms), so the device kernels' bookkeeping is checked
 * too.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu_internal.h"
#include "core/alloc.h"
#include "core/quant.h"

static uint32_t magnitude_bits(float v) {
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    return b & 0x7fffffffu;
}

static int descending(const void *a, const void *b) {
    const uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The tables as op_list.h promises them: segments in order inside x, k in [1, count] for
 * top-k, chunks consecutive and each inside its segment. */
static dbk_status check_tables(const int32_t *seg, int64_t S, const int32_t *chunks, int64_t C, int64_t n,
                               bool topk) {
    int64_t next = 0;
    for (int64_t s = 0; s < S; s++) {
        const int64_t off = seg[3 * s], count = seg[3 * s + 1], k = seg[3 * s + 2];
        if (off < next || count < 1 || off + count > n || (topk && (k < 1 || k > count)))
            return dbk_set_error(DBK_ERR_INVALID_ARG, "sparse_select: segment %lld {%lld, %lld, k %lld} is out of "
                                 "order, empty, outside x (%lld) or has k outside [1, count]", (long long)s,
                                 (long long)off, (long long)count, (long long)k, (long long)n);
        next = off + count;
    }
    int64_t prev_seg = -1, at = 0;
    for (int64_t c = 0; c < C; c++) {
        const int64_t off = chunks[3 * c], count = chunks[3 * c + 1], s = chunks[3 * c + 2];
        if (s < 0 || s >= S || s < prev_seg) goto bad;
        if (s != prev_seg) at = seg[3 * s];
        if (off != at || count < 1 || off + count > seg[3 * s] + seg[3 * s + 1]) goto bad;
        at += count;
        prev_seg = s;
        continue;
    bad:
        return dbk_set_error(DBK_ERR_INVALID_ARG, "sparse_select: chunk %lld {%lld, %lld, segment %lld} does not "
                             "continue its segment", (long long)c, (long long)off, (long long)count, (long long)s);
    }
    return DBK_OK;
}

dbk_status dbk_cpu_sparse_select(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const float *x = dbk_cpu_f32(&op->src[0]);            /* (n) */
    const int32_t *seg = dbk_cpu_i32(&op->src[1]);        /* (S,3) {offset, count, k} */
    const int32_t *chunks = dbk_cpu_i32(&op->src[2]);     /* (C,3) {offset, count, segment} */
    int32_t *pairs = dbk_cpu_i32(&op->dst[0]);            /* (2P) {index, value bits} */
    int32_t *count = dbk_cpu_i32(&op->dst[1]);            /* (1) */
    int32_t *work = dbk_cpu_i32(&op->dst[2]);             /* (258S + 2C) */
    const int64_t n = dbk_tensor_numel(&op->src[0]), S = op->src[1].shape[0], C = op->src[2].shape[0];
    const int64_t cap = dbk_tensor_numel(&op->dst[0]) / 2;
    const bool topk = op->p.select.topk;
    DBK_TRY(check_tables(seg, S, chunks, C, n, topk));

    /* per segment: the threshold's bits and how many elements equal to it are taken */
    int64_t longest = 1;
    for (int64_t s = 0; s < S; s++) longest = seg[3 * s + 1] > longest ? seg[3 * s + 1] : longest;
    uint32_t *mag = topk ? dbk_malloc((size_t)longest * sizeof *mag) : NULL;
    if (topk && !mag) return DBK_ERR_OUT_OF_HOST_MEMORY;
    for (int64_t s = 0; s < S; s++) {
        if (!topk) {
            work[2 * s] = (int32_t)magnitude_bits(op->p.select.threshold);
            work[2 * s + 1] = INT32_MAX;
            continue;
        }
        const int32_t off = seg[3 * s], cnt = seg[3 * s + 1], k = seg[3 * s + 2];
        for (int32_t i = 0; i < cnt; i++) mag[i] = magnitude_bits(x[off + i]);
        qsort(mag, (size_t)cnt, sizeof *mag, descending);
        const uint32_t t = mag[k - 1];
        int32_t above = 0;
        while (mag[above] > t) above++;
        work[2 * s] = (int32_t)t;
        work[2 * s + 1] = k - above;
    }
    dbk_free(mag);

    /* per chunk, in order: its first pair and the ties left; then the pairs */
    int64_t total = 0, tl = 0, prev_seg = -1;
    for (int64_t c = 0; c < C; c++) {
        const int32_t off = chunks[3 * c], cnt = chunks[3 * c + 1], s = chunks[3 * c + 2];
        if (s != prev_seg) tl = work[2 * s + 1];
        prev_seg = s;
        work[2 * S + 2 * c] = (int32_t)total;
        work[2 * S + 2 * c + 1] = (int32_t)tl;
        const uint32_t t = (uint32_t)work[2 * s];
        for (int32_t i = 0; i < cnt; i++) {
            const uint32_t m = magnitude_bits(x[off + i]);
            if (!(m > t || (m == t && tl > 0))) continue;
            if (m == t) tl--;
            if (total >= cap)
                return dbk_set_error(DBK_ERR_INVALID_ARG, "sparse_select: more than the %lld pairs dst0 holds",
                                     (long long)cap);
            pairs[2 * total] = off + i;
            memcpy(&pairs[2 * total + 1], &x[off + i], sizeof(float));
            total++;
        }
    }
    memset(work + 2 * S + 2 * C, 0, (size_t)(256 * S) * sizeof *work);
    *count = (int32_t)total;
    return DBK_OK;
}

dbk_status dbk_cpu_sparse_add(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const int32_t *pairs = dbk_cpu_i32(&op->src[0]);      /* (2k) {index, value bits} */
    float *acc = dbk_cpu_f32(&op->dst[0]);                /* (n) */
    const int64_t k = dbk_tensor_numel(&op->src[0]) / 2, n = dbk_tensor_numel(&op->dst[0]);
    const float alpha = op->p.scale.alpha;
    for (int64_t j = 0; j < k; j++) {
        const uint32_t i = (uint32_t)pairs[2 * j];
        float v;
        memcpy(&v, &pairs[2 * j + 1], sizeof v);
        if (i < (uint64_t)n) acc[i] += alpha * v;
    }
    return DBK_OK;
}

dbk_status dbk_cpu_sparse_scatter(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const int32_t *pairs = dbk_cpu_i32(&op->src[0]);      /* (2k) {index, value bits} */
    float *y = dbk_cpu_f32(&op->dst[0]);                  /* (n) */
    const int64_t k = dbk_tensor_numel(&op->src[0]) / 2, n = dbk_tensor_numel(&op->dst[0]);
    for (int64_t j = 0; j < k; j++) {
        const uint32_t i = (uint32_t)pairs[2 * j];
        float v = op->p.scatter.value;
        if (!op->p.scatter.constant) memcpy(&v, &pairs[2 * j + 1], sizeof v);
        if (i < (uint64_t)n) y[i] = v;
    }
    return DBK_OK;
}

dbk_status dbk_cpu_sparse_gather(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const float *x = dbk_cpu_f32(&op->src[0]);            /* (n) */
    const int32_t *indices = dbk_cpu_i32(&op->src[1]);    /* (k) */
    const int32_t *scales = dbk_cpu_i32(&op->src[2]);     /* (S,2) {first pair, scale bits} */
    int32_t *pairs = dbk_cpu_i32(&op->dst[0]);            /* (2k) */
    const int64_t n = dbk_tensor_numel(&op->src[0]), k = dbk_tensor_numel(&op->src[1]), S = op->src[2].shape[0];
    for (int64_t s = 0; s < S; s++)
        if (scales[2 * s] < 0 || (s == 0 && scales[0] != 0) || (s > 0 && scales[2 * s] < scales[2 * s - 2]))
            return dbk_set_error(DBK_ERR_INVALID_ARG, "sparse_gather: segment %lld's first pair %d is out of order",
                                 (long long)s, (int)scales[2 * s]);
    int64_t s = 0;
    for (int64_t j = 0; j < k; j++) {
        while (s + 1 < S && scales[2 * (s + 1)] <= j) s++;
        const int32_t i = indices[j];
        if (i < 0 || i >= n)
            return dbk_set_error(DBK_ERR_INVALID_ARG, "sparse_gather: index %d outside x (%lld)", (int)i, (long long)n);
        float scale;
        memcpy(&scale, &scales[2 * s + 1], sizeof scale);
        const float v = x[i] * scale;
        pairs[2 * j] = i;
        memcpy(&pairs[2 * j + 1], &v, sizeof v);
    }
    return DBK_OK;
}

/* QUANT_ENCODE / QUANT_ADD: the segments cover [0, n) in order, each one's payload (its scale
 * and its codes, bits per element) right after the previous one's, within `words` words. */
static dbk_status check_quant_segments(const char *op, const int32_t *seg, int64_t S, int64_t n, int bits,
                                       int64_t words) {
    int64_t next = 0, byte = 0;
    for (int64_t s = 0; s < S; s++) {
        const int64_t count = seg[3 * s + 1];
        if (seg[3 * s] != next || count < 1 || seg[3 * s + 2] != byte || count * bits >= (int64_t)1 << 32)
            return dbk_set_error(DBK_ERR_INVALID_ARG, "%s: segment %lld {%lld, %lld, byte %lld} does not follow the "
                                 "previous one (offset %lld, byte %lld)", op, (long long)s, (long long)seg[3 * s],
                                 (long long)count, (long long)seg[3 * s + 2], (long long)next, (long long)byte);
        next += count;
        byte += 4 + (count * bits + 7) / 8;
    }
    if (next != n || byte > 4 * words || byte > (int64_t)1 << 29) /* device bit positions are 32-bit */
        return dbk_set_error(DBK_ERR_INVALID_ARG, "%s: the segments cover %lld of %lld values in %lld payload bytes "
                             "(%lld words; at most 512 MiB)", op, (long long)next, (long long)n, (long long)byte,
                             (long long)words);
    return DBK_OK;
}

dbk_status dbk_cpu_quant_encode(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const float *x = dbk_cpu_f32(&op->src[0]);            /* (n) */
    const int32_t *seg = dbk_cpu_i32(&op->src[1]);        /* (S,3) {offset, count, payload byte} */
    const int32_t *ch = dbk_cpu_i32(&op->src[2]);         /* (C,3) {offset, count, segment} */
    uint8_t *payload = (uint8_t *)dbk_cpu_i32(&op->dst[0]);
    float *work = dbk_cpu_f32(&op->dst[1]);               /* (C + S) */
    const int64_t n = dbk_tensor_numel(&op->src[0]), S = op->src[1].shape[0], C = op->src[2].shape[0];
    const int levels = op->p.quant.levels, bits = dbk_quant_code_bits(levels);
    const uint64_t seed = (uint64_t)op->p.quant.seed_hi << 32 | op->p.quant.seed_lo;
    DBK_TRY(check_quant_segments("quant_encode", seg, S, n, bits, dbk_tensor_numel(&op->dst[0])));
    if (dbk_select_chunks(seg, (int)S, DBK_QUANT_CHUNK, NULL) != C)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "quant_encode: %lld chunks; the segments make %d", (long long)C,
                             dbk_select_chunks(seg, (int)S, DBK_QUANT_CHUNK, NULL));
    int32_t *want = dbk_malloc((size_t)(C ? C : 1) * 3 * sizeof *want);
    if (!want) return DBK_ERR_OUT_OF_HOST_MEMORY;
    dbk_select_chunks(seg, (int)S, DBK_QUANT_CHUNK, want);
    const bool same = !memcmp(want, ch, (size_t)C * 3 * sizeof *want);
    dbk_free(want);
    if (!same) return dbk_set_error(DBK_ERR_INVALID_ARG, "quant_encode: the chunks are not the segments' pieces "
                                    "of %d", DBK_QUANT_CHUNK);
    for (int64_t c = 0; c < C; c++) { /* the chunks' max |x| or sums of squares */
        const float *xc = x + ch[3 * c];
        float p = 0.0f;
        for (int32_t i = 0; i < ch[3 * c + 1]; i++) p = levels == 0 ? fmaxf(p, fabsf(xc[i])) : p + xc[i] * xc[i];
        work[c] = p;
    }
    for (int64_t s = 0, c = 0; s < S; s++) { /* the segments' scales, their chunks in order */
        float a = 0.0f;
        for (; c < C && ch[3 * c + 2] == s; c++) a = levels == 0 ? fmaxf(a, work[c]) : a + work[c];
        work[C + s] = levels == 0 ? a : sqrtf(a);
    }
    const int64_t last = S - 1;
    const size_t bytes = (size_t)seg[3 * last + 2] + 4 + ((size_t)seg[3 * last + 1] * (size_t)bits + 7) / 8;
    memset(payload, 0, (bytes + 3) / 4 * 4);
    for (int64_t s = 0; s < S; s++) {
        const int32_t off = seg[3 * s], count = seg[3 * s + 1];
        const float scale = work[C + s];
        uint8_t *p = payload + seg[3 * s + 2];
        memcpy(p, &scale, 4);
        size_t pos = 0;
        for (int32_t i = 0; i < count; i++) {
            const float u = dbk_quant_uniform(seed, (uint32_t)(off + i));
            dbk_quant_put_bits(p + 4, &pos, dbk_quant_code(x[off + i], scale, u, levels), bits);
        }
    }
    return DBK_OK;
}

dbk_status dbk_cpu_quant_add(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const uint8_t *payload = (const uint8_t *)dbk_cpu_i32(&op->src[0]);
    const int32_t *seg = dbk_cpu_i32(&op->src[1]);        /* (S,3) {offset, count, payload byte} */
    float *acc = dbk_cpu_f32(&op->dst[0]);                /* (n) */
    const int64_t S = op->src[1].shape[0];
    const int levels = op->p.quant.levels, bits = dbk_quant_code_bits(levels);
    const float alpha = op->p.quant.alpha;
    DBK_TRY(check_quant_segments("quant_add", seg, S, dbk_tensor_numel(&op->dst[0]), bits,
                                 dbk_tensor_numel(&op->src[0])));
    for (int64_t s = 0; s < S; s++) {
        const uint8_t *p = payload + seg[3 * s + 2];
        float scale, v;
        memcpy(&scale, p, 4);
        size_t pos = 0;
        for (int32_t i = 0; i < seg[3 * s + 1]; i++)
            if (dbk_quant_value(dbk_quant_get_bits(p + 4, &pos, bits), scale, levels, &v))
                acc[seg[3 * s] + i] += alpha * v;
    }
    return DBK_OK;
}
