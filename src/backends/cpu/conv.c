/*
 * conv.c — 2-D convolution (no bias, no dilation, no groups) for the CPU reference backend:
 * forward, backward-data and backward-filter, all lowered to SGEMM through im2col.
 *
 * Semantics: torch.nn.functional.conv2d (cross-correlation, zero padding), see
 * https://pytorch.org/docs/stable/generated/torch.nn.functional.conv2d.html
 *
 * Layout and letters (ops.h): x (N,C,H,W), w (K,C,R,S), y (N,K,P,Q), all dense fp32.
 * The batch is cut into chunks of nb images; for the chunk starting at image n0:
 *
 *   col (C*R*S, nb*P*Q)   col[(c*R + r)*S + s][b*P*Q + p*Q + q] = x[n0+b][c][p*sh-ph+r][q*sw-pw+s]
 *                         (zero where the index falls into the padding)
 *   forward     y_chunk (K, nb*P*Q)     = w (K, C*R*S) . col
 *   bwd data    dcol    (C*R*S, nb*P*Q) = w^T . dy_chunk (K, nb*P*Q), then col2im adds every
 *                                         entry of dcol back onto the pixel it was read from
 *   bwd filter  dw      (K, C*R*S)      = sum over chunks of dy_chunk . col^T
 *
 * y and dy are stored (N,K,P,Q), so a chunk of more than one image is not a plain matrix:
 * it is gathered into / scattered from a (K, nb*P*Q) scratch matrix ("tmp") with one
 * contiguous copy of P*Q floats per (image, channel). Chunks exist for speed: the late
 * layers (8x8 and 4x4 maps) would otherwise give SGEMMs with 64 or 16 columns, far below
 * OpenBLAS's plateau. With one image per chunk no tmp is needed, and a 1x1 filter with stride
 * 1 and no padding then skips im2col too (col is the image itself).
 *
 * Threads: chunks are distributed over the OpenMP team; each thread runs im2col, a
 * single-threaded SGEMM and col2im on its own chunk with its own slice of the workspace.
 * The CPU backend sets OpenBLAS to one thread when it is built with OpenMP
 * (cpu_backend.c): OpenBLAS's own worker threads and the OpenMP team would otherwise spin
 * against each other on every hand-over, which halved throughput on a 2-core machine.
 * Forward and bwd_data hand out chunks dynamically (each chunk writes its own images, so
 * the result does not depend on which thread ran it, and a core busy with another process
 * does not stall the team). bwd_filter gives each thread a private partial dw (thread 0
 * uses dw itself), assigns chunks statically and sums the partials in thread order, so its
 * rounding depends on the thread count but never on timing.
 *
 * Workspace (dbk_cpu_workspace), per thread: col then tmp; for bwd_filter, after the thread
 * slices, one (K, C*R*S) partial per thread beyond the first. conv_make_plan sizes it for
 * both the ops and dbk_cpu_conv_workspace_bytes, so a prepared op never grows it in run.
 */
#include <cblas.h>
#include <limits.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "backends/cpu/cpu_internal.h"

/* Columns per SGEMM that chunking aims for: enough for single-threaded OpenBLAS to reach
 * its plateau on the 8x8 and 4x4 layers, small enough that a thread's col stays in L3.
 * Measured on a 2-core EPYC (ResNet9 shapes, batch 512): 512, 1024 and 2048 are within
 * noise of each other (~120-140 GFLOP/s on the wide layers), 4096 is ~10% slower. */
#ifndef CONV_TARGET_COLS
#define CONV_TARGET_COLS 1024
#endif

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
    int     threads;        /* workspace slices = largest OpenMP team */
    int64_t nb;             /* images per chunk */
    int64_t chunks;         /* ceil(N / nb) */
    bool    direct;         /* col is the image itself: 1x1, stride 1, no padding, nb == 1 */
    size_t  col_floats;     /* per thread: col (C*R*S, nb*P*Q), 0 when direct */
    size_t  tmp_floats;     /* per thread: tmp (K, nb*P*Q), 0 when nb == 1 */
    size_t  part_floats;    /* bwd_filter: one (K, C*R*S) partial per thread but the first */
} conv_plan;

static int max_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

static int thread_num(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

static int team_size(void) {
#ifdef _OPENMP
    return omp_get_num_threads();
#else
    return 1;
#endif
}

/* The tensors that carry x, w and y differ per op: dbk_conv2d_geom_of knows which. */
static conv_geom conv_geometry(const dbk_op_desc *op) {
    const dbk_conv2d_geom cg = dbk_conv2d_geom_of(op);
    conv_geom g;
    g.N = cg.N; g.C = cg.C; g.H = cg.H; g.W = cg.W;
    g.K = cg.K; g.R = cg.R; g.S = cg.S;
    g.P = cg.P; g.Q = cg.Q;
    g.sh = cg.stride_h; g.sw = cg.stride_w;
    g.ph = cg.pad_h;    g.pw = cg.pad_w;
    g.crs = g.C * g.R * g.S;
    g.pq = g.P * g.Q;
    return g;
}

static conv_plan conv_make_plan(const conv_geom *g, dbk_op which) {
    conv_plan pl;
    pl.threads = max_threads();
    const int64_t n = g->N > 0 ? g->N : 1, pq = g->pq > 0 ? g->pq : 1;
    /* Chunks of about CONV_TARGET_COLS columns, their count rounded up to a multiple of
     * the thread count so that every thread gets the same number of chunks. */
    int64_t nb = (CONV_TARGET_COLS + pq - 1) / pq;
    int64_t chunks = (n + nb - 1) / nb;
    chunks = (chunks + pl.threads - 1) / pl.threads * pl.threads;
    if (chunks > n) chunks = n;
    pl.nb = (n + chunks - 1) / chunks;
    pl.chunks = (n + pl.nb - 1) / pl.nb;
    pl.direct = pl.nb == 1 && g->R == 1 && g->S == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0;
    const int64_t cols = pl.nb * g->pq;
    pl.col_floats = pl.direct ? 0 : (size_t)(g->crs * cols);
    pl.tmp_floats = pl.nb > 1 ? (size_t)(g->K * cols) : 0;
    pl.part_floats = which == DBK_OP_CONV2D_BWD_FILTER ? (size_t)(g->K * g->crs) : 0;
    return pl;
}

static size_t plan_bytes(const conv_plan *pl) {
    return ((size_t)pl->threads * (pl->col_floats + pl->tmp_floats) +
            (size_t)(pl->threads - 1) * pl->part_floats) * sizeof(float);
}

size_t dbk_cpu_conv_workspace_bytes(const dbk_op_desc *op) {
    if (op->op != DBK_OP_CONV2D_FWD && op->op != DBK_OP_CONV2D_BWD_DATA && op->op != DBK_OP_CONV2D_BWD_FILTER)
        return 0;
    const conv_geom g = conv_geometry(op);
    const conv_plan pl = conv_make_plan(&g, op->op);
    return plan_bytes(&pl);
}

/* CBLAS takes int dimensions; each matrix here is one chunk, but a huge layer could still
 * overflow, which we report rather than wrap. */
static dbk_status check_blas_dims(const dbk_op_desc *op, const conv_geom *g, const conv_plan *pl) {
    if (g->crs > INT_MAX || g->K > INT_MAX || pl->nb * g->pq > INT_MAX)
        return dbk_set_error(DBK_ERR_UNSUPPORTED, "%s: chunk matrices too large for CBLAS int dimensions",
                             dbk_op_name(op->op));
    return DBK_OK;
}

/* ---------------------------------------------------------------------------------- */
/* index ranges                                                                        */

/* Output positions o in [0, out_len) whose input index o*stride - pad + k lies inside
 * [0, in_len) form one interval [*lo, *hi); outside it the tap reads padding. */
static void valid_range(int64_t out_len, int64_t in_len, int stride, int pad, int64_t k, int64_t *lo, int64_t *hi) {
    const int64_t first = pad - k;                  /* need o*stride >= first */
    const int64_t limit = in_len + pad - k;         /* need o*stride <  limit */
    int64_t a = first <= 0 ? 0 : (first + stride - 1) / stride;
    int64_t b = limit <= 0 ? 0 : (limit + stride - 1) / stride;
    if (a > out_len) a = out_len;
    if (b > out_len) b = out_len;
    if (b < a) b = a;
    *lo = a;
    *hi = b;
}

/* ---------------------------------------------------------------------------------- */
/* im2col / col2im and the NKPQ <-> (K, nb*P*Q) copies; all run on the calling thread  */

/* col (C*R*S, nb*P*Q) <- the nb images starting at x (nb, C, H, W); one row per filter
 * tap (c, r, s). Rows with stride 1 are a memcpy between zeroed padding borders. */
static void im2col(const conv_geom *g, const float *x, int64_t nb, float *col) {
    const int64_t cols = nb * g->pq, hw = g->H * g->W;
    for (int64_t c = 0; c < g->C; c++) {
        for (int64_t r = 0; r < g->R; r++) {
            int64_t p_lo, p_hi;
            valid_range(g->P, g->H, g->sh, g->ph, r, &p_lo, &p_hi);
            for (int64_t s = 0; s < g->S; s++) {
                int64_t q_lo, q_hi;
                valid_range(g->Q, g->W, g->sw, g->pw, s, &q_lo, &q_hi);
                float *dst_row = col + ((c * g->R + r) * g->S + s) * cols;
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
    }
}

/* dx (nb, C, H, W) = col2im(dcol): each entry of dcol (C*R*S, nb*P*Q) is added to the input
 * pixel its im2col entry was read from; padding taps are dropped. dx is overwritten. */
static void col2im(const conv_geom *g, const float *dcol, int64_t nb, float *dx) {
    const int64_t cols = nb * g->pq, hw = g->H * g->W;
    memset(dx, 0, (size_t)(nb * g->C * hw) * sizeof(float));
    for (int64_t b = 0; b < nb; b++) {
        for (int64_t c = 0; c < g->C; c++) {
            float *plane = dx + (b * g->C + c) * hw;                    /* (H, W) */
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
                        if (g->sw == 1) {   /* the common case, written so that it vectorises */
                            for (int64_t q = q_lo; q < q_hi; q++) d[q] += sp[q];
                        } else {
                            for (int64_t q = q_lo; q < q_hi; q++) d[q * g->sw] += sp[q];
                        }
                    }
                }
            }
        }
    }
}

/* tmp (K, nb*P*Q) <- t (nb, K, P, Q): one chunk of an NKPQ tensor as a matrix. */
static void gather_nk(const conv_geom *g, const float *t, int64_t nb, float *tmp) {
    const int64_t cols = nb * g->pq;
    for (int64_t b = 0; b < nb; b++)
        for (int64_t k = 0; k < g->K; k++)
            memcpy(tmp + k * cols + b * g->pq, t + (b * g->K + k) * g->pq, (size_t)g->pq * sizeof(float));
}

/* t (nb, K, P, Q) <- tmp (K, nb*P*Q): the inverse of gather_nk. */
static void scatter_nk(const conv_geom *g, const float *tmp, int64_t nb, float *t) {
    const int64_t cols = nb * g->pq;
    for (int64_t b = 0; b < nb; b++)
        for (int64_t k = 0; k < g->K; k++)
            memcpy(t + (b * g->K + k) * g->pq, tmp + k * cols + b * g->pq, (size_t)g->pq * sizeof(float));
}

/* ---------------------------------------------------------------------------------- */
/* the three ops                                                                       */

/* Common entry: geometry, plan, CBLAS limits, workspace. */
static dbk_status conv_setup(dbk_backend *be, const dbk_op_desc *op, conv_geom *g, conv_plan *pl, float **ws) {
    *g = conv_geometry(op);
    *pl = conv_make_plan(g, op->op);
    DBK_TRY(check_blas_dims(op, g, pl));
    return dbk_cpu_workspace(be, plan_bytes(pl), ws);
}

dbk_status dbk_cpu_conv2d_fwd(dbk_backend *be, const dbk_op_desc *op) {
    const float *x = dbk_cpu_f32(&op->src[0]);   /* (N, C, H, W) */
    const float *w = dbk_cpu_f32(&op->src[1]);   /* (K, C, R, S) */
    float *y = dbk_cpu_f32(&op->dst[0]);         /* (N, K, P, Q) */
    conv_geom g;
    conv_plan pl;
    float *ws;
    DBK_TRY(conv_setup(be, op, &g, &pl, &ws));
    if (g.N == 0 || g.K == 0 || g.pq == 0) return DBK_OK;
    if (g.crs == 0) {
        memset(y, 0, (size_t)(g.N * g.K * g.pq) * sizeof(float));
        return DBK_OK;
    }

#pragma omp parallel num_threads(pl.threads)
    {
        float *col = ws + (size_t)thread_num() * (pl.col_floats + pl.tmp_floats);
        float *tmp = col + pl.col_floats;
#pragma omp for schedule(dynamic, 1)
        for (int64_t ch = 0; ch < pl.chunks; ch++) {
            const int64_t n0 = ch * pl.nb, nb = g.N - n0 < pl.nb ? g.N - n0 : pl.nb;
            const int cols = (int)(nb * g.pq);
            const float *xn = x + n0 * g.C * g.H * g.W;
            const float *b = xn;                          /* col (C*R*S, cols) */
            if (!pl.direct) {
                im2col(&g, xn, nb, col);
                b = col;
            }
            /* out (K, cols) = w (K, C*R*S) . col; one image writes y directly */
            float *out = pl.nb == 1 ? y + n0 * g.K * g.pq : tmp;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)g.K, cols, (int)g.crs, 1.0f, w,
                        (int)g.crs, b, cols, 0.0f, out, cols);
            if (pl.nb > 1) scatter_nk(&g, tmp, nb, y + n0 * g.K * g.pq);
        }
    }
    return DBK_OK;
}

dbk_status dbk_cpu_conv2d_bwd_data(dbk_backend *be, const dbk_op_desc *op) {
    const float *dy = dbk_cpu_f32(&op->src[0]);  /* (N, K, P, Q) */
    const float *w = dbk_cpu_f32(&op->src[1]);   /* (K, C, R, S) */
    float *dx = dbk_cpu_f32(&op->dst[0]);        /* (N, C, H, W) */
    conv_geom g;
    conv_plan pl;
    float *ws;
    DBK_TRY(conv_setup(be, op, &g, &pl, &ws));
    const int64_t chw = g.C * g.H * g.W;
    if (g.N == 0 || chw == 0) return DBK_OK;
    if (g.K == 0 || g.pq == 0) {
        memset(dx, 0, (size_t)(g.N * chw) * sizeof(float));
        return DBK_OK;
    }

#pragma omp parallel num_threads(pl.threads)
    {
        float *col = ws + (size_t)thread_num() * (pl.col_floats + pl.tmp_floats);
        float *tmp = col + pl.col_floats;
#pragma omp for schedule(dynamic, 1)
        for (int64_t ch = 0; ch < pl.chunks; ch++) {
            const int64_t n0 = ch * pl.nb, nb = g.N - n0 < pl.nb ? g.N - n0 : pl.nb;
            const int cols = (int)(nb * g.pq);
            const float *b = dy + n0 * g.K * g.pq;        /* dy chunk (K, cols) */
            if (pl.nb > 1) {
                gather_nk(&g, b, nb, tmp);
                b = tmp;
            }
            /* dcol (C*R*S, cols) = w^T (C*R*S, K) . dy_chunk; direct: dcol is dx itself */
            float *dcol = pl.direct ? dx + n0 * chw : col;
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)g.crs, cols, (int)g.K, 1.0f, w, (int)g.crs,
                        b, cols, 0.0f, dcol, cols);
            if (!pl.direct) col2im(&g, col, nb, dx + n0 * chw);
        }
    }
    return DBK_OK;
}

dbk_status dbk_cpu_conv2d_bwd_filter(dbk_backend *be, const dbk_op_desc *op) {
    const float *x = dbk_cpu_f32(&op->src[0]);   /* (N, C, H, W) */
    const float *dy = dbk_cpu_f32(&op->src[1]);  /* (N, K, P, Q) */
    float *dw = dbk_cpu_f32(&op->dst[0]);        /* (K, C, R, S) */
    conv_geom g;
    conv_plan pl;
    float *ws;
    DBK_TRY(conv_setup(be, op, &g, &pl, &ws));
    const int64_t kcrs = g.K * g.crs;
    if (kcrs == 0) return DBK_OK;
    float *parts = ws + (size_t)pl.threads * (pl.col_floats + pl.tmp_floats);   /* (threads-1, K, C*R*S) */
    const int64_t chunks = g.N == 0 || g.pq == 0 ? 0 : pl.chunks;   /* no chunk: dw = 0 */

#pragma omp parallel num_threads(pl.threads)
    {
        const int t = thread_num(), team = team_size();
        float *col = ws + (size_t)t * (pl.col_floats + pl.tmp_floats);
        float *tmp = col + pl.col_floats;
        /* This thread's partial sum starts at zero, so beta = 1 below never reads stale data. */
        float *part = t == 0 ? dw : parts + (size_t)(t - 1) * pl.part_floats;   /* (K, C*R*S) */
        memset(part, 0, (size_t)kcrs * sizeof(float));
#pragma omp for schedule(static)
        for (int64_t ch = 0; ch < chunks; ch++) {
            const int64_t n0 = ch * pl.nb, nb = g.N - n0 < pl.nb ? g.N - n0 : pl.nb;
            const int cols = (int)(nb * g.pq);
            const float *xn = x + n0 * g.C * g.H * g.W;
            const float *b = xn;                          /* col (C*R*S, cols) */
            if (!pl.direct) {
                im2col(&g, xn, nb, col);
                b = col;
            }
            const float *a = dy + n0 * g.K * g.pq;        /* dy chunk (K, cols) */
            if (pl.nb > 1) {
                gather_nk(&g, a, nb, tmp);
                a = tmp;
            }
            /* part (K, C*R*S) += dy_chunk (K, cols) . col^T (cols, C*R*S) */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)g.K, (int)g.crs, cols, 1.0f, a, cols, b,
                        cols, 1.0f, part, (int)g.crs);
        }
        /* The loop's implicit barrier has passed: every partial is complete. Sum them into
         * dw in thread order, element ranges split over the team. */
#pragma omp for schedule(static)
        for (int64_t i = 0; i < kcrs; i++) {
            float acc = dw[i];
            for (int u = 1; u < team; u++) acc += parts[(size_t)(u - 1) * pl.part_floats + (size_t)i];
            dw[i] = acc;
        }
    }
    return DBK_OK;
}
