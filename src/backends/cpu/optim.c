/*
 * optim.c — SGD with momentum, weight decay and optional Nesterov, and the lookahead (EMA)
 * sync, for the CPU reference backend, over the flat parameter, gradient, momentum and EMA
 * buffers.
 *
 * Semantics: torch.optim.SGD with dampening 0,
 * https://pytorch.org/docs/stable/generated/torch.optim.SGD.html
 *   g    = grad + wd * p
 *   v    = mu * v + g              (PyTorch's first step sets v = g; with v zero-initialised,
 *                                   mu * 0 + g is the same value)
 *   step = nesterov ? g + mu * v : v
 *   p    = p - lr * step
 *
 * Layout: grad, params, momentum are (n) flat f32 arrays of the same length; lr is a single
 * f32 in device memory (src1) that the host rewrites each step, so a recorded step can be
 * replayed with a new learning rate; a second f32 there is the step's momentum (a cycled
 * momentum, fastai's), used instead of params.momentum. Weight decay applies to every element (the model puts
 * only parameters that should decay into this buffer, or uses wd = 0).
 *
 * Lookahead: airbench94's LookaheadState.update (KellerJordan/cifar10-airbench,
 * legacy/airbench94.py): ema_param.lerp_(net_param, 1 - decay); net_param.copy_(ema_param),
 * with torch.lerp, https://pytorch.org/docs/stable/generated/torch.lerp.html, evaluated as
 * ATen does (Lerp.h), two branches so that w = 0 and w = 1 give ema and params exactly:
 *   ema = |w| < 0.5 ? ema + w * (params - ema) : params - (params - ema) * (1 - w)
 * w = 1 - decay is formed in fp32 as Python's `1-decay` becomes torch's fp32 weight; decay is
 * a single f32 in device memory (src0) that the host rewrites before each update.
 *
 * AdamW: torch.optim.AdamW with amsgrad off (its single-tensor path, _single_tensor_adam),
 * https://pytorch.org/docs/stable/generated/torch.optim.AdamW.html, in fp32 in this order:
 *   p  = p * (1 - lr * wd)                   param.mul_(1 - lr * weight_decay)
 *   m  = m + (1 - beta1) * (g - m)           exp_avg.lerp_(grad, 1 - beta1)
 *   v  = beta2 * v + (1 - beta2) * g * g     exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1 - beta2)
 *   p  = p - step_size * m / (sqrt(v) / bc2_sqrt + eps)
 * step_size = lr / (1 - beta1^t) and bc2_sqrt = sqrt(1 - beta2^t) depend on the 1-based step t
 * only: the host computes them in double and writes {lr, step_size, bc2_sqrt} (src1) before
 * each step, as PyTorch computes them in Python floats; a 4th value is the step's beta1 (a
 * cycled beta1, fastai's), used instead of params.beta1. m and v start at zero.
 *
 * Sparse masks (docs/sparse-masks.md): with the optional mask (src2), an element whose mask
 * is 0 is skipped entirely: its parameter, momentum (AdamW: both moments) stay bit for bit as
 * they were, so no weight decay, no momentum step and no moment decay reach it.
 *
 * Fisher accumulation: acc += |g| or g * g (FISH's grad_method on each single-image gradient).
 *
 * Elements are independent: one OpenMP loop per op, the buffers updated in place.
 */
#include <math.h>

#include "backends/cpu/cpu_internal.h"

dbk_status dbk_cpu_sgd_momentum_update(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const int64_t n = dbk_tensor_numel(&op->src[0]);
    const float *grad = dbk_cpu_f32(&op->src[0]);   /* (n) */
    const float *rate = dbk_cpu_f32(&op->src[1]);  /* (1) {lr} or (2) {lr, momentum} */
    float *param = dbk_cpu_f32(&op->dst[0]);        /* (n) in place */
    float *mom = dbk_cpu_f32(&op->dst[1]);          /* (n) in place */
    if (op->src[3].ndim && dbk_cpu_f32(&op->src[3])[0] != 0.0f) return DBK_OK;   /* skip (1): a skipped step */
    const float *mask = op->src[2].ndim ? dbk_cpu_f32(&op->src[2]) : NULL;   /* (n) or absent */
    const float lr = rate[0], wd = op->p.sgd.weight_decay;
    const float mu = dbk_tensor_numel(&op->src[1]) == 2 ? rate[1] : op->p.sgd.momentum;
    const bool nesterov = op->p.sgd.nesterov;

#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        if (mask && mask[i] == 0.0f) continue;
        const float g = grad[i] + wd * param[i];
        const float v = mu * mom[i] + g;
        const float step = nesterov ? g + mu * v : v;
        mom[i] = v;
        param[i] -= lr * step;
    }
    return DBK_OK;
}

dbk_status dbk_cpu_adamw_update(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const int64_t n = dbk_tensor_numel(&op->src[0]);
    const float *grad = dbk_cpu_f32(&op->src[0]);   /* (n) */
    const float *step = dbk_cpu_f32(&op->src[1]);   /* (3) {lr, step_size, bc2_sqrt} or (4) and beta1 */
    float *param = dbk_cpu_f32(&op->dst[0]);        /* (n) in place */
    float *m = dbk_cpu_f32(&op->dst[1]);            /* (n) in place */
    float *v = dbk_cpu_f32(&op->dst[2]);            /* (n) in place */
    if (op->src[3].ndim && dbk_cpu_f32(&op->src[3])[0] != 0.0f) return DBK_OK;   /* skip (1): a skipped step */
    const float *mask = op->src[2].ndim ? dbk_cpu_f32(&op->src[2]) : NULL;   /* (n) or absent */
    const dbk_adamw_params *a = &op->p.adamw;
    const float decay = 1.0f - step[0] * a->weight_decay, step_size = step[1], bc2_sqrt = step[2];
    const float w1 = 1.0f - (dbk_tensor_numel(&op->src[1]) == 4 ? step[3] : a->beta1), w2 = 1.0f - a->beta2;

#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        if (mask && mask[i] == 0.0f) continue;
        const float g = grad[i];
        const float mi = m[i] + w1 * (g - m[i]);
        const float vi = a->beta2 * v[i] + w2 * g * g;
        const float denom = sqrtf(vi) / bc2_sqrt + a->eps;
        m[i] = mi;
        v[i] = vi;
        param[i] = param[i] * decay - step_size * mi / denom;
    }
    return DBK_OK;
}

/* Muon (airbench94_muon.py Muon.step; cifar10-speedrun's batched Muon): the momentum buffer and
 * the step's nesterov direction, buf.mul_(momentum).add_(g); g.add(buf, alpha=momentum). */
dbk_status dbk_cpu_muon_momentum(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const int64_t n = dbk_tensor_numel(&op->src[0]);
    const float *g = dbk_cpu_f32(&op->src[0]);   /* (n) */
    float *v = dbk_cpu_f32(&op->dst[0]);         /* (n) in place */
    float *u = dbk_cpu_f32(&op->dst[1]);         /* (n) */
    const float mu = op->p.muon_momentum.momentum;
    const bool nesterov = op->p.muon_momentum.nesterov != 0.0f;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        const float vi = mu * v[i] + g[i];
        v[i] = vi;
        u[i] = nesterov ? g[i] + mu * vi : vi;
    }
    return DBK_OK;
}

/* y = x * (g > 0 ? alpha g / (||x|| + eps) : 1): the norm summed in double (the reference's
 * exact value; the devices sum fp32 partial sums in a fixed tree), the scale formed in fp32. */
dbk_status dbk_cpu_norm_scale(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const int64_t n = dbk_tensor_numel(&op->src[0]);
    const float *x = dbk_cpu_f32(&op->src[0]);   /* (n) */
    const float g = *dbk_cpu_f32(&op->src[1]);   /* (1) */
    float *y = dbk_cpu_f32(&op->dst[0]);         /* (n), may alias x */
    float scale = 1.0f;
    if (g > 0.0f) {
        double ss = 0.0;
        for (int64_t i = 0; i < n; i++) ss += (double)x[i] * (double)x[i];
        scale = op->p.norm_scale.alpha * g / ((float)sqrt(ss) + op->p.norm_scale.eps);
    }
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) y[i] = x[i] * scale;
    return DBK_OK;
}

/* p.add_(update, alpha=-lr), then speedrun's p.mul_(1 - lr * weight_decay). */
dbk_status dbk_cpu_muon_update(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const int64_t n = dbk_tensor_numel(&op->src[0]);
    const float *x = dbk_cpu_f32(&op->src[0]);   /* (n) */
    const float lr = *dbk_cpu_f32(&op->src[1]);  /* (1) */
    float *p = dbk_cpu_f32(&op->dst[0]);         /* (n) in place */
    const float decay = 1.0f - lr * op->p.muon_update.weight_decay;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) p[i] = (p[i] - lr * x[i]) * decay;
    return DBK_OK;
}

dbk_status dbk_cpu_lookahead(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const int64_t n = dbk_tensor_numel(&op->dst[0]);
    const float decay = *dbk_cpu_f32(&op->src[0]);  /* (1) */
    float *ema = dbk_cpu_f32(&op->dst[0]);          /* (n) in place */
    float *param = dbk_cpu_f32(&op->dst[1]);        /* (n) in place */
    const float w = 1.0f - decay;
    const bool small = fabsf(w) < 0.5f;

#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        const float e = ema[i], p = param[i];
        const float v = small ? e + w * (p - e) : p - (p - e) * (1.0f - w);
        ema[i] = v;
        param[i] = v;
    }
    return DBK_OK;
}

dbk_status dbk_cpu_fisher_accumulate(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const int64_t n = dbk_tensor_numel(&op->dst[0]);
    const float *g = dbk_cpu_f32(&op->src[0]);      /* (n) */
    float *acc = dbk_cpu_f32(&op->dst[0]);          /* (n) in place */
    const bool absolute = op->p.fisher.absolute != 0.0f;

#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        const float term = absolute ? fabsf(g[i]) : g[i] * g[i];   /* rounded before the add */
        acc[i] += term;
    }
    return DBK_OK;
}
