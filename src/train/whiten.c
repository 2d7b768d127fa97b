/*
 * whiten.c — airbench94's patch-whitening initialisation on the host (see whiten.h).
 *
 * Source: KellerJordan/cifar10-airbench legacy/airbench94.py (commit 1b8f7949):
 *     def get_patches(x, patch_shape):
 *         c, (h, w) = x.shape[1], patch_shape
 *         return x.unfold(2,h,1).unfold(3,w,1).transpose(1,3).reshape(-1,c,h,w).float()
 *     def get_whitening_parameters(patches):
 *         n,c,h,w = patches.shape
 *         patches_flat = patches.view(n, -1)
 *         est_patch_covariance = (patches_flat.T @ patches_flat) / n
 *         eigenvalues, eigenvectors = torch.linalg.eigh(est_patch_covariance, UPLO='U')
 *         return eigenvalues.flip(0).view(-1, 1, 1, 1), eigenvectors.T.reshape(c*h*w,c,h,w).flip(0)
 *     def init_whitening_conv(layer, train_set, eps=5e-4):
 *         ...
 *         eigenvectors_scaled = eigenvectors / torch.sqrt(eigenvalues + eps)
 *         layer.weight.data[:] = torch.cat((eigenvectors_scaled, -eigenvectors_scaled))
 * unfold(2,h,1).unfold(3,w,1) takes every position at stride 1; the transpose only reorders
 * patches, which a sum does not see. The flattened patch is (c, dy, dx), the same order as a
 * (K, C, R, S) filter, so eigenvector rows reshape directly into filters.
 *
 * Numerics. The source normalises in fp16 and sums products in fp32 on the GPU; we want the
 * exact value of the same formula. Normalisation is affine per channel, x = a_c*v + b_c with
 * a_c = 1/(255 std_c), b_c = -mean_c/std_c, so
 *     sum x_i x_j = a_i a_j S2_ij + a_i b_j S1_i + b_i a_j S1_j + n b_i b_j
 * with S1_i = sum v_i and S2_ij = sum v_i v_j over patches. S1 and S2 are sums of u8
 * products, exact in uint64 and independent of summation order, so the covariance is the
 * correctly rounded double of the exact value up to the few roundings of this final formula.
 * (numpy's fp32 covariance of the same patches differs by up to 2% in the smallest eigenvalues,
 * tools/check_whiten.py; the source's fp32 GPU sum has errors of that kind.) The exact sums
 * also vectorise: 5000 CIFAR images take about 70 ms on one core (this is inside airbench's
 * timed region).
 * The eigensolver is cyclic Jacobi (Golub & Van Loan, Matrix Computations 4th ed., 8.5.2-8.5.3):
 * for a 12 x 12 matrix it is small, needs no LAPACK, and gives orthonormal eigenvectors to
 * machine precision.
 */
#include "train/whiten.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "core/alloc.h"

/* ---------------------------------------------------------------------------------- */
/* symmetric eigensolver                                                              */

/* Jacobi converges quadratically: 12 x 12 matrices take 6-8 sweeps. A matrix that has not
 * converged after this many holds NaN or is pathological; report it rather than loop. */
enum { MAX_SWEEPS = 100 };

/* Applies the rotation J(p, q, c, s) to a (n x n) as a <- J^T a J and accumulates v <- v J,
 * with J the identity except J_pp = J_qq = c, J_pq = s, J_qp = -s (Golub & Van Loan 8.5.2). */
static void rotate(int n, double *a, double *v, int p, int q, double c, double s) {
    for (int k = 0; k < n; k++) {   /* columns p and q: a J */
        const double akp = a[k * n + p], akq = a[k * n + q];
        a[k * n + p] = c * akp - s * akq;
        a[k * n + q] = s * akp + c * akq;
    }
    for (int k = 0; k < n; k++) {   /* rows p and q: J^T (a J) */
        const double apk = a[p * n + k], aqk = a[q * n + k];
        a[p * n + k] = c * apk - s * aqk;
        a[q * n + k] = s * apk + c * aqk;
    }
    for (int k = 0; k < n; k++) {
        const double vkp = v[k * n + p], vkq = v[k * n + q];
        v[k * n + p] = c * vkp - s * vkq;
        v[k * n + q] = s * vkp + c * vkq;
    }
    /* The rotation was chosen to zero this pair; store the exact zero, not the rounding. */
    a[p * n + q] = 0.0;
    a[q * n + p] = 0.0;
}

static double off_diagonal_sq(int n, const double *a) {
    double off = 0.0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) off += a[i * n + j] * a[i * n + j];
    return off;
}

dbk_status dbk_whiten_eigh(int n, const double *a_in, double *eigenvalues, double *eigenvectors) {
    if (n < 1 || !a_in || !eigenvalues || !eigenvectors)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "whiten_eigh: need n >= 1 (got %d) and non-NULL arrays", n);
    for (int i = 0; i < n; i++)
        for (int j = i; j < n; j++)
            if (!isfinite(a_in[i * n + j]))
                return dbk_set_error(DBK_ERR_INVALID_ARG, "whiten_eigh: entry (%d, %d) is not finite", i, j);

    const size_t nn = (size_t)n * (size_t)n;
    double *a = dbk_malloc(nn * sizeof *a);
    if (!a) return DBK_ERR_OUT_OF_HOST_MEMORY;
    /* UPLO='U': the lower triangle is taken from the upper one, never read from a_in. */
    double frob = 0.0;
    for (int i = 0; i < n; i++)
        for (int j = i; j < n; j++) {
            a[i * n + j] = a[j * n + i] = a_in[i * n + j];
            frob += (i == j ? 1.0 : 2.0) * a_in[i * n + j] * a_in[i * n + j];
        }
    double *v = eigenvectors;
    memset(v, 0, nn * sizeof *v);
    for (int i = 0; i < n; i++) v[i * n + i] = 1.0;

    /* Off-diagonal entries only ever mix with each other under rotations, so they shrink
     * towards zero with no rounding floor; stop once they are negligible against ||a||_F. */
    const double tol = DBL_EPSILON * DBL_EPSILON * frob;
    int sweep = 0;
    for (; sweep < MAX_SWEEPS && off_diagonal_sq(n, a) > tol; sweep++) {
        for (int p = 0; p < n - 1; p++)
            for (int q = p + 1; q < n; q++) {
                const double apq = a[p * n + q];
                if (apq == 0.0) continue;
                /* tau = cot(2 theta); t = tan(theta) is the smaller root of t^2 + 2 tau t - 1 = 0
                 * (|theta| <= pi/4, the rotation that moves the matrix least). For a huge tau,
                 * tau^2 would overflow: t = 1/(2 tau) is then exact to rounding. */
                const double tau = (a[q * n + q] - a[p * n + p]) / (2.0 * apq);
                const double t = fabs(tau) > 1e150 ? 0.5 / tau
                                                   : (tau >= 0.0 ? 1.0 : -1.0) / (fabs(tau) + sqrt(1.0 + tau * tau));
                const double c = 1.0 / sqrt(1.0 + t * t);
                rotate(n, a, v, p, q, c, t * c);
            }
    }
    if (sweep == MAX_SWEEPS && off_diagonal_sq(n, a) > tol) {
        dbk_free(a);
        return dbk_set_error(DBK_ERR_INVALID_ARG, "whiten_eigh: Jacobi did not converge in %d sweeps (n = %d)",
                             MAX_SWEEPS, n);
    }
    for (int i = 0; i < n; i++) eigenvalues[i] = a[i * n + i];
    dbk_free(a);

    /* Ascending order as eigh returns it: selection sort of values with their columns (n is
     * small, and a stable order keeps equal eigenvalues in the order Jacobi found them). */
    for (int i = 0; i < n; i++) {
        int m = i;
        for (int j = i + 1; j < n; j++)
            if (eigenvalues[j] < eigenvalues[m]) m = j;
        if (m == i) continue;
        const double tmp = eigenvalues[i];
        eigenvalues[i] = eigenvalues[m];
        eigenvalues[m] = tmp;
        for (int k = 0; k < n; k++) {
            const double t = v[k * n + i];
            v[k * n + i] = v[k * n + m];
            v[k * n + m] = t;
        }
    }

    /* The sign rule of whiten.h: the largest-magnitude component (first on a tie) positive. */
    for (int j = 0; j < n; j++) {
        int m = 0;
        for (int k = 1; k < n; k++)
            if (fabs(v[k * n + j]) > fabs(v[m * n + j])) m = k;
        if (v[m * n + j] < 0.0)
            for (int k = 0; k < n; k++) v[k * n + j] = -v[k * n + j];
    }
    return DBK_OK;
}

/* ---------------------------------------------------------------------------------- */
/* patch covariance                                                                   */

static dbk_status check_config(const dbk_whiten_config *cfg) {
    if (!cfg) return dbk_set_error(DBK_ERR_INVALID_ARG, "whiten: NULL configuration");
    if (cfg->channels < 1 || cfg->channels > DBK_WHITEN_MAX_CHANNELS)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "whiten: channels = %d, expected 1..%d", cfg->channels,
                             DBK_WHITEN_MAX_CHANNELS);
    if (cfg->height < 1 || cfg->width < 1)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "whiten: image size %dx%d", cfg->height, cfg->width);
    if (cfg->patch < 1 || cfg->patch > cfg->height || cfg->patch > cfg->width)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "whiten: patch %d does not fit a %dx%d image", cfg->patch,
                             cfg->height, cfg->width);
    for (int c = 0; c < cfg->channels; c++)
        if (!(cfg->std[c] > 0.0f) || !isfinite(cfg->std[c]) || !isfinite(cfg->mean[c]))
            return dbk_set_error(DBK_ERR_INVALID_ARG, "whiten: channel %d has mean %g, std %g (std must be > 0)", c,
                                 (double)cfg->mean[c], (double)cfg->std[c]);
    if (!(cfg->eps >= 0.0f) || !isfinite(cfg->eps))
        return dbk_set_error(DBK_ERR_INVALID_ARG, "whiten: eps = %g, expected a finite value >= 0", (double)cfg->eps);
    return DBK_OK;
}

dbk_status dbk_whiten_patch_covariance(const dbk_whiten_config *cfg, const uint8_t *images, int count, double *cov) {
    DBK_TRY(check_config(cfg));
    if (count < 1 || !images || !cov)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "whiten: need count >= 1 (got %d) and non-NULL arrays", count);
    const int C = cfg->channels, H = cfg->height, W = cfg->width, k = cfg->patch, d = dbk_whiten_dim(cfg);
    const int P = H - k + 1, Q = W - k + 1;   /* patch positions per image, stride 1 */

    const int64_t npos = (int64_t)P * Q;
    uint64_t *s2 = dbk_calloc((size_t)d * (size_t)d, sizeof *s2);   /* (d, d), upper triangle used */
    uint64_t *s1 = dbk_calloc((size_t)d, sizeof *s1);               /* (d) */
    /* One image's patches as d rows of npos values: row e holds element e, (c, dy, dx) order,
     * of every patch. Sums over a row are then contiguous integer dot products of 16-bit
     * values, which the compiler vectorises as multiply-adds (pmaddwd on x86): about 3x
     * faster than 32-bit lanes, and 6x faster than a per-patch outer product. Integer sums
     * may be reordered freely; floating-point ones may not, so they would stay scalar. */
    int16_t *rows = dbk_malloc((size_t)d * (size_t)npos * sizeof *rows);
    if (!s2 || !s1 || !rows) {
        dbk_free(s2);
        dbk_free(s1);
        dbk_free(rows);
        return DBK_ERR_OUT_OF_HOST_MEMORY;
    }
    /* One image's dot products fit in int32 while npos * 255^2 < 2^31 (npos < 33025; CIFAR:
     * 961); larger images sum in 64 bits. Either way every sum is exact. */
    const bool narrow = npos < 33025;

    for (int64_t n = 0; n < count; n++) {
        const uint8_t *img = images + n * (int64_t)C * H * W;   /* (C, H, W) */
        for (int c = 0; c < C; c++)
            for (int dy = 0; dy < k; dy++)
                for (int dx = 0; dx < k; dx++) {
                    int16_t *row = rows + (size_t)((c * k + dy) * k + dx) * (size_t)npos;   /* (P, Q) */
                    for (int y = 0; y < P; y++) {
                        const uint8_t *src = img + ((int64_t)c * H + y + dy) * W + dx;
                        for (int x = 0; x < Q; x++) row[(int64_t)y * Q + x] = (int16_t)src[x];
                    }
                }
        for (int i = 0; i < d; i++) {
            const int16_t *ri = rows + (size_t)i * (size_t)npos;
            uint64_t sum = 0;
            for (int64_t t = 0; t < npos; t++) sum += (uint64_t)ri[t];
            s1[i] += sum;
            for (int j = i; j < d; j++) {
                const int16_t *rj = rows + (size_t)j * (size_t)npos;
                if (narrow) {
                    int32_t dot = 0;
                    for (int64_t t = 0; t < npos; t++) dot += (int32_t)ri[t] * (int32_t)rj[t];
                    s2[(size_t)i * d + j] += (uint64_t)dot;
                } else {
                    uint64_t dot = 0;
                    for (int64_t t = 0; t < npos; t++) dot += (uint64_t)((int32_t)ri[t] * (int32_t)rj[t]);
                    s2[(size_t)i * d + j] += dot;
                }
            }
        }
    }

    double a[DBK_WHITEN_MAX_CHANNELS], b[DBK_WHITEN_MAX_CHANNELS];
    for (int c = 0; c < C; c++) {
        a[c] = 1.0 / (255.0 * (double)cfg->std[c]);
        b[c] = -(double)cfg->mean[c] / (double)cfg->std[c];
    }
    const double npatch = (double)count * P * Q;
    const int kk = k * k;
    for (int i = 0; i < d; i++)
        for (int j = i; j < d; j++) {
            const double ai = a[i / kk], bi = b[i / kk], aj = a[j / kk], bj = b[j / kk];
            const double sum = ai * aj * (double)s2[(size_t)i * d + j] + ai * bj * (double)s1[i] +
                               bi * aj * (double)s1[j];
            cov[i * d + j] = cov[j * d + i] = sum / npatch + bi * bj;
        }
    dbk_free(s2);
    dbk_free(s1);
    dbk_free(rows);
    return DBK_OK;
}

/* ---------------------------------------------------------------------------------- */
/* filters                                                                            */

/* ascending: filter f from eigh's column f (airbench94_muon), else column d-1-f (the flip). */
static dbk_status filters_from_covariance(int d, const double *cov, float eps, bool ascending, float *weights,
                                          double *eigenvalues) {
    if (d < 1 || !cov || !weights)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "whiten: need d >= 1 (got %d), a covariance and an output", d);
    if (!(eps >= 0.0f) || !isfinite(eps))
        return dbk_set_error(DBK_ERR_INVALID_ARG, "whiten: eps = %g, expected a finite value >= 0", (double)eps);
    double *vals = dbk_malloc((size_t)d * sizeof *vals);
    double *vecs = dbk_malloc((size_t)d * (size_t)d * sizeof *vecs);
    if (!vals || !vecs) {
        dbk_free(vals);
        dbk_free(vecs);
        return DBK_ERR_OUT_OF_HOST_MEMORY;
    }
    dbk_status st = dbk_whiten_eigh(d, cov, vals, vecs);
    /* eigh is ascending; airbench94 flips to descending, so filter f uses column d-1-f */
    for (int f = 0; f < d && st == DBK_OK; f++) {
        const int j = ascending ? f : d - 1 - f;
        const double denom = vals[j] + (double)eps;
        if (!(denom > 0.0)) {
            st = dbk_set_error(DBK_ERR_INVALID_ARG,
                               "whiten: eigenvalue %g + eps %g <= 0: the matrix is not a covariance", vals[j],
                               (double)eps);
            break;
        }
        const double scale = 1.0 / sqrt(denom);
        for (int e = 0; e < d; e++) {
            weights[(size_t)f * d + e] = (float)(vecs[(size_t)e * d + j] * scale);
            /* torch.cat((scaled, -scaled)): the second half is the exact negation. */
            weights[(size_t)(f + d) * d + e] = -weights[(size_t)f * d + e];
        }
        if (eigenvalues) eigenvalues[f] = vals[j];
    }
    dbk_free(vals);
    dbk_free(vecs);
    return st;
}

dbk_status dbk_whiten_filters_from_covariance(int d, const double *cov, float eps, float *weights,
                                              double *eigenvalues) {
    return filters_from_covariance(d, cov, eps, false, weights, eigenvalues);
}

dbk_status dbk_whiten_filters(const dbk_whiten_config *cfg, const uint8_t *images, int count, float *weights,
                              double *eigenvalues) {
    DBK_TRY(check_config(cfg));
    const int d = dbk_whiten_dim(cfg);
    double *cov = dbk_malloc((size_t)d * (size_t)d * sizeof *cov);
    if (!cov) return DBK_ERR_OUT_OF_HOST_MEMORY;
    dbk_status st = dbk_whiten_patch_covariance(cfg, images, count, cov);
    if (st == DBK_OK) st = filters_from_covariance(d, cov, cfg->eps, cfg->ascending, weights, eigenvalues);
    dbk_free(cov);
    return st;
}
