#version 450
/*
 * conv2d_bwd_data.comp — dx = conv2d backward w.r.t. the input (DBK_OP_CONV2D_BWD_DATA) as
 * an implicit GEMM that gathers instead of scattering (no atomics, no col2im pass):
 *   dx (C, N*H*W) = w^T (C, K*R*S) . g (K*R*S, N*H*W)
 *   g[(k*R + r)*S + s][(n*H + h)*W + w] = dy[n][k][p][q] where h = p*sh - ph + r and
 *   w = q*sw - pw + s for integer p in [0,P), q in [0,Q); 0 otherwise.
 * Variant conv2d_bwd_data_f16 (DBK_F16, common/operand.glsl): dy and w are f16.
 */
#include "common/operand.glsl"
#include "common/conv_head.glsl"

layout(binding = 0) readonly buffer BufDY { OPERAND dy[]; };  /* (N,K,P,Q) */
layout(binding = 1) readonly buffer BufW { OPERAND w[]; };    /* (K,C,R,S) */
layout(binding = 2) writeonly buffer BufDX { float dx[]; }; /* (N,C,H,W) */

#define GEMM_M pc.C
#define GEMM_N (pc.N * pc.H * pc.W)
#define GEMM_K (pc.K * pc.R * pc.S)
#define A_K_CONTIG 0
#define B_N_CONTIG 1

float load_a(uint c, uint kd) {
    if (c >= GEMM_M || kd >= GEMM_K) return 0.0;
    const uint rs = pc.R * pc.S;
    const uint k = conv_div(kd, rs);
    return float(w[pc.r1 + (k * pc.C + c) * rs + kd - k * rs]);
}

float load_b(uint kd, uint col) {
    if (kd >= GEMM_K || col >= GEMM_N) return 0.0;
    const uint rs = pc.R * pc.S, hw = pc.H * pc.W;
    const uint k = conv_div(kd, rs), ks = conv_div(kd, pc.S), r = ks - k * pc.R, s = kd - ks * pc.S;
    const uint n = conv_div(col, hw), cw = conv_div(col, pc.W), h = cw - n * pc.H, ww = col - cw * pc.W;
    const int ty = int(h + pc.ph) - int(r), tx = int(ww + pc.pw) - int(s);
    if (ty < 0 || tx < 0) return 0.0;
    if (uint(ty) % pc.sh != 0 || uint(tx) % pc.sw != 0) return 0.0;
    const uint p = uint(ty) / pc.sh, q = uint(tx) / pc.sw;
    if (p >= pc.P || q >= pc.Q) return 0.0;
    return float(dy[pc.r0 + ((n * pc.K + k) * pc.P + p) * pc.Q + q]);
}

void store_c(uint c, uint col, float v) {
    const uint hw = pc.H * pc.W, n = conv_div(col, hw);
    dx[pc.r2 + (n * pc.C + c) * hw + col - n * hw] = v;
}

#include "common/gemm_core.glsl"

void main() { gemm_run(); }
