/* half.c — fp16 conversions (see half.h). Bit manipulation on the IEEE encodings:
 * f32 = sign(1) exponent(8, bias 127) mantissa(23); f16 = sign(1) exponent(5, bias 15)
 * mantissa(10). */
#include "core/half.h"

#include <string.h>

static uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float float_of(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

uint16_t dbk_f32_to_f16(float f) {
    const uint32_t u = bits_of(f);
    const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    const uint32_t exp = (u >> 23) & 0xffu, man = u & 0x7fffffu;
    if (exp == 0xffu) return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0u)); /* inf, quiet NaN */
    const int e = (int)exp - 127 + 15;                                       /* f16 exponent */
    if (e >= 31) return (uint16_t)(sign | 0x7c00u);                           /* overflow: inf */
    if (e <= 0) {
        /* subnormal f16 (or zero): the value is m * 2^-24 with m = full mantissa >> shift */
        if (e < -10) return sign;                       /* below half the smallest subnormal */
        const uint32_t full = man | 0x800000u;          /* the implicit leading 1 */
        const int shift = 14 - e;                       /* 14..24 */
        uint32_t m = full >> shift;
        const uint32_t rest = full & ((1u << shift) - 1u), half = 1u << (shift - 1);
        if (rest > half || (rest == half && (m & 1u))) m++;   /* ties to even; may carry into the exponent */
        return (uint16_t)(sign | m);
    }
    uint32_t h = ((uint32_t)e << 10) | (man >> 13);
    const uint32_t rest = man & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++;   /* a carry may round up to inf: correct */
    return (uint16_t)(sign | h);
}

float dbk_f16_to_f32(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1fu) return float_of(sign | 0x7f800000u | (man << 13));
    if (exp) return float_of(sign | ((exp - 15 + 127) << 23) | (man << 13));
    if (!man) return float_of(sign);
    /* subnormal: man * 2^-24, exact in f32 */
    const float v = (float)man * 0x1p-24f;
    return sign ? -v : v;
}
