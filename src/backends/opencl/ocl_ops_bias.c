/*
 * ocl_ops_bias.c — a convolution's per-channel bias (bias_add) and its gradient (channel_sum)
 * on the OpenCL backend, lowered to cl/bias.cl. Semantics are the CPU reference's
 * (src/backends/cpu/bias.c); the kernels' file comment gives the launch geometry.
 */
#include "backends/opencl/ocl_internal.h"

dbk_status dbk_ocl_record_bias_add(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const dbk_tensor *x = &op->src[0];
    const int NC = (int)(x->shape[0] * x->shape[1]), C = (int)x->shape[1], HW = (int)(x->shape[2] * x->shape[3]);
    if (NC == 0 || HW == 0) return DBK_OK;
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "bias_add", &a));
    dbk_ocl_arg_tensor(&a, x);
    dbk_ocl_arg_tensor(&a, &op->src[1]);
    dbk_ocl_arg_tensor(&a, &op->dst[0]);
    dbk_ocl_arg_int(&a, NC);
    dbk_ocl_arg_int(&a, C);
    dbk_ocl_arg_int(&a, HW);
    return dbk_ocl_range2(&a, ((size_t)HW + 7) / 8, (size_t)NC);
}

dbk_status dbk_ocl_record_channel_sum(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const dbk_tensor *dy = &op->src[0];
    const int N = (int)dy->shape[0], C = (int)dy->shape[1], HW = (int)(dy->shape[2] * dy->shape[3]);
    if (C == 0) return DBK_OK;
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "channel_sum", &a));
    /* The tree's width: a power of two within the kernel's work-group limit (queried from the
     * device and the compiled kernel) and the local memory, one float per work-item. */
    size_t ls = dbk_ocl_wg_limit(be, a.launch->kernel, 256);
    while (ls > 1 && ls * sizeof(float) > dbk_ocl(be)->local_mem) ls /= 2;
    dbk_ocl_arg_tensor(&a, dy);
    dbk_ocl_arg_int(&a, N);
    dbk_ocl_arg_int(&a, C);
    dbk_ocl_arg_int(&a, HW);
    dbk_ocl_arg_tensor(&a, &op->dst[0]);
    dbk_ocl_arg_local(&a, ls * sizeof(float));
    const size_t global = ls * (size_t)C;
    return dbk_ocl_args_done(&a, 1, &global, &ls);
}
