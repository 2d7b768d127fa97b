/*
 * gemm_tiled.cl — C (M,N) = alpha * op(A) op(B) + beta * C, row-major, op = transpose when
 * ta/tb is set (A stored (K,M), B stored (N,K)). The GEMM of daybreak's convolutions and
 * linear layer where the device profile selects "opencl.gemm": "tiled" (issue 3: on PoCL this
 * kernel beats CLBlast with its default parameters several times over).
 *
 * Tiling: a work-group computes a TSM x TSN tile of C, stepping through K in slices of TSK
 * that are staged in local memory (As[k][m], Bs[k][n], zero-filled outside the matrices, so
 * no size needs to be a multiple of a tile). Work-item (tx, ty) of the (TSN/WPTN, TSM/WPTM)
 * work-group owns WPTM consecutive rows and WPTN columns strided by TSN/WPTN: neighbouring
 * work-items along dimension 0 then touch neighbouring columns, which a GPU coalesces and
 * PoCL turns into vector loads/stores (it vectorises across dimension 0), while the A value
 * of a row is uniform across them (a broadcast).
 *
 * Tunables (build options from the profile, "opencl.gemm_tiled.*"): TSM, TSN, TSK, WPTM, WPTN,
 * with TSM % WPTM == 0 and TSN % WPTN == 0; the host checks work-group size and local memory.
 * Launch: global (ceil(N/TSN) * TSN/WPTN, ceil(M/TSM) * TSM/WPTM), local (TSN/WPTN, TSM/WPTM).
 * beta == 0 never reads C (NaN left in C must not leak, as torch.addmm).
 */
#ifndef TSM
#define TSM 64
#endif
#ifndef TSN
#define TSN 64
#endif
#ifndef TSK
#define TSK 16
#endif
#ifndef WPTM
#define WPTM 4
#endif
#ifndef WPTN
#define WPTN 4
#endif
#define RTSM (TSM / WPTM)
#define RTSN (TSN / WPTN)
#define GEMM_WGS (RTSM * RTSN)

__kernel __attribute__((reqd_work_group_size(RTSN, RTSM, 1)))
void gemm_tiled(const int M, const int N, const int K, const float alpha, const float beta,
                __global const float *A, const uint a_off, const int lda, const int ta,   /* (M,K) or (K,M) */
                __global const float *B, const uint b_off, const int ldb, const int tb,   /* (K,N) or (N,K) */
                __global float *C, const uint c_off, const int ldc) {                    /* (M,N) */
    __local float As[TSK][TSM];
    __local float Bs[TSK][TSN];
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int tid = ty * RTSN + tx;
    const int m0 = get_group_id(1) * TSM, n0 = get_group_id(0) * TSN;
    A += a_off;
    B += b_off;
    C += c_off;

    float acc[WPTM][WPTN];
    for (int a = 0; a < WPTM; a++)
        for (int b = 0; b < WPTN; b++) acc[a][b] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += TSK) {
        /* Stage the slices; the index order follows the stored layout so that consecutive
         * work-items read consecutive addresses. */
        for (int i = tid; i < TSK * TSM; i += GEMM_WGS) {
            int kk, mm;
            if (ta) { mm = i % TSM; kk = i / TSM; } else { kk = i % TSK; mm = i / TSK; }
            const int gm = m0 + mm, gk = k0 + kk;
            float v = 0.0f;
            if (gm < M && gk < K) v = ta ? A[gk * lda + gm] : A[gm * lda + gk];
            As[kk][mm] = v;
        }
        for (int i = tid; i < TSK * TSN; i += GEMM_WGS) {
            int kk, nn;
            if (tb) { kk = i % TSK; nn = i / TSK; } else { nn = i % TSN; kk = i / TSN; }
            const int gn = n0 + nn, gk = k0 + kk;
            float v = 0.0f;
            if (gn < N && gk < K) v = tb ? B[gn * ldb + gk] : B[gk * ldb + gn];
            Bs[kk][nn] = v;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int kk = 0; kk < TSK; kk++) {
            float bv[WPTN];
            for (int b = 0; b < WPTN; b++) bv[b] = Bs[kk][tx + b * RTSN];
            for (int a = 0; a < WPTM; a++) {
                const float av = As[kk][ty * WPTM + a];
                for (int b = 0; b < WPTN; b++) acc[a][b] = mad(av, bv[b], acc[a][b]);
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    for (int a = 0; a < WPTM; a++) {
        const int gm = m0 + ty * WPTM + a;
        if (gm >= M) continue;
        for (int b = 0; b < WPTN; b++) {
            const int gn = n0 + tx + b * RTSN;
            if (gn >= N) continue;
            __global float *c = C + gm * ldc + gn;
            *c = beta == 0.0f ? alpha * acc[a][b] : alpha * acc[a][b] + beta * *c;
        }
    }
}
