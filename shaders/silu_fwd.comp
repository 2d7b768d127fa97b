#version 450
/*
 * silu_fwd.comp — DBK_OP_SILU_FWD: y = x / (1 + exp(-x)) (torch.nn.SiLU). y may alias x.
 */
#include "common/eltwise_head.glsl"

layout(binding = 0) readonly buffer BufX { float x[]; };    /* (n) */
layout(binding = 1) writeonly buffer BufY { float y[]; };   /* (n) */

void main() {
    EW_FOR_EACH(i) {
        const float v = x[pc.r[0] + i];
        y[pc.r[1] + i] = v / (1.0 + exp(-v));
    }
}
