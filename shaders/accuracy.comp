#version 450
/*
 * accuracy.comp — correct += number of rows whose label ranks below `top` (DBK_OP_ACCURACY,
 * top-k): rank = logits larger than the label's, plus equal ones at a lower index, so top-1 is
 * the first maximum; rows with a label outside [0,K) count as wrong, and so do rows with a NaN
 * or infinite logit (NaN compares false, so it would rank first). One work group; the count is summed in
 * shared memory (exact: integers below 2^24 in float) and added once. Grid: 1.
 */
#include "common/reduce.glsl"

layout(push_constant) uniform Push {
    uint N, K;
    uint r0, r1, r2;   /* element offsets of bindings 0..2 */
    uint top;          /* k of top-k, >= 1 */
} pc;

layout(binding = 0) readonly buffer BufZ { float z[]; };      /* (N,K) logits */
layout(binding = 1) readonly buffer BufL { int labels[]; };   /* (N) */
layout(binding = 2) buffer BufC { float correct[]; };         /* (1) accumulated */

void main() {
    const uint lid = gl_LocalInvocationID.x;
    float count = 0.0;
    for (uint i = lid; i < pc.N; i += WG) {
        const int label = labels[pc.r1 + i];
        if (pc.K == 0 || label < 0 || uint(label) >= pc.K) continue;
        const uint row = pc.r0 + i * pc.K;
        const float zy = z[row + uint(label)];
        uint rank = 0;
        bool finite = true;
        for (uint k = 0; k < pc.K; k++) {
            const float zk = z[row + k];
            if (zk > zy || (k < uint(label) && zk == zy)) rank++;
            finite = finite && !isnan(zk) && !isinf(zk);
        }
        if (finite && rank < pc.top) count += 1.0;
    }
    const float batch = block_sum(count);
    if (lid == 0) correct[pc.r2] += batch;
}
