/*
 * gemm_tiled.cl — C (M,N) = alpha * op(A) op(B) + beta * C, row-major, op = transpose when
 * ta/tb is set (A stored (K,M), B stored (N,K)). The GEMM of daybreak's convolutions and
 * linear layer where the device profile selects "opencl.gemm": "tiled" (on PoCL this
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

/*
 * gemm_rb — register-blocked GEMM for CPU-like OpenCL devices (PoCL) on a packed B:
 *   C (M,N) = alpha * op(A) B + beta * C
 * B (K,N) comes packed in panels of RB_W columns, Bp[(panel*K + k)*RB_W + j] = B[k][panel*RB_W + j]
 * (zero beyond N), written that way by the producers (im2col_packed, gather_packed in
 * conv2d_im2col.cl), so a work-item streams one contiguous panel — the BLAS packing trick; a
 * row-major B with a 32 KiB row stride defeated the prefetchers (12 GFLOP/s).
 * Each work-item owns an RB_M x RB_W block of C in RB_M vector registers and per k does one
 * vector load and RB_M broadcast multiply-adds (a BLAS micro-kernel). No local memory, no
 * barrier, and the accumulators are named variables, not an array: PoCL keeps private arrays
 * of a work-group in memory, which turned every multiply-add into a load and a store.
 * Rows past M read row M-1 and are not stored; columns past N are computed on zero padding
 * and not stored. With cpq > 0 C is the (nb, M, cpq) layout of a convolution output, with
 * cpq < 0 C is stored transposed.
 * Tunables: RB_M (rows, 1..12), RB_W (vector width 4, 8 or 16).
 * global (ceil(N / RB_W), ceil(M / RB_M), batch) rounded to the work-group: a batch of GEMMs
 * of one shape in one launch, the e-th on A + e*sa, Bp + e*sb, C + e*sc.
 */
#ifndef RB_M
#define RB_M 8
#endif
#ifndef RB_W
#define RB_W 16
#endif
#define RB_CAT_(a, b) a##b
#define RB_CAT(a, b) RB_CAT_(a, b)
#define RB_VEC RB_CAT(float, RB_W)
#define RB_VLOAD RB_CAT(vload, RB_W)
#define RB_VSTORE RB_CAT(vstore, RB_W)
#define RB_STORE(i, acc, nn0, cbase)                                                               \
    do {                                                                                           \
        if (m0 + (i) < M && (nn0) < N) {                                                           \
            __global float *c_ = (cbase) + (m0 + (i)) * c_row;                                     \
            if (cpq < 0) {                                                                         \
                float r_[RB_W];                                                                    \
                RB_VSTORE(acc, 0, r_);                                                             \
                for (int j_ = 0; j_ < RB_W && (nn0) + j_ < N; j_++) {                              \
                    __global float *t_ = C + ((nn0) + j_) * ldc + m0 + (i);                        \
                    *t_ = beta == 0.0f ? alpha * r_[j_] : alpha * r_[j_] + beta * *t_;             \
                }                                                                                  \
            } else if ((nn0) + RB_W <= N) {                                                        \
                RB_VSTORE(beta == 0.0f ? alpha * (acc) : alpha * (acc) + beta * RB_VLOAD(0, c_), 0, c_); \
            } else {                                                                               \
                float r_[RB_W];                                                                    \
                RB_VSTORE(acc, 0, r_);                                                             \
                for (int j_ = 0; j_ < N - (nn0); j_++)                                             \
                    c_[j_] = beta == 0.0f ? alpha * r_[j_] : alpha * r_[j_] + beta * c_[j_];       \
            }                                                                                      \
        }                                                                                          \
    } while (0)
#define RB_STORE_ROW(i, acc) RB_STORE(i, acc, n0, c_base)
/* C's first element of the panel starting at column nn0 (see cpq below). */
#define RB_CBASE(nn0) (cpq > 0 ? C + ((nn0) / cpq) * M * cpq + (nn0) % cpq : C + (nn0))

__kernel void gemm_rb(const int M, const int N, const int K, const float alpha, const float beta,
                      __global const float *A, const uint a_off, const int lda, const int ta,   /* (M,K) or (K,M) */
                      __global const float *Bp, const uint b_off,                               /* packed (K,N) */
                      __global float *C, const uint c_off, const int ldc, const int cpq,       /* (M,N) */
                      const uint sa, const uint sb, const uint sc) {   /* batch strides */
    const int panel = get_global_id(0), n0 = panel * RB_W, m0 = get_global_id(1) * RB_M;
    if (n0 >= N || m0 >= M) return;
    /* dimension 2: the GEMM of a batch of equal shapes (Winograd's E planes in one launch),
     * its operands sa, sb, sc elements after the previous one's */
    const size_t e = get_global_id(2);
    A += a_off + e * sa;
    C += c_off + e * sc;
    Bp += e * sb;
    /* cpq > 0 (a multiple of RB_W): C is stored as (N/cpq, M, cpq) — a convolution's (nb,K,P,Q)
     * output chunk, written in place without a scatter pass; cpq < 0: C is stored transposed,
     * element (m, n) at C[n*ldc + m] (dw from dw^T); else row-major with ldc. */
    __global float *c_base = RB_CBASE(n0);
    const int c_row = cpq > 0 ? cpq : ldc;
    const int sm = ta ? 1 : lda, sk = ta ? lda : 1;   /* A[m][k] = A[m*sm + k*sk] */
    /* Row offsets into A; rows past M re-read row M-1 (valid memory, never stored). */
#define RB_ROW(i) ((m0 + (i) < M ? (i) : M - 1 - m0) * sm)
#if RB_M > 0
    RB_VEC acc0 = (RB_VEC)(0.0f);
    const int o0 = RB_ROW(0);
#endif
#if RB_M > 1
    RB_VEC acc1 = (RB_VEC)(0.0f);
    const int o1 = RB_ROW(1);
#endif
#if RB_M > 2
    RB_VEC acc2 = (RB_VEC)(0.0f);
    const int o2 = RB_ROW(2);
#endif
#if RB_M > 3
    RB_VEC acc3 = (RB_VEC)(0.0f);
    const int o3 = RB_ROW(3);
#endif
#if RB_M > 4
    RB_VEC acc4 = (RB_VEC)(0.0f);
    const int o4 = RB_ROW(4);
#endif
#if RB_M > 5
    RB_VEC acc5 = (RB_VEC)(0.0f);
    const int o5 = RB_ROW(5);
#endif
#if RB_M > 6
    RB_VEC acc6 = (RB_VEC)(0.0f);
    const int o6 = RB_ROW(6);
#endif
#if RB_M > 7
    RB_VEC acc7 = (RB_VEC)(0.0f);
    const int o7 = RB_ROW(7);
#endif
#if RB_M > 8
    RB_VEC acc8 = (RB_VEC)(0.0f);
    const int o8 = RB_ROW(8);
#endif
#if RB_M > 9
    RB_VEC acc9 = (RB_VEC)(0.0f);
    const int o9 = RB_ROW(9);
#endif
#if RB_M > 10
    RB_VEC acc10 = (RB_VEC)(0.0f);
    const int o10 = RB_ROW(10);
#endif
#if RB_M > 11
    RB_VEC acc11 = (RB_VEC)(0.0f);
    const int o11 = RB_ROW(11);
#endif
    __global const float *a = A + m0 * sm;
    __global const float *b = Bp + b_off + (size_t)panel * (size_t)K * RB_W;
    for (int k = 0; k < K; k++) {
        const RB_VEC bv = RB_VLOAD(0, b);
#if RB_M > 0
        acc0 += (RB_VEC)(a[o0]) * bv;
#endif
#if RB_M > 1
        acc1 += (RB_VEC)(a[o1]) * bv;
#endif
#if RB_M > 2
        acc2 += (RB_VEC)(a[o2]) * bv;
#endif
#if RB_M > 3
        acc3 += (RB_VEC)(a[o3]) * bv;
#endif
#if RB_M > 4
        acc4 += (RB_VEC)(a[o4]) * bv;
#endif
#if RB_M > 5
        acc5 += (RB_VEC)(a[o5]) * bv;
#endif
#if RB_M > 6
        acc6 += (RB_VEC)(a[o6]) * bv;
#endif
#if RB_M > 7
        acc7 += (RB_VEC)(a[o7]) * bv;
#endif
#if RB_M > 8
        acc8 += (RB_VEC)(a[o8]) * bv;
#endif
#if RB_M > 9
        acc9 += (RB_VEC)(a[o9]) * bv;
#endif
#if RB_M > 10
        acc10 += (RB_VEC)(a[o10]) * bv;
#endif
#if RB_M > 11
        acc11 += (RB_VEC)(a[o11]) * bv;
#endif
        a += sk;
        b += RB_W;
    }
#if RB_M > 0
    RB_STORE_ROW(0, acc0);
#endif
#if RB_M > 1
    RB_STORE_ROW(1, acc1);
#endif
#if RB_M > 2
    RB_STORE_ROW(2, acc2);
#endif
#if RB_M > 3
    RB_STORE_ROW(3, acc3);
#endif
#if RB_M > 4
    RB_STORE_ROW(4, acc4);
#endif
#if RB_M > 5
    RB_STORE_ROW(5, acc5);
#endif
#if RB_M > 6
    RB_STORE_ROW(6, acc6);
#endif
#if RB_M > 7
    RB_STORE_ROW(7, acc7);
#endif
#if RB_M > 8
    RB_STORE_ROW(8, acc8);
#endif
#if RB_M > 9
    RB_STORE_ROW(9, acc9);
#endif
#if RB_M > 10
    RB_STORE_ROW(10, acc10);
#endif
#if RB_M > 11
    RB_STORE_ROW(11, acc11);
#endif
}


/* gemm_rb2 — gemm_rb with two B panels per work-item (an RB_M x 2*RB_W block): each A value
 * loaded feeds two multiply-adds. Same operands and launch as gemm_rb but half the work-items
 * along dimension 0: global (ceil(panels / 2), ceil(M / RB_M)). */
__kernel void gemm_rb2(const int M, const int N, const int K, const float alpha, const float beta,
                       __global const float *A, const uint a_off, const int lda, const int ta,
                       __global const float *Bp, const uint b_off,
                       __global float *C, const uint c_off, const int ldc, const int cpq,
                       const uint sa, const uint sb, const uint sc) {
    const int panel = 2 * get_global_id(0), n0 = panel * RB_W, n1 = n0 + RB_W, m0 = get_global_id(1) * RB_M;
    if (n0 >= N || m0 >= M) return;
    const size_t e = get_global_id(2);
    A += a_off + e * sa;
    C += c_off + e * sc;
    Bp += e * sb;
    __global float *c0 = RB_CBASE(n0);
    __global float *c1 = RB_CBASE(n1);
    const int c_row = cpq > 0 ? cpq : ldc;
    const int sm = ta ? 1 : lda, sk = ta ? lda : 1;
#if RB_M > 0
    RB_VEC acc0 = (RB_VEC)(0.0f), bcc0 = (RB_VEC)(0.0f);
    const int o0 = RB_ROW(0);
#endif
#if RB_M > 1
    RB_VEC acc1 = (RB_VEC)(0.0f), bcc1 = (RB_VEC)(0.0f);
    const int o1 = RB_ROW(1);
#endif
#if RB_M > 2
    RB_VEC acc2 = (RB_VEC)(0.0f), bcc2 = (RB_VEC)(0.0f);
    const int o2 = RB_ROW(2);
#endif
#if RB_M > 3
    RB_VEC acc3 = (RB_VEC)(0.0f), bcc3 = (RB_VEC)(0.0f);
    const int o3 = RB_ROW(3);
#endif
#if RB_M > 4
    RB_VEC acc4 = (RB_VEC)(0.0f), bcc4 = (RB_VEC)(0.0f);
    const int o4 = RB_ROW(4);
#endif
#if RB_M > 5
    RB_VEC acc5 = (RB_VEC)(0.0f), bcc5 = (RB_VEC)(0.0f);
    const int o5 = RB_ROW(5);
#endif
#if RB_M > 6
    RB_VEC acc6 = (RB_VEC)(0.0f), bcc6 = (RB_VEC)(0.0f);
    const int o6 = RB_ROW(6);
#endif
#if RB_M > 7
    RB_VEC acc7 = (RB_VEC)(0.0f), bcc7 = (RB_VEC)(0.0f);
    const int o7 = RB_ROW(7);
#endif
#if RB_M > 8
    RB_VEC acc8 = (RB_VEC)(0.0f), bcc8 = (RB_VEC)(0.0f);
    const int o8 = RB_ROW(8);
#endif
#if RB_M > 9
    RB_VEC acc9 = (RB_VEC)(0.0f), bcc9 = (RB_VEC)(0.0f);
    const int o9 = RB_ROW(9);
#endif
#if RB_M > 10
    RB_VEC acc10 = (RB_VEC)(0.0f), bcc10 = (RB_VEC)(0.0f);
    const int o10 = RB_ROW(10);
#endif
#if RB_M > 11
    RB_VEC acc11 = (RB_VEC)(0.0f), bcc11 = (RB_VEC)(0.0f);
    const int o11 = RB_ROW(11);
#endif
    __global const float *a = A + m0 * sm;
    __global const float *b = Bp + b_off + (size_t)panel * (size_t)K * RB_W;
    /* A missing second panel (odd panel count) re-reads the first; it is never stored. */
    __global const float *b2 = n1 < N ? b + (size_t)K * RB_W : b;
    for (int k = 0; k < K; k++) {
        const RB_VEC bv = RB_VLOAD(0, b), bw = RB_VLOAD(0, b2);
#if RB_M > 0
        { const RB_VEC av = (RB_VEC)(a[o0]); acc0 += av * bv; bcc0 += av * bw; }
#endif
#if RB_M > 1
        { const RB_VEC av = (RB_VEC)(a[o1]); acc1 += av * bv; bcc1 += av * bw; }
#endif
#if RB_M > 2
        { const RB_VEC av = (RB_VEC)(a[o2]); acc2 += av * bv; bcc2 += av * bw; }
#endif
#if RB_M > 3
        { const RB_VEC av = (RB_VEC)(a[o3]); acc3 += av * bv; bcc3 += av * bw; }
#endif
#if RB_M > 4
        { const RB_VEC av = (RB_VEC)(a[o4]); acc4 += av * bv; bcc4 += av * bw; }
#endif
#if RB_M > 5
        { const RB_VEC av = (RB_VEC)(a[o5]); acc5 += av * bv; bcc5 += av * bw; }
#endif
#if RB_M > 6
        { const RB_VEC av = (RB_VEC)(a[o6]); acc6 += av * bv; bcc6 += av * bw; }
#endif
#if RB_M > 7
        { const RB_VEC av = (RB_VEC)(a[o7]); acc7 += av * bv; bcc7 += av * bw; }
#endif
#if RB_M > 8
        { const RB_VEC av = (RB_VEC)(a[o8]); acc8 += av * bv; bcc8 += av * bw; }
#endif
#if RB_M > 9
        { const RB_VEC av = (RB_VEC)(a[o9]); acc9 += av * bv; bcc9 += av * bw; }
#endif
#if RB_M > 10
        { const RB_VEC av = (RB_VEC)(a[o10]); acc10 += av * bv; bcc10 += av * bw; }
#endif
#if RB_M > 11
        { const RB_VEC av = (RB_VEC)(a[o11]); acc11 += av * bv; bcc11 += av * bw; }
#endif
        a += sk;
        b += RB_W;
        b2 += RB_W;
    }
#if RB_M > 0
    RB_STORE(0, acc0, n0, c0);
    RB_STORE(0, bcc0, n1, c1);
#endif
#if RB_M > 1
    RB_STORE(1, acc1, n0, c0);
    RB_STORE(1, bcc1, n1, c1);
#endif
#if RB_M > 2
    RB_STORE(2, acc2, n0, c0);
    RB_STORE(2, bcc2, n1, c1);
#endif
#if RB_M > 3
    RB_STORE(3, acc3, n0, c0);
    RB_STORE(3, bcc3, n1, c1);
#endif
#if RB_M > 4
    RB_STORE(4, acc4, n0, c0);
    RB_STORE(4, bcc4, n1, c1);
#endif
#if RB_M > 5
    RB_STORE(5, acc5, n0, c0);
    RB_STORE(5, bcc5, n1, c1);
#endif
#if RB_M > 6
    RB_STORE(6, acc6, n0, c0);
    RB_STORE(6, bcc6, n1, c1);
#endif
#if RB_M > 7
    RB_STORE(7, acc7, n0, c0);
    RB_STORE(7, bcc7, n1, c1);
#endif
#if RB_M > 8
    RB_STORE(8, acc8, n0, c0);
    RB_STORE(8, bcc8, n1, c1);
#endif
#if RB_M > 9
    RB_STORE(9, acc9, n0, c0);
    RB_STORE(9, bcc9, n1, c1);
#endif
#if RB_M > 10
    RB_STORE(10, acc10, n0, c0);
    RB_STORE(10, bcc10, n1, c1);
#endif
#if RB_M > 11
    RB_STORE(11, acc11, n0, c0);
    RB_STORE(11, bcc11, n1, c1);
#endif
}
