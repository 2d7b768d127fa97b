#version 450
/*
 * gelu_fwd.comp — DBK_OP_GELU_FWD: y = 0.5 x (1 + erf(x / sqrt 2)), exact GELU
 * (torch.nn.GELU, approximate='none'), with the erf of common/erf.glsl. y may alias x.
 */
#include "common/eltwise_head.glsl"
#include "common/erf.glsl"

layout(binding = 0) readonly buffer BufX { float x[]; };   /* (n) */
layout(binding = 1) writeonly buffer BufY { float y[]; };  /* (n) */

void main() {
    EW_FOR_EACH(i) {
        const float v = x[pc.r[0] + i];
        y[pc.r[1] + i] = 0.5 * v * (1.0 + dbk_erf(v * 0.70710678118654752));
    }
}
