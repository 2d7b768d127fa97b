#version 450
/*
 * quant_encode.comp — DBK_OP_QUANT_ENCODE (TernGrad, QSGD), one kernel of the chain of
 * cl/compress.cl per value of the specialization constant PHASE (the same names and steps,
 * described there): 0 partial (per chunk), 1 scale (per segment), 2 pack (per payload word:
 * each code that touches the word computed once).
 * The coding is src/core/quant.h's (keep in sync); `precise` keeps every multiply and add
 * apart (no fused multiply-add), so they round as the CPU's. The divisions and the square
 * root are common/ieee_rn.glsl's, on integers: Vulkan's own `/` and `sqrt` may be inexact
 * (NVIDIA's are), and the codes must match the CPU's bit for bit. Grid-stride loops.
 */
#include "common/hash.glsl"
#include "common/ieee_rn.glsl"

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
        precise float ratio = dbk_div_rn(m, scale);
        return scale > 0.0 && u < ratio ? 1u + sign : 0u;
    }
    if (!(scale > 0.0)) return sign;
    precise float q = dbk_div_rn(m, scale) * float(pc.levels);
    precise float t = q + u;
    uint level = uint(floor(t));
    if (level > uint(pc.levels)) level = uint(pc.levels);
    return sign | level << 1;
}

/* Word w of the payload, whose bytes end at `bytes` (cl/compress.cl's quant_pack). */
uint quant_word(uint w, uint bytes) {
    const uint bits = code_bits();
    uint b = 4u * w;
    const uint end = min(b + 4u, bytes);
    int lo = 0, hi = pc.S - 1;
    while (lo < hi) { /* the last segment starting at or before byte b */
        const int mid = (lo + hi + 1) / 2;
        if (uint(seg[pc.r1 + uint(3 * mid + 2)]) <= b) lo = mid;
        else hi = mid - 1;
    }
    uint word = 0u;
    for (int s = lo; b < end; s++) {
        const uint off = uint(seg[pc.r1 + uint(3 * s)]), count = uint(seg[pc.r1 + uint(3 * s + 1)]);
        const uint start = uint(seg[pc.r1 + uint(3 * s + 2)]);
        const uint stop = min(end, s + 1 < pc.S ? uint(seg[pc.r1 + uint(3 * (s + 1) + 2)]) : bytes);
        const float scale = work[pc.r4 + uint(pc.C + s)];
        for (; b < stop && b < start + 4u; b++)
            word |= (floatBitsToUint(scale) >> (8u * (b - start)) & 0xffu) << (8u * (b - 4u * w));
        if (b < stop) { /* code bits [bit0, bit1) of the segment, at bit 8 (b - 4w) of the word */
            const uint bit0 = (b - start - 4u) * 8u, bit1 = (stop - start - 4u) * 8u;
            const uint e_end = min((bit1 - 1u) / bits + 1u, count);
            for (uint e = bit0 / bits; e < e_end; e++) {
                const uint code = quant_code(x[pc.r0 + off + e], scale, off + e);
                const int rel = int(e * bits) - int(bit0) + 8 * int(b - 4u * w);
                word |= rel >= 0 ? code << uint(rel) : code >> uint(-rel);
            }
            b = stop;
        }
    }
    return word;
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
            work[pc.r4 + uint(pc.C) + s] = pc.levels == 0 ? a : dbk_sqrt_rn(a);
        }
    } else {                                             /* pack: per payload word */
        const uint last = uint(seg[pc.r1 + uint(3 * (pc.S - 1) + 1)]);
        const uint bytes = uint(seg[pc.r1 + uint(3 * (pc.S - 1) + 2)]) + 4u + (last * code_bits() + 7u) / 8u;
        for (uint w = gl_GlobalInvocationID.x; w < pc.words && 4u * w < bytes; w += stride)
            payload[pc.r3 + w] = quant_word(w, bytes);
    }
}
