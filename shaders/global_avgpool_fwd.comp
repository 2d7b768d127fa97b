#version 450
/*
 * global_avgpool_fwd.comp — DBK_OP_GLOBAL_AVGPOOL_FWD: y[n,c] = mean over h,w of x[n,c,h,w]
 * (torch.nn.AdaptiveAvgPool2d(1)) over the planes of one batch slice (the host splits a batch
 * whose x exceeds one binding). One work group per (n, c) plane, grid-stride over planes
 * (a batch of 512 at 512 channels has more planes than a dispatch has groups): invocation l
 * sums the plane's values l, l + WG, ..., then common/reduce.glsl's tree adds the WG partial
 * sums, in a fixed order (no atomics).
 */
#include "common/reduce.glsl"

layout(push_constant) uniform Push {
    uint planes, HW;
    uint r0, r1;       /* element offsets of bindings 0..1 */
} pc;

layout(binding = 0) readonly buffer BufX { float x[]; };    /* (N,C,H,W) */
layout(binding = 1) writeonly buffer BufY { float y[]; };   /* (N,C,1,1) */

void main() {
    const uint lid = gl_LocalInvocationID.x;
    /* the loop bound is the same for the whole group, so every invocation reaches block_sum */
    for (uint pl = gl_WorkGroupID.x; pl < pc.planes; pl += gl_NumWorkGroups.x) {
        float acc = 0.0;
        for (uint i = lid; i < pc.HW; i += WG) acc += x[pc.r0 + pl * pc.HW + i];
        const float s = block_sum(acc);
        if (lid == 0) y[pc.r1 + pl] = s / float(pc.HW);
    }
}
