#version 450
/*
 * quant_add.comp — DBK_OP_QUANT_ADD: acc += alpha * the decoded TernGrad or QSGD payload, one
 * invocation per element (cl/compress.cl's quant_add; the coding is src/core/quant.h's).
 * Zero codes and codes out of range add nothing. `precise` keeps the multiply and the add
 * apart, so they round as the CPU's; the division is common/ieee_rn.glsl's, on integers
 * (Vulkan's `/` may be off by 2.5 ULP, and NVIDIA's is). Grid-stride over n.
 */
#include "common/ieee_rn.glsl"

layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    int S;
    uint n;
    int levels;
    float alpha;
    uint r0, r1, r2;   /* element offsets of bindings 0..2 */
} pc;

layout(binding = 0) readonly buffer BufP { uint payload[]; }; /* (W) */
layout(binding = 1) readonly buffer BufSeg { int seg[]; };    /* (S,3) {offset, count, payload byte} */
layout(binding = 2) buffer BufA { float acc[]; };             /* (n) */

/* The bits at bit position `bit` of the payload's words. */
uint payload_bits(uint bit, uint bits) {
    const uint wi = bit >> 5, sh = bit & 31u;
    uint v = payload[pc.r0 + wi] >> sh;
    if (sh + bits > 32u) v |= payload[pc.r0 + wi + 1u] << (32u - sh);
    return bits == 32u ? v : v & ((1u << bits) - 1u);
}

void main() {
    uint bits = 2u;
    if (pc.levels != 0) {
        uint b = 0u;
        while ((1u << b) < uint(pc.levels) + 1u) b++;
        bits = 1u + b;
    }
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += stride) {
        int lo = 0, hi = pc.S - 1;
        while (lo < hi) { /* the last segment starting at or before element i */
            const int mid = (lo + hi + 1) / 2;
            if (uint(seg[pc.r1 + uint(3 * mid)]) <= i) lo = mid;
            else hi = mid - 1;
        }
        const uint start = uint(seg[pc.r1 + uint(3 * lo + 2)]);
        const float scale = uintBitsToFloat(payload_bits(8u * start, 32u));
        const uint code = payload_bits(8u * (start + 4u) + (i - uint(seg[pc.r1 + uint(3 * lo)])) * bits, bits);
        float v;
        if (pc.levels == 0) {
            if (code != 1u && code != 2u) continue;
            v = code == 1u ? scale : -scale;
        } else {
            const uint level = code >> 1;
            if (level == 0u || level > uint(pc.levels)) continue;
            precise float sl = scale * float(level);
            precise float m = dbk_div_rn(sl, float(pc.levels));
            v = (code & 1u) != 0u ? -m : m;
        }
        precise float sum = acc[pc.r2 + i] + pc.alpha * v;
        acc[pc.r2 + i] = sum;
    }
}
