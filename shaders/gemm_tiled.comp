#version 450
/*
 * gemm_tiled.comp — C = alpha * op(A) op(B) + beta * C (DBK_OP_GEMM), op = transpose when
 * the flag is set; with beta == 0 the old C is not read (NaN in it must not leak, as the CPU
 * reference guarantees). Tiled and register-blocked by common/gemm_core.glsl.
 * Variant gemm_tiled_f16 (DBK_F16, common/operand.glsl): A and B are f16.
 */
#include "common/operand.glsl"
layout(push_constant) uniform Push {
    uint M, N, K;
    uint trans_a, trans_b;
    float alpha, beta;
    uint ra, rb, rc;        /* element offsets of A, B, C in their windows */
} pc;

layout(binding = 0) readonly buffer BufA { OPERAND a[]; };   /* (M,K), or (K,M) with trans_a */
layout(binding = 1) readonly buffer BufB { OPERAND b[]; };   /* (K,N), or (N,K) with trans_b */
layout(binding = 2) buffer BufC { float c[]; };            /* (M,N) */

#define GEMM_M pc.M
#define GEMM_N pc.N
#define GEMM_K pc.K
#define A_K_CONTIG 1
#define B_N_CONTIG 1

float load_a(uint m, uint k) {
    if (m >= pc.M || k >= pc.K) return 0.0;
    return float(pc.trans_a != 0 ? a[pc.ra + k * pc.M + m] : a[pc.ra + m * pc.K + k]);
}

float load_b(uint k, uint n) {
    if (k >= pc.K || n >= pc.N) return 0.0;
    return float(pc.trans_b != 0 ? b[pc.rb + n * pc.K + k] : b[pc.rb + k * pc.N + n]);
}

void store_c(uint m, uint n, float v) {
    const uint i = pc.rc + m * pc.N + n;
    c[i] = pc.beta == 0.0 ? pc.alpha * v : pc.alpha * v + pc.beta * c[i];
}

#include "common/gemm_core.glsl"

void main() { gemm_run(); }
