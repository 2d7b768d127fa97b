/*
 * pool.cl — max pooling forward (with argmax) and backward. Semantics as the CPU reference
 * (src/backends/cpu/pool.c, torch.nn.MaxPool2d without padding): x, dx (N,C,H,W); y, dy,
 * argmax (N,C,P,Q); argmax holds h*W + w inside the (n, c) plane. Taps are visited in
 * row-major window order with a strict '>', so the first maximum wins ties, and the first
 * NaN wins over numbers (NaN propagates).
 */

/* global (Q, N*C*P) */
__kernel void maxpool_fwd(__global const float *x, const uint x_off, __global float *y, const uint y_off,
                          __global int *arg, const uint arg_off, const int NCP, const int H, const int W,
                          const int P, const int Q, const int R, const int S, const int sh, const int sw) {
    const int q = get_global_id(0), row = get_global_id(1);
    if (q >= Q || row >= NCP) return;
    const int p = row % P, plane = row / P;
    __global const float *xp = x + x_off + plane * H * W;
    int best_i = p * sh * W + q * sw;
    float best = xp[best_i];
    if (R == 2 && S == 2) {
        /* ResNet9's pooling, straight-line (taps in the same order, same tie and NaN rule):
         * a loop with run-time bounds kept PoCL from vectorising across work-items. */
        const int i1 = best_i + 1, i2 = best_i + W, i3 = best_i + W + 1;
        const float v1 = xp[i1], v2 = xp[i2], v3 = xp[i3];
        if (v1 > best || (isnan(v1) && !isnan(best))) { best = v1; best_i = i1; }
        if (v2 > best || (isnan(v2) && !isnan(best))) { best = v2; best_i = i2; }
        if (v3 > best || (isnan(v3) && !isnan(best))) { best = v3; best_i = i3; }
        y[y_off + row * Q + q] = best;
        arg[arg_off + row * Q + q] = best_i;
        return;
    }
    for (int r = 0; r < R; r++)
        for (int s = 0; s < S; s++) {
            const int i = (p * sh + r) * W + q * sw + s;
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
