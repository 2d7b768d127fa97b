/*
 * conv2d_winograd.cl — the transforms of Winograd convolution F(2x2, 3x3) (Lavin & Gray, "Fast
 * Algorithms for Convolutional Neural Networks", 2015; matrices as andravin/wincnn prints them)
 * for 3x3 stride-1 pad-1 layers; the 16 GEMMs between them are gemm_rb (gemm_tiled.cl), driven
 * by src/backends/opencl/ocl_ops_conv_winograd.c, which has the whole scheme.
 *
 * Letters as the CPU reference (src/backends/cpu/conv.c): x (N,C,H,W), w (K,C,3,3),
 * y (N,K,P,Q) with P = H, Q = W. The output is cut into 2x2 tiles, TH = ceil(P/2) by
 * TW = ceil(Q/2) per image; tile t of a chunk of nb images is (b, ty, tx) in that order, and
 * reads the 4x4 input patch at rows 2ty-1 .. 2ty+2, columns 2tx-1 .. 2tx+2 (0 outside).
 *   U = G g G^T       (filter, 4x4 per (k, c))         G   = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1]
 *   V = B^T d B       (input patch, 4x4 per (c, t))    B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
 *   M[e] = U[e] . V[e] (16 GEMMs, e = 4i + j)
 *   Y = A^T M A       (2x2 output per (k, t))          A^T = [1 1 1 0; 0 1 -1 -1]
 * Backward-data is the same forward on dy with g[r][s] = w[k][c][2-r][2-s] (K and C swapped);
 * backward-filter differentiates Y through the transforms: dU = sum over tiles of
 * (A dY A^T) . V elementwise, as 16 GEMMs over the tiles, then dw = G^T dU G.
 *
 * The transformed planes are stored e-major: plane e of a (rows, cols) matrix, cols padded to
 * a multiple of the panel width pw, holds element (r, t) at ((t / pw) * rows + r) * pw + t % pw:
 * with pw = RB_W the packed-B layout of gemm_rb, with pw = the padded column count plain
 * row-major. Dimension 0 of every launch runs along tiles (or channels) so neighbouring
 * work-items write neighbouring addresses.
 *
 * Consecutive planes lie WINO_PLANE_PAD floats (a -D option, DBK_OCL_WINO_PLANE_PAD) further
 * apart than their size: airbench94's planes are multiples of 4 KiB, so the 36 (or 16) stores
 * or loads of one work-item, one per plane, fell into one set of an L1 cache of 64 sets (PoCL:
 * the input and dy transforms 12% faster with the pad, docs/measurements/opencl.md).
 */
#define WINO_PLANE(rows, cols) (((size_t)(rows) * (cols) + 15) / 16 * 16 + WINO_PLANE_PAD)

/* U (16, rows, cols) from w (K, C, 3, 3): rows K, cols C, or with flip (backward-data) rows C,
 * cols K and the filter rotated by 180 degrees.  global (cols, rows) */
__kernel void conv2d_winograd_filter(__global const float *w, const uint w_off, const int K, const int C,
                                     const int flip, __global float *u, const uint u_off) {
    const int col = get_global_id(0), row = get_global_id(1);
    const int rows = flip ? C : K, cols = flip ? K : C;
    if (col >= cols || row >= rows) return;
    const int k = flip ? col : row, c = flip ? row : col;
    __global const float *src = w + w_off + (k * C + c) * 9;
    float g[3][3], t[4][3];
    for (int r = 0; r < 3; r++)
        for (int s = 0; s < 3; s++) g[r][s] = flip ? src[(2 - r) * 3 + (2 - s)] : src[r * 3 + s];
    for (int s = 0; s < 3; s++) {   /* t = G g */
        t[0][s] = g[0][s];
        t[1][s] = 0.5f * (g[0][s] + g[1][s] + g[2][s]);
        t[2][s] = 0.5f * (g[0][s] - g[1][s] + g[2][s]);
        t[3][s] = g[2][s];
    }
    const size_t plane = WINO_PLANE(rows, cols);
    __global float *dst = u + u_off + (size_t)row * cols + col;
    for (int i = 0; i < 4; i++) {   /* U = t G^T */
        dst[(4 * i + 0) * plane] = t[i][0];
        dst[(4 * i + 1) * plane] = 0.5f * (t[i][0] + t[i][1] + t[i][2]);
        dst[(4 * i + 2) * plane] = 0.5f * (t[i][0] - t[i][1] + t[i][2]);
        dst[(4 * i + 3) * plane] = t[i][2];
    }
}

/* V (16, C, tpad) = B^T d B of every 4x4 input patch of a chunk of nb images of x at element
 * offset x_off, in panels of pw columns; columns T .. tpad-1 are zero.  global (tpad, C) */
__kernel void conv2d_winograd_input(__global const float *x, const uint x_off, const int C, const int H, const int W,
                                    const int TH, const int TW, const int nb, const int tpad, const int pw,
                                    __global float *v, const uint v_off) {
    const int t = get_global_id(0), c = get_global_id(1);
    if (t >= tpad || c >= C) return;
    float d[4][4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) d[i][j] = 0.0f;
    if (t < nb * TH * TW) {
        const int b = t / (TH * TW), ty = (t / TW) % TH, tx = t % TW;
        __global const float *src = x + x_off + (size_t)(b * C + c) * H * W;
        for (int i = 0; i < 4; i++) {
            const int h = 2 * ty - 1 + i;
            if (h < 0 || h >= H) continue;
            for (int j = 0; j < 4; j++) {
                const int wc = 2 * tx - 1 + j;
                if (wc >= 0 && wc < W) d[i][j] = src[h * W + wc];
            }
        }
    }
    float e[4][4];
    for (int j = 0; j < 4; j++) {   /* e = B^T d */
        e[0][j] = d[0][j] - d[2][j];
        e[1][j] = d[1][j] + d[2][j];
        e[2][j] = d[2][j] - d[1][j];
        e[3][j] = d[1][j] - d[3][j];
    }
    const size_t plane = WINO_PLANE(C, tpad);
    __global float *dst = v + v_off + ((size_t)(t / pw) * C + c) * pw + t % pw;
    for (int i = 0; i < 4; i++) {   /* V = e B */
        dst[(4 * i + 0) * plane] = e[i][0] - e[i][2];
        dst[(4 * i + 1) * plane] = e[i][1] + e[i][2];
        dst[(4 * i + 2) * plane] = e[i][2] - e[i][1];
        dst[(4 * i + 3) * plane] = e[i][1] - e[i][3];
    }
}

/* y chunk (nb, K, P, Q) = A^T m A per tile from m (16, K, ldm) row-major (the GEMMs' output;
 * column t is tile t), written where the 2x2 tile lies inside the output.  global (T, K) */
__kernel void conv2d_winograd_output(__global const float *m, const uint m_off, const int K, const int P, const int Q,
                                     const int TH, const int TW, const int nb, const int ldm, __global float *y,
                                     const uint y_off) {
    const int t = get_global_id(0), k = get_global_id(1);
    if (t >= nb * TH * TW || k >= K) return;
    const size_t plane = WINO_PLANE(K, ldm);
    __global const float *src = m + m_off + (size_t)k * ldm + t;
    float a[2][4];
    for (int j = 0; j < 4; j++) {   /* a = A^T m */
        const float m0 = src[j * plane], m1 = src[(4 + j) * plane], m2 = src[(8 + j) * plane],
                    m3 = src[(12 + j) * plane];
        a[0][j] = m0 + m1 + m2;
        a[1][j] = m1 - m2 - m3;
    }
    const int b = t / (TH * TW), ty = (t / TW) % TH, tx = t % TW;
    __global float *dst = y + y_off + (size_t)(b * K + k) * P * Q;
    for (int i = 0; i < 2; i++) {   /* Y = a A */
        const int p = 2 * ty + i;
        if (p >= P) break;
        dst[p * Q + 2 * tx] = a[i][0] + a[i][1] + a[i][2];
        if (2 * tx + 1 < Q) dst[p * Q + 2 * tx + 1] = a[i][1] - a[i][2] - a[i][3];
    }
}

/* Backward-filter: Z (16, T, kpad) = A dy A^T per tile (the gradient reaching U . V), stored
 * as the transposed (T, K) matrix in panels of pw channels (gemm_rb's packed B for
 * dU^T = V . Z); channels K .. kpad-1 are zero.  global (T, kpad) */
__kernel void conv2d_winograd_dy(__global const float *dy, const uint dy_off, const int K, const int P, const int Q,
                                 const int TH, const int TW, const int nb, const int kpad, const int pw,
                                 __global float *z, const uint z_off) {
    const int t = get_global_id(0), k = get_global_id(1);
    const int T = nb * TH * TW;
    if (t >= T || k >= kpad) return;
    float g[2][2] = {{0.0f, 0.0f}, {0.0f, 0.0f}};
    if (k < K) {
        const int b = t / (TH * TW), ty = (t / TW) % TH, tx = t % TW;
        __global const float *src = dy + dy_off + (size_t)(b * K + k) * P * Q;
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++)
                if (2 * ty + i < P && 2 * tx + j < Q) g[i][j] = src[(2 * ty + i) * Q + 2 * tx + j];
    }
    float a[4][2];
    for (int j = 0; j < 2; j++) {   /* a = A g */
        a[0][j] = g[0][j];
        a[1][j] = g[0][j] + g[1][j];
        a[2][j] = g[0][j] - g[1][j];
        a[3][j] = -g[1][j];
    }
    const size_t plane = WINO_PLANE(T, kpad);
    __global float *dst = z + z_off + ((size_t)(k / pw) * T + t) * pw + k % pw;
    for (int i = 0; i < 4; i++) {   /* Z = a A^T */
        dst[(4 * i + 0) * plane] = a[i][0];
        dst[(4 * i + 1) * plane] = a[i][0] + a[i][1];
        dst[(4 * i + 2) * plane] = a[i][0] - a[i][1];
        dst[(4 * i + 3) * plane] = -a[i][1];
    }
}

/* dw (K, C, 3, 3) = G^T du G from du (16, K, C), overwriting dw.  global (C, K) */
__kernel void conv2d_winograd_filter_grad(__global const float *du, const uint du_off, const int K, const int C,
                                          __global float *dw, const uint dw_off) {
    const int c = get_global_id(0), k = get_global_id(1);
    if (c >= C || k >= K) return;
    const size_t plane = WINO_PLANE(K, C);
    __global const float *src = du + du_off + (size_t)k * C + c;
    float a[3][4];
    for (int j = 0; j < 4; j++) {   /* a = G^T du */
        const float u0 = src[j * plane], u1 = src[(4 + j) * plane], u2 = src[(8 + j) * plane],
                    u3 = src[(12 + j) * plane];
        a[0][j] = u0 + 0.5f * (u1 + u2);
        a[1][j] = 0.5f * (u1 - u2);
        a[2][j] = 0.5f * (u1 + u2) + u3;
    }
    __global float *dst = dw + dw_off + (size_t)(k * C + c) * 9;
    for (int i = 0; i < 3; i++) {   /* dw = a G */
        dst[i * 3 + 0] = a[i][0] + 0.5f * (a[i][1] + a[i][2]);
        dst[i * 3 + 1] = 0.5f * (a[i][1] - a[i][2]);
        dst[i * 3 + 2] = 0.5f * (a[i][1] + a[i][2]) + a[i][3];
    }
}

/* ------------------------------------------------------------------------------------------ */
/* F(4x4, 3x3): 4x4 output tiles from 6x6 input patches, 36 GEMMs (e = 6i + j), 4x fewer
 * multiply-adds than direct convolution. Interpolation points 0, 1, -1, 2, -2 and infinity
 * (Lavin & Gray 2015, section 4.2; the matrices andravin/wincnn prints for them):
 *   B^T = [4  0 -5  0 1 0;     G = [ 1/4     0    0  ;    A^T = [1 1  1 1  1 0;
 *          0 -4 -4  1 1 0;          -1/6  -1/6 -1/6  ;           0 1 -1 2 -2 0;
 *          0  4 -4 -1 1 0;          -1/6   1/6 -1/6  ;           0 1  1 4  4 0;
 *          0 -2 -1  2 1 0;           1/24  1/12 1/6  ;           0 1 -1 8 -8 1]
 *          0  2 -1 -2 1 0;           1/24 -1/12 1/6  ;
 *          0  4  0 -5 0 1]           0     0    1    ]
 * Tiles as above with 4 for 2: TH = ceil(P/4), TW = ceil(Q/4), patch rows 4ty-1 .. 4ty+4.
 * The larger entries (up to 8 in A^T, 5 in B^T, fractions in G) cost some accuracy against
 * F(2x2, 3x3) (docs/measurements/winograd.md has it measured). Each 2-D transform L X R^T applies one 1-D
 * transform below to the rows, then to the columns (or the other way round).
 *
 * No private arrays here: PoCL keeps a work-item's private arrays in memory (as gemm_rb's
 * comment says), which made these transforms 70% of a 32x32 layer's time
 * (docs/measurements/winograd.md).
 * So a 6x6 tile is 36 named scalars, f##i##j for row i, column j, made by the macros below,
 * and every load of a padded patch is a load from a clamped (valid) address and a select. */

/* The 1-D transforms on named values of type V (float, or float4: four tiles or channels at
 * once): outputs o0.. = L (i0, i1, ...) for L = B^T, G, A^T, A, G^T. */
#define WINO4_BT_(V, i0, i1, i2, i3, i4, i5, o0, o1, o2, o3, o4, o5)                                 \
    do {                                                                                         \
        const V x0_ = (i0), x1_ = (i1), x2_ = (i2), x3_ = (i3), x4_ = (i4), x5_ = (i5);      \
        o0 = 4.0f * x0_ - 5.0f * x2_ + x4_;                                                      \
        o1 = -4.0f * (x1_ + x2_) + x3_ + x4_;                                                    \
        o2 = 4.0f * (x1_ - x2_) - x3_ + x4_;                                                     \
        o3 = 2.0f * (x3_ - x1_) - x2_ + x4_;                                                     \
        o4 = 2.0f * (x1_ - x3_) - x2_ + x4_;                                                     \
        o5 = 4.0f * x1_ - 5.0f * x3_ + x5_;                                                      \
    } while (0)
#define WINO4_G_(V, i0, i1, i2, o0, o1, o2, o3, o4, o5)                                              \
    do {                                                                                         \
        const V x0_ = (i0), x1_ = (i1), x2_ = (i2), even_ = x0_ + x2_;                       \
        o0 = 0.25f * x0_;                                                                        \
        o1 = -(even_ + x1_) / 6.0f;                                                              \
        o2 = -(even_ - x1_) / 6.0f;                                                              \
        o3 = x0_ / 24.0f + x1_ / 12.0f + x2_ / 6.0f;                                             \
        o4 = x0_ / 24.0f - x1_ / 12.0f + x2_ / 6.0f;                                             \
        o5 = x2_;                                                                                \
    } while (0)
#define WINO4_AT_(V, i0, i1, i2, i3, i4, i5, o0, o1, o2, o3)                                         \
    do {                                                                                         \
        const V s1_ = (i1) + (i2), d1_ = (i1) - (i2), s2_ = (i3) + (i4), d2_ = (i3) - (i4);  \
        o0 = (i0) + s1_ + s2_;                                                                   \
        o1 = d1_ + 2.0f * d2_;                                                                   \
        o2 = s1_ + 4.0f * s2_;                                                                   \
        o3 = d1_ + 8.0f * d2_ + (i5);                                                            \
    } while (0)
#define WINO4_A_(V, i0, i1, i2, i3, o0, o1, o2, o3, o4, o5)                                          \
    do {                                                                                         \
        const V x0_ = (i0), x1_ = (i1), x2_ = (i2), x3_ = (i3);                              \
        o0 = x0_;                                                                                \
        o1 = x0_ + x1_ + x2_ + x3_;                                                              \
        o2 = x0_ - x1_ + x2_ - x3_;                                                              \
        o3 = x0_ + 2.0f * x1_ + 4.0f * x2_ + 8.0f * x3_;                                         \
        o4 = x0_ - 2.0f * x1_ + 4.0f * x2_ - 8.0f * x3_;                                         \
        o5 = x3_;                                                                                \
    } while (0)
#define WINO4_GT_(V, i0, i1, i2, i3, i4, i5, o0, o1, o2)                                             \
    do {                                                                                         \
        const V x0_ = (i0), x1_ = (i1), x2_ = (i2), x3_ = (i3), x4_ = (i4), x5_ = (i5);      \
        o0 = 0.25f * x0_ - (x1_ + x2_) / 6.0f + (x3_ + x4_) / 24.0f;                             \
        o1 = (x2_ - x1_) / 6.0f + (x3_ - x4_) / 12.0f;                                           \
        o2 = (x3_ + x4_ - x1_ - x2_) / 6.0f + x5_;                                               \
    } while (0)

/* The macros above with their inputs and their outputs as two groups, each one macro argument:
 * ROW6(f, 0) below, or an explicit LIST6(a, b, ...). The one more expansion splits a group into
 * its values. Not variadic macros: OpenCL C 1.2 has none, and NVIDIA's compiler refuses them. */
#define LIST3(a, b, c) a, b, c
#define LIST4(a, b, c, d) a, b, c, d
#define LIST6(a, b, c, d, e, f) a, b, c, d, e, f
#define WINO4_BT(V, in, out) WINO4_BT_(V, in, out)
#define WINO4_G(V, in, out) WINO4_G_(V, in, out)
#define WINO4_AT(V, in, out) WINO4_AT_(V, in, out)
#define WINO4_A(V, in, out) WINO4_A_(V, in, out)
#define WINO4_GT(V, in, out) WINO4_GT_(V, in, out)

/* Row i or column j of a 6x6 (or 6x4, 4x6, 3x6, 6x3) tile f as an argument list. */
#define ROW6(f, i) f##i##0, f##i##1, f##i##2, f##i##3, f##i##4, f##i##5
#define ROW4(f, i) f##i##0, f##i##1, f##i##2, f##i##3
#define ROW3(f, i) f##i##0, f##i##1, f##i##2
#define COL6(f, j) f##0##j, f##1##j, f##2##j, f##3##j, f##4##j, f##5##j
#define COL4(f, j) f##0##j, f##1##j, f##2##j, f##3##j
#define COL3(f, j) f##0##j, f##1##j, f##2##j
#define DECL6(V, f, i) V f##i##0, f##i##1, f##i##2, f##i##3, f##i##4, f##i##5
#define DECL4(V, f, i) V f##i##0, f##i##1, f##i##2, f##i##3
#define DECL3(V, f, i) V f##i##0, f##i##1, f##i##2

/* n (1 .. 4) consecutive floats at p as a float4 (lanes past n zero), and a float4's first n
 * lanes stored at p: the edge of a row whose length is not a multiple of 4. */
static inline float4 wino4_load4(__global const float *p, int n) {
    return n >= 4 ? vload4(0, p) : (float4)(p[0], n > 1 ? p[1] : 0.0f, n > 2 ? p[2] : 0.0f, 0.0f);
}
static inline void wino4_store4(float4 v, __global float *p, int n) {
    if (n >= 4) {
        vstore4(v, 0, p);
    } else {
        p[0] = v.s0;
        if (n > 1) p[1] = v.s1;
        if (n > 2) p[2] = v.s2;
    }
}

/* Every F(4x4) kernel works on four tiles, channels or filter columns at once in float4 lanes
 * (the input transform on 16 tiles in float16 lanes, winograd4_input16_at): a work-item's
 * arithmetic is then vector code, which PoCL did not make of one per work-item
 * (docs/measurements/winograd.md has the profile). */
#define LANES4(m) m(0) m(1) m(2) m(3)
#define LANE(x, l) (x).s##l

/* U (36, rows, cols) = G g G^T, as conv2d_winograd_filter, for columns 4g .. 4g+3 (those below cols).
 * work-item (g0, g1) of (ceil(cols / 4), rows) */
static inline void winograd4_filter_at(const int g0, const int g1, __global const float *w, const uint w_off,
                                       const int K, const int C, const int flip, __global float *u, const uint u_off) {
    const int col0 = 4 * g0, row = g1;
    const int rows = flip ? C : K, cols = flip ? K : C;
    if (col0 >= cols || row >= rows) return;
    const int n = cols - col0;
    /* lane l: the 3x3 filter of column col0 + l (past cols: column col0's, not stored) */
#define LANE_(l)                                                                                   \
    const int cl##l = (l) < n ? col0 + (l) : col0;                                                \
    __global const float *src##l = w + w_off + ((flip ? cl##l : row) * C + (flip ? row : cl##l)) * 9;
    LANES4(LANE_)
#undef LANE_
#define G_(r, s)                                                                                   \
    (flip ? (float4)(src0[(2 - (r)) * 3 + (2 - (s))], src1[(2 - (r)) * 3 + (2 - (s))],            \
                     src2[(2 - (r)) * 3 + (2 - (s))], src3[(2 - (r)) * 3 + (2 - (s))])             \
          : (float4)(src0[(r) * 3 + (s)], src1[(r) * 3 + (s)], src2[(r) * 3 + (s)], src3[(r) * 3 + (s)]))
    DECL3(float4, t, 0); DECL3(float4, t, 1); DECL3(float4, t, 2);
    DECL3(float4, t, 3); DECL3(float4, t, 4); DECL3(float4, t, 5);
    /* t = G g, column by column */
    WINO4_G(float4, LIST3(G_(0, 0), G_(1, 0), G_(2, 0)), COL6(t, 0));
    WINO4_G(float4, LIST3(G_(0, 1), G_(1, 1), G_(2, 1)), COL6(t, 1));
    WINO4_G(float4, LIST3(G_(0, 2), G_(1, 2), G_(2, 2)), COL6(t, 2));
#undef G_
    const size_t plane = WINO_PLANE(rows, cols);
    __global float *dst = u + u_off + (size_t)row * cols + col0;
    /* U = t G^T, row by row; element (i, j) to plane 6i + j */
#define U_ROW(i)                                                                                   \
    do {                                                                                           \
        float4 u0, u1, u2, u3, u4, u5;                                                             \
        WINO4_G(float4, ROW3(t, i), LIST6(u0, u1, u2, u3, u4, u5));                                       \
        wino4_store4(u0, dst + (6 * i + 0) * plane, n); wino4_store4(u1, dst + (6 * i + 1) * plane, n); \
        wino4_store4(u2, dst + (6 * i + 2) * plane, n); wino4_store4(u3, dst + (6 * i + 3) * plane, n); \
        wino4_store4(u4, dst + (6 * i + 4) * plane, n); wino4_store4(u5, dst + (6 * i + 5) * plane, n); \
    } while (0);
    U_ROW(0) U_ROW(1) U_ROW(2) U_ROW(3) U_ROW(4) U_ROW(5)
#undef U_ROW
}

/* x[h][w] of one image plane, 0 outside it or when !ok: a load from a clamped (valid) address
 * and a select, no branch. */
static inline float wino4_x(__global const float *plane, int h, int w, int H, int W, bool ok) {
    const float v = plane[clamp(h, 0, H - 1) * W + clamp(w, 0, W - 1)];
    return ok && h >= 0 && h < H && w >= 0 && w < W ? v : 0.0f;
}

/* The image, tile row and tile column of tile t (TH x TW tiles per image): a work-item's one
 * set of divisions; its other lanes step from there (wino4_next). Integer divisions by a
 * run-time value were a large part of these transforms' time on PoCL. */
#define WINO4_COORDS(t, TH, TW, b, ty, tx)                                                         \
    const int b = (t) / ((TH) * (TW)), ty = ((t) - b * (TH) * (TW)) / (TW), tx = (t) - (b * (TH) + ty) * (TW);
static inline void wino4_next(const int TH, const int TW, int *b, int *ty, int *tx) {
    if (++*tx == TW) {
        *tx = 0;
        if (++*ty == TH) {
            *ty = 0;
            ++*b;
        }
    }
}

/* Columns 4tx .. 4tx+15 of an image row (row points at column 4tx), 0 from column W on: one
 * vload16, masked where the row ends inside the 16, or masked loads where fewer than 16 floats
 * are left before the chunk's end (left: the floats from row to that end). */
static inline float16 wino4_row16(__global const float *row, const int tx, const int W, const size_t left) {
    if (4 * tx + 16 <= W) return vload16(0, row);
    const int16 inside = (int16)(4 * tx) + (int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15) < (int16)(W);
    if (left >= 16) return select((float16)(0.0f), vload16(0, row), inside);
    const int n = W - 4 * tx;
#define COL_(k) ((k) < n ? row[k] : 0.0f)
    return (float16)(COL_(0), COL_(1), COL_(2), COL_(3), COL_(4), COL_(5), COL_(6), COL_(7), COL_(8), COL_(9),
                     COL_(10), COL_(11), COL_(12), COL_(13), COL_(14), COL_(15));
#undef COL_
}

/* Columns 0 .. 7 of an image row of at most 8 columns, 0 from column W on, as wino4_row16. */
static inline float8 wino4_row8(__global const float *row, const int W, const size_t left) {
    if (W >= 8) return vload8(0, row);
    const int8 inside = (int8)(0, 1, 2, 3, 4, 5, 6, 7) < (int8)(W);
    if (left >= 8) return select((float8)(0.0f), vload8(0, row), inside);
#define COL_(k) ((k) < W ? row[k] : 0.0f)
    return (float8)(COL_(0), COL_(1), COL_(2), COL_(3), COL_(4), COL_(5), COL_(6), COL_(7));
#undef COL_
}

/* V (36, C, tpad) = B^T d B of every 6x6 input patch, as conv2d_winograd_input, for tiles 4g .. 4g+3
 * (a multiple of 4 and pw a multiple of 4, so the four are neighbours in one panel).
 * work-item (g0, g1) of (tpad / 4, C) */
static inline void winograd4_input_at(const int g0, const int g1, __global const float *x, const uint x_off,
                                      const int C, const int H, const int W, const int TH, const int TW, const int nb,
                                      const int tpad, const int pw, __global float *v, const uint v_off) {
    const int t0 = 4 * g0, c = g1;
    if (t0 >= tpad || c >= C) return;
    const int T = nb * TH * TW;
    WINO4_COORDS(t0 < T ? t0 : 0, TH, TW, b0, ty0, tx0)
    const size_t image = (size_t)H * W, at0 = ((size_t)b0 * C + c) * image;
    __global const float *src0 = x + x_off + at0;
    const int h0 = 4 * ty0 - 1, w0 = 4 * tx0 - 1;
    DECL6(float4, f, 0); DECL6(float4, f, 1); DECL6(float4, f, 2);
    DECL6(float4, f, 3); DECL6(float4, f, 4); DECL6(float4, f, 5);
    /* f = d B, row by row: row i of f is B^T applied to row i of the patch. */
    if (t0 + 3 < T && tx0 + 3 < TW) {
        /* The four tiles side by side in one row of tiles (maps of 13 or more columns): each
         * patch row is 16 consecutive columns (wino4_row16) and the column on either side,
         * spread over the lanes by swizzles. */
        const size_t chunk_end = (size_t)nb * C * image;
        const bool has_left = tx0 > 0, has_right = 4 * tx0 + 16 < W;
#define F_ROW(i)                                                                                   \
        do {                                                                                       \
            const int h_ = h0 + (i), hc_ = clamp(h_, 0, H - 1);                                    \
            const bool r_ = h_ >= 0 && h_ < H;                                                     \
            __global const float *row_ = src0 + hc_ * W + 4 * tx0;                                 \
            const float16 m_ = r_ ? wino4_row16(row_, tx0, W, chunk_end - (at0 + (size_t)hc_ * W + 4 * tx0)) \
                                  : (float16)(0.0f);                                               \
            const float left_ = row_[has_left ? -1 : 0], right_ = row_[has_right ? 16 : 0];        \
            const float l_ = r_ && has_left ? left_ : 0.0f, r16_ = r_ && has_right ? right_ : 0.0f; \
            WINO4_BT(float4, LIST6((float4)(l_, m_.s3, m_.s7, m_.sb), m_.s048c, m_.s159d, m_.s26ae, m_.s37bf, \
                     (float4)(m_.s4, m_.s8, m_.sc, r16_)), ROW6(f, i));                             \
        } while (0);
        F_ROW(0) F_ROW(1) F_ROW(2) F_ROW(3) F_ROW(4) F_ROW(5)
#undef F_ROW
    } else if (TW == 2 && tx0 == 0 && ty0 + 1 < TH && t0 + 3 < T) {
        /* Two rows of two tiles of one image (maps of 5 to 8 columns): lanes 0 and 1 read patch
         * row i from image row a = 4ty0 - 1 + i, lanes 2 and 3 from row a + 4, each row one
         * (masked) load of its 8 columns; column -1 and column 8 are outside the map. */
        const size_t chunk_end = (size_t)nb * C * image;
#define ROW8_(h)                                                                                   \
        ((h) >= 0 && (h) < H ? wino4_row8(src0 + (h) * W, W, chunk_end - (at0 + (size_t)(h) * W)) : (float8)(0.0f))
#define F_ROW(i)                                                                                   \
        do {                                                                                       \
            const float8 a_ = ROW8_(h0 + (i)), b_ = ROW8_(h0 + 4 + (i));                           \
            WINO4_BT(float4, LIST6((float4)(0.0f, a_.s3, 0.0f, b_.s3), (float4)(a_.s0, a_.s4, b_.s0, b_.s4), \
                     (float4)(a_.s1, a_.s5, b_.s1, b_.s5), (float4)(a_.s2, a_.s6, b_.s2, b_.s6),   \
                     (float4)(a_.s3, a_.s7, b_.s3, b_.s7), (float4)(a_.s4, 0.0f, b_.s4, 0.0f)), ROW6(f, i)); \
        } while (0);
        F_ROW(0) F_ROW(1) F_ROW(2) F_ROW(3) F_ROW(4) F_ROW(5)
#undef F_ROW
#undef ROW8_
    } else {
        /* lane l: tile t0 + l (a padding column past T: zero), its image plane and patch corner */
        int b1 = b0, ty1 = ty0, tx1 = tx0;
        wino4_next(TH, TW, &b1, &ty1, &tx1);
        int b2 = b1, ty2 = ty1, tx2 = tx1;
        wino4_next(TH, TW, &b2, &ty2, &tx2);
        int b3 = b2, ty3 = ty2, tx3 = tx2;
        wino4_next(TH, TW, &b3, &ty3, &tx3);
        const bool ok0 = t0 < T;
#define LANE_(l)                                                                                   \
        const bool ok##l = t0 + (l) < T;                                                           \
        __global const float *src##l = ok##l ? x + x_off + ((size_t)b##l * C + c) * image : src0;  \
        const int h##l = 4 * ty##l - 1, w##l = 4 * tx##l - 1;
        LANE_(1) LANE_(2) LANE_(3)
#undef LANE_
#define D_(i, j)                                                                                   \
        (float4)(wino4_x(src0, h0 + (i), w0 + (j), H, W, ok0), wino4_x(src1, h1 + (i), w1 + (j), H, W, ok1), \
                 wino4_x(src2, h2 + (i), w2 + (j), H, W, ok2), wino4_x(src3, h3 + (i), w3 + (j), H, W, ok3))
#define F_ROW(i) WINO4_BT(float4, LIST6(D_(i, 0), D_(i, 1), D_(i, 2), D_(i, 3), D_(i, 4), D_(i, 5)), ROW6(f, i));
        F_ROW(0) F_ROW(1) F_ROW(2) F_ROW(3) F_ROW(4) F_ROW(5)
#undef F_ROW
#undef D_
    }
    const size_t plane = WINO_PLANE(C, tpad);
    __global float *dst = v + v_off + ((size_t)(t0 / pw) * C + c) * pw + t0 % pw;
    /* V = B^T f, column by column; element (i, j) to plane 6i + j */
#define V_COL(j)                                                                                   \
    do {                                                                                           \
        float4 v0, v1, v2, v3, v4, v5;                                                             \
        WINO4_BT(float4, COL6(f, j), LIST6(v0, v1, v2, v3, v4, v5));                                      \
        vstore4(v0, 0, dst + (0 + j) * plane); vstore4(v1, 0, dst + (6 + j) * plane);              \
        vstore4(v2, 0, dst + (12 + j) * plane); vstore4(v3, 0, dst + (18 + j) * plane);            \
        vstore4(v4, 0, dst + (24 + j) * plane); vstore4(v5, 0, dst + (30 + j) * plane);            \
    } while (0);
    V_COL(0) V_COL(1) V_COL(2) V_COL(3) V_COL(4) V_COL(5)
#undef V_COL
}

/* 16 floats to p, a whole 64-byte line where p is 64-byte aligned (planes are multiples of 16
 * floats, WINO_PLANE). With WINO_NT_STORES (the host's -D option for CPU devices) a
 * non-temporal store: the line goes to memory without first being read into the cache for
 * ownership, which halved the traffic of writing V (PoCL: the pair kernels that run the input
 * transform 25-40% faster, docs/measurements/opencl.md; V is read back by the GEMM from memory
 * anyway, a chunk being larger than the cache). A partial line must not be written so: the
 * same stores of a quarter line each, tried first, doubled the transforms' time. */
static inline void wino4_line(const float16 v, __global float *p, const bool aligned) {
    if (aligned) {
#ifdef WINO_NT_STORES
        __builtin_nontemporal_store(v, (__global float16 *)p);
#else
        *(__global float16 *)p = v;
#endif
    } else {
        vstore16(v, 0, p);
    }
}

/* Column j of a transformed tile, x0 .. x5 (rows 0 .. 5), to planes j, 6 + j, ... 30 + j of dst, a
 * line each (wino4_line). */
#define WINO4_LINES(x, j)                                                                          \
    wino4_line(x##0, dst + (0 + (j)) * plane, aligned);                                            \
    wino4_line(x##1, dst + (6 + (j)) * plane, aligned);                                            \
    wino4_line(x##2, dst + (12 + (j)) * plane, aligned);                                           \
    wino4_line(x##3, dst + (18 + (j)) * plane, aligned);                                           \
    wino4_line(x##4, dst + (24 + (j)) * plane, aligned);                                           \
    wino4_line(x##5, dst + (30 + (j)) * plane, aligned)

/* Tile row group stepping: the tile 4 after (b, ty, tx) when TW is a multiple of 4. */
static inline void wino4_next4(const int TH, const int TW, int *b, int *ty, int *tx) {
    *tx += 4;
    if (*tx == TW) {
        *tx = 0;
        if (++*ty == TH) {
            *ty = 0;
            ++*b;
        }
    }
}

/* V as winograd4_input_at, for the 16 tiles 16g .. 16g+15 of one channel at once: one float16
 * per transformed element, so the arithmetic runs 16 lanes wide and each of the 36 planes gets
 * one whole 64-byte line (16 consecutive floats when pw is a multiple of 16). winograd4_input_at
 * wrote a quarter of a line per plane, and the other three quarters came from three other
 * work-items after the line had left L1 (36 planes, one L1 set of 8 ways): PoCL spent more of an
 * airbench94 step in those stores than in any other transform (docs/measurements/opencl.md).
 * The 16 tiles are four groups of four side by side in a tile row (TW a multiple of 4: maps of
 * 13 or more columns whose tile count per row is a multiple of 4, as airbench94's 31x31 and
 * 15x15 and ResNet9's 32x32 and 16x16), all below T; any other 16 tiles go four at a time
 * through winograd4_input_at.  work-item (g0, g1) of (ceil(tpad / 16), C) */
static inline void winograd4_input16_at(const int g0, const int g1, __global const float *x, const uint x_off,
                                        const int C, const int H, const int W, const int TH, const int TW,
                                        const int nb, const int tpad, const int pw, __global float *v,
                                        const uint v_off) {
    const int t0 = 16 * g0, c = g1;
    if (t0 >= tpad || c >= C) return;
    const bool rows = TW % 4 == 0, images = TW == 2 && TH == 2;
    if (!(rows || images) || pw % 16 != 0 || t0 + 16 > nb * TH * TW) {
        for (int q = 0; q < 4; q++)
            winograd4_input_at(4 * g0 + q, c, x, x_off, C, H, W, TH, TW, nb, tpad, pw, v, v_off);
        return;
    }
    const size_t image = (size_t)H * W, chunk_end = (size_t)nb * C * image;
#define LANES16_(a, b, c_, d) (float16)(a, b, c_, d)
    DECL6(float16, f, 0); DECL6(float16, f, 1); DECL6(float16, f, 2);
    DECL6(float16, f, 3); DECL6(float16, f, 4); DECL6(float16, f, 5);
    /* f = d B, row by row, each 1-D transform on the 16 tiles at once */
    if (rows) {
        WINO4_COORDS(t0, TH, TW, b0, ty0, tx0)
        int b1 = b0, ty1 = ty0, tx1 = tx0;
        wino4_next4(TH, TW, &b1, &ty1, &tx1);
        int b2 = b1, ty2 = ty1, tx2 = tx1;
        wino4_next4(TH, TW, &b2, &ty2, &tx2);
        int b3 = b2, ty3 = ty2, tx3 = tx2;
        wino4_next4(TH, TW, &b3, &ty3, &tx3);
        /* group q: its plane's offset, its patches' top row and first column, and whether the
         * column left of the group and the one right of its 16 lie inside the map */
#define GROUP_(q)                                                                                  \
        const size_t at##q = ((size_t)b##q * C + c) * image;                                      \
        const int top##q = 4 * ty##q - 1, col##q = 4 * tx##q;                                      \
        const bool left##q = tx##q > 0, right##q = col##q + 16 < W;
        GROUP_(0) GROUP_(1) GROUP_(2) GROUP_(3)
#undef GROUP_
        /* patch row i of group q: its 16 columns (m), the column left of them (l) and right (e) */
#define GROUP_ROW_(q, i)                                                                           \
        const int h##q = top##q + (i), hc##q = clamp(h##q, 0, H - 1);                              \
        const bool r##q = h##q >= 0 && h##q < H;                                                   \
        __global const float *row##q = x + x_off + at##q + (size_t)hc##q * W + col##q;             \
        const float16 m##q = r##q ? wino4_row16(row##q, tx##q, W, chunk_end - (at##q + (size_t)hc##q * W + col##q)) \
                                  : (float16)(0.0f);                                               \
        const float lv##q = row##q[left##q ? -1 : 0], ev##q = row##q[right##q ? 16 : 0];           \
        const float l##q = r##q && left##q ? lv##q : 0.0f, e##q = r##q && right##q ? ev##q : 0.0f;
#define F_ROW(i)                                                                                   \
        do {                                                                                       \
            GROUP_ROW_(0, i) GROUP_ROW_(1, i) GROUP_ROW_(2, i) GROUP_ROW_(3, i)                    \
            WINO4_BT(float16,                                                                      \
                     LIST6(LANES16_((float4)(l0, m0.s3, m0.s7, m0.sb), (float4)(l1, m1.s3, m1.s7, m1.sb), \
                                    (float4)(l2, m2.s3, m2.s7, m2.sb), (float4)(l3, m3.s3, m3.s7, m3.sb)), \
                           LANES16_(m0.s048c, m1.s048c, m2.s048c, m3.s048c),                       \
                           LANES16_(m0.s159d, m1.s159d, m2.s159d, m3.s159d),                       \
                           LANES16_(m0.s26ae, m1.s26ae, m2.s26ae, m3.s26ae),                       \
                           LANES16_(m0.s37bf, m1.s37bf, m2.s37bf, m3.s37bf),                       \
                           LANES16_((float4)(m0.s4, m0.s8, m0.sc, e0), (float4)(m1.s4, m1.s8, m1.sc, e1), \
                                    (float4)(m2.s4, m2.s8, m2.sc, e2), (float4)(m3.s4, m3.s8, m3.sc, e3))), \
                     ROW6(f, i));                                                                  \
        } while (0);
        F_ROW(0) F_ROW(1) F_ROW(2) F_ROW(3) F_ROW(4) F_ROW(5)
#undef F_ROW
#undef GROUP_ROW_
    } else {
        /* Maps of 5 to 8 rows and columns (2 x 2 tiles): group q is image 4g0 + q, its lanes
         * two rows of two tiles as winograd4_input_at's second path; patch row i of group q
         * comes from image rows i - 1 (a) and i + 3 (b), each one (masked) load of 8 columns. */
        const size_t at0 = ((size_t)(t0 / 4) * C + c) * image;
        __global const float *src0 = x + x_off + at0;
#define ROW8_(q, h)                                                                                \
        ((h) >= 0 && (h) < H ? wino4_row8(src0 + (size_t)(q) * C * image + (h) * W, W,             \
                                          chunk_end - (at0 + (size_t)(q) * C * image + (size_t)(h) * W)) \
                             : (float8)(0.0f))
#define GROUP_ROW_(q, i) const float8 a##q = ROW8_(q, (i) - 1), b##q = ROW8_(q, (i) + 3);
#define IN0_(q) (float4)(0.0f, a##q.s3, 0.0f, b##q.s3)
#define IN1_(q) (float4)(a##q.s0, a##q.s4, b##q.s0, b##q.s4)
#define IN2_(q) (float4)(a##q.s1, a##q.s5, b##q.s1, b##q.s5)
#define IN3_(q) (float4)(a##q.s2, a##q.s6, b##q.s2, b##q.s6)
#define IN4_(q) (float4)(a##q.s3, a##q.s7, b##q.s3, b##q.s7)
#define IN5_(q) (float4)(a##q.s4, 0.0f, b##q.s4, 0.0f)
#define IN_(k) LANES16_(IN##k##_(0), IN##k##_(1), IN##k##_(2), IN##k##_(3))
#define F_ROW(i)                                                                                   \
        do {                                                                                       \
            GROUP_ROW_(0, i) GROUP_ROW_(1, i) GROUP_ROW_(2, i) GROUP_ROW_(3, i)                    \
            WINO4_BT(float16, LIST6(IN_(0), IN_(1), IN_(2), IN_(3), IN_(4), IN_(5)), ROW6(f, i));  \
        } while (0);
        F_ROW(0) F_ROW(1) F_ROW(2) F_ROW(3) F_ROW(4) F_ROW(5)
#undef F_ROW
#undef IN_
#undef IN0_
#undef IN1_
#undef IN2_
#undef IN3_
#undef IN4_
#undef IN5_
#undef GROUP_ROW_
#undef ROW8_
    }
#undef LANES16_
    const size_t plane = WINO_PLANE(C, tpad);
    __global float *dst = v + v_off + ((size_t)(t0 / pw) * C + c) * pw + t0 % pw;
    const bool aligned = ((size_t)dst & 63) == 0;
    /* V = B^T f, column by column; element (i, j) to plane 6i + j, one line each */
#define V_COL(j)                                                                                   \
    do {                                                                                           \
        float16 v0, v1, v2, v3, v4, v5;                                                            \
        WINO4_BT(float16, COL6(f, j), LIST6(v0, v1, v2, v3, v4, v5));                              \
        WINO4_LINES(v, j);                                                                         \
    } while (0);
    V_COL(0) V_COL(1) V_COL(2) V_COL(3) V_COL(4) V_COL(5)
#undef V_COL
}

/* y chunk (nb, K, P, Q) = A^T m A per tile from m (36, K, ldm), as conv2d_winograd_output, for tiles
 * 4g .. 4g+3 (those below T).  work-item (g0, g1) of (ceil(T / 4), K) */
static inline void winograd4_output_at(const int g0, const int g1, __global const float *m, const uint m_off,
                                       const int K, const int P, const int Q, const int TH, const int TW, const int nb,
                                       const int ldm, __global float *y, const uint y_off) {
    const int t0 = 4 * g0, k = g1;
    const int T = nb * TH * TW;
    if (t0 >= T || k >= K) return;
    const int n = T - t0;   /* tiles of this work-item: 4, or fewer at the end */
    const size_t plane = WINO_PLANE(K, ldm);
    __global const float *src = m + m_off + (size_t)k * ldm + t0;
#define M_(e) wino4_load4(src + (e) * plane, n)
    /* a = A^T m, column by column (element (i, j) of m is plane 6i + j) */
    DECL6(float4, a, 0); DECL6(float4, a, 1); DECL6(float4, a, 2); DECL6(float4, a, 3);
#define A_COL(j) WINO4_AT(float4, LIST6(M_(0 + j), M_(6 + j), M_(12 + j), M_(18 + j), M_(24 + j), M_(30 + j)), COL4(a, j));
    A_COL(0) A_COL(1) A_COL(2) A_COL(3) A_COL(4) A_COL(5)
#undef A_COL
#undef M_
    /* Y = a A, row by row */
    DECL4(float4, y, 0); DECL4(float4, y, 1); DECL4(float4, y, 2); DECL4(float4, y, 3);
    WINO4_AT(float4, ROW6(a, 0), ROW4(y, 0));
    WINO4_AT(float4, ROW6(a, 1), ROW4(y, 1));
    WINO4_AT(float4, ROW6(a, 2), ROW4(y, 2));
    WINO4_AT(float4, ROW6(a, 3), ROW4(y, 3));
    WINO4_COORDS(t0, TH, TW, b0, ty0, tx0)
    if (n >= 4 && TW % 4 == 0) {
        /* The four tiles side by side in one tile row (TW a multiple of 4, so they start at a
         * column of tiles 4tx0 that is a multiple of 4): output row i of the four is 16
         * consecutive columns, 13 to 16 of them inside the map (and the tile row's last rows
         * may lie past the map's last row). One transpose and one 16-float
         * store per row instead of 16 scalar stores, each behind its own three divisions for
         * its tile's place, which were most of this transform's time on PoCL. */
        __global float *dst = y + y_off + ((size_t)b0 * K + k) * P * Q + (size_t)(4 * ty0) * Q + 4 * tx0;
        const int cols = Q - 4 * tx0;
#define Y_ROW16_(i)                                                                                \
        do {                                                                                       \
            const float16 r_ = (float16)((float4)(LANE(y##i##0, 0), LANE(y##i##1, 0), LANE(y##i##2, 0), LANE(y##i##3, 0)),   \
                                         (float4)(LANE(y##i##0, 1), LANE(y##i##1, 1), LANE(y##i##2, 1), LANE(y##i##3, 1)),   \
                                         (float4)(LANE(y##i##0, 2), LANE(y##i##1, 2), LANE(y##i##2, 2), LANE(y##i##3, 2)),   \
                                         (float4)(LANE(y##i##0, 3), LANE(y##i##1, 3), LANE(y##i##2, 3), LANE(y##i##3, 3)));  \
            __global float *out_ = dst + (i) * Q;                                                  \
            if (4 * ty0 + (i) >= P) {                                                              \
            } else if (cols >= 16) {                                                                      \
                vstore16(r_, 0, out_);                                                             \
            } else {                                                                               \
                vstore8(r_.lo, 0, out_);                                                           \
                vstore4(r_.s89ab, 0, out_ + 8);                                                    \
                out_[12] = r_.sc;                                                                  \
                if (cols > 13) out_[13] = r_.sd;                                                   \
                if (cols > 14) out_[14] = r_.se;                                                   \
            }                                                                                      \
        } while (0);
        Y_ROW16_(0) Y_ROW16_(1) Y_ROW16_(2) Y_ROW16_(3)
#undef Y_ROW16_
        return;
    }
    if (n >= 4 && TW == 2 && TH == 2) {
        /* Maps of 5 to 8 rows and columns: the four tiles are one image's 2 x 2 (t0 a multiple
         * of 4), lanes 0 and 1 its output rows 0 .. 3, lanes 2 and 3 rows 4 .. P-1; an output
         * row is tile row i of two lanes side by side, Q (5 to 8) columns, stored in one
         * 4-float store and at most 4 scalar ones. */
        __global float *dst = y + y_off + ((size_t)(t0 / 4) * K + k) * P * Q;
#define Y_ROW8_(l, m, i, p)                                                                         \
        if ((p) < P) {                                                                             \
            __global float *out_ = dst + (p) * Q;                                                  \
            vstore4((float4)(LANE(y##i##0, l), LANE(y##i##1, l), LANE(y##i##2, l), LANE(y##i##3, l)), 0, out_); \
            out_[4] = LANE(y##i##0, m);                                                \
            if (Q > 5) out_[5] = LANE(y##i##1, m);                                     \
            if (Q > 6) out_[6] = LANE(y##i##2, m);                                     \
            if (Q > 7) out_[7] = LANE(y##i##3, m);                                     \
        }
        Y_ROW8_(0, 1, 0, 0) Y_ROW8_(0, 1, 1, 1) Y_ROW8_(0, 1, 2, 2) Y_ROW8_(0, 1, 3, 3)
        Y_ROW8_(2, 3, 0, 4) Y_ROW8_(2, 3, 1, 5) Y_ROW8_(2, 3, 2, 6) Y_ROW8_(2, 3, 3, 7)
#undef Y_ROW8_
        return;
    }
    /* lane l: tile t0 + l's 4x4 block, cut at the output's edge; its place steps from lane 0's */
    int b = b0, ty = ty0, tx = tx0;
#define Y_ROW_(l, i)                                                                               \
    if (ty * 4 + (i) < P) {                                                                        \
        __global float *out_ = dst + (i) * Q;                                                      \
        if (full) {                                                                                \
            out_[0] = LANE(y##i##0, l); out_[1] = LANE(y##i##1, l); out_[2] = LANE(y##i##2, l); out_[3] = LANE(y##i##3, l); \
        } else {                                                                                   \
            out_[0] = LANE(y##i##0, l);                                                                \
            if (4 * tx + 1 < Q) out_[1] = LANE(y##i##1, l);                                            \
            if (4 * tx + 2 < Q) out_[2] = LANE(y##i##2, l);                                            \
        }                                                                                          \
    }
#define Y_LANE(l)                                                                                  \
    if ((l) < n) {                                                                                 \
        if ((l) > 0) wino4_next(TH, TW, &b, &ty, &tx);                                             \
        __global float *dst = y + y_off + (size_t)(b * K + k) * P * Q + (4 * ty) * Q + 4 * tx;     \
        const bool full = 4 * tx + 3 < Q;                                                          \
        Y_ROW_(l, 0) Y_ROW_(l, 1) Y_ROW_(l, 2) Y_ROW_(l, 3)                                        \
    }
    LANES4(Y_LANE)
#undef Y_LANE
#undef Y_ROW_
}

/* Columns q0 .. q0+3 of row p of a dy plane, 0 past its edges or when !ok: a dy tile starts
 * inside the map, so only its last row and column can be cut. */
static inline float4 wino4_dy_row(__global const float *plane, const int p, const int q0, const int P, const int Q,
                                  const bool ok) {
    if (!ok || p >= P) return (float4)(0.0f);
    __global const float *r = plane + p * Q + q0;
    if (q0 + 4 <= Q) return vload4(0, r);
    const int n = Q - q0;
    const float4 v = (float4)(r[0], r[min(1, n - 1)], r[min(2, n - 1)], r[n - 1]);
    return select((float4)(0.0f), v, (int4)(0, 1, 2, 3) < (int4)(n));
}

/* Backward-filter: Z (36, T, kpad) = A dy A^T per tile, packed as conv2d_winograd_dy, for channels
 * 4g .. 4g+3 of tile t (kpad and pw multiples of 4, so the four are neighbours in one panel).
 * work-item (g0, g1) of (T, kpad / 4) */
static inline void winograd4_dy_at(const int g0, const int g1, __global const float *dy, const uint dy_off,
                                   const int K, const int P, const int Q, const int TH, const int TW, const int nb,
                                   const int kpad, const int pw, __global float *z, const uint z_off) {
    const int t = g0, k0 = 4 * g1;
    const int T = nb * TH * TW;
    if (t >= T || k0 >= kpad) return;
    const int b = t / (TH * TW), p0 = 4 * ((t / TW) % TH), q0 = 4 * (t % TW);
    /* lane l: channel k0 + l (a padding channel past K: zero) */
#define LANE_(l)                                                                                   \
    const bool ok##l = k0 + (l) < K;                                                               \
    __global const float *src##l = dy + dy_off + (size_t)(b * K + (ok##l ? k0 + (l) : 0)) * P * Q;
    LANES4(LANE_)
#undef LANE_
    /* row i of lane l's 4x4 dy tile: one load of four columns (fewer at the map's edge) */
#define R_(l, i) const float4 r##l##i = wino4_dy_row(src##l, p0 + (i), q0, P, Q, ok##l);
#define R_ROW(i) R_(0, i) R_(1, i) R_(2, i) R_(3, i)
    R_ROW(0) R_ROW(1) R_ROW(2) R_ROW(3)
#undef R_ROW
#undef R_
#define G_(i, j) (float4)(r0##i.s##j, r1##i.s##j, r2##i.s##j, r3##i.s##j)
    /* h = g A^T, row by row: row i of h is A applied to row i of the dy tile g */
#define H_ROW(i)                                                                                   \
    DECL6(float4, h, i);                                                                           \
    WINO4_A(float4, LIST4(G_(i, 0), G_(i, 1), G_(i, 2), G_(i, 3)), ROW6(h, i));
    H_ROW(0) H_ROW(1) H_ROW(2) H_ROW(3)
#undef H_ROW
#undef G_
    const size_t plane = WINO_PLANE(T, kpad);
    __global float *dst = z + z_off + ((size_t)(k0 / pw) * T + t) * pw + k0 % pw;
    /* Z = A h, column by column; element (i, j) to plane 6i + j */
#define Z_COL(j)                                                                                   \
    do {                                                                                           \
        float4 z0, z1, z2, z3, z4, z5;                                                             \
        WINO4_A(float4, COL4(h, j), LIST6(z0, z1, z2, z3, z4, z5));                                       \
        vstore4(z0, 0, dst + (0 + j) * plane); vstore4(z1, 0, dst + (6 + j) * plane);              \
        vstore4(z2, 0, dst + (12 + j) * plane); vstore4(z3, 0, dst + (18 + j) * plane);            \
        vstore4(z4, 0, dst + (24 + j) * plane); vstore4(z5, 0, dst + (30 + j) * plane);            \
    } while (0);
    Z_COL(0) Z_COL(1) Z_COL(2) Z_COL(3) Z_COL(4) Z_COL(5)
#undef Z_COL
}

/* Z as winograd4_dy_at, for the 16 channels 16g1 .. 16g1+15 of tile g0 at once: one float16 per
 * transformed element, a whole line of each of the 36 planes (pw a multiple of 16), written as
 * wino4_line writes V. Other channel groups (kpad or pw not a multiple of 16) go four at a time
 * through winograd4_dy_at.  work-item (g0, g1) of (T, ceil(kpad / 16)) */
static inline void winograd4_dy16_at(const int g0, const int g1, __global const float *dy, const uint dy_off,
                                     const int K, const int P, const int Q, const int TH, const int TW,
                                     const int nb, const int kpad, const int pw, __global float *z,
                                     const uint z_off) {
    const int t = g0, k0 = 16 * g1;
    const int T = nb * TH * TW;
    if (t >= T || k0 >= kpad) return;
    if (pw % 16 != 0 || kpad % 16 != 0) {
        for (int q = 0; q < 4; q++) winograd4_dy_at(t, 4 * g1 + q, dy, dy_off, K, P, Q, TH, TW, nb, kpad, pw, z, z_off);
        return;
    }
    const int b = t / (TH * TW), p0 = 4 * ((t / TW) % TH), q0 = 4 * (t % TW);
    /* lane l: channel k0 + l (a padding channel past K: zero) */
#define LANE_(l)                                                                                   \
    const bool ok##l = k0 + (l) < K;                                                               \
    __global const float *src##l = dy + dy_off + (size_t)(b * K + (ok##l ? k0 + (l) : 0)) * P * Q;
    LANE_(0) LANE_(1) LANE_(2) LANE_(3) LANE_(4) LANE_(5) LANE_(6) LANE_(7)
    LANE_(8) LANE_(9) LANE_(10) LANE_(11) LANE_(12) LANE_(13) LANE_(14) LANE_(15)
#undef LANE_
    /* row i of lane l's 4x4 dy tile: one load of four columns (fewer at the map's edge) */
#define R_(l, i) const float4 r##l##_##i = wino4_dy_row(src##l, p0 + (i), q0, P, Q, ok##l);
#define R_ROW(i)                                                                                   \
    R_(0, i) R_(1, i) R_(2, i) R_(3, i) R_(4, i) R_(5, i) R_(6, i) R_(7, i)                        \
    R_(8, i) R_(9, i) R_(10, i) R_(11, i) R_(12, i) R_(13, i) R_(14, i) R_(15, i)
    R_ROW(0) R_ROW(1) R_ROW(2) R_ROW(3)
#undef R_ROW
#undef R_
#define G4_(a, b_, c, d, i, j)                                                                     \
    (float4)(LANE(r##a##_##i, j), LANE(r##b_##_##i, j), LANE(r##c##_##i, j), LANE(r##d##_##i, j))
#define G_(i, j)                                                                                   \
    (float16)(G4_(0, 1, 2, 3, i, j), G4_(4, 5, 6, 7, i, j), G4_(8, 9, 10, 11, i, j), G4_(12, 13, 14, 15, i, j))
    /* h = g A^T, row by row: row i of h is A applied to row i of the dy tiles g */
#define H_ROW(i)                                                                                   \
    DECL6(float16, h, i);                                                                          \
    WINO4_A(float16, LIST4(G_(i, 0), G_(i, 1), G_(i, 2), G_(i, 3)), ROW6(h, i));
    H_ROW(0) H_ROW(1) H_ROW(2) H_ROW(3)
#undef H_ROW
#undef G_
#undef G4_
    const size_t plane = WINO_PLANE(T, kpad);
    __global float *dst = z + z_off + ((size_t)(k0 / pw) * T + t) * pw + k0 % pw;
    const bool aligned = ((size_t)dst & 63) == 0;
    /* Z = A h, column by column; element (i, j) to plane 6i + j, one line each */
#define Z_COL(j)                                                                                   \
    do {                                                                                           \
        float16 z0, z1, z2, z3, z4, z5;                                                            \
        WINO4_A(float16, COL4(h, j), LIST6(z0, z1, z2, z3, z4, z5));                               \
        WINO4_LINES(z, j);                                                                         \
    } while (0);
    Z_COL(0) Z_COL(1) Z_COL(2) Z_COL(3) Z_COL(4) Z_COL(5)
#undef Z_COL
}

/* dw (K, C, 3, 3) = G^T du G from du (36, K, C), overwriting dw, for channels 4g .. 4g+3 (those
 * below C).  global (ceil(C / 4), K) */
__kernel void conv2d_winograd4_filter_grad(__global const float *du, const uint du_off, const int K, const int C,
                                           __global float *dw, const uint dw_off) {
    const int c0 = 4 * get_global_id(0), k = get_global_id(1);
    if (c0 >= C || k >= K) return;
    const int n = C - c0;
    const size_t plane = WINO_PLANE(K, C);
    __global const float *src = du + du_off + (size_t)k * C + c0;
#define U_(e) wino4_load4(src + (e) * plane, n)
    /* a = G^T du, column by column */
    DECL6(float4, a, 0); DECL6(float4, a, 1); DECL6(float4, a, 2);
#define A_COL(j) WINO4_GT(float4, LIST6(U_(0 + j), U_(6 + j), U_(12 + j), U_(18 + j), U_(24 + j), U_(30 + j)), COL3(a, j));
    A_COL(0) A_COL(1) A_COL(2) A_COL(3) A_COL(4) A_COL(5)
#undef A_COL
#undef U_
    /* dw = a G, row by row */
    DECL3(float4, g, 0); DECL3(float4, g, 1); DECL3(float4, g, 2);
    WINO4_GT(float4, ROW6(a, 0), ROW3(g, 0));
    WINO4_GT(float4, ROW6(a, 1), ROW3(g, 1));
    WINO4_GT(float4, ROW6(a, 2), ROW3(g, 2));
    /* lane l: channel c0 + l's nine weights */
#define W_LANE(l)                                                                                  \
    if ((l) < n) {                                                                                 \
        __global float *dst = dw + dw_off + (size_t)(k * C + c0 + (l)) * 9;                        \
        dst[0] = LANE(g00, l); dst[1] = LANE(g01, l); dst[2] = LANE(g02, l);                       \
        dst[3] = LANE(g10, l); dst[4] = LANE(g11, l); dst[5] = LANE(g12, l);                       \
        dst[6] = LANE(g20, l); dst[7] = LANE(g21, l); dst[8] = LANE(g22, l);                       \
    }
    LANES4(W_LANE)
#undef W_LANE
}

/* The F(4x4) transforms as kernels, global the grid each body above names. */
__kernel void conv2d_winograd4_filter(__global const float *w, const uint w_off, const int K, const int C,
                                      const int flip, __global float *u, const uint u_off) {
    winograd4_filter_at(get_global_id(0), get_global_id(1), w, w_off, K, C, flip, u, u_off);
}

__kernel void conv2d_winograd4_input(__global const float *x, const uint x_off, const int C, const int H, const int W,
                                     const int TH, const int TW, const int nb, const int tpad, const int pw,
                                     __global float *v, const uint v_off) {
    winograd4_input16_at(get_global_id(0), get_global_id(1), x, x_off, C, H, W, TH, TW, nb, tpad, pw, v, v_off);
}

__kernel void conv2d_winograd4_output(__global const float *m, const uint m_off, const int K, const int P, const int Q,
                                      const int TH, const int TW, const int nb, const int ldm, __global float *y,
                                      const uint y_off) {
    winograd4_output_at(get_global_id(0), get_global_id(1), m, m_off, K, P, Q, TH, TW, nb, ldm, y, y_off);
}

__kernel void conv2d_winograd4_dy(__global const float *dy, const uint dy_off, const int K, const int P, const int Q,
                                  const int TH, const int TW, const int nb, const int kpad, const int pw,
                                  __global float *z, const uint z_off) {
    winograd4_dy16_at(get_global_id(0), get_global_id(1), dy, dy_off, K, P, Q, TH, TW, nb, kpad, pw, z, z_off);
}

/* Two independent transforms of a chunked convolution in one launch (one launch per chunk
 * fewer: a GPU pays a few microseconds per launch, docs/winograd.md). The launch's rows below
 * a1 (a multiple of the work-group's height) are the first transform's grid, (g0, g1) as its
 * body names them. The rows from a1 on are the second's grid (b0, b1), walked one block of bw x
 * (work-group size / bw) work-items per work-group: the second transform of every pair writes
 * a packed plane (V or Z), whose stores fall in one contiguous run per plane only when a
 * work-group spans a few panels and many channels, while the first (the output transform's
 * reads of M, the filter transform, the row-major V of backward-filter) wants long runs along
 * dimension 0. The host (pair_range in ocl_ops_conv_winograd.c) sizes both. No division per
 * work-item but the block's. Returns 1 (the first's) or 2 (the second's) with the work-item
 * of its grid in *g0, *g1. */
static inline int wino4_pair_at(const int a1, const int b0, const int bw, int *g0, int *g1) {
    const int g = get_global_id(1);
    if (g < a1) {
        *g0 = get_global_id(0);
        *g1 = g;
        return 1;
    }
    const int wg = get_local_size(0) * get_local_size(1), bh = wg / bw;
    const int lin = get_local_id(1) * get_local_size(0) + get_local_id(0);
    const int block = (get_group_id(1) - a1 / get_local_size(1)) * get_num_groups(0) + get_group_id(0);
    const int blocks0 = (b0 + bw - 1) / bw, k0 = block / blocks0;
    *g0 = (block - k0 * blocks0) * bw + lin % bw;
    *g1 = k0 * bh + lin / bw;
    return 2;
}

/* The filter transform and the first chunk's input transform (forward, backward-data). */
__kernel void conv2d_winograd4_filter_input(__global const float *w, const uint w_off, const int K, const int C,
                                            const int flip, __global float *u, const uint u_off,
                                            __global const float *x, const uint x_off, const int xC, const int H,
                                            const int W,
                                            const int TH, const int TW, const int nb, const int tpad, const int pw,
                                            __global float *v, const uint v_off,
                                            const int a1, const int b0, const int bw) {
    int g0, g1;
    const int which = wino4_pair_at(a1, b0, bw, &g0, &g1);
    if (which == 1)
        winograd4_filter_at(g0, g1, w, w_off, K, C, flip, u, u_off);
    else if (which == 2)
        winograd4_input16_at(g0, g1, x, x_off, xC, H, W, TH, TW, nb, tpad, pw, v, v_off);
}

/* A chunk's output transform (its GEMM has run) and the next chunk's input transform: they
 * touch different workspace regions (M, V). */
__kernel void conv2d_winograd4_output_input(__global const float *m, const uint m_off, const int K, const int P,
                                            const int Q, const int TH, const int TW, const int nb, const int ldm,
                                            __global float *y, const uint y_off,
                                            __global const float *x, const uint x_off, const int C, const int xH,
                                            const int xW, const int xTH, const int xTW, const int xnb, const int tpad,
                                            const int pw, __global float *v, const uint v_off,
                                            const int a1, const int b0, const int bw) {
    int g0, g1;
    const int which = wino4_pair_at(a1, b0, bw, &g0, &g1);
    if (which == 1)
        winograd4_output_at(g0, g1, m, m_off, K, P, Q, TH, TW, nb, ldm, y, y_off);
    else if (which == 2)
        winograd4_input16_at(g0, g1, x, x_off, C, xH, xW, xTH, xTW, xnb, tpad, pw, v, v_off);
}

/* Backward-filter: a chunk's input and dy transforms. */
__kernel void conv2d_winograd4_input_dy(__global const float *x, const uint x_off, const int C, const int H,
                                        const int W,
                                        const int TH, const int TW, const int nb, const int tpad, const int pw,
                                        __global float *v, const uint v_off,
                                        __global const float *dy, const uint dy_off, const int K, const int P,
                                        const int Q,
                                        const int dTH, const int dTW, const int dnb, const int kpad, const int dpw,
                                        __global float *z, const uint z_off, const int a1, const int b0,
                                        const int bw) {
    int g0, g1;
    const int which = wino4_pair_at(a1, b0, bw, &g0, &g1);
    if (which == 1)
        winograd4_input16_at(g0, g1, x, x_off, C, H, W, TH, TW, nb, tpad, pw, v, v_off);
    else if (which == 2)
        winograd4_dy16_at(g0, g1, dy, dy_off, K, P, Q, dTH, dTW, dnb, kpad, dpw, z, z_off);
}
