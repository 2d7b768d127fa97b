#version 450
/*
 * bn_bwd_reduce.comp — the per-channel sums of DBK_OP_BATCHNORM_BWD:
 *   dbeta_c = sum dy,  dgamma_c = sum dy * xhat,  xhat = (x - mean_c) * invstd_c
 * One work group per channel; bn_bwd_data.comp then forms dx. x and dy are windowed
 * (common/window.glsl): a batch's activations may exceed one binding. Grid: x = C.
 * Variant bn_bwd_reduce_f16 (DBK_F16, common/operand.glsl): x is the f16 copy of the
 * forward input (mixed precision), widened; the sums stay f32.
 * Fused with ReLU (DBK_OP_BATCHNORM_RELU_BWD, relu = 1): dy is read as relu_bwd's
 * y > 0 ? dy : 0, y the fused forward's output; with relu = 0, y is not read. Fused with
 * ReLU and the residual add (DBK_OP_BATCHNORM_RELU_ADD_BWD, relu = 2): the same mask with the
 * pre-activation recomputed, (x - mean) * (invstd * gamma) + beta > 0 (`precise`, as
 * bn_apply.comp computes it); gamma and beta are read in this mode only. Fused with ReLU and
 * the 2x2 max pool (DBK_OP_BATCHNORM_RELU_POOL_BWD, relu = 3): dy is pooled (N,C,P,Q) and
 * reaches the element of x that wins its window (common/bn_pool.glsl) where the winner's
 * value is > 0 (maxpool_bwd, relu_bwd); gamma and beta are read as for relu = 2.
 */
#include "common/operand.glsl"
#include "common/chan_step.glsl"
#include "common/reduce.glsl"
#include "common/window.glsl"

layout(push_constant) uniform Push {
    uint N, C, HW;
    uint r0, r1, r2, r3, r4, r5, r6;   /* element offsets of bindings 0..6 */
    uint step0, step1, step2;          /* bytes per window of bindings 0, 1 and 2 */
    uint relu;
    uint r7, r8;                       /* element offsets of bindings 7 and 8 */
    uint W, P, Q;                      /* relu = 3: x's width, dy's height and width */
} pc;

WINDOWED_OPERAND(0, x_at)                                       /* (N,C,H,W) */
WINDOWED_F32(1, dy_at)                                          /* (N,C,H,W) */
WINDOWED_F32(2, y_at)                                           /* (N,C,H,W) */
layout(binding = 3) readonly buffer BufM { float mean[]; };     /* (C) */
layout(binding = 4) readonly buffer BufI { float invstd[]; };   /* (C) */
layout(binding = 5) writeonly buffer BufDG { float dgamma[]; }; /* (C) */
layout(binding = 6) writeonly buffer BufDB { float dbeta[]; };  /* (C) */
layout(binding = 7) readonly buffer BufG { float gamma[]; };    /* (C) relu = 2 */
layout(binding = 8) readonly buffer BufB { float beta[]; };     /* (C) relu = 2, 3 */

#define BN_POOL_X(e) x_at(pc.r0 + (e), pc.step0)
#include "common/bn_pool.glsl"

/* relu = 3: the gradient reaching x's element at (plane row, j) through ReLU and the pool */
float pooled_grad(uint row, uint j, float mu, float scale, float shift) {
    const uint h = j / pc.W, w = j % pc.W;
    if (h >= 2u * pc.P || w >= 2u * pc.Q) return 0.0;   /* in no window (odd H or W) */
    float best;
    const uint at = row * pc.HW + j;
    const uint win = bn_pool_winner(row * pc.HW + (h & ~1u) * pc.W + (w & ~1u), pc.W, mu, scale, shift, best);
    precise const float g = 0.0 + dy_at(pc.r1 + (row * pc.P + h / 2u) * pc.Q + w / 2u, pc.step1); /* maxpool_bwd */
    return win == at && best > 0.0 ? g : 0.0;
}

void main() {
    const uint c = gl_WorkGroupID.x, lid = gl_LocalInvocationID.x;
    const uint m = pc.N * pc.HW;
    const float mu = mean[pc.r3 + c], is = invstd[pc.r4 + c];
    const float scale = pc.relu >= 2u ? is * gamma[pc.r7 + c] : 0.0, shift = pc.relu >= 2u ? beta[pc.r8 + c] : 0.0;
    float a = 0.0, b = 0.0;
    if (m > 0) {
        PLANE_STEP_INIT(lid, WG, pc.HW);   /* (n, j) of i, stepped without a division */
        for (uint i = lid; i < m; i += WG) {
            const uint at = (n * pc.C + c) * pc.HW + j;
            const float xv = x_at(pc.r0 + at, pc.step0);
            precise const float pre = (xv - mu) * scale + shift;
            const bool masked = pc.relu == 1u ? !(y_at(pc.r2 + at, pc.step2) > 0.0) : pc.relu == 2u && !(pre > 0.0);
            const float g = pc.relu == 3u ? pooled_grad(n * pc.C + c, j, mu, scale, shift)
                            : masked      ? 0.0
                                          : dy_at(pc.r1 + at, pc.step1);
            a += g;
            b += g * ((xv - mu) * is);
            PLANE_STEP_NEXT(pc.HW);
        }
    }
    const float sum_dy = block_sum(a);
    const float sum_dy_xhat = block_sum(b);
    if (lid == 0) {
        dbeta[pc.r6 + c] = sum_dy;
        dgamma[pc.r5 + c] = sum_dy_xhat;
    }
}
