/*
 * hash.glsl — dbk_hash_u32 of src/core/rng.h, bit for bit (keep in sync), and the
 * multiply-shift draw of dbk_augment_choices (src/backends/cpu/augment.c).
 */
uint dbk_hash_mix(uint h) {
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    h ^= h >> 16;
    return h;
}

uint dbk_hash_u32(uint a, uint b, uint c, uint d) {
    uint h = dbk_hash_mix(a ^ 0x9e3779b9u);
    h = dbk_hash_mix(h ^ b);
    h = dbk_hash_mix(h ^ c);
    return dbk_hash_mix(h ^ d);
}

/* ((uint64) h * n) >> 32 */
int hash_below(uint h, uint n) {
    uint hi, lo;
    umulExtended(h, n, hi, lo);
    return int(hi);
}
