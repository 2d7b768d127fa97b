/*
 * bias.c — the per-channel bias of a convolution and its gradient, for the CPU reference
 * backend (airbench94's whitening conv is the one conv with a bias; the others have none).
 *
 * Semantics: the bias term of torch.nn.functional.conv2d(x, w, b),
 * https://pytorch.org/docs/stable/generated/torch.nn.functional.conv2d.html
 *   bias_add     y[n,c,h,w] = x[n,c,h,w] + b[c]          (y may alias x)
 *   channel_sum  db[c] = sum over n,h,w of dy[n,c,h,w]    (the gradient of bias_add with
 *                                                          respect to b; overwrites db)
 *
 * Layout: x, y, dy (N,C,H,W); b, db (C). A channel's values are N planes of H*W contiguous
 * floats, one plane per image.
 *
 * channel_sum sums in double: a channel of airbench's whitening output holds 1024*31*31
 * (~1M) values, enough for an fp32 running sum to lose digits, and the reference should be
 * the accurate side of every comparison (bn.c does the same for its per-channel sums).
 */
#include "backends/cpu/cpu_internal.h"

dbk_status dbk_cpu_bias_add(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const dbk_tensor *xt = &op->src[0];
    const int64_t N = xt->shape[0], C = xt->shape[1], HW = xt->shape[2] * xt->shape[3];
    const float *x = dbk_cpu_f32(xt);               /* (N,C,H,W) */
    const float *b = dbk_cpu_f32(&op->src[1]);      /* (C) */
    float *y = dbk_cpu_f32(&op->dst[0]);            /* (N,C,H,W), may alias x */
#pragma omp parallel for schedule(static)
    for (int64_t nc = 0; nc < N * C; nc++) {
        const float bc = b[nc % C];
        const float *xp = x + nc * HW;
        float *yp = y + nc * HW;
        for (int64_t j = 0; j < HW; j++) yp[j] = xp[j] + bc;
    }
    return DBK_OK;
}

dbk_status dbk_cpu_channel_sum(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const dbk_tensor *dyt = &op->src[0];
    const int64_t N = dyt->shape[0], C = dyt->shape[1], HW = dyt->shape[2] * dyt->shape[3];
    const float *dy = dbk_cpu_f32(dyt);             /* (N,C,H,W) */
    float *db = dbk_cpu_f32(&op->dst[0]);           /* (C) */
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < C; c++) {
        double s = 0.0;
        for (int64_t n = 0; n < N; n++) {
            const float *p = dy + (n * C + c) * HW;
            for (int64_t j = 0; j < HW; j++) s += (double)p[j];
        }
        db[c] = (float)s;
    }
    return DBK_OK;
}
