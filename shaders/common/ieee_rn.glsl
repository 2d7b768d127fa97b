/*
 * ieee_rn.glsl — fp32 division and square root rounded as IEEE 754 does (round to nearest,
 * ties to even), on any conforming Vulkan driver.
 *
 * Vulkan lets `a / b` be off by 2.5 ULP and `sqrt`/`inversesqrt` be inexact, and lets `fma` be
 * unfused; NVIDIA's driver uses that freedom (an H200 gave quant_encode's segment scale
 * 18.3322334 for the CPU's 18.3322353), lavapipe rounds correctly. An op that must match the
 * CPU bit for bit (the quant_* coding of src/core/quant.h) divides and takes roots here
 * instead: on the bits, with 32-bit integer arithmetic only (exact on every driver; no fp64 or
 * int64, which Intel Arc lacks), so a result checked on lavapipe (test_vk_rounding) is the
 * result on every device.
 *
 * Every value is handled as IEEE does: zeros with their sign, subnormal inputs and results
 * (gradual underflow), overflow to infinity, x/0 = +-inf, 0/0, inf/inf, sqrt(x < 0) = NaN
 * (0x7fc00000), a NaN input comes back quieted (the first NaN operand, as x86 does). The
 * *_bits forms take and return the bit patterns, so no float operation (which a driver may
 * flush to zero) touches a subnormal on the way.
 *
 * Both compute the significand of the result to one bit past the last place plus a sticky
 * bit (the remainder is not zero), which is all round-to-nearest-even needs (dbk_rn_pack).
 * Cost: three 32-bit integer divisions per quotient, 25 steps of a shift-and-subtract
 * integer square root per root.
 */

/* sign | round(q * 2^(e - 151)), q in [2^24, 2^25), e the biased exponent of the result
 * before rounding (any int), sticky != 0 when nonzero bits were below q. */
uint dbk_rn_pack(uint sign, int e, uint q, uint sticky) {
    if (e >= 255) return sign | 0x7f800000u;           /* >= 2^128: overflow */
    /* A normal result keeps q's top 24 bits; a subnormal one (e <= 0) shifts 1 - e more. */
    const uint sh = e >= 1 ? 1u : uint(min(2 - e, 31));
    const uint m = q >> sh, rest = q & ((1u << sh) - 1u), mid = 1u << (sh - 1u);
    const bool up = rest > mid || (rest == mid && (sticky != 0u || (m & 1u) != 0u));
    /* m's leading bit (2^23) adds one to the exponent field, and a carry out of rounding
     * carries into it: 0x7f7fffff rounds up to 0x7f800000 (inf), 0x007fffff to the smallest
     * normal. */
    return sign | ((uint(max(e - 1, 0)) << 23) + m + (up ? 1u : 0u));
}

/* The significand of a finite nonzero x's bits, with its leading 1 at 2^23, and x's biased
 * exponent for it (<= 0 for a subnormal). */
uint dbk_rn_unpack(uint x, out int e) {
    const uint f = x & 0x7fffffu, ex = (x >> 23) & 0xffu;
    if (ex != 0u) {
        e = int(ex);
        return f | 0x800000u;
    }
    const int s = 23 - findMSB(f);
    e = 1 - s;
    return f << uint(s);
}

/* The bits of a / b (a, b bits of fp32 values). */
uint dbk_div_rn_bits(uint a, uint b) {
    const uint sign = (a ^ b) & 0x80000000u, aa = a & 0x7fffffffu, ab = b & 0x7fffffffu;
    if (aa > 0x7f800000u) return a | 0x400000u;        /* NaN / b */
    if (ab > 0x7f800000u) return b | 0x400000u;        /* a / NaN */
    if (aa == 0x7f800000u) return ab == 0x7f800000u ? 0x7fc00000u : sign | 0x7f800000u;
    if (ab == 0x7f800000u) return sign;                /* finite / inf */
    if (aa == 0u) return ab == 0u ? 0x7fc00000u : sign;
    if (ab == 0u) return sign | 0x7f800000u;           /* x / 0 */
    int ea, eb;
    uint ma = dbk_rn_unpack(aa, ea);
    const uint mb = dbk_rn_unpack(ab, eb);
    int e = ea - eb + 127;
    if (ma < mb) {                                     /* the quotient in [1, 2) */
        ma <<= 1;
        e--;
    }
    /* Long division, 8 bits a step: r < mb < 2^24, so r << 8 fits 32 bits. */
    uint q = 1u, r = ma - mb;
    for (int k = 0; k < 3; k++) {
        r <<= 8;
        q = q << 8 | r / mb;
        r %= mb;
    }
    return dbk_rn_pack(sign, e, q, r);
}

/* The bits of sqrt(a). */
uint dbk_sqrt_rn_bits(uint a) {
    if ((a & 0x7fffffffu) == 0u) return a;             /* sqrt(-0) = -0 */
    if ((a & 0x7fffffffu) > 0x7f800000u) return a | 0x400000u;
    if ((a & 0x80000000u) != 0u) return 0x7fc00000u;   /* x < 0 */
    if (a == 0x7f800000u) return a;
    int ea;
    const uint m = dbk_rn_unpack(a, ea);
    /* a = m * 2^t; write it m2 * 2^t2 with m2 in [2^24, 2^26) and t2 even, so the root of
     * M = m2 * 2^24 lies in [2^24, 2^25) and sqrt(a) = sqrt(M) * 2^(t2/2 - 12). */
    const int t = ea - 150;
    const bool odd = (t & 1) != 0;
    const uint m2 = odd ? m << 1 : m << 2;
    const int t2 = odd ? t - 1 : t - 2;
    /* Bit by bit, two bits of M a step from the top (M's 24 low bits are zero): the
     * remainder stays below 2 root + 1 < 2^26. */
    uint root = 0u, rem = 0u;
    for (int i = 24; i >= 0; i--) {
        const uint two = i >= 12 ? (m2 >> uint(2 * i - 24)) & 3u : 0u;
        rem = rem << 2 | two;
        const uint trial = root << 2 | 1u;
        root <<= 1;
        if (rem >= trial) {
            rem -= trial;
            root |= 1u;
        }
    }
    return dbk_rn_pack(0u, t2 / 2 + 139, root, rem);
}

float dbk_div_rn(float a, float b) { return uintBitsToFloat(dbk_div_rn_bits(floatBitsToUint(a), floatBitsToUint(b))); }
float dbk_sqrt_rn(float a) { return uintBitsToFloat(dbk_sqrt_rn_bits(floatBitsToUint(a))); }
