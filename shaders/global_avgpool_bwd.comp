#version 450
/*
 * global_avgpool_bwd.comp — DBK_OP_GLOBAL_AVGPOOL_BWD: dx[n,c,h,w] = dy[n,c] / (H*W)
 * (overwrites dx) over one batch slice. Grid-stride over N*C*H*W.
 */
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    uint total, HW;
    uint r0, r1;       /* element offsets of bindings 0..1 */
} pc;

layout(binding = 0) readonly buffer BufDy { float dy[]; };   /* (N,C,1,1) */
layout(binding = 1) writeonly buffer BufDx { float dx[]; };  /* (N,C,H,W) */

void main() {
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < pc.total; i += stride)
        dx[pc.r1 + i] = dy[pc.r0 + i / pc.HW] / float(pc.HW);
}
