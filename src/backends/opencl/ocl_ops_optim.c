/*
 * ocl_ops_optim.c — Muon's weight renormalisation and Newton-Schulz scaling (norm_scale: one
 * work-group reduction) on the OpenCL backend, lowered to cl/optim.cl. The other optimizer
 * ops (SGD, AdamW, lookahead, Muon's elementwise steps) are launch EW: launched generically
 * (ocl_ops_eltwise.c). Semantics are the CPU reference's (src/backends/cpu/optim.c).
 */
#include "backends/opencl/ocl_internal.h"

/* One work-group over the whole tensor (see cl/optim.cl): a power-of-two width within the
 * kernel's limit and the local memory. */
dbk_status dbk_ocl_record_norm_scale(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const int n = (int)dbk_tensor_numel(&op->src[0]);
    if (n == 0) return DBK_OK;
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "norm_scale", &a));
    size_t ls = dbk_ocl_wg_limit(be, a.launch->kernel, 256);
    while (ls > 1 && ls * sizeof(float) > dbk_ocl(be)->local_mem) ls /= 2;
    dbk_ocl_arg_tensor(&a, &op->src[0]);
    dbk_ocl_arg_tensor(&a, &op->src[1]);
    dbk_ocl_arg_tensor(&a, &op->dst[0]);
    dbk_ocl_arg_float(&a, op->p.norm_scale.alpha);
    dbk_ocl_arg_float(&a, op->p.norm_scale.eps);
    dbk_ocl_arg_int(&a, n);
    dbk_ocl_arg_local(&a, ls * sizeof(float));
    return dbk_ocl_args_done(&a, 1, &ls, &ls);
}
