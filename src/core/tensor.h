/*
 * tensor.h — dtypes and tensor views.
 *
 * A tensor is a view: dtype, up to 4 dimensions, the buffer it lives in and a byte offset.
 * It never owns its buffer. Every tensor is dense and row-major (the last dimension is
 * contiguous); activations are NCHW. Strides are deliberately absent: no op in daybreak
 * consumes a strided view, so a stride field would be a promise no kernel keeps.
 */
#ifndef DBK_TENSOR_H
#define DBK_TENSOR_H

#include <stddef.h>
#include <stdint.h>

typedef struct dbk_buffer dbk_buffer;

typedef enum dbk_dtype {
    DBK_DTYPE_F32,
    DBK_DTYPE_I32,
    DBK_DTYPE_U8,
    DBK_DTYPE_F16,      /* IEEE 754 binary16, storage only: ops widen it to f32 (core/half.h) */
    DBK_DTYPE_COUNT,
} dbk_dtype;

#define DBK_MAX_DIMS 4

typedef struct dbk_tensor {
    dbk_dtype   dtype;
    int         ndim;                 /* 0 means "no tensor" (an unused slot) */
    int64_t     shape[DBK_MAX_DIMS];
    dbk_buffer *buf;                  /* borrowed */
    size_t      offset;               /* in bytes from the start of buf */
} dbk_tensor;

size_t      dbk_dtype_size(dbk_dtype t);
const char *dbk_dtype_name(dbk_dtype t);

int64_t dbk_tensor_numel(const dbk_tensor *t);
size_t  dbk_tensor_nbytes(const dbk_tensor *t);

/* Builds a view; unused trailing dims are ignored (pass ndim). */
dbk_tensor dbk_tensor_make(dbk_buffer *buf, size_t offset, dbk_dtype dtype, int ndim,
                           int64_t d0, int64_t d1, int64_t d2, int64_t d3);

/* Writes "f32[512,64,32,32]" into out (for logs and test reports). */
void dbk_tensor_describe(const dbk_tensor *t, char *out, size_t cap);

#endif
