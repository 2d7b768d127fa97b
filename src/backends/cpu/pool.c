/*
 * pool.c — max pooling for the CPU reference backend (forward with argmax, backward).
 *
 * Semantics: torch.nn.MaxPool2d with padding, without dilation,
 * https://pytorch.org/docs/stable/generated/torch.nn.MaxPool2d.html
 *   y[n][c][p][q] = max over r < R, s < S of x[n][c][p*sh - ph + r][q*sw - pw + s], the
 *   taps outside x being -inf (ph <= R/2, pw <= S/2, so every window holds an element of x),
 *   P = (H + 2ph - R) / sh + 1, Q = (W + 2pw - S) / sw + 1 (floor: trailing rows/columns that
 *   do not fill a window are ignored, like ceil_mode=False). Global max pool is R = H, S = W.
 *
 * Layout: x, dx (N,C,H,W); y, dy, argmax (N,C,P,Q). argmax is i32 and holds h*W + w, the
 * winner's index inside its own (n, c) plane (PyTorch's return_indices convention), so the
 * backward pass never needs x.
 *
 * Ties go to the first element in row-major window order (strict '>'), which every device
 * kernel must reproduce for bit-identical argmax. A NaN in the window wins over numbers
 * (the first NaN, if several), so NaN propagates as in PyTorch and a diverging run is seen.
 *
 * Backward overwrites dx: zero, then dx[plane][argmax] += dy for every output element
 * (overlapping windows can pick the same winner, so it is a sum). Planes are independent,
 * so both ops are OpenMP loops over the N*C planes with no write conflicts.
 *
 * Global average pool (torch.nn.AdaptiveAvgPool2d(1),
 * https://pytorch.org/docs/stable/generated/torch.nn.AdaptiveAvgPool2d.html):
 *   forward   y[n][c] = (sum over h, w of x[n][c][h][w]) / (H*W), summed in double so that
 *             the reference is the accurate side of every comparison;
 *   backward  dx[n][c][h][w] = dy[n][c] / (H*W) (overwrites dx).
 * y and dy are (N, C, 1, 1), the shape a linear layer takes.
 */
#include <math.h>
#include <string.h>

#include "backends/cpu/cpu_internal.h"

dbk_status dbk_cpu_maxpool_fwd(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const dbk_tensor *tx = &op->src[0], *ty = &op->dst[0];
    const float *x = dbk_cpu_f32(tx);             /* (N, C, H, W) */
    float *y = dbk_cpu_f32(ty);                   /* (N, C, P, Q) */
    int32_t *arg = dbk_cpu_i32(&op->dst[1]);      /* (N, C, P, Q) index h*W + w */
    const int64_t planes = tx->shape[0] * tx->shape[1];
    const int64_t H = tx->shape[2], W = tx->shape[3], P = ty->shape[2], Q = ty->shape[3];
    const int64_t R = op->p.pool.size_h, S = op->p.pool.size_w;
    const int64_t sh = op->p.pool.stride_h, sw = op->p.pool.stride_w;
    const int64_t ph = op->p.pool.pad_h, pw = op->p.pool.pad_w;

#pragma omp parallel for schedule(static)
    for (int64_t pl = 0; pl < planes; pl++) {
        const float *xp = x + pl * H * W;         /* (H, W) */
        float *yp = y + pl * P * Q;               /* (P, Q) */
        int32_t *ap = arg + pl * P * Q;           /* (P, Q) */
        for (int64_t p = 0; p < P; p++) {
            /* One output row at a time, window taps outside and q innermost: the q
             * iterations are independent, and with the non-short-circuit test below the
             * compiler emits selects instead of branches, which mispredict on real
             * activations (3x faster on a 2x2 pool). Taps are still visited in row-major
             * window order with a strict '>', so the first maximum wins. Padding taps are
             * skipped: as -inf they never win. Starting from -inf at the first tap inside x
             * is the same as starting from that tap's value (-inf or a NaN there is taken
             * or kept just as well). */
            float *restrict yrow = yp + p * Q;           /* (Q) running maximum */
            int32_t *restrict arow = ap + p * Q;         /* (Q) its index */
            const int64_t h0 = p * sh - ph;              /* the window's first row, maybe < 0 */
            const int64_t r_lo = h0 < 0 ? -h0 : 0, r_hi = h0 + R > H ? H - h0 : R;
            for (int64_t q = 0; q < Q; q++) {
                const int64_t w0 = q * sw - pw;
                yrow[q] = -INFINITY;
                arow[q] = (int32_t)((h0 + r_lo) * W + (w0 < 0 ? 0 : w0));
            }
            for (int64_t r = r_lo; r < r_hi; r++) {
                for (int64_t s = 0; s < S; s++) {
                    /* the outputs q whose tap s lands inside the row: 0 <= q*sw - pw + s < W */
                    const int64_t q_lo = pw - s > 0 ? (pw - s + sw - 1) / sw : 0;
                    int64_t q_hi = W - 1 + pw - s < 0 ? 0 : (W - 1 + pw - s) / sw + 1;
                    if (q_hi > Q) q_hi = Q;
                    const int64_t base = (h0 + r) * W + s - pw;
                    for (int64_t q = q_lo; q < q_hi; q++) {
                        const float v = xp[base + q * sw], best = yrow[q];
                        /* v > best, or v is the first NaN (x != x is isnan(x)) */
                        const bool take = (v > best) | ((v != v) & (best == best));
                        yrow[q] = take ? v : best;
                        arow[q] = take ? (int32_t)(base + q * sw) : arow[q];
                    }
                }
            }
        }
    }
    return DBK_OK;
}

dbk_status dbk_cpu_maxpool_bwd(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const dbk_tensor *tdy = &op->src[0], *tdx = &op->dst[0];
    const float *dy = dbk_cpu_f32(tdy);              /* (N, C, P, Q) */
    const int32_t *arg = dbk_cpu_i32(&op->src[1]);   /* (N, C, P, Q) */
    float *dx = dbk_cpu_f32(tdx);                    /* (N, C, H, W) */
    const int64_t planes = tdx->shape[0] * tdx->shape[1];
    const int64_t hw = tdx->shape[2] * tdx->shape[3], pq = tdy->shape[2] * tdy->shape[3];

#pragma omp parallel for schedule(static)
    for (int64_t pl = 0; pl < planes; pl++) {
        float *dxp = dx + pl * hw;
        const float *dyp = dy + pl * pq;
        const int32_t *ap = arg + pl * pq;
        memset(dxp, 0, (size_t)hw * sizeof(float));
        for (int64_t i = 0; i < pq; i++) {
            /* An index outside the plane can only come from a corrupted argmax; dropping it
             * keeps the reference from writing outside dx. */
            if (ap[i] >= 0 && ap[i] < hw) dxp[ap[i]] += dyp[i];
        }
    }
    return DBK_OK;
}

dbk_status dbk_cpu_global_avgpool_fwd(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const dbk_tensor *tx = &op->src[0];
    const float *x = dbk_cpu_f32(tx);                /* (N, C, H, W) */
    float *y = dbk_cpu_f32(&op->dst[0]);             /* (N, C, 1, 1) */
    const int64_t planes = tx->shape[0] * tx->shape[1], hw = tx->shape[2] * tx->shape[3];

#pragma omp parallel for schedule(static)
    for (int64_t pl = 0; pl < planes; pl++) {
        const float *xp = x + pl * hw;
        double s = 0.0;
        for (int64_t i = 0; i < hw; i++) s += (double)xp[i];
        y[pl] = (float)(s / (double)hw);
    }
    return DBK_OK;
}

dbk_status dbk_cpu_global_avgpool_bwd(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const dbk_tensor *tdx = &op->dst[0];
    const float *dy = dbk_cpu_f32(&op->src[0]);      /* (N, C, 1, 1) */
    float *dx = dbk_cpu_f32(tdx);                    /* (N, C, H, W) */
    const int64_t planes = tdx->shape[0] * tdx->shape[1], hw = tdx->shape[2] * tdx->shape[3];

#pragma omp parallel for schedule(static)
    for (int64_t pl = 0; pl < planes; pl++) {
        const float g = dy[pl] / (float)hw;
        float *dxp = dx + pl * hw;
        for (int64_t i = 0; i < hw; i++) dxp[i] = g;
    }
    return DBK_OK;
}
