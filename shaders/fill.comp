#version 450
/*
 * fill.comp — DBK_OP_FILL: y = value (p[0] = params.fill.value).
 */
#include "common/eltwise_head.glsl"

layout(binding = 0) writeonly buffer BufY { float y[]; };  /* (n) */

void main() {
    EW_FOR_EACH(i) {
        y[pc.r[0] + i] = pc.p[0];
    }
}
