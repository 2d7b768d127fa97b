/*
 * test_ops_cpu_conv.c — convolution and GEMM against naive loops in double
 * (part of the test_ops_cpu executable: test_ops_cpu.c has the tolerances and main).
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
#include "test_ops_cpu.h"
#include "test_util.h"


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

int conv2d_should_match_direct_loops_over_shape_list(void) {
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

int conv2d_should_not_grow_workspace_after_prepare(void) {
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

int gemm_should_match_naive_for_all_transposes_and_beta(void) {
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

