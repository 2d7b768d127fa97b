#version 450
/*
 * relu_bwd.comp — DBK_OP_RELU_BWD: dx = y > 0 ? dy : 0 (y the forward output). dx may alias dy.
 * Variant relu_bwd_f16 (DBK_F16, common/operand.glsl): y is the f16 copy of the output
 * (mixed precision); dy and dx stay f32.
 */
#include "common/operand.glsl"
#include "common/eltwise_head.glsl"

layout(binding = 0) readonly buffer BufY { OPERAND y[]; };   /* (n) */
layout(binding = 1) readonly buffer BufDy { float dy[]; };   /* (n) */
layout(binding = 2) writeonly buffer BufDx { float dx[]; };  /* (n) */

void main() {
    EW_FOR_EACH(i) {
        const float g = dy[pc.r[1] + i];
        dx[pc.r[2] + i] = float(y[pc.r[0] + i]) > 0.0 ? g : 0.0;
    }
}
