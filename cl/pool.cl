/*
 * pool.cl — max pooling forward (with argmax) and backward. Semantics as the CPU reference
 * (src/backends/cpu/pool.c, torch.nn.MaxPool2d, -inf padding): x, dx (N,C,H,W); y, dy,
 * argmax (N,C,P,Q); argmax holds h*W + w inside the (n, c) plane. Taps are visited in
 * row-major window order with a strict '>', so the first maximum wins ties, and the first
 * NaN wins over numbers (NaN propagates).
 *
 * global_avgpool_fwd / _bwd: the mean of each (n, c) plane, y and dy (N,C,1,1); the backward
 * spreads dy / (H*W) over the plane (overwrites dx).
 */

/* The first maximum of four candidates in tap order, 8 windows at once (vector select). */
#define POOL_TAKE(v, vi)                                                         \
    do {                                                                         \
        const int8 t_ = isgreater(v, best) | (isnan(v) & ~isnan(best));         \
        best = select(best, v, t_);                                              \
        bi = select(bi, vi, t_);                                                 \
    } while (0)

/* 2x2 windows with stride 2 (ResNet9; airbench94's odd planes), 8 outputs of a row per
 * work-item: two rows of 16 inputs, the four taps are their even and odd lanes. A row's last
 * group may hold fewer than 8 outputs (Q % 8 != 0): its extra lanes read past the row, which
 * the host allows only when every such read stays inside the plane (ocl_ops_pool.c), and are
 * not stored.  global (ceil(Q / 8), N*C*P) */
__kernel void maxpool_fwd_2x2(__global const float *x, const uint x_off, __global float *y, const uint y_off,
                              __global int *arg, const uint arg_off, const int NCP, const int H, const int W,
                              const int P, const int Q) {
    const int q0 = get_global_id(0) * 8, row = get_global_id(1);
    if (q0 >= Q || row >= NCP) return;
    const int p = row % P, plane = row / P;
    const int i0 = 2 * p * W + 2 * q0;
    __global const float *xp = x + x_off + plane * H * W;
    const float16 a = vload16(0, xp + i0), b = vload16(0, xp + i0 + W);
    const int8 base = (int8)(i0) + (int8)(0, 2, 4, 6, 8, 10, 12, 14);
    float8 best = a.even;
    int8 bi = base;
    POOL_TAKE(a.odd, base + 1);
    POOL_TAKE(b.even, base + W);
    POOL_TAKE(b.odd, base + W + 1);
    if (q0 + 8 <= Q) {
        vstore8(best, 0, y + y_off + row * Q + q0);
        vstore8(bi, 0, arg + arg_off + row * Q + q0);
        return;
    }
    float vb[8];
    int vi[8];
    vstore8(best, 0, vb);
    vstore8(bi, 0, vi);
    for (int j = 0; j < Q - q0; j++) {
        y[y_off + row * Q + q0 + j] = vb[j];
        arg[arg_off + row * Q + q0 + j] = vi[j];
    }
}

/* 2x2 windows with stride 2 whose Q is not a multiple of 8 (airbench94: 31x31 -> 15x15,
 * 15x15 -> 7x7): one output row per work-item, the four taps unrolled and chosen by select,
 * as POOL_TAKE. The generic kernel below runs these with work-groups Q = 15 or 7 wide, which
 * PoCL cannot pack into SIMD lanes, and a tap loop with data-dependent branches; a 1-D range
 * over rows lets PoCL vectorise across rows.  global (N*C*P) */
__kernel void maxpool_fwd_2x2_rows(__global const float *x, const uint x_off, __global float *y, const uint y_off,
                                   __global int *arg, const uint arg_off, const int NCP, const int H, const int W,
                                   const int P, const int Q) {
    const int row = get_global_id(0);
    if (row >= NCP) return;
    const int p = row % P, plane = row / P;
    __global const float *xp = x + x_off + plane * H * W;
    __global float *yp = y + y_off + row * Q;
    __global int *ap = arg + arg_off + row * Q;
    for (int q = 0; q < Q; q++) {
        const int i0 = 2 * p * W + 2 * q;
        float best = xp[i0];
        int bi = i0;
        const int ti[3] = {i0 + 1, i0 + W, i0 + W + 1};
        for (int k = 0; k < 3; k++) {
            const float v = xp[ti[k]];
            const bool t = isgreater(v, best) || (isnan(v) && !isnan(best));
            best = t ? v : best;
            bi = t ? ti[k] : bi;
        }
        yp[q] = best;
        ap[q] = bi;
    }
}

/* Any window, stride and padding (ph, pw): taps outside x are skipped (-inf never wins); the
 * running maximum starts at -inf on the first tap inside x, as the CPU reference.
 * global (Q, N*C*P) */
__kernel void maxpool_fwd(__global const float *x, const uint x_off, __global float *y, const uint y_off,
                          __global int *arg, const uint arg_off, const int NCP, const int H, const int W,
                          const int P, const int Q, const int R, const int S, const int sh, const int sw,
                          const int ph, const int pw) {
    const int q = get_global_id(0), row = get_global_id(1);
    if (q >= Q || row >= NCP) return;
    const int p = row % P, plane = row / P;
    __global const float *xp = x + x_off + plane * H * W;
    const int h0 = p * sh - ph, w0 = q * sw - pw;
    const int r_lo = max(0, -h0), r_hi = min(R, H - h0), s_lo = max(0, -w0), s_hi = min(S, W - w0);
    int best_i = (h0 + r_lo) * W + w0 + s_lo;
    float best = -INFINITY;
    for (int r = r_lo; r < r_hi; r++)
        for (int s = s_lo; s < s_hi; s++) {
            const int i = (h0 + r) * W + w0 + s;
            const float v = xp[i];
            if (v > best || (isnan(v) && !isnan(best))) {
                best = v;
                best_i = i;
            }
        }
    y[y_off + row * Q + q] = best;
    arg[arg_off + row * Q + q] = best_i;
}

/* One work-item per (n, c) plane: zero dx, then add every dy at its argmax, in output order
 * (overlapping windows can share a winner, so it is a sum; no atomics needed).
 * global (N*C) */
__kernel void maxpool_bwd(__global const float *dy, const uint dy_off, __global const int *arg, const uint arg_off,
                          __global float *dx, const uint dx_off, const int NC, const int HW, const int PQ) {
    const int plane = get_global_id(0);
    if (plane >= NC) return;
    __global float *d = dx + dx_off + plane * HW;
    __global const float *g = dy + dy_off + plane * PQ;
    __global const int *a = arg + arg_off + plane * PQ;
    for (int i = 0; i < HW; i++) d[i] = 0.0f;
    for (int i = 0; i < PQ; i++) {
        const int k = a[i];
        if (k >= 0 && k < HW) d[k] += g[i];
    }
}

/* One work-group per (n, c) plane: work-item l sums the plane's values l, l + ls, ..., then
 * a tree in local memory adds the partial sums (a fixed order: no atomics), as channel_sum
 * in bias.cl.  global (N*C * ls), local (ls); scratch: ls floats. */
__kernel void global_avgpool_fwd(__global const float *x, const uint x_off, __global float *y, const uint y_off,
                                 const int HW, __local float *scratch) {
    const int plane = get_group_id(0), lid = get_local_id(0), ls = get_local_size(0);
    __global const float *p = x + x_off + plane * HW;
    float acc = 0.0f;
    for (int i = lid; i < HW; i += ls) acc += p[i];
    scratch[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int off = ls / 2; off > 0; off >>= 1) {
        if (lid < off) scratch[lid] += scratch[lid + off];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) y[y_off + plane] = scratch[0] / (float)HW;
}

/* One work-item per dx element.  global (N*C*HW) */
__kernel void global_avgpool_bwd(__global const float *dy, const uint dy_off, __global float *dx, const uint dx_off,
                                 const int total, const int HW) {
    const int i = get_global_id(0);
    if (i >= total) return;
    dx[dx_off + i] = dy[dy_off + i / HW] / (float)HW;
}
