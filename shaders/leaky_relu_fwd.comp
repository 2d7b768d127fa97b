#version 450
/*
 * leaky_relu_fwd.comp — DBK_OP_LEAKY_RELU_FWD: y = x > 0 ? x : slope * x
 * (p[0] = params.leaky.slope). y may alias x.
 */
#include "common/eltwise_head.glsl"

layout(binding = 0) readonly buffer BufX { float x[]; };   /* (n) */
layout(binding = 1) writeonly buffer BufY { float y[]; };  /* (n) */

void main() {
    EW_FOR_EACH(i) {
        const float v = x[pc.r[0] + i];
        y[pc.r[1] + i] = v > 0.0 ? v : pc.p[0] * v;
    }
}
