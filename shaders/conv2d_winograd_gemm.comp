#version 450
/*
 * conv2d_winograd_gemm.comp — the E element-wise products of Winograd convolution
 * F(m x m, 3x3), m = 2 (E = 16) or 4 (E = 36) (Lavin & Gray, "Fast Algorithms for
 * Convolutional Neural Networks", 2015; matrices as andravin/wincnn prints them), one batched
 * GEMM: work-group z is the element e of the (m+2)x(m+2) transformed tile, and
 *   C[e] (M, N) = A[e] (M, K) . B[e] (K, N)        (+ beta * C[e]; beta == 0: C not read)
 * with A[e] row-major at ra + e*sa, B[e] at rb + e*sb row-major or, with trans_b, stored as
 * its transpose (N, K), C[e] at rc + e*sc. Tiled by common/gemm_core.glsl (grid x, y as there).
 *
 * The scheme (host: src/backends/vulkan/vk_ops_conv_winograd.c; the same as the OpenCL
 * path, cl/conv2d_winograd.cl). Letters as the CPU reference: x (N,C,H,W), w (K,C,3,3),
 * y (N,K,H,W); m x m output tiles, TH = ceil(H/m) by TW = ceil(W/m) per image, T tiles in a
 * chunk of images, tile t = (b, ty, tx). F(2x2, 3x3):
 *   U = G g G^T   conv2d_winograd_filter   G   = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1]
 *   V = B^T d B   conv2d_winograd_input    B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
 *   M[e] (K, T) = U[e] (K, C) . V[e] (C, T)         this shader, e = 4i + j
 *   Y = A^T M A   conv2d_winograd_output   A^T = [1 1 1 0; 0 1 -1 -1]
 * F(4x4, 3x3): the same with the shaders conv2d_winograd4_* and the 6x6 matrices of
 * common/winograd4.glsl, e = 6i + j.
 * Backward-data is the forward on dy with U of the filter rotated by 180 degrees, K and C
 * swapped. Backward-filter: Z = A dY A^T per tile (conv2d_winograd_dy), then
 * dU[e] (K, C) += Z[e] (K, T) . V[e]^T over the chunks (here, trans_b), then
 * dw = G^T dU G (conv2d_winograd_filter_grad).
 */
layout(push_constant) uniform Push {
    uint M, N, K;
    uint trans_b;
    float beta;
    uint ra, rb, rc;        /* element offsets of A, B, C in their windows */
    uint sa, sb, sc;        /* elements between consecutive e */
} pc;

layout(binding = 0) readonly buffer BufA { float a[]; };
layout(binding = 1) readonly buffer BufB { float b[]; };
layout(binding = 2) buffer BufC { float c[]; };

#define GEMM_M pc.M
#define GEMM_N pc.N
#define GEMM_K pc.K
#define A_K_CONTIG 1
#define B_N_CONTIG 1

float load_a(uint m, uint k) {
    if (m >= pc.M || k >= pc.K) return 0.0;
    return a[pc.ra + gl_WorkGroupID.z * pc.sa + m * pc.K + k];
}

float load_b(uint k, uint n) {
    if (k >= pc.K || n >= pc.N) return 0.0;
    const uint base = pc.rb + gl_WorkGroupID.z * pc.sb;
    return pc.trans_b != 0 ? b[base + n * pc.K + k] : b[base + k * pc.N + n];
}

void store_c(uint m, uint n, float v) {
    const uint i = pc.rc + gl_WorkGroupID.z * pc.sc + m * pc.N + n;
    c[i] = pc.beta == 0.0 ? v : v + pc.beta * c[i];
}

#include "common/gemm_core.glsl"

void main() { gemm_run(); }
