#version 450
/*
 * quant_encode.comp — DBK_OP_QUANT_ENCODE (TernGrad, QSGD), one kernel of the chain of
 * cl/compress.cl per value of the specialization constant PHASE (the same names and steps,
 * described there): 0 partial (per chunk), 1 scale (per segment), 2 pack (per payload word).
 * The coding is src/core/quant.h's (keep in sync); `precise` keeps every multiply and add
 * apart (no fused multiply-add), so they round as the CPU's. Grid-stride loops.
 */
#include "common/hash.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint PHASE = 0;

layout(push_constant) uniform Push {
    int S, C, levels;
    uint seed_lo, seed_hi, words;
    uint r0, r1, r2, r3, r4;   /* element offsets of bindings 0..4 */
} pc;

layout(binding = 0) readonly buffer BufX { float x[]; };       /* (n) */
layout(binding = 1) readonly buffer BufSeg { int seg[]; };     /* (S,3) {offset, count, payload byte} */
layout(binding = 2) readonly buffer BufCh { int ch[]; };       /* (C,3) {offset, count, segment} */
layout(binding = 3) writeonly buffer BufP { uint payload[]; }; /* (W) */
layout(binding = 4) buffer BufW { float work[]; };             /* (C + S) */

uint code_bits() {
    if (pc.levels == 0) return 2u;
    uint b = 0u;
    while ((1u << b) < uint(pc.levels) + 1u) b++;
    return 1u + b;
}

uint quant_code(float v, float scale, uint i) {
    precise float u = float(dbk_hash_u32(pc.seed_lo, pc.seed_hi, i, 0x71756e74u) >> 8) * (1.0 / 16777216.0);
    const float m = abs(v);
    const uint sign = v < 0.0 ? 1u : 0u;
    if (pc.levels == 0) {
        precise float ratio = m / scale;
        return scale > 0.0 && u < ratio ? 1u + sign : 0u;
    }
    if (!(scale > 0.0)) return sign;
    precise float q = m / scale * float(pc.levels);
    precise float t = q + u;
    uint level = uint(floor(t));
    if (level > uint(pc.levels)) level = uint(pc.levels);
    return sign | level << 1;
}

/* Byte b of the payload (b below its end). */
uint quant_byte(uint b) {
    int lo = 0, hi = pc.S - 1;
    while (lo < hi) { /* the last segment starting at or before byte b */
        const int mid = (lo + hi + 1) / 2;
        if (uint(seg[pc.r1 + uint(3 * mid + 2)]) <= b) lo = mid;
        else hi = mid - 1;
    }
    const uint off = uint(seg[pc.r1 + uint(3 * lo)]), count = uint(seg[pc.r1 + uint(3 * lo + 1)]);
    const uint o = b - uint(seg[pc.r1 + uint(3 * lo + 2)]);
    const float scale = work[pc.r4 + uint(pc.C + lo)];
    if (o < 4u) return floatBitsToUint(scale) >> (8u * o) & 0xffu;
    const uint bits = code_bits(), bit0 = (o - 4u) * 8u;
    const uint end = min((bit0 + 7u) / bits + 1u, count);
    uint v = 0u;
    for (uint e = bit0 / bits; e < end; e++) {
        const uint code = quant_code(x[pc.r0 + off + e], scale, off + e);
        const int sh = int(e * bits) - int(bit0);
        v |= sh >= 0 ? code << uint(sh) : code >> uint(-sh);
    }
    return v & 0xffu;
}

void main() {
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (PHASE == 0u) {                                   /* partial: per chunk */
        for (uint c = gl_GlobalInvocationID.x; c < uint(pc.C); c += stride) {
            const uint off = uint(ch[pc.r2 + 3u * c]), cnt = uint(ch[pc.r2 + 3u * c + 1u]);
            precise float p = 0.0;
            for (uint i = 0u; i < cnt; i++) {
                const float v = x[pc.r0 + off + i];
                if (pc.levels == 0) {
                    p = max(p, abs(v));
                } else {
                    precise float sq = v * v;
                    p = p + sq;
                }
            }
            work[pc.r4 + c] = p;
        }
    } else if (PHASE == 1u) {                            /* scale: per segment */
        for (uint s = gl_GlobalInvocationID.x; s < uint(pc.S); s += stride) {
            int lo = 0, hi = pc.C;
            while (lo < hi) { /* the first chunk of segment s */
                const int mid = (lo + hi) / 2;
                if (ch[pc.r2 + uint(3 * mid + 2)] < int(s)) lo = mid + 1;
                else hi = mid;
            }
            precise float a = 0.0;
            for (int c = lo; c < pc.C && ch[pc.r2 + uint(3 * c + 2)] == int(s); c++)
                a = pc.levels == 0 ? max(a, work[pc.r4 + uint(c)]) : a + work[pc.r4 + uint(c)];
            work[pc.r4 + uint(pc.C) + s] = pc.levels == 0 ? a : sqrt(a);
        }
    } else {                                             /* pack: per payload word */
        const uint last = uint(seg[pc.r1 + uint(3 * (pc.S - 1) + 1)]);
        const uint bytes = uint(seg[pc.r1 + uint(3 * (pc.S - 1) + 2)]) + 4u + (last * code_bits() + 7u) / 8u;
        for (uint w = gl_GlobalInvocationID.x; w < pc.words && 4u * w < bytes; w += stride) {
            uint word = 0u;
            for (uint j = 0u; j < 4u && 4u * w + j < bytes; j++) word |= quant_byte(4u * w + j) << (8u * j);
            payload[pc.r3 + w] = word;
        }
    }
}
