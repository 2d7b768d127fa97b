#version 450
/*
 * fisher_accumulate.comp — DBK_OP_FISHER_ACCUMULATE: acc += |g| (p[0] != 0) or g * g, one
 * sample's gradient into the empirical Fisher information (docs/sparse-masks.md). `precise`
 * keeps the product and the sum apart (no fused multiply-add), as the CPU reference rounds.
 */
#include "common/eltwise_head.glsl"

layout(binding = 0) readonly buffer BufG { float g[]; };   /* (n) */
layout(binding = 1) buffer BufA { float acc[]; };          /* (n) in place */

void main() {
    const bool absolute = pc.p[0] != 0.0;
    EW_FOR_EACH(i) {
        const float v = g[pc.r[0] + i];
        precise float term = absolute ? abs(v) : v * v;
        precise float sum = acc[pc.r[1] + i] + term;
        acc[pc.r[1] + i] = sum;
    }
}
