/*
 * conv2d_direct.cl — 3x3 stride-1 pad-1 convolutions computed straight from the tensors, no
 * col matrix (ocl_ops_conv_direct.c): the "direct" algorithm of the narrow layers, where the
 * im2col path spends most of its time writing and re-reading col and gemm_rb's rows are few.
 * Letters as the CPU reference (src/backends/cpu/conv.c): x (N,C,H,W), w (K,C,3,3), y (N,K,H,W).
 *
 * A row segment is 16 consecutive pixels of one image row, one float16 (lanes past W are
 * computed on zeros and never stored). Where W % 16 == 0 the three taps of a row are the
 * segment's vector and two shifted ones (a zero shifted in at the image border, as
 * im2col_packed does); other widths fill the 18 values through a small private array.
 * Accumulators are named variables (PoCL keeps private arrays in memory).
 */
/* Output channels per work-item of conv_direct (DIRECT_KB in ocl_ops_conv_direct.c): each input
 * vector feeds DC_KB multiply-adds. */
#define DC_KB 8
#define DC_EACH_K(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

/* The input of the three taps s = 0, 1, 2 of the segment starting at q0 of a row: v0 = row[q0-1 ..],
 * v1 = row[q0 ..], v2 = row[q0+1 ..], zero outside [0, W). */
static inline void dc_taps(__global const float *row, const int q0, const int W, float16 *v0, float16 *v1,
                           float16 *v2) {
    if (W % 16 == 0) {
        const float16 m = vload16(0, row + q0);
        *v1 = m;
        *v0 = q0 > 0 ? vload16(0, row + q0 - 1)
                     : shuffle2((float16)(0.0f), m, (uint16)(0, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30));
        *v2 = q0 + 17 <= W ? vload16(0, row + q0 + 1)
                           : shuffle2(m, (float16)(0.0f), (uint16)(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16));
        return;
    }
    float t[18];
    for (int i = 0; i < 18; i++) {
        const int q = q0 - 1 + i;
        t[i] = q >= 0 && q < W ? row[q] : 0.0f;
    }
    *v0 = vload16(0, t);
    *v1 = vload16(0, t + 1);
    *v2 = vload16(0, t + 2);
}

/* The segment starting at q0 of a row, zero past W. */
static inline float16 dc_segment(__global const float *row, const int q0, const int W) {
    if (q0 + 16 <= W) return vload16(0, row + q0);
    float t[16];
    for (int j = 0; j < 16; j++) t[j] = q0 + j < W ? row[q0 + j] : 0.0f;
    return vload16(0, t);
}

/* Stores the lanes of v that fall inside the row (q0 + j < W). */
static inline void dc_store_segment(__global float *row, const int q0, const int W, const float16 v) {
    if (q0 + 16 <= W) {
        vstore16(v, 0, row + q0);
        return;
    }
    float t[16];
    vstore16(v, 0, t);
    for (int j = 0; q0 + j < W; j++) row[q0 + j] = t[j];
}

static inline float dc_sum16(const float16 v) {
    const float8 a = v.lo + v.hi;
    const float4 b = a.lo + a.hi;
    const float2 c = b.lo + b.hi;
    return c.x + c.y;
}

/*
 * out (N, Co, H, W) = the 3x3 stride-1 pad-1 convolution of in (N, Ci, H, W) with the weight of
 * (output o, input i, tap r, s) at wt[w_off + o*so + i*si + r*sr + s*ss]: the forward with
 * (so, si, sr, ss) = (9*Ci, 9, 3, 1); backward-data (in = dy, out = dx, Ci = K, Co = C) is the
 * same convolution with the filter transposed and turned 180 degrees: (9, 9*Co, -3, -1) with
 * w_off at the filter's element 8. Work-item: DC_KB output channels x one row segment; weights
 * of output channels past Co re-read channel Co-1 and are not stored.
 * global (segs * H, N * ceil(Co / DC_KB)), segs = ceil(W / 16).
 */
__kernel void conv_direct(__global const float *in, const uint in_off, const int N, const int Ci, const int H,
                          const int W, const int Co, __global const float *wt, const uint w_off, const int so,
                          const int si, const int sr, const int ss, __global float *out, const uint out_off) {
    const int segs = (W + 15) / 16, kblocks = (Co + DC_KB - 1) / DC_KB;
    const int i0 = get_global_id(0), i1 = get_global_id(1);
    if (i0 >= segs * H || i1 >= N * kblocks) return;
    const int p = i0 / segs, q0 = (i0 % segs) * 16;
    const int n = i1 / kblocks, o0 = (i1 % kblocks) * DC_KB;
#define DC_INIT(k)                          \
    float16 acc##k = (float16)(0.0f);       \
    __global const float *w##k = wt + w_off + (o0 + (k) < Co ? o0 + (k) : Co - 1) * so;
    DC_EACH_K(DC_INIT)
    __global const float *img = in + in_off + (size_t)n * Ci * H * W;
    for (int i = 0; i < Ci; i++) {
        __global const float *plane = img + (size_t)i * H * W;
        for (int r = 0; r < 3; r++) {
            const int h = p + r - 1;
            if (h < 0 || h >= H) continue;
            float16 v0, v1, v2;
            dc_taps(plane + h * W, q0, W, &v0, &v1, &v2);
            const int t = i * si + r * sr;
#define DC_FMA(k)                                 \
    acc##k += v0 * (float16)(w##k[t]);            \
    acc##k += v1 * (float16)(w##k[t + ss]);       \
    acc##k += v2 * (float16)(w##k[t + 2 * ss]);
            DC_EACH_K(DC_FMA)
        }
    }
    __global float *o = out + out_off + ((size_t)n * Co + o0) * H * W + p * W;
#define DC_STORE(k) \
    if (o0 + (k) < Co) dc_store_segment(o + (k) * H * W, q0, W, acc##k);
    DC_EACH_K(DC_STORE)
}

/*
 * Backward-filter, first pass: part[g] (K, C, 3, 3) = the sums over the images of group g
 * (images g*N/G .. (g+1)*N/G - 1) of dy[n][k][p][q] * x[n][c][p+r-1][q+s-1]. Work-item: two
 * output channels k0, k0+1 of one input channel c: 18 vector accumulators, each dy segment
 * feeding 9 taps and each x tap vector 2 channels. global (C, ceil(K / 2) * G)
 */
#define DC_EACH_TAP(X, k) X(k, 0, 0) X(k, 0, 1) X(k, 0, 2) X(k, 1, 0) X(k, 1, 1) X(k, 1, 2) X(k, 2, 0) X(k, 2, 1) X(k, 2, 2)
__kernel void conv_direct_filter(__global const float *x, const uint x_off, __global const float *dy,
                                 const uint dy_off, const int N, const int C, const int H, const int W,
                                 const int K, const int G, __global float *part, const uint part_off) {
    const int c = get_global_id(0), i1 = get_global_id(1), kpairs = (K + 1) / 2;
    if (c >= C || i1 >= kpairs * G) return;
    const int g = i1 / kpairs, k0 = (i1 % kpairs) * 2, k1 = k0 + 1 < K ? k0 + 1 : k0;
    const int segs = (W + 15) / 16, n_begin = (int)((long)g * N / G), n_end = (int)((long)(g + 1) * N / G);
#define DC_ZERO(k, r, s) float16 a##k##r##s = (float16)(0.0f);
    DC_EACH_TAP(DC_ZERO, 0)
    DC_EACH_TAP(DC_ZERO, 1)
    for (int n = n_begin; n < n_end; n++) {
        __global const float *xp = x + x_off + ((size_t)n * C + c) * H * W;
        __global const float *d0p = dy + dy_off + ((size_t)n * K + k0) * H * W;
        __global const float *d1p = dy + dy_off + ((size_t)n * K + k1) * H * W;
        for (int p = 0; p < H; p++) {
            for (int q0 = 0; q0 < segs * 16; q0 += 16) {
                const float16 d0 = dc_segment(d0p + p * W, q0, W), d1 = dc_segment(d1p + p * W, q0, W);
                float16 v0, v1, v2;
#define DC_ACC_TAP(k, r, s) a##k##r##s += d##k * v##s;
#define DC_ROW(r)                                            \
    if (p + (r) - 1 >= 0 && p + (r) - 1 < H) {               \
        dc_taps(xp + (p + (r) - 1) * W, q0, W, &v0, &v1, &v2); \
        DC_ACC_TAP(0, r, 0) DC_ACC_TAP(0, r, 1) DC_ACC_TAP(0, r, 2) \
        DC_ACC_TAP(1, r, 0) DC_ACC_TAP(1, r, 1) DC_ACC_TAP(1, r, 2) \
    }
                DC_ROW(0)
                DC_ROW(1)
                DC_ROW(2)
            }
        }
    }
    __global float *o0 = part + part_off + (((size_t)g * K + k0) * C + c) * 9;
    __global float *o1 = part + part_off + (((size_t)g * K + k1) * C + c) * 9;
#define DC_PUT(k, r, s) o##k[(r) * 3 + (s)] = dc_sum16(a##k##r##s);
    DC_EACH_TAP(DC_PUT, 0)
    if (k1 != k0) {
        DC_EACH_TAP(DC_PUT, 1)
    }
}

/* Backward-filter, second pass: dw[i] = the sum over the G groups of part[g][i] (i < n = K*C*9),
 * overwriting dw.  global (n) */
__kernel void conv_direct_filter_sum(__global const float *part, const uint part_off, const int n, const int G,
                                     __global float *dw, const uint dw_off) {
    const int i = get_global_id(0);
    if (i >= n) return;
    float s = 0.0f;
    for (int g = 0; g < G; g++) s += part[part_off + (size_t)g * n + i];
    dw[dw_off + i] = s;
}
