/*
 * test_ops_cpu_eltwise.c — batch norm, elementwise ops, pooling, softmax
 * cross-entropy and accuracy, GELU, bias, dropout against direct formulas
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

int batchnorm_fwd_should_match_direct_formulas(void) {
    int rc = batchnorm_case_check(4, 3, 5, 5);
    rc |= batchnorm_case_check(1, 2, 3, 1);
    rc |= batchnorm_case_check(2, 5, 7, 9);
    return rc;
}

/* ---------------------------------------------------------------------------------- */
/* elementwise                                                                        */

int relu_should_clamp_negatives_and_mask_gradients_in_place(void) {
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

int add_scale_fill_should_match_elementwise_formulas(void) {
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

int copy_should_copy_every_dtype_exactly(void) {
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

int maxpool_should_match_naive_with_first_max_ties(void) {
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

int softmax_xent_should_match_direct_formula_with_and_without_smoothing(void) {
    return xent_case_check(0.0f) | xent_case_check(0.1f);
}

int accuracy_should_count_first_max_and_accumulate(void) {
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
int accuracy_should_count_labels_among_the_k_largest_logits(void) {
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
int accuracy_should_never_count_a_row_with_a_non_finite_logit(void) {
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
/* GELU, bias, lookahead (airbench94's ops)                                           */

int gelu_should_match_erf_formulas_in_double_and_run_in_place(void) {
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

int bias_add_and_channel_sum_should_match_naive_loops(void) {
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
int global_avgpool_should_match_plane_means_and_spread_the_gradient(void) {
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
int leaky_relu_should_scale_negatives_by_the_slope(void) {
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
int dropout_should_drop_a_fraction_p_and_scale_the_rest(void) {
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
int bias_ops_should_reject_a_bias_of_the_wrong_length(void) {
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

