/*
 * rng.h — deterministic random numbers.
 *
 * Two generators:
 *  - dbk_rng: a sequential xorshift64* stream for host-side work (weight init, epoch
 *    shuffles). Same seed, same sequence, on every platform.
 *  - dbk_hash_u32: a stateless counter-based hash. Augmentation draws its per-image choices
 *    (crop offset, flip, cutout position) from hash(seed, step, image, purpose) so that every
 *    backend — CPU loops, OpenCL kernels, Vulkan shaders — produces bit-identical batches
 *    without sharing RNG state. Device kernels implement the same function (keep in sync).
 */
#ifndef DBK_RNG_H
#define DBK_RNG_H

#include <stdint.h>

typedef struct dbk_rng {
    uint64_t state;
} dbk_rng;

void     dbk_rng_init(dbk_rng *r, uint64_t seed);
uint64_t dbk_rng_u64(dbk_rng *r);
uint32_t dbk_rng_u32(dbk_rng *r);
float    dbk_rng_uniform(dbk_rng *r);                 /* [0, 1) */
float    dbk_rng_normal(dbk_rng *r);                  /* N(0, 1), Box-Muller */
uint32_t dbk_rng_below(dbk_rng *r, uint32_t n);       /* [0, n), n > 0 */
void     dbk_rng_permutation(dbk_rng *r, int32_t *out, int32_t n); /* Fisher-Yates of 0..n-1 */

/* Stateless 32-bit hash of four words (a murmur3-style finaliser chain). Pure integer
 * arithmetic on uint32, so OpenCL C and GLSL reproduce it exactly. */
static inline uint32_t dbk_hash_mix(uint32_t h) {
    h ^= h >> 16;
    h *= 0x7feb352dU;
    h ^= h >> 15;
    h *= 0x846ca68bU;
    h ^= h >> 16;
    return h;
}

static inline uint32_t dbk_hash_u32(uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
    uint32_t h = dbk_hash_mix(a ^ 0x9e3779b9U);
    h = dbk_hash_mix(h ^ b);
    h = dbk_hash_mix(h ^ c);
    h = dbk_hash_mix(h ^ d);
    return h;
}

#endif
