/*
 * ocl_ops_loss.c — softmax cross-entropy (forward and backward) and accuracy counting of the
 * OpenCL backend, lowered to cl/loss.cl. Semantics are the CPU reference's
 * (src/backends/cpu/loss.c). The counters live in device memory, so none of these reads
 * anything back during a step.
 */
#include "backends/opencl/ocl_internal.h"

/* One work-group for a whole batch: a power of two within the kernel's limit and local memory. */
static dbk_status single_group(dbk_ocl_args *a) {
    size_t ls = dbk_ocl_wg_limit(a->be, a->launch->kernel, 256);
    while (ls > 1 && ls * sizeof(float) > dbk_ocl(a->be)->local_mem) ls /= 2;
    dbk_ocl_arg_local(a, ls * sizeof(float));
    return dbk_ocl_args_done(a, 1, &ls, &ls);
}

dbk_status dbk_ocl_record_softmax_xent_fwd(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "softmax_xent_fwd", &a));
    dbk_ocl_arg_tensor(&a, &op->src[0]);
    dbk_ocl_arg_tensor(&a, &op->src[1]);
    dbk_ocl_arg_tensor(&a, &op->dst[0]);
    dbk_ocl_arg_tensor(&a, &op->dst[1]);
    dbk_ocl_arg_int(&a, (int)op->src[0].shape[0]);
    dbk_ocl_arg_int(&a, (int)op->src[0].shape[1]);
    dbk_ocl_arg_float(&a, op->p.xent.label_smoothing);
    return single_group(&a);
}

dbk_status dbk_ocl_record_softmax_xent_bwd(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const int n = (int)op->src[0].shape[0], k = (int)op->src[0].shape[1];
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "softmax_xent_bwd", &a));
    dbk_ocl_arg_tensor(&a, &op->src[0]);
    dbk_ocl_arg_tensor(&a, &op->src[1]);
    dbk_ocl_arg_tensor(&a, &op->dst[0]);
    dbk_ocl_arg_int(&a, n);
    dbk_ocl_arg_int(&a, k);
    dbk_ocl_arg_float(&a, op->p.xent.label_smoothing);
    dbk_ocl_arg_float(&a, op->p.xent.grad_scale);
    return dbk_ocl_range1(&a, (size_t)n * (size_t)k);
}

dbk_status dbk_ocl_record_accuracy(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "accuracy", &a));
    dbk_ocl_arg_tensor(&a, &op->src[0]);
    dbk_ocl_arg_tensor(&a, &op->src[1]);
    dbk_ocl_arg_tensor(&a, &op->dst[0]);
    dbk_ocl_arg_int(&a, (int)op->src[0].shape[0]);
    dbk_ocl_arg_int(&a, (int)op->src[0].shape[1]);
    dbk_ocl_arg_int(&a, op->p.accuracy.k > 1 ? (int)op->p.accuracy.k : 1);
    return single_group(&a);
}
