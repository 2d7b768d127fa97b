#version 450
/*
 * add.comp — DBK_OP_ADD: y = a + b. y may alias a or b.
 */
#include "common/eltwise_head.glsl"

layout(binding = 0) readonly buffer BufA { float a[]; };   /* (n) */
layout(binding = 1) readonly buffer BufB { float b[]; };   /* (n) */
layout(binding = 2) writeonly buffer BufY { float y[]; };  /* (n) */

void main() {
    EW_FOR_EACH(i) {
        y[pc.r[2] + i] = a[pc.r[0] + i] + b[pc.r[1] + i];
    }
}
