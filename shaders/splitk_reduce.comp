#version 450
/*
 * splitk_reduce.comp — y[i] = sum over z of part[z][i], z in order (deterministic), for the
 * split-K filter gradient (conv2d_bwd_filter.comp). Grid-stride over n elements.
 */
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    uint n, splits;
    uint r0, r1;   /* element offsets of bindings 0, 1 */
} pc;

layout(binding = 0) readonly buffer BufP { float part[]; };   /* (splits, n) */
layout(binding = 1) writeonly buffer BufY { float y[]; };     /* (n) */

void main() {
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += stride) {
        float acc = 0.0;
        for (uint z = 0; z < pc.splits; z++) acc += part[pc.r0 + z * pc.n + i];
        y[pc.r1 + i] = acc;
    }
}
