/*
 * quant.h — TernGrad's and QSGD's per-element coding, shared by the host compressor
 * (src/dist/compress.c) and the CPU reference of ops QUANT_ENCODE / QUANT_ADD
 * (src/backends/cpu/compress.c); cl/compress.cl and shaders/quant_*.comp repeat it (keep in
 * sync). levels 0 means TernGrad, levels q >= 1 QSGD with q levels.
 *
 * The draw of element i is counter-based, u = hash(seed, i) in [0, 1) on a 2^-24 grid, so a
 * device work-item reproduces it without the host's sequential stream. Every step is one
 * correctly rounded fp32 operation (a division, a multiply, an add, floor), with no
 * contraction, so the host, the CPU backend and a device with correctly rounded division
 * produce the same codes.
 *
 * Codes, packed LSB first after the segment's fp32 scale: TernGrad 2 bits, 0 (nothing),
 * 1 (+scale) or 2 (-scale), with probability |x| / scale of being non-zero; QSGD 1 + b bits
 * (b the bits of q), the sign then the level l = floor(|x| / scale * q + u) <= q, decoded as
 * (scale * l) / q.
 */
#ifndef DBK_QUANT_H
#define DBK_QUANT_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/rng.h"

/* Elements per partial sum of QSGD's norm: each segment's squares are summed in fp32 in
 * index order per piece of this many elements from the segment's start, then the pieces'
 * sums in order (a device sums the pieces in parallel, the same way). */
#define DBK_QUANT_CHUNK 512

#define DBK_QUANT_PURPOSE 0x71756e74u /* "qunt": tells the draws apart from other hashes */

/* Bits of one element's code. */
static inline int dbk_quant_code_bits(int levels) {
    if (levels == 0) return 2;
    int b = 0;
    while ((1L << b) < (long)levels + 1) b++;
    return 1 + b;
}

/* Element i's draw in [0, 1). */
static inline float dbk_quant_uniform(uint64_t seed, uint32_t i) {
    const uint32_t h = dbk_hash_u32((uint32_t)seed, (uint32_t)(seed >> 32), i, DBK_QUANT_PURPOSE);
    return (float)(h >> 8) * (1.0f / 16777216.0f);
}

/* The code of x in a segment of scale (> 0 or 0), with draw u. */
static inline uint32_t dbk_quant_code(float x, float scale, float u, int levels) {
    const float m = fabsf(x);
    const uint32_t sign = x < 0.0f;
    if (levels == 0) return scale > 0.0f && u < m / scale ? 1u + sign : 0u;
    const float t = m / scale * (float)levels + u;
    uint32_t level = scale > 0.0f ? (uint32_t)floorf(t) : 0u;
    if (level > (uint32_t)levels) level = (uint32_t)levels; /* fp32 rounding at |x| = norm */
    return sign | level << 1;
}

/* The value of a code; false for a code that adds nothing (zero, or out of range). */
static inline bool dbk_quant_value(uint32_t code, float scale, int levels, float *v) {
    if (levels == 0) {
        if (code != 1u && code != 2u) return false;
        *v = code == 1u ? scale : -scale;
        return true;
    }
    const uint32_t level = code >> 1;
    if (level == 0u || level > (uint32_t)levels) return false;
    const float m = scale * (float)level / (float)levels;
    *v = code & 1u ? -m : m;
    return true;
}

/* Writes the `bits` low bits of value at bit *pos of p (LSB first; p's bits there zero). */
static inline void dbk_quant_put_bits(uint8_t *p, size_t *pos, uint32_t value, int bits) {
    for (int b = 0; b < bits; b++, (*pos)++)
        if (value >> b & 1u) p[*pos >> 3] |= (uint8_t)(1u << (*pos & 7));
}

static inline uint32_t dbk_quant_get_bits(const uint8_t *p, size_t *pos, int bits) {
    uint32_t v = 0;
    for (int b = 0; b < bits; b++, (*pos)++) v |= (uint32_t)(p[*pos >> 3] >> (*pos & 7) & 1u) << b;
    return v;
}

#endif
