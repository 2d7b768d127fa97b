#version 450
/*
 * tta_confidence.comp — DBK_OP_CONFIDENCE_SELECT's first pass: work[i] = S_i = sum_j
 * exp(z_ij - max_j z_ij), j in order (the CPU's order). Grid-stride over N.
 */
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    uint N, K;
    uint rz, rw;   /* element offsets of bindings 0..1 */
} pc;

layout(binding = 0) readonly buffer BufZ { float z[]; };   /* (N,K) */
layout(binding = 1) writeonly buffer BufW { float work[]; };  /* (N) */

void main() {
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < pc.N; i += stride) {
        const uint base = pc.rz + i * pc.K;
        float m = z[base];
        for (uint j = 1; j < pc.K; j++) m = z[base + j] > m ? z[base + j] : m;
        precise float s = 0.0;
        for (uint j = 0; j < pc.K; j++) s += exp(z[base + j] - m);
        work[pc.rw + i] = s;
    }
}
