#version 450
/*
 * gelu_bwd.comp — DBK_OP_GELU_BWD: dx = dy (Phi(x) + x phi(x)), Phi(x) = 0.5 (1 + erf(x / sqrt 2)),
 * phi(x) = exp(-x^2 / 2) / sqrt(2 pi); x is the forward input. dx may alias dy.
 */
#include "common/eltwise_head.glsl"
#include "common/erf.glsl"

layout(binding = 0) readonly buffer BufX { float x[]; };     /* (n) forward input */
layout(binding = 1) readonly buffer BufDy { float dy[]; };   /* (n) */
layout(binding = 2) writeonly buffer BufDx { float dx[]; };  /* (n) */

void main() {
    EW_FOR_EACH(i) {
        const float v = x[pc.r[0] + i];
        const float cdf = 0.5 * (1.0 + dbk_erf(v * 0.70710678118654752));
        const float pdf = exp(-0.5 * v * v) * 0.39894228040143268;   /* 1 / sqrt(2 pi) */
        dx[pc.r[2] + i] = dy[pc.r[1] + i] * (cdf + v * pdf);
    }
}
