/*
 * test_whiten.c — the airbench94 whitening initialisation (train/whiten.h).
 *
 *  - the Jacobi eigensolver on seeded random symmetric matrices (A v = lambda v, V^T V = I,
 *    ascending order, the sign rule), on repeated eigenvalues, on UPLO='U' (the lower
 *    triangle is never read) and on bad input;
 *  - the patch covariance against a naive double loop over float-normalised pixels (which
 *    checks the patch positions, the (c, dy, dx) order and the exact-integer expansion);
 *  - on the real CIFAR-10 training split (first 5000 images, as airbench takes them): the
 *    12 positive filters applied to every patch give outputs whose second-moment matrix is
 *    diag(lambda / (lambda + eps)), nearly the identity, and filter k + 12 == -filter k.
 *
 * The data cases need $DAYBREAK_DATA; without it they are skipped (exit 77), or fail when
 * CI=true. `test_whiten --dump FILE` also writes the filters and eigenvalues as text for
 * tools/check_whiten.py, which recomputes them with numpy following the source.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/rng.h"
#include "data/cifar10.h"
#include "test_util.h"
#include "train/whiten.h"

/* airbench94.py: CIFAR_MEAN, CIFAR_STD */
static const dbk_whiten_config airbench_cfg = {
    .channels = 3, .height = 32, .width = 32, .patch = DBK_WHITEN_AIRBENCH_PATCH,
    .mean = {0.4914f, 0.4822f, 0.4465f}, .std = {0.2470f, 0.2435f, 0.2616f},
    .eps = DBK_WHITEN_AIRBENCH_EPS,
};

/* ---------------------------------------------------------------------------------- */
/* eigensolver                                                                        */

/* Checks (vals, vecs) is an eigendecomposition of the symmetric a: residual, orthonormality,
 * ascending order and the sign rule, all to 1e-9 relative to the matrix scale. */
static int check_eigh(int n, const double *a, const double *vals, const double *vecs) {
    double scale = 0.0;
    for (int i = 0; i < n * n; i++) scale = fmax(scale, fabs(a[i]));
    scale = fmax(scale, 1.0);
    for (int j = 0; j < n; j++) {
        for (int i = 0; i < n; i++) {
            double av = 0.0;
            for (int k = 0; k < n; k++) av += a[i * n + k] * vecs[k * n + j];
            DBK_CHECK_MSG(fabs(av - vals[j] * vecs[i * n + j]) <= 1e-9 * scale,
                          "n=%d: (A v - lambda v)[%d] of pair %d is %g", n, i, j, av - vals[j] * vecs[i * n + j]);
        }
        for (int l = 0; l < n; l++) {
            double dot = 0.0;
            for (int k = 0; k < n; k++) dot += vecs[k * n + j] * vecs[k * n + l];
            DBK_CHECK_MSG(fabs(dot - (j == l ? 1.0 : 0.0)) <= 1e-9, "n=%d: v%d . v%d = %.17g", n, j, l, dot);
        }
        if (j > 0) DBK_CHECK_MSG(vals[j - 1] <= vals[j], "n=%d: eigenvalues %d, %d not ascending", n, j - 1, j);
        int m = 0;
        for (int k = 1; k < n; k++)
            if (fabs(vecs[k * n + j]) > fabs(vecs[m * n + j])) m = k;
        DBK_CHECK_MSG(vecs[m * n + j] > 0.0, "n=%d: eigenvector %d breaks the sign rule", n, j);
    }
    return 0;
}

static int eigh_should_decompose_random_symmetric_matrices(void) {
    static const int sizes[] = {1, 2, 3, 5, 12, 24, 40};
    dbk_rng rng;
    dbk_rng_init(&rng, 20240601);
    for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
        for (int rep = 0; rep < 5; rep++) {
            const int n = sizes[t];
            double *a = malloc(sizeof(double) * n * n), *vals = malloc(sizeof(double) * n),
                   *vecs = malloc(sizeof(double) * n * n);
            DBK_CHECK(a && vals && vecs);
            /* Entries in [-1, 1), some matrices scaled up to test the relative tolerance. */
            const double mag = rep == 4 ? 1e3 : 1.0;
            for (int i = 0; i < n; i++)
                for (int j = i; j < n; j++)
                    a[i * n + j] = a[j * n + i] = mag * (2.0 * (double)dbk_rng_uniform(&rng) - 1.0);
            DBK_CHECK_OK(dbk_whiten_eigh(n, a, vals, vecs));
            int rc = check_eigh(n, a, vals, vecs);
            free(a);
            free(vals);
            free(vecs);
            if (rc) return rc;
        }
    }
    return 0;
}

static int eigh_should_handle_repeated_eigenvalues_and_diagonal_input(void) {
    /* Q diag(1, 1, 2, 2, 2) Q^T with Q a product of rotations: an eigenspace of dimension 3. */
    enum { N = 5 };
    double a[N * N] = {0}, q[N * N] = {0}, vals[N], vecs[N * N];
    const double lam[N] = {2, 1, 2, 1, 2};
    for (int i = 0; i < N; i++) q[i * N + i] = 1.0;
    for (int p = 0; p < N - 1; p++) {
        const double c = cos(0.3 + p), s = sin(0.3 + p);
        for (int k = 0; k < N; k++) {
            const double x = q[k * N + p], y = q[k * N + p + 1];
            q[k * N + p] = c * x - s * y;
            q[k * N + p + 1] = s * x + c * y;
        }
    }
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            for (int k = 0; k < N; k++) a[i * N + j] += q[i * N + k] * lam[k] * q[j * N + k];
    DBK_CHECK_OK(dbk_whiten_eigh(N, a, vals, vecs));
    if (check_eigh(N, a, vals, vecs)) return 1;
    DBK_CHECK(fabs(vals[0] - 1) < 1e-12 && fabs(vals[1] - 1) < 1e-12 && fabs(vals[4] - 2) < 1e-12);

    /* A diagonal matrix needs no rotation: values sorted, vectors the (signed) unit vectors. */
    const double diag[9] = {3, 0, 0, 0, -1, 0, 0, 0, 2};
    double v3[3], e3[9];
    DBK_CHECK_OK(dbk_whiten_eigh(3, diag, v3, e3));
    DBK_CHECK(v3[0] == -1 && v3[1] == 2 && v3[2] == 3);
    DBK_CHECK(e3[1 * 3 + 0] == 1 && e3[2 * 3 + 1] == 1 && e3[0 * 3 + 2] == 1);
    return 0;
}

static int eigh_should_read_only_the_upper_triangle_and_reject_bad_input(void) {
    /* torch.linalg.eigh(UPLO='U'): garbage (even NaN) below the diagonal is ignored. */
    const double upper[4] = {2, 1, NAN, 2};
    double vals[2], vecs[4];
    DBK_CHECK_OK(dbk_whiten_eigh(2, upper, vals, vecs));
    DBK_CHECK(fabs(vals[0] - 1) < 1e-15 && fabs(vals[1] - 3) < 1e-15);
    DBK_CHECK(fabs(vecs[0 * 2 + 1] - sqrt(0.5)) < 1e-15 && fabs(vecs[1 * 2 + 1] - sqrt(0.5)) < 1e-15);

    const double bad[4] = {2, INFINITY, 1, 2};
    DBK_CHECK(dbk_whiten_eigh(2, bad, vals, vecs) == DBK_ERR_INVALID_ARG);
    DBK_CHECK(strstr(dbk_last_error(), "(0, 1)"));
    DBK_CHECK(dbk_whiten_eigh(0, upper, vals, vecs) == DBK_ERR_INVALID_ARG);
    DBK_CHECK(dbk_whiten_eigh(2, NULL, vals, vecs) == DBK_ERR_INVALID_ARG);
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* covariance and filters on synthetic images                                         */

/* The covariance the source computes, done the obvious way: normalise every pixel in float as
 * the augment op does, form every stride-1 patch, sum outer products in double. */
static void naive_covariance(const dbk_whiten_config *cfg, const uint8_t *images, int count, double *cov) {
    const int C = cfg->channels, H = cfg->height, W = cfg->width, k = cfg->patch, d = dbk_whiten_dim(cfg);
    double p[64];
    memset(cov, 0, sizeof(double) * d * d);
    long n = 0;
    for (int img = 0; img < count; img++)
        for (int y = 0; y + k <= H; y++)
            for (int x = 0; x + k <= W; x++, n++) {
                for (int c = 0; c < C; c++)
                    for (int dy = 0; dy < k; dy++)
                        for (int dx = 0; dx < k; dx++) {
                            const float v = (float)images[((img * C + c) * H + y + dy) * W + x + dx];
                            p[(c * k + dy) * k + dx] = (double)((v / 255.0f - cfg->mean[c]) / cfg->std[c]);
                        }
                for (int i = 0; i < d; i++)
                    for (int j = 0; j < d; j++) cov[i * d + j] += p[i] * p[j];
            }
    for (int i = 0; i < d * d; i++) cov[i] /= (double)n;
}

static int covariance_should_match_a_naive_loop(void) {
    /* Odd sizes and a 3x3 patch catch a swapped H/W or a wrong patch order. */
    const dbk_whiten_config cfg = {.channels = 2, .height = 7, .width = 9, .patch = 3,
                                   .mean = {0.3f, 0.6f}, .std = {0.2f, 0.4f}, .eps = 1e-3f};
    enum { COUNT = 6 };
    const int d = dbk_whiten_dim(&cfg);
    uint8_t images[COUNT * 2 * 7 * 9];
    dbk_rng rng;
    dbk_rng_init(&rng, 7);
    for (size_t i = 0; i < sizeof images; i++) images[i] = (uint8_t)dbk_rng_below(&rng, 256);
    double got[18 * 18], want[18 * 18];
    DBK_CHECK(d == 18);
    DBK_CHECK_OK(dbk_whiten_patch_covariance(&cfg, images, COUNT, got));
    naive_covariance(&cfg, images, COUNT, want);
    for (int i = 0; i < d * d; i++)
        DBK_CHECK_MSG(fabs(got[i] - want[i]) <= 1e-6 * fmax(1.0, fabs(want[i])), "entry %d: %.12g vs %.12g", i,
                      got[i], want[i]);
    return 0;
}

static int covariance_should_stay_exact_for_large_images(void) {
    /* 200 x 200 with 2 x 2 patches: 39,601 positions take the 64-bit per-image path, and an
     * all-255 image would overflow a 32-bit sum there (39,601 * 255^2 > 2^31). */
    const dbk_whiten_config cfg = {.channels = 1, .height = 200, .width = 200, .patch = 2,
                                   .mean = {0.5f}, .std = {0.25f}, .eps = 1e-3f};
    enum { COUNT = 2, PIXELS = 200 * 200 };
    uint8_t *images = malloc(COUNT * PIXELS);
    DBK_CHECK(images);
    dbk_rng rng;
    dbk_rng_init(&rng, 11);
    for (int i = 0; i < PIXELS; i++) images[i] = 255;
    for (int i = PIXELS; i < COUNT * PIXELS; i++) images[i] = (uint8_t)dbk_rng_below(&rng, 256);
    double got[16], want[16];
    dbk_status st = dbk_whiten_patch_covariance(&cfg, images, COUNT, got);
    naive_covariance(&cfg, images, COUNT, want);
    free(images);
    DBK_CHECK_OK(st);
    for (int i = 0; i < 16; i++)
        DBK_CHECK_MSG(fabs(got[i] - want[i]) <= 1e-6 * fmax(1.0, fabs(want[i])), "entry %d: %.12g vs %.12g", i,
                      got[i], want[i]);
    return 0;
}

static int filters_should_reject_bad_configurations(void) {
    const long live = dbk_alloc_live();
    uint8_t img[3 * 32 * 32] = {0};
    float w[24 * 12];
    dbk_whiten_config cfg = airbench_cfg;
    cfg.patch = 33;
    DBK_CHECK(dbk_whiten_filters(&cfg, img, 1, w, NULL) == DBK_ERR_INVALID_ARG);
    DBK_CHECK(strstr(dbk_last_error(), "patch 33"));
    cfg = airbench_cfg;
    cfg.std[1] = 0.0f;
    DBK_CHECK(dbk_whiten_filters(&cfg, img, 1, w, NULL) == DBK_ERR_INVALID_ARG);
    DBK_CHECK(strstr(dbk_last_error(), "channel 1"));
    cfg = airbench_cfg;
    cfg.eps = -1.0f;
    DBK_CHECK(dbk_whiten_filters(&cfg, img, 1, w, NULL) == DBK_ERR_INVALID_ARG);
    DBK_CHECK(dbk_whiten_filters(&airbench_cfg, img, 0, w, NULL) == DBK_ERR_INVALID_ARG);
    DBK_CHECK(dbk_whiten_filters(&airbench_cfg, NULL, 1, w, NULL) == DBK_ERR_INVALID_ARG);
    /* A constant image has a rank-1 covariance: eleven zero eigenvalues; eps keeps it finite. */
    double lam[12];
    DBK_CHECK_OK(dbk_whiten_filters(&airbench_cfg, img, 1, w, lam));
    for (int i = 0; i < 24 * 12; i++) DBK_CHECK(isfinite(w[i]));
    DBK_CHECK(lam[0] > 1.0 && fabs(lam[11]) < 1e-12);
    /* With eps = 0 a zero eigenvalue must be refused, not divided by. */
    const double singular[4] = {1, 0, 0, 0};
    float w2[4 * 2];
    DBK_CHECK(dbk_whiten_filters_from_covariance(2, singular, 0.0f, w2, NULL) == DBK_ERR_INVALID_ARG);
    DBK_CHECK(strstr(dbk_last_error(), "not a covariance"));
    DBK_CHECK_OK(dbk_whiten_filters_from_covariance(2, singular, 0.25f, w2, NULL));
    DBK_CHECK(w2[0] == (float)(1.0 / sqrt(1.25)) && w2[1] == 0.0f && w2[2] == 0.0f && w2[3] == 2.0f);
    /* Every path, failing ones included, frees what it allocated. */
    DBK_CHECK_MSG(dbk_alloc_live() == live, "%ld allocations leaked", dbk_alloc_live() - live);
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* the real data                                                                      */

static dbk_dataset train_set;
static const char *dump_path;

static int filters_should_whiten_the_first_5000_cifar10_training_images(void) {
    const int count = train_set.count < DBK_WHITEN_AIRBENCH_IMAGES ? train_set.count : DBK_WHITEN_AIRBENCH_IMAGES;
    DBK_CHECK(count == DBK_WHITEN_AIRBENCH_IMAGES);
    float w[24 * 12];
    double lam[12];
    DBK_CHECK_OK(dbk_whiten_filters(&airbench_cfg, train_set.images, count, w, lam));

    /* (c) the second half is the exact negation of the first. */
    for (int k = 0; k < 12; k++)
        for (int e = 0; e < 12; e++)
            DBK_CHECK_MSG(w[(k + 12) * 12 + e] == -w[k * 12 + e], "filter %d element %d", k + 12, e);
    for (int k = 0; k < 12; k++) {
        DBK_CHECK_MSG(lam[k] > 0.0 && (k == 0 || lam[k] <= lam[k - 1]), "eigenvalue %d = %g", k, lam[k]);
        printf("  lambda[%2d] = %.6e   lambda/(lambda+eps) = %.6f\n", k, lam[k],
               lam[k] / (lam[k] + (double)airbench_cfg.eps));
    }

    /* (b) the 12 positive filters applied to every patch, by a path independent of the library
     * (float normalisation, direct patch gather): E[y y^T] = V^T C V / sqrt(..) sqrt(..)
     * = diag(lambda / (lambda + eps)). The float filters limit the agreement to about 1e-6. */
    double m[12 * 12] = {0};
    long n = 0;
    for (int img = 0; img < count; img++) {
        const uint8_t *im = train_set.images + (size_t)img * 3 * 32 * 32;
        for (int y = 0; y < 31; y++)
            for (int x = 0; x < 31; x++, n++) {
                double p[12], out[12];
                for (int c = 0; c < 3; c++)
                    for (int dy = 0; dy < 2; dy++)
                        for (int dx = 0; dx < 2; dx++) {
                            const float v = (float)im[(c * 32 + y + dy) * 32 + x + dx];
                            p[(c * 2 + dy) * 2 + dx] =
                                (double)((v / 255.0f - airbench_cfg.mean[c]) / airbench_cfg.std[c]);
                        }
                for (int k = 0; k < 12; k++) {
                    out[k] = 0.0;
                    for (int e = 0; e < 12; e++) out[k] += (double)w[k * 12 + e] * p[e];
                }
                for (int i = 0; i < 12; i++)
                    for (int j = 0; j < 12; j++) m[i * 12 + j] += out[i] * out[j];
            }
    }
    DBK_CHECK(n == 5000L * 31 * 31);
    double worst = 0.0;
    for (int i = 0; i < 12; i++)
        for (int j = 0; j < 12; j++) {
            const double want = i == j ? lam[i] / (lam[i] + (double)airbench_cfg.eps) : 0.0;
            const double err = fabs(m[i * 12 + j] / (double)n - want);
            worst = fmax(worst, err);
            DBK_CHECK_MSG(err <= 1e-5, "whitened second moment (%d, %d) = %.9f, expected %.9f", i, j,
                          m[i * 12 + j] / (double)n, want);
        }
    printf("  whitened patches: max |E[y y^T] - diag(lambda/(lambda+eps))| = %.3g\n", worst);

    if (dump_path) {
        FILE *f = fopen(dump_path, "w");
        DBK_CHECK_MSG(f, "cannot write %s", dump_path);
        fprintf(f, "# test_whiten dump: 12 eigenvalues (descending), then 24 filters of 12 (KCRS)\n");
        for (int k = 0; k < 12; k++) fprintf(f, "%.17g\n", lam[k]);
        for (int i = 0; i < 24 * 12; i++) fprintf(f, "%.9g\n", (double)w[i]);
        DBK_CHECK(fclose(f) == 0);
        printf("  wrote %s\n", dump_path);
    }
    return 0;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--dump") && i + 1 < argc) dump_path = argv[++i];
        else {
            printf("usage: test_whiten [--dump FILE]\n");
            return 2;
        }
    }
    DBK_RUN(eigh_should_decompose_random_symmetric_matrices);
    DBK_RUN(eigh_should_handle_repeated_eigenvalues_and_diagonal_input);
    DBK_RUN(eigh_should_read_only_the_upper_triangle_and_reject_bad_input);
    DBK_RUN(covariance_should_match_a_naive_loop);
    DBK_RUN(covariance_should_stay_exact_for_large_images);
    DBK_RUN(filters_should_reject_bad_configurations);

    const char *dir = dbk_test_cifar_dir();
    if (!dir) {
        const int rc = dbk_test_finish();
        return rc ? rc : dbk_test_skip_or_fail_in_ci(DBK_TEST_NO_CIFAR);
    }
    if (dbk_cifar10_load(dir, DBK_CIFAR10_TRAIN, DBK_WHITEN_AIRBENCH_IMAGES, &train_set) != DBK_OK) {
        printf("cannot load CIFAR-10: %s\n", dbk_last_error());
        return 1;
    }
    DBK_RUN(filters_should_whiten_the_first_5000_cifar10_training_images);
    dbk_dataset_deinit(&train_set);
    return dbk_test_finish();
}
