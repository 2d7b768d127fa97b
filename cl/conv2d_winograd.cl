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
 */

/* U (16, rows, cols) from w (K, C, 3, 3): rows K, cols C, or with flip (backward-data) rows C,
 * cols K and the filter rotated by 180 degrees.  global (cols, rows) */
__kernel void winograd_filter(__global const float *w, const uint w_off, const int K, const int C, const int flip,
                              __global float *u, const uint u_off) {
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
    const size_t plane = (size_t)rows * cols;
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
__kernel void winograd_input(__global const float *x, const uint x_off, const int C, const int H, const int W,
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
    const size_t plane = (size_t)C * tpad;
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
__kernel void winograd_output(__global const float *m, const uint m_off, const int K, const int P, const int Q,
                              const int TH, const int TW, const int nb, const int ldm, __global float *y,
                              const uint y_off) {
    const int t = get_global_id(0), k = get_global_id(1);
    if (t >= nb * TH * TW || k >= K) return;
    const size_t plane = (size_t)K * ldm;
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
__kernel void winograd_dy(__global const float *dy, const uint dy_off, const int K, const int P, const int Q,
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
    const size_t plane = (size_t)T * kpad;
    __global float *dst = z + z_off + ((size_t)(k / pw) * T + t) * pw + k % pw;
    for (int i = 0; i < 4; i++) {   /* Z = a A^T */
        dst[(4 * i + 0) * plane] = a[i][0];
        dst[(4 * i + 1) * plane] = a[i][0] + a[i][1];
        dst[(4 * i + 2) * plane] = a[i][0] - a[i][1];
        dst[(4 * i + 3) * plane] = -a[i][1];
    }
}

/* dw (K, C, 3, 3) = G^T du G from du (16, K, C), overwriting dw.  global (C, K) */
__kernel void winograd_filter_grad(__global const float *du, const uint du_off, const int K, const int C,
                                   __global float *dw, const uint dw_off) {
    const int c = get_global_id(0), k = get_global_id(1);
    if (c >= C || k >= K) return;
    const size_t plane = (size_t)K * C;
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
 * F(2x2, 3x3) (docs/winograd.md has it measured). Each 2-D transform L X R^T applies one 1-D
 * transform below to the columns, then to the rows. */

/* out (6) = B^T in (6) */
static void wino4_bt(const float *in, float *out) {
    out[0] = 4.0f * in[0] - 5.0f * in[2] + in[4];
    out[1] = -4.0f * (in[1] + in[2]) + in[3] + in[4];
    out[2] = 4.0f * (in[1] - in[2]) - in[3] + in[4];
    out[3] = 2.0f * (in[3] - in[1]) - in[2] + in[4];
    out[4] = 2.0f * (in[1] - in[3]) - in[2] + in[4];
    out[5] = 4.0f * in[1] - 5.0f * in[3] + in[5];
}

/* out (6) = G in (3) */
static void wino4_g(const float *in, float *out) {
    const float even = in[0] + in[2];
    out[0] = 0.25f * in[0];
    out[1] = -(even + in[1]) / 6.0f;
    out[2] = -(even - in[1]) / 6.0f;
    out[3] = in[0] / 24.0f + in[1] / 12.0f + in[2] / 6.0f;
    out[4] = in[0] / 24.0f - in[1] / 12.0f + in[2] / 6.0f;
    out[5] = in[2];
}

/* out (4) = A^T in (6) */
static void wino4_at(const float *in, float *out) {
    const float s1 = in[1] + in[2], d1 = in[1] - in[2], s2 = in[3] + in[4], d2 = in[3] - in[4];
    out[0] = in[0] + s1 + s2;
    out[1] = d1 + 2.0f * d2;
    out[2] = s1 + 4.0f * s2;
    out[3] = d1 + 8.0f * d2 + in[5];
}

/* out (6) = A in (4) (backward-filter: the gradient of A^T) */
static void wino4_a(const float *in, float *out) {
    out[0] = in[0];
    out[1] = in[0] + in[1] + in[2] + in[3];
    out[2] = in[0] - in[1] + in[2] - in[3];
    out[3] = in[0] + 2.0f * in[1] + 4.0f * in[2] + 8.0f * in[3];
    out[4] = in[0] - 2.0f * in[1] + 4.0f * in[2] - 8.0f * in[3];
    out[5] = in[3];
}

/* out (3) = G^T in (6) (backward-filter: the gradient of G) */
static void wino4_gt(const float *in, float *out) {
    out[0] = 0.25f * in[0] - (in[1] + in[2]) / 6.0f + (in[3] + in[4]) / 24.0f;
    out[1] = (in[2] - in[1]) / 6.0f + (in[3] - in[4]) / 12.0f;
    out[2] = (in[3] + in[4] - in[1] - in[2]) / 6.0f + in[5];
}

/* U (36, rows, cols) = G g G^T, as winograd_filter.  global (cols, rows) */
__kernel void winograd4_filter(__global const float *w, const uint w_off, const int K, const int C, const int flip,
                               __global float *u, const uint u_off) {
    const int col = get_global_id(0), row = get_global_id(1);
    const int rows = flip ? C : K, cols = flip ? K : C;
    if (col >= cols || row >= rows) return;
    const int k = flip ? col : row, c = flip ? row : col;
    __global const float *src = w + w_off + (k * C + c) * 9;
    float g[3][3], gc[3], tc[6], t[6][3], ur[6];
    for (int r = 0; r < 3; r++)
        for (int s = 0; s < 3; s++) g[r][s] = flip ? src[(2 - r) * 3 + (2 - s)] : src[r * 3 + s];
    for (int s = 0; s < 3; s++) {   /* t = G g */
        for (int r = 0; r < 3; r++) gc[r] = g[r][s];
        wino4_g(gc, tc);
        for (int i = 0; i < 6; i++) t[i][s] = tc[i];
    }
    const size_t plane = (size_t)rows * cols;
    __global float *dst = u + u_off + (size_t)row * cols + col;
    for (int i = 0; i < 6; i++) {   /* U = t G^T */
        wino4_g(t[i], ur);
        for (int j = 0; j < 6; j++) dst[(6 * i + j) * plane] = ur[j];
    }
}

/* V (36, C, tpad) = B^T d B of every 6x6 input patch, as winograd_input.  global (tpad, C) */
__kernel void winograd4_input(__global const float *x, const uint x_off, const int C, const int H, const int W,
                              const int TH, const int TW, const int nb, const int tpad, const int pw,
                              __global float *v, const uint v_off) {
    const int t = get_global_id(0), c = get_global_id(1);
    if (t >= tpad || c >= C) return;
    float d[6][6];
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++) d[i][j] = 0.0f;
    if (t < nb * TH * TW) {
        const int b = t / (TH * TW), ty = (t / TW) % TH, tx = t % TW;
        __global const float *src = x + x_off + (size_t)(b * C + c) * H * W;
        for (int i = 0; i < 6; i++) {
            const int h = 4 * ty - 1 + i;
            if (h < 0 || h >= H) continue;
            for (int j = 0; j < 6; j++) {
                const int wc = 4 * tx - 1 + j;
                if (wc >= 0 && wc < W) d[i][j] = src[h * W + wc];
            }
        }
    }
    float e[6][6], col[6], ec[6], vr[6];
    for (int j = 0; j < 6; j++) {   /* e = B^T d */
        for (int i = 0; i < 6; i++) col[i] = d[i][j];
        wino4_bt(col, ec);
        for (int i = 0; i < 6; i++) e[i][j] = ec[i];
    }
    const size_t plane = (size_t)C * tpad;
    __global float *dst = v + v_off + ((size_t)(t / pw) * C + c) * pw + t % pw;
    for (int i = 0; i < 6; i++) {   /* V = e B */
        wino4_bt(e[i], vr);
        for (int j = 0; j < 6; j++) dst[(6 * i + j) * plane] = vr[j];
    }
}

/* y chunk (nb, K, P, Q) = A^T m A per tile from m (36, K, ldm), as winograd_output.
 * global (T, K) */
__kernel void winograd4_output(__global const float *m, const uint m_off, const int K, const int P, const int Q,
                               const int TH, const int TW, const int nb, const int ldm, __global float *y,
                               const uint y_off) {
    const int t = get_global_id(0), k = get_global_id(1);
    if (t >= nb * TH * TW || k >= K) return;
    const size_t plane = (size_t)K * ldm;
    __global const float *src = m + m_off + (size_t)k * ldm + t;
    float a[4][6], col[6], ac[4], yr[4];
    for (int j = 0; j < 6; j++) {   /* a = A^T m */
        for (int i = 0; i < 6; i++) col[i] = src[(6 * i + j) * plane];
        wino4_at(col, ac);
        for (int i = 0; i < 4; i++) a[i][j] = ac[i];
    }
    const int b = t / (TH * TW), ty = (t / TW) % TH, tx = t % TW;
    __global float *dst = y + y_off + (size_t)(b * K + k) * P * Q;
    for (int i = 0; i < 4; i++) {   /* Y = a A */
        const int p = 4 * ty + i;
        if (p >= P) break;
        wino4_at(a[i], yr);
        for (int j = 0; j < 4 && 4 * tx + j < Q; j++) dst[p * Q + 4 * tx + j] = yr[j];
    }
}

/* Backward-filter: Z (36, T, kpad) = A dy A^T per tile, packed as winograd_dy.
 * global (T, kpad) */
__kernel void winograd4_dy(__global const float *dy, const uint dy_off, const int K, const int P, const int Q,
                           const int TH, const int TW, const int nb, const int kpad, const int pw,
                           __global float *z, const uint z_off) {
    const int t = get_global_id(0), k = get_global_id(1);
    const int T = nb * TH * TW;
    if (t >= T || k >= kpad) return;
    float g[4][4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) g[i][j] = 0.0f;
    if (k < K) {
        const int b = t / (TH * TW), ty = (t / TW) % TH, tx = t % TW;
        __global const float *src = dy + dy_off + (size_t)(b * K + k) * P * Q;
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
                if (4 * ty + i < P && 4 * tx + j < Q) g[i][j] = src[(4 * ty + i) * Q + 4 * tx + j];
    }
    float a[6][4], col[4], ac[6], zr[6];
    for (int j = 0; j < 4; j++) {   /* a = A g */
        for (int i = 0; i < 4; i++) col[i] = g[i][j];
        wino4_a(col, ac);
        for (int i = 0; i < 6; i++) a[i][j] = ac[i];
    }
    const size_t plane = (size_t)T * kpad;
    __global float *dst = z + z_off + ((size_t)(k / pw) * T + t) * pw + k % pw;
    for (int i = 0; i < 6; i++) {   /* Z = a A^T */
        wino4_a(a[i], zr);
        for (int j = 0; j < 6; j++) dst[(6 * i + j) * plane] = zr[j];
    }
}

/* dw (K, C, 3, 3) = G^T du G from du (36, K, C), overwriting dw.  global (C, K) */
__kernel void winograd4_filter_grad(__global const float *du, const uint du_off, const int K, const int C,
                                    __global float *dw, const uint dw_off) {
    const int c = get_global_id(0), k = get_global_id(1);
    if (c >= C || k >= K) return;
    const size_t plane = (size_t)K * C;
    __global const float *src = du + du_off + (size_t)k * C + c;
    float a[3][6], col[6], ac[3], wr[3];
    for (int j = 0; j < 6; j++) {   /* a = G^T du */
        for (int i = 0; i < 6; i++) col[i] = src[(6 * i + j) * plane];
        wino4_gt(col, ac);
        for (int i = 0; i < 3; i++) a[i][j] = ac[i];
    }
    __global float *dst = dw + dw_off + (size_t)(k * C + c) * 9;
    for (int i = 0; i < 3; i++) {   /* dw = a G */
        wino4_gt(a[i], wr);
        for (int j = 0; j < 3; j++) dst[i * 3 + j] = wr[j];
    }
}
