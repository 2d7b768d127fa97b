/*
 * eltwise.c — elementwise ops of the CPU reference backend: ReLU and GELU forward/backward,
 * add, scale, fill and copy.
 *
 * Semantics:
 *   relu_fwd  y = max(x, 0)              torch.nn.functional.relu
 *             https://pytorch.org/docs/stable/generated/torch.nn.functional.relu.html
 *   relu_bwd  dx = dy * (y > 0)          the gradient PyTorch uses (0 at the kink x == 0)
 *   gelu_fwd  y = 0.5 x (1 + erf(x / sqrt 2))          torch.nn.GELU (approximate='none')
 *             https://pytorch.org/docs/stable/generated/torch.nn.GELU.html
 *   silu_fwd  y = x / (1 + exp(-x))                     torch.nn.SiLU
 *   silu_bwd  dx = dy s (1 + x (1 - s)), s = 1 / (1 + exp(-x))
 *   gelu_bwd  dx = dy (Phi(x) + x phi(x)), Phi(x) = 0.5 (1 + erf(x / sqrt 2)),
 *             phi(x) = exp(-x^2 / 2) / sqrt(2 pi)      (ATen's GeluBackward, approximate='none')
 *   add       y = a + b                  torch.add
 *   scale     y = alpha * x              torch.mul by a scalar
 *   fill      y = value                  torch.Tensor.fill_
 *   copy      y = x (any dtype)          torch.Tensor.copy_
 *
 * Layout: any shape; every tensor is dense, so each op is one flat loop over numel
 * elements. Aliasing: relu_fwd and gelu_fwd (y = x), relu_bwd and gelu_bwd (dx = dy), add
 * (y = a or b) and scale (y = x) may run in place (ops.h); each element is read before it is written at the same
 * index, so the loops are correct in place. NaN: relu_fwd maps NaN to NaN (PyTorch
 * propagates it), so a diverging run still shows up as NaN downstream.
 */
#include <math.h>
#include <string.h>

#include "backends/cpu/cpu_internal.h"

dbk_status dbk_cpu_relu_fwd(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const int64_t n = dbk_tensor_numel(&op->src[0]);
    const float *x = dbk_cpu_f32(&op->src[0]);   /* (any) */
    float *y = dbk_cpu_f32(&op->dst[0]);         /* (same), may alias x */
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) y[i] = x[i] < 0.0f ? 0.0f : x[i];
    return DBK_OK;
}

/* Leaky ReLU, torch.nn.LeakyReLU: y = x > 0 ? x : slope * x; its gradient through the
 * output (slope > 0: y > 0 exactly where x > 0), dx = y > 0 ? dy : slope * dy. */
dbk_status dbk_cpu_leaky_relu_fwd(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const int64_t n = dbk_tensor_numel(&op->src[0]);
    const float *x = dbk_cpu_f32(&op->src[0]);   /* (any) */
    float *y = dbk_cpu_f32(&op->dst[0]);         /* (same), may alias x */
    const float slope = op->p.leaky.slope;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : slope * x[i];
    return DBK_OK;
}

dbk_status dbk_cpu_leaky_relu_bwd(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const int64_t n = dbk_tensor_numel(&op->src[0]);
    const float *y = dbk_cpu_f32(&op->src[0]);   /* (any) forward output */
    const float *dy = dbk_cpu_f32(&op->src[1]);  /* (same) */
    float *dx = dbk_cpu_f32(&op->dst[0]);        /* (same), may alias dy */
    const float slope = op->p.leaky.slope;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        const float g = dy[i];
        dx[i] = y[i] > 0.0f ? g : slope * g;
    }
    return DBK_OK;
}

dbk_status dbk_cpu_relu_bwd(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const int64_t n = dbk_tensor_numel(&op->src[0]);
    const float *y = dbk_cpu_f32(&op->src[0]);   /* (any) forward output */
    const float *dy = dbk_cpu_f32(&op->src[1]);  /* (same) */
    float *dx = dbk_cpu_f32(&op->dst[0]);        /* (same), may alias dy */
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        const float g = dy[i];   /* loaded unconditionally, so the loop vectorises */
        dx[i] = y[i] > 0.0f ? g : 0.0f;
    }
    return DBK_OK;
}

/* GELU in fp32 with the C library's erff, written as PyTorch's CPU kernel writes it (the
 * 1 + erf form, not erfc): for x below about -5 both lose the tiny result to cancellation
 * in the same way. */
#define GELU_SQRT1_2      0.70710678118654752f   /* 1 / sqrt(2) */
#define GELU_INV_SQRT_2PI 0.39894228040143268f   /* 1 / sqrt(2 pi) */

dbk_status dbk_cpu_gelu_fwd(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const int64_t n = dbk_tensor_numel(&op->src[0]);
    const float *x = dbk_cpu_f32(&op->src[0]);   /* (any) */
    float *y = dbk_cpu_f32(&op->dst[0]);         /* (same), may alias x */
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        y[i] = 0.5f * v * (1.0f + erff(v * GELU_SQRT1_2));
    }
    return DBK_OK;
}

dbk_status dbk_cpu_gelu_bwd(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const int64_t n = dbk_tensor_numel(&op->src[0]);
    const float *x = dbk_cpu_f32(&op->src[0]);   /* (any) forward input */
    const float *dy = dbk_cpu_f32(&op->src[1]);  /* (same) */
    float *dx = dbk_cpu_f32(&op->dst[0]);        /* (same), may alias dy */
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        const float cdf = 0.5f * (1.0f + erff(v * GELU_SQRT1_2));
        const float pdf = expf(-0.5f * v * v) * GELU_INV_SQRT_2PI;
        dx[i] = dy[i] * (cdf + v * pdf);
    }
    return DBK_OK;
}

/* SiLU as PyTorch's CPU kernel: x / (1 + exp(-x)); its backward dy * s * (1 + x * (1 - s)). */
dbk_status dbk_cpu_silu_fwd(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const int64_t n = dbk_tensor_numel(&op->src[0]);
    const float *x = dbk_cpu_f32(&op->src[0]);   /* (any) */
    float *y = dbk_cpu_f32(&op->dst[0]);         /* (same), may alias x */
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) y[i] = x[i] / (1.0f + expf(-x[i]));
    return DBK_OK;
}

dbk_status dbk_cpu_silu_bwd(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const int64_t n = dbk_tensor_numel(&op->src[0]);
    const float *x = dbk_cpu_f32(&op->src[0]);   /* (any) forward input */
    const float *dy = dbk_cpu_f32(&op->src[1]);  /* (same) */
    float *dx = dbk_cpu_f32(&op->dst[0]);        /* (same), may alias dy */
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        const float s = 1.0f / (1.0f + expf(-x[i]));
        dx[i] = dy[i] * s * (1.0f + x[i] * (1.0f - s));
    }
    return DBK_OK;
}

dbk_status dbk_cpu_add(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const int64_t n = dbk_tensor_numel(&op->src[0]);
    const float *a = dbk_cpu_f32(&op->src[0]);   /* (any) */
    const float *b = dbk_cpu_f32(&op->src[1]);   /* (same) */
    float *y = dbk_cpu_f32(&op->dst[0]);         /* (same), may alias a or b */
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) y[i] = a[i] + b[i];
    return DBK_OK;
}

dbk_status dbk_cpu_scale(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const int64_t n = dbk_tensor_numel(&op->src[0]);
    const float alpha = op->p.scale.alpha;
    const float *x = dbk_cpu_f32(&op->src[0]);   /* (any) */
    float *y = dbk_cpu_f32(&op->dst[0]);         /* (same), may alias x */
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) y[i] = alpha * x[i];
    return DBK_OK;
}

dbk_status dbk_cpu_fill(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const int64_t n = dbk_tensor_numel(&op->dst[0]);
    const float value = op->p.fill.value;
    float *y = dbk_cpu_f32(&op->dst[0]);         /* (any) */
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) y[i] = value;
    return DBK_OK;
}

dbk_status dbk_cpu_copy(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    /* Same dtype and element count (validated), so a byte copy is exact. memmove keeps a
     * copy of a tensor onto itself (or an overlapping view) well defined. */
    memmove(dbk_cpu_ptr(&op->dst[0]), dbk_cpu_ptr(&op->src[0]), dbk_tensor_nbytes(&op->src[0]));
    return DBK_OK;
}
