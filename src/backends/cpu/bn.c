/*
 * bn.c — 2-D batch normalisation for the CPU reference backend: training forward (batch
 * statistics), inference forward (running statistics) and backward.
 *
 * Semantics: torch.nn.BatchNorm2d, https://pytorch.org/docs/stable/generated/torch.nn.BatchNorm2d.html
 *   training:  mean_c = E[x], var_c = E[(x - mean_c)^2] over the M = N*H*W values of channel c
 *              (biased, used to normalise); y = (x - mean_c) * invstd_c * gamma_c + beta_c with
 *              invstd_c = 1 / sqrt(var_c + eps);
 *              running_mean = (1 - momentum) * running_mean + momentum * mean_c
 *              running_var  = (1 - momentum) * running_var  + momentum * var_c * M / (M - 1)
 *              (the unbiased variance, as PyTorch). With M == 1 PyTorch refuses to train; we
 *              use the biased variance (0) there rather than divide by zero.
 *   inference: y = (x - running_mean) / sqrt(running_var + eps) * gamma + beta.
 *   backward (xhat = (x - mean) * invstd, the saved statistics of the forward):
 *              dbeta_c  = sum dy
 *              dgamma_c = sum dy * xhat
 *              dx       = gamma_c * invstd_c * (dy - dbeta_c / M - xhat * dgamma_c / M)
 *   fused with ReLU (docs/fusion.md): batchnorm_relu_fwd_train is the training forward then
 *              y = max(y, 0); batchnorm_relu_bwd is the backward with dy read as
 *              dy * (y > 0) (relu_bwd), y the fused forward's output. The reference is
 *              literally that composition.
 *   fused with ReLU and the residual add: batchnorm_relu_add_fwd_train is the fused forward,
 *              then y = y + skip (add); batchnorm_relu_add_bwd is batchnorm_relu_bwd with
 *              y > 0 recomputed as (x - mean) * (invstd * gamma) + beta > 0 from the saved
 *              statistics: the forward's own float arithmetic (scale = invstd * gamma in float,
 *              as the device kernels), so the mask is exactly the forward's.
 *              batchnorm_add_relu_fwd_train (ResNet-18/50, ReLU after the add) is the training
 *              forward, then y = skip + y, then y = max(y, 0).
 *   fused with ReLU and the 2x2 max pool that follows: batchnorm_relu_pool_fwd_train writes
 *              maxpool_fwd (2x2, stride 2) of the fused forward's output, without the
 *              full-size output or an argmax; batchnorm_relu_pool_bwd is maxpool_bwd, relu_bwd
 *              and the backward in one, each window's winner found again from
 *              max(bn(x), 0) recomputed as above (first maximum in row-major order, the
 *              first NaN over numbers, as maxpool_fwd), dy reaching it as maxpool_bwd's
 *              0 + dy where its value is > 0 (relu_bwd), 0 elsewhere.
 *
 * Layout: x, y, dy, dx (N,C,H,W); every per-channel vector (C). A channel's values are N
 * planes of H*W contiguous floats, one plane per image.
 *
 * Sums run in double: a channel of a batch-512 32x32 layer has 524,288 values, enough for
 * fp32 accumulation to lose digits. Mean and variance use two passes over the channel
 * (mean first, then squared deviations), which is exact enough without tricks. Channels
 * are independent, so every op is an OpenMP loop over c.
 */
#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "backends/cpu/cpu_internal.h"
#include "core/alloc.h"

static int omp_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

static int omp_thread(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

/* Per-op shape of an NCHW tensor as (N, C, H*W). */
static void nchw(const dbk_tensor *t, int64_t *n, int64_t *c, int64_t *hw) {
    *n = t->shape[0];
    *c = t->shape[1];
    *hw = t->shape[2] * t->shape[3];
}

/* ---------------------------------------------------------------------------------- */
/* double sums over one (image, channel) plane                                         */

/* Each sum keeps four partial sums (j mod 4) and adds them at the end. One chain of
 * dependent double additions runs at the adder's latency; four chains ran twice as fast
 * (batchnorm_fwd_train 24 -> 12 ms on 8.4M values, 2 cores). The order is fixed, so the
 * result is still deterministic. */

/* sum_j x[j] */
static double plane_sum(const float *x, int64_t n) {
    double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
        a0 += (double)x[j];
        a1 += (double)x[j + 1];
        a2 += (double)x[j + 2];
        a3 += (double)x[j + 3];
    }
    for (; j < n; j++) a0 += (double)x[j];
    return (a0 + a1) + (a2 + a3);
}

/* sum_j (x[j] - mean)^2 */
static double plane_sum_sq_dev(const float *x, int64_t n, double mean) {
    double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
        const double d0 = (double)x[j] - mean, d1 = (double)x[j + 1] - mean;
        const double d2 = (double)x[j + 2] - mean, d3 = (double)x[j + 3] - mean;
        a0 += d0 * d0;
        a1 += d1 * d1;
        a2 += d2 * d2;
        a3 += d3 * d3;
    }
    for (; j < n; j++) {
        const double d = (double)x[j] - mean;
        a0 += d * d;
    }
    return (a0 + a1) + (a2 + a3);
}

/* The ReLU mask of a fused backward, over one plane: none, the fused forward's output
 * (y > 0), or the pre-activation recomputed from x (bn(x) > 0; the fused residual add). */
typedef struct relu_mask {
    const float *y;              /* (H*W) the fused forward's output, or NULL */
    bool         from_x;         /* recompute (x - mu) * scale + shift > 0 */
    float        mu, scale, shift;
    int64_t      pool_w;         /* > 0: the fused 2x2 max pool follows; x's width W */
    int64_t      pool_p, pool_q; /* dy's height and width (H/2, W/2) */
} relu_mask;

/* max(bn(x[t]), 0) as the fused forward computes it (relu_fwd: NaN kept) */
static float relu_bn_at(const float *x, float mu, float scale, float shift, int64_t t) {
    const float v = (x[t] - mu) * scale + shift;
    return v < 0.0f ? 0.0f : v;
}

/* maxpool_fwd's winner of the 2x2 window whose first element is x[first] (row width W), its
 * value in *best: the first maximum in row-major order, the first NaN over numbers. */
static int64_t window_winner(const float *x, float mu, float scale, float shift, int64_t first, int64_t W,
                             float *best) {
    int64_t win = first;
    *best = -INFINITY;
    for (int64_t r = 0; r < 2; r++) {
        for (int64_t s = 0; s < 2; s++) {
            const int64_t t = first + r * W + s;
            const float v = relu_bn_at(x, mu, scale, shift, t);
            if (v > *best || (v != v && *best == *best)) {
                *best = v;
                win = t;
            }
        }
    }
    return win;
}

/* The full-size gradient plane g (H, W) that the pooled plane dy sends back through the
 * 2x2 max pool and ReLU (0 + dy at each window's winner where its value is > 0, 0 elsewhere,
 * rows and columns outside every window included), one pass over the windows (each winner
 * found once, not once per value). */
static void route_pooled_plane(const float *dy, const float *x, const relu_mask *mk, int64_t hw, float *g) {
    const int64_t W = mk->pool_w, P = mk->pool_p, Q = mk->pool_q;
    for (int64_t j = 0; j < hw; j++) g[j] = 0.0f;
    for (int64_t p = 0; p < P; p++)
        for (int64_t q = 0; q < Q; q++) {
            float best;
            const int64_t win = window_winner(x, mk->mu, mk->scale, mk->shift, 2 * p * W + 2 * q, W, &best);
            if (best > 0.0f) g[win] = 0.0f + dy[p * Q + q];
        }
}

/* dy[j], or relu_bwd's dy[j] * (pre-activation > 0) under a mask. */
static float grad_at(const float *dy, const float *x, const relu_mask *mk, int64_t j) {
    if (mk->y) return mk->y[j] > 0.0f ? dy[j] : 0.0f;
    if (mk->from_x) return (x[j] - mk->mu) * mk->scale + mk->shift > 0.0f ? dy[j] : 0.0f;
    return dy[j];
}

/* *sum_dy += sum_j dy[j];  *sum_dy_xhat += sum_j dy[j] * xhat[j], xhat = (x - mu) * is in
 * float exactly as the forward normalises. */
static void plane_sums_bwd(const float *x, const float *dy, const relu_mask *mk, int64_t n, float mu, float is,
                           double *sum_dy, double *sum_dy_xhat) {
    double a[4] = {0.0, 0.0, 0.0, 0.0}, b[4] = {0.0, 0.0, 0.0, 0.0};
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
        for (int l = 0; l < 4; l++) {
            const float g = grad_at(dy, x, mk, j + l);
            a[l] += (double)g;
            b[l] += (double)g * (double)((x[j + l] - mu) * is);
        }
    }
    for (; j < n; j++) {
        const float g = grad_at(dy, x, mk, j);
        a[0] += (double)g;
        b[0] += (double)g * (double)((x[j] - mu) * is);
    }
    *sum_dy += (a[0] + a[1]) + (a[2] + a[3]);
    *sum_dy_xhat += (b[0] + b[1]) + (b[2] + b[3]);
}

/* ---------------------------------------------------------------------------------- */

/* y (P, Q) = the 2x2 max pool of max(bn(x), 0), x one (H, W) plane */
static void relu_pool_plane(const float *x, float *y, int64_t W, int64_t P, int64_t Q, float mu, float scale,
                            float shift) {
    for (int64_t p = 0; p < P; p++)
        for (int64_t q = 0; q < Q; q++) window_winner(x, mu, scale, shift, 2 * p * W + 2 * q, W, &y[p * Q + q]);
}

/* The training forward; pool: fused with ReLU and the 2x2 max pool (y is then pooled). */
static dbk_status bn_fwd_train(const dbk_op_desc *op, bool pool) {
    int64_t n, C, hw;
    nchw(&op->src[0], &n, &C, &hw);
    const float *x = dbk_cpu_f32(&op->src[0]);       /* (N, C, H, W) */
    const float *gamma = dbk_cpu_f32(&op->src[1]);   /* (C) */
    const float *beta = dbk_cpu_f32(&op->src[2]);    /* (C) */
    float *y = dbk_cpu_f32(&op->dst[0]);             /* (N, C, H, W), pooled (N, C, H/2, W/2) */
    float *mean_out = dbk_cpu_f32(&op->dst[1]);      /* (C) saved for backward */
    float *invstd_out = dbk_cpu_f32(&op->dst[2]);    /* (C) saved for backward */
    float *run_mean = dbk_cpu_f32(&op->dst[3]);      /* (C) in place */
    float *run_var = dbk_cpu_f32(&op->dst[4]);       /* (C) in place */
    const double eps = (double)op->p.bn.eps, mom = (double)op->p.bn.momentum;
    const int64_t m = n * hw;
    if (m == 0) return DBK_OK;   /* no values: statistics are undefined, leave everything */

#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < C; c++) {
        double sum = 0.0;
        for (int64_t i = 0; i < n; i++) sum += plane_sum(x + (i * C + c) * hw, hw);
        const double mean = sum / (double)m;
        double ss = 0.0;
        for (int64_t i = 0; i < n; i++) ss += plane_sum_sq_dev(x + (i * C + c) * hw, hw, mean);
        const double var = ss / (double)m;
        const double invstd = 1.0 / sqrt(var + eps);

        /* y = (x - mean) * (invstd * gamma) + beta, in float like the device kernels (the scale
         * too: the fused residual add's backward recomputes these values from the saved
         * mean and invstd, and must get the same bits). */
        const float mean_f = (float)mean, scale = (float)invstd * gamma[c], shift = beta[c];
        for (int64_t i = 0; i < n; i++) {
            const float *xp = x + (i * C + c) * hw;
            if (pool) {
                const int64_t W = op->src[0].shape[3], P = op->dst[0].shape[2], Q = op->dst[0].shape[3];
                relu_pool_plane(xp, y + (i * C + c) * P * Q, W, P, Q, mean_f, scale, shift);
                continue;
            }
            float *yp = y + (i * C + c) * hw;
            for (int64_t j = 0; j < hw; j++) yp[j] = (xp[j] - mean_f) * scale + shift;
        }

        mean_out[c] = mean_f;
        invstd_out[c] = (float)invstd;
        const double unbiased = m > 1 ? ss / (double)(m - 1) : var;
        run_mean[c] = (float)((1.0 - mom) * (double)run_mean[c] + mom * mean);
        run_var[c] = (float)((1.0 - mom) * (double)run_var[c] + mom * unbiased);
    }
    return DBK_OK;
}

dbk_status dbk_cpu_batchnorm_fwd_train(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    return bn_fwd_train(op, false);
}

dbk_status dbk_cpu_batchnorm_fwd_infer(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    int64_t n, C, hw;
    nchw(&op->src[0], &n, &C, &hw);
    const float *x = dbk_cpu_f32(&op->src[0]);         /* (N, C, H, W) */
    const float *gamma = dbk_cpu_f32(&op->src[1]);     /* (C) */
    const float *beta = dbk_cpu_f32(&op->src[2]);      /* (C) */
    const float *run_mean = dbk_cpu_f32(&op->src[3]);  /* (C) */
    const float *run_var = dbk_cpu_f32(&op->src[4]);   /* (C) */
    float *y = dbk_cpu_f32(&op->dst[0]);               /* (N, C, H, W) */
    const double eps = (double)op->p.bn.eps;

#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < C; c++) {
        const float mean = run_mean[c];
        const float scale = (float)((double)gamma[c] / sqrt((double)run_var[c] + eps)), shift = beta[c];
        for (int64_t i = 0; i < n; i++) {
            const float *xp = x + (i * C + c) * hw;
            float *yp = y + (i * C + c) * hw;
            for (int64_t j = 0; j < hw; j++) yp[j] = (xp[j] - mean) * scale + shift;
        }
    }
    return DBK_OK;
}

/* The backward of batch norm. ReLU's mask: y (N,C,H,W) the fused forward's output, or beta
 * (C) to recompute it from x (the fused residual add; with pool, the fused 2x2 max pool
 * too: dy is then pooled), or neither. */
static dbk_status bn_bwd(const dbk_op_desc *op, const float *y, const float *beta, bool pool) {
    int64_t n, C, hw;
    nchw(&op->src[0], &n, &C, &hw);
    const float *x = dbk_cpu_f32(&op->src[0]);        /* (N, C, H, W) */
    const float *dy = dbk_cpu_f32(&op->src[1]);       /* (N, C, H, W), pooled (N, C, H/2, W/2) */
    const float *gamma = dbk_cpu_f32(&op->src[2]);    /* (C) */
    const float *mean = dbk_cpu_f32(&op->src[3]);     /* (C) from FWD_TRAIN */
    const float *invstd = dbk_cpu_f32(&op->src[4]);   /* (C) from FWD_TRAIN */
    float *dx = dbk_cpu_f32(&op->dst[0]);             /* (N, C, H, W) */
    float *dgamma = dbk_cpu_f32(&op->dst[1]);         /* (C) */
    float *dbeta = dbk_cpu_f32(&op->dst[2]);          /* (C) */
    const int64_t m = n * hw;
    const int64_t dy_hw = pool ? op->src[1].shape[2] * op->src[1].shape[3] : hw;   /* a dy plane */
    /* pool: one routed gradient plane per thread (route_pooled_plane) */
    float *routed = NULL;
    if (pool && !(routed = dbk_malloc((size_t)omp_threads() * (size_t)hw * sizeof(float)))) return DBK_ERR_OUT_OF_HOST_MEMORY;

#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < C; c++) {
        const float mu = mean[c], is = invstd[c];
        relu_mask mk = {.from_x = beta != NULL, .mu = mu, .scale = is * gamma[c], .shift = beta ? beta[c] : 0.0f};
        if (pool) {
            mk.pool_w = op->src[0].shape[3];
            mk.pool_p = op->src[1].shape[2];
            mk.pool_q = op->src[1].shape[3];
        }
        const relu_mask none = {0};   /* a routed plane is the gradient itself */
        float *g = pool ? routed + (size_t)omp_thread() * (size_t)hw : NULL;
        double sum_dy = 0.0, sum_dy_xhat = 0.0;
        for (int64_t i = 0; i < n; i++) {
            const int64_t p = (i * C + c) * hw;
            mk.y = y ? y + p : NULL;
            const float *dyp = dy + (i * C + c) * dy_hw;
            if (pool) route_pooled_plane(dyp, x + p, &mk, hw, g);
            plane_sums_bwd(x + p, pool ? g : dyp, pool ? &none : &mk, hw, mu, is, &sum_dy, &sum_dy_xhat);
        }
        dbeta[c] = (float)sum_dy;
        dgamma[c] = (float)sum_dy_xhat;
        if (m == 0) continue;

        /* dx = k * (dy - a - xhat * b), with k = gamma*invstd, a = mean(dy), b = mean(dy*xhat). */
        const float k = gamma[c] * is;
        const float a = (float)(sum_dy / (double)m), b = (float)(sum_dy_xhat / (double)m);
        for (int64_t i = 0; i < n; i++) {
            const int64_t p = (i * C + c) * hw;
            mk.y = y ? y + p : NULL;
            const float *dyp = dy + (i * C + c) * dy_hw;
            if (pool) route_pooled_plane(dyp, x + p, &mk, hw, g);
            for (int64_t j = 0; j < hw; j++)
                dx[p + j] = k * (grad_at(pool ? g : dyp, x + p, pool ? &none : &mk, j) - a - (x[p + j] - mu) * is * b);
        }
    }
    dbk_free(routed);
    return DBK_OK;
}

dbk_status dbk_cpu_batchnorm_bwd(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    return bn_bwd(op, NULL, NULL, false);
}

/* y = max(y, 0) in place, y the op's dst0 */
static dbk_status relu_in_place(dbk_backend *be, const dbk_op_desc *op) {
    dbk_op_desc relu = {.op = DBK_OP_RELU_FWD};
    relu.src[0] = op->dst[0];
    relu.dst[0] = op->dst[0];
    return dbk_cpu_relu_fwd(be, &relu);
}

/* y = skip + y in place, skip the op's src3: the residual add's operand order (the sum is
 * the same either way) */
static dbk_status add_skip(dbk_backend *be, const dbk_op_desc *op) {
    dbk_op_desc add = {.op = DBK_OP_ADD};
    add.src[0] = op->src[3];
    add.src[1] = op->dst[0];
    add.dst[0] = op->dst[0];
    return dbk_cpu_add(be, &add);
}

dbk_status dbk_cpu_batchnorm_relu_fwd_train(dbk_backend *be, const dbk_op_desc *op) {
    DBK_TRY(dbk_cpu_batchnorm_fwd_train(be, op));
    return relu_in_place(be, op);
}

dbk_status dbk_cpu_batchnorm_relu_bwd(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    return bn_bwd(op, dbk_cpu_f32(&op->src[5]), NULL, false);
}

dbk_status dbk_cpu_batchnorm_relu_add_fwd_train(dbk_backend *be, const dbk_op_desc *op) {
    DBK_TRY(dbk_cpu_batchnorm_relu_fwd_train(be, op));
    return add_skip(be, op);
}

dbk_status dbk_cpu_batchnorm_add_relu_fwd_train(dbk_backend *be, const dbk_op_desc *op) {
    DBK_TRY(dbk_cpu_batchnorm_fwd_train(be, op));
    DBK_TRY(add_skip(be, op));
    return relu_in_place(be, op);
}

dbk_status dbk_cpu_batchnorm_relu_add_bwd(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    return bn_bwd(op, NULL, dbk_cpu_f32(&op->src[5]), false);
}

dbk_status dbk_cpu_batchnorm_relu_pool_fwd_train(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    return bn_fwd_train(op, true);
}

dbk_status dbk_cpu_batchnorm_relu_pool_bwd(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    return bn_bwd(op, NULL, dbk_cpu_f32(&op->src[5]), true);
}
