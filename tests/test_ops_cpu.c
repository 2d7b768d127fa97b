/*
 * test_ops_cpu.c — every forward op of the CPU reference backend against an independent
 * naive reference written here (STYLE.md 3.9 item 2), plus the contract details that the
 * device backends will be held to: overwrite vs accumulate, in-place aliasing, tie
 * breaking, label guards, augmentation geometry and determinism, validation errors.
 *
 * Every tensor lives in its own buffer between two guard regions filled with a byte
 * pattern; the tensor itself starts as all-ones bytes (NaN for f32), so an op that reads an
 * output it should overwrite, or writes outside its tensor, is caught (guards_intact).
 *
 * Tolerances (NMSE = sum (ref - got)^2 / sum ref^2, reference computed in double):
 *  - conv, GEMM: 1e-9. fp32 SGEMM sums of up to a few hundred products carry relative
 *    errors ~1e-7, i.e. NMSE ~1e-13; an indexing bug gives NMSE ~1.
 *  - batch norm, softmax: 1e-10 (elementwise fp32 arithmetic on double statistics).
 *  - relu, pool, add, scale, fill, copy, accuracy, argmax: exact.
 *  - SGD, augment: max abs difference 1e-6 against the same formula in double or float;
 *    AdamW: 1e-6 (params) and 1e-7 (moments) against the textbook form in double; without a
 *    gradient: exact (one fp32 multiply).
 *  - gelu fwd/bwd: 1e-12 against the formulas in double (fp32 erff/expf are within a few ulp,
 *    NMSE ~1e-14); channel_sum: 1e-12 against a double sum; bias_add and lookahead: exact
 *    (one fp32 add; the lerp formula written out in fp32); global_avgpool: 1e-14 against a
 *    double mean (forward), exact (backward: one fp32 division).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
/* For dbk_augment_choices, the documented draw the device kernels reimplement. */
#include "backends/cpu/cpu_internal.h"
#include "core/log.h"
#include "core/rng.h"
#include "test_util.h"

static dbk_backend *be;

/* ---------------------------------------------------------------------------------- */
/* guarded tensors                                                                    */

#define GUARD_BYTES 256
#define GUARD_BYTE  0xA5
#define MAX_BUFS    64

typedef struct guarded {
    dbk_buffer *buf;
    size_t      nbytes;   /* of the tensor, between the guards */
} guarded;

static guarded bufs[MAX_BUFS];
static int nbufs;

/* A tensor of its own buffer: [guard | tensor | guard]. The tensor starts as 0xFF bytes
 * (NaN as f32, -1 as i32, 255 as u8). Released by free_all. */
static dbk_tensor gt(dbk_dtype dt, int ndim, int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    dbk_tensor t = dbk_tensor_make(NULL, GUARD_BYTES, dt, ndim, d0, d1, d2, d3);
    const size_t n = dbk_tensor_nbytes(&t), total = n + 2 * GUARD_BYTES;
    unsigned char *init = malloc(total);
    if (nbufs >= MAX_BUFS || !init || dbk_buffer_create(be, total, &t.buf) != DBK_OK) {
        fprintf(stderr, "test_ops_cpu: cannot allocate a tensor: %s\n", dbk_last_error());
        abort();
    }
    memset(init, GUARD_BYTE, total);
    memset(init + GUARD_BYTES, 0xFF, n);
    if (dbk_buffer_write(t.buf, 0, init, total) != DBK_OK) abort();
    free(init);
    bufs[nbufs++] = (guarded){t.buf, n};
    return t;
}

static dbk_tensor gf(int ndim, int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    return gt(DBK_DTYPE_F32, ndim, d0, d1, d2, d3);
}

static void free_all(void) {
    for (int i = 0; i < nbufs; i++) dbk_buffer_destroy(bufs[i].buf);
    nbufs = 0;
}

/* Every guard byte of every live tensor still holds the pattern. */
static int guards_intact(void) {
    for (int i = 0; i < nbufs; i++) {
        const size_t total = bufs[i].nbytes + 2 * GUARD_BYTES;
        unsigned char *h = malloc(total);
        DBK_CHECK_OK(dbk_buffer_read(bufs[i].buf, 0, h, total));
        for (size_t k = 0; k < GUARD_BYTES; k++) {
            const size_t back = GUARD_BYTES + bufs[i].nbytes + k;
            if (h[k] != GUARD_BYTE || h[back] != GUARD_BYTE) {
                const char *where = h[k] != GUARD_BYTE ? "before" : "after";
                free(h);
                DBK_CHECK_MSG(0, "tensor %d: guard byte %zu %s the tensor was overwritten", i, k, where);
            }
        }
        free(h);
    }
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* host helpers                                                                       */


static float *to_float(const double *d, int64_t n) {
    float *f = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    for (int64_t i = 0; i < n; i++) f[i] = (float)d[i];
    return f;
}

/* NMSE and max abs difference of got against ref; prints both on failure. */
static int close_nmse(const char *what, const float *ref, const float *got, int64_t n, double tol) {
    const double nmse = dbk_test_nmse(ref, got, (size_t)n), mad = dbk_test_max_abs_diff(ref, got, (size_t)n);
    DBK_CHECK_MSG(nmse <= tol && !isnan(mad), "%s: NMSE %.3g (tolerance %.1g), max abs diff %.3g over %lld values",
                  what, nmse, tol, mad, (long long)n);
    return 0;
}

static int close_abs(const char *what, const float *ref, const float *got, int64_t n, double tol) {
    const double mad = dbk_test_max_abs_diff(ref, got, (size_t)n);
    DBK_CHECK_MSG(mad <= tol, "%s: max abs diff %.3g (tolerance %.1g), NMSE %.3g over %lld values", what, mad, tol,
                  dbk_test_nmse(ref, got, (size_t)n), (long long)n);
    return 0;
}

static int equal_bytes(const char *what, const void *ref, const void *got, size_t n) {
    DBK_CHECK_MSG(memcmp(ref, got, n) == 0, "%s: values differ", what);
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* convolution: direct loops in double                                                */

typedef struct conv_case {
    int n, c, h, w, k, r, s, sh, sw, ph, pw;
} conv_case;

static const conv_case conv_cases[] = {
    {2, 3, 8, 8, 4, 3, 3, 1, 1, 1, 1},       /* 3x3 same */
    {1, 5, 7, 9, 3, 3, 3, 1, 1, 1, 1},       /* batch 1, odd non-square */
    {3, 4, 9, 7, 6, 3, 3, 2, 2, 1, 1},       /* stride 2 */
    {1, 4, 6, 6, 3, 3, 3, 1, 1, 0, 0},       /* no padding */
    {2, 8, 6, 6, 5, 1, 1, 1, 1, 0, 0},       /* 1x1, one image per chunk: no im2col */
    {9, 4, 3, 3, 5, 1, 1, 1, 1, 0, 0},       /* 1x1, many images per chunk */
    {2, 6, 5, 5, 4, 1, 1, 2, 2, 0, 0},       /* 1x1 stride 2 */
    {2, 3, 15, 15, 8, 7, 7, 2, 2, 3, 3},     /* 7x7 stride 2 pad 3 */
    {2, 3, 5, 6, 2, 2, 3, 1, 2, 2, 1},       /* non-square filter, mixed stride and padding */
    {2, 2, 9, 9, 3, 5, 5, 3, 3, 2, 2},       /* 5x5 stride 3 */
    {37, 5, 4, 4, 6, 3, 3, 1, 1, 1, 1},      /* chunks of many images, last one shorter */
    {3, 16, 33, 33, 17, 3, 3, 1, 1, 1, 1},   /* larger, odd channel counts */
};

static int64_t conv_p(const conv_case *c) { return (c->h + 2 * c->ph - c->r) / c->sh + 1; }
static int64_t conv_q(const conv_case *c) { return (c->w + 2 * c->pw - c->s) / c->sw + 1; }

/* Calls fn(ctx, n, k, c, p, q, h, w, r, s) for every valid (output, tap) pair. */
#define CONV_FOR_EACH_TAP(cc, body)                                                           \
    for (int n_ = 0; n_ < (cc)->n; n_++)                                                      \
        for (int k_ = 0; k_ < (cc)->k; k_++)                                                  \
            for (int p_ = 0; p_ < P; p_++)                                                    \
                for (int q_ = 0; q_ < Q; q_++)                                                \
                    for (int c_ = 0; c_ < (cc)->c; c_++)                                      \
                        for (int r_ = 0; r_ < (cc)->r; r_++)                                  \
                            for (int s_ = 0; s_ < (cc)->s; s_++) {                            \
                                const int h_ = p_ * (cc)->sh - (cc)->ph + r_;                 \
                                const int w_ = q_ * (cc)->sw - (cc)->pw + s_;                 \
                                if (h_ < 0 || h_ >= (cc)->h || w_ < 0 || w_ >= (cc)->w)       \
                                    continue;                                                 \
                                const int64_t xi = (((int64_t)n_ * (cc)->c + c_) * (cc)->h + h_) * (cc)->w + w_; \
                                const int64_t wi = (((int64_t)k_ * (cc)->c + c_) * (cc)->r + r_) * (cc)->s + s_; \
                                const int64_t yi = (((int64_t)n_ * (cc)->k + k_) * P + p_) * Q + q_; \
                                body;                                                         \
                            }

static int conv_case_check(const conv_case *cc) {
    const int64_t P = conv_p(cc), Q = conv_q(cc);
    dbk_tensor x = gf(4, cc->n, cc->c, cc->h, cc->w), w = gf(4, cc->k, cc->c, cc->r, cc->s);
    dbk_tensor y = gf(4, cc->n, cc->k, P, Q), dy = gf(4, cc->n, cc->k, P, Q);
    dbk_tensor dx = gf(4, cc->n, cc->c, cc->h, cc->w), dw = gf(4, cc->k, cc->c, cc->r, cc->s);
    const int64_t nx = dbk_tensor_numel(&x), nw = dbk_tensor_numel(&w), ny = dbk_tensor_numel(&y);
    float *hx = dbk_test_uniform(nx, -1.0f, 1.0f, 1), *hw = dbk_test_uniform(nw, -1.0f, 1.0f, 2), *hdy = dbk_test_uniform(ny, -1.0f, 1.0f, 3);
    DBK_CHECK_OK(dbk_tensor_write(&x, hx));
    DBK_CHECK_OK(dbk_tensor_write(&w, hw));
    DBK_CHECK_OK(dbk_tensor_write(&dy, hdy));

    double *ry = calloc((size_t)ny, sizeof(double)), *rdx = calloc((size_t)nx, sizeof(double));
    double *rdw = calloc((size_t)nw, sizeof(double));
    CONV_FOR_EACH_TAP(cc, {
        ry[yi] += (double)hx[xi] * (double)hw[wi];
        rdx[xi] += (double)hdy[yi] * (double)hw[wi];
        rdw[wi] += (double)hdy[yi] * (double)hx[xi];
    });

    const dbk_conv2d_params cp = {cc->sh, cc->sw, cc->ph, cc->pw};
    dbk_op_desc f = {.op = DBK_OP_CONV2D_FWD, .p.conv = cp};
    f.src[0] = x; f.src[1] = w; f.dst[0] = y;
    dbk_op_desc bd = {.op = DBK_OP_CONV2D_BWD_DATA, .p.conv = cp};
    bd.src[0] = dy; bd.src[1] = w; bd.dst[0] = dx;
    dbk_op_desc bf = {.op = DBK_OP_CONV2D_BWD_FILTER, .p.conv = cp};
    bf.src[0] = x; bf.src[1] = dy; bf.dst[0] = dw;
    DBK_CHECK_OK(dbk_backend_prepare(be, &f));
    DBK_CHECK_OK(dbk_backend_run(be, &f));
    DBK_CHECK_OK(dbk_backend_run(be, &bd));
    DBK_CHECK_OK(dbk_backend_run(be, &bf));

    char name[160];
    snprintf(name, sizeof name, "conv N%d C%d %dx%d K%d %dx%d stride %dx%d pad %dx%d", cc->n, cc->c, cc->h, cc->w,
             cc->k, cc->r, cc->s, cc->sh, cc->sw, cc->ph, cc->pw);
    float *gy = dbk_test_read(&y), *gdx = dbk_test_read(&dx), *gdw = dbk_test_read(&dw);
    float *fy = to_float(ry, ny), *fdx = to_float(rdx, nx), *fdw = to_float(rdw, nw);
    char what[200];
    int rc = 0;
    snprintf(what, sizeof what, "%s fwd", name);
    rc |= close_nmse(what, fy, gy, ny, 1e-9);
    snprintf(what, sizeof what, "%s bwd_data", name);
    rc |= close_nmse(what, fdx, gdx, nx, 1e-9);
    snprintf(what, sizeof what, "%s bwd_filter", name);
    rc |= close_nmse(what, fdw, gdw, nw, 1e-9);
    rc |= guards_intact();
    free(hx); free(hw); free(hdy); free(ry); free(rdx); free(rdw);
    free(gy); free(gdx); free(gdw); free(fy); free(fdx); free(fdw);
    free_all();
    return rc;
}

static int conv2d_should_match_direct_loops_over_shape_list(void) {
    int rc = 0;
    for (size_t i = 0; i < sizeof conv_cases / sizeof conv_cases[0]; i++) rc |= conv_case_check(&conv_cases[i]);
    return rc;
}

/* A prepared conv must not grow the workspace in run (plan, then allocate). The CPU backend
 * logs at debug level when it does, which this test listens for. */
static int grow_messages;

static void count_grow(dbk_log_level level, const char *msg, void *user) {
    (void)level;
    (void)user;
    if (strstr(msg, "workspace grows")) grow_messages++;
}

/* Conv descriptors (fwd, bwd_data, bwd_filter) for cc with tensors in buffers of `on`. */
static dbk_status conv_ops_on(dbk_backend *on, const conv_case *cc, dbk_buffer **bufs3, dbk_op_desc ops[3]) {
    const int64_t P = conv_p(cc), Q = conv_q(cc);
    const int64_t nx = (int64_t)cc->n * cc->c * cc->h * cc->w, nw = (int64_t)cc->k * cc->c * cc->r * cc->s;
    const int64_t ny = (int64_t)cc->n * cc->k * P * Q;
    DBK_TRY(dbk_buffer_create(on, (size_t)(2 * nx + 2 * nw + ny) * sizeof(float), bufs3));
    dbk_buffer *b = *bufs3;
    size_t off = 0;
    const dbk_tensor x = dbk_tensor_make(b, off, DBK_DTYPE_F32, 4, cc->n, cc->c, cc->h, cc->w);
    off += (size_t)nx * sizeof(float);
    const dbk_tensor dx = dbk_tensor_make(b, off, DBK_DTYPE_F32, 4, cc->n, cc->c, cc->h, cc->w);
    off += (size_t)nx * sizeof(float);
    const dbk_tensor w = dbk_tensor_make(b, off, DBK_DTYPE_F32, 4, cc->k, cc->c, cc->r, cc->s);
    off += (size_t)nw * sizeof(float);
    const dbk_tensor dw = dbk_tensor_make(b, off, DBK_DTYPE_F32, 4, cc->k, cc->c, cc->r, cc->s);
    off += (size_t)nw * sizeof(float);
    const dbk_tensor y = dbk_tensor_make(b, off, DBK_DTYPE_F32, 4, cc->n, cc->k, P, Q);
    float *h = dbk_test_uniform(2 * nx + 2 * nw + ny, -1.0f, 1.0f, 4);
    const dbk_status s = dbk_buffer_write(b, 0, h, (size_t)(2 * nx + 2 * nw + ny) * sizeof(float));
    free(h);
    const dbk_conv2d_params cp = {cc->sh, cc->sw, cc->ph, cc->pw};
    memset(ops, 0, 3 * sizeof *ops);
    ops[0].op = DBK_OP_CONV2D_FWD;
    ops[0].src[0] = x; ops[0].src[1] = w; ops[0].dst[0] = y;
    ops[1].op = DBK_OP_CONV2D_BWD_DATA;
    ops[1].src[0] = y; ops[1].src[1] = w; ops[1].dst[0] = dx;
    ops[2].op = DBK_OP_CONV2D_BWD_FILTER;
    ops[2].src[0] = x; ops[2].src[1] = y; ops[2].dst[0] = dw;
    for (int i = 0; i < 3; i++) ops[i].p.conv = cp;
    return s;
}

static int conv2d_should_not_grow_workspace_after_prepare(void) {
    /* A backend of its own, so the workspace starts empty. */
    dbk_backend *own;
    DBK_CHECK_OK(dbk_backend_create(DBK_BACKEND_KIND_CPU, 0, &own));
    const dbk_log_level saved = dbk_log_get_level();
    dbk_log_set_level(DBK_LOG_LEVEL_DEBUG);
    dbk_log_set_callback(count_grow, NULL);

    /* Prepared: one chunked case, one with a single image per chunk. */
    static const conv_case prepared[2] = {{6, 7, 10, 10, 9, 3, 3, 1, 1, 1, 1}, {3, 5, 50, 50, 4, 3, 3, 2, 2, 1, 1}};
    dbk_buffer *b[3] = {NULL, NULL, NULL};
    dbk_op_desc ops[2][3];
    dbk_status s = DBK_OK;
    for (int c = 0; c < 2 && s == DBK_OK; c++) s = conv_ops_on(own, &prepared[c], &b[c], ops[c]);
    for (int c = 0; c < 2; c++)
        for (int i = 0; i < 3 && s == DBK_OK; i++) s = dbk_backend_prepare(own, &ops[c][i]);
    grow_messages = 0;
    for (int c = 0; c < 2; c++)
        for (int i = 0; i < 3 && s == DBK_OK; i++) s = dbk_backend_run(own, &ops[c][i]);
    const int after_prepare = grow_messages;

    /* Control: a larger conv that was never prepared must grow, so the listener works. */
    const conv_case bigger = {4, 32, 40, 40, 8, 3, 3, 1, 1, 1, 1};
    dbk_op_desc big[3];
    if (s == DBK_OK) s = conv_ops_on(own, &bigger, &b[2], big);
    grow_messages = 0;
    if (s == DBK_OK) s = dbk_backend_run(own, &big[0]);
    const int unprepared = grow_messages;

    dbk_log_set_callback(NULL, NULL);
    dbk_log_set_level(saved);
    for (int i = 0; i < 3; i++) dbk_buffer_destroy(b[i]);
    dbk_backend_destroy(own);
    DBK_CHECK_OK(s);
    DBK_CHECK_MSG(after_prepare == 0, "%d workspace growth(s) in run after prepare", after_prepare);
    DBK_CHECK_MSG(unprepared == 1, "an unprepared larger conv grew the workspace %d times", unprepared);
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* GEMM                                                                               */

static int gemm_case_check(int m, int n, int k, bool ta, bool tb, float alpha, float beta) {
    dbk_tensor a = ta ? gf(2, k, m, 1, 1) : gf(2, m, k, 1, 1);
    dbk_tensor b = tb ? gf(2, n, k, 1, 1) : gf(2, k, n, 1, 1);
    dbk_tensor c = gf(2, m, n, 1, 1);
    float *ha = dbk_test_uniform(m * k, -1.0f, 1.0f, 5), *hb = dbk_test_uniform(k * n, -1.0f, 1.0f, 6), *hc = dbk_test_uniform(m * n, -1.0f, 1.0f, 7);
    DBK_CHECK_OK(dbk_tensor_write(&a, ha));
    DBK_CHECK_OK(dbk_tensor_write(&b, hb));
    if (beta != 0.0f) DBK_CHECK_OK(dbk_tensor_write(&c, hc));   /* else C keeps its NaN bytes */

    float *ref = malloc((size_t)(m * n + 1) * sizeof(float));
    for (int i = 0; i < m; i++) {
        for (int j = 0; j < n; j++) {
            double acc = 0.0;
            for (int l = 0; l < k; l++) {
                const double av = ta ? ha[l * m + i] : ha[i * k + l];
                const double bv = tb ? hb[j * k + l] : hb[l * n + j];
                acc += av * bv;
            }
            ref[i * n + j] = (float)((double)alpha * acc + (beta != 0.0f ? (double)beta * (double)hc[i * n + j] : 0.0));
        }
    }
    dbk_op_desc d = {.op = DBK_OP_GEMM, .p.gemm = {ta, tb, alpha, beta}};
    d.src[0] = a; d.src[1] = b; d.dst[0] = c;
    DBK_CHECK_OK(dbk_backend_run(be, &d));
    float *got = dbk_test_read(&c);
    char what[96];
    snprintf(what, sizeof what, "gemm M%d N%d K%d ta=%d tb=%d alpha=%g beta=%g", m, n, k, ta, tb, (double)alpha,
             (double)beta);
    int rc = close_nmse(what, ref, got, m * n, 1e-9);
    rc |= guards_intact();
    free(ha); free(hb); free(hc); free(ref); free(got);
    free_all();
    return rc;
}

static int gemm_should_match_naive_for_all_transposes_and_beta(void) {
    static const int shapes[][3] = {{1, 1, 1}, {5, 7, 3}, {17, 13, 33}, {64, 10, 70}, {3, 129, 2}, {4, 3, 0}};
    int rc = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        for (int t = 0; t < 4; t++) {
            const bool ta = t & 1, tb = (t & 2) != 0;
            rc |= gemm_case_check(shapes[s][0], shapes[s][1], shapes[s][2], ta, tb, 1.0f, 0.0f);
            rc |= gemm_case_check(shapes[s][0], shapes[s][1], shapes[s][2], ta, tb, 0.5f, -1.5f);
        }
    }
    return rc;
}

/* ---------------------------------------------------------------------------------- */
/* batch norm                                                                         */

static int batchnorm_case_check(int n, int c, int h, int w) {
    const float eps = 1e-5f, mom = 0.1f;
    const int64_t nx = (int64_t)n * c * h * w, m = (int64_t)n * h * w;
    dbk_tensor x = gf(4, n, c, h, w), y = gf(4, n, c, h, w), yi = gf(4, n, c, h, w);
    dbk_tensor gamma = gf(1, c, 1, 1, 1), beta = gf(1, c, 1, 1, 1), mean = gf(1, c, 1, 1, 1);
    dbk_tensor invstd = gf(1, c, 1, 1, 1), rmean = gf(1, c, 1, 1, 1), rvar = gf(1, c, 1, 1, 1);
    /* Values around 100 with spread ~0.6: fp32 sums of squares would lose the variance. */
    float *hx = dbk_test_uniform(nx, 99.0f, 101.0f, 8), *hg = dbk_test_uniform(c, 0.5f, 1.5f, 9), *hb = dbk_test_uniform(c, -1.0f, 1.0f, 10);
    float *hrm = dbk_test_uniform(c, -1.0f, 1.0f, 11), *hrv = dbk_test_uniform(c, 0.5f, 2.0f, 12);
    DBK_CHECK_OK(dbk_tensor_write(&x, hx));
    DBK_CHECK_OK(dbk_tensor_write(&gamma, hg));
    DBK_CHECK_OK(dbk_tensor_write(&beta, hb));
    DBK_CHECK_OK(dbk_tensor_write(&rmean, hrm));
    DBK_CHECK_OK(dbk_tensor_write(&rvar, hrv));

    /* Direct formulas, two passes in double. */
    float *ry = malloc((size_t)nx * sizeof(float)), *ryi = malloc((size_t)nx * sizeof(float));
    float *rmu = malloc((size_t)c * sizeof(float)), *ris = malloc((size_t)c * sizeof(float));
    float *rrm = malloc((size_t)c * sizeof(float)), *rrv = malloc((size_t)c * sizeof(float));
    for (int ch = 0; ch < c; ch++) {
        double s = 0.0, ss = 0.0;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < h * w; j++) s += (double)hx[((int64_t)i * c + ch) * h * w + j];
        const double mu = s / (double)m;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < h * w; j++) {
                const double d = (double)hx[((int64_t)i * c + ch) * h * w + j] - mu;
                ss += d * d;
            }
        const double var = ss / (double)m, unbiased = m > 1 ? ss / (double)(m - 1) : var;
        const double is = 1.0 / sqrt(var + (double)eps), isr = 1.0 / sqrt((double)hrv[ch] + (double)eps);
        for (int i = 0; i < n; i++)
            for (int j = 0; j < h * w; j++) {
                const int64_t e = ((int64_t)i * c + ch) * h * w + j;
                ry[e] = (float)(((double)hx[e] - mu) * is * (double)hg[ch] + (double)hb[ch]);
                ryi[e] = (float)(((double)hx[e] - (double)hrm[ch]) * isr * (double)hg[ch] + (double)hb[ch]);
            }
        rmu[ch] = (float)mu;
        ris[ch] = (float)is;
        rrm[ch] = (float)((1.0 - (double)mom) * (double)hrm[ch] + (double)mom * mu);
        rrv[ch] = (float)((1.0 - (double)mom) * (double)hrv[ch] + (double)mom * unbiased);
    }

    /* Inference first: it must read the running statistics before training updates them. */
    dbk_op_desc inf = {.op = DBK_OP_BATCHNORM_FWD_INFER, .p.bn = {eps, mom}};
    inf.src[0] = x; inf.src[1] = gamma; inf.src[2] = beta; inf.src[3] = rmean; inf.src[4] = rvar;
    inf.dst[0] = yi;
    dbk_op_desc tr = {.op = DBK_OP_BATCHNORM_FWD_TRAIN, .p.bn = {eps, mom}};
    tr.src[0] = x; tr.src[1] = gamma; tr.src[2] = beta;
    tr.dst[0] = y; tr.dst[1] = mean; tr.dst[2] = invstd; tr.dst[3] = rmean; tr.dst[4] = rvar;
    DBK_CHECK_OK(dbk_backend_run(be, &inf));
    DBK_CHECK_OK(dbk_backend_run(be, &tr));

    float *gy = dbk_test_read(&y), *gyi = dbk_test_read(&yi), *gmu = dbk_test_read(&mean), *gis = dbk_test_read(&invstd);
    float *grm = dbk_test_read(&rmean), *grv = dbk_test_read(&rvar);
    char what[96];
    int rc = 0;
    snprintf(what, sizeof what, "batchnorm (%d,%d,%d,%d) train y", n, c, h, w);
    rc |= close_nmse(what, ry, gy, nx, 1e-10);
    snprintf(what, sizeof what, "batchnorm (%d,%d,%d,%d) infer y", n, c, h, w);
    rc |= close_nmse(what, ryi, gyi, nx, 1e-10);
    snprintf(what, sizeof what, "batchnorm (%d,%d,%d,%d) saved mean", n, c, h, w);
    rc |= close_nmse(what, rmu, gmu, c, 1e-12);
    snprintf(what, sizeof what, "batchnorm (%d,%d,%d,%d) saved invstd", n, c, h, w);
    rc |= close_nmse(what, ris, gis, c, 1e-10);
    snprintf(what, sizeof what, "batchnorm (%d,%d,%d,%d) running mean", n, c, h, w);
    rc |= close_nmse(what, rrm, grm, c, 1e-12);
    snprintf(what, sizeof what, "batchnorm (%d,%d,%d,%d) running var (unbiased)", n, c, h, w);
    rc |= close_nmse(what, rrv, grv, c, 1e-10);
    rc |= guards_intact();
    free(hx); free(hg); free(hb); free(hrm); free(hrv); free(ry); free(ryi); free(rmu); free(ris); free(rrm);
    free(rrv); free(gy); free(gyi); free(gmu); free(gis); free(grm); free(grv);
    free_all();
    return rc;
}

static int batchnorm_fwd_should_match_direct_formulas(void) {
    int rc = batchnorm_case_check(4, 3, 5, 5);
    rc |= batchnorm_case_check(1, 2, 3, 1);
    rc |= batchnorm_case_check(2, 5, 7, 9);
    return rc;
}

/* ---------------------------------------------------------------------------------- */
/* elementwise                                                                        */

static int relu_should_clamp_negatives_and_mask_gradients_in_place(void) {
    const int64_t n = 1000;
    dbk_tensor x = gf(2, 10, 100, 1, 1), y = gf(2, 10, 100, 1, 1), dy = gf(2, 10, 100, 1, 1), dx = gf(2, 10, 100, 1, 1);
    float *hx = dbk_test_uniform(n, -1.0f, 1.0f, 13), *hdy = dbk_test_uniform(n, -1.0f, 1.0f, 14);
    hx[0] = 0.0f;
    hx[1] = -0.0f;
    float *ry = malloc((size_t)n * sizeof(float)), *rdx = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) {
        ry[i] = hx[i] > 0.0f ? hx[i] : 0.0f;
        rdx[i] = hx[i] > 0.0f ? hdy[i] : 0.0f;
    }
    DBK_CHECK_OK(dbk_tensor_write(&x, hx));
    DBK_CHECK_OK(dbk_tensor_write(&dy, hdy));
    dbk_op_desc f = {.op = DBK_OP_RELU_FWD}, b = {.op = DBK_OP_RELU_BWD};
    f.src[0] = x; f.dst[0] = y;
    b.src[0] = y; b.src[1] = dy; b.dst[0] = dx;
    DBK_CHECK_OK(dbk_backend_run(be, &f));
    DBK_CHECK_OK(dbk_backend_run(be, &b));
    float *gy = dbk_test_read(&y), *gdx = dbk_test_read(&dx);
    int rc = close_nmse("relu fwd", ry, gy, n, 0.0) | close_nmse("relu bwd", rdx, gdx, n, 0.0);
    free(gy); free(gdx);

    /* In place: y = x, then dx = dy. */
    f.dst[0] = x;
    b.src[0] = x;
    b.dst[0] = dy;
    DBK_CHECK_OK(dbk_backend_run(be, &f));
    DBK_CHECK_OK(dbk_backend_run(be, &b));
    gy = dbk_test_read(&x);
    gdx = dbk_test_read(&dy);
    rc |= close_nmse("relu fwd in place", ry, gy, n, 0.0) | close_nmse("relu bwd in place", rdx, gdx, n, 0.0);
    rc |= guards_intact();
    free(hx); free(hdy); free(ry); free(rdx); free(gy); free(gdx);
    free_all();
    return rc;
}

static int add_scale_fill_should_match_elementwise_formulas(void) {
    const int64_t n = 77;
    dbk_tensor a = gf(3, 7, 11, 1, 1), b = gf(3, 7, 11, 1, 1), y = gf(3, 7, 11, 1, 1);
    float *ha = dbk_test_uniform(n, -3.0f, 3.0f, 15), *hb = dbk_test_uniform(n, -3.0f, 3.0f, 16);
    float *rsum = malloc((size_t)n * sizeof(float)), *rsc = malloc((size_t)n * sizeof(float));
    float *rfill = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) {
        rsum[i] = ha[i] + hb[i];
        rsc[i] = -0.375f * rsum[i];
        rfill[i] = 2.5f;
    }
    DBK_CHECK_OK(dbk_tensor_write(&a, ha));
    DBK_CHECK_OK(dbk_tensor_write(&b, hb));
    dbk_op_desc add = {.op = DBK_OP_ADD};
    add.src[0] = a; add.src[1] = b; add.dst[0] = y;
    DBK_CHECK_OK(dbk_backend_run(be, &add));
    float *g = dbk_test_read(&y);
    int rc = close_nmse("add", rsum, g, n, 0.0);
    free(g);

    add.dst[0] = b;   /* in place into the second operand */
    DBK_CHECK_OK(dbk_backend_run(be, &add));
    dbk_op_desc sc = {.op = DBK_OP_SCALE, .p.scale = {-0.375f}};
    sc.src[0] = b; sc.dst[0] = b;   /* in place */
    DBK_CHECK_OK(dbk_backend_run(be, &sc));
    g = dbk_test_read(&b);
    rc |= close_nmse("add + scale in place", rsc, g, n, 0.0);
    free(g);

    dbk_op_desc fill = {.op = DBK_OP_FILL, .p.fill = {2.5f}};
    fill.dst[0] = a;
    DBK_CHECK_OK(dbk_backend_run(be, &fill));
    g = dbk_test_read(&a);
    rc |= close_nmse("fill", rfill, g, n, 0.0);
    rc |= guards_intact();
    free(g); free(ha); free(hb); free(rsum); free(rsc); free(rfill);
    free_all();
    return rc;
}

static int copy_should_copy_every_dtype_exactly(void) {
    static const dbk_dtype types[] = {DBK_DTYPE_F32, DBK_DTYPE_I32, DBK_DTYPE_U8};
    int rc = 0;
    for (int t = 0; t < 3; t++) {
        dbk_tensor s = gt(types[t], 2, 13, 1, 1, 1), d = gt(types[t], 1, 13, 1, 1, 1);   /* 13: not a multiple of 4 */
        const size_t nb = dbk_tensor_nbytes(&s);
        unsigned char *h = malloc(nb);
        for (size_t i = 0; i < nb; i++) h[i] = (unsigned char)(i * 37 + 11);
        DBK_CHECK_OK(dbk_tensor_write(&s, h));
        dbk_op_desc c = {.op = DBK_OP_COPY};
        c.src[0] = s; c.dst[0] = d;
        DBK_CHECK_OK(dbk_backend_run(be, &c));
        unsigned char *g = dbk_test_read(&d);
        rc |= equal_bytes(dbk_dtype_name(types[t]), h, g, nb);
        rc |= guards_intact();
        free(h);
        free(g);
        free_all();
    }
    return rc;
}

/* ---------------------------------------------------------------------------------- */
/* max pool                                                                           */

static int maxpool_case_check(int n, int c, int h, int w, int r, int s, int sh, int sw, int pad) {
    const int p = (h + 2 * pad - r) / sh + 1, q = (w + 2 * pad - s) / sw + 1;
    const int64_t nx = (int64_t)n * c * h * w, ny = (int64_t)n * c * p * q;
    dbk_tensor x = gf(4, n, c, h, w), y = gf(4, n, c, p, q), arg = gt(DBK_DTYPE_I32, 4, n, c, p, q);
    dbk_tensor dy = gf(4, n, c, p, q), dx = gf(4, n, c, h, w);
    /* Small integers: many ties, which must go to the first element in row-major order. */
    float *hx = dbk_test_uniform(nx, 0.0f, 4.0f, 17), *hdy = dbk_test_uniform(ny, -1.0f, 1.0f, 18);
    /* With padding, all below zero: a border of zeros instead of -inf would win. */
    for (int64_t i = 0; i < nx; i++) hx[i] = floorf(hx[i]) - (pad ? 5.0f : 0.0f);
    float *ry = malloc((size_t)ny * sizeof(float)), *rdx = calloc((size_t)nx, sizeof(float));
    int32_t *ra = malloc((size_t)ny * sizeof(int32_t));
    for (int plane = 0; plane < n * c; plane++) {
        const float *xp = hx + (int64_t)plane * h * w;
        for (int i = 0; i < p; i++)
            for (int j = 0; j < q; j++) {
                int best = -1;
                for (int u = 0; u < r; u++)
                    for (int v = 0; v < s; v++) {
                        const int row = i * sh - pad + u, col = j * sw - pad + v;
                        if (row < 0 || row >= h || col < 0 || col >= w) continue; /* -inf padding */
                        const int idx = row * w + col;
                        if (best < 0 || xp[idx] > xp[best]) best = idx;
                    }
                const int64_t o = ((int64_t)plane * p + i) * q + j;
                ry[o] = xp[best];
                ra[o] = best;
                rdx[(int64_t)plane * h * w + best] += hdy[o];
            }
    }
    DBK_CHECK_OK(dbk_tensor_write(&x, hx));
    DBK_CHECK_OK(dbk_tensor_write(&dy, hdy));
    dbk_op_desc f = {.op = DBK_OP_MAXPOOL_FWD, .p.pool = {r, s, sh, sw, pad, pad}}, b = f;
    b.op = DBK_OP_MAXPOOL_BWD;
    f.src[0] = x; f.dst[0] = y; f.dst[1] = arg;
    b.src[0] = dy; b.src[1] = arg; b.dst[0] = dx;
    DBK_CHECK_OK(dbk_backend_run(be, &f));
    DBK_CHECK_OK(dbk_backend_run(be, &b));
    float *gy = dbk_test_read(&y), *gdx = dbk_test_read(&dx);
    int32_t *ga = dbk_test_read(&arg);
    char what[96];
    snprintf(what, sizeof what, "maxpool (%d,%d,%d,%d) %dx%d stride %dx%d pad %d", n, c, h, w, r, s, sh, sw, pad);
    int rc = close_nmse(what, ry, gy, ny, 0.0);
    rc |= equal_bytes("maxpool argmax (first max wins ties)", ra, ga, (size_t)ny * sizeof(int32_t));
    rc |= close_nmse("maxpool bwd", rdx, gdx, nx, 1e-14);
    rc |= guards_intact();
    free(hx); free(hdy); free(ry); free(rdx); free(ra); free(gy); free(gdx); free(ga);
    free_all();
    return rc;
}

static int maxpool_should_match_naive_with_first_max_ties(void) {
    int rc = maxpool_case_check(2, 3, 6, 6, 2, 2, 2, 2, 0);   /* ResNet9's 2x2 */
    rc |= maxpool_case_check(2, 2, 7, 7, 3, 3, 2, 2, 0);      /* overlapping windows accumulate in bwd */
    rc |= maxpool_case_check(1, 4, 5, 7, 2, 2, 2, 2, 0);      /* odd sizes: last row/column dropped */
    rc |= maxpool_case_check(3, 5, 4, 4, 4, 4, 1, 1, 0);      /* global */
    rc |= maxpool_case_check(2, 2, 6, 5, 2, 3, 1, 2, 0);      /* non-square window and strides */
    rc |= maxpool_case_check(2, 3, 8, 8, 3, 3, 2, 2, 1);      /* the ResNet stem: 3x3/2 pad 1, -inf border */
    rc |= maxpool_case_check(1, 2, 7, 6, 3, 3, 2, 2, 1);      /* pad 1 on odd sizes */
    rc |= maxpool_case_check(1, 2, 5, 5, 4, 4, 1, 1, 2);      /* pad 2, stride 1: overlapping borders */
    return rc;
}

/* ---------------------------------------------------------------------------------- */
/* softmax cross-entropy and accuracy                                                 */

/* Reference by the textbook formula -sum_k target_k * log p_k with p from a double softmax
 * (the op uses log-sum-exp minus the target-weighted logits instead). */
static double ref_xent_row(const float *z, int k, int label, double eps, double *p) {
    double mx = z[0], s = 0.0, loss = 0.0;
    for (int j = 1; j < k; j++) mx = (double)z[j] > mx ? (double)z[j] : mx;
    for (int j = 0; j < k; j++) s += exp((double)z[j] - mx);
    for (int j = 0; j < k; j++) {
        p[j] = exp((double)z[j] - mx) / s;
        const double target = (j == label ? 1.0 - eps : 0.0) + eps / k;
        loss -= target * (((double)z[j] - mx) - log(s));
    }
    return loss;
}

static int xent_case_check(float smoothing) {
    enum { N = 6, K = 10 };
    dbk_tensor z = gf(2, N, K, 1, 1), probs = gf(2, N, K, 1, 1), dz = gf(2, N, K, 1, 1);
    dbk_tensor labels = gt(DBK_DTYPE_I32, 1, N, 1, 1, 1), loss = gf(1, 1, 1, 1, 1);
    float *hz = dbk_test_uniform(N * K, -4.0f, 4.0f, 19);
    /* Row 1 has huge logits (a naive exp overflows); rows 4 and 5 have invalid labels. */
    for (int j = 0; j < K; j++) hz[K + j] = j == 3 ? 1000.0f : -1000.0f + (float)j;
    const int32_t hl[N] = {2, 3, 9, 0, -1, K};
    const float start = 1.5f, scale = 0.125f;
    DBK_CHECK_OK(dbk_tensor_write(&z, hz));
    DBK_CHECK_OK(dbk_tensor_write(&labels, hl));
    DBK_CHECK_OK(dbk_tensor_write(&loss, &start));

    double rloss = start, p[K];
    float rp[N * K], rdz[N * K];
    for (int i = 0; i < N; i++) {
        const bool ok = hl[i] >= 0 && hl[i] < K;
        const double li = ref_xent_row(hz + i * K, K, ok ? hl[i] : 0, smoothing, p);
        if (ok) rloss += li;
        for (int j = 0; j < K; j++) {
            rp[i * K + j] = (float)p[j];
            const double target = (j == hl[i] ? 1.0 - (double)smoothing : 0.0) + (double)smoothing / K;
            rdz[i * K + j] = ok ? (float)((double)scale * (p[j] - target)) : 0.0f;
        }
    }
    dbk_op_desc f = {.op = DBK_OP_SOFTMAX_XENT_FWD, .p.xent = {smoothing, 0.0f}};
    f.src[0] = z; f.src[1] = labels; f.dst[0] = probs; f.dst[1] = loss;
    dbk_op_desc b = {.op = DBK_OP_SOFTMAX_XENT_BWD, .p.xent = {smoothing, scale}};
    b.src[0] = probs; b.src[1] = labels; b.dst[0] = dz;
    DBK_CHECK_OK(dbk_backend_run(be, &f));
    DBK_CHECK_OK(dbk_backend_run(be, &b));
    float *gp = dbk_test_read(&probs), *gdz = dbk_test_read(&dz), gl;
    DBK_CHECK_OK(dbk_tensor_read(&loss, &gl));
    char what[96];
    snprintf(what, sizeof what, "softmax eps=%g probs", (double)smoothing);
    int rc = close_nmse(what, rp, gp, N * K, 1e-12);
    snprintf(what, sizeof what, "softmax_xent_bwd eps=%g (invalid label rows zero)", (double)smoothing);
    rc |= close_nmse(what, rdz, gdz, N * K, 1e-12);
    const float rl = (float)rloss;
    snprintf(what, sizeof what, "softmax_xent_fwd eps=%g loss_sum (start 1.5, invalid rows skipped)",
             (double)smoothing);
    rc |= close_nmse(what, &rl, &gl, 1, 1e-12);
    rc |= guards_intact();
    free(hz); free(gp); free(gdz);
    free_all();
    return rc;
}

static int softmax_xent_should_match_direct_formula_with_and_without_smoothing(void) {
    return xent_case_check(0.0f) | xent_case_check(0.1f);
}

static int accuracy_should_count_first_max_and_accumulate(void) {
    enum { N = 6, K = 4 };
    const float hz[N * K] = {
        1, 3, 3, 0,     /* tie between 1 and 2: argmax 1 */
        1, 3, 3, 0,     /* same row, label 2: wrong */
        5, 5, 5, 5,     /* all equal: argmax 0 */
        0, 0, 0, 9,     /* argmax 3 */
        9, 0, 0, 0,     /* label -1: never correct */
        0, 0, 0, 9,     /* label K: never correct */
    };
    const int32_t hl[N] = {1, 2, 0, 3, -1, K};
    dbk_tensor z = gf(2, N, K, 1, 1), labels = gt(DBK_DTYPE_I32, 1, N, 1, 1, 1), correct = gf(1, 1, 1, 1, 1);
    const float start = 10.0f;
    DBK_CHECK_OK(dbk_tensor_write(&z, hz));
    DBK_CHECK_OK(dbk_tensor_write(&labels, hl));
    DBK_CHECK_OK(dbk_tensor_write(&correct, &start));
    dbk_op_desc a = {.op = DBK_OP_ACCURACY};
    a.src[0] = z; a.src[1] = labels; a.dst[0] = correct;
    DBK_CHECK_OK(dbk_backend_run(be, &a));
    DBK_CHECK_OK(dbk_backend_run(be, &a));
    float got;
    DBK_CHECK_OK(dbk_tensor_read(&correct, &got));
    DBK_CHECK_MSG(got == 16.0f, "correct = %g, expected 10 + 2 * 3", (double)got);
    int rc = guards_intact();
    free_all();
    return rc;
}

/* Top-k with the tie rule of op_list.h: rank = larger logits + equal ones at a lower index. */
static int accuracy_should_count_labels_among_the_k_largest_logits(void) {
    enum { N = 6, K = 7 };
    const float hz[N * K] = {
        9, 1, 2, 3, 4, 5, 6,     /* label 0 is the largest: top-1 and top-5 */
        1, 2, 3, 4, 5, 6, 7,     /* label 2 is 5th largest: top-5 only */
        1, 2, 3, 4, 5, 6, 7,     /* label 1 is 6th: neither */
        7, 6, 5, 4, 3, 3, 1,     /* label 5 ties class 4 at 5th place: the lower index wins, rank 5 */
        7, 6, 5, 4, 3, 3, 1,     /* label 4, that lower index: rank 4, a top-5 hit */
        1, 2, 3, 4, 5, 6, 7,     /* label K: never */
    };
    const int32_t hl[N] = {0, 2, 1, 5, 4, K};
    static const struct { int32_t k; float hits; } want[] = {{0, 1}, {1, 1}, {5, 3}, {6, 5}, {7, 5}, {100, 5}};
    dbk_tensor z = gf(2, N, K, 1, 1), labels = gt(DBK_DTYPE_I32, 1, N, 1, 1, 1), correct = gf(1, 1, 1, 1, 1);
    DBK_CHECK_OK(dbk_tensor_write(&z, hz));
    DBK_CHECK_OK(dbk_tensor_write(&labels, hl));
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const float zero = 0.0f;
        DBK_CHECK_OK(dbk_tensor_write(&correct, &zero));
        dbk_op_desc a = {.op = DBK_OP_ACCURACY, .p.accuracy.k = want[i].k};
        a.src[0] = z; a.src[1] = labels; a.dst[0] = correct;
        DBK_CHECK_OK(dbk_backend_run(be, &a));
        float got;
        DBK_CHECK_OK(dbk_tensor_read(&correct, &got));
        DBK_CHECK_MSG(got == want[i].hits, "k %d: correct = %g, expected %g", (int)want[i].k, (double)got,
                      (double)want[i].hits);
    }
    dbk_op_desc bad = {.op = DBK_OP_ACCURACY, .p.accuracy.k = -1};
    bad.src[0] = z; bad.src[1] = labels; bad.dst[0] = correct;
    DBK_CHECK(dbk_backend_run(be, &bad) == DBK_ERR_INVALID_ARG);
    int rc = guards_intact();
    free_all();
    return rc;
}

/* A non-finite logit is never correct (op_list.h): NaN compares false with every value, so a
 * rank counted with '>' alone puts a NaN label first, and a model whose logits are all NaN
 * "scores" 100%. Every row below would count as correct under that rule; only row 5 (finite)
 * may, at top-1 and at top-3. */
static int accuracy_should_never_count_a_row_with_a_non_finite_logit(void) {
    enum { N = 6, K = 4 };
    const float nan = NAN, inf = INFINITY;
    const float hz[N * K] = {
        nan, nan, nan, nan,     /* all NaN (NaN weights): label 0 ranks first by '>' */
        1, nan, 3, 0,           /* NaN at the label */
        1, 3, nan, 0,           /* NaN elsewhere, the label the largest finite logit */
        inf, 1, 2, 3,           /* +inf at the label (an overflow) */
        -inf, 5, 2, 3,          /* -inf elsewhere */
        0, 9, 2, 3,             /* finite: correct */
    };
    const int32_t hl[N] = {0, 1, 1, 0, 1, 1};
    dbk_tensor z = gf(2, N, K, 1, 1), labels = gt(DBK_DTYPE_I32, 1, N, 1, 1, 1), correct = gf(1, 1, 1, 1, 1);
    DBK_CHECK_OK(dbk_tensor_write(&z, hz));
    DBK_CHECK_OK(dbk_tensor_write(&labels, hl));
    for (int32_t k = 1; k <= 3; k += 2) {
        const float zero = 0.0f;
        DBK_CHECK_OK(dbk_tensor_write(&correct, &zero));
        dbk_op_desc a = {.op = DBK_OP_ACCURACY, .p.accuracy.k = k};
        a.src[0] = z; a.src[1] = labels; a.dst[0] = correct;
        DBK_CHECK_OK(dbk_backend_run(be, &a));
        float got;
        DBK_CHECK_OK(dbk_tensor_read(&correct, &got));
        DBK_CHECK_MSG(got == 1.0f, "top-%d: correct = %g, expected 1 (only the finite row)", (int)k, (double)got);
    }
    int rc = guards_intact();
    free_all();
    return rc;
}

/* ---------------------------------------------------------------------------------- */
/* SGD                                                                                */

/* scheduled: lr holds {lr, momentum}, the momentum changing per step (fastai's cycle) and
 * replacing params.momentum. */
static int sgd_case_check(bool nesterov, bool scheduled) {
    enum { N = 9 };
    const float wd = 5e-3f, lrs[2] = {0.1f, 0.05f}, mus[2] = {0.95f, 0.85f};
    const float mu_param = 0.9f;
    dbk_tensor grad = gf(1, N, 1, 1, 1), lr = gf(1, scheduled ? 2 : 1, 1, 1, 1), param = gf(1, N, 1, 1, 1),
               mom = gf(1, N, 1, 1, 1);
    float *hp = dbk_test_uniform(N, -1.0f, 1.0f, 20), *hv = dbk_test_uniform(N, -0.1f, 0.1f, 21);
    double rp[N], rv[N];
    for (int i = 0; i < N; i++) {
        rp[i] = hp[i];
        rv[i] = hv[i];
    }
    DBK_CHECK_OK(dbk_tensor_write(&param, hp));
    DBK_CHECK_OK(dbk_tensor_write(&mom, hv));
    dbk_op_desc d = {.op = DBK_OP_SGD_MOMENTUM_UPDATE, .p.sgd = {mu_param, wd, nesterov}};
    d.src[0] = grad; d.src[1] = lr; d.dst[0] = param; d.dst[1] = mom;
    for (int step = 0; step < 2; step++) {
        float *hg = dbk_test_uniform(N, -1.0f, 1.0f, 22 + (uint64_t)step);
        const float mu = scheduled ? mus[step] : mu_param, values[2] = {lrs[step], mus[step]};
        DBK_CHECK_OK(dbk_tensor_write(&grad, hg));
        DBK_CHECK_OK(dbk_tensor_write(&lr, values));   /* the host rewrites lr (and momentum) every step */
        DBK_CHECK_OK(dbk_backend_run(be, &d));
        for (int i = 0; i < N; i++) {
            const double g = (double)hg[i] + (double)wd * rp[i];
            rv[i] = (double)mu * rv[i] + g;
            rp[i] -= (double)lrs[step] * (nesterov ? g + (double)mu * rv[i] : rv[i]);
        }
        free(hg);
    }
    float *gp = dbk_test_read(&param), *gv = dbk_test_read(&mom), fp[N], fv[N];
    for (int i = 0; i < N; i++) {
        fp[i] = (float)rp[i];
        fv[i] = (float)rv[i];
    }
    char what[64];
    snprintf(what, sizeof what, "sgd%s%s params", nesterov ? " nesterov" : "", scheduled ? " scheduled momentum" : "");
    int rc = close_abs(what, fp, gp, N, 1e-6);
    snprintf(what, sizeof what, "sgd%s%s momentum", nesterov ? " nesterov" : "", scheduled ? " scheduled momentum" : "");
    rc |= close_abs(what, fv, gv, N, 1e-6);
    rc |= guards_intact();
    free(hp); free(hv); free(gp); free(gv);
    free_all();
    return rc;
}

static int sgd_should_match_hand_computation_with_and_without_nesterov(void) {
    return sgd_case_check(false, false) | sgd_case_check(true, false) | sgd_case_check(false, true) |
           sgd_case_check(true, true);
}

/* The step values the trainer writes for AdamW step t (1-based), in double as PyTorch. */
static void adamw_step_values(double lr, double b1, double b2, int t, float out[3]) {
    out[0] = (float)lr;
    out[1] = (float)(lr / (1.0 - pow(b1, t)));
    out[2] = (float)sqrt(1.0 - pow(b2, t));
}

/* Three AdamW steps against the textbook form in double (Loshchilov & Hutter, Algorithm 2
 * with PyTorch's eps placement): p *= 1 - lr*wd; m_hat = m / (1 - b1^t), v_hat = v / (1 - b2^t);
 * p -= lr * m_hat / (sqrt(v_hat) + eps). The first step is also checked by hand: m_hat = g,
 * v_hat = g^2, so p1 = p0 * (1 - lr*wd) - lr * g / (|g| + eps), i.e. a step of lr against
 * the gradient's sign whatever its size. */
static int adamw_should_match_hand_computation_over_three_steps(void) {
    enum { N = 6 };
    const double lr = 0.01, b1 = 0.9, b2 = 0.99, eps = 1e-8, wd = 0.05;
    const float p0[N] = {0.5f, -0.25f, 1.0f, 0.0f, -2.0f, 0.125f};
    const float grads[3][N] = {{0.1f, -3.0f, 1e-3f, 0.5f, -0.2f, 2.0f},
                               {0.2f, 1.0f, -1e-3f, 0.5f, 0.3f, -2.0f},
                               {-0.4f, 0.5f, 2e-3f, -0.5f, 0.1f, 1.0f}};
    dbk_tensor g = gf(1, N, 1, 1, 1), st = gf(1, 3, 1, 1, 1), p = gf(1, N, 1, 1, 1), m = gf(1, N, 1, 1, 1),
               v = gf(1, N, 1, 1, 1);
    const float zeros[N] = {0};
    DBK_CHECK_OK(dbk_tensor_write(&p, p0));
    DBK_CHECK_OK(dbk_tensor_write(&m, zeros));
    DBK_CHECK_OK(dbk_tensor_write(&v, zeros));
    dbk_op_desc op = {.op = DBK_OP_ADAMW_UPDATE, .p.adamw = {(float)b1, (float)b2, (float)eps, (float)wd}};
    op.src[0] = g; op.src[1] = st;
    op.dst[0] = p; op.dst[1] = m; op.dst[2] = v;
    double rp[N], rm[N] = {0}, rv[N] = {0};
    for (int i = 0; i < N; i++) rp[i] = p0[i];
    int rc = 0;
    for (int t = 1; t <= 3; t++) {
        float sv[3];
        adamw_step_values(lr, b1, b2, t, sv);
        DBK_CHECK_OK(dbk_tensor_write(&st, sv));
        DBK_CHECK_OK(dbk_tensor_write(&g, grads[t - 1]));
        DBK_CHECK_OK(dbk_backend_run(be, &op));
        float fp[N], fm[N], fv[N];
        for (int i = 0; i < N; i++) {
            const double gi = grads[t - 1][i];
            rp[i] *= 1.0 - lr * wd;
            rm[i] = b1 * rm[i] + (1.0 - b1) * gi;
            rv[i] = b2 * rv[i] + (1.0 - b2) * gi * gi;
            const double mhat = rm[i] / (1.0 - pow(b1, t)), vhat = rv[i] / (1.0 - pow(b2, t));
            rp[i] -= lr * mhat / (sqrt(vhat) + eps);
            fp[i] = (float)rp[i]; fm[i] = (float)rm[i]; fv[i] = (float)rv[i];
            if (t == 1) {
                const double by_hand = (double)p0[i] * (1.0 - lr * wd) - lr * gi / (fabs(gi) + eps);
                DBK_CHECK_MSG(fabs(by_hand - rp[i]) < 1e-12, "step 1 element %d: %.9g by hand, %.9g textbook", i,
                              by_hand, rp[i]);
            }
        }
        float *gp = dbk_test_read(&p), *gm = dbk_test_read(&m), *gv = dbk_test_read(&v);
        char what[48];
        snprintf(what, sizeof what, "adamw step %d params", t);
        rc |= close_abs(what, fp, gp, N, 1e-6);
        snprintf(what, sizeof what, "adamw step %d exp_avg", t);
        rc |= close_abs(what, fm, gm, N, 1e-7);
        snprintf(what, sizeof what, "adamw step %d exp_avg_sq", t);
        rc |= close_abs(what, fv, gv, N, 1e-7);
        free(gp); free(gm); free(gv);
    }
    return rc | guards_intact();
}

/* A 4th step value is the step's beta1 (fastai's cycled momentum): exp_avg = m + (1 - b1) (g - m)
 * with that b1, not params.beta1. */
static int adamw_should_take_beta1_from_the_step_values(void) {
    enum { N = 4 };
    const float p0[N] = {1.0f, -0.5f, 0.25f, 2.0f}, m0[N] = {0.1f, -0.2f, 0.3f, 0.0f}, g0[N] = {1.0f, 2.0f, -1.0f, 0.5f};
    const float zeros[N] = {0}, sv[4] = {0.0f, 0.0f, 1.0f, 0.5f}; /* lr 0: only the moments move */
    dbk_tensor g = gf(1, N, 1, 1, 1), st = gf(1, 4, 1, 1, 1), p = gf(1, N, 1, 1, 1), m = gf(1, N, 1, 1, 1),
               v = gf(1, N, 1, 1, 1);
    DBK_CHECK_OK(dbk_tensor_write(&st, sv));
    DBK_CHECK_OK(dbk_tensor_write(&g, g0));
    DBK_CHECK_OK(dbk_tensor_write(&p, p0));
    DBK_CHECK_OK(dbk_tensor_write(&m, m0));
    DBK_CHECK_OK(dbk_tensor_write(&v, zeros));
    dbk_op_desc op = {.op = DBK_OP_ADAMW_UPDATE, .p.adamw = {0.9f, 0.999f, 1e-8f, 0.0f}};
    op.src[0] = g; op.src[1] = st;
    op.dst[0] = p; op.dst[1] = m; op.dst[2] = v;
    DBK_CHECK_OK(dbk_backend_run(be, &op));
    float want[N];
    for (int i = 0; i < N; i++) want[i] = m0[i] + 0.5f * (g0[i] - m0[i]);
    float *gm = dbk_test_read(&m);
    int rc = close_abs("exp_avg with beta1 0.5 from the step values", want, gm, N, 1e-7);
    free(gm);
    return rc | guards_intact();
}

/* Muon's ops by hand: the momentum buffer and nesterov direction, the renormalisation to
 * sqrt(K) (g 1, eps 0) and a skipped one (g 0), speedrun's scaling with a target and eps, and
 * the step with and without decoupled decay. */
static int muon_ops_should_match_hand_computation(void) {
    enum { N = 4 };
    const float g0[N] = {1.0f, -2.0f, 0.5f, 0.0f}, v0[N] = {0.5f, 0.5f, -1.0f, 2.0f};
    dbk_tensor g = gf(1, N, 1, 1, 1), v = gf(1, N, 1, 1, 1), u = gf(1, N, 1, 1, 1), s = gf(1, 1, 1, 1, 1);
    int rc = 0;
    for (int nesterov = 0; nesterov < 2; nesterov++) {
        DBK_CHECK_OK(dbk_tensor_write(&g, g0));
        DBK_CHECK_OK(dbk_tensor_write(&v, v0));
        dbk_op_desc op = {.op = DBK_OP_MUON_MOMENTUM, .p.muon_momentum = {0.6f, (float)nesterov}};
        op.src[0] = g; op.dst[0] = v; op.dst[1] = u;
        DBK_CHECK_OK(dbk_backend_run(be, &op));
        float wv[N], wu[N];
        for (int i = 0; i < N; i++) {
            wv[i] = 0.6f * v0[i] + g0[i];
            wu[i] = nesterov ? g0[i] + 0.6f * wv[i] : wv[i];
        }
        float *gv = dbk_test_read(&v), *gu = dbk_test_read(&u);
        rc |= close_abs("muon momentum buffer", wv, gv, N, 1e-7) | close_abs("muon direction", wu, gu, N, 1e-7);
        free(gv); free(gu);
    }
    /* ||(3, 4, 0, 0)|| = 5: alpha 2 (sqrt(K) of a K = 4 filter) gives (1.2, 1.6, 0, 0) */
    const float x0[N] = {3.0f, 4.0f, 0.0f, 0.0f};
    const struct { float alpha, eps, g, want0; } runs[] = {
        {2.0f, 0.0f, 1.0f, 1.2f}, {2.0f, 0.0f, 0.0f, 3.0f}, {1.0f, 1e-5f, 0.5f, 0.5f * 3.0f / (5.0f + 1e-5f)}};
    for (int r = 0; r < 3; r++) {
        DBK_CHECK_OK(dbk_tensor_write(&g, x0));
        DBK_CHECK_OK(dbk_tensor_write(&s, &runs[r].g));
        dbk_op_desc op = {.op = DBK_OP_NORM_SCALE, .p.norm_scale = {runs[r].alpha, runs[r].eps}};
        op.src[0] = g; op.src[1] = s; op.dst[0] = g; /* in place */
        DBK_CHECK_OK(dbk_backend_run(be, &op));
        float *gy = dbk_test_read(&g);
        const float want[N] = {runs[r].want0, runs[r].want0 * 4.0f / 3.0f, 0.0f, 0.0f};
        rc |= close_abs("norm scale", want, gy, N, 1e-6);
        free(gy);
    }
    for (int decay = 0; decay < 2; decay++) {
        const float lr = 0.25f, wd = decay ? 0.5f : 0.0f;
        DBK_CHECK_OK(dbk_tensor_write(&g, g0));   /* the update x */
        DBK_CHECK_OK(dbk_tensor_write(&v, v0));   /* the parameters */
        DBK_CHECK_OK(dbk_tensor_write(&s, &lr));
        dbk_op_desc op = {.op = DBK_OP_MUON_UPDATE, .p.muon_update = {wd}};
        op.src[0] = g; op.src[1] = s; op.dst[0] = v;
        DBK_CHECK_OK(dbk_backend_run(be, &op));
        float want[N];
        for (int i = 0; i < N; i++) want[i] = (v0[i] - lr * g0[i]) * (1.0f - lr * wd);
        float *gp = dbk_test_read(&v);
        rc |= decay ? close_abs("muon step with decay", want, gp, N, 1e-7) : equal_bytes("muon step", want, gp, sizeof want);
        free(gp);
    }
    return rc | guards_intact();
}

/* Decoupled weight decay does not go through the gradient: a zero gradient on zero moments
 * scales the parameters by exactly (1 - lr * wd) in fp32 and leaves both moments zero, and
 * with wd = 0 the parameters do not move at all. */
static int adamw_without_gradient_should_only_decay(void) {
    enum { N = 5 };
    const float p0[N] = {1.0f, -0.5f, 3.0f, 0.0f, 1e-3f}, zeros[N] = {0};
    dbk_tensor g = gf(1, N, 1, 1, 1), st = gf(1, 3, 1, 1, 1), p = gf(1, N, 1, 1, 1), m = gf(1, N, 1, 1, 1),
               v = gf(1, N, 1, 1, 1);
    int rc = 0;
    for (int with_wd = 0; with_wd < 2; with_wd++) {
        const float wd = with_wd ? 0.1f : 0.0f, lr = 0.5f;
        float sv[3];
        adamw_step_values(lr, 0.9, 0.999, 7, sv);
        DBK_CHECK_OK(dbk_tensor_write(&st, sv));
        DBK_CHECK_OK(dbk_tensor_write(&g, zeros));
        DBK_CHECK_OK(dbk_tensor_write(&p, p0));
        DBK_CHECK_OK(dbk_tensor_write(&m, zeros));
        DBK_CHECK_OK(dbk_tensor_write(&v, zeros));
        dbk_op_desc op = {.op = DBK_OP_ADAMW_UPDATE, .p.adamw = {0.9f, 0.999f, 1e-8f, wd}};
        op.src[0] = g; op.src[1] = st;
        op.dst[0] = p; op.dst[1] = m; op.dst[2] = v;
        DBK_CHECK_OK(dbk_backend_run(be, &op));
        float want[N];
        const float decay = 1.0f - lr * wd;
        for (int i = 0; i < N; i++) want[i] = p0[i] * decay;
        float *gp = dbk_test_read(&p), *gm = dbk_test_read(&m), *gv = dbk_test_read(&v);
        rc |= equal_bytes(with_wd ? "params decayed" : "params unchanged", want, gp, sizeof want);
        rc |= equal_bytes("exp_avg stays zero", zeros, gm, sizeof zeros) | equal_bytes("exp_avg_sq stays zero", zeros, gv, sizeof zeros);
        free(gp); free(gm); free(gv);
    }
    /* the contract: a step block of another length, and betas outside [0, 1), are refused */
    dbk_op_desc bad = {.op = DBK_OP_ADAMW_UPDATE, .p.adamw = {0.9f, 1.0f, 1e-8f, 0.0f}};
    bad.src[0] = g; bad.src[1] = st;
    bad.dst[0] = p; bad.dst[1] = m; bad.dst[2] = v;
    DBK_CHECK(dbk_backend_run(be, &bad) == DBK_ERR_INVALID_ARG && strstr(dbk_last_error(), "beta2"));
    bad.p.adamw.beta2 = 0.999f;
    bad.src[1].shape[0] = 1;
    DBK_CHECK(dbk_backend_run(be, &bad) == DBK_ERR_INVALID_ARG && strstr(dbk_last_error(), "3 element"));
    return rc | guards_intact();
}

/* ---------------------------------------------------------------------------------- */
/* augment                                                                            */

enum { AUG_M = 7, AUG_H = 12, AUG_W = 10, AUG_L = 24, AUG_N = 16 };

typedef struct aug_fixture {
    dbk_tensor images, labels, indices, state, x, y;
    uint8_t    himg[AUG_M * 3 * AUG_H * AUG_W];
    uint8_t    hlab[AUG_M];
    int32_t    hidx[AUG_L];
} aug_fixture;

/* A ramp dataset: pixel (j, c, y, x) = (40c + 10y + 3x + 7j) mod 256, so position errors
 * change values; labels 9 - j; indices a fixed shuffle. */
static int aug_setup(aug_fixture *f) {
    f->images = gt(DBK_DTYPE_U8, 4, AUG_M, 3, AUG_H, AUG_W);
    f->labels = gt(DBK_DTYPE_U8, 1, AUG_M, 1, 1, 1);
    f->indices = gt(DBK_DTYPE_I32, 1, AUG_L, 1, 1, 1);
    f->state = gt(DBK_DTYPE_I32, 1, 4, 1, 1, 1);
    f->x = gf(4, AUG_N, 3, AUG_H, AUG_W);
    f->y = gt(DBK_DTYPE_I32, 1, AUG_N, 1, 1, 1);
    for (int j = 0; j < AUG_M; j++) {
        f->hlab[j] = (uint8_t)(9 - j);
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < AUG_H; y++)
                for (int x = 0; x < AUG_W; x++)
                    f->himg[((j * 3 + c) * AUG_H + y) * AUG_W + x] = (uint8_t)((40 * c + 10 * y + 3 * x + 7 * j) % 256);
    }
    for (int i = 0; i < AUG_L; i++) f->hidx[i] = (i * 5 + 3) % AUG_M;
    DBK_CHECK_OK(dbk_tensor_write(&f->images, f->himg));
    DBK_CHECK_OK(dbk_tensor_write(&f->labels, f->hlab));
    DBK_CHECK_OK(dbk_tensor_write(&f->indices, f->hidx));
    return 0;
}

static dbk_op_desc aug_desc(const aug_fixture *f, bool train, bool with_indices) {
    dbk_op_desc d = {.op = DBK_OP_AUGMENT};
    d.p.augment = (dbk_augment_params){
        .train = train, .pad = 3, .flip = true, .cutout = 4, .mean = {0.4f, 0.5f, 0.6f}, .std = {0.2f, 0.25f, 0.3f}};
    d.src[0] = f->images;
    d.src[1] = f->labels;
    if (with_indices) d.src[2] = f->indices;
    d.src[3] = f->state;
    d.dst[0] = f->x;
    d.dst[1] = f->y;
    return d;
}

/* Runs d with state {first, seed, epoch, run_seed}. */
static int aug_run_epoch(const aug_fixture *f, const dbk_op_desc *d, int32_t first, int32_t seed, int32_t epoch,
                         int32_t run_seed) {
    const int32_t st[4] = {first, seed, epoch, run_seed};
    DBK_CHECK_OK(dbk_tensor_write(&f->state, st));
    DBK_CHECK_OK(dbk_backend_run(be, d));
    return 0;
}

static int aug_run(const aug_fixture *f, const dbk_op_desc *d, int32_t first, int32_t seed) {
    return aug_run_epoch(f, d, first, seed, 0, 0);
}

/* numpy.pad(mode='reflect') index, written as a triangle wave of period 2(n-1) (the backend
 * uses two conditional mirrors instead). */
static int reflect_ref(int i, int n) {
    const int period = 2 * (n - 1);
    i = ((i % period) + period) % period;
    return i < n ? i : period - i;
}

/* The choices as ops.h documents them, computed from dbk_hash_u32 here. */
typedef struct aug_draw {
    int crop_y, crop_x, flip, cut_y, cut_x;
} aug_draw;

static aug_draw draw_ref(uint32_t seed, uint32_t row, int pad, int cutout, int h, int w) {
    aug_draw d;
    d.crop_y = pad ? (int)(((uint64_t)dbk_hash_u32(seed, row, 0, 0) * (uint64_t)(2 * pad + 1)) >> 32) : 0;
    d.crop_x = pad ? (int)(((uint64_t)dbk_hash_u32(seed, row, 1, 0) * (uint64_t)(2 * pad + 1)) >> 32) : 0;
    d.flip = (int)(dbk_hash_u32(seed, row, 2, 0) >> 31);
    d.cut_y = cutout ? (int)(((uint64_t)dbk_hash_u32(seed, row, 3, 0) * (uint64_t)(h - cutout + 1)) >> 32) : 0;
    d.cut_x = cutout ? (int)(((uint64_t)dbk_hash_u32(seed, row, 4, 0) * (uint64_t)(w - cutout + 1)) >> 32) : 0;
    return d;
}

/* The alternating flip's coin as op_list.h documents it, computed from dbk_hash_u32 here. */
static int base_flip_ref(uint32_t run_seed, uint32_t j) { return (int)(dbk_hash_u32(run_seed, j, 5, 0) & 1u); }

/* Expected training batch: explicit padded image, crop, flip, normalise, cutout. */
static void aug_expect(const aug_fixture *f, const dbk_augment_params *p, int32_t first, int32_t seed, int32_t epoch,
                       int32_t run_seed, bool with_indices, float *out, int *flips) {
    const int H = AUG_H, W = AUG_W, HP = AUG_H + 2 * p->pad, WP = AUG_W + 2 * p->pad;
    uint8_t *padded = malloc((size_t)(HP * WP));
    *flips = 0;
    for (int i = 0; i < AUG_N; i++) {
        const int row = first + i, j = with_indices ? f->hidx[row] : row;
        aug_draw d = {p->pad, p->pad, 0, 0, 0};
        if (p->train) {
            d = draw_ref((uint32_t)seed, (uint32_t)row, p->pad, p->cutout, H, W);
            if (p->flip_alternating) d.flip = base_flip_ref((uint32_t)run_seed, (uint32_t)j) ^ (epoch & 1);
            else d.flip = d.flip && p->flip;
        }
        *flips += d.flip;
        for (int c = 0; c < 3; c++) {
            const uint8_t *img = f->himg + (j * 3 + c) * H * W;
            for (int y = 0; y < HP; y++)
                for (int x = 0; x < WP; x++)
                    padded[y * WP + x] = img[reflect_ref(y - p->pad, H) * W + reflect_ref(x - p->pad, W)];
            float *o = out + ((int64_t)i * 3 + c) * H * W;
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++) {
                    const int xs = d.flip ? W - 1 - x : x;
                    const float v = (float)padded[(y + d.crop_y) * WP + xs + d.crop_x];
                    const bool cut = p->train && p->cutout && y >= d.cut_y && y < d.cut_y + p->cutout &&
                                     x >= d.cut_x && x < d.cut_x + p->cutout;
                    o[y * W + x] = cut ? 0.0f : (v / 255.0f - p->mean[c]) / p->std[c];
                }
        }
    }
    free(padded);
}

static int augment_choices_should_follow_the_documented_draw(void) {
    /* Sanity of the test's own reflect: numpy.pad([0,1,2,3], 2, 'reflect') = 2 1 0 1 2 3 2 1. */
    static const int np_reflect[8] = {2, 1, 0, 1, 2, 3, 2, 1};
    for (int i = 0; i < 8; i++) DBK_CHECK(reflect_ref(i - 2, 4) == np_reflect[i]);

    int crop_seen[9] = {0}, flips = 0, cut_lo = 0, cut_hi = 0;
    const int rows = 4000, pad = 4, cutout = 8, H = 32, W = 32;
    for (int r = 0; r < rows; r++) {
        int cy, cx, fl, ky, kx;
        dbk_augment_choices(99u, (uint32_t)r, pad, cutout, H, W, &cy, &cx, &fl, &ky, &kx);
        const aug_draw d = draw_ref(99u, (uint32_t)r, pad, cutout, H, W);
        DBK_CHECK_MSG(cy == d.crop_y && cx == d.crop_x && fl == d.flip && ky == d.cut_y && kx == d.cut_x,
                      "row %d: choices (%d %d %d %d %d) differ from the documented draw (%d %d %d %d %d)", r, cy, cx,
                      fl, ky, kx, d.crop_y, d.crop_x, d.flip, d.cut_y, d.cut_x);
        DBK_CHECK(cy >= 0 && cy <= 2 * pad && cx >= 0 && cx <= 2 * pad && (fl == 0 || fl == 1));
        DBK_CHECK(ky >= 0 && ky <= H - cutout && kx >= 0 && kx <= W - cutout);
        crop_seen[cy]++;
        flips += fl;
        cut_lo += ky == 0;
        cut_hi += ky == H - cutout;
    }
    for (int v = 0; v <= 2 * pad; v++) DBK_CHECK_MSG(crop_seen[v] > rows / 20, "crop offset %d drawn %d times", v, crop_seen[v]);
    DBK_CHECK_MSG(flips > rows * 45 / 100 && flips < rows * 55 / 100, "%d flips in %d rows", flips, rows);
    DBK_CHECK(cut_lo > 0 && cut_hi > 0);

    int cy, cx, fl, ky, kx;
    dbk_augment_choices(5u, 17u, 0, 0, H, W, &cy, &cx, &fl, &ky, &kx);
    DBK_CHECK(cy == 0 && cx == 0 && ky == 0 && kx == 0);
    return 0;
}

static int augment_train_should_match_independent_geometry(void) {
    aug_fixture *f = calloc(1, sizeof *f);
    int rc = aug_setup(f);
    float *expect = malloc(sizeof(float) * AUG_N * 3 * AUG_H * AUG_W);
    const int first = 5, seed = 4242;
    for (int flip_on = 1; flip_on >= 0 && rc == 0; flip_on--) {
        dbk_op_desc d = aug_desc(f, true, true);
        d.p.augment.flip = flip_on;
        rc |= aug_run(f, &d, first, seed);
        float *got = dbk_test_read(&f->x);
        int32_t *gl = dbk_test_read(&f->y);
        int flips;
        aug_expect(f, &d.p.augment, first, seed, 0, 0, true, expect, &flips);
        rc |= close_abs(flip_on ? "augment train (crop, flip, cutout)" : "augment train without flip", expect, got,
                        AUG_N * 3 * AUG_H * AUG_W, 1e-6);
        /* The case must exercise both branches of the flip, or it proves little. */
        if (flip_on) DBK_CHECK_MSG(flips > 0 && flips < AUG_N, "%d of %d rows flipped", flips, AUG_N);
        for (int i = 0; i < AUG_N; i++)
            DBK_CHECK_MSG(gl[i] == f->hlab[f->hidx[first + i]], "row %d label %d", i, gl[i]);
        free(got);
        free(gl);
    }
    rc |= guards_intact();
    free(expect);
    free(f);
    free_all();
    return rc;
}

static int augment_eval_should_only_normalise(void) {
    aug_fixture *f = calloc(1, sizeof *f);
    int rc = aug_setup(f);
    /* No indices: row i reads image first + i, so a batch of M rows is the whole dataset. */
    dbk_op_desc d = aug_desc(f, false, false);
    const int first = 0;
    d.dst[0].shape[0] = AUG_M;
    d.dst[1].shape[0] = AUG_M;
    rc |= aug_run(f, &d, first, 1);
    float *got = dbk_test_read(&d.dst[0]);
    int32_t *gl = dbk_test_read(&d.dst[1]);
    float *expect = malloc(sizeof(float) * AUG_M * 3 * AUG_H * AUG_W);
    for (int j = 0; j < AUG_M; j++)
        for (int c = 0; c < 3; c++)
            for (int e = 0; e < AUG_H * AUG_W; e++)
                expect[(j * 3 + c) * AUG_H * AUG_W + e] =
                    ((float)f->himg[(j * 3 + c) * AUG_H * AUG_W + e] / 255.0f - d.p.augment.mean[c]) / d.p.augment.std[c];
    rc |= close_abs("augment eval = normalisation only", expect, got, AUG_M * 3 * AUG_H * AUG_W, 1e-6);
    for (int j = 0; j < AUG_M; j++) DBK_CHECK_MSG(gl[j] == f->hlab[j], "row %d label %d", j, gl[j]);
    rc |= guards_intact();
    free(got); free(gl); free(expect); free(f);
    free_all();
    return rc;
}

/* cifar10-speedrun's jitter: with brightness B and contrast C every value of a row is (o + b) c,
 * o the same op's output without jitter (same seed: same crops and flips), one (b, c) per row,
 * |b| <= B, |c - 1| <= C; different rows draw different pairs. The cutout (after the jitter)
 * is off here. */
static int augment_jitter_should_shift_and_scale_each_row(void) {
    aug_fixture *f = calloc(1, sizeof *f);
    int rc = aug_setup(f);
    dbk_op_desc d = aug_desc(f, true, true);
    d.p.augment.cutout = 0;
    rc |= aug_run(f, &d, 5, 77);
    float *plain = dbk_test_read(&d.dst[0]);
    d.p.augment.brightness = 0.1399f;
    d.p.augment.contrast = 0.1308f;
    rc |= aug_run(f, &d, 5, 77);
    float *jit = dbk_test_read(&d.dst[0]);
    const int per = 3 * AUG_H * AUG_W;
    double first_c = 0.0;
    int distinct = 0;
    for (int i = 0; i < AUG_N && !rc; i++) {
        const float *o = plain + i * per, *v = jit + i * per;
        /* two values of the row with different o give c and b */
        int k = 1;
        while (k < per && fabsf(o[k] - o[0]) < 0.5f) k++;
        const double v0 = v[0], vk = v[k], o0 = o[0], ok = o[k];
        const double c = (vk - v0) / (ok - o0), b = v0 / c - o0;
        DBK_CHECK_MSG(fabs(b) <= 0.1399 + 1e-4 && fabs(c - 1.0) <= 0.1308 + 1e-4, "row %d: b %g, c %g out of range", i,
                      b, c);
        for (int e = 0; e < per; e++)
            DBK_CHECK_MSG(fabs((double)v[e] - ((double)o[e] + b) * c) < 1e-5, "row %d value %d: %g, (o + b) c = %g", i, e,
                          (double)v[e], ((double)o[e] + b) * c);
        if (i == 0) first_c = c;
        else distinct += fabs(c - first_c) > 1e-6;
    }
    DBK_CHECK_MSG(distinct > 0, "every row drew the same contrast");
    rc |= guards_intact();
    free(plain); free(jit); free(f);
    free_all();
    return rc;
}

static int augment_should_be_deterministic_per_seed(void) {
    aug_fixture *f = calloc(1, sizeof *f);
    int rc = aug_setup(f);
    const dbk_op_desc d = aug_desc(f, true, true);
    rc |= aug_run(f, &d, 3, 77);
    float *a = dbk_test_read(&f->x);
    rc |= aug_run(f, &d, 0, 1);       /* something else in between */
    rc |= aug_run(f, &d, 3, 77);
    float *b = dbk_test_read(&f->x);
    rc |= aug_run(f, &d, 3, 78);
    float *c = dbk_test_read(&f->x);
    const size_t nb = sizeof(float) * AUG_N * 3 * AUG_H * AUG_W;
    rc |= equal_bytes("augment twice with the same state", a, b, nb);
    DBK_CHECK_MSG(memcmp(a, c, nb) != 0, "a different seed gave the same batch");
    free(a); free(b); free(c); free(f);
    free_all();
    return rc;
}

static int augment_should_reject_out_of_range_rows(void) {
    aug_fixture *f = calloc(1, sizeof *f);
    int rc = aug_setup(f);
    const size_t nb = sizeof(float) * AUG_N * 3 * AUG_H * AUG_W;
    float *before = dbk_test_read(&f->x);
    struct { int32_t first; bool indices; int32_t bad_index; const char *what; } cases[] = {
        {AUG_L - AUG_N + 1, true, 0, "state.first + N past the index list"},
        {-1, true, 0, "negative state.first"},
        {0, true, AUG_M, "index equal to the dataset size"},
        {0, true, -3, "negative index"},
        {0, false, 0, "no indices and first + N past the dataset"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int32_t idx[AUG_L];
        memcpy(idx, f->hidx, sizeof idx);
        if (cases[k].bad_index) idx[AUG_N / 2] = cases[k].bad_index;
        DBK_CHECK_OK(dbk_tensor_write(&f->indices, idx));
        dbk_op_desc dk = aug_desc(f, true, cases[k].indices);
        const int32_t st[4] = {cases[k].first, 9, 0, 0};
        DBK_CHECK_OK(dbk_tensor_write(&f->state, st));
        const dbk_status s = dbk_backend_run(be, &dk);
        DBK_CHECK_MSG(s == DBK_ERR_INVALID_ARG, "%s: got %s", cases[k].what, dbk_status_str(s));
        DBK_CHECK_MSG(strstr(dbk_last_error(), "augment") != NULL, "%s: message '%s'", cases[k].what, dbk_last_error());
        float *after = dbk_test_read(&f->x);
        const int same = memcmp(before, after, nb) == 0;
        free(after);
        DBK_CHECK_MSG(same, "%s: the output was written before the error", cases[k].what);
    }
    rc |= guards_intact();
    free(before);
    free(f);
    free_all();
    return rc;
}

/* Which way row i of x shows image j, with pad 0 and no cutout (so the only geometry is the
 * flip): 0 as stored, 1 mirrored, -1 neither (a wrong pixel somewhere). */
static int aug_orientation(const aug_fixture *f, const dbk_augment_params *p, const float *x, int i, int j) {
    int as_is = 1, mirrored = 1;
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < AUG_H; y++)
            for (int xo = 0; xo < AUG_W; xo++) {
                const float got = x[((i * 3 + c) * AUG_H + y) * AUG_W + xo];
                const uint8_t *img = f->himg + (j * 3 + c) * AUG_H * AUG_W + y * AUG_W;
                const float a = ((float)img[xo] / 255.0f - p->mean[c]) / p->std[c];
                const float b = ((float)img[AUG_W - 1 - xo] / 255.0f - p->mean[c]) / p->std[c];
                as_is &= fabsf(got - a) <= 1e-6f;
                mirrored &= fabsf(got - b) <= 1e-6f;
            }
    return as_is ? 0 : mirrored ? 1 : -1;
}

static int augment_alternating_flip_should_mirror_each_image_once_per_two_epochs(void) {
    aug_fixture *f = calloc(1, sizeof *f);
    int rc = aug_setup(f);
    dbk_op_desc d = aug_desc(f, true, true);
    d.p.augment.pad = 0;
    d.p.augment.cutout = 0;
    d.p.augment.flip_alternating = true;
    const int first = 4, run_seed = 20240611;
    int orient[8][AUG_M];   /* per epoch, per image; -2 = not in the batch */
    for (int e = 0; e < 8 && rc == 0; e++) {
        for (int j = 0; j < AUG_M; j++) orient[e][j] = -2;
        /* a new draw seed every epoch, as the trainer does: the flip must not depend on it */
        rc |= aug_run_epoch(f, &d, first, 1000 + 17 * e, e, run_seed);
        float *x = dbk_test_read(&f->x);
        for (int i = 0; i < AUG_N; i++) {
            const int j = f->hidx[first + i], o = aug_orientation(f, &d.p.augment, x, i, j);
            DBK_CHECK_MSG(o >= 0, "epoch %d row %d: neither image %d nor its mirror", e, i, j);
            /* rows showing the same image agree: the coin is the image's, not the row's */
            DBK_CHECK_MSG(orient[e][j] == -2 || orient[e][j] == o, "epoch %d: image %d shown both ways", e, j);
            orient[e][j] = o;
            DBK_CHECK_MSG(o == (base_flip_ref((uint32_t)run_seed, (uint32_t)j) ^ (e & 1)),
                          "epoch %d image %d: flip %d, documented %d", e, j, o,
                          base_flip_ref((uint32_t)run_seed, (uint32_t)j) ^ (e & 1));
            DBK_CHECK(dbk_augment_base_flip((uint32_t)run_seed, (uint32_t)j) ==
                      base_flip_ref((uint32_t)run_seed, (uint32_t)j));
        }
        free(x);
    }
    int seen = 0, flipped0 = 0;
    for (int j = 0; j < AUG_M; j++) {
        if (orient[0][j] == -2) continue;
        seen++;
        flipped0 += orient[0][j];
        for (int e = 0; e + 1 < 8; e++)
            DBK_CHECK_MSG(orient[e][j] + orient[e + 1][j] == 1, "image %d: flipped %d times in epochs %d and %d", j,
                          orient[e][j] + orient[e + 1][j], e, e + 1);
    }
    /* The batch shows every image, and epoch 0 has both orientations, or the case proves little. */
    DBK_CHECK_MSG(seen == AUG_M, "the batch shows %d of %d images", seen, AUG_M);
    DBK_CHECK_MSG(flipped0 > 0 && flipped0 < AUG_M, "%d of %d images flipped at epoch 0", flipped0, AUG_M);
    rc |= guards_intact();
    free(f);
    free_all();
    return rc;
}

/* Under the alternating flip the crop and cutout stay the row's draws: the whole batch
 * against the explicit pad, crop, flip, cutout of aug_expect, over two epochs. */
static int augment_alternating_flip_should_keep_the_crop_and_cutout_draws(void) {
    aug_fixture *f = calloc(1, sizeof *f);
    int rc = aug_setup(f);
    float *expect = malloc(sizeof(float) * AUG_N * 3 * AUG_H * AUG_W);
    const int first = 2, seed = 777, run_seed = -5;
    for (int e = 0; e < 2 && rc == 0; e++) {
        dbk_op_desc d = aug_desc(f, true, true);
        d.p.augment.flip_alternating = true;
        rc |= aug_run_epoch(f, &d, first, seed, e, run_seed);
        float *got = dbk_test_read(&f->x);
        int flips;
        aug_expect(f, &d.p.augment, first, seed, e, run_seed, true, expect, &flips);
        rc |= close_abs(e ? "alternating flip, epoch 1" : "alternating flip, epoch 0", expect, got,
                        AUG_N * 3 * AUG_H * AUG_W, 1e-6);
        DBK_CHECK_MSG(flips > 0 && flips < AUG_N, "epoch %d: %d of %d rows flipped", e, flips, AUG_N);
        free(got);
    }
    rc |= guards_intact();
    free(expect);
    free(f);
    free_all();
    return rc;
}

/* One 3x4 image, v(c, y, x) = 100c + 10y + x, mean 0 and std 1 (so x * 255 = v), read through
 * views worked out by hand with reflect(-1) = 1, reflect(n) = n-2. */
static int augment_view_should_match_hand_computed_pixels(void) {
    static const struct { int dy, dx; bool flip; uint8_t v[3][4]; } views[] = {
        {0, 0, false, {{0, 1, 2, 3}, {10, 11, 12, 13}, {20, 21, 22, 23}}},
        {0, 0, true, {{3, 2, 1, 0}, {13, 12, 11, 10}, {23, 22, 21, 20}}},
        /* airbench94 padded[0:H, 0:W]: rows 1 0 1, columns 1 0 1 2 */
        {-1, -1, false, {{11, 10, 11, 12}, {1, 0, 1, 2}, {11, 10, 11, 12}}},
        /* ... then .flip(-1) */
        {-1, -1, true, {{12, 11, 10, 11}, {2, 1, 0, 1}, {12, 11, 10, 11}}},
        /* padded[2:H+2, 2:W+2] then .flip(-1): rows 1 2 1, columns 2 3 2 1 */
        {1, 1, true, {{12, 13, 12, 11}, {22, 23, 22, 21}, {12, 13, 12, 11}}},
        /* the largest shifts reflect once: rows 2 1 0, columns 3 2 1 0 */
        {2, -3, false, {{23, 22, 21, 20}, {13, 12, 11, 10}, {3, 2, 1, 0}}},
    };
    dbk_tensor img = gt(DBK_DTYPE_U8, 4, 1, 3, 3, 4), lab = gt(DBK_DTYPE_U8, 1, 1, 1, 1, 1);
    dbk_tensor st = gt(DBK_DTYPE_I32, 1, 4, 1, 1, 1), x = gf(4, 1, 3, 3, 4), y = gt(DBK_DTYPE_I32, 1, 1, 1, 1, 1);
    uint8_t himg[3 * 3 * 4], hlab[1] = {6};
    for (int c = 0; c < 3; c++)
        for (int r = 0; r < 3; r++)
            for (int k = 0; k < 4; k++) himg[(c * 3 + r) * 4 + k] = (uint8_t)(100 * c + 10 * r + k);
    const int32_t hst[4] = {0, 3, 1, 9};   /* evaluation ignores seed, epoch and run_seed */
    DBK_CHECK_OK(dbk_tensor_write(&img, himg));
    DBK_CHECK_OK(dbk_tensor_write(&lab, hlab));
    DBK_CHECK_OK(dbk_tensor_write(&st, hst));
    for (size_t k = 0; k < sizeof views / sizeof views[0]; k++) {
        dbk_op_desc d = {.op = DBK_OP_AUGMENT};
        d.p.augment = (dbk_augment_params){.train = false, .pad = 2, .flip = true, .mean = {0, 0, 0}, .std = {1, 1, 1},
                                           .view_dy = views[k].dy, .view_dx = views[k].dx,
                                           .view_flip = views[k].flip};
        d.src[0] = img; d.src[1] = lab; d.src[3] = st; d.dst[0] = x; d.dst[1] = y;
        DBK_CHECK_OK(dbk_backend_run(be, &d));
        float got[3 * 3 * 4];
        int32_t gl;
        DBK_CHECK_OK(dbk_tensor_read(&x, got));
        DBK_CHECK_OK(dbk_tensor_read(&y, &gl));
        DBK_CHECK(gl == 6);
        for (int c = 0; c < 3; c++)
            for (int r = 0; r < 3; r++)
                for (int q = 0; q < 4; q++) {
                    const float want = (float)(100 * c + views[k].v[r][q]), v = got[(c * 3 + r) * 4 + q] * 255.0f;
                    DBK_CHECK_MSG(fabsf(v - want) < 1e-3f, "view (%d, %d%s) c%d (%d, %d): %g, by hand %g", views[k].dy,
                                  views[k].dx, views[k].flip ? ", flip" : "", c, r, q, (double)v, (double)want);
                }
    }
    int rc = guards_intact();
    free_all();
    return rc;
}

/* airbench94's infer_mirror_translate built literally: F.pad(x, P, 'reflect'), the window
 * padded[P+dy : P+dy+H, P+dx : P+dx+W], then .flip(-1) of that window; the op's view (dy, dx,
 * flip) must equal it (the contract's algebra), on the ramp dataset through the indices. */
static int augment_view_should_equal_pad_crop_then_flip(void) {
    static const struct { int dy, dx; bool flip; } views[] = {
        {0, 0, false}, {0, 0, true}, {-1, -1, false}, {-1, -1, true}, {1, 1, false}, {1, 1, true},
        {-4, 5, true}, {AUG_H - 1, -(AUG_W - 1), true}, {3, 0, false},
    };
    aug_fixture *f = calloc(1, sizeof *f);
    int rc = aug_setup(f);
    const int P = AUG_H > AUG_W ? AUG_H - 1 : AUG_W - 1, HP = AUG_H + 2 * P, WP = AUG_W + 2 * P, first = 3;
    uint8_t *padded = malloc((size_t)(HP * WP));
    float *expect = malloc(sizeof(float) * AUG_N * 3 * AUG_H * AUG_W);
    for (size_t k = 0; k < sizeof views / sizeof views[0] && rc == 0; k++) {
        dbk_op_desc d = aug_desc(f, false, true);
        d.p.augment.view_dy = views[k].dy;
        d.p.augment.view_dx = views[k].dx;
        d.p.augment.view_flip = views[k].flip;
        rc |= aug_run_epoch(f, &d, first, 5, 2, 7);
        float *got = dbk_test_read(&f->x);
        for (int i = 0; i < AUG_N; i++) {
            const int j = f->hidx[first + i];
            for (int c = 0; c < 3; c++) {
                const uint8_t *img = f->himg + (j * 3 + c) * AUG_H * AUG_W;
                for (int y = 0; y < HP; y++)
                    for (int x = 0; x < WP; x++)
                        padded[y * WP + x] = img[reflect_ref(y - P, AUG_H) * AUG_W + reflect_ref(x - P, AUG_W)];
                for (int y = 0; y < AUG_H; y++)
                    for (int x = 0; x < AUG_W; x++) {
                        const int xw = views[k].flip ? AUG_W - 1 - x : x;   /* .flip(-1) of the window */
                        const float v = (float)padded[(P + views[k].dy + y) * WP + P + views[k].dx + xw];
                        expect[((i * 3 + c) * AUG_H + y) * AUG_W + x] = (v / 255.0f - d.p.augment.mean[c]) / d.p.augment.std[c];
                    }
            }
        }
        char what[64];
        snprintf(what, sizeof what, "view (%d, %d%s)", views[k].dy, views[k].dx, views[k].flip ? ", flip" : "");
        rc |= close_abs(what, expect, got, AUG_N * 3 * AUG_H * AUG_W, 1e-6);
        free(got);
    }
    rc |= guards_intact();
    free(padded);
    free(expect);
    free(f);
    free_all();
    return rc;
}

/* 32-bit FNV-1a of a byte range, to pin a batch in a few characters. */
static uint32_t fnv1a(const void *p, size_t n) {
    const unsigned char *b = p;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 16777619u;
    return h;
}

/* The modes that existed before the alternating flip and the views give the bytes they gave
 * then, whatever epoch and run_seed say: existing recipes train exactly as before. The checksums
 * were taken with the two-element state code (commit 9b7f1e5) and taken again, the draws
 * unchanged, when the normalisation became v * scale + shift (dbk_augment_affine: no division,
 * which GPUs do not round correctly; within an ulp of the old (v / 255 - mean) / std, which
 * augment_view_should_equal_pad_crop_then_flip still checks to 1e-6). */
static int augment_old_modes_should_keep_their_bytes(void) {
    static const struct { bool train, indices; int32_t first, seed, epoch, run_seed; uint32_t fnv; } cases[] = {
        {true, true, 5, 4242, 0, 0, 0x73973928u},
        {true, true, 5, 4242, 3, 123457, 0x73973928u},
        {true, true, 8, -9, 1, 99, 0x96da6911u},
        {false, true, 2, 1, 0, 0, 0xd92da4b2u},
        {false, true, 2, 77, 5, -3, 0xd92da4b2u},
    };
    aug_fixture *f = calloc(1, sizeof *f);
    int rc = aug_setup(f);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0] && rc == 0; k++) {
        const dbk_op_desc d = aug_desc(f, cases[k].train, cases[k].indices);
        rc |= aug_run_epoch(f, &d, cases[k].first, cases[k].seed, cases[k].epoch, cases[k].run_seed);
        float *x = dbk_test_read(&f->x);
        const uint32_t h = fnv1a(x, sizeof(float) * AUG_N * 3 * AUG_H * AUG_W);
        free(x);
        DBK_CHECK_MSG(h == cases[k].fnv, "case %zu: batch checksum 0x%08x, pinned 0x%08x", k, h, cases[k].fnv);
    }
    free(f);
    free_all();
    return rc;
}

static int augment_should_reject_bad_flip_and_view_settings(void) {
    aug_fixture *f = calloc(1, sizeof *f);
    int rc = aug_setup(f);
    struct { bool train, flip, alt; int dy, dx; bool vflip; const char *what; } cases[] = {
        {true, false, true, 0, 0, false, "flip_alternating without flip"},
        {false, true, true, 0, 0, false, "flip_alternating in evaluation"},
        {true, true, false, 1, 0, false, "view_dy in training"},
        {true, true, false, 0, -1, false, "view_dx in training"},
        {true, true, false, 0, 0, true, "view_flip in training"},
        {false, true, false, AUG_H, 0, false, "view_dy = H"},
        {false, true, false, 0, -AUG_W, false, "view_dx = -W"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        dbk_op_desc d = aug_desc(f, cases[k].train, true);
        d.p.augment.flip = cases[k].flip;
        d.p.augment.flip_alternating = cases[k].alt;
        d.p.augment.view_dy = cases[k].dy;
        d.p.augment.view_dx = cases[k].dx;
        d.p.augment.view_flip = cases[k].vflip;
        const dbk_status s = dbk_backend_run(be, &d);
        DBK_CHECK_MSG(s == DBK_ERR_INVALID_ARG, "%s: got %s", cases[k].what, dbk_status_str(s));
        DBK_CHECK_MSG(strstr(dbk_last_error(), "augment") != NULL, "%s: message '%s'", cases[k].what, dbk_last_error());
    }
    /* the largest shift is allowed, and the old two-element state is not */
    dbk_op_desc ok = aug_desc(f, false, true);
    ok.p.augment.view_dy = -(AUG_H - 1);
    ok.p.augment.view_dx = AUG_W - 1;
    DBK_CHECK_OK(dbk_op_validate(&ok));
    ok.src[3].shape[0] = 2;
    DBK_CHECK(dbk_op_validate(&ok) == DBK_ERR_INVALID_ARG);
    DBK_CHECK_MSG(strstr(dbk_last_error(), "state") != NULL, "message '%s'", dbk_last_error());
    rc |= guards_intact();
    free(f);
    free_all();
    return rc;
}

/* ---------------------------------------------------------------------------------- */
/* GELU, bias, lookahead (airbench94's ops)                                           */

static int gelu_should_match_erf_formulas_in_double_and_run_in_place(void) {
    const int64_t n = 1001;
    dbk_tensor x = gf(1, n, 1, 1, 1), y = gf(1, n, 1, 1, 1), dy = gf(1, n, 1, 1, 1), dx = gf(1, n, 1, 1, 1);
    float *hx = dbk_test_uniform(n, -6.0f, 6.0f, 101), *hdy = dbk_test_uniform(n, -1.0f, 1.0f, 102);
    hx[0] = 0.0f;
    double ry[1001], rdx[1001];
    for (int64_t i = 0; i < n; i++) {
        const double v = hx[i], cdf = 0.5 * (1.0 + erf(v / sqrt(2.0)));
        ry[i] = v * cdf;
        rdx[i] = (double)hdy[i] * (cdf + v * exp(-0.5 * v * v) / sqrt(2.0 * acos(-1.0)));
    }
    float *fy = to_float(ry, n), *fdx = to_float(rdx, n);
    DBK_CHECK_OK(dbk_tensor_write(&x, hx));
    DBK_CHECK_OK(dbk_tensor_write(&dy, hdy));
    dbk_op_desc f = {.op = DBK_OP_GELU_FWD}, b = {.op = DBK_OP_GELU_BWD};
    f.src[0] = x; f.dst[0] = y;
    b.src[0] = x; b.src[1] = dy; b.dst[0] = dx;
    DBK_CHECK_OK(dbk_backend_run(be, &f));
    DBK_CHECK_OK(dbk_backend_run(be, &b));
    float *gy = dbk_test_read(&y), *gdx = dbk_test_read(&dx);
    int rc = close_nmse("gelu fwd", fy, gy, n, 1e-12) | close_nmse("gelu bwd", fdx, gdx, n, 1e-12);
    DBK_CHECK_MSG(gy[0] == 0.0f, "gelu(0) = %g, expected 0", (double)gy[0]);
    free(gy); free(gdx);

    /* In place: dx = dy first (it reads x), then y = x. */
    b.dst[0] = dy;
    f.dst[0] = x;
    DBK_CHECK_OK(dbk_backend_run(be, &b));
    DBK_CHECK_OK(dbk_backend_run(be, &f));
    gy = dbk_test_read(&x);
    gdx = dbk_test_read(&dy);
    rc |= close_nmse("gelu fwd in place", fy, gy, n, 1e-12) | close_nmse("gelu bwd in place", fdx, gdx, n, 1e-12);
    rc |= guards_intact();
    free(hx); free(hdy); free(fy); free(fdx); free(gy); free(gdx);
    free_all();
    return rc;
}

static int bias_add_and_channel_sum_should_match_naive_loops(void) {
    enum { N = 3, C = 5, H = 7, W = 9 };
    const int64_t n = (int64_t)N * C * H * W;
    dbk_tensor x = gf(4, N, C, H, W), b = gf(1, C, 1, 1, 1), y = gf(4, N, C, H, W), db = gf(1, C, 1, 1, 1);
    float *hx = dbk_test_uniform(n, -2.0f, 2.0f, 103), *hb = dbk_test_uniform(C, -1.0f, 1.0f, 104);
    float *ry = malloc((size_t)n * sizeof(float));
    double rdb[C] = {0};
    for (int in = 0; in < N; in++)
        for (int c = 0; c < C; c++)
            for (int h = 0; h < H; h++)
                for (int w = 0; w < W; w++) {
                    const int64_t at = (((int64_t)in * C + c) * H + h) * W + w;
                    ry[at] = hx[at] + hb[c];
                    rdb[c] += (double)hx[at];
                }
    float *fdb = to_float(rdb, C);
    DBK_CHECK_OK(dbk_tensor_write(&x, hx));
    DBK_CHECK_OK(dbk_tensor_write(&b, hb));
    dbk_op_desc add = {.op = DBK_OP_BIAS_ADD}, sum = {.op = DBK_OP_CHANNEL_SUM};
    add.src[0] = x; add.src[1] = b; add.dst[0] = y;
    sum.src[0] = x; sum.dst[0] = db;   /* db starts as NaN: the op must overwrite it */
    DBK_CHECK_OK(dbk_backend_run(be, &add));
    DBK_CHECK_OK(dbk_backend_run(be, &sum));
    float *gy = dbk_test_read(&y), *gdb = dbk_test_read(&db);
    int rc = close_nmse("bias_add", ry, gy, n, 0.0) | close_nmse("channel_sum", fdb, gdb, C, 1e-12);
    free(gy);
    add.dst[0] = x;   /* in place */
    DBK_CHECK_OK(dbk_backend_run(be, &add));
    gy = dbk_test_read(&x);
    rc |= close_nmse("bias_add in place", ry, gy, n, 0.0);
    rc |= guards_intact();
    free(hx); free(hb); free(ry); free(fdb); free(gy); free(gdb);
    free_all();
    return rc;
}

/* The mean of each plane in double; the backward spreads dy / (H*W), overwriting dx (which
 * starts as NaN); a (N,C) y is refused (y must be (N,C,1,1)). */
static int global_avgpool_should_match_plane_means_and_spread_the_gradient(void) {
    enum { N = 3, C = 5, H = 7, W = 9 };
    const int64_t n = (int64_t)N * C * H * W;
    dbk_tensor x = gf(4, N, C, H, W), y = gf(4, N, C, 1, 1), dy = gf(4, N, C, 1, 1), dx = gf(4, N, C, H, W);
    float *hx = dbk_test_uniform(n, -2.0f, 2.0f, 105), *hdy = dbk_test_uniform(N * C, -1.0f, 1.0f, 106);
    double ry[N * C] = {0};
    float *rdx = malloc((size_t)n * sizeof(float));
    for (int pl = 0; pl < N * C; pl++) {
        for (int i = 0; i < H * W; i++) {
            ry[pl] += (double)hx[pl * H * W + i];
            rdx[pl * H * W + i] = hdy[pl] / (float)(H * W);
        }
        ry[pl] /= H * W;
    }
    float *fy = to_float(ry, N * C);
    DBK_CHECK_OK(dbk_tensor_write(&x, hx));
    DBK_CHECK_OK(dbk_tensor_write(&dy, hdy));
    dbk_op_desc f = {.op = DBK_OP_GLOBAL_AVGPOOL_FWD}, b = {.op = DBK_OP_GLOBAL_AVGPOOL_BWD};
    f.src[0] = x; f.dst[0] = y;
    b.src[0] = dy; b.dst[0] = dx;
    DBK_CHECK_OK(dbk_backend_run(be, &f));
    DBK_CHECK_OK(dbk_backend_run(be, &b));
    float *gy = dbk_test_read(&y), *gdx = dbk_test_read(&dx);
    int rc = close_nmse("global_avgpool_fwd", fy, gy, N * C, 1e-14) | close_nmse("global_avgpool_bwd", rdx, gdx, n, 0.0);
    rc |= guards_intact();
    f.dst[0].ndim = 2;
    DBK_CHECK(dbk_backend_run(be, &f) == DBK_ERR_INVALID_ARG && strstr(dbk_last_error(), "has 2 dims"));
    free(hx); free(hdy); free(rdx); free(fy); free(gy); free(gdx);
    free_all();
    return rc;
}

/* Leaky ReLU against its formula (exact), in place too; the backward through the output. */
static int leaky_relu_should_scale_negatives_by_the_slope(void) {
    enum { N = 1000 };
    dbk_tensor x = gf(1, N, 1, 1, 1), y = gf(1, N, 1, 1, 1), dy = gf(1, N, 1, 1, 1), dx = gf(1, N, 1, 1, 1);
    float *hx = dbk_test_uniform(N, -2.0f, 2.0f, 107), *hdy = dbk_test_uniform(N, -1.0f, 1.0f, 108);
    float ry[N], rdx[N];
    for (int i = 0; i < N; i++) {
        ry[i] = hx[i] > 0.0f ? hx[i] : 0.1f * hx[i];
        rdx[i] = hx[i] > 0.0f ? hdy[i] : 0.1f * hdy[i];
    }
    DBK_CHECK_OK(dbk_tensor_write(&x, hx));
    DBK_CHECK_OK(dbk_tensor_write(&dy, hdy));
    dbk_op_desc f = {.op = DBK_OP_LEAKY_RELU_FWD, .p.leaky.slope = 0.1f}, b = {.op = DBK_OP_LEAKY_RELU_BWD, .p.leaky.slope = 0.1f};
    f.src[0] = x; f.dst[0] = y;
    b.src[0] = y; b.src[1] = dy; b.dst[0] = dx;
    DBK_CHECK_OK(dbk_backend_run(be, &f));
    DBK_CHECK_OK(dbk_backend_run(be, &b));
    float *gy = dbk_test_read(&y), *gdx = dbk_test_read(&dx);
    int rc = equal_bytes("leaky_relu_fwd", ry, gy, sizeof ry) | equal_bytes("leaky_relu_bwd", rdx, gdx, sizeof rdx);
    free(gy);
    f.dst[0] = x;   /* in place */
    DBK_CHECK_OK(dbk_backend_run(be, &f));
    gy = dbk_test_read(&x);
    rc |= equal_bytes("leaky_relu_fwd in place", ry, gy, sizeof ry) | guards_intact();
    f.p.leaky.slope = 0.0f;
    DBK_CHECK(dbk_backend_run(be, &f) == DBK_ERR_INVALID_ARG && strstr(dbk_last_error(), "slope"));
    free(hx); free(hdy); free(gy); free(gdx);
    return rc;
}

/* Dropout p = 0.5 over 20000 elements: about half dropped (binomial sd 71: within 2%), the
 * rest exactly doubled; the backward applies the same mask; another salt or another batch
 * position gives another mask; p = 0 keeps everything unscaled. */
static int dropout_should_drop_a_fraction_p_and_scale_the_rest(void) {
    enum { N = 20000 };
    dbk_tensor x = gf(1, N, 1, 1, 1), y = gf(1, N, 1, 1, 1), dx = gf(1, N, 1, 1, 1), st = gt(DBK_DTYPE_I32, 1, 4, 1, 1, 1);
    float *hx = dbk_test_uniform(N, 0.5f, 1.5f, 109);   /* no zeros: a zero output means dropped */
    int32_t state[4] = {1024, 777, 0, 0};
    DBK_CHECK_OK(dbk_tensor_write(&x, hx));
    DBK_CHECK_OK(dbk_tensor_write(&st, state));
    dbk_op_desc f = {.op = DBK_OP_DROPOUT_FWD, .p.dropout = {0.5f, 1u}}, b = {.op = DBK_OP_DROPOUT_BWD, .p.dropout = {0.5f, 1u}};
    f.src[0] = x; f.src[1] = st; f.dst[0] = y;
    b.src[0] = x; b.src[1] = st; b.dst[0] = dx;
    DBK_CHECK_OK(dbk_backend_run(be, &f));
    DBK_CHECK_OK(dbk_backend_run(be, &b));
    float *gy = dbk_test_read(&y), *gdx = dbk_test_read(&dx);
    int dropped = 0, wrong = 0;
    for (int i = 0; i < N; i++) {
        dropped += gy[i] == 0.0f;
        wrong += gy[i] != 0.0f && gy[i] != 2.0f * hx[i];
    }
    DBK_CHECK_MSG(dropped > N / 2 - N / 50 && dropped < N / 2 + N / 50, "p = 0.5 dropped %d of %d", dropped, N);
    DBK_CHECK_MSG(wrong == 0, "%d kept elements are not x / (1 - p)", wrong);
    int rc = equal_bytes("dropout_bwd uses the forward's mask", gy, gdx, (size_t)N * sizeof(float));
    free(gdx);
    f.p.dropout.salt = 2u;
    DBK_CHECK_OK(dbk_backend_run(be, &f));
    float *other = dbk_test_read(&y);
    int same = 0;
    for (int i = 0; i < N; i++) same += (gy[i] == 0.0f) == (other[i] == 0.0f);
    DBK_CHECK_MSG(same < N * 6 / 10, "another salt kept the mask (%d of %d agree)", same, N);
    free(other);
    f.p.dropout.salt = 1u;
    state[0] = 1152;   /* the next batch */
    DBK_CHECK_OK(dbk_tensor_write(&st, state));
    DBK_CHECK_OK(dbk_backend_run(be, &f));
    other = dbk_test_read(&y);
    same = 0;
    for (int i = 0; i < N; i++) same += (gy[i] == 0.0f) == (other[i] == 0.0f);
    DBK_CHECK_MSG(same < N * 6 / 10, "the next batch kept the mask (%d of %d agree)", same, N);
    free(other);
    f.p.dropout.p = 0.0f;
    DBK_CHECK_OK(dbk_backend_run(be, &f));
    other = dbk_test_read(&y);
    rc |= equal_bytes("dropout p = 0 is the identity", hx, other, (size_t)N * sizeof(float)) | guards_intact();
    f.p.dropout.p = 1.0f;
    DBK_CHECK(dbk_backend_run(be, &f) == DBK_ERR_INVALID_ARG && strstr(dbk_last_error(), "[0, 1)"));
    free(hx); free(gy); free(other);
    return rc;
}

/* ATen's lerp (Lerp.h) written out in fp32, with w = 1 - decay. */
static float lerp_ref(float e, float p, float decay) {
    const float w = 1.0f - decay;
    return fabsf(w) < 0.5f ? e + w * (p - e) : p - (p - e) * (1.0f - w);
}

static int lookahead_should_lerp_toward_params_then_copy_ema_into_params(void) {
    enum { N = 37 };
    static const float decays[] = {0.77378094f, 0.3f, 0.5f, 1.0f, 0.0f};
    dbk_tensor decay = gf(1, 1, 1, 1, 1), ema = gf(1, N, 1, 1, 1), par = gf(2, 1, N, 1, 1);
    dbk_op_desc d = {.op = DBK_OP_LOOKAHEAD};
    d.src[0] = decay; d.dst[0] = ema; d.dst[1] = par;
    int rc = 0;
    for (size_t k = 0; k < sizeof decays / sizeof decays[0]; k++) {
        float *he = dbk_test_uniform(N, -1.0f, 1.0f, 105 + k), *hp = dbk_test_uniform(N, -1.0f, 1.0f, 110 + k);
        float want[N];
        for (int i = 0; i < N; i++) want[i] = lerp_ref(he[i], hp[i], decays[k]);
        /* decay 1 keeps the EMA exactly (the final sync), decay 0 takes the params exactly */
        if (decays[k] == 1.0f) DBK_CHECK(memcmp(want, he, sizeof want) == 0);
        if (decays[k] == 0.0f) DBK_CHECK(memcmp(want, hp, sizeof want) == 0);
        DBK_CHECK_OK(dbk_tensor_write(&ema, he));
        DBK_CHECK_OK(dbk_tensor_write(&par, hp));
        DBK_CHECK_OK(dbk_tensor_write(&decay, &decays[k]));   /* the host rewrites decay each run */
        DBK_CHECK_OK(dbk_backend_run(be, &d));
        float *ge = dbk_test_read(&ema), *gp = dbk_test_read(&par);
        rc |= equal_bytes("lookahead ema", want, ge, sizeof want) | equal_bytes("lookahead params", want, gp, sizeof want);
        free(he); free(hp); free(ge); free(gp);
    }
    rc |= guards_intact();

    /* validation: decay a single f32, ema and params of one element count */
    dbk_tensor two = gf(1, 2, 1, 1, 1), idecay = gt(DBK_DTYPE_I32, 1, 1, 1, 1, 1), short_par = gf(1, N - 1, 1, 1, 1);
    dbk_op_desc bad = d;
    bad.src[0] = two;
    DBK_CHECK(dbk_backend_run(be, &bad) == DBK_ERR_INVALID_ARG);
    DBK_CHECK_MSG(strstr(dbk_last_error(), "decay") != NULL, "message '%s'", dbk_last_error());
    bad.src[0] = idecay;
    DBK_CHECK(dbk_backend_run(be, &bad) == DBK_ERR_INVALID_ARG);
    bad = d;
    bad.dst[1] = short_par;
    DBK_CHECK(dbk_backend_run(be, &bad) == DBK_ERR_INVALID_ARG);
    DBK_CHECK_MSG(strstr(dbk_last_error(), "element count") != NULL, "message '%s'", dbk_last_error());
    free_all();
    return rc;
}

static int bias_ops_should_reject_a_bias_of_the_wrong_length(void) {
    dbk_tensor x = gf(4, 2, 3, 4, 4), y = gf(4, 2, 3, 4, 4), b4 = gf(1, 4, 1, 1, 1), flat = gf(2, 6, 16, 1, 1);
    dbk_op_desc add = {.op = DBK_OP_BIAS_ADD};
    add.src[0] = x; add.src[1] = b4; add.dst[0] = y;
    DBK_CHECK(dbk_backend_run(be, &add) == DBK_ERR_INVALID_ARG);
    DBK_CHECK_MSG(strstr(dbk_last_error(), "bias_add") != NULL, "message '%s'", dbk_last_error());
    add.src[1] = gf(1, 3, 1, 1, 1);
    add.dst[0] = flat;   /* y must be (N,C,H,W) like x */
    DBK_CHECK(dbk_backend_run(be, &add) == DBK_ERR_INVALID_ARG);
    dbk_op_desc sum = {.op = DBK_OP_CHANNEL_SUM};
    sum.src[0] = x; sum.dst[0] = b4;
    DBK_CHECK(dbk_backend_run(be, &sum) == DBK_ERR_INVALID_ARG);
    DBK_CHECK_MSG(strstr(dbk_last_error(), "db") != NULL, "message '%s'", dbk_last_error());
    int rc = guards_intact();
    free_all();
    return rc;
}

/* ---------------------------------------------------------------------------------- */
/* validation through dbk_backend_run                                                  */

static int backend_run_should_reject_contract_violations(void) {
    dbk_tensor x = gf(4, 2, 3, 8, 8), w = gf(4, 4, 3, 3, 3), y_bad = gf(4, 2, 4, 7, 8);
    dbk_op_desc conv = {.op = DBK_OP_CONV2D_FWD, .p.conv = {1, 1, 1, 1}};
    conv.src[0] = x; conv.src[1] = w; conv.dst[0] = y_bad;
    DBK_CHECK(dbk_backend_run(be, &conv) == DBK_ERR_INVALID_ARG);
    DBK_CHECK_MSG(strstr(dbk_last_error(), "conv2d_fwd") != NULL, "message '%s'", dbk_last_error());

    dbk_tensor a = gf(2, 3, 5, 1, 1), b = gf(2, 4, 2, 1, 1), c = gf(2, 3, 2, 1, 1);
    dbk_op_desc gemm = {.op = DBK_OP_GEMM, .p.gemm = {false, false, 1.0f, 0.0f}};
    gemm.src[0] = a; gemm.src[1] = b; gemm.dst[0] = c;
    DBK_CHECK(dbk_backend_run(be, &gemm) == DBK_ERR_INVALID_ARG);

    dbk_op_desc add = {.op = DBK_OP_ADD};
    add.src[0] = a; add.src[1] = c; add.dst[0] = a;
    DBK_CHECK(dbk_backend_run(be, &add) == DBK_ERR_INVALID_ARG);

    dbk_tensor logits = gf(2, 3, 4, 1, 1), flabels = gf(1, 3, 1, 1, 1), probs = gf(2, 3, 4, 1, 1), loss = gf(1, 1, 1, 1, 1);
    dbk_op_desc xent = {.op = DBK_OP_SOFTMAX_XENT_FWD};
    xent.src[0] = logits; xent.src[1] = flabels; xent.dst[0] = probs; xent.dst[1] = loss;
    DBK_CHECK(dbk_backend_run(be, &xent) == DBK_ERR_INVALID_ARG);   /* f32 labels */

    /* A tensor that overruns its buffer. */
    dbk_tensor over = x;
    over.offset += 4;
    over.shape[0] = 3;
    dbk_op_desc relu = {.op = DBK_OP_RELU_FWD};
    relu.src[0] = over; relu.dst[0] = over;
    DBK_CHECK(dbk_backend_run(be, &relu) == DBK_ERR_INVALID_ARG);
    int rc = guards_intact();
    free_all();
    return rc;
}

/* ---------------------------------------------------------------------------------- */
/* the op list                                                                         */

static int op_list_should_derive_names_slots_and_counts(void) {
    for (int i = 0; i < DBK_OP_COUNT; i++) {
        const dbk_op_info *in = dbk_op_get_info((dbk_op)i);
        DBK_CHECK(in && in->op == (dbk_op)i && in->check && in->flops && in->bytes);
        DBK_CHECK(!strcmp(in->name, dbk_op_name((dbk_op)i)));
        dbk_op back = DBK_OP_COUNT;
        DBK_CHECK_OK(dbk_op_from_name(in->name, &back));
        DBK_CHECK(back == (dbk_op)i);
        DBK_CHECK(dbk_op_nsrc((dbk_op)i) <= DBK_OP_MAX_SRC && dbk_op_ndst((dbk_op)i) <= DBK_OP_MAX_DST);
        DBK_CHECK(dbk_op_ndst((dbk_op)i) >= 1);
        /* the generic launchers pass params as floats and bind src then dst slots */
        if (in->eltwise) DBK_CHECK_MSG(in->param_bytes % sizeof(float) == 0, "%s", in->name);
    }
    dbk_op op;
    DBK_CHECK(dbk_op_from_name("no_such_op", &op) == DBK_ERR_INVALID_ARG);
    DBK_CHECK(strstr(dbk_last_error(), "no_such_op") != NULL);
    DBK_CHECK(dbk_op_nsrc(DBK_OP_AUGMENT) == 4 && dbk_op_ndst(DBK_OP_BATCHNORM_FWD_TRAIN) == 5);
    DBK_CHECK(dbk_op_nsrc(DBK_OP_FILL) == 0 && dbk_op_get_info(DBK_OP_COUNT) == NULL);
    DBK_CHECK(!strcmp(dbk_op_name(DBK_OP_COUNT), "unknown_op"));
    DBK_CHECK(dbk_op_get_info(DBK_OP_RELU_FWD)->param_bytes == 0);
    DBK_CHECK(dbk_op_get_info(DBK_OP_SCALE)->param_bytes == sizeof(dbk_scale_params));
    DBK_CHECK(dbk_op_get_info(DBK_OP_CONV2D_FWD)->param_bytes == sizeof(dbk_conv2d_params));

    /* counts on descriptors (tensors need no buffer) */
    dbk_op_desc conv = {.op = DBK_OP_CONV2D_BWD_FILTER, .p.conv = {2, 2, 1, 1}};
    conv.src[0] = dbk_tensor_make(NULL, 0, DBK_DTYPE_F32, 4, 2, 3, 8, 8);   /* x (N,C,H,W) */
    conv.src[1] = dbk_tensor_make(NULL, 0, DBK_DTYPE_F32, 4, 2, 5, 4, 4);   /* dy (N,K,P,Q) */
    conv.dst[0] = dbk_tensor_make(NULL, 0, DBK_DTYPE_F32, 4, 5, 3, 3, 3);   /* dw (K,C,R,S) */
    const dbk_conv2d_geom g = dbk_conv2d_geom_of(&conv);
    DBK_CHECK(g.x == &conv.src[0] && g.y == &conv.src[1] && g.w == &conv.dst[0]);
    DBK_CHECK(g.N == 2 && g.C == 3 && g.H == 8 && g.W == 8 && g.K == 5 && g.R == 3 && g.S == 3 && g.P == 4 &&
              g.Q == 4 && g.stride_h == 2 && g.pad_w == 1);
    DBK_CHECK_OK(dbk_op_validate(&conv));
    DBK_CHECK(dbk_op_flops(&conv) == 2.0 * (2 * 5 * 4 * 4) * (3 * 3 * 3));
    DBK_CHECK(dbk_op_bytes(&conv) == 4.0 * (2 * 3 * 8 * 8 + 2 * 5 * 4 * 4 + 5 * 3 * 3 * 3));
    conv.op = DBK_OP_CONV2D_BWD_DATA;   /* dy (N,K,P,Q), w (K,C,R,S) -> dx (N,C,H,W) */
    conv.src[0] = dbk_tensor_make(NULL, 0, DBK_DTYPE_F32, 4, 2, 5, 4, 4);
    conv.src[1] = dbk_tensor_make(NULL, 0, DBK_DTYPE_F32, 4, 5, 3, 3, 3);
    conv.dst[0] = dbk_tensor_make(NULL, 0, DBK_DTYPE_F32, 4, 2, 3, 8, 8);
    const dbk_conv2d_geom gd = dbk_conv2d_geom_of(&conv);
    DBK_CHECK(gd.x == &conv.dst[0] && gd.y == &conv.src[0] && gd.w == &conv.src[1] && gd.C == 3 && gd.P == 4);
    DBK_CHECK_OK(dbk_op_validate(&conv));

    /* augment counts the batch it reads (one u8 per output element), not the dataset */
    dbk_op_desc aug = {.op = DBK_OP_AUGMENT};
    aug.src[0] = dbk_tensor_make(NULL, 0, DBK_DTYPE_U8, 4, 1000, 3, 32, 32);
    aug.src[1] = dbk_tensor_make(NULL, 0, DBK_DTYPE_U8, 1, 1000, 1, 1, 1);
    aug.src[3] = dbk_tensor_make(NULL, 0, DBK_DTYPE_I32, 1, 4, 1, 1, 1);
    aug.dst[0] = dbk_tensor_make(NULL, 0, DBK_DTYPE_F32, 4, 8, 3, 32, 32);
    aug.dst[1] = dbk_tensor_make(NULL, 0, DBK_DTYPE_I32, 1, 8, 1, 1, 1);
    DBK_CHECK(dbk_op_bytes(&aug) == 5.0 * (8 * 3 * 32 * 32) + 5.0 * 8);
    return 0;
}

int main(void) {
    if (dbk_backend_create(DBK_BACKEND_KIND_CPU, 0, &be) != DBK_OK) {
        fprintf(stderr, "cannot create the CPU backend: %s\n", dbk_last_error());
        return 1;
    }
    /* Each case releases its tensors; a failed DBK_CHECK returns early, so clean up after too. */
#define RUN(fn)       \
    do {              \
        DBK_RUN(fn);  \
        free_all();   \
    } while (0)
    RUN(conv2d_should_match_direct_loops_over_shape_list);
    RUN(conv2d_should_not_grow_workspace_after_prepare);
    RUN(gemm_should_match_naive_for_all_transposes_and_beta);
    RUN(batchnorm_fwd_should_match_direct_formulas);
    RUN(relu_should_clamp_negatives_and_mask_gradients_in_place);
    RUN(add_scale_fill_should_match_elementwise_formulas);
    RUN(copy_should_copy_every_dtype_exactly);
    RUN(maxpool_should_match_naive_with_first_max_ties);
    RUN(softmax_xent_should_match_direct_formula_with_and_without_smoothing);
    RUN(accuracy_should_count_first_max_and_accumulate);
    RUN(accuracy_should_count_labels_among_the_k_largest_logits);
    RUN(accuracy_should_never_count_a_row_with_a_non_finite_logit);
    RUN(sgd_should_match_hand_computation_with_and_without_nesterov);
    RUN(adamw_should_match_hand_computation_over_three_steps);
    RUN(adamw_should_take_beta1_from_the_step_values);
    RUN(muon_ops_should_match_hand_computation);
    RUN(adamw_without_gradient_should_only_decay);
    RUN(augment_choices_should_follow_the_documented_draw);
    RUN(augment_train_should_match_independent_geometry);
    RUN(augment_eval_should_only_normalise);
    RUN(augment_jitter_should_shift_and_scale_each_row);
    RUN(augment_should_be_deterministic_per_seed);
    RUN(augment_should_reject_out_of_range_rows);
    RUN(augment_alternating_flip_should_mirror_each_image_once_per_two_epochs);
    RUN(augment_alternating_flip_should_keep_the_crop_and_cutout_draws);
    RUN(augment_view_should_match_hand_computed_pixels);
    RUN(augment_view_should_equal_pad_crop_then_flip);
    RUN(augment_old_modes_should_keep_their_bytes);
    RUN(augment_should_reject_bad_flip_and_view_settings);
    RUN(backend_run_should_reject_contract_violations);
    RUN(op_list_should_derive_names_slots_and_counts);
    RUN(gelu_should_match_erf_formulas_in_double_and_run_in_place);
    RUN(bias_add_and_channel_sum_should_match_naive_loops);
    RUN(global_avgpool_should_match_plane_means_and_spread_the_gradient);
    RUN(leaky_relu_should_scale_negatives_by_the_slope);
    RUN(dropout_should_drop_a_fraction_p_and_scale_the_rest);
    RUN(lookahead_should_lerp_toward_params_then_copy_ema_into_params);
    RUN(bias_ops_should_reject_a_bias_of_the_wrong_length);
    dbk_backend_destroy(be);
    return dbk_test_finish();
}
