/* tensor.c — tensor view helpers (see tensor.h). */
#include "core/tensor.h"

#include <stdio.h>

#include "core/status.h"

size_t dbk_dtype_size(dbk_dtype t) {
    switch (t) {
    case DBK_DTYPE_F32: return 4;
    case DBK_DTYPE_I32: return 4;
    case DBK_DTYPE_U8:  return 1;
    case DBK_DTYPE_F16: return 2;
    case DBK_DTYPE_COUNT: break;
    }
    DBK_ASSERT(!"unknown dtype");
    return 0;
}

const char *dbk_dtype_name(dbk_dtype t) {
    switch (t) {
    case DBK_DTYPE_F32: return "f32";
    case DBK_DTYPE_I32: return "i32";
    case DBK_DTYPE_U8:  return "u8";
    case DBK_DTYPE_F16: return "f16";
    case DBK_DTYPE_COUNT: break;
    }
    return "?";
}

int64_t dbk_tensor_numel(const dbk_tensor *t) {
    if (t->ndim == 0) return 0;
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

size_t dbk_tensor_nbytes(const dbk_tensor *t) {
    return (size_t)dbk_tensor_numel(t) * dbk_dtype_size(t->dtype);
}

dbk_tensor dbk_tensor_make(dbk_buffer *buf, size_t offset, dbk_dtype dtype, int ndim,
                           int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    DBK_ASSERT(ndim >= 1 && ndim <= DBK_MAX_DIMS);
    dbk_tensor t = {.dtype = dtype, .ndim = ndim, .buf = buf, .offset = offset};
    int64_t d[DBK_MAX_DIMS] = {d0, d1, d2, d3};
    for (int i = 0; i < ndim; i++) {
        DBK_ASSERT(d[i] >= 0);
        t.shape[i] = d[i];
    }
    return t;
}

void dbk_tensor_describe(const dbk_tensor *t, char *out, size_t cap) {
    int n = snprintf(out, cap, "%s[", dbk_dtype_name(t->dtype));
    for (int i = 0; i < t->ndim && n > 0 && (size_t)n < cap; i++)
        n += snprintf(out + n, cap - (size_t)n, i ? ",%lld" : "%lld", (long long)t->shape[i]);
    if (n > 0 && (size_t)n < cap) snprintf(out + n, cap - (size_t)n, "]");
}
