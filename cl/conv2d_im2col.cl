/*
 * conv2d_im2col.cl — the data movement around the GEMMs of a convolution (ocl_ops_conv.c):
 * im2col, col2im and the (nb,K,P,Q) <-> (K, nb*P*Q) reshuffles. Semantics as the CPU
 * reference (src/backends/cpu/conv.c), same letters: x (N,C,H,W), w (K,C,R,S), y (N,K,P,Q).
 *
 * A chunk is nb images starting at the tensor's element offset; cols = nb*P*Q and
 *   col (C*R*S, cols): col[(c*R + r)*S + s][b*P*Q + p*Q + q] = x[b][c][p*sh - ph + r][q*sw - pw + s]
 * (0 in the padding). Launches are 2-D with dimension 0 along the contiguous output row
 * (q, w or the P*Q plane) so neighbouring work-items touch neighbouring addresses; dimension 1
 * enumerates rows. Both are rounded up to the work-group, hence the bounds checks.
 */

/* global (Q, C*R*S * nb*P) */
__kernel void im2col(__global const float *x, const uint x_off, const int C, const int H, const int W,
                     const int R, const int S, const int P, const int Q, const int sh, const int sw,
                     const int ph, const int pw, const int nb, __global float *col, const uint col_off) {
    const int q = get_global_id(0), row = get_global_id(1);
    if (q >= Q || row >= C * R * S * nb * P) return;
    const int bp = row % (nb * P), crs = row / (nb * P);
    const int b = bp / P, p = bp % P;
    const int c = crs / (R * S), r = (crs / S) % R, s = crs % S;
    const int h = p * sh - ph + r, w = q * sw - pw + s;
    float v = 0.0f;
    if (h >= 0 && h < H && w >= 0 && w < W) v = x[x_off + ((b * C + c) * H + h) * W + w];
    col[col_off + crs * (nb * P * Q) + (b * P + p) * Q + q] = v;
}

/* dx (nb,C,H,W) = col2im(dcol): every pixel sums the dcol entries read from it, in (r, s)
 * order like the CPU's scatter, and is overwritten. global (W, nb*C*H) */
__kernel void col2im(__global const float *dcol, const uint dcol_off, const int C, const int H, const int W,
                     const int R, const int S, const int P, const int Q, const int sh, const int sw,
                     const int ph, const int pw, const int nb, __global float *dx, const uint dx_off) {
    const int w = get_global_id(0), row = get_global_id(1);
    if (w >= W || row >= nb * C * H) return;
    const int h = row % H, bc = row / H;
    const int c = bc % C, b = bc / C;
    const int cols = nb * P * Q;
    float acc = 0.0f;
    if (sh == 1 && sw == 1) {   /* the common case, without divisions */
        for (int r = 0; r < R; r++) {
            const int p = h + ph - r;
            if (p < 0 || p >= P) continue;
            for (int s = 0; s < S; s++) {
                const int q = w + pw - s;
                if (q < 0 || q >= Q) continue;
                acc += dcol[dcol_off + ((c * R + r) * S + s) * cols + (b * P + p) * Q + q];
            }
        }
        dx[dx_off + ((b * C + c) * H + h) * W + w] = acc;
        return;
    }
    /* Strided: only the taps r = r0, r0 + sh, ... (r0 = (h + ph) mod sh) reach an output row,
     * at p = p0, p0 - 1, ...; likewise s and q. Two divisions per pixel instead of a modulo
     * per tap, which made col2im cost more than its GEMM on the stride-2 layers. */
    const int r0 = (h + ph) % sh, p0 = (h + ph) / sh;
    const int s0 = (w + pw) % sw, q0 = (w + pw) / sw;
    for (int r = r0, p = p0; r < R && p >= 0; r += sh, p--) {
        if (p >= P) continue;
        for (int s = s0, q = q0; s < S && q >= 0; s += sw, q--) {
            if (q >= Q) continue;
            acc += dcol[dcol_off + ((c * R + r) * S + s) * cols + (b * P + p) * Q + q];
        }
    }
    dx[dx_off + ((b * C + c) * H + h) * W + w] = acc;
}

/* col2im for stride 1 and W % 16 == 0: 16 pixels of a row per work-item, each tap one vector
 * (the same (r, s) summation order as col2im, so the results are identical).
 * global (W / 16, nb*C*H) */
__kernel void col2im_v16(__global const float *dcol, const uint dcol_off, const int C, const int H, const int W,
                         const int R, const int S, const int P, const int Q, const int sh, const int sw,
                         const int ph, const int pw, const int nb, __global float *dx, const uint dx_off) {
    const int w0 = get_global_id(0) * 16, row = get_global_id(1);
    if (w0 >= W || row >= nb * C * H) return;
    const int h = row % H, bc = row / H;
    const int c = bc % C, b = bc / C;
    const int cols = nb * P * Q;
    float16 acc = (float16)(0.0f);
    for (int r = 0; r < R; r++) {
        const int p = h + ph - r;
        if (p < 0 || p >= P) continue;
        for (int s = 0; s < S; s++) {
            const int qs = w0 + pw - s;
            __global const float *src = dcol + dcol_off + ((c * R + r) * S + s) * cols + (b * P + p) * Q;
            if (qs >= 0 && qs + 16 <= Q) {
                acc += vload16(0, src + qs);
            } else {
                float t[16];
                for (int j = 0; j < 16; j++) t[j] = qs + j >= 0 && qs + j < Q ? src[qs + j] : 0.0f;
                acc += vload16(0, t);
            }
        }
    }
    vstore16(acc, 0, dx + dx_off + ((b * C + c) * H + h) * W + w0);
}

/* tmp (K, nb*PQ) <- t (nb, K, PQ).  global (PQ, nb*K) */
__kernel void gather_nk(__global const float *t, const uint t_off, const int K, const int PQ, const int nb,
                        __global float *tmp, const uint tmp_off) {
    const int j = get_global_id(0), row = get_global_id(1);
    if (j >= PQ || row >= nb * K) return;
    const int b = row / K, k = row % K;
    tmp[tmp_off + k * (nb * PQ) + b * PQ + j] = t[t_off + row * PQ + j];
}

/* t (nb, K, PQ) <- tmp (K, nb*PQ).  global (PQ, nb*K) */
__kernel void scatter_nk(__global const float *tmp, const uint tmp_off, const int K, const int PQ, const int nb,
                         __global float *t, const uint t_off) {
    const int j = get_global_id(0), row = get_global_id(1);
    if (j >= PQ || row >= nb * K) return;
    const int b = row / K, k = row % K;
    t[t_off + row * PQ + j] = tmp[tmp_off + k * (nb * PQ) + b * PQ + j];
}

/* wt (cols, rows) = w (rows, cols)^T: the weights of a backward-data GEMM, so that gemm_rb
 * reads its A operand along rows instead of striding by C*R*S per step of K (2048 steps of
 * 4 KiB in ResNet-50's layer4 projection: 5x the forward's time).  global (cols, rows) */
__kernel void transpose(__global const float *w, const uint w_off, const int rows, const int cols,
                        __global float *wt, const uint wt_off) {
    const int j = get_global_id(0), i = get_global_id(1);
    if (j >= cols || i >= rows) return;
    wt[wt_off + j * rows + i] = w[w_off + i * cols + j];
}

/* ---------------------------------------------------------------------------------- */
/* Packed producers for gemm_rb (gemm_tiled.cl): B (Kd, Nd) written in panels of RB_W
 * columns, Bp[(panel*Kd + k)*RB_W + j] = B[k][panel*RB_W + j], zero past Nd. One work-item
 * writes one panel row (RB_W consecutive floats): the divisions that locate its first
 * element are done once and the rest is reached by incrementing counters with wrap-around
 * in an unrolled loop (a division per element made these kernels cost more than the GEMM
 * on PoCL).  global (panels * Kd) */
#ifndef RB_W
#define RB_W 16
#endif
#define IM_CAT_(a, b) a##b
#define IM_CAT(a, b) IM_CAT_(a, b)
#define IM_VEC IM_CAT(float, RB_W)
#define IM_VLOAD IM_CAT(vload, RB_W)
#define IM_VSTORE IM_CAT(vstore, RB_W)

/* B = col (C*R*S, nb*P*Q), packed; with `plain` the same panels are written to a row-major
 * col instead (the A operand of the backward-filter GEMM). */
__kernel void im2col_packed(__global const float *x, const uint x_off, const int C, const int H, const int W,
                            const int R, const int S, const int P, const int Q, const int sh, const int sw,
                            const int ph, const int pw, const int nb, __global float *out, const uint out_off,
                            const int plain) {
    const int row = get_global_id(0);
    const int crs_n = C * R * S, pq = P * Q, cols = nb * pq, panels = (cols + RB_W - 1) / RB_W;
    if (row >= panels * crs_n) return;
    const int panel = row / crs_n, crs = row % crs_n;
    const int c = crs / (R * S), r = (crs / S) % R, s = crs % S;
    const int col0 = panel * RB_W;
    int b = col0 / pq, p = (col0 % pq) / Q, q = col0 % Q;
    __global float *o = out + out_off + (plain ? (size_t)crs * cols + col0 : (size_t)row * RB_W);
    if (sw == 1 && Q % RB_W == 0 && col0 + RB_W <= cols) {
        /* The panel is one stretch of an output row: a zero row (padding) or, away from the
         * left/right padding, one vector copy of the input row. */
        const int h = p * sh - ph + r, w0 = q - pw + s;
        if (h < 0 || h >= H) {
            IM_VSTORE((IM_VEC)(0.0f), 0, o);
            return;
        }
        __global const float *xr = x + x_off + ((b * C + c) * H + h) * W;
        if (w0 >= 0 && w0 + RB_W <= W) {
            IM_VSTORE(IM_VLOAD(0, xr + w0), 0, o);
            return;
        }
#if RB_W == 16
        /* One column of padding on the left or the right (3x3, pad 1): load the 16 valid
         * neighbours and shift a zero in, without touching memory outside the row. */
        if (w0 == -1 && RB_W <= W) {
            IM_VSTORE(shuffle2((float16)(0.0f), vload16(0, xr),
                               (uint16)(0, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30)), 0, o);
            return;
        }
        if (w0 + RB_W == W + 1 && w0 >= 1) {
            IM_VSTORE(shuffle2(vload16(0, xr + w0 - 1), (float16)(0.0f),
                               (uint16)(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)), 0, o);
            return;
        }
#endif
    }
#if RB_W == 16
    if (sw == 2 && Q % RB_W == 0 && col0 + RB_W <= cols) {
        /* Stride 2 (the 7x7/2 stem): the panel's 16 taps are the even lanes of 32 consecutive
         * inputs; a panel that touches the padding takes the element loop below. */
        const int h = p * sh - ph + r, w0 = 2 * q - pw + s;
        if (h < 0 || h >= H) {
            IM_VSTORE((IM_VEC)(0.0f), 0, o);
            return;
        }
        if (w0 >= 0 && w0 + 2 * RB_W <= W) {
            __global const float *xr = x + x_off + ((b * C + c) * H + h) * W + w0;
            IM_VSTORE(shuffle2(vload16(0, xr), vload16(0, xr + 16),
                               (uint16)(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30)), 0, o);
            return;
        }
    }
#endif
#pragma unroll
    for (int j = 0; j < RB_W; j++) {
        const int h = p * sh - ph + r, w = q * sw - pw + s;
        float v = 0.0f;
        if (col0 + j < cols && h >= 0 && h < H && w >= 0 && w < W) v = x[x_off + ((b * C + c) * H + h) * W + w];
        if (!plain || col0 + j < cols) o[j] = v;
        if (++q == Q) {
            q = 0;
            if (++p == P) {
                p = 0;
                b++;
            }
        }
    }
}

/* B = dy^T (nb*PQ, K) of a (nb, K, PQ) chunk, packed in panels of RB_W channels (the
 * backward-filter GEMM dw^T = col . dy^T).  global (panels * nb*PQ) */
__kernel void gather_t_packed(__global const float *t, const uint t_off, const int K, const int PQ, const int nb,
                              __global float *out, const uint out_off) {
    const int row = get_global_id(0);
    const int cols = nb * PQ, panels = (K + RB_W - 1) / RB_W;
    if (row >= panels * cols) return;
    const int panel = row / cols, col = row % cols, k0 = panel * RB_W;
    __global const float *src = t + t_off + ((col / PQ) * K + k0) * PQ + col % PQ;
    __global float *o = out + out_off + (size_t)row * RB_W;
#pragma unroll
    for (int j = 0; j < RB_W; j++) o[j] = k0 + j < K ? src[j * PQ] : 0.0f;
}

/* B = the (K, nb*PQ) matrix of a (nb, K, PQ) chunk, packed. */
__kernel void gather_packed(__global const float *t, const uint t_off, const int K, const int PQ, const int nb,
                            __global float *out, const uint out_off) {
    const int row = get_global_id(0);
    const int cols = nb * PQ, panels = (cols + RB_W - 1) / RB_W;
    if (row >= panels * K) return;
    const int panel = row / K, k = row % K, col0 = panel * RB_W;
    int b = col0 / PQ, i = col0 % PQ;
    __global float *o = out + out_off + (size_t)row * RB_W;
    if (PQ % RB_W == 0 && col0 + RB_W <= cols) {   /* the panel lies inside one plane */
        IM_VSTORE(IM_VLOAD(0, t + t_off + (b * K + k) * PQ + i), 0, o);
        return;
    }
#pragma unroll
    for (int j = 0; j < RB_W; j++) {
        o[j] = col0 + j < cols ? t[t_off + (b * K + k) * PQ + i] : 0.0f;
        if (++i == PQ) {
            i = 0;
            b++;
        }
    }
}

/*
 * y (N,K,P,Q) = the forward convolution of a layer whose col has fewer than NARROW_ROWS rows
 * (airbench94's whitening: 2x2 on 3 channels, 12), in one launch: a work-item gathers its
 * output pixel's C*R*S inputs once (zero in the padding) and computes its K outputs from them
 * in the CPU reference's (c, r, s) order, where the im2col path writes col, multiplies it in a
 * thin GEMM and scatters the product, per chunk of images. The loops over the inputs run to
 * NARROW_ROWS (a -D option, DBK_OCL_NARROW_ROWS), unrolled, so they stay in registers; (c, r, s)
 * advance without divisions.
 * Neighbouring work-items take neighbouring q: contiguous loads and stores, broadcast weights.
 * global (Q, N*P)
 */
__kernel void conv_narrow_fwd(__global const float *x, const uint x_off, const int C, const int H, const int W,
                              const int R, const int S, const int P, const int Q, const int sh, const int sw,
                              const int ph, const int pw, const int N, const int K, __global const float *w,
                              const uint w_off, __global float *y, const uint y_off) {
    const int q = get_global_id(0), np = get_global_id(1);
    if (q >= Q || np >= N * P) return;
    const int n = np / P, p = np % P, crs = C * R * S;
    __global const float *xn = x + x_off + (size_t)n * C * H * W;
    float v[NARROW_ROWS];
    int c = 0, r = 0, s = 0;
#pragma unroll
    for (int j = 0; j < NARROW_ROWS; j++) {
        const int h = p * sh - ph + r, wc = q * sw - pw + s;
        v[j] = j < crs && h >= 0 && h < H && wc >= 0 && wc < W ? xn[(c * H + h) * W + wc] : 0.0f;
        if (++s == S) {
            s = 0;
            if (++r == R) r = 0, c++;
        }
    }
    __global float *out = y + y_off + (size_t)n * K * P * Q + (size_t)p * Q + q;
    __global const float *wk = w + w_off;
    for (int k = 0; k < K; k++, wk += crs) {
        float acc = 0.0f;
#pragma unroll
        for (int j = 0; j < NARROW_ROWS; j++)
            if (j < crs) acc += wk[j] * v[j];
        out[(size_t)k * P * Q] = acc;
    }
}

/* dw (MN) = beta dw + the sum of S partial products (S, MN) of a backward-filter GEMM split
 * along its K (images x P x Q) dimension; beta 0 never reads dw (it may hold NaN).
 * global (MN) */
__kernel void splitk_sum(__global const float *part, const uint part_off, const int S, const int MN,
                         const float beta, __global float *dw, const uint dw_off) {
    const int i = get_global_id(0);
    if (i >= MN) return;
    float acc = 0.0f;
    for (int s = 0; s < S; s++) acc += part[part_off + s * MN + i];
    dw[dw_off + i] = beta != 0.0f ? beta * dw[dw_off + i] + acc : acc;
}
