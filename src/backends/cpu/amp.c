/*
 * amp.c — mixed precision in the CPU reference backend (automatic mixed precision, "amp"):
 * the casts between f32 and f16, the two halves of dynamic loss scaling, and the f16 inputs
 * of other ops (the operands of convolutions and GEMM, saved inputs of backward ops).
 *
 * Semantics (op_list.h):
 *   cast_f32_f16  y = fp16(x), round to nearest even      torch.Tensor.half()
 *   cast_f16_f32  y = float(x), exact                     torch.Tensor.float()
 *   loss_scale    y = x * s[0]                            GradScaler.scale (on dlogits)
 *   grad_unscale  found = 1 if any g is inf/NaN; g *= inv[0]
 *                 torch._amp_foreach_non_finite_check_and_unscale_
 *   amp_update_scale  the loss scale's state machine after the update   torch._amp_update_scale_
 *
 * f16 inputs (conv2d_*, gemm with src0/src1 f16; relu_bwd, batchnorm_bwd with the saved
 * src0 f16): the reference widens them to f32 (exact) into its own scratch and runs the f32
 * op on them. A product of two fp16 values (11-bit significands) is exact in fp32 (24 bits),
 * so this is fp16 multiplication with fp32 accumulation, the arithmetic of GPUs' fp16 paths,
 * with only the summation order left to differ between backends.
 */
#include <math.h>

#include "backends/cpu/cpu_internal.h"
#include "core/half.h"

dbk_status dbk_cpu_cast_f32_f16(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const int64_t n = dbk_tensor_numel(&op->src[0]);
    const float *x = dbk_cpu_f32(&op->src[0]);                /* (n) */
    uint16_t *y = (uint16_t *)dbk_cpu_ptr(&op->dst[0]);       /* (n) f16 */
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) y[i] = dbk_f32_to_f16(x[i]);
    return DBK_OK;
}

dbk_status dbk_cpu_cast_f16_f32(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const int64_t n = dbk_tensor_numel(&op->src[0]);
    const uint16_t *x = (const uint16_t *)dbk_cpu_ptr(&op->src[0]);   /* (n) f16 */
    float *y = dbk_cpu_f32(&op->dst[0]);                               /* (n) */
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) y[i] = dbk_f16_to_f32(x[i]);
    return DBK_OK;
}

dbk_status dbk_cpu_loss_scale(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const int64_t n = dbk_tensor_numel(&op->dst[0]);
    const float *x = dbk_cpu_f32(&op->src[0]);   /* (n) */
    const float s = dbk_cpu_f32(&op->src[1])[0];
    float *y = dbk_cpu_f32(&op->dst[0]);         /* (n), may alias x */
    for (int64_t i = 0; i < n; i++) y[i] = x[i] * s;
    return DBK_OK;
}

dbk_status dbk_cpu_grad_unscale(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const int64_t n = dbk_tensor_numel(&op->dst[0]);
    const float inv = dbk_cpu_f32(&op->src[0])[0];
    float *g = dbk_cpu_f32(&op->dst[0]);         /* (n) in place */
    float *found = dbk_cpu_f32(&op->dst[1]);     /* (1) */
    bool bad = false;
    for (int64_t i = 0; i < n; i++) {
        bad |= !isfinite(g[i]);
        g[i] *= inv;
    }
    if (bad) found[0] = 1.0f;
    return DBK_OK;
}

/* state (6) = {S, 1/S, found, clean steps, skipped steps, growths}: dbk_loss_scaler_step
 * (train/loss_scaler.c) on the device's copy, in the same float arithmetic. */
dbk_status dbk_cpu_amp_update_scale(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    float *st = dbk_cpu_f32(&op->dst[0]);
    if (st[2] != 0.0f) {
        st[4] += 1.0f;
        st[3] = 0.0f;
        if (st[0] > 1.0f) st[0] *= 0.5f;
    } else if ((st[3] += 1.0f) >= op->p.amp.growth_interval) {
        st[3] = 0.0f;
        if (st[0] < 0x1p64f) {
            st[0] *= 2.0f;
            st[5] += 1.0f;
        }
    }
    st[1] = 1.0f / st[0];
    st[2] = 0.0f;
    return DBK_OK;
}

/* ---------------------------------------------------------------------------------- */
/* f16 inputs: operands of convolutions and GEMM, saved inputs of backward ops          */

static bool is_f16(const dbk_tensor *t) { return t->ndim && t->dtype == DBK_DTYPE_F16; }

bool dbk_cpu_widens(const dbk_op_desc *op) {
    if (op->op == DBK_OP_CAST_F16_F32) return false;   /* the one op that reads f16 itself */
    for (int i = 0; i < DBK_OP_MAX_SRC; i++)
        if (is_f16(&op->src[i])) return true;
    return false;
}

static size_t widened_slot_bytes(const dbk_tensor *t) {
    return ((size_t)dbk_tensor_numel(t) * sizeof(float) + 63) & ~(size_t)63;
}

/* Bytes of the widened inputs (64-byte aligned each); 0 for an op that widens nothing. */
size_t dbk_cpu_widened_bytes(const dbk_op_desc *op) {
    if (!dbk_cpu_widens(op)) return 0;
    size_t n = 0;
    for (int i = 0; i < DBK_OP_MAX_SRC; i++)
        if (is_f16(&op->src[i])) n += widened_slot_bytes(&op->src[i]);
    return n;
}

dbk_status dbk_cpu_run_widened(dbk_backend *be, const dbk_op_desc *op, dbk_op_fn run) {
    dbk_cpu_state *st = be->impl;
    const size_t need = dbk_cpu_widened_bytes(op);
    DBK_TRY(dbk_cpu_half_scratch(be, need));
    /* A host "buffer" over the scratch, so the f32 op sees ordinary tensor views. */
    dbk_buffer scratch = {.be = be, .nbytes = need, .impl = st->half_scratch};
    dbk_op_desc wide = *op;
    size_t at = 0;
    for (int i = 0; i < DBK_OP_MAX_SRC; i++) {
        const dbk_tensor *t = &op->src[i];
        if (!is_f16(t)) continue;
        const int64_t n = dbk_tensor_numel(t);
        const uint16_t *h = (const uint16_t *)dbk_cpu_ptr(t);
        float *f = (float *)((char *)st->half_scratch + at);
#pragma omp parallel for schedule(static)
        for (int64_t e = 0; e < n; e++) f[e] = dbk_f16_to_f32(h[e]);
        wide.src[i].dtype = DBK_DTYPE_F32;
        wide.src[i].buf = &scratch;
        wide.src[i].offset = at;
        at += widened_slot_bytes(t);
    }
    return run(be, &wide);
}
