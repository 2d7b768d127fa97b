#version 450
/*
 * scale.comp — DBK_OP_SCALE: y = alpha * x (p[0] = params.scale.alpha). y may alias x.
 */
#include "common/eltwise_head.glsl"

layout(binding = 0) readonly buffer BufX { float x[]; };   /* (n) */
layout(binding = 1) writeonly buffer BufY { float y[]; };  /* (n) */

void main() {
    EW_FOR_EACH(i) {
        y[pc.r[1] + i] = pc.p[0] * x[pc.r[0] + i];
    }
}
