#version 450
/*
 * conv2d_bwd_filter.comp — dw = conv2d backward w.r.t. the filter (DBK_OP_CONV2D_BWD_FILTER)
 * as an implicit GEMM reducing over the batch and output positions:
 *   dw (K, C*R*S) = dy (K, N*P*Q) . col^T (N*P*Q, C*R*S), col as in conv2d_fwd.comp
 * x and dy are windowed (common/window.glsl): the reduction runs over the whole batch, whose
 * activations may exceed one binding.
 * Split K: work group z reduces N*P*Q values [z*kchunk, (z+1)*kchunk) into partial sums
 * part[z] (binding 3); splitk_reduce.comp adds the parts in order. With one part the result
 * goes to dw directly.
 * Variant conv2d_bwd_filter_f16 (DBK_F16, common/operand.glsl): x and dy are f16.
 */
#include "common/operand.glsl"
#include "common/conv_head.glsl"
#include "common/window.glsl"

WINDOWED_OPERAND(0, x_at)                                       /* (N,C,H,W) */
WINDOWED_OPERAND(1, dy_at)                                      /* (N,K,P,Q) */
layout(binding = 2) writeonly buffer BufDW { float dw[]; }; /* (K,C,R,S) */
layout(binding = 3) writeonly buffer BufPart { float part[]; }; /* (splits, K, C*R*S) */

#define GEMM_M pc.K
#define GEMM_N (pc.C * pc.R * pc.S)
#define GEMM_K (pc.N * pc.P * pc.Q)
#define A_K_CONTIG 1
#define B_N_CONTIG 0
#define GEMM_K_BEGIN (gl_WorkGroupID.z * pc.kchunk)
#define GEMM_K_END min(GEMM_K, GEMM_K_BEGIN + pc.kchunk)

float load_a(uint k, uint kd) {
    if (k >= GEMM_M || kd >= GEMM_K) return 0.0;
    const uint pq = pc.P * pc.Q;
    const uint n = conv_div(kd, pq);
    return dy_at(pc.r1 + (n * pc.K + k) * pq + kd - n * pq, pc.step1);
}

float load_b(uint kd, uint crs) {
    if (kd >= GEMM_K || crs >= GEMM_N) return 0.0;
    const uint rs = pc.R * pc.S, pq = pc.P * pc.Q;
    const uint c = conv_div(crs, rs), cs = conv_div(crs, pc.S), r = cs - c * pc.R, s = crs - cs * pc.S;
    const uint n = conv_div(kd, pq), kq = conv_div(kd, pc.Q), p = kq - n * pc.P, q = kd - kq * pc.Q;
    const int h = int(p * pc.sh + r) - int(pc.ph), ww = int(q * pc.sw + s) - int(pc.pw);
    if (h < 0 || h >= int(pc.H) || ww < 0 || ww >= int(pc.W)) return 0.0;
    return x_at(pc.r0 + ((n * pc.C + c) * pc.H + uint(h)) * pc.W + uint(ww), pc.step0);
}

void store_c(uint k, uint crs, float v) {
    if (pc.splits == 1) dw[pc.r2 + k * GEMM_N + crs] = v;
    else part[pc.r3 + (gl_WorkGroupID.z * GEMM_M + k) * GEMM_N + crs] = v;
}

#include "common/gemm_core.glsl"

void main() { gemm_run(); }
