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
 * stages A (BK, BM) and B (BK, BN) in shared memory as vec4s (4 neighbouring rows of A, 4
 * neighbouring columns of B), then every invocation accumulates a TM x TN block in registers:
 * rows (tm + i*(BM/TM))*4 + 0..3 and columns (tn + j*(BN/TN))*4 + 0..3, so each shared read
 * is a vec4 and neighbouring invocations read neighbouring vec4s and write neighbouring
 * column quads. TM and TN are multiples of 4 (the host checks). With BM == TM (one invocation
 * along m) every invocation reads the same A words, a broadcast.
 * Why vec4: on a GPU a 128-bit shared load is one instruction; on lavapipe (llvmpipe, 8
 * invocations per SIMD vector) every shared or storage-buffer access whose address varies
 * between invocations becomes a loop over the 8 lanes, and a vec4 access costs one loop
 * instead of four. Measured there (tests/test_vk --bench, one llvmpipe thread, 64x64 tiles,
 * 8x8 per invocation): scalar reads 2.1 GFLOP/s for GEMM 512^3, vec4 reads 3.2.
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
const uint BM4 = BM / 4, BN4 = BN / 4, TM4 = TM / 4, TN4 = TN / 4;

shared vec4 As[BK * BM4];           /* (BK, BM) as vec4 along m */
shared vec4 Bs[BK * BN4];           /* (BK, BN) as vec4 along n */

void gemm_run() {
    const uint tid = gl_LocalInvocationID.x;
    /* with one invocation along m (BM == TM) tm is the constant 0 after specialization */
    const uint tm = WG_M == 1 ? 0 : tid / WG_N, tn = WG_M == 1 ? tid : tid % WG_N;
    const uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
    vec4 acc[TM * TN4];                 /* row i*4 + r, columns j: acc[(i*4 + r)*TN4 + j] */
    [[unroll]] for (uint i = 0; i < TM * TN4; i++) acc[i] = vec4(0.0);

    for (uint k0 = GEMM_K_BEGIN; k0 < GEMM_K_END; k0 += BK) {
        for (uint e = tid; e < BM4 * BK; e += NT) {
#if A_K_CONTIG
            const uint kk = e % BK, mq = e / BK;
#else
            const uint mq = e % BM4, kk = e / BM4;
#endif
            const uint m = m0 + mq * 4, k = k0 + kk;
            As[kk * BM4 + mq] = vec4(load_a(m, k), load_a(m + 1, k), load_a(m + 2, k), load_a(m + 3, k));
        }
        for (uint e = tid; e < BN4 * BK; e += NT) {
#if B_N_CONTIG
            const uint nq = e % BN4, kk = e / BN4;
#else
            const uint kk = e % BK, nq = e / BK;
#endif
            const uint n = n0 + nq * 4, k = k0 + kk;
            Bs[kk * BN4 + nq] = vec4(load_b(k, n), load_b(k, n + 1), load_b(k, n + 2), load_b(k, n + 3));
        }
        barrier();
        for (uint kk = 0; kk < BK; kk++) {
            vec4 a[TM4], b[TN4];
            [[unroll]] for (uint i = 0; i < TM4; i++) a[i] = As[kk * BM4 + tm + i * WG_M];
            [[unroll]] for (uint j = 0; j < TN4; j++) b[j] = Bs[kk * BN4 + tn + j * WG_N];
            [[unroll]] for (uint i = 0; i < TM4; i++)
                [[unroll]] for (uint r = 0; r < 4; r++)
                    [[unroll]] for (uint j = 0; j < TN4; j++)
                        acc[(i * 4 + r) * TN4 + j] += a[i][r] * b[j];
        }
        barrier();
    }
    [[unroll]] for (uint i = 0; i < TM4; i++) {
        [[unroll]] for (uint r = 0; r < 4; r++) {
            const uint m = m0 + (tm + i * WG_M) * 4 + r;
            if (m >= GEMM_M) continue;
            [[unroll]] for (uint j = 0; j < TN4; j++) {
                const uint n = n0 + (tn + j * WG_N) * 4;
                [[unroll]] for (uint c = 0; c < 4; c++)
                    if (n + c < GEMM_N) store_c(m, n + c, acc[(i * 4 + r) * TN4 + j][c]);
            }
        }
    }
}
