/* rng.c — host random numbers (see rng.h). */
#include "core/rng.h"

#include <math.h>

#include "core/status.h"

void dbk_rng_init(dbk_rng *r, uint64_t seed) {
    /* splitmix64 of the seed, so small seeds (0, 1, 2) still give well-mixed states. */
    uint64_t z = seed + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    r->state = z ? z : 0x2545f4914f6cdd1dULL;
}

uint64_t dbk_rng_u64(dbk_rng *r) {
    uint64_t x = r->state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    r->state = x;
    return x * 0x2545f4914f6cdd1dULL;
}

uint32_t dbk_rng_u32(dbk_rng *r) { return (uint32_t)(dbk_rng_u64(r) >> 32); }

float dbk_rng_uniform(dbk_rng *r) { return (float)(dbk_rng_u32(r) >> 8) * (1.0f / 16777216.0f); }

float dbk_rng_normal(dbk_rng *r) {
    double u1 = ((double)(dbk_rng_u64(r) >> 11) + 1.0) * (1.0 / 9007199254740993.0);
    double u2 = (double)(dbk_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

uint32_t dbk_rng_below(dbk_rng *r, uint32_t n) {
    DBK_ASSERT(n > 0);
    return (uint32_t)(((uint64_t)dbk_rng_u32(r) * n) >> 32);
}

void dbk_rng_permutation(dbk_rng *r, int32_t *out, int32_t n) {
    for (int32_t i = 0; i < n; i++) out[i] = i;
    for (int32_t i = n - 1; i > 0; i--) {
        int32_t j = (int32_t)dbk_rng_below(r, (uint32_t)i + 1);
        int32_t t = out[i];
        out[i] = out[j];
        out[j] = t;
    }
}
