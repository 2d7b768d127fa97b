/*
 * ocl_ops_eltwise.c — the elementwise ops of the OpenCL backend: one generic launcher for
 * every op declared launch EW in op_list.h (relu_fwd, relu_bwd, add, scale, fill, ...), and
 * copy. Kernels are in cl/eltwise.cl; semantics are the CPU reference's
 * (src/backends/cpu/eltwise.c).
 */
#include <string.h>

#include "backends/opencl/ocl_internal.h"

/* The kernel named after the op, with the argument order of op_list.h: (buffer, offset) per
 * src slot, then per dst slot, then the params struct's floats, then n; one work-item per
 * element of dst0. */
dbk_status dbk_ocl_record_eltwise(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const dbk_op_info *in = dbk_op_get_info(op->op);
    const int nsrc = dbk_op_nsrc(op->op), ndst = dbk_op_ndst(op->op);
    const int n = (int)dbk_tensor_numel(&op->dst[0]);
    float params[sizeof op->p / sizeof(float)];
    DBK_ASSERT(in->param_bytes % sizeof(float) == 0 && in->param_bytes <= sizeof params);
    memcpy(params, &op->p, in->param_bytes);
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, in->name, &a));
    for (int i = 0; i < nsrc; i++) dbk_ocl_arg_tensor(&a, &op->src[i]);
    for (int i = 0; i < ndst; i++) dbk_ocl_arg_tensor(&a, &op->dst[i]);
    for (size_t i = 0; i < in->param_bytes / sizeof(float); i++) dbk_ocl_arg_float(&a, params[i]);
    dbk_ocl_arg_int(&a, n);
    return dbk_ocl_range1(&a, (size_t)n);
}

dbk_status dbk_ocl_record_copy(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const dbk_tensor *s = &op->src[0], *d = &op->dst[0];
    if (s->buf == d->buf && s->offset == d->offset) return DBK_OK;   /* a copy onto itself */
    const bool bytes = dbk_dtype_size(s->dtype) == 1;
    const int n = (int)dbk_tensor_numel(s);
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, bytes ? "copy_u8" : "copy_u32", &a));
    dbk_ocl_arg_tensor(&a, s);
    dbk_ocl_arg_tensor(&a, d);
    dbk_ocl_arg_int(&a, n);
    return dbk_ocl_range1(&a, (size_t)n);
}
