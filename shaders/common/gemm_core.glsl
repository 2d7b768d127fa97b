/*
 * gemm_core.glsl — the tiled, register-blocked GEMM loop shared by gemm_tiled.comp and the
 * implicit-GEMM convolutions (conv2d_fwd/bwd_data/bwd_filter.comp).
 *
 *   C (GEMM_M, GEMM_N) = A (GEMM_M, GEMM_K) . B (GEMM_K, GEMM_N)
 *
 * The including shader defines the three dimensions (GEMM_M/N/K, usually push constants),
 * `float load_a(uint m, uint k)` and `float load_b(uint k, uint n)`, which return 0 outside
 * the matrix (so ragged edges need no special case), and `void store_c(uint m, uint n, float
 * v)`, called only inside it. A_K_CONTIG / B_N_CONTIG say which index is contiguous in memory,
 * so neighbouring invocations load neighbouring addresses (coalescing).
 *
 * Work group (BM/TM) x (BN/TN) invocations computes a BM x BN tile of C: per BK step it
 * stages A (BK, BM) and B (BK, BN) in shared memory, then every invocation accumulates a TM x
 * TN block in registers, rows tm + i*(BM/TM) and columns tn + j*(BN/TN) (strided so that
 * neighbouring invocations read neighbouring shared words and write neighbouring columns).
 * Tiles are specialization constants 1..5 (profile keys vulkan.gemm.* / vulkan.conv.*); the
 * host sets the work-group size (constant 0) to (BM/TM)*(BN/TN).
 * Grid: x = ceil(GEMM_N / BN), y = ceil(GEMM_M / BM).
 *
 * Split K: a shader may define GEMM_K_BEGIN / GEMM_K_END (multiples of BK, or GEMM_K) to
 * reduce over part of K only (conv2d_bwd_filter.comp, one part per work group in z). Besides
 * parallelism on GPUs this keeps every invocation's loops short: lavapipe (llvmpipe) stops a
 * shader's loops after 65535 iterations in total, which an unsplit filter gradient over a
 * batch of 512 32x32 images exceeds.
 */
#ifndef GEMM_K_BEGIN
#define GEMM_K_BEGIN 0u
#define GEMM_K_END GEMM_K
#endif
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint BM = 64;
layout(constant_id = 2) const uint BN = 64;
layout(constant_id = 3) const uint BK = 16;
layout(constant_id = 4) const uint TM = 4;
layout(constant_id = 5) const uint TN = 4;

const uint WG_M = BM / TM;          /* invocations along m */
const uint WG_N = BN / TN;          /* invocations along n */
const uint NT = WG_M * WG_N;        /* invocations per work group */

shared float As[BK * BM];           /* (BK, BM) */
shared float Bs[BK * BN];           /* (BK, BN) */

void gemm_run() {
    const uint tid = gl_LocalInvocationID.x;
    const uint tm = tid / WG_N, tn = tid % WG_N;
    const uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
    float acc[TM * TN];
    [[unroll]] for (uint i = 0; i < TM * TN; i++) acc[i] = 0.0;

    for (uint k0 = GEMM_K_BEGIN; k0 < GEMM_K_END; k0 += BK) {
        for (uint e = tid; e < BM * BK; e += NT) {
#if A_K_CONTIG
            const uint kk = e % BK, mm = e / BK;
#else
            const uint mm = e % BM, kk = e / BM;
#endif
            As[kk * BM + mm] = load_a(m0 + mm, k0 + kk);
        }
        for (uint e = tid; e < BN * BK; e += NT) {
#if B_N_CONTIG
            const uint nn = e % BN, kk = e / BN;
#else
            const uint kk = e % BK, nn = e / BK;
#endif
            Bs[kk * BN + nn] = load_b(k0 + kk, n0 + nn);
        }
        barrier();
        for (uint kk = 0; kk < BK; kk++) {
            float a[TM], b[TN];
            [[unroll]] for (uint i = 0; i < TM; i++) a[i] = As[kk * BM + tm + i * WG_M];
            [[unroll]] for (uint j = 0; j < TN; j++) b[j] = Bs[kk * BN + tn + j * WG_N];
            [[unroll]] for (uint i = 0; i < TM; i++)
                [[unroll]] for (uint j = 0; j < TN; j++) acc[i * TN + j] += a[i] * b[j];
        }
        barrier();
    }
    [[unroll]] for (uint i = 0; i < TM; i++) {
        const uint m = m0 + tm + i * WG_M;
        if (m >= GEMM_M) continue;
        [[unroll]] for (uint j = 0; j < TN; j++) {
            const uint n = n0 + tn + j * WG_N;
            if (n < GEMM_N) store_c(m, n, acc[i * TN + j]);
        }
    }
}
