/*
 * conv.c — 2-D convolution (no bias, no dilation, no groups) for the CPU reference backend:
 * forward, backward-data and backward-filter, all lowered to SGEMM through im2col.
 *
 * Semantics: torch.nn.functional.conv2d (cross-correlation, zero padding), see
 * https://pytorch.org/docs/stable/generated/torch.nn.functional.conv2d.html
 *
 * Layout and letters (ops.h): x (N,C,H,W), w (K,C,R,S), y (N,K,P,Q), all dense fp32.
 * The lowering treats one chunk of nb images at a time:
 *
 *   col (C*R*S, nb*P*Q)   col[(c*R + r)*S + s][b*P*Q + p*Q + q] = x[n0+b][c][p*sh-ph+r][q*sw-pw+s]
 *                         (zero where the index falls into the padding)
 *   forward       y_chunk  (K, nb*P*Q)   = w (K, C*R*S) . col
 *   bwd data      dcol     (C*R*S, nb*P*Q) = w^T . dy_chunk (K, nb*P*Q), then col2im adds
 *                                            every column entry back onto the pixel it came from
 *   bwd filter    dw (K, C*R*S) = sum over chunks of dy_chunk . col^T
 *
 * y and dy are stored (N,K,P,Q), so a chunk of more than one image is not a plain matrix:
 * it is gathered into / scattered from a (K, nb*P*Q) scratch matrix ("tmp") with one
 * contiguous copy of P*Q floats per (image, channel). Chunking exists for speed only: small
 * late-stage layers (8x8 maps) would otherwise give SGEMMs with only 64 columns, where
 * OpenBLAS runs far below peak. One image per chunk needs no tmp at all.
 *
 * A 1x1 filter with stride 1 and no padding makes col equal to the image itself, so that
 * case skips im2col when chunks hold one image.
 *
 * Workspace (dbk_cpu_workspace): col then tmp, sized by conv_plan, which both the ops and
 * dbk_cpu_conv_workspace_bytes use, so a prepared op never grows the workspace in run.
 *
 * Threads: OpenBLAS parallelises each SGEMM itself; im2col, col2im and the gathers are
 * OpenMP loops whose iterations write disjoint memory (rows of col, (image, channel)
 * planes of dx), so they need no atomics. No SGEMM is called from inside a parallel region.
 */
#include <cblas.h>
#include <limits.h>
#include <string.h>

#include "backends/cpu/cpu_internal.h"

/* Columns per SGEMM that chunking aims for: enough that OpenBLAS reaches its plateau on
 * the 8x8 and 4x4 layers, small enough that col stays within a few tens of MB. Measured on
 * a 2-core EPYC with ResNet9 shapes (see the report of the commit that added this). */
#define CONV_TARGET_COLS 2048

/* ---------------------------------------------------------------------------------- */
/* geometry and plan                                                                  */

typedef struct conv_geom {
    int64_t N, C, H, W;     /* input  (N,C,H,W) */
    int64_t K, R, S;        /* filter (K,C,R,S) */
    int64_t P, Q;           /* output (N,K,P,Q) */
    int     sh, sw, ph, pw; /* stride and zero padding */
    int64_t crs, pq;        /* C*R*S (rows of col), P*Q (columns per image) */
} conv_geom;

typedef struct conv_plan {
    int64_t nb;             /* images per chunk */
    bool    direct;         /* col is the image itself: 1x1, stride 1, no padding, nb == 1 */
    size_t  col_floats;     /* workspace floats for col (C*R*S, nb*P*Q), 0 when direct */
    size_t  tmp_floats;     /* workspace floats for tmp (K, nb*P*Q), 0 when nb == 1 */
} conv_plan;

/* The tensors that carry x, w and y differ per op (ops.h slot lists). */
static conv_geom conv_geometry(const dbk_op_desc *op) {
    const dbk_tensor *x = &op->src[0], *w = &op->src[1], *y = &op->dst[0];   /* forward */
    if (op->op == DBK_OP_CONV2D_BWD_DATA) {
        x = &op->dst[0];
        y = &op->src[0];
    } else if (op->op == DBK_OP_CONV2D_BWD_FILTER) {
        w = &op->dst[0];
        y = &op->src[1];
    }
    conv_geom g;
    g.N = x->shape[0]; g.C = x->shape[1]; g.H = x->shape[2]; g.W = x->shape[3];
    g.K = w->shape[0]; g.R = w->shape[2]; g.S = w->shape[3];
    g.P = y->shape[2]; g.Q = y->shape[3];
    g.sh = op->p.conv.stride_h; g.sw = op->p.conv.stride_w;
    g.ph = op->p.conv.pad_h;    g.pw = op->p.conv.pad_w;
    g.crs = g.C * g.R * g.S;
    g.pq = g.P * g.Q;
    return g;
}

static conv_plan conv_make_plan(const conv_geom *g) {
    conv_plan pl;
    int64_t pq = g->pq > 0 ? g->pq : 1;
    pl.nb = (CONV_TARGET_COLS + pq - 1) / pq;
    if (pl.nb > g->N) pl.nb = g->N;
    if (pl.nb < 1) pl.nb = 1;
    pl.direct = pl.nb == 1 && g->R == 1 && g->S == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0;
    int64_t cols = pl.nb * g->pq;
    pl.col_floats = pl.direct ? 0 : (size_t)(g->crs * cols);
    pl.tmp_floats = pl.nb > 1 ? (size_t)(g->K * cols) : 0;
    return pl;
}

size_t dbk_cpu_conv_workspace_bytes(const dbk_op_desc *op) {
    if (op->op != DBK_OP_CONV2D_FWD && op->op != DBK_OP_CONV2D_BWD_DATA && op->op != DBK_OP_CONV2D_BWD_FILTER)
        return 0;
    conv_geom g = conv_geometry(op);
    conv_plan pl = conv_make_plan(&g);
    return (pl.col_floats + pl.tmp_floats) * sizeof(float);
}

/* CBLAS takes int dimensions; every matrix here is at most one chunk, but a huge layer
 * could still overflow, which we report rather than wrap. */
static dbk_status check_blas_dims(const dbk_op_desc *op, const conv_geom *g, const conv_plan *pl) {
    int64_t cols = pl->nb * g->pq;
    if (g->crs > INT_MAX || g->K > INT_MAX || cols > INT_MAX)
        return dbk_set_error(DBK_ERR_UNSUPPORTED, "%s: chunk matrices too large for CBLAS int dimensions",
                             dbk_op_name(op->op));
    return DBK_OK;
}

/* Workspace views for one op: col (crs, nb*pq) and tmp (K, nb*pq). */
static dbk_status conv_workspace(dbk_backend *be, const conv_plan *pl, float **col, float **tmp) {
    float *ws = NULL;
    DBK_TRY(dbk_cpu_workspace(be, (pl->col_floats + pl->tmp_floats) * sizeof(float), &ws));
    *col = ws;
    *tmp = ws + pl->col_floats;
    return DBK_OK;
}

/* ---------------------------------------------------------------------------------- */
/* index ranges                                                                        */

/* Output positions o in [0, out_len) whose input index o*stride - pad + k lies inside
 * [0, in_len) form one interval [*lo, *hi); outside it the tap reads padding. */
static void valid_range(int64_t out_len, int64_t in_len, int stride, int pad, int64_t k, int64_t *lo, int64_t *hi) {
    int64_t first = pad - k;                        /* o*stride >= first */
    int64_t a = first <= 0 ? 0 : (first + stride - 1) / stride;
    int64_t limit = in_len + pad - k;               /* o*stride < limit */
    int64_t b = limit <= 0 ? 0 : (limit + stride - 1) / stride;
    if (a > out_len) a = out_len;
    if (b > out_len) b = out_len;
    if (b < a) b = a;
    *lo = a;
    *hi = b;
}

/* ---------------------------------------------------------------------------------- */
/* im2col / col2im                                                                     */

/* col (C*R*S, nb*P*Q) <- the nb images starting at x (nb, C, H, W). One row of col per
 * filter tap (c, r, s); rows are independent, so the loop over rows is parallel. */
static void im2col(const conv_geom *g, const float *x, int64_t nb, float *col) {
    const int64_t cols = nb * g->pq, rs = g->R * g->S, hw = g->H * g->W;
#pragma omp parallel for schedule(static)
    for (int64_t row = 0; row < g->crs; row++) {
        const int64_t c = row / rs, r = (row / g->S) % g->R, s = row % g->S;
        int64_t p_lo, p_hi, q_lo, q_hi;
        valid_range(g->P, g->H, g->sh, g->ph, r, &p_lo, &p_hi);
        valid_range(g->Q, g->W, g->sw, g->pw, s, &q_lo, &q_hi);
        float *dst_row = col + row * cols;
        for (int64_t b = 0; b < nb; b++) {
            const float *plane = x + (b * g->C + c) * hw;   /* (H, W) */
            float *dst = dst_row + b * g->pq;               /* (P, Q) */
            for (int64_t p = 0; p < g->P; p++) {
                float *d = dst + p * g->Q;
                if (p < p_lo || p >= p_hi) {
                    memset(d, 0, (size_t)g->Q * sizeof(float));
                    continue;
                }
                const float *src = plane + (p * g->sh - g->ph + r) * g->W + (s - g->pw);
                for (int64_t q = 0; q < q_lo; q++) d[q] = 0.0f;
                if (g->sw == 1) {
                    memcpy(d + q_lo, src + q_lo, (size_t)(q_hi - q_lo) * sizeof(float));
                } else {
                    for (int64_t q = q_lo; q < q_hi; q++) d[q] = src[q * g->sw];
                }
                for (int64_t q = q_hi; q < g->Q; q++) d[q] = 0.0f;
            }
        }
    }
}

/* dx (nb, C, H, W) = col2im(dcol): every entry of dcol (C*R*S, nb*P*Q) is added to the input
 * pixel its im2col entry was read from; padding taps are dropped. dx is overwritten. Each
 * (image, channel) plane is owned by one iteration, which makes the scatter race-free. */
static void col2im(const conv_geom *g, const float *dcol, int64_t nb, float *dx) {
    const int64_t cols = nb * g->pq, hw = g->H * g->W;
#pragma omp parallel for schedule(static)
    for (int64_t bc = 0; bc < nb * g->C; bc++) {
        const int64_t b = bc / g->C, c = bc % g->C;
        float *plane = dx + bc * hw;                        /* (H, W) */
        memset(plane, 0, (size_t)hw * sizeof(float));
        for (int64_t r = 0; r < g->R; r++) {
            int64_t p_lo, p_hi;
            valid_range(g->P, g->H, g->sh, g->ph, r, &p_lo, &p_hi);
            for (int64_t s = 0; s < g->S; s++) {
                int64_t q_lo, q_hi;
                valid_range(g->Q, g->W, g->sw, g->pw, s, &q_lo, &q_hi);
                const float *src = dcol + ((c * g->R + r) * g->S + s) * cols + b * g->pq;   /* (P, Q) */
                for (int64_t p = p_lo; p < p_hi; p++) {
                    float *d = plane + (p * g->sh - g->ph + r) * g->W + (s - g->pw);
                    const float *sp = src + p * g->Q;
                    for (int64_t q = q_lo; q < q_hi; q++) d[q * g->sw] += sp[q];
                }
            }
        }
    }
}

/* tmp (K, nb*P*Q) <- t (nb, K, P, Q): the chunk of an NKPQ tensor as one matrix. */
static void gather_nk(const conv_geom *g, const float *t, int64_t nb, float *tmp) {
    const int64_t cols = nb * g->pq;
#pragma omp parallel for schedule(static)
    for (int64_t bk = 0; bk < nb * g->K; bk++) {
        const int64_t b = bk / g->K, k = bk % g->K;
        memcpy(tmp + k * cols + b * g->pq, t + bk * g->pq, (size_t)g->pq * sizeof(float));
    }
}

/* t (nb, K, P, Q) <- tmp (K, nb*P*Q): the inverse of gather_nk. */
static void scatter_nk(const conv_geom *g, const float *tmp, int64_t nb, float *t) {
    const int64_t cols = nb * g->pq;
#pragma omp parallel for schedule(static)
    for (int64_t bk = 0; bk < nb * g->K; bk++) {
        const int64_t b = bk / g->K, k = bk % g->K;
        memcpy(t + bk * g->pq, tmp + k * cols + b * g->pq, (size_t)g->pq * sizeof(float));
    }
}

/* ---------------------------------------------------------------------------------- */
/* the three ops                                                                       */

dbk_status dbk_cpu_conv2d_fwd(dbk_backend *be, const dbk_op_desc *op) {
    const conv_geom g = conv_geometry(op);
    const conv_plan pl = conv_make_plan(&g);
    const float *x = dbk_cpu_f32(&op->src[0]);   /* (N, C, H, W) */
    const float *w = dbk_cpu_f32(&op->src[1]);   /* (K, C, R, S) */
    float *y = dbk_cpu_f32(&op->dst[0]);         /* (N, K, P, Q) */
    if (g.N == 0 || g.K == 0 || g.pq == 0) return DBK_OK;
    if (g.crs == 0) {
        memset(y, 0, (size_t)(g.N * g.K * g.pq) * sizeof(float));
        return DBK_OK;
    }
    DBK_TRY(check_blas_dims(op, &g, &pl));
    float *col, *tmp;
    DBK_TRY(conv_workspace(be, &pl, &col, &tmp));

    for (int64_t n0 = 0; n0 < g.N; n0 += pl.nb) {
        const int64_t nb = g.N - n0 < pl.nb ? g.N - n0 : pl.nb;
        const int cols = (int)(nb * g.pq);
        const float *xn = x + n0 * g.C * g.H * g.W;
        const float *a = xn;                              /* col (C*R*S, cols) */
        if (!pl.direct) {
            im2col(&g, xn, nb, col);
            a = col;
        }
        /* out (K, cols) = w (K, CRS) . col (CRS, cols) */
        float *out = pl.nb == 1 ? y + n0 * g.K * g.pq : tmp;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)g.K, cols, (int)g.crs, 1.0f, w, (int)g.crs,
                    a, cols, 0.0f, out, cols);
        if (pl.nb > 1) scatter_nk(&g, tmp, nb, y + n0 * g.K * g.pq);
    }
    return DBK_OK;
}

dbk_status dbk_cpu_conv2d_bwd_data(dbk_backend *be, const dbk_op_desc *op) {
    const conv_geom g = conv_geometry(op);
    const conv_plan pl = conv_make_plan(&g);
    const float *dy = dbk_cpu_f32(&op->src[0]);  /* (N, K, P, Q) */
    const float *w = dbk_cpu_f32(&op->src[1]);   /* (K, C, R, S) */
    float *dx = dbk_cpu_f32(&op->dst[0]);        /* (N, C, H, W) */
    const int64_t chw = g.C * g.H * g.W;
    if (g.N == 0 || chw == 0) return DBK_OK;
    if (g.K == 0 || g.pq == 0) {
        memset(dx, 0, (size_t)(g.N * chw) * sizeof(float));
        return DBK_OK;
    }
    DBK_TRY(check_blas_dims(op, &g, &pl));
    float *col, *tmp;
    DBK_TRY(conv_workspace(be, &pl, &col, &tmp));

    for (int64_t n0 = 0; n0 < g.N; n0 += pl.nb) {
        const int64_t nb = g.N - n0 < pl.nb ? g.N - n0 : pl.nb;
        const int cols = (int)(nb * g.pq);
        const float *b = dy + n0 * g.K * g.pq;            /* dy chunk (K, cols) */
        if (pl.nb > 1) {
            gather_nk(&g, b, nb, tmp);
            b = tmp;
        }
        /* dcol (CRS, cols) = w^T (CRS, K) . dy_chunk (K, cols); direct: dcol is dx itself */
        float *dcol = pl.direct ? dx + n0 * chw : col;
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)g.crs, cols, (int)g.K, 1.0f, w, (int)g.crs, b,
                    cols, 0.0f, dcol, cols);
        if (!pl.direct) col2im(&g, col, nb, dx + n0 * chw);
    }
    return DBK_OK;
}

dbk_status dbk_cpu_conv2d_bwd_filter(dbk_backend *be, const dbk_op_desc *op) {
    const conv_geom g = conv_geometry(op);
    const conv_plan pl = conv_make_plan(&g);
    const float *x = dbk_cpu_f32(&op->src[0]);   /* (N, C, H, W) */
    const float *dy = dbk_cpu_f32(&op->src[1]);  /* (N, K, P, Q) */
    float *dw = dbk_cpu_f32(&op->dst[0]);        /* (K, C, R, S) */
    if (g.K == 0 || g.crs == 0) return DBK_OK;
    if (g.N == 0 || g.pq == 0) {
        memset(dw, 0, (size_t)(g.K * g.crs) * sizeof(float));
        return DBK_OK;
    }
    DBK_TRY(check_blas_dims(op, &g, &pl));
    float *col, *tmp;
    DBK_TRY(conv_workspace(be, &pl, &col, &tmp));

    for (int64_t n0 = 0; n0 < g.N; n0 += pl.nb) {
        const int64_t nb = g.N - n0 < pl.nb ? g.N - n0 : pl.nb;
        const int cols = (int)(nb * g.pq);
        const float *xn = x + n0 * g.C * g.H * g.W;
        const float *bm = xn;                             /* col (CRS, cols) */
        if (!pl.direct) {
            im2col(&g, xn, nb, col);
            bm = col;
        }
        const float *a = dy + n0 * g.K * g.pq;            /* dy chunk (K, cols) */
        if (pl.nb > 1) {
            gather_nk(&g, a, nb, tmp);
            a = tmp;
        }
        /* dw (K, CRS) (+)= dy_chunk (K, cols) . col^T (cols, CRS); the first chunk
         * overwrites (beta 0 never reads dw, so stale values cannot leak in). */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)g.K, (int)g.crs, cols, 1.0f, a, cols, bm, cols,
                    n0 == 0 ? 0.0f : 1.0f, dw, (int)g.crs);
    }
    return DBK_OK;
}
