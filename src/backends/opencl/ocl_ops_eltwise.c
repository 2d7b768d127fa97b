/*
 * ocl_ops_eltwise.c — the elementwise ops of the OpenCL backend: one generic launcher for
 * every op declared launch EW in op_list.h (relu_fwd, relu_bwd, add, scale, fill, ...), and
 * copy. Kernels are in cl/eltwise.cl; semantics are the CPU reference's
 * (src/backends/cpu/eltwise.c).
 */
#include <string.h>

#include "backends/opencl/ocl_internal.h"

/* The kernel named after the op, with the argument order of op_list.h: (buffer, offset) per
 * src slot, then per dst slot (an absent optional slot: dst0's buffer, offset DBK_EW_ABSENT),
 * then the params struct's 32-bit words (their bits: a kernel's float, int and uint arguments
 * are all 4 bytes), then the element counts of the "#" slots, then n; one work-item per
 * element of dst0. */
dbk_status dbk_ocl_record_eltwise(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const dbk_op_info *in = dbk_op_get_info(op->op);
    const int nsrc = dbk_op_nsrc(op->op), ndst = dbk_op_ndst(op->op);
    const int n = (int)dbk_tensor_numel(&op->dst[0]);
    cl_uint words[sizeof op->p / sizeof(cl_uint)];
    DBK_ASSERT(in->param_bytes % sizeof(cl_uint) == 0 && in->param_bytes <= sizeof words);
    memcpy(words, &op->p, in->param_bytes);
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, in->name, &a));
    for (int b = 0; b < nsrc + ndst; b++) {
        const dbk_tensor *t = b < nsrc ? &op->src[b] : &op->dst[b - nsrc];
        if (t->ndim) {
            dbk_ocl_arg_tensor(&a, t);
        } else {
            dbk_ocl_arg_mem(&a, dbk_ocl_mem(&op->dst[0]));
            dbk_ocl_arg_uint(&a, DBK_EW_ABSENT);
        }
    }
    for (size_t i = 0; i < in->param_bytes / sizeof(cl_uint); i++) dbk_ocl_arg_uint(&a, words[i]);
    for (int b = 0; b < nsrc + ndst; b++)
        if (dbk_op_slot_marks(op->op, b >= nsrc, b < nsrc ? b : b - nsrc) & DBK_SLOT_COUNTED)
            dbk_ocl_arg_int(&a, (cl_int)dbk_tensor_numel(b < nsrc ? &op->src[b] : &op->dst[b - nsrc]));
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
