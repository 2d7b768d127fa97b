/*
 * gemm.c — general matrix multiply for the CPU reference backend (the linear layer and
 * its two gradients), via CBLAS (OpenBLAS).
 *
 *   C (M,N) = alpha * op(A) op(B) + beta * C,   op(X) = X or X^T
 *
 * A is (M,K) or, with trans_a, (K,M); B is (K,N) or, with trans_b, (N,K); all row-major and
 * dense, so each leading dimension is the stored row length. Semantics as torch.addmm
 * (https://pytorch.org/docs/stable/generated/torch.addmm.html), including its rule that
 * with beta == 0 the old contents of C are ignored: NaN or Inf left in C from an earlier
 * use of the buffer must not leak into the result. BLAS promises the same ("when BETA is
 * zero, C need not be set on input"), but we clear C ourselves so that the guarantee does
 * not depend on which CBLAS is linked.
 */
#include <cblas.h>
#include <limits.h>
#include <string.h>

#include "backends/cpu/cpu_internal.h"

dbk_status dbk_cpu_gemm(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const dbk_gemm_params *p = &op->p.gemm;
    const dbk_tensor *ta = &op->src[0], *tb = &op->src[1], *tc = &op->dst[0];
    const float *a = dbk_cpu_f32(ta);   /* (M,K) or (K,M) */
    const float *b = dbk_cpu_f32(tb);   /* (K,N) or (N,K) */
    float *c = dbk_cpu_f32(tc);         /* (M,N) */
    const int64_t m = tc->shape[0], n = tc->shape[1];
    const int64_t k = p->trans_a ? ta->shape[0] : ta->shape[1];
    if (m == 0 || n == 0) return DBK_OK;
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX || ta->shape[1] > INT_MAX || tb->shape[1] > INT_MAX)
        return dbk_set_error(DBK_ERR_UNSUPPORTED, "gemm: dimensions exceed CBLAS int range");

    if (p->beta == 0.0f) memset(c, 0, (size_t)(m * n) * sizeof(float));
    if (k == 0) {
        /* op(A) op(B) is the zero matrix: C = beta * C (BLAS would do the same). */
        if (p->beta != 0.0f && p->beta != 1.0f)
            for (int64_t i = 0; i < m * n; i++) c[i] *= p->beta;
        return DBK_OK;
    }
    /* Leading dimensions are the stored row lengths (at least 1, as CBLAS requires). */
    const int lda = ta->shape[1] > 0 ? (int)ta->shape[1] : 1;
    const int ldb = tb->shape[1] > 0 ? (int)tb->shape[1] : 1;
    cblas_sgemm(CblasRowMajor, p->trans_a ? CblasTrans : CblasNoTrans, p->trans_b ? CblasTrans : CblasNoTrans,
                (int)m, (int)n, (int)k, p->alpha, a, lda, b, ldb, p->beta, c, (int)n);
    return DBK_OK;
}
