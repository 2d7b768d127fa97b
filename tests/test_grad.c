/*
 * test_grad.c — finite-difference gradient checks of every backward op of the CPU
 * reference backend (STYLE.md 3.9 item 3): every op op_list.h declares grad BWD or SELF,
 * each by its <name>_should_match_finite_differences (a missing one fails the run). A case
 * releases its tensors after it runs (a failed case returns before its own cleanup).
 *
 * Method: for a forward op y = f(x, ...) pick fixed random weights G of y's shape and the
 * scalar L = sum(y * G), accumulated in double on the host. The backward op fed with dy = G
 * must return dL/dx. Each checked input element is perturbed by +-eps and compared with the
 * central difference (L(x + eps) - L(x - eps)) / (2 eps), where both L come from the
 * forward op itself (fp32), so the check ties forward and backward together.
 *
 * Step sizes and tolerances (fp32 forward, double sums):
 *  - linear ops (conv, GEMM, scale, add, bias): eps = 0.1. The difference quotient is exact up to
 *    rounding, and a larger step divides the fp32 rounding of L by more.
 *  - nonlinear ops (batch norm, softmax cross-entropy, relu, gelu, max pool): eps = 1e-2, where the
 *    O(eps^2) truncation error is ~1e-4 and rounding noise ~1e-4.
 *  - an element passes when |analytic - numeric| <= atol + rtol * |numeric|, with
 *    atol = 2e-3 and rtol = 1e-2 unless a case says otherwise. Indexing bugs give errors of
 *    the order of the gradient itself (~0.1 .. 10), far above this.
 *  - kinks are skipped (ggml's grad_expect): ReLU inputs within 2 eps of 0; max-pool inputs
 *    are distinct values at least 0.05 apart, so a +-eps step never changes a winner.
 * Tensors with more than MAX_POINTS elements are checked on a seeded random sample.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/half.h"
#include "core/rng.h"
#include "test_util.h"

/* <name>_should_match_finite_differences for every op of op_list.h declared grad BWD or
 * SELF; main fails an op that lacks its check ("op X has a backward but no gradient
 * check"), so coverage follows the op list. Weak declarations: a check never defined is a
 * null address instead of a link error, so the run names the op. */
#define GRAD_CHECK_DECLARE_(E, name, ...) int name##_should_match_finite_differences(void) __attribute__((weak));
DBK_OP_LIST(GRAD_CHECK_DECLARE_)
#undef GRAD_CHECK_DECLARE_

#define MAX_POINTS 160
#define MAX_BUFS   32

static dbk_backend *be;
static dbk_buffer *bufs[MAX_BUFS];
static int nbufs;

/* ---------------------------------------------------------------------------------- */
/* tensors                                                                            */

/* A fresh device tensor of its own buffer, released by free_all at the end of the case. */
static dbk_tensor new_tensor(dbk_dtype dt, int ndim, int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    const int64_t d[4] = {d0, d1, d2, d3};
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= d[i];
    dbk_buffer *buf = NULL;
    if (nbufs >= MAX_BUFS || dbk_buffer_create(be, (size_t)n * dbk_dtype_size(dt) + 4, &buf) != DBK_OK) {
        fprintf(stderr, "test_grad: cannot allocate a tensor: %s\n", dbk_last_error());
        abort();
    }
    bufs[nbufs++] = buf;
    return dbk_tensor_make(buf, 0, dt, ndim, d0, d1, d2, d3);
}

static dbk_tensor new_f32(int ndim, int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    return new_tensor(DBK_DTYPE_F32, ndim, d0, d1, d2, d3);
}

/* Mixed precision's saved inputs: host values rounded to fp16, so the f32 tensor the forward
 * differentiates and the f16 copy the backward reads hold the same numbers; then the f16
 * backward must match the f32 forward's differences exactly as the f32 one does. */
static void round_to_f16(float *h, int64_t n) {
    for (int64_t i = 0; i < n; i++) h[i] = dbk_f16_to_f32(dbk_f32_to_f16(h[i]));
}

static dbk_tensor f16_copy_of(const float *h, int ndim, int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    dbk_tensor t = new_tensor(DBK_DTYPE_F16, ndim, d0, d1, d2, d3);
    const int64_t n = dbk_tensor_numel(&t);
    uint16_t *b = malloc((size_t)n * sizeof *b);
    DBK_ASSERT(b);
    for (int64_t i = 0; i < n; i++) b[i] = dbk_f32_to_f16(h[i]);
    if (dbk_tensor_write(&t, b) != DBK_OK) {
        fprintf(stderr, "test_grad: cannot write an f16 tensor: %s\n", dbk_last_error());
        abort();
    }
    free(b);
    return t;
}

static void free_all(void) {
    for (int i = 0; i < nbufs; i++) dbk_buffer_destroy(bufs[i]);
    nbufs = 0;
}


/* ---------------------------------------------------------------------------------- */
/* the finite-difference engine                                                       */

/* What "the loss" is for one case: the forward ops to run, then either sum(out * wts) or,
 * when scalar is set, the single f32 the forward accumulates into (reset to 0 first). */
typedef struct loss_def {
    const dbk_op_desc *fwd;
    int                nfwd;
    const dbk_tensor  *out;
    const float       *wts;      /* (numel of out) */
    const dbk_tensor  *scalar;
} loss_def;

static dbk_status eval_loss(const loss_def *d, double *loss) {
    if (d->scalar) {
        const float zero = 0.0f;
        DBK_TRY(dbk_tensor_write(d->scalar, &zero));
    }
    for (int i = 0; i < d->nfwd; i++) DBK_TRY(dbk_backend_run(be, &d->fwd[i]));
    if (d->scalar) {
        float v;
        DBK_TRY(dbk_tensor_read(d->scalar, &v));
        *loss = (double)v;
        return DBK_OK;
    }
    float *y = (float *)dbk_test_read(d->out);
    double s = 0.0;
    for (int64_t i = 0; i < dbk_tensor_numel(d->out); i++) s += (double)y[i] * (double)d->wts[i];
    free(y);
    *loss = s;
    return DBK_OK;
}

typedef struct fd_opts {
    double eps, atol, rtol;
    double kink;                 /* skip elements with |x| < kink (0: none) */
} fd_opts;

static const fd_opts LINEAR = {0.1, 2e-3, 1e-2, 0.0};
static const fd_opts SMOOTH = {1e-2, 2e-3, 1e-2, 0.0};

/* Compares analytic (numel of param) with central differences of the loss with respect to
 * the device tensor param, whose current values are host (restored afterwards). */
static int fd_check(const char *what, const loss_def *d, const dbk_tensor *param, const float *host,
                    const float *analytic, fd_opts o) {
    const int64_t n = dbk_tensor_numel(param);
    dbk_rng r;
    dbk_rng_init(&r, 1234);
    const int64_t points = n <= MAX_POINTS ? n : MAX_POINTS;
    int checked = 0, bad = 0;
    double worst = 0.0, worst_a = 0.0, worst_n = 0.0;
    int64_t worst_i = -1;
    for (int64_t k = 0; k < points; k++) {
        const int64_t i = n <= MAX_POINTS ? k : (int64_t)dbk_rng_below(&r, (uint32_t)n);
        if (o.kink > 0.0 && fabs((double)host[i]) < o.kink) continue;
        const size_t off = param->offset + (size_t)i * sizeof(float);
        double lp, lm;
        float v = host[i] + (float)o.eps;
        DBK_CHECK_OK(dbk_buffer_write(param->buf, off, &v, sizeof v));
        DBK_CHECK_OK(eval_loss(d, &lp));
        v = host[i] - (float)o.eps;
        DBK_CHECK_OK(dbk_buffer_write(param->buf, off, &v, sizeof v));
        DBK_CHECK_OK(eval_loss(d, &lm));
        DBK_CHECK_OK(dbk_buffer_write(param->buf, off, &host[i], sizeof host[i]));
        /* The step actually taken, after rounding host[i] +- eps to fp32. */
        const double step = ((double)(host[i] + (float)o.eps) - (double)(host[i] - (float)o.eps));
        const double num = (lp - lm) / step, ana = (double)analytic[i];
        const double err = fabs(ana - num), allowed = o.atol + o.rtol * fabs(num);
        checked++;
        if (err > allowed) bad++;
        if (err - allowed > worst || worst_i < 0) {
            worst = err - allowed;
            worst_i = i;
            worst_a = ana;
            worst_n = num;
        }
    }
    DBK_CHECK_MSG(checked > 0, "%s: no element was checked", what);
    DBK_CHECK_MSG(bad == 0, "%s: %d of %d elements off; worst [%lld] analytic %.6g numeric %.6g", what, bad, checked,
                  (long long)worst_i, worst_a, worst_n);
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* convolution                                                                        */

typedef struct conv_case {
    int n, c, h, w, k, r, s, stride, pad;
} conv_case;

static const conv_case conv_cases[] = {
    {2, 3, 6, 6, 4, 3, 3, 1, 1},    /* 3x3 same padding */
    {1, 2, 7, 5, 3, 3, 3, 2, 1},    /* batch 1, odd non-square input, stride 2 */
    {2, 3, 5, 5, 2, 3, 3, 1, 0},    /* no padding */
    {2, 4, 5, 5, 3, 1, 1, 1, 0},    /* 1x1 (im2col skipped) */
    {3, 3, 6, 6, 2, 1, 1, 2, 0},    /* 1x1 stride 2 (downsample shortcut) */
    {1, 2, 11, 11, 3, 7, 7, 2, 3},  /* 7x7 stride 2 pad 3 (ResNet-50 stem) */
    {9, 2, 3, 3, 3, 3, 3, 1, 1},    /* several images per SGEMM chunk */
};

static void conv_desc(dbk_op_desc *d, dbk_op op, const conv_case *cc) {
    memset(d, 0, sizeof *d);
    d->op = op;
    d->p.conv = (dbk_conv2d_params){cc->stride, cc->stride, cc->pad, cc->pad};
}

/* Checks dx (BWD_DATA) or dw (BWD_FILTER) of one case against the forward's differences. */
static int conv_case_grads(const conv_case *cc, dbk_op which) {
    const int p = (cc->h + 2 * cc->pad - cc->r) / cc->stride + 1, q = (cc->w + 2 * cc->pad - cc->s) / cc->stride + 1;
    dbk_tensor x = new_f32(4, cc->n, cc->c, cc->h, cc->w), w = new_f32(4, cc->k, cc->c, cc->r, cc->s);
    dbk_tensor y = new_f32(4, cc->n, cc->k, p, q), dy = new_f32(4, cc->n, cc->k, p, q);
    dbk_tensor dx = new_f32(4, cc->n, cc->c, cc->h, cc->w), dw = new_f32(4, cc->k, cc->c, cc->r, cc->s);
    float *hx = dbk_test_uniform(dbk_tensor_numel(&x), -1.0f, 1.0f, 1);
    float *hw = dbk_test_uniform(dbk_tensor_numel(&w), -0.5f, 0.5f, 2);
    float *g = dbk_test_uniform(dbk_tensor_numel(&y), -1.0f, 1.0f, 3);
    DBK_CHECK_OK(dbk_tensor_write(&x, hx));
    DBK_CHECK_OK(dbk_tensor_write(&w, hw));
    DBK_CHECK_OK(dbk_tensor_write(&dy, g));

    dbk_op_desc f, bd, bf;
    conv_desc(&f, DBK_OP_CONV2D_FWD, cc);
    f.src[0] = x; f.src[1] = w; f.dst[0] = y;
    conv_desc(&bd, DBK_OP_CONV2D_BWD_DATA, cc);
    bd.src[0] = dy; bd.src[1] = w; bd.dst[0] = dx;
    conv_desc(&bf, DBK_OP_CONV2D_BWD_FILTER, cc);
    bf.src[0] = x; bf.src[1] = dy; bf.dst[0] = dw;
    DBK_CHECK_OK(dbk_backend_run(be, &bd));
    DBK_CHECK_OK(dbk_backend_run(be, &bf));
    float *adx = (float *)dbk_test_read(&dx), *adw = (float *)dbk_test_read(&dw);

    char name[128];
    snprintf(name, sizeof name, "conv N%d C%d %dx%d K%d %dx%d s%d p%d", cc->n, cc->c, cc->h, cc->w, cc->k, cc->r,
             cc->s, cc->stride, cc->pad);
    const loss_def d = {&f, 1, &y, g, NULL};
    char what[160];
    int rc;
    if (which == DBK_OP_CONV2D_BWD_DATA) {
        snprintf(what, sizeof what, "%s dx", name);
        rc = fd_check(what, &d, &x, hx, adx, LINEAR);
    } else {
        snprintf(what, sizeof what, "%s dw", name);
        rc = fd_check(what, &d, &w, hw, adw, LINEAR);
    }
    free(hx); free(hw); free(g); free(adx); free(adw);
    free_all();
    return rc;
}

int conv2d_bwd_data_should_match_finite_differences(void) {
    for (size_t i = 0; i < sizeof conv_cases / sizeof conv_cases[0]; i++)
        if (conv_case_grads(&conv_cases[i], DBK_OP_CONV2D_BWD_DATA)) return 1;
    return 0;
}

int conv2d_bwd_filter_should_match_finite_differences(void) {
    for (size_t i = 0; i < sizeof conv_cases / sizeof conv_cases[0]; i++)
        if (conv_case_grads(&conv_cases[i], DBK_OP_CONV2D_BWD_FILTER)) return 1;
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* GEMM: the gradient identities of C = alpha op(A) op(B), computed with the GEMM op     */

static dbk_op_desc gemm_desc(dbk_tensor a, dbk_tensor b, dbk_tensor c, bool ta, bool tb, float alpha) {
    dbk_op_desc d;
    memset(&d, 0, sizeof d);
    d.op = DBK_OP_GEMM;
    d.p.gemm = (dbk_gemm_params){ta, tb, alpha, 0.0f};
    d.src[0] = a; d.src[1] = b; d.dst[0] = c;
    return d;
}

static int gemm_case_grads(int m, int n, int k, bool ta, bool tb) {
    const float alpha = 0.7f;
    dbk_tensor a = ta ? new_f32(2, k, m, 1, 1) : new_f32(2, m, k, 1, 1);
    dbk_tensor b = tb ? new_f32(2, n, k, 1, 1) : new_f32(2, k, n, 1, 1);
    dbk_tensor c = new_f32(2, m, n, 1, 1), dc = new_f32(2, m, n, 1, 1);
    dbk_tensor da = ta ? new_f32(2, k, m, 1, 1) : new_f32(2, m, k, 1, 1);
    dbk_tensor db = tb ? new_f32(2, n, k, 1, 1) : new_f32(2, k, n, 1, 1);
    float *ha = dbk_test_uniform(m * k, -1.0f, 1.0f, 11), *hb = dbk_test_uniform(k * n, -1.0f, 1.0f, 12);
    float *g = dbk_test_uniform(m * n, -1.0f, 1.0f, 13);
    DBK_CHECK_OK(dbk_tensor_write(&a, ha));
    DBK_CHECK_OK(dbk_tensor_write(&b, hb));
    DBK_CHECK_OK(dbk_tensor_write(&dc, g));

    /* dL/d op(A) = alpha dC op(B)^T and dL/d op(B) = alpha op(A)^T dC; a transposed
     * operand receives the transpose, which the trans flags express without copies. */
    dbk_op_desc gda = ta ? gemm_desc(b, dc, da, tb, true, alpha) : gemm_desc(dc, b, da, false, !tb, alpha);
    dbk_op_desc gdb = tb ? gemm_desc(dc, a, db, true, ta, alpha) : gemm_desc(a, dc, db, !ta, false, alpha);
    DBK_CHECK_OK(dbk_backend_run(be, &gda));
    DBK_CHECK_OK(dbk_backend_run(be, &gdb));
    float *ada = (float *)dbk_test_read(&da), *adb = (float *)dbk_test_read(&db);

    const dbk_op_desc f = gemm_desc(a, b, c, ta, tb, alpha);
    const loss_def d = {&f, 1, &c, g, NULL};
    char what[96];
    snprintf(what, sizeof what, "gemm %dx%dx%d ta=%d tb=%d dA", m, n, k, ta, tb);
    int rc = fd_check(what, &d, &a, ha, ada, LINEAR);
    snprintf(what, sizeof what, "gemm %dx%dx%d ta=%d tb=%d dB", m, n, k, ta, tb);
    if (rc == 0) rc = fd_check(what, &d, &b, hb, adb, LINEAR);
    free(ha); free(hb); free(g); free(ada); free(adb);
    free_all();
    return rc;
}

/* GEMM is its own backward: the gradient identities, computed with the GEMM op. */
int gemm_should_match_finite_differences(void) {
    for (int t = 0; t < 4; t++) {
        if (gemm_case_grads(5, 7, 3, t & 1, t & 2)) return 1;
        if (gemm_case_grads(1, 9, 6, t & 1, t & 2)) return 1;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* batch norm                                                                         */

/* x for the fused batch norm + ReLU: per channel, pairs 2 + u, 2 - u with |u| in [0.4, 1]
 * (the last value of an odd count exactly 2), so the mean is 2 and every pre-activation
 * gamma * xhat + beta stays clear of ReLU's kink by far more than a step moves it (beta: see
 * the caller). */
static void relu_safe_bn_input(float *x, int n, int c, int hw, uint32_t seed, bool distinct) {
    const int m = n * hw;
    float *u = dbk_test_uniform((int64_t)m * c, 0.4f, 1.0f, seed);
    if (distinct) { /* the fused max pool: a channel's pairs 0.6 / (m / 2) >= 2 eps apart, shuffled */
        int32_t *perm = malloc((size_t)m * sizeof(int32_t));
        dbk_rng r;
        dbk_rng_init(&r, seed);
        for (int ch = 0; ch < c; ch++) {
            dbk_rng_permutation(&r, perm, (int32_t)(m / 2));
            for (int pair = 0; pair < m / 2; pair++)
                u[(int64_t)ch * m + pair * 2] = 0.4f + 0.6f * ((float)perm[pair] + 0.5f) / (float)(m / 2);
        }
        free(perm);
    }
    for (int ch = 0; ch < c; ch++)
        for (int k = 0; k < m; k++) {
            const int pair = k / 2, i = k / hw, j = k % hw;
            const float v = u[(int64_t)ch * m + pair * 2];
            x[((int64_t)i * c + ch) * hw + j] = k == m - 1 && m % 2 ? 2.0f : (k % 2 ? 2.0f - v : 2.0f + v);
        }
    free(u);
}

/* What batchnorm_case_grads differentiates: batch norm, the fused batch norm + ReLU, or that
 * and the residual add, or that and the 2x2 max pool. */
typedef enum bn_fusion { BN_PLAIN, BN_RELU, BN_RELU_ADD, BN_RELU_POOL } bn_fusion;

/* Batch norm's gradients; fused with ReLU (DBK_OP_BATCHNORM_RELU_*) or with ReLU and the
 * residual add (DBK_OP_BATCHNORM_RELU_ADD_*: y = relu(bn(x)) + skip, the mask recomputed in
 * the backward) or the 2x2 max pool (DBK_OP_BATCHNORM_RELU_POOL_*: y pooled, the winners
 * recomputed in the backward; the data keeps a window's values >= 2 eps apart), about half
 * the pre-activations below 0; with f16, the backward reads x from its f16 copy (mixed
 * precision). */
static int batchnorm_case_grads(int n, int c, int h, int w, bn_fusion fusion, bool f16) {
    const bool relu = fusion != BN_PLAIN, add = fusion == BN_RELU_ADD, pool = fusion == BN_RELU_POOL;
    const int yh = pool ? h / 2 : h, yw = pool ? w / 2 : w;
    dbk_tensor x = new_f32(4, n, c, h, w), y = new_f32(4, n, c, yh, yw), dy = new_f32(4, n, c, yh, yw);
    dbk_tensor skip = new_f32(4, n, c, h, w);
    dbk_tensor dx = new_f32(4, n, c, h, w);
    dbk_tensor gamma = new_f32(1, c, 1, 1, 1), beta = new_f32(1, c, 1, 1, 1);
    dbk_tensor mean = new_f32(1, c, 1, 1, 1), invstd = new_f32(1, c, 1, 1, 1);
    dbk_tensor rmean = new_f32(1, c, 1, 1, 1), rvar = new_f32(1, c, 1, 1, 1);
    dbk_tensor dgamma = new_f32(1, c, 1, 1, 1), dbeta = new_f32(1, c, 1, 1, 1);
    const int64_t nx = dbk_tensor_numel(&x);
    /* An offset of 2 checks that nothing depends on the data being centred. */
    float *hx = dbk_test_uniform(nx, 1.0f, 3.0f, 21), *hg = dbk_test_uniform(c, 0.5f, 1.5f, 22);
    float *hb = dbk_test_uniform(c, -0.5f, 0.5f, 23), *g = dbk_test_uniform(dbk_tensor_numel(&y), -1.0f, 1.0f, 24);
    float *ones = dbk_test_uniform(c, 1.0f, 1.0f, 0), *hs = dbk_test_uniform(nx, -1.0f, 1.0f, 26);
    if (relu) { /* gamma in [0.8, 1.5], |beta| in [0.05, 0.1]: the kink stays >= 0.05 away */
        relu_safe_bn_input(hx, n, c, h * w, 25, pool);
        for (int i = 0; i < c; i++) {
            hg[i] = 0.8f + 0.7f * (hg[i] - 0.5f);
            hb[i] = (hb[i] < 0.0f ? -0.05f : 0.05f) + 0.1f * hb[i];
        }
    }
    if (f16) round_to_f16(hx, nx);
    DBK_CHECK_OK(dbk_tensor_write(&x, hx));
    DBK_CHECK_OK(dbk_tensor_write(&gamma, hg));
    DBK_CHECK_OK(dbk_tensor_write(&beta, hb));
    DBK_CHECK_OK(dbk_tensor_write(&dy, g));
    DBK_CHECK_OK(dbk_tensor_write(&rmean, ones));
    DBK_CHECK_OK(dbk_tensor_write(&rvar, ones));
    DBK_CHECK_OK(dbk_tensor_write(&skip, hs));

    dbk_op_desc f;
    memset(&f, 0, sizeof f);
    f.op = pool   ? DBK_OP_BATCHNORM_RELU_POOL_FWD_TRAIN
           : add  ? DBK_OP_BATCHNORM_RELU_ADD_FWD_TRAIN
           : relu ? DBK_OP_BATCHNORM_RELU_FWD_TRAIN
                  : DBK_OP_BATCHNORM_FWD_TRAIN;
    f.p.bn = (dbk_bn_params){1e-5f, 0.1f};
    f.src[0] = x; f.src[1] = gamma; f.src[2] = beta;
    if (add) f.src[3] = skip;
    f.dst[0] = y; f.dst[1] = mean; f.dst[2] = invstd; f.dst[3] = rmean; f.dst[4] = rvar;
    dbk_op_desc b;
    memset(&b, 0, sizeof b);
    b.op = pool   ? DBK_OP_BATCHNORM_RELU_POOL_BWD
           : add  ? DBK_OP_BATCHNORM_RELU_ADD_BWD
           : relu ? DBK_OP_BATCHNORM_RELU_BWD
                  : DBK_OP_BATCHNORM_BWD;
    b.p.bn = f.p.bn;
    b.src[0] = f16 ? f16_copy_of(hx, 4, n, c, h, w) : x;
    b.src[1] = dy; b.src[2] = gamma; b.src[3] = mean; b.src[4] = invstd;
    if (relu) b.src[5] = add || pool ? beta : y;
    b.dst[0] = dx; b.dst[1] = dgamma; b.dst[2] = dbeta;
    DBK_CHECK_OK(dbk_backend_run(be, &f));
    DBK_CHECK_OK(dbk_backend_run(be, &b));
    float *adx = (float *)dbk_test_read(&dx), *adg = (float *)dbk_test_read(&dgamma), *adb = (float *)dbk_test_read(&dbeta);

    int clamped = 0;
    if (relu && !pool) {
        float *hy = (float *)dbk_test_read(&y);
        for (int64_t i = 0; i < nx; i++) clamped += hy[i] == (add ? hs[i] : 0.0f);   /* relu(bn(x)) == 0 */
        free(hy);
        DBK_CHECK_MSG(clamped > 0 && clamped < nx, "batchnorm+relu (%d,%d,%d,%d): %d of %lld outputs clamped, "
                      "expected some but not all", n, c, h, w, clamped, (long long)nx);
    }
    const loss_def d = {&f, 1, &y, g, NULL};
    const char *op = pool ? "batchnorm+relu+pool" : add ? "batchnorm+relu+add" : relu ? "batchnorm+relu" : "batchnorm";
    char what[96];
    const char *x16 = f16 ? ", f16 x" : "";
    snprintf(what, sizeof what, "%s (%d,%d,%d,%d)%s dx", op, n, c, h, w, x16);
    int rc = fd_check(what, &d, &x, hx, adx, SMOOTH);
    snprintf(what, sizeof what, "%s (%d,%d,%d,%d)%s dgamma", op, n, c, h, w, x16);
    if (rc == 0) rc = fd_check(what, &d, &gamma, hg, adg, SMOOTH);
    snprintf(what, sizeof what, "%s (%d,%d,%d,%d)%s dbeta", op, n, c, h, w, x16);
    if (rc == 0) rc = fd_check(what, &d, &beta, hb, adb, SMOOTH);
    /* skip's gradient is dy itself: the graph copies it, so the forward must add skip as is */
    snprintf(what, sizeof what, "%s (%d,%d,%d,%d) dskip", op, n, c, h, w);
    if (rc == 0 && add) rc = fd_check(what, &d, &skip, hs, g, SMOOTH);
    free(hx); free(hg); free(hb); free(g); free(ones); free(hs); free(adx); free(adg); free(adb);
    free_all();
    return rc;
}

static int batchnorm_cases_grads(bn_fusion fusion, bool f16) {
    if (batchnorm_case_grads(3, 2, 4, 4, fusion, f16)) return 1;
    if (batchnorm_case_grads(1, 3, 3, 5, fusion, f16)) return 1;   /* batch 1: statistics over H*W only */
    return batchnorm_case_grads(5, 4, 1, 1, fusion, f16);          /* 1x1 maps: statistics over N only */
}

int batchnorm_bwd_should_match_finite_differences(void) {
    return batchnorm_cases_grads(BN_PLAIN, false) || batchnorm_cases_grads(BN_PLAIN, true);
}

/* The fused batch norm + ReLU against its own forward's differences, the kink kept away by
 * the data (relu_safe_bn_input). */
int batchnorm_relu_bwd_should_match_finite_differences(void) { return batchnorm_cases_grads(BN_RELU, false); }

/* The fused batch norm + ReLU + residual add likewise: its backward recomputes the mask from
 * x, so this also checks that the recomputed mask is the forward's. */
int batchnorm_relu_add_bwd_should_match_finite_differences(void) {
    return batchnorm_cases_grads(BN_RELU_ADD, false);
}

/* The fused batch norm + ReLU + 2x2 max pool likewise, also with an odd height (a last row in
 * no window, its gradient through the statistics only); its backward finds the winners
 * again, so this checks that they are the forward's. */
int batchnorm_relu_pool_bwd_should_match_finite_differences(void) {
    if (batchnorm_case_grads(3, 2, 4, 4, BN_RELU_POOL, false)) return 1;
    return batchnorm_case_grads(1, 3, 5, 6, BN_RELU_POOL, false);
}

/* ---------------------------------------------------------------------------------- */
/* relu, scale, add                                                                   */

/* f16: the backward reads y from its f16 copy (mixed precision). */
static int relu_case_grads(bool f16) {
    const int64_t n = 120;
    dbk_tensor x = new_f32(2, 10, 12, 1, 1), y = new_f32(2, 10, 12, 1, 1);
    dbk_tensor dy = new_f32(2, 10, 12, 1, 1), dx = new_f32(2, 10, 12, 1, 1);
    float *hx = dbk_test_uniform(n, -1.0f, 1.0f, 31), *g = dbk_test_uniform(n, -1.0f, 1.0f, 32);
    if (f16) round_to_f16(hx, n);
    DBK_CHECK_OK(dbk_tensor_write(&x, hx));
    DBK_CHECK_OK(dbk_tensor_write(&dy, g));
    dbk_op_desc f = {.op = DBK_OP_RELU_FWD}, b = {.op = DBK_OP_RELU_BWD};
    f.src[0] = x; f.dst[0] = y;
    b.src[0] = y; b.src[1] = dy; b.dst[0] = dx;
    DBK_CHECK_OK(dbk_backend_run(be, &f));
    float *hy = (float *)dbk_test_read(&y);
    if (f16) b.src[0] = f16_copy_of(hy, 2, 10, 12, 1, 1);
    DBK_CHECK_OK(dbk_backend_run(be, &b));
    float *adx = (float *)dbk_test_read(&dx);
    const loss_def d = {&f, 1, &y, g, NULL};
    fd_opts o = SMOOTH;
    o.kink = 2.0 * o.eps;
    int rc = fd_check(f16 ? "relu, f16 y, dx" : "relu dx", &d, &x, hx, adx, o);
    free(hx); free(hy); free(g); free(adx);
    free_all();
    return rc;
}

int relu_bwd_should_match_finite_differences(void) { return relu_case_grads(false) || relu_case_grads(true); }

/* SCALE is its own backward (dx = alpha dy); the model uses it that way. */
int scale_should_match_finite_differences(void) {
    const int64_t n = 24;
    dbk_tensor x = new_f32(1, n, 1, 1, 1), y = new_f32(1, n, 1, 1, 1);
    dbk_tensor dy = new_f32(1, n, 1, 1, 1), dx = new_f32(1, n, 1, 1, 1);
    float *hx = dbk_test_uniform(n, -1.0f, 1.0f, 41), *g = dbk_test_uniform(n, -1.0f, 1.0f, 42);
    DBK_CHECK_OK(dbk_tensor_write(&x, hx));
    DBK_CHECK_OK(dbk_tensor_write(&dy, g));
    dbk_op_desc f = {.op = DBK_OP_SCALE, .p.scale = {-0.125f}}, b = f;
    f.src[0] = x; f.dst[0] = y;
    b.src[0] = dy; b.dst[0] = dx;
    DBK_CHECK_OK(dbk_backend_run(be, &b));
    float *adx = (float *)dbk_test_read(&dx);
    const loss_def d = {&f, 1, &y, g, NULL};
    int rc = fd_check("scale dx", &d, &x, hx, adx, LINEAR);
    free(hx); free(g); free(adx);
    free_all();
    return rc;
}

/* ADD's backward hands dy unchanged to both inputs (the model copies or reuses dy). */
int add_should_match_finite_differences(void) {
    const int64_t n = 30;
    dbk_tensor a = new_f32(2, 5, 6, 1, 1), b = new_f32(2, 5, 6, 1, 1), y = new_f32(2, 5, 6, 1, 1);
    float *ha = dbk_test_uniform(n, -1.0f, 1.0f, 51), *hb = dbk_test_uniform(n, -1.0f, 1.0f, 52);
    float *g = dbk_test_uniform(n, -1.0f, 1.0f, 53);
    DBK_CHECK_OK(dbk_tensor_write(&a, ha));
    DBK_CHECK_OK(dbk_tensor_write(&b, hb));
    dbk_op_desc f = {.op = DBK_OP_ADD};
    f.src[0] = a; f.src[1] = b; f.dst[0] = y;
    const loss_def d = {&f, 1, &y, g, NULL};
    int rc = fd_check("add da", &d, &a, ha, g, LINEAR);
    if (rc == 0) rc = fd_check("add db", &d, &b, hb, g, LINEAR);
    free(ha); free(hb); free(g);
    free_all();
    return rc;
}

/* ---------------------------------------------------------------------------------- */
/* max pool                                                                           */

static int maxpool_case_grads(int n, int c, int h, int w, int r, int s, int stride, int pad) {
    const int p = (h + 2 * pad - r) / stride + 1, q = (w + 2 * pad - s) / stride + 1;
    dbk_tensor x = new_f32(4, n, c, h, w), dx = new_f32(4, n, c, h, w);
    dbk_tensor y = new_f32(4, n, c, p, q), dy = new_f32(4, n, c, p, q);
    dbk_tensor arg = new_tensor(DBK_DTYPE_I32, 4, n, c, p, q);
    const int64_t nx = dbk_tensor_numel(&x);
    /* Distinct values 0.05 apart in random order: no ties, and a 1e-2 step keeps winners. */
    int32_t *perm = malloc((size_t)nx * sizeof(int32_t));
    dbk_rng r0;
    dbk_rng_init(&r0, 61);
    dbk_rng_permutation(&r0, perm, (int32_t)nx);
    float *hx = malloc((size_t)nx * sizeof(float));
    for (int64_t i = 0; i < nx; i++) hx[i] = 0.05f * (float)perm[i] - 1.0f;
    float *g = dbk_test_uniform(dbk_tensor_numel(&y), -1.0f, 1.0f, 62);
    DBK_CHECK_OK(dbk_tensor_write(&x, hx));
    DBK_CHECK_OK(dbk_tensor_write(&dy, g));
    dbk_op_desc f = {.op = DBK_OP_MAXPOOL_FWD, .p.pool = {r, s, stride, stride, pad, pad}}, b = f;
    b.op = DBK_OP_MAXPOOL_BWD;
    f.src[0] = x; f.dst[0] = y; f.dst[1] = arg;
    b.src[0] = dy; b.src[1] = arg; b.dst[0] = dx;
    DBK_CHECK_OK(dbk_backend_run(be, &f));
    DBK_CHECK_OK(dbk_backend_run(be, &b));
    float *adx = (float *)dbk_test_read(&dx);
    const loss_def d = {&f, 1, &y, g, NULL};
    char what[96];
    snprintf(what, sizeof what, "maxpool (%d,%d,%d,%d) %dx%d s%d p%d dx", n, c, h, w, r, s, stride, pad);
    int rc = fd_check(what, &d, &x, hx, adx, SMOOTH);
    free(perm); free(hx); free(g); free(adx);
    free_all();
    return rc;
}

int maxpool_bwd_should_match_finite_differences(void) {
    if (maxpool_case_grads(2, 3, 6, 6, 2, 2, 2, 0)) return 1;   /* ResNet9's 2x2 */
    if (maxpool_case_grads(2, 2, 7, 7, 3, 3, 2, 0)) return 1;   /* overlapping windows */
    if (maxpool_case_grads(2, 2, 8, 7, 3, 3, 2, 1)) return 1;   /* the ResNet stem's 3x3/2 pad 1 */
    return maxpool_case_grads(3, 4, 4, 5, 4, 5, 1, 0);          /* global */
}

/* ---------------------------------------------------------------------------------- */
/* softmax cross-entropy: L = grad_scale * sum_i loss_i, read from the loss accumulator   */

static int xent_case_grads(float smoothing, float grad_scale) {
    const int n = 4, k = 5;
    dbk_tensor z = new_f32(2, n, k, 1, 1), probs = new_f32(2, n, k, 1, 1), dz = new_f32(2, n, k, 1, 1);
    dbk_tensor labels = new_tensor(DBK_DTYPE_I32, 1, n, 1, 1, 1), loss = new_f32(1, 1, 1, 1, 1);
    float *hz = dbk_test_uniform(n * k, -2.0f, 2.0f, 71);
    const int32_t hl[4] = {0, 4, 2, 2};
    DBK_CHECK_OK(dbk_tensor_write(&z, hz));
    DBK_CHECK_OK(dbk_tensor_write(&labels, hl));
    dbk_op_desc f = {.op = DBK_OP_SOFTMAX_XENT_FWD, .p.xent = {smoothing, 0.0f}};
    f.src[0] = z; f.src[1] = labels; f.dst[0] = probs; f.dst[1] = loss;
    dbk_op_desc b = {.op = DBK_OP_SOFTMAX_XENT_BWD, .p.xent = {smoothing, grad_scale}};
    b.src[0] = probs; b.src[1] = labels; b.dst[0] = dz;
    double l0;
    const loss_def d = {&f, 1, NULL, NULL, &loss};
    DBK_CHECK_OK(eval_loss(&d, &l0));
    DBK_CHECK_OK(dbk_backend_run(be, &b));
    float *adz = (float *)dbk_test_read(&dz);
    /* The numeric side differentiates sum_i loss_i; divide the analytic side by grad_scale. */
    for (int i = 0; i < n * k; i++) adz[i] /= grad_scale;
    char what[96];
    snprintf(what, sizeof what, "softmax_xent eps=%g scale=%g dlogits", (double)smoothing, (double)grad_scale);
    int rc = fd_check(what, &d, &z, hz, adz, SMOOTH);
    free(hz); free(adz);
    free_all();
    return rc;
}

int softmax_xent_bwd_should_match_finite_differences(void) {
    if (xent_case_grads(0.0f, 1.0f)) return 1;
    if (xent_case_grads(0.2f, 1.0f)) return 1;
    return xent_case_grads(0.1f, 0.25f);
}

/* ---------------------------------------------------------------------------------- */
/* GELU and the conv bias (airbench94's ops)                                          */

/* GELU is smooth everywhere (no kinks); x spans [-4, 4) so that both the linear-looking
 * right side and the dip near x = -0.75, where dx changes sign, are checked. */
int gelu_bwd_should_match_finite_differences(void) {
    const int64_t n = 120;
    dbk_tensor x = new_f32(2, 10, 12, 1, 1), y = new_f32(2, 10, 12, 1, 1);
    dbk_tensor dy = new_f32(2, 10, 12, 1, 1), dx = new_f32(2, 10, 12, 1, 1);
    float *hx = dbk_test_uniform(n, -4.0f, 4.0f, 81), *g = dbk_test_uniform(n, -1.0f, 1.0f, 82);
    DBK_CHECK_OK(dbk_tensor_write(&x, hx));
    DBK_CHECK_OK(dbk_tensor_write(&dy, g));
    dbk_op_desc f = {.op = DBK_OP_GELU_FWD}, b = {.op = DBK_OP_GELU_BWD};
    f.src[0] = x; f.dst[0] = y;
    b.src[0] = x; b.src[1] = dy; b.dst[0] = dx;
    DBK_CHECK_OK(dbk_backend_run(be, &b));
    float *adx = (float *)dbk_test_read(&dx);
    const loss_def d = {&f, 1, &y, g, NULL};
    int rc = fd_check("gelu dx", &d, &x, hx, adx, SMOOTH);
    free(hx); free(g); free(adx);
    free_all();
    return rc;
}

/* SiLU is smooth; x spans [-6, 6): both saturating sides and the minimum near x = -1.28. */
int silu_bwd_should_match_finite_differences(void) {
    const int64_t n = 120;
    dbk_tensor x = new_f32(2, 10, 12, 1, 1), y = new_f32(2, 10, 12, 1, 1);
    dbk_tensor dy = new_f32(2, 10, 12, 1, 1), dx = new_f32(2, 10, 12, 1, 1);
    float *hx = dbk_test_uniform(n, -6.0f, 6.0f, 85), *g = dbk_test_uniform(n, -1.0f, 1.0f, 86);
    DBK_CHECK_OK(dbk_tensor_write(&x, hx));
    DBK_CHECK_OK(dbk_tensor_write(&dy, g));
    dbk_op_desc f = {.op = DBK_OP_SILU_FWD}, b = {.op = DBK_OP_SILU_BWD};
    f.src[0] = x; f.dst[0] = y;
    b.src[0] = x; b.src[1] = dy; b.dst[0] = dx;
    DBK_CHECK_OK(dbk_backend_run(be, &b));
    float *adx = (float *)dbk_test_read(&dx);
    const loss_def d = {&f, 1, &y, g, NULL};
    int rc = fd_check("silu dx", &d, &x, hx, adx, SMOOTH);
    free(hx); free(g); free(adx);
    free_all();
    return rc;
}

/* CHANNEL_SUM is the gradient of BIAS_ADD with respect to b: the loss sum(y * G) with
 * y = bias_add(x, b) has dL/db[c] = sum over n,h,w of G[n,c,h,w]. Linear in b. */
static int channel_sum_case_grads(int n, int c, int h, int w) {
    dbk_tensor x = new_f32(4, n, c, h, w), y = new_f32(4, n, c, h, w), gy = new_f32(4, n, c, h, w);
    dbk_tensor bias = new_f32(1, c, 1, 1, 1), db = new_f32(1, c, 1, 1, 1);
    const int64_t nx = dbk_tensor_numel(&x);
    float *hx = dbk_test_uniform(nx, -1.0f, 1.0f, 91), *hb = dbk_test_uniform(c, -1.0f, 1.0f, 92);
    float *g = dbk_test_uniform(nx, -1.0f, 1.0f, 93);
    DBK_CHECK_OK(dbk_tensor_write(&x, hx));
    DBK_CHECK_OK(dbk_tensor_write(&bias, hb));
    DBK_CHECK_OK(dbk_tensor_write(&gy, g));
    dbk_op_desc f = {.op = DBK_OP_BIAS_ADD}, b = {.op = DBK_OP_CHANNEL_SUM};
    f.src[0] = x; f.src[1] = bias; f.dst[0] = y;
    b.src[0] = gy; b.dst[0] = db;
    DBK_CHECK_OK(dbk_backend_run(be, &b));
    float *adb = (float *)dbk_test_read(&db);
    const loss_def d = {&f, 1, &y, g, NULL};
    char what[96];
    snprintf(what, sizeof what, "bias (%d,%d,%d,%d) db", n, c, h, w);
    int rc = fd_check(what, &d, &bias, hb, adb, LINEAR);
    free(hx); free(hb); free(g); free(adb);
    free_all();
    return rc;
}

int channel_sum_should_match_finite_differences(void) {
    if (channel_sum_case_grads(3, 4, 5, 5)) return 1;
    if (channel_sum_case_grads(1, 24, 7, 7)) return 1;   /* batch 1, airbench's 24 channels */
    return channel_sum_case_grads(4, 3, 1, 1);           /* 1x1 maps: a sum over N only */
}

/* ---------------------------------------------------------------------------------- */
/* global average pool                                                                */

/* y = mean of each plane is linear in x: dL/dx[n,c,h,w] = G[n,c] / (H*W). */
static int global_avgpool_case_grads(int n, int c, int h, int w) {
    dbk_tensor x = new_f32(4, n, c, h, w), y = new_f32(4, n, c, 1, 1), dy = new_f32(4, n, c, 1, 1);
    dbk_tensor dx = new_f32(4, n, c, h, w);
    const int64_t nx = dbk_tensor_numel(&x), ny = dbk_tensor_numel(&y);
    float *hx = dbk_test_uniform(nx, -1.0f, 1.0f, 95), *g = dbk_test_uniform(ny, -1.0f, 1.0f, 96);
    DBK_CHECK_OK(dbk_tensor_write(&x, hx));
    DBK_CHECK_OK(dbk_tensor_write(&dy, g));
    dbk_op_desc f = {.op = DBK_OP_GLOBAL_AVGPOOL_FWD}, b = {.op = DBK_OP_GLOBAL_AVGPOOL_BWD};
    f.src[0] = x; f.dst[0] = y;
    b.src[0] = dy; b.dst[0] = dx;
    DBK_CHECK_OK(dbk_backend_run(be, &b));
    float *adx = (float *)dbk_test_read(&dx);
    const loss_def d = {&f, 1, &y, g, NULL};
    char what[96];
    snprintf(what, sizeof what, "global avgpool (%d,%d,%d,%d) dx", n, c, h, w);
    int rc = fd_check(what, &d, &x, hx, adx, LINEAR);
    free(hx); free(g); free(adx);
    free_all();
    return rc;
}

int global_avgpool_bwd_should_match_finite_differences(void) {
    if (global_avgpool_case_grads(2, 3, 5, 7)) return 1;
    if (global_avgpool_case_grads(1, 8, 4, 4)) return 1;   /* batch 1, ResNet-18's last plane size */
    return global_avgpool_case_grads(3, 4, 1, 1);           /* 1x1 plane: the identity */
}

/* ---------------------------------------------------------------------------------- */
/* leaky ReLU and dropout                                                             */

/* Leaky ReLU with slope 0.1 has a kink at 0: inputs within 2 eps of it are skipped. */
int leaky_relu_bwd_should_match_finite_differences(void) {
    const int64_t n = 120;
    dbk_tensor x = new_f32(2, 10, 12, 1, 1), y = new_f32(2, 10, 12, 1, 1);
    dbk_tensor dy = new_f32(2, 10, 12, 1, 1), dx = new_f32(2, 10, 12, 1, 1);
    float *hx = dbk_test_uniform(n, -2.0f, 2.0f, 97), *g = dbk_test_uniform(n, -1.0f, 1.0f, 98);
    DBK_CHECK_OK(dbk_tensor_write(&x, hx));
    DBK_CHECK_OK(dbk_tensor_write(&dy, g));
    dbk_op_desc f = {.op = DBK_OP_LEAKY_RELU_FWD, .p.leaky.slope = 0.1f};
    dbk_op_desc b = {.op = DBK_OP_LEAKY_RELU_BWD, .p.leaky.slope = 0.1f};
    f.src[0] = x; f.dst[0] = y;
    b.src[0] = y; b.src[1] = dy; b.dst[0] = dx;
    DBK_CHECK_OK(dbk_backend_run(be, &f));   /* the backward reads the forward output */
    DBK_CHECK_OK(dbk_backend_run(be, &b));
    float *adx = (float *)dbk_test_read(&dx);
    const loss_def d = {&f, 1, &y, g, NULL};
    fd_opts o = SMOOTH;
    o.kink = 2.0 * o.eps;
    int rc = fd_check("leaky relu dx", &d, &x, hx, adx, o);
    free(hx); free(g); free(adx);
    free_all();
    return rc;
}

/* With its state fixed, dropout is linear in x: dL/dx = mask * scale * G. p = 0.5 drops about
 * half of the elements, whose gradient must be exactly the 0 the differences see. */
int dropout_bwd_should_match_finite_differences(void) {
    const int64_t n = 150;
    dbk_tensor x = new_f32(2, 10, 15, 1, 1), y = new_f32(2, 10, 15, 1, 1);
    dbk_tensor dy = new_f32(2, 10, 15, 1, 1), dx = new_f32(2, 10, 15, 1, 1);
    dbk_tensor st = new_tensor(DBK_DTYPE_I32, 1, 4, 1, 1, 1);
    const int32_t state[4] = {512, 424242, 3, 7};
    float *hx = dbk_test_uniform(n, -1.0f, 1.0f, 99), *g = dbk_test_uniform(n, -1.0f, 1.0f, 100);
    DBK_CHECK_OK(dbk_tensor_write(&x, hx));
    DBK_CHECK_OK(dbk_tensor_write(&dy, g));
    DBK_CHECK_OK(dbk_tensor_write(&st, state));
    dbk_op_desc f = {.op = DBK_OP_DROPOUT_FWD, .p.dropout = {0.5f, 3u}};
    dbk_op_desc b = {.op = DBK_OP_DROPOUT_BWD, .p.dropout = {0.5f, 3u}};
    f.src[0] = x; f.src[1] = st; f.dst[0] = y;
    b.src[0] = dy; b.src[1] = st; b.dst[0] = dx;
    DBK_CHECK_OK(dbk_backend_run(be, &b));
    float *adx = (float *)dbk_test_read(&dx);
    int zeros = 0;
    for (int64_t i = 0; i < n; i++) zeros += adx[i] == 0.0f;
    DBK_CHECK_MSG(zeros > n / 4 && zeros < 3 * n / 4, "p = 0.5 dropped %d of %lld gradients", zeros, (long long)n);
    const loss_def d = {&f, 1, &y, g, NULL};
    int rc = fd_check("dropout dx", &d, &x, hx, adx, LINEAR);
    free(hx); free(g); free(adx);
    free_all();
    return rc;
}

#define GRAD_CHECK_ROW_(E, name, ...) [DBK_OP_##E] = name##_should_match_finite_differences,
static int (*const grad_checks[DBK_OP_COUNT])(void) = {DBK_OP_LIST(GRAD_CHECK_ROW_)};
#undef GRAD_CHECK_ROW_

/* A backward op without its check fails the run instead of going unchecked. */
static int missing_check(void) { return 1; }

int main(void) {
    if (dbk_backend_create(DBK_BACKEND_KIND_CPU, 0, &be) != DBK_OK) {
        fprintf(stderr, "cannot create the CPU backend: %s\n", dbk_last_error());
        return 1;
    }
    for (int op = 0; op < DBK_OP_COUNT; op++) {
        const dbk_op_info *in = dbk_op_get_info((dbk_op)op);
        if (in->grad != DBK_OP_GRAD_BWD && in->grad != DBK_OP_GRAD_SELF) continue;
        char name[96];
        snprintf(name, sizeof name, "%s_should_match_finite_differences", in->name);
        if (!grad_checks[op]) {
            printf("op %s has a backward but no gradient check: define %s in tests/test_grad.c\n", in->name, name);
            dbk_test_run(name, missing_check);
        } else {
            dbk_test_run(name, grad_checks[op]);
        }
        free_all();
    }
    dbk_backend_destroy(be);
    return dbk_test_finish();
}
