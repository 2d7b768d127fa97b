/*
 * test_ops_cpu_util.c — guarded tensors and the comparisons every case uses
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
dbk_tensor gt(dbk_dtype dt, int ndim, int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
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

dbk_tensor gf(int ndim, int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    return gt(DBK_DTYPE_F32, ndim, d0, d1, d2, d3);
}

void free_all(void) {
    for (int i = 0; i < nbufs; i++) dbk_buffer_destroy(bufs[i].buf);
    nbufs = 0;
}

/* Every guard byte of every live tensor still holds the pattern. */
int guards_intact(void) {
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

float *to_float(const double *d, int64_t n) {
    float *f = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    for (int64_t i = 0; i < n; i++) f[i] = (float)d[i];
    return f;
}

/* NMSE and max abs difference of got against ref; prints both on failure. */
int close_nmse(const char *what, const float *ref, const float *got, int64_t n, double tol) {
    const double nmse = dbk_test_nmse(ref, got, (size_t)n), mad = dbk_test_max_abs_diff(ref, got, (size_t)n);
    DBK_CHECK_MSG(nmse <= tol && !isnan(mad), "%s: NMSE %.3g (tolerance %.1g), max abs diff %.3g over %lld values",
                  what, nmse, tol, mad, (long long)n);
    return 0;
}

int close_abs(const char *what, const float *ref, const float *got, int64_t n, double tol) {
    const double mad = dbk_test_max_abs_diff(ref, got, (size_t)n);
    DBK_CHECK_MSG(mad <= tol, "%s: max abs diff %.3g (tolerance %.1g), NMSE %.3g over %lld values", what, mad, tol,
                  dbk_test_nmse(ref, got, (size_t)n), (long long)n);
    return 0;
}

int equal_bytes(const char *what, const void *ref, const void *got, size_t n) {
    DBK_CHECK_MSG(memcmp(ref, got, n) == 0, "%s: values differ", what);
    return 0;
}

