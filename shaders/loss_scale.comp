#version 450
/*
 * loss_scale.comp — DBK_OP_LOSS_SCALE: y = x * s[0], s the step's loss scale (a scalar slot:
 * bound whole, read at its own offset r[1]). y may alias x.
 */
#include "common/eltwise_head.glsl"

layout(binding = 0) readonly buffer BufX { float x[]; };   /* (n) */
layout(binding = 1) readonly buffer BufS { float s[]; };   /* (1) */
layout(binding = 2) writeonly buffer BufY { float y[]; };  /* (n) */

void main() {
    const float scale = s[pc.r[1]];
    EW_FOR_EACH(i) {
        y[pc.r[2] + i] = x[pc.r[0] + i] * scale;
    }
}
