/*
 * conv2d_direct.cl — 3x3 stride-1 pad-1 convolutions computed straight from the tensors, no
 * col matrix (ocl_ops_conv_direct.c): the "direct" algorithm of the narrow layers, where the
 * im2col path spends most of its time writing and re-reading col and gemm_rb's rows are few.
 * Letters as the CPU reference (src/backends/cpu/conv.c): x (N,C,H,W), w (K,C,3,3), y (N,K,H,W).
 *
 * A row segment is 8 consecutive pixels of one image row, one float8: one AVX2 register, the
 * vector width PoCL compiles for on this machine ("pthread-haswell"). float16 accumulators took
 * two registers each and spilled (the first version, 16-wide, ran 3x slower than im2col).
 * Lanes past W are computed on zeros and never stored. Where W % 8 == 0 the three taps of a
 * row are the segment's vector and two copies with the neighbouring values (or zero at the
 * image border) shifted in, without branches; other widths go through a small private array.
 * Accumulators are named variables (PoCL keeps private arrays in memory): 8 (forward and
 * backward-data) or 12 (backward-filter) of the 16 AVX2 registers.
 */
/* The three taps of the segment starting at q0 of a row, W % 8 == 0: v0 = row[q0-1 ..], v1 =
 * row[q0 ..], v2 = row[q0+1 ..], zero outside [0, W), all times `keep` (0 for a padding row,
 * whose `row` is any valid row). No branches: the border values are scalar selects shifted in,
 * so the compiler keeps the channel loop straight. */
static inline void dc_taps8(__global const float *row, const int q0, const int W, const float keep, float8 *v0,
                            float8 *v1, float8 *v2) {
    const float8 m = vload8(0, row + q0) * keep;
    const float left = (q0 > 0 ? row[q0 > 0 ? q0 - 1 : 0] : 0.0f) * keep;
    const float right = (q0 + 8 < W ? row[q0 + 8 < W ? q0 + 8 : W - 1] : 0.0f) * keep;
    *v0 = shuffle2(m, (float8)(left), (uint8)(8, 0, 1, 2, 3, 4, 5, 6));
    *v1 = m;
    *v2 = shuffle2(m, (float8)(right), (uint8)(1, 2, 3, 4, 5, 6, 7, 8));
}

/* The input of tap s (0, 1, 2) of the segment starting at q0 of a row, any W: row[q0+s-1 ..
 * q0+s+6], zero outside [0, W). */
static inline float8 dc_tap(__global const float *row, const int q0, const int s, const int W) {
    const int q = q0 + s - 1;
    float t[8];
    for (int j = 0; j < 8; j++) t[j] = q + j >= 0 && q + j < W ? row[q + j] : 0.0f;
    return vload8(0, t);
}

/* The segment starting at q0 of a row, zero past W. */
static inline float8 dc_segment(__global const float *row, const int q0, const int W) {
    if (q0 + 8 <= W) return vload8(0, row + q0);
    float t[8];
    for (int j = 0; j < 8; j++) t[j] = q0 + j < W ? row[q0 + j] : 0.0f;
    return vload8(0, t);
}

/* Stores the lanes of v that fall inside the row (q0 + j < W). */
static inline void dc_store_segment(__global float *row, const int q0, const int W, const float8 v) {
    if (q0 + 8 <= W) {
        vstore8(v, 0, row + q0);
        return;
    }
    float t[8];
    vstore8(v, 0, t);
    for (int j = 0; q0 + j < W; j++) row[q0 + j] = t[j];
}

static inline float dc_sum8(const float8 v) {
    const float4 a = v.lo + v.hi;
    const float2 b = a.lo + a.hi;
    return b.x + b.y;
}

/* Register block of conv_direct: DC_ROWS output rows x DC_KB output channels of a segment
 * (DIRECT_ROWS, DIRECT_KB in ocl_ops_conv_direct.c): 8 accumulators, and per tap row the 6 tap
 * vectors of the two input rows, each weight broadcast feeding 2 multiply-adds (16 registers). */
#define DC_ROWS 2
#define DC_KB 4
#define DC_EACH_K(X) X(0) X(1) X(2) X(3)
#define DC_EACH_ACC(X) X(0, 0) X(0, 1) X(0, 2) X(0, 3) X(1, 0) X(1, 1) X(1, 2) X(1, 3)

/*
 * out (N, Co, H, W) = the 3x3 stride-1 pad-1 convolution of in (N, Ci, H, W) with the weight of
 * (output o, input i, tap r, s) at wt[w_off + o*so + i*si + r*sr + s*ss]: the forward with
 * (so, si, sr, ss) = (9*Ci, 9, 3, 1); backward-data (in = dy, out = dx, Ci = K, Co = C) is the
 * same convolution with the filter transposed and turned 180 degrees: (9, 9*Co, -3, -1) with
 * w_off at the filter's element 8. Work-item: DC_ROWS rows x DC_KB output channels of one
 * segment; channels past Co re-read channel Co-1's weights, rows past H read zeros, and
 * neither is stored.
 * global (segs * ceil(H / DC_ROWS), N * ceil(Co / DC_KB)), segs = ceil(W / 8).
 */
__kernel void conv_direct(__global const float *in, const uint in_off, const int N, const int Ci, const int H,
                          const int W, const int Co, __global const float *wt, const uint w_off, const int so,
                          const int si, const int sr, const int ss, __global float *out, const uint out_off) {
    const int segs = (W + 7) / 8, rblocks = (H + DC_ROWS - 1) / DC_ROWS, kblocks = (Co + DC_KB - 1) / DC_KB;
    const int i0 = get_global_id(0), i1 = get_global_id(1);
    if (i0 >= segs * rblocks || i1 >= N * kblocks) return;
    const int p0 = (i0 / segs) * DC_ROWS, q0 = (i0 % segs) * 8;
    const int n = i1 / kblocks, o0 = (i1 % kblocks) * DC_KB;
#define DC_INIT_ACC(j, k) float8 acc##j##k = (float8)(0.0f);
    DC_EACH_ACC(DC_INIT_ACC)
#define DC_INIT_W(k) __global const float *w##k = wt + w_off + (o0 + (k) < Co ? o0 + (k) : Co - 1) * so;
    DC_EACH_K(DC_INIT_W)
    __global const float *img = in + in_off + (size_t)n * Ci * H * W;
#define DC_ROW_OF(j, r)                                   \
    const int h##j##r = p0 + (j) + (r) - 1;               \
    const bool ok##j##r = h##j##r >= 0 && h##j##r < H;    \
    const int off##j##r = (ok##j##r ? h##j##r : 0) * W;   \
    const float keep##j##r = ok##j##r ? 1.0f : 0.0f;
#define DC_ROWS_OF(r) DC_ROW_OF(0, r) DC_ROW_OF(1, r)
    DC_ROWS_OF(0)
    DC_ROWS_OF(1)
    DC_ROWS_OF(2)
    for (int i = 0; i < Ci; i++) {
        __global const float *plane = img + (size_t)i * H * W;
        const int ti = i * si;
        /* tap row r: the two output rows' input rows as 3 tap vectors each, then per tap column
         * 4 weight broadcasts x 2 rows */
#define DC_TAP_ROW(r)                                                                               \
    {                                                                                               \
        float8 x00, x01, x02, x10, x11, x12;                                                        \
        if (W % 8 == 0) {                                                                           \
            dc_taps8(plane + off0##r, q0, W, keep0##r, &x00, &x01, &x02);                           \
            dc_taps8(plane + off1##r, q0, W, keep1##r, &x10, &x11, &x12);                           \
        } else {                                                                                    \
            x00 = ok0##r ? dc_tap(plane + off0##r, q0, 0, W) : (float8)(0.0f);                     \
            x01 = ok0##r ? dc_tap(plane + off0##r, q0, 1, W) : (float8)(0.0f);                     \
            x02 = ok0##r ? dc_tap(plane + off0##r, q0, 2, W) : (float8)(0.0f);                     \
            x10 = ok1##r ? dc_tap(plane + off1##r, q0, 0, W) : (float8)(0.0f);                     \
            x11 = ok1##r ? dc_tap(plane + off1##r, q0, 1, W) : (float8)(0.0f);                     \
            x12 = ok1##r ? dc_tap(plane + off1##r, q0, 2, W) : (float8)(0.0f);                     \
        }                                                                                           \
        DC_TAP_COL(r, 0) DC_TAP_COL(r, 1) DC_TAP_COL(r, 2)                                          \
    }
#define DC_TAP_COL(r, s)                                         \
    {                                                            \
        const int t = ti + (r) * sr + (s) * ss;                  \
        float8 v = (float8)(w0[t]);                              \
        acc00 += x0##s * v;                                      \
        acc10 += x1##s * v;                                      \
        v = (float8)(w1[t]);                                     \
        acc01 += x0##s * v;                                      \
        acc11 += x1##s * v;                                      \
        v = (float8)(w2[t]);                                     \
        acc02 += x0##s * v;                                      \
        acc12 += x1##s * v;                                      \
        v = (float8)(w3[t]);                                     \
        acc03 += x0##s * v;                                      \
        acc13 += x1##s * v;                                      \
    }
        DC_TAP_ROW(0)
        DC_TAP_ROW(1)
        DC_TAP_ROW(2)
    }
    __global float *o = out + out_off + ((size_t)n * Co + o0) * H * W;
#define DC_STORE(j, k) \
    if (o0 + (k) < Co && p0 + (j) < H) dc_store_segment(o + ((k) * H + p0 + (j)) * W, q0, W, acc##j##k);
    DC_EACH_ACC(DC_STORE)
}

/*
 * Backward-filter, first pass: part[g] (K, C, 3, 3) = the sums over the images of group g
 * (images g*N/G .. (g+1)*N/G - 1) of dy[n][k][p][q] * x[n][c][p+r-1][q+s-1]. Work-item: tap row
 * r of DC_KB output channels k0.. and one input channel c: 12 vector accumulators (channel x
 * tap column), each dy segment feeding 3 of them and each x tap DC_KB.
 * global (C * 3, ceil(K / DC_KB) * G)
 */
__kernel void conv_direct_filter(__global const float *x, const uint x_off, __global const float *dy,
                                 const uint dy_off, const int N, const int C, const int H, const int W,
                                 const int K, const int G, __global float *part, const uint part_off) {
    const int i0 = get_global_id(0), i1 = get_global_id(1), kblocks = (K + DC_KB - 1) / DC_KB;
    if (i0 >= C * 3 || i1 >= kblocks * G) return;
    const int c = i0 / 3, r = i0 % 3;
    const int g = i1 / kblocks, k0 = (i1 % kblocks) * DC_KB;
    const int segs = (W + 7) / 8, n_begin = (int)((long)g * N / G), n_end = (int)((long)(g + 1) * N / G);
#define DC_EACH_FACC(X) \
    X(0, 0) X(0, 1) X(0, 2) X(1, 0) X(1, 1) X(1, 2) X(2, 0) X(2, 1) X(2, 2) X(3, 0) X(3, 1) X(3, 2)
#define DC_ZERO(k, s) float8 a##k##s = (float8)(0.0f);
    DC_EACH_FACC(DC_ZERO)
    /* dy rows of channels past K re-read channel K-1 (never stored) */
#define DC_DY_OFF(k) const size_t dk##k = (size_t)(k0 + (k) < K ? k0 + (k) : K - 1) * H * W;
    DC_EACH_K(DC_DY_OFF)
    /* output rows p whose input row p + r - 1 lies inside the image */
    const int p_begin = r == 0 ? 1 : 0, p_end = r == 2 ? H - 1 : H;
    for (int n = n_begin; n < n_end; n++) {
        __global const float *xp = x + x_off + ((size_t)n * C + c) * H * W;
        __global const float *dp = dy + dy_off + (size_t)n * K * H * W;
        for (int p = p_begin; p < p_end; p++) {
            __global const float *xr = xp + (p + r - 1) * W;
            for (int q0 = 0; q0 < segs * 8; q0 += 8) {
#define DC_LOAD_DY(k) const float8 d##k = dc_segment(dp + dk##k + p * W, q0, W);
                DC_EACH_K(DC_LOAD_DY)
                float8 t0, t1, t2;
                if (W % 8 == 0) {
                    dc_taps8(xr, q0, W, 1.0f, &t0, &t1, &t2);
                } else {
                    t0 = dc_tap(xr, q0, 0, W);
                    t1 = dc_tap(xr, q0, 1, W);
                    t2 = dc_tap(xr, q0, 2, W);
                }
#define DC_FILTER_TAP(k, s) a##k##s += d##k * t##s;
                DC_EACH_FACC(DC_FILTER_TAP)
            }
        }
    }
    __global float *o = part + part_off + ((size_t)g * K + k0) * C * 9 + c * 9 + r * 3;
#define DC_PUT(k, s) \
    if (k0 + (k) < K) o[(k) * C * 9 + (s)] = dc_sum8(a##k##s);
    DC_EACH_FACC(DC_PUT)
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
