/*
 * whiten.h — the patch-whitening initialisation of airbench94's first convolution, on the host.
 *
 * Source: KellerJordan/cifar10-airbench, legacy/airbench94.py (commit 1b8f7949), functions
 * get_patches, get_whitening_parameters and init_whitening_conv, called from main() as
 *     train_images = train_loader.normalize(train_loader.images[:5000])
 *     init_whitening_conv(model[0], train_images)          # eps=5e-4
 * What it computes (tools/notes/airbench94.md, "Whitening init", has the line-by-line map):
 *  1. the first `count` images of the training split in the loader's order (airbench: 5000;
 *     daybreak's train split is data_batch_1.bin first, so these are its first 5000 records),
 *     normalised per channel as the network input is: x = (v/255 - mean[c]) / std[c];
 *  2. every k x k patch at stride 1 (all (H-k+1)*(W-k+1) positions, no padding), flattened
 *     in (c, dy, dx) order: d = C*k*k values (airbench: k = 2, d = 12);
 *  3. the uncentred second-moment matrix  cov = sum_patches p p^T / n_patches  (the source
 *     does not subtract the mean);
 *  4. its eigendecomposition (torch.linalg.eigh: ascending), re-ordered by descending
 *     eigenvalue (the source's .flip(0));
 *  5. 2*d filters: filter k = v_k / sqrt(lambda_k + eps) for k < d, filter k + d = -filter k.
 * The filters are fp32 in KCRS layout (2d, C, k, k), the torch Conv2d weight layout, so
 * filter k, channel c, row dy, column dx is weights[((k*C + c)*k + dy)*k + dx].
 *
 * Eigenvector signs are not defined by eigh (LAPACK returns whichever it meets); here each
 * eigenvector's largest-magnitude component is positive (the first such one on a tie). Since
 * both v and -v become filters, a different sign only swaps channels k and k + d.
 *
 * Everything is computed in double and rounded to float at the end. No device, no global
 * state; errors are returned as values with dbk_last_error() saying why.
 */
#ifndef DBK_WHITEN_H
#define DBK_WHITEN_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"

#define DBK_WHITEN_AIRBENCH_IMAGES 5000     /* train_loader.images[:5000] */
#define DBK_WHITEN_AIRBENCH_PATCH  2        /* whiten_kernel_size */
#define DBK_WHITEN_AIRBENCH_EPS    5e-4f    /* init_whitening_conv(..., eps=5e-4) */
#define DBK_WHITEN_MAX_CHANNELS    4        /* mean/std arrays below */

typedef struct dbk_whiten_config {
    int   channels, height, width;          /* per image, u8 planar (C, H, W) */
    int   patch;                            /* square patch side k; 1 <= k <= min(H, W) */
    float mean[DBK_WHITEN_MAX_CHANNELS];    /* per channel, on the [0,1] scale */
    float std[DBK_WHITEN_MAX_CHANNELS];     /* per channel, > 0 */
    float eps;                              /* added to every eigenvalue before 1/sqrt, >= 0 */
    bool  ascending;                        /* filters in eigh's ascending order (airbench94_muon.py
                                               drops the flip); false: descending (airbench94's
                                               flip, cifar10-speedrun's svd) */
} dbk_whiten_config;

/* d = C*k*k: the patch length, the number of eigenpairs, half the number of filters. */
static inline int dbk_whiten_dim(const dbk_whiten_config *cfg) { return cfg->channels * cfg->patch * cfg->patch; }

/* Eigendecomposition of a symmetric n x n matrix by cyclic Jacobi rotations, in the shape of
 * torch.linalg.eigh(a, UPLO='U'): only the upper triangle of a (row-major, a[i*n+j] with
 * j >= i) is read; eigenvalues (n) come out ascending; eigenvectors (n x n, row-major) hold
 * the unit eigenvector of eigenvalues[j] in column j, with the sign rule above. a is not
 * modified. DBK_ERR_INVALID_ARG for n < 1, a NULL pointer or a non-finite entry;
 * DBK_ERR_OUT_OF_HOST_MEMORY. */
dbk_status dbk_whiten_eigh(int n, const double *a, double *eigenvalues, double *eigenvectors);

/* The uncentred patch second-moment matrix (d x d, row-major, symmetric) of the first count
 * images (count, C, H, W) u8, normalised as described above. DBK_ERR_INVALID_ARG for a bad
 * configuration (names the field), count < 1 or NULL pointers. */
dbk_status dbk_whiten_patch_covariance(const dbk_whiten_config *cfg, const uint8_t *images, int count, double *cov);

/* Steps 4-5 from a d x d covariance: weights (2d, d) floats as described above; eigenvalues,
 * if not NULL, receives the d eigenvalues in filter order (descending). DBK_ERR_INVALID_ARG
 * for d < 1, eps < 0, NULL weights, or an eigenvalue with lambda + eps <= 0 (the matrix is
 * not a covariance). */
dbk_status dbk_whiten_filters_from_covariance(int d, const double *cov, float eps, float *weights,
                                              double *eigenvalues);

/* The whole initialisation: dbk_whiten_patch_covariance, then
 * dbk_whiten_filters_from_covariance with cfg->eps (in ascending order with cfg->ascending). weights holds 2*d*d floats, (2d, C, k, k).
 * For airbench94 pass the training split's images, count = min(5000, split size), k = 2,
 * eps = 5e-4 and the recipe's normalisation. */
dbk_status dbk_whiten_filters(const dbk_whiten_config *cfg, const uint8_t *images, int count, float *weights,
                              double *eigenvalues);

#endif
