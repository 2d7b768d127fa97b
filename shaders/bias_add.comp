#version 450
/*
 * bias_add.comp — DBK_OP_BIAS_ADD: y[n,c,h,w] = x[n,c,h,w] + b[c] (conv2d's bias term) over
 * images [n0, n0 + N) of the batch (the host splits a batch whose activations exceed one
 * binding). y may alias x: each invocation reads its element before writing it.
 * Grid-stride over N*C*H*W elements, the channel stepped along (common/chan_step.glsl).
 */
#include "common/chan_step.glsl"

layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    uint N, C, HW;
    uint r0, r1, r2;   /* element offsets of bindings 0..2 */
} pc;

layout(binding = 0) readonly buffer BufX { float x[]; };    /* (N,C,H,W) */
layout(binding = 1) readonly buffer BufB { float b[]; };    /* (C) */
layout(binding = 2) writeonly buffer BufY { float y[]; };   /* (N,C,H,W) */

void main() {
    const uint total = pc.N * pc.C * pc.HW;
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    uint i = gl_GlobalInvocationID.x;
    if (i >= total) return;
    CHAN_STEP_INIT(i, stride, pc.HW, pc.C);
    for (; i < total; i += stride) {
        y[pc.r2 + i] = x[pc.r0 + i] + b[pc.r1 + c];
        CHAN_STEP_NEXT(pc.HW, pc.C);
    }
}
