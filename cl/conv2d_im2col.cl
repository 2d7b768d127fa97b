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
    for (int r = 0; r < R; r++) {
        const int pn = h + ph - r;
        if (pn < 0 || pn % sh) continue;
        const int p = pn / sh;
        if (p >= P) continue;
        for (int s = 0; s < S; s++) {
            const int qn = w + pw - s;
            if (qn < 0 || qn % sw) continue;
            const int q = qn / sw;
            if (q >= Q) continue;
            acc += dcol[dcol_off + ((c * R + r) * S + s) * cols + (b * P + p) * Q + q];
        }
    }
    dx[dx_off + ((b * C + c) * H + h) * W + w] = acc;
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
