#version 450
/*
 * bn_bwd_data.comp — dx = gamma_c * invstd_c * (dy - dbeta_c / M - xhat * dgamma_c / M),
 * the elementwise half of DBK_OP_BATCHNORM_BWD (sums from bn_bwd_reduce.comp), M = N*H*W.
 * Grid-stride over all elements. Fused with ReLU (DBK_OP_BATCHNORM_RELU_BWD, relu = 1): dy
 * is read as relu_bwd's y > 0 ? dy : 0, y the fused forward's output; with relu = 0, y is
 * not read. Fused with ReLU and the residual add (DBK_OP_BATCHNORM_RELU_ADD_BWD, relu = 2):
 * the same mask with the pre-activation recomputed, (x - mean) * (invstd * gamma) + beta > 0
 * (`precise`, as bn_apply.comp computes it); beta is read in this mode only.
 * Fused with ReLU and the 2x2 max pool (DBK_OP_BATCHNORM_RELU_POOL_BWD, relu = 3): dy is
 * pooled (N,C,P,Q) and reaches the element of x that wins its window (common/bn_pool.glsl)
 * where the winner's value is > 0 (maxpool_bwd, relu_bwd); beta is read as for relu = 2.
 * Variant bn_bwd_data_f16 (DBK_F16, common/operand.glsl): x is the f16 copy of the forward
 * input (mixed precision), widened; everything else stays f32.
 */
#include "common/operand.glsl"
#include "common/chan_step.glsl"

layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    uint N, C, HW;
    uint r0, r1, r2, r3, r4, r5, r6, r7;   /* element offsets of bindings 0..7 */
    uint m;                                /* values per channel of the whole batch (the host may
                                              split the batch into several dispatches) */
    uint r8, relu;                         /* element offset of binding 8; fused with ReLU */
    uint r9;                               /* element offset of binding 9 */
    uint W, P, Q;                          /* relu = 3: x's width, dy's height and width */
} pc;

layout(binding = 0) readonly buffer BufX { OPERAND x[]; };      /* (N,C,H,W) */
layout(binding = 1) readonly buffer BufDY { float dy[]; };      /* (N,C,H,W) */
layout(binding = 2) readonly buffer BufG { float gamma[]; };    /* (C) */
layout(binding = 3) readonly buffer BufM { float mean[]; };     /* (C) */
layout(binding = 4) readonly buffer BufI { float invstd[]; };   /* (C) */
layout(binding = 5) readonly buffer BufDG { float dgamma[]; };  /* (C) */
layout(binding = 6) readonly buffer BufDB { float dbeta[]; };   /* (C) */
layout(binding = 7) writeonly buffer BufDX { float dx[]; };     /* (N,C,H,W) */
layout(binding = 8) readonly buffer BufY { float y[]; };        /* (N,C,H,W) relu = 1 */
layout(binding = 9) readonly buffer BufB { float beta[]; };     /* (C) relu = 2, 3 */

#define BN_POOL_X(e) float(x[pc.r0 + (e)])
#include "common/bn_pool.glsl"

/* relu = 3: the gradient reaching x[i] (plane row, element j) through ReLU and the pool */
float pooled_grad(uint i, uint j, float mu, float scale, float shift) {
    const uint h = j / pc.W, w = j % pc.W, row = i / pc.HW;
    if (h >= 2u * pc.P || w >= 2u * pc.Q) return 0.0;   /* in no window (odd H or W) */
    float best;
    const uint win = bn_pool_winner(row * pc.HW + (h & ~1u) * pc.W + (w & ~1u), pc.W, mu, scale, shift, best);
    precise const float g = 0.0 + dy[pc.r1 + (row * pc.P + h / 2u) * pc.Q + w / 2u]; /* maxpool_bwd */
    return win == i && best > 0.0 ? g : 0.0;
}

void main() {
    const uint total = pc.N * pc.C * pc.HW;
    const float m = float(pc.m);
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    uint i = gl_GlobalInvocationID.x;
    if (i >= total) return;
    CHAN_STEP_INIT(i, stride, pc.HW, pc.C);   /* (j, c) of i, stepped without a division */
    for (; i < total; i += stride) {
        const float mu = mean[pc.r3 + c], is = invstd[pc.r4 + c];
        const float k = gamma[pc.r2 + c] * is;
        const float a = dbeta[pc.r6 + c] / m, b = dgamma[pc.r5 + c] / m;
        const float xv = float(x[pc.r0 + i]);
        const float shift = pc.relu >= 2u ? beta[pc.r9 + c] : 0.0;
        precise const float pre = (xv - mu) * (is * gamma[pc.r2 + c]) + shift;
        const bool masked = pc.relu == 1u ? !(y[pc.r8 + i] > 0.0) : pc.relu == 2u && !(pre > 0.0);
        const float g = pc.relu == 3u ? pooled_grad(i, j, mu, is * gamma[pc.r2 + c], shift)
                        : masked      ? 0.0
                                      : dy[pc.r1 + i];
        dx[pc.r7 + i] = k * (g - a - (xv - mu) * is * b);
        CHAN_STEP_NEXT(pc.HW, pc.C);
    }
}
