/*
 * bn.cl — 2-D batch normalisation: training statistics, normalisation, backward. Semantics
 * and letters as the CPU reference (src/backends/cpu/bn.c, torch.nn.BatchNorm2d): x, y, dy,
 * dx (N,C,H,W) with HW = H*W; per-channel vectors (C); M = N*HW values per channel.
 *
 * Reductions run one work-group per channel (local size a power of two chosen by the host
 * within the kernel's work-group limit). The channel is N planes of HW contiguous floats;
 * work-item i sums the planes i, i + ls, ... with float8 partial sums over each contiguous
 * plane (explicit vectors: PoCL runs a work-item's loop as scalar code, and a single
 * compensated sum was a latency-bound chain of four dependent adds per element), then a tree
 * reduction in local memory combines the work-items. Eight interleaved partials per
 * work-item keep the float rounding well below the tolerances against the CPU's double sums.
 * Mean and variance take two passes (mean first), as on the CPU.
 *
 * Fusion with ReLU (DBK_OP_BATCHNORM_RELU_*, docs/fusion.md): bn_apply's relu flag clamps
 * the output (y = x < 0 ? 0 : x, NaN kept, as relu_fwd); the backward kernels' relu flag reads
 * dy as relu_bwd's y > 0 ? dy : 0 with y the fused forward's output, so the masked gradient is
 * never written to memory. With the flag off, y is not read.
 *
 * Fusion with ReLU and the residual add (DBK_OP_BATCHNORM_RELU_ADD_*): bn_apply's relu = 2
 * writes max(bn(x), 0) + skip (relu = 3, DBK_OP_BATCHNORM_ADD_RELU_FWD_TRAIN: max(bn(x) + skip,
 * 0)); the backward kernels' relu = 2 recompute the mask as
 * (x - mean) * (invstd * gamma) + beta > 0, the forward's own arithmetic. Contraction into
 * fused multiply-adds is off in this file so that both give the same bits (OpenCL C allows
 * it by default, and a compiler may contract one kernel and not the other).
 *
 * Fusion with ReLU and the 2x2 max pool (DBK_OP_BATCHNORM_RELU_POOL_*): bn_apply_pool writes
 * the pooled max(bn(x), 0), one window per work-item; the backward kernels' relu = 3 read the
 * pooled dy and find each window's winner again from x (the pre-activation as for relu = 2,
 * then maxpool_fwd's scan: first maximum in row-major order, the first NaN over numbers), dy
 * reaching the winner as maxpool_bwd's 0 + dy where its value is > 0 (relu_bwd).
 */
#pragma OPENCL FP_CONTRACT OFF

/* Sum of v over the work-group (every work-item gets it). scratch: local_size floats. */
static float bn_wg_sum(float v, __local float *scratch) {
    const int lid = get_local_id(0), ls = get_local_size(0);
    scratch[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int off = ls / 2; off > 0; off >>= 1) {
        if (lid < off) scratch[lid] += scratch[lid + off];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float r = scratch[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

/* This work-item's share of channel c: sum of x, or (squared) of (x - mu)^2. */
static float bn_partial(__global const float *x, const uint x_off, const int N, const int C, const int HW, const int c,
                        const float mu, const int squared) {
    float8 acc8 = (float8)(0.0f);
    float acc1 = 0.0f;
    for (int n = get_local_id(0); n < N; n += get_local_size(0)) {
        __global const float *p = x + x_off + (n * C + c) * HW;
        int j = 0;
        for (; j + 8 <= HW; j += 8) {
            const float8 v = vload8(0, p + j);
            acc8 += squared ? (v - mu) * (v - mu) : v;
        }
        for (; j < HW; j++) {
            const float v = p[j];
            acc1 += squared ? (v - mu) * (v - mu) : v;
        }
    }
    const float4 h = acc8.lo + acc8.hi;
    return ((h.x + h.y) + (h.z + h.w)) + acc1;
}

/* One work-group per channel: mean, invstd (saved), running statistics updated in place.
 * global (C * ls), local (ls) */
__kernel void bn_stats(__global const float *x, const uint x_off, const int N, const int C, const int HW,
                       const float eps, const float momentum,
                       __global float *mean, const uint mean_off, __global float *invstd, const uint invstd_off,
                       __global float *rmean, const uint rmean_off, __global float *rvar, const uint rvar_off,
                       __local float *scratch) {
    const int c = get_group_id(0);
    const int M = N * HW;
    if (M == 0) return;
    const float mu = bn_wg_sum(bn_partial(x, x_off, N, C, HW, c, 0.0f, 0), scratch) / (float)M;
    const float ss = bn_wg_sum(bn_partial(x, x_off, N, C, HW, c, mu, 1), scratch);
    if (get_local_id(0) == 0) {
        const float var = ss / (float)M;
        const float unbiased = M > 1 ? ss / (float)(M - 1) : var;
        mean[mean_off + c] = mu;
        invstd[invstd_off + c] = 1.0f / sqrt(var + eps);
        rmean[rmean_off + c] = (1.0f - momentum) * rmean[rmean_off + c] + momentum * mu;
        rvar[rvar_off + c] = (1.0f - momentum) * rvar[rvar_off + c] + momentum * unbiased;
    }
}

/* y = (x - m) * scale + shift; training: m = mean, scale = invstd * gamma; inference:
 * m = running_mean, scale = gamma / sqrt(running_var + eps). relu: 0 as is, 1 clamped at 0,
 * 2 clamped, then skip + y, 3 skip + y, then clamped (skip unread in 0 and 1). A work-item
 * does 8 consecutive values of a plane (one vector).  global (ceil(HW / 8), N*C) */
__kernel void bn_apply(__global const float *x, const uint x_off, __global float *y, const uint y_off,
                       const int NC, const int C, const int HW,
                       __global const float *s0, const uint s0_off, __global const float *s1, const uint s1_off,
                       __global const float *gamma, const uint g_off, __global const float *beta, const uint b_off,
                       const float eps, const int infer, const int relu,
                       __global const float *skip, const uint skip_off) {
    const int j0 = get_global_id(0) * 8, row = get_global_id(1);
    if (j0 >= HW || row >= NC) return;
    const int c = row % C;
    const float m = s0[s0_off + c], g = gamma[g_off + c], b = beta[b_off + c];
    const float scale = infer ? g / sqrt(s1[s1_off + c] + eps) : s1[s1_off + c] * g;
    const int i = row * HW + j0;
    if (j0 + 8 <= HW) {
        float8 v = (vload8(0, x + x_off + i) - m) * scale + b;
        if (relu == 3) v = vload8(0, skip + skip_off + i) + v;
        const float8 r = relu ? select(v, (float8)(0.0f), v < 0.0f) : v;
        vstore8(relu == 2 ? vload8(0, skip + skip_off + i) + r : r, 0, y + y_off + i);
        return;
    }
    for (int j = 0; j < HW - j0; j++) {
        float v = (x[x_off + i + j] - m) * scale + b;
        if (relu == 3) v = skip[skip_off + i + j] + v;
        const float r = relu && v < 0.0f ? 0.0f : v;
        y[y_off + i + j] = relu == 2 ? skip[skip_off + i + j] + r : r;
    }
}

/* The ReLU mask of a fused backward. relu 0: none; 1: y > 0, y the fused forward's output;
 * 2: the pre-activation recomputed from x, (x - mu) * scale + shift > 0; 3: as 2, through the
 * 2x2 max pool (x planes of HW = H*W values, W wide; dy planes P x Q). */
typedef struct bn_mask {
    int   relu;
    float mu, scale, shift;
    int   HW, W, P, Q;
} bn_mask;

/* max(bn(x[t]), 0) as bn_apply computes it */
static float bn_relu_at(__global const float *x, const int t, const bn_mask mk) {
    const float v = (x[t] - mk.mu) * mk.scale + mk.shift;
    return v < 0.0f ? 0.0f : v;
}

/* maxpool_fwd's winner of the 2x2 window whose first element is x[first], its value in *best */
static int bn_window_winner(__global const float *x, const int first, const bn_mask mk, float *best) {
    int win = first;
    *best = -INFINITY;
    for (int r = 0; r < 2; r++) {
        for (int s = 0; s < 2; s++) {
            const int t = first + r * mk.W + s;
            const float v = bn_relu_at(x, t, mk);
            if (v > *best || (isnan(v) && !isnan(*best))) {
                *best = v;
                win = t;
            }
        }
    }
    return win;
}

/* max(bn(x), 0) of 8 values from x[t] on, as bn_apply's vector path computes it */
static float8 bn_relu8(__global const float *x, const int t, const bn_mask mk) {
    const float8 v = (vload8(0, x + t) - mk.mu) * mk.scale + mk.shift;
    return select(v, (float8)(0.0f), v < 0.0f);
}

/* The four 2x2 windows of 8 values of two rows (the first value at an even column), as
 * bn_window_winner scans each: the winner's tap (0, 1 first row; 2, 3 second) and value. The
 * first tap is always taken (max(bn(x), 0) is never -inf), so the scan starts there. */
static int4 bn_winners4(const float8 top, const float8 bot, float4 *best) {
    float4 b = top.even;
    int4 win = (int4)(0);
    const float4 t1 = top.odd, t2 = bot.even, t3 = bot.odd;   /* written out: no private array */
    int4 take = (t1 > b) | (isnan(t1) & !isnan(b));
    b = select(b, t1, take);
    win = select(win, (int4)(1), take);
    take = (t2 > b) | (isnan(t2) & !isnan(b));
    b = select(b, t2, take);
    win = select(win, (int4)(2), take);
    take = (t3 > b) | (isnan(t3) & !isnan(b));
    b = select(b, t3, take);
    win = select(win, (int4)(3), take);
    *best = b;
    return win;
}

/* The gradient reaching x[i] through ReLU and the 2x2 max pool (relu = 3) */
static float bn_pool_grad1(__global const float *dy, __global const float *x, const int i, const bn_mask mk) {
    const int row = i / mk.HW, j = i - row * mk.HW, h = j / mk.W, w = j - h * mk.W;
    if (h >= 2 * mk.P || w >= 2 * mk.Q) return 0.0f;   /* in no window (odd H or W) */
    float best;
    const int win = bn_window_winner(x, row * mk.HW + (h & ~1) * mk.W + (w & ~1), mk, &best);
    return win == i && best > 0.0f ? 0.0f + dy[(row * mk.P + (h >> 1)) * mk.Q + (w >> 1)] : 0.0f;
}

/* bn_pool_grad1 of the 8 values of plane row from (h, w) on (row width mk.W): vectorised over
 * four windows where they lie in one row inside the windows from an even column, else value
 * by value. The caller knows h and w: an integer division per 8 values made the fused
 * backward several times slower on PoCL. */
static float8 bn_pool_grad8(__global const float *dy, __global const float *x, const int row, const int h,
                            const int w, const bn_mask mk) {
    const int i = row * mk.HW + h * mk.W + w;
    if ((w & 1) || w + 8 > 2 * mk.Q || h >= 2 * mk.P)
        return (float8)(bn_pool_grad1(dy, x, i, mk), bn_pool_grad1(dy, x, i + 1, mk), bn_pool_grad1(dy, x, i + 2, mk),
                        bn_pool_grad1(dy, x, i + 3, mk), bn_pool_grad1(dy, x, i + 4, mk), bn_pool_grad1(dy, x, i + 5, mk),
                        bn_pool_grad1(dy, x, i + 6, mk), bn_pool_grad1(dy, x, i + 7, mk));
    const int top = row * mk.HW + (h & ~1) * mk.W + w;
    float4 best;
    const int4 win = bn_winners4(bn_relu8(x, top, mk), bn_relu8(x, top + mk.W, mk), &best);
    const float4 d = 0.0f + vload4(0, dy + (row * mk.P + (h >> 1)) * mk.Q + (w >> 1));   /* maxpool_bwd */
    const int4 live = best > 0.0f;
    const int tap = (h & 1) * 2;   /* the taps of this row: tap (even columns), tap + 1 (odd) */
    const float4 ge = select((float4)(0.0f), d, live & (win == tap));
    const float4 go = select((float4)(0.0f), d, live & (win == tap + 1));
    return (float8)(ge.s0, go.s0, ge.s1, go.s1, ge.s2, go.s2, ge.s3, go.s3);
}

/* bn_pool_grad8 of rows h and h + 1 (h even) from column w at once, where both lie inside the
 * windows (w even, w + 8 <= 2Q, h + 1 < 2P): each window's winner is found once for its two
 * rows. The bottom row's values in *bot. */
static float8 bn_pool_grad8x2(__global const float *dy, __global const float *x, const int row, const int h,
                              const int w, const bn_mask mk, float8 *bot) {
    const int top = row * mk.HW + h * mk.W + w;
    float4 best;
    const int4 win = bn_winners4(bn_relu8(x, top, mk), bn_relu8(x, top + mk.W, mk), &best);
    const float4 d = 0.0f + vload4(0, dy + (row * mk.P + (h >> 1)) * mk.Q + (w >> 1));   /* maxpool_bwd */
    const int4 live = best > 0.0f;
    const float4 g0 = select((float4)(0.0f), d, live & (win == 0)), g1 = select((float4)(0.0f), d, live & (win == 1));
    const float4 g2 = select((float4)(0.0f), d, live & (win == 2)), g3 = select((float4)(0.0f), d, live & (win == 3));
    *bot = (float8)(g2.s0, g3.s0, g2.s1, g3.s1, g2.s2, g3.s2, g2.s3, g3.s3);
    return (float8)(g0.s0, g1.s0, g0.s1, g1.s1, g0.s2, g1.s2, g0.s3, g1.s3);
}

/* dy, or relu_bwd's dy masked (8 values, then one); x, y and dy at element i */
static float8 bn_grad8(__global const float *dy, __global const float *y, __global const float *x, const int i,
                       const bn_mask mk) {
    const float8 g = vload8(0, dy + i);
    if (mk.relu == 1) return select((float8)(0.0f), g, vload8(0, y + i) > 0.0f);
    if (mk.relu == 2) return select((float8)(0.0f), g, (vload8(0, x + i) - mk.mu) * mk.scale + mk.shift > 0.0f);
    return g;
}

static float bn_grad1(__global const float *dy, __global const float *y, __global const float *x, const int i,
                      const bn_mask mk) {
    if (mk.relu == 3) return bn_pool_grad1(dy, x, i, mk);
    if (mk.relu == 1) return y[i] > 0.0f ? dy[i] : 0.0f;
    if (mk.relu == 2) return (x[i] - mk.mu) * mk.scale + mk.shift > 0.0f ? dy[i] : 0.0f;
    return dy[i];
}

/* The mask of channel c: gamma and beta are read for relu = 2 and 3 only. */
static bn_mask bn_mask_of(const int relu, const float mu, const float is, __global const float *gamma,
                          __global const float *beta, const int c, const int HW, const int W, const int P,
                          const int Q) {
    bn_mask mk = {relu, mu, 0.0f, 0.0f, HW, W, P, Q};
    if (relu >= 2) {
        mk.scale = is * gamma[c];
        mk.shift = beta[c];
    }
    return mk;
}

/* One work-group per channel: dbeta = sum dy, dgamma = sum dy * xhat.  global (C * ls) */
__kernel void bn_bwd_reduce(__global const float *x, const uint x_off, __global const float *dy, const uint dy_off,
                            __global const float *y, const uint y_off, const int relu,
                            __global const float *gamma, const uint g_off, __global const float *beta,
                            const uint b_off,
                            const int N, const int C, const int HW, const int W, const int P, const int Q,
                            __global const float *mean, const uint mean_off, __global const float *invstd,
                            const uint invstd_off, __global float *dgamma, const uint dg_off,
                            __global float *dbeta, const uint db_off, __local float *scratch) {
    const int c = get_group_id(0);
    const float mu = mean[mean_off + c], is = invstd[invstd_off + c];
    const bn_mask mk = bn_mask_of(relu, mu, is, gamma + g_off, beta + b_off, c, HW, W, P, Q);
    float8 a8 = (float8)(0.0f), b8 = (float8)(0.0f);
    float a1 = 0.0f, b1 = 0.0f;
    for (int n = get_local_id(0); n < N; n += get_local_size(0)) {
        const int base = (n * C + c) * HW;
        int j = 0, h = 0, w = 0;   /* relu = 3: (h, w) of j, stepped without a division */
        for (; j + 8 <= HW; j += 8) {
            const float8 g = relu == 3 ? bn_pool_grad8(dy + dy_off, x + x_off, n * C + c, h, w, mk)
                                       : bn_grad8(dy + dy_off, y + y_off, x + x_off, base + j, mk);
            for (w += 8; relu == 3 && w >= W; w -= W) h++;
            a8 += g;
            b8 += g * ((vload8(0, x + x_off + base + j) - mu) * is);
        }
        for (; j < HW; j++) {
            const float g = bn_grad1(dy + dy_off, y + y_off, x + x_off, base + j, mk);
            a1 += g;
            b1 += g * ((x[x_off + base + j] - mu) * is);
        }
    }
    const float4 ha = a8.lo + a8.hi, hb = b8.lo + b8.hi;
    const float a = ((ha.x + ha.y) + (ha.z + ha.w)) + a1, b = ((hb.x + hb.y) + (hb.z + hb.w)) + b1;
    const float sa = bn_wg_sum(a, scratch);
    const float sb = bn_wg_sum(b, scratch);
    if (get_local_id(0) == 0) {
        dbeta[db_off + c] = sa;
        dgamma[dg_off + c] = sb;
    }
}

/* dx = gamma*invstd * (dy - dbeta/M - xhat * dgamma/M), 8 values per work-item.
 * global (ceil(HW / 8), N*C); relu = 3: (ceil(W / 8), N*C, ceil(H / 2)), 8 values of each of
 * two rows of x (one pair of window rows, so each window's winner is found once) */
__kernel void bn_bwd_data(__global const float *x, const uint x_off, __global const float *dy, const uint dy_off,
                        __global const float *y, const uint y_off, const int relu,
                        __global float *dx, const uint dx_off, const int NC, const int C, const int HW, const int M,
                        __global const float *gamma, const uint g_off, __global const float *mean, const uint mean_off,
                        __global const float *invstd, const uint invstd_off,
                        __global const float *dgamma, const uint dg_off, __global const float *dbeta, const uint db_off,
                        __global const float *beta, const uint b_off, const int W, const int P, const int Q) {
    const int pooled = relu == 3, h = pooled ? 2 * get_global_id(2) : 0;
    const int w0 = get_global_id(0) * 8, row = get_global_id(1), len = pooled ? W : HW;   /* of this run of values */
    if (w0 >= len || row >= NC) return;
    const int c = row % C;
    const float mu = mean[mean_off + c], is = invstd[invstd_off + c];
    const float k = gamma[g_off + c] * is;
    const float a = dbeta[db_off + c] / (float)M, b = dgamma[dg_off + c] / (float)M;
    const bn_mask mk = bn_mask_of(relu, mu, is, gamma + g_off, beta + b_off, c, HW, W, P, Q);
    if (pooled && w0 + 8 <= 2 * Q && h + 1 < 2 * P) {
        const int i = row * HW + h * W + w0;
        float8 gb;
        const float8 gt = bn_pool_grad8x2(dy + dy_off, x + x_off, row, h, w0, mk, &gb);
        const float8 vt = vload8(0, x + x_off + i), vb = vload8(0, x + x_off + i + W);
        vstore8(k * (gt - a - (vt - mu) * is * b), 0, dx + dx_off + i);
        vstore8(k * (gb - a - (vb - mu) * is * b), 0, dx + dx_off + i + W);
        return;
    }
    const int rows = pooled ? min(2, HW / W - h) : 1;   /* the pair's rows in x (one when H is odd) */
    for (int r = h; r < h + rows; r++) {
        const int i = row * HW + r * W + w0;
        if (w0 + 8 <= len) {
            const float8 g = pooled ? bn_pool_grad8(dy + dy_off, x + x_off, row, r, w0, mk)
                                    : bn_grad8(dy + dy_off, y + y_off, x + x_off, i, mk);
            const float8 v = vload8(0, x + x_off + i);
            vstore8(k * (g - a - (v - mu) * is * b), 0, dx + dx_off + i);
            continue;
        }
        for (int j = i; j < i - w0 + len; j++)
            dx[dx_off + j] =
                k * (bn_grad1(dy + dy_off, y + y_off, x + x_off, j, mk) - a - (x[x_off + j] - mu) * is * b);
    }
}

/* Training forward fused with ReLU and the 2x2 max pool: y (N,C,P,Q) = the pool of
 * max((x - mean) * (invstd * gamma) + beta, 0), four windows of one output row per work-item
 * (vectorised where their 8 columns lie inside x); H*W = HW.  global (ceil(Q / 4), N*C*P) */
__kernel void bn_apply_pool(__global const float *x, const uint x_off, __global float *y, const uint y_off,
                            const int NC, const int C, const int HW, const int W, const int P, const int Q,
                            __global const float *mean, const uint mean_off, __global const float *invstd,
                            const uint invstd_off, __global const float *gamma, const uint g_off,
                            __global const float *beta, const uint b_off) {
    const int q0 = get_global_id(0) * 4, rp = get_global_id(1);
    if (q0 >= Q || rp >= NC * P) return;
    const int row = rp / P, p = rp - row * P, c = row % C;
    const bn_mask mk = bn_mask_of(3, mean[mean_off + c], invstd[invstd_off + c], gamma + g_off, beta + b_off, c, HW,
                                  W, P, Q);
    const int first = row * HW + 2 * p * W + 2 * q0;   /* the first window's first element */
    __global float *out = y + y_off + rp * Q + q0;
    if (q0 + 4 <= Q) {
        float4 best;
        bn_winners4(bn_relu8(x + x_off, first, mk), bn_relu8(x + x_off, first + W, mk), &best);
        vstore4(best, 0, out);
        return;
    }
    for (int k = 0; k < Q - q0; k++) {
        float best;
        bn_window_winner(x + x_off, first + 2 * k, mk, &best);
        out[k] = best;
    }
}
