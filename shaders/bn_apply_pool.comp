#version 450
/*
 * bn_apply_pool.comp — the elementwise half of DBK_OP_BATCHNORM_RELU_POOL_FWD_TRAIN: y (N,C,P,Q)
 * = the 2x2, stride-2 max pool of max((x - mean_c) * (invstd_c * gamma_c) + beta_c, 0)
 * (common/bn_pool.glsl), mean and invstd from bn_stats.comp; the full-size output is never
 * written. Grid-stride over the N*C*P*Q windows.
 */
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    uint N, C, HW, W, P, Q;
    uint r0, r1, r2, r3, r4, r5;   /* element offsets of bindings 0..5 */
} pc;

layout(binding = 0) readonly buffer BufX { float x[]; };       /* (N,C,H,W) */
layout(binding = 1) readonly buffer BufG { float gamma[]; };   /* (C) */
layout(binding = 2) readonly buffer BufB { float beta[]; };    /* (C) */
layout(binding = 3) readonly buffer BufM { float mean[]; };    /* (C) */
layout(binding = 4) readonly buffer BufS { float invstd[]; };  /* (C) */
layout(binding = 5) writeonly buffer BufY { float y[]; };      /* (N,C,P,Q) */

#define BN_POOL_X(e) x[pc.r0 + (e)]
#include "common/bn_pool.glsl"

void main() {
    const uint pq = pc.P * pc.Q, total = pc.N * pc.C * pq;
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < total; i += stride) {
        const uint row = i / pq, o = i % pq, c = row % pc.C;
        const uint p = o / pc.Q, q = o % pc.Q;
        float best;
        bn_pool_winner(row * pc.HW + 2u * p * pc.W + 2u * q, pc.W, mean[pc.r3 + c], invstd[pc.r4 + c] * gamma[pc.r1 + c],
                       beta[pc.r2 + c], best);
        y[pc.r5 + i] = best;
    }
}
