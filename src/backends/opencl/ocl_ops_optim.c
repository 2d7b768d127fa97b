/*
 * ocl_ops_optim.c — the SGD momentum update, AdamW (each with its optional sparse mask), Muon's
 * weight renormalisation and Newton-Schulz scaling (norm_scale; Muon's elementwise ops are
 * launched generically) and the
 * lookahead (EMA) sync of the OpenCL backend, lowered to cl/optim.cl. Semantics are the CPU reference's
 * (src/backends/cpu/optim.c); the learning rate, AdamW's step values and the lookahead decay are read from device
 * memory, written by the host before each run.
 */
#include "backends/opencl/ocl_internal.h"

/* The optional skip flag (src3) as (buffer, offset, present); absent: src1 in its place, never read. */
static void skip_args(dbk_ocl_args *a, const dbk_op_desc *op) {
    const bool has = op->src[3].ndim != 0;
    dbk_ocl_arg_tensor(a, has ? &op->src[3] : &op->src[1]);
    dbk_ocl_arg_int(a, has ? 1 : 0);
}

dbk_status dbk_ocl_record_sgd_momentum_update(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const int n = (int)dbk_tensor_numel(&op->src[0]);
    dbk_ocl_args a;
    const bool masked = op->src[2].ndim != 0;
    DBK_TRY(dbk_ocl_kernel(be, out, "sgd_momentum_update", &a));
    dbk_ocl_arg_tensor(&a, &op->src[0]);
    dbk_ocl_arg_tensor(&a, &op->src[1]);
    dbk_ocl_arg_tensor(&a, masked ? &op->src[2] : &op->src[0]);   /* no mask: grad stands in, unread */
    skip_args(&a, op);
    dbk_ocl_arg_tensor(&a, &op->dst[0]);
    dbk_ocl_arg_tensor(&a, &op->dst[1]);
    dbk_ocl_arg_float(&a, op->p.sgd.momentum);
    dbk_ocl_arg_float(&a, op->p.sgd.weight_decay);
    dbk_ocl_arg_int(&a, op->p.sgd.nesterov ? 1 : 0);
    dbk_ocl_arg_int(&a, dbk_tensor_numel(&op->src[1]) == 2 ? 1 : 0);
    dbk_ocl_arg_int(&a, masked);
    dbk_ocl_arg_int(&a, n);
    return dbk_ocl_range1(&a, (size_t)n);
}

dbk_status dbk_ocl_record_adamw_update(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const int n = (int)dbk_tensor_numel(&op->src[0]);
    if (n == 0) return DBK_OK;
    const dbk_adamw_params *p = &op->p.adamw;
    dbk_ocl_args a;
    const bool masked = op->src[2].ndim != 0;
    DBK_TRY(dbk_ocl_kernel(be, out, "adamw_update", &a));
    dbk_ocl_arg_tensor(&a, &op->src[0]);
    dbk_ocl_arg_tensor(&a, &op->src[1]);
    dbk_ocl_arg_tensor(&a, masked ? &op->src[2] : &op->src[0]);   /* no mask: grad stands in, unread */
    skip_args(&a, op);
    for (int i = 0; i < 3; i++) dbk_ocl_arg_tensor(&a, &op->dst[i]);
    dbk_ocl_arg_float(&a, p->beta1);
    dbk_ocl_arg_float(&a, p->beta2);
    dbk_ocl_arg_float(&a, p->eps);
    dbk_ocl_arg_float(&a, p->weight_decay);
    dbk_ocl_arg_int(&a, dbk_tensor_numel(&op->src[1]) == 4 ? 1 : 0);
    dbk_ocl_arg_int(&a, masked);
    dbk_ocl_arg_int(&a, n);
    return dbk_ocl_range1(&a, (size_t)n);
}

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

dbk_status dbk_ocl_record_lookahead(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const int n = (int)dbk_tensor_numel(&op->dst[0]);
    if (n == 0) return DBK_OK;
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "lookahead", &a));
    dbk_ocl_arg_tensor(&a, &op->src[0]);
    dbk_ocl_arg_tensor(&a, &op->dst[0]);
    dbk_ocl_arg_tensor(&a, &op->dst[1]);
    dbk_ocl_arg_int(&a, n);
    return dbk_ocl_range1(&a, (size_t)n);
}
