/*
 * compress.h — the gradient compressors of data-parallel training (src/dist): what each rank
 * sends instead of its dense gradient, and how a receiver turns it back into a gradient.
 *
 * The methods are those of the seed study (sands-lab/layer-wise-aaai20, CIFAR10/core.py),
 * applied to a packed vector of the trainable gradients (fp32), either per parameter tensor
 * ("layerwise": one compression per segment) or to the whole model at once ("model"):
 *
 *   randomk:K    K*n elements drawn uniformly without replacement (seeded), values scaled by
 *                n/k so the decoded gradient is unbiased (the study does not scale)
 *   topk:K       the k = ceil(K*n) elements of largest magnitude (exactly k: ties at the k-th
 *                magnitude are taken in index order)
 *   threshold:V  every element with |g| >= V (a variable count)
 *   terngrad     s = max|g|; each element becomes s*sign(g)*b, b ~ Bernoulli(|g|/s)
 *   qsgd:Q       ("random dithering"; the study's default Q = 255) r = ||g||_2; each element
 *                becomes r*sign(g)*l/Q, l = floor(Q*|g|/r + u), u ~ U[0,1)
 * (TernGrad's and QSGD's draws are counter-based, per element index, and their arithmetic
 * and the norm's summation order are fixed by core/quant.h, so a device reproduces them.)
 *
 * K is a fraction in (0, 1] ("0.01") or a percentage ("1%"). Payloads are what goes on the
 * wire, little-endian as the host lays them out:
 *   sparse (randomk, topk, threshold): pairs {uint32 index into the packed vector, float
 *     value}, 8 bytes each, every segment's pairs one after another;
 *   terngrad: per segment a float scale, then 2 bits per element (0 zero, 1 +s, 2 -s), the
 *     segment padded to a whole byte;
 *   qsgd: per segment a float norm, then per element 1 sign bit and ceil(log2(Q+1)) level
 *     bits, LSB first, the segment padded to a whole byte.
 * With error feedback the compressor keeps the residual (what the last encodings left out)
 * and adds it to the next gradient before encoding (Seide et al. 2014; Karimireddy et al.
 * 2019).
 *
 * This is the host path. Every method but none also runs on the training device
 * (dist/compress_device.h), with byte-identical payloads; see docs/distributed.md.
 */
#ifndef DBK_COMPRESS_H
#define DBK_COMPRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

typedef enum dbk_compress_method {
    DBK_COMPRESS_NONE,
    DBK_COMPRESS_RANDOMK,
    DBK_COMPRESS_TOPK,
    DBK_COMPRESS_THRESHOLD,
    DBK_COMPRESS_TERNGRAD,
    DBK_COMPRESS_QSGD,
} dbk_compress_method;

typedef struct dbk_compress_spec {
    dbk_compress_method method;
    double ratio;          /* randomk, topk: fraction of each segment kept, (0, 1] */
    double threshold;      /* threshold: magnitudes >= this are kept, > 0 */
    int    levels;         /* qsgd: Q, 1..65535 */
    bool   layerwise;      /* one compression per parameter tensor, else one for the model */
    bool   error_feedback; /* keep the residual and add it to the next gradient */
} dbk_compress_spec;

/* A range of the packed gradient vector: one parameter tensor. */
typedef struct dbk_segment {
    size_t offset, count;
} dbk_segment;

/* "none", "randomk:K", "topk:K", "threshold:V", "terngrad", "qsgd:Q" into out's method and
 * value (scope and error feedback untouched). DBK_ERR_INVALID_ARG naming what is wrong. */
dbk_status dbk_compress_parse(const char *text, dbk_compress_spec *out);
/* "layerwise" or "model" into out->layerwise. */
dbk_status dbk_compress_parse_scope(const char *text, dbk_compress_spec *out);
/* The method as parsed back, e.g. "topk:0.01", "qsgd:255", "none". */
void       dbk_compress_format(const dbk_compress_spec *spec, char *out, size_t cap);
bool       dbk_compress_is_sparse(dbk_compress_method m);

typedef struct dbk_compressor dbk_compressor;

/* A compressor for a packed vector of n floats cut into segments (covering [0, n) in order;
 * used as one segment when the spec is not layerwise). Allocates its scratch and residual. */
dbk_status dbk_compressor_create(const dbk_compress_spec *spec, const dbk_segment *segments, int segment_count,
                                 size_t n, dbk_compressor **out);
void       dbk_compressor_destroy(dbk_compressor *c);                 /* accepts NULL */

/* The largest payload encode can write, in bytes. */
size_t dbk_compressor_max_payload(const dbk_compressor *c);
/* Encodes g (n floats; g + residual with error feedback, the residual then updated) into
 * payload (max_payload bytes); random draws from seed. Returns the payload's bytes. */
size_t dbk_compressor_encode(dbk_compressor *c, const float *g, uint64_t seed, uint8_t *payload);
const dbk_compress_spec *dbk_compressor_spec(const dbk_compressor *c);
/* Random-k: the indices (into the vector) encode draws with this seed, in payload order
 * (max_payload / 8 of them); returns their count. */
size_t dbk_compressor_randomk_draw(dbk_compressor *c, uint64_t seed, int32_t *indices);
/* Random-k: the scale of a segment of count elements, count / k in fp32. */
float  dbk_compressor_randomk_scale(const dbk_compressor *c, size_t count);
/* The error-feedback residual (n floats, to read or restore), or NULL without feedback. */
float *dbk_compressor_residual(dbk_compressor *c);
/* The segments it compresses (one for the whole vector when not layerwise); returns count. */
int    dbk_compressor_segments(const dbk_compressor *c, const dbk_segment **out);
/* Elements random-k and top-k keep of a segment of count elements. */
size_t dbk_compressor_kept(const dbk_compressor *c, size_t count);
/* DBK_ERR_FORMAT, as dbk_compressor_decode_add, when a payload does not fit this compressor
 * (size, index, a TernGrad code 3, a QSGD level > Q); decodes nothing (the device decoding
 * cannot report a bad payload). */
dbk_status dbk_compressor_check_payload(const dbk_compressor *c, const uint8_t *payload, size_t bytes);
/* acc += alpha * the gradient a payload of `bytes` bytes encodes (n floats).
 * DBK_ERR_FORMAT when the payload does not fit this compressor (as check_payload). */
dbk_status dbk_compressor_decode_add(const dbk_compressor *c, const uint8_t *payload, size_t bytes, float alpha,
                                     float *acc);

#endif
