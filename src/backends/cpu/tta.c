/*
 * tta.c — selective test-time augmentation (cifar10-speedrun's tta) for the CPU reference
 * backend: SCATTER_ROWS writes a batch of logits into the test set's table, CONFIDENCE_SELECT
 * picks the rows of least confidence (op_list.h has both contracts).
 *
 * Confidence: the largest softmax probability of a row, 1 / S with S = sum_j exp(z_j - max z),
 * the sum taken over j in order in fp32, as the device kernels take it; a larger S is a less
 * confident row. The selection is a stable sort by (S descending, row ascending).
 */
#include <math.h>
#include <stdlib.h>

#include "backends/cpu/cpu_internal.h"
#include "core/alloc.h"

dbk_status dbk_cpu_scatter_rows(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const float *rows = dbk_cpu_f32(&op->src[0]);                                  /* (N, K) */
    const int32_t *indices = op->src[1].ndim ? dbk_cpu_i32(&op->src[1]) : NULL;    /* (L) */
    const int32_t first = dbk_cpu_i32(&op->src[2])[0];                             /* state (4) */
    float *table = dbk_cpu_f32(&op->dst[0]);                                       /* (M, K) */
    const int64_t n = op->src[0].shape[0], k = op->src[0].shape[1], m = op->dst[0].shape[0];
    const int64_t l = indices ? op->src[1].shape[0] : m;
    for (int64_t i = 0; i < n; i++) { /* every row checked before anything is written */
        const int64_t at = first + i;
        const int64_t j = at < 0 || at >= l ? -1 : indices ? indices[at] : at;
        if (j < 0 || j >= m)
            return dbk_set_error(DBK_ERR_INVALID_ARG, "scatter_rows: row %lld goes to %lld, outside the table's %lld rows",
                                 (long long)i, (long long)j, (long long)m);
    }
    for (int64_t i = 0; i < n; i++) {
        const int64_t j = indices ? indices[first + i] : first + i;
        for (int64_t c = 0; c < k; c++) table[j * k + c] = rows[i * k + c];
    }
    return DBK_OK;
}

/* S of one row: the sum of exp(z_j - max z) in order. */
static float row_sum(const float *z, int64_t k) {
    float m = z[0];
    for (int64_t j = 1; j < k; j++) m = z[j] > m ? z[j] : m;
    float s = 0.0f;
    for (int64_t j = 0; j < k; j++) s += expf(z[j] - m);
    return s;
}

typedef struct ranked {
    float   s;
    int32_t row;
} ranked;

static int by_confidence(const void *a, const void *b) {
    const ranked *x = a, *y = b;
    if (x->s != y->s) return x->s > y->s ? -1 : 1;   /* larger S: less confident, first */
    return (x->row > y->row) - (x->row < y->row);
}

dbk_status dbk_cpu_confidence_select(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const float *z = dbk_cpu_f32(&op->src[0]);     /* (N, K) */
    int32_t *out = dbk_cpu_i32(&op->dst[0]);       /* (k) */
    float *work = dbk_cpu_f32(&op->dst[1]);        /* (N) */
    const int64_t n = op->src[0].shape[0], classes = op->src[0].shape[1], k = op->dst[0].shape[0];
    ranked *order = dbk_malloc((size_t)(n ? n : 1) * sizeof *order);
    if (!order) return DBK_ERR_OUT_OF_HOST_MEMORY;
    for (int64_t i = 0; i < n; i++) {
        work[i] = row_sum(z + i * classes, classes);
        order[i] = (ranked){work[i], (int32_t)i};
    }
    qsort(order, (size_t)n, sizeof *order, by_confidence);
    for (int64_t i = 0; i < k; i++) out[i] = order[i].row;
    dbk_free(order);
    return DBK_OK;
}
