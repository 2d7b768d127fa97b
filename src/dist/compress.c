/*
 * compress.c — the gradient compressors (see compress.h): encoding into wire payloads and
 * decoding them back, on the host.
 */
#include "dist/compress.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/parse.h"
#include "core/quant.h"
#include "core/rng.h"

struct dbk_compressor {
    dbk_compress_spec spec;
    dbk_segment      *segments;
    int               segment_count;
    size_t            n;
    size_t            max_payload;
    int               code_bits;   /* terngrad, qsgd: bits of an element's code */
    float            *work;        /* (n) the gradient plus the residual */
    float            *residual;    /* (n) with error feedback */
    float            *magnitude;   /* (n) top-k's selection scratch */
    uint32_t         *index;       /* (n) random-k's draw scratch */
};

/* ---------------------------------------------------------------------------------- */
/* parsing                                                                            */

dbk_status dbk_compress_parse(const char *text, dbk_compress_spec *out) {
    const char *colon = strchr(text, ':');
    const size_t len = colon ? (size_t)(colon - text) : strlen(text);
    const char *arg = colon ? colon + 1 : NULL;
#define IS(name) (len == strlen(name) && !strncmp(text, name, len))
    if (IS("none") && !arg) out->method = DBK_COMPRESS_NONE;
    else if (IS("terngrad") && !arg) out->method = DBK_COMPRESS_TERNGRAD;
    else if (IS("randomk") || IS("topk")) {
        if (!arg || !dbk_parse_fraction(arg, &out->ratio))
            return dbk_set_error(DBK_ERR_INVALID_ARG, "compression '%s' needs a fraction of the gradient kept in (0, 1] "
                                 "or a percentage, e.g. %.*s:0.01 or %.*s:1%%", text, (int)len, text, (int)len, text);
        out->method = IS("topk") ? DBK_COMPRESS_TOPK : DBK_COMPRESS_RANDOMK;
    } else if (IS("threshold")) {
        char *end;
        out->threshold = arg ? strtod(arg, &end) : 0.0;
        if (!arg || end == arg || *end || !(out->threshold > 0.0) || !isfinite(out->threshold))
            return dbk_set_error(DBK_ERR_INVALID_ARG, "compression '%s' needs a magnitude > 0, e.g. threshold:0.001",
                                 text);
        out->method = DBK_COMPRESS_THRESHOLD;
    } else if (IS("qsgd")) {
        char *end;
        long q = arg ? strtol(arg, &end, 10) : 0;
        if (!arg || end == arg || *end || q < 1 || q > 65535)
            return dbk_set_error(DBK_ERR_INVALID_ARG, "compression '%s' needs a number of levels 1..65535, e.g. "
                                 "qsgd:255", text);
        out->levels = (int)q;
        out->method = DBK_COMPRESS_QSGD;
    } else {
        return dbk_set_error(DBK_ERR_INVALID_ARG, "unknown compression '%s' (none, randomk:K, topk:K, threshold:V, "
                             "terngrad, qsgd:Q)", text);
    }
#undef IS
    return DBK_OK;
}

dbk_status dbk_compress_parse_scope(const char *text, dbk_compress_spec *out) {
    if (!strcmp(text, "layerwise")) out->layerwise = true;
    else if (!strcmp(text, "model")) out->layerwise = false;
    else return dbk_set_error(DBK_ERR_INVALID_ARG, "unknown compression scope '%s' (layerwise or model)", text);
    return DBK_OK;
}

void dbk_compress_format(const dbk_compress_spec *spec, char *out, size_t cap) {
    switch (spec->method) {
    case DBK_COMPRESS_NONE:      snprintf(out, cap, "none"); break;
    case DBK_COMPRESS_RANDOMK:   snprintf(out, cap, "randomk:%g", spec->ratio); break;
    case DBK_COMPRESS_TOPK:      snprintf(out, cap, "topk:%g", spec->ratio); break;
    case DBK_COMPRESS_THRESHOLD: snprintf(out, cap, "threshold:%g", spec->threshold); break;
    case DBK_COMPRESS_TERNGRAD:  snprintf(out, cap, "terngrad"); break;
    case DBK_COMPRESS_QSGD:      snprintf(out, cap, "qsgd:%d", spec->levels); break;
    }
}

bool dbk_compress_is_sparse(dbk_compress_method m) {
    return m == DBK_COMPRESS_RANDOMK || m == DBK_COMPRESS_TOPK || m == DBK_COMPRESS_THRESHOLD;
}

/* ---------------------------------------------------------------------------------- */
/* sizes                                                                              */

#define PAIR_BYTES 8u

/* Elements random-k and top-k keep of a segment: ceil(ratio * count), at least 1. */
size_t dbk_compressor_kept(const dbk_compressor *c, size_t count) {
    size_t k = (size_t)ceil(c->spec.ratio * (double)count - 1e-9);
    if (k < 1) k = 1;
    return k > count ? count : k;
}

static size_t segment_code_bytes(const dbk_compressor *c, size_t count) {
    return 4 + (count * (size_t)c->code_bits + 7) / 8;
}

/* The levels argument of core/quant.h: 0 for TernGrad. */
static int quant_levels(const dbk_compressor *c) {
    return c->spec.method == DBK_COMPRESS_TERNGRAD ? 0 : c->spec.levels;
}

static size_t max_payload(const dbk_compressor *c) {
    size_t total = 0;
    for (int i = 0; i < c->segment_count; i++) {
        const size_t count = c->segments[i].count;
        switch (c->spec.method) {
        case DBK_COMPRESS_NONE:      total += count * 4; break;
        case DBK_COMPRESS_RANDOMK:
        case DBK_COMPRESS_TOPK:      total += dbk_compressor_kept(c, count) * PAIR_BYTES; break;
        case DBK_COMPRESS_THRESHOLD: total += count * PAIR_BYTES; break;
        case DBK_COMPRESS_TERNGRAD:
        case DBK_COMPRESS_QSGD:      total += segment_code_bytes(c, count); break;
        }
    }
    return total;
}

dbk_status dbk_compressor_create(const dbk_compress_spec *spec, const dbk_segment *segments, int segment_count,
                                 size_t n, dbk_compressor **out) {
    *out = NULL;
    if (n >= UINT32_MAX) return dbk_set_error(DBK_ERR_INVALID_ARG, "%zu gradients: more than a 32-bit index holds", n);
    dbk_compressor *c = dbk_calloc(1, sizeof *c);
    if (!c) return DBK_ERR_OUT_OF_HOST_MEMORY;
    c->spec = *spec;
    c->n = n;
    const dbk_segment whole = {0, n};
    if (!spec->layerwise || segment_count < 1) {
        segments = &whole;
        segment_count = 1;
    }
    size_t next = 0;
    for (int i = 0; i < segment_count; i++) {
        DBK_ASSERT(segments[i].offset == next && segments[i].count > 0);
        next += segments[i].count;
    }
    DBK_ASSERT(next == n);
    c->segment_count = segment_count;
    c->segments = dbk_malloc((size_t)segment_count * sizeof *c->segments);
    c->work = dbk_malloc((n ? n : 1) * sizeof *c->work);
    if (spec->error_feedback) c->residual = dbk_calloc(n ? n : 1, sizeof *c->residual);
    if (spec->method == DBK_COMPRESS_TOPK) c->magnitude = dbk_malloc((n ? n : 1) * sizeof *c->magnitude);
    if (spec->method == DBK_COMPRESS_RANDOMK) c->index = dbk_malloc((n ? n : 1) * sizeof *c->index);
    if (!c->segments || !c->work || (spec->error_feedback && !c->residual) ||
        (spec->method == DBK_COMPRESS_TOPK && !c->magnitude) || (spec->method == DBK_COMPRESS_RANDOMK && !c->index)) {
        dbk_compressor_destroy(c);
        return DBK_ERR_OUT_OF_HOST_MEMORY;
    }
    memcpy(c->segments, segments, (size_t)segment_count * sizeof *c->segments);
    c->code_bits = dbk_quant_code_bits(quant_levels(c));
    c->max_payload = max_payload(c);
    *out = c;
    return DBK_OK;
}

void dbk_compressor_destroy(dbk_compressor *c) {
    if (!c) return;
    dbk_free(c->segments);
    dbk_free(c->work);
    dbk_free(c->residual);
    dbk_free(c->magnitude);
    dbk_free(c->index);
    dbk_free(c);
}

size_t dbk_compressor_max_payload(const dbk_compressor *c) { return c->max_payload; }

const dbk_compress_spec *dbk_compressor_spec(const dbk_compressor *c) { return &c->spec; }

float *dbk_compressor_residual(dbk_compressor *c) { return c->residual; }

int dbk_compressor_segments(const dbk_compressor *c, const dbk_segment **out) {
    *out = c->segments;
    return c->segment_count;
}

/* ---------------------------------------------------------------------------------- */
/* encoding                                                                           */

static uint8_t *put_pair(uint8_t *p, size_t index, float value) {
    const uint32_t i = (uint32_t)index;
    memcpy(p, &i, 4);
    memcpy(p + 4, &value, 4);
    return p + PAIR_BYTES;
}

/* The k-th smallest of a[0..n) (0-based), reordering a: Wirth's selection (Hoare's
 * partition around a[k], narrowing to the side that holds k). */
static float select_kth(float *a, size_t n, size_t k) {
    long lo = 0, hi = (long)n - 1;
    const long kk = (long)k;
    while (lo < hi) {
        const float x = a[kk];
        long i = lo, j = hi;
        do {
            while (a[i] < x) i++;
            while (x < a[j]) j--;
            if (i <= j) {
                const float t = a[i];
                a[i] = a[j];
                a[j] = t;
                i++;
                j--;
            }
        } while (i <= j);
        if (j < kk) lo = i;
        if (kk < i) hi = j;
    }
    return a[kk];
}

static uint8_t *encode_topk(dbk_compressor *c, const float *g, size_t count, size_t base, uint8_t *p) {
    const size_t k = dbk_compressor_kept(c, count);
    for (size_t i = 0; i < count; i++) c->magnitude[i] = fabsf(g[i]);
    const float thr = select_kth(c->magnitude, count, count - k);
    size_t above = 0;
    for (size_t i = 0; i < count; i++) above += fabsf(g[i]) > thr;
    size_t ties = k - above; /* elements equal to the k-th magnitude, taken in index order */
    for (size_t i = 0; i < count; i++) {
        const float m = fabsf(g[i]);
        if (m > thr) {
            p = put_pair(p, base + i, g[i]);
        } else if (m == thr && ties > 0) {
            ties--;
            p = put_pair(p, base + i, g[i]);
        }
    }
    return p;
}

/* Random-k's draw of a segment of count elements: index[0..k) a uniform k-subset, in draw
 * order (a partial Fisher-Yates); returns k. */
static size_t draw_segment(dbk_compressor *c, size_t count, dbk_rng *rng) {
    const size_t k = dbk_compressor_kept(c, count);
    for (size_t i = 0; i < count; i++) c->index[i] = (uint32_t)i;
    for (size_t i = 0; i < k; i++) {
        const size_t j = i + (size_t)(dbk_rng_u64(rng) % (count - i));
        const uint32_t t = c->index[i];
        c->index[i] = c->index[j];
        c->index[j] = t;
    }
    return k;
}

float dbk_compressor_randomk_scale(const dbk_compressor *c, size_t count) {
    return (float)((double)count / (double)dbk_compressor_kept(c, count));
}

static uint8_t *encode_randomk(dbk_compressor *c, const float *g, size_t count, size_t base, dbk_rng *rng,
                               uint8_t *p) {
    const size_t k = draw_segment(c, count, rng);
    const float scale = dbk_compressor_randomk_scale(c, count);
    for (size_t i = 0; i < k; i++) p = put_pair(p, base + c->index[i], g[c->index[i]] * scale);
    return p;
}

size_t dbk_compressor_randomk_draw(dbk_compressor *c, uint64_t seed, int32_t *indices) {
    DBK_ASSERT(c->spec.method == DBK_COMPRESS_RANDOMK);
    dbk_rng rng;
    dbk_rng_init(&rng, seed);
    size_t at = 0;
    for (int s = 0; s < c->segment_count; s++) {
        const size_t k = draw_segment(c, c->segments[s].count, &rng);
        for (size_t i = 0; i < k; i++) indices[at++] = (int32_t)(c->segments[s].offset + c->index[i]);
    }
    return at;
}

static uint8_t *encode_threshold(const dbk_compressor *c, const float *g, size_t count, size_t base, uint8_t *p) {
    const float v = (float)c->spec.threshold;
    for (size_t i = 0; i < count; i++)
        if (fabsf(g[i]) >= v) p = put_pair(p, base + i, g[i]);
    return p;
}

/* A segment's scale: max |g| (TernGrad) or the L2 norm in DBK_QUANT_CHUNK pieces (QSGD). */
static float segment_scale(const dbk_compressor *c, const float *g, size_t count) {
    if (c->spec.method == DBK_COMPRESS_TERNGRAD) {
        float m = 0.0f;
        for (size_t i = 0; i < count; i++) m = fmaxf(m, fabsf(g[i]));
        return m;
    }
    float sum = 0.0f;
    for (size_t at = 0; at < count; at += DBK_QUANT_CHUNK) {
        const size_t end = count - at < DBK_QUANT_CHUNK ? count : at + DBK_QUANT_CHUNK;
        float piece = 0.0f;
        for (size_t i = at; i < end; i++) piece += g[i] * g[i];
        sum += piece;
    }
    return sqrtf(sum);
}

static uint8_t *encode_codes(const dbk_compressor *c, const float *g, size_t count, size_t base, uint64_t seed,
                             uint8_t *p) {
    const float scale = segment_scale(c, g, count);
    memcpy(p, &scale, 4);
    uint8_t *codes = p + 4;
    const size_t bytes = segment_code_bytes(c, count) - 4;
    memset(codes, 0, bytes);
    size_t pos = 0;
    for (size_t i = 0; i < count; i++) {
        const float u = dbk_quant_uniform(seed, (uint32_t)(base + i));
        dbk_quant_put_bits(codes, &pos, dbk_quant_code(g[i], scale, u, quant_levels(c)), c->code_bits);
    }
    return codes + bytes;
}

size_t dbk_compressor_encode(dbk_compressor *c, const float *g, uint64_t seed, uint8_t *payload) {
    const float *x = g;
    if (c->residual) {
        for (size_t i = 0; i < c->n; i++) c->work[i] = g[i] + c->residual[i];
        x = c->work;
    }
    dbk_rng rng;
    dbk_rng_init(&rng, seed);
    uint8_t *p = payload;
    for (int s = 0; s < c->segment_count; s++) {
        const size_t off = c->segments[s].offset, count = c->segments[s].count;
        switch (c->spec.method) {
        case DBK_COMPRESS_NONE:
            memcpy(p, x + off, count * 4);
            p += count * 4;
            break;
        case DBK_COMPRESS_TOPK:      p = encode_topk(c, x + off, count, off, p); break;
        case DBK_COMPRESS_RANDOMK:   p = encode_randomk(c, x + off, count, off, &rng, p); break;
        case DBK_COMPRESS_THRESHOLD: p = encode_threshold(c, x + off, count, off, p); break;
        case DBK_COMPRESS_TERNGRAD:
        case DBK_COMPRESS_QSGD:      p = encode_codes(c, x + off, count, off, seed, p); break;
        }
    }
    const size_t bytes = (size_t)(p - payload);
    DBK_ASSERT(bytes <= c->max_payload);
    if (c->residual) { /* residual = what this payload leaves out of x */
        memcpy(c->residual, x, c->n * sizeof *x);
        dbk_status st = dbk_compressor_decode_add(c, payload, bytes, -1.0f, c->residual);
        DBK_ASSERT(st == DBK_OK);
    }
    return bytes;
}

/* ---------------------------------------------------------------------------------- */
/* decoding                                                                           */

static void decode_codes(const dbk_compressor *c, const uint8_t *p, float alpha, float *acc) {
    for (int s = 0; s < c->segment_count; s++) {
        const size_t off = c->segments[s].offset, count = c->segments[s].count;
        float scale, v;
        memcpy(&scale, p, 4);
        size_t pos = 0;
        for (size_t i = 0; i < count; i++) {
            const uint32_t code = dbk_quant_get_bits(p + 4, &pos, c->code_bits);
            if (dbk_quant_value(code, scale, quant_levels(c), &v)) acc[off + i] += alpha * v;
        }
        p += segment_code_bytes(c, count);
    }
}

dbk_status dbk_compressor_decode_add(const dbk_compressor *c, const uint8_t *payload, size_t bytes, float alpha,
                                     float *acc) {
    DBK_TRY(dbk_compressor_check_payload(c, payload, bytes));
    switch (c->spec.method) {
    case DBK_COMPRESS_NONE:
        for (size_t i = 0; i < c->n; i++) {
            float v;
            memcpy(&v, payload + 4 * i, 4);
            acc[i] += alpha * v;
        }
        break;
    case DBK_COMPRESS_TERNGRAD:
    case DBK_COMPRESS_QSGD: decode_codes(c, payload, alpha, acc); break;
    case DBK_COMPRESS_RANDOMK:
    case DBK_COMPRESS_TOPK:
    case DBK_COMPRESS_THRESHOLD:
        for (size_t k = 0; k < bytes / PAIR_BYTES; k++) {
            uint32_t i;
            float v;
            memcpy(&i, payload + k * PAIR_BYTES, 4);
            memcpy(&v, payload + k * PAIR_BYTES + 4, 4);
            acc[i] += alpha * v;
        }
    }
    return DBK_OK;
}

/* TernGrad's codes are 0, 1 or 2; QSGD's levels at most q (checked only where b bits hold more). */
static dbk_status check_codes(const dbk_compressor *c, const uint8_t *p) {
    const int q = quant_levels(c);
    for (int s = 0; s < c->segment_count; s++) {
        const size_t count = c->segments[s].count, bytes = segment_code_bytes(c, count) - 4;
        if (q == 0) {
            for (size_t b = 0; b < bytes; b++)
                if (p[4 + b] & p[4 + b] >> 1 & 0x55u)
                    return dbk_set_error(DBK_ERR_FORMAT, "terngrad payload: code 3 is not 0, 1 or 2");
        } else if ((1L << (c->code_bits - 1)) != (long)q + 1) {
            size_t pos = 0;
            for (size_t i = 0; i < count; i++) {
                const uint32_t level = dbk_quant_get_bits(p + 4, &pos, c->code_bits) >> 1;
                if (level > (uint32_t)q) return dbk_set_error(DBK_ERR_FORMAT, "qsgd payload: level %u > %d", level, q);
            }
        }
        p += 4 + bytes;
    }
    return DBK_OK;
}

dbk_status dbk_compressor_check_payload(const dbk_compressor *c, const uint8_t *payload, size_t bytes) {
    if (!dbk_compress_is_sparse(c->spec.method)) {
        if (bytes != c->max_payload)
            return dbk_set_error(DBK_ERR_FORMAT, "gradient payload of %zu bytes; this compression sends %zu", bytes,
                                 c->max_payload);
        return c->spec.method == DBK_COMPRESS_NONE ? DBK_OK : check_codes(c, payload);
    }
    if (bytes % PAIR_BYTES || bytes > c->max_payload)
        return dbk_set_error(DBK_ERR_FORMAT, "sparse gradient payload of %zu bytes: not whole index/value pairs "
                             "within %zu bytes", bytes, c->max_payload);
    for (size_t k = 0; k < bytes / PAIR_BYTES; k++) {
        uint32_t i;
        memcpy(&i, payload + k * PAIR_BYTES, 4);
        if (i >= c->n) return dbk_set_error(DBK_ERR_FORMAT, "sparse gradient payload: index %u >= %zu", i, c->n);
    }
    return DBK_OK;
}
