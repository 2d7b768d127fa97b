/*
 * ocl_ops_optim.c — the SGD momentum update, AdamW and the lookahead (EMA) sync of the OpenCL
 * backend, lowered to cl/optim.cl. Semantics are the CPU reference's
 * (src/backends/cpu/optim.c); the learning rate, AdamW's step values and the lookahead decay are read from device
 * memory, written by the host before each run.
 */
#include "backends/opencl/ocl_internal.h"

dbk_status dbk_ocl_record_sgd_momentum_update(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const int n = (int)dbk_tensor_numel(&op->src[0]);
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "sgd_momentum_update", &a));
    dbk_ocl_arg_tensor(&a, &op->src[0]);
    dbk_ocl_arg_tensor(&a, &op->src[1]);
    dbk_ocl_arg_tensor(&a, &op->dst[0]);
    dbk_ocl_arg_tensor(&a, &op->dst[1]);
    dbk_ocl_arg_float(&a, op->p.sgd.momentum);
    dbk_ocl_arg_float(&a, op->p.sgd.weight_decay);
    dbk_ocl_arg_int(&a, op->p.sgd.nesterov ? 1 : 0);
    dbk_ocl_arg_int(&a, dbk_tensor_numel(&op->src[1]) == 2 ? 1 : 0);
    dbk_ocl_arg_int(&a, n);
    return dbk_ocl_range1(&a, (size_t)n);
}

dbk_status dbk_ocl_record_adamw_update(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const int n = (int)dbk_tensor_numel(&op->src[0]);
    if (n == 0) return DBK_OK;
    const dbk_adamw_params *p = &op->p.adamw;
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "adamw_update", &a));
    dbk_ocl_arg_tensor(&a, &op->src[0]);
    dbk_ocl_arg_tensor(&a, &op->src[1]);
    for (int i = 0; i < 3; i++) dbk_ocl_arg_tensor(&a, &op->dst[i]);
    dbk_ocl_arg_float(&a, p->beta1);
    dbk_ocl_arg_float(&a, p->beta2);
    dbk_ocl_arg_float(&a, p->eps);
    dbk_ocl_arg_float(&a, p->weight_decay);
    dbk_ocl_arg_int(&a, dbk_tensor_numel(&op->src[1]) == 4 ? 1 : 0);
    dbk_ocl_arg_int(&a, n);
    return dbk_ocl_range1(&a, (size_t)n);
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
