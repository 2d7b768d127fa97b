#version 450
/*
 * leaky_relu_bwd.comp — DBK_OP_LEAKY_RELU_BWD: dx = y > 0 ? dy : slope * dy (y the forward
 * output, p[0] = params.leaky.slope > 0). dx may alias dy.
 */
#include "common/eltwise_head.glsl"

layout(binding = 0) readonly buffer BufY { float y[]; };     /* (n) */
layout(binding = 1) readonly buffer BufDy { float dy[]; };   /* (n) */
layout(binding = 2) writeonly buffer BufDx { float dx[]; };  /* (n) */

void main() {
    EW_FOR_EACH(i) {
        const float g = dy[pc.r[1] + i];
        dx[pc.r[2] + i] = y[pc.r[0] + i] > 0.0 ? g : pc.p[0] * g;
    }
}
