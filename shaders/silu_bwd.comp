#version 450
/*
 * silu_bwd.comp — DBK_OP_SILU_BWD: dx = dy s (1 + x (1 - s)), s = 1 / (1 + exp(-x)); x is the
 * forward input. dx may alias dy.
 */
#include "common/eltwise_head.glsl"

layout(binding = 0) readonly buffer BufX { float x[]; };     /* (n) forward input */
layout(binding = 1) readonly buffer BufDy { float dy[]; };   /* (n) */
layout(binding = 2) writeonly buffer BufDx { float dx[]; };  /* (n) */

void main() {
    EW_FOR_EACH(i) {
        const float v = x[pc.r[0] + i];
        const float s = 1.0 / (1.0 + exp(-v));
        dx[pc.r[2] + i] = dy[pc.r[1] + i] * s * (1.0 + v * (1.0 - s));
    }
}
