/*
 * eltwise.c — elementwise ops of the CPU reference backend: ReLU forward/backward, add, scale,
 * fill and copy.
 *
 * Semantics:
 *   relu_fwd  y = max(x, 0)              torch.nn.functional.relu
 *             https://pytorch.org/docs/stable/generated/torch.nn.functional.relu.html
 *   relu_bwd  dx = dy * (y > 0)          the gradient PyTorch uses (0 at the kink x == 0)
 *   add       y = a + b                  torch.add
 *   scale     y = alpha * x              torch.mul by a scalar
 *   fill      y = value                  torch.Tensor.fill_
 *   copy      y = x (any dtype)          torch.Tensor.copy_
 *
 * Layout: any shape; every tensor is dense, so each op is one flat loop over numel
 * elements. Aliasing: relu_fwd (y = x), relu_bwd (dx = dy), add (y = a or b) and scale
 * (y = x) may run in place (ops.h); each element is read before it is written at the same
 * index, so the loops are correct in place. NaN: relu_fwd maps NaN to NaN (PyTorch
 * propagates it), so a diverging run still shows up as NaN downstream.
 */
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
