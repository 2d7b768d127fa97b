#version 450
/*
 * conv2d_fwd.comp — y = conv2d(x, w) (DBK_OP_CONV2D_FWD) as an implicit GEMM: the im2col
 * matrix is never stored, load_b gathers it from x on the fly.
 *   y (K, N*P*Q) = w (K, C*R*S) . col (C*R*S, N*P*Q)
 *   col[(c*R + r)*S + s][(n*P + p)*Q + q] = x[n][c][p*sh - ph + r][q*sw - pw + s] (0 in padding)
 * Variant conv2d_fwd_f16 (DBK_F16, common/operand.glsl): x and w are f16.
 */
#include "common/operand.glsl"
#include "common/conv_head.glsl"

layout(binding = 0) readonly buffer BufX { OPERAND x[]; };   /* (N,C,H,W) */
layout(binding = 1) readonly buffer BufW { OPERAND w[]; };   /* (K,C,R,S) */
layout(binding = 2) writeonly buffer BufY { float y[]; };  /* (N,K,P,Q) */

#define GEMM_M pc.K
#define GEMM_N (pc.N * pc.P * pc.Q)
#define GEMM_K (pc.C * pc.R * pc.S)
#define A_K_CONTIG 1
#define B_N_CONTIG 1

float load_a(uint m, uint k) {
    if (m >= GEMM_M || k >= GEMM_K) return 0.0;
    return float(w[pc.r1 + m * GEMM_K + k]);
}

float load_b(uint k, uint col) {
    if (k >= GEMM_K || col >= GEMM_N) return 0.0;
    const uint rs = pc.R * pc.S, pq = pc.P * pc.Q;
    const uint c = conv_div(k, rs), ks = conv_div(k, pc.S), r = ks - c * pc.R, s = k - ks * pc.S;
    const uint n = conv_div(col, pq), cq = conv_div(col, pc.Q), p = cq - n * pc.P, q = col - cq * pc.Q;
    const int h = int(p * pc.sh + r) - int(pc.ph), ww = int(q * pc.sw + s) - int(pc.pw);
    if (h < 0 || h >= int(pc.H) || ww < 0 || ww >= int(pc.W)) return 0.0;
    return float(x[pc.r0 + ((n * pc.C + c) * pc.H + uint(h)) * pc.W + uint(ww)]);
}

void store_c(uint m, uint col, float v) {
    const uint pq = pc.P * pc.Q, n = conv_div(col, pq);
    y[pc.r2 + (n * pc.K + m) * pq + col - n * pq] = v;
}

#include "common/gemm_core.glsl"

void main() { gemm_run(); }
