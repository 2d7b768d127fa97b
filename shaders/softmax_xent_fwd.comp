#version 450
/*
 * softmax_xent_fwd.comp — softmax cross-entropy with label smoothing (DBK_OP_SOFTMAX_XENT_FWD):
 *   probs_i = softmax(z_i);  loss_i = lse_i - ((1-eps) z_i[label] + eps/K sum_k z_ik)
 *   loss_sum += sum_i loss_i    (rows with a label outside [0,K) add nothing)
 * One work group: each invocation handles rows i = lid, lid + WG, ...; the batch loss is
 * summed through shared memory and added once, so no atomics are needed. Grid: 1.
 */
#include "common/reduce.glsl"

layout(push_constant) uniform Push {
    uint N, K;
    uint r0, r1, r2, r3;   /* element offsets of bindings 0..3 */
    float eps;
} pc;

layout(binding = 0) readonly buffer BufZ { float z[]; };        /* (N,K) logits */
layout(binding = 1) readonly buffer BufL { int labels[]; };     /* (N) */
layout(binding = 2) writeonly buffer BufP { float probs[]; };   /* (N,K) */
layout(binding = 3) buffer BufS { float loss_sum[]; };          /* (1) accumulated */

void main() {
    const uint lid = gl_LocalInvocationID.x;
    float total = 0.0;
    for (uint i = lid; i < pc.N; i += WG) {
        if (pc.K == 0) continue;
        const uint row = pc.r0 + i * pc.K;
        float zmax = z[row];
        for (uint k = 1; k < pc.K; k++) zmax = max(zmax, z[row + k]);
        float sum = 0.0, zsum = 0.0;
        for (uint k = 0; k < pc.K; k++) {
            sum += exp(z[row + k] - zmax);
            zsum += z[row + k];
        }
        for (uint k = 0; k < pc.K; k++) probs[pc.r2 + i * pc.K + k] = exp(z[row + k] - zmax) / sum;
        const int label = labels[pc.r1 + i];
        if (label < 0 || uint(label) >= pc.K) continue;
        const float lse = zmax + log(sum);
        total += lse - ((1.0 - pc.eps) * z[row + uint(label)] + pc.eps / float(pc.K) * zsum);
    }
    const float batch = block_sum(total);
    if (lid == 0) loss_sum[pc.r3] += batch;
}
