/*
 * ocl_ops_dropout.c — inverted dropout, forward and backward (the same kernel on dy), on the
 * OpenCL backend, lowered to cl/dropout.cl. Semantics are the CPU reference's
 * (src/backends/cpu/dropout.c); the mask's seed and batch position are read from the step's
 * state in device memory.
 */
#include "backends/opencl/ocl_internal.h"

static dbk_status record_dropout(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const int n = (int)dbk_tensor_numel(&op->src[0]);
    if (n == 0) return DBK_OK;
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "dropout", &a));
    dbk_ocl_arg_tensor(&a, &op->src[0]);
    dbk_ocl_arg_tensor(&a, &op->src[1]);
    dbk_ocl_arg_tensor(&a, &op->dst[0]);
    dbk_ocl_arg_float(&a, op->p.dropout.p);
    dbk_ocl_arg_uint(&a, op->p.dropout.salt);
    dbk_ocl_arg_int(&a, n);
    return dbk_ocl_range1(&a, (size_t)n);
}

dbk_status dbk_ocl_record_dropout_fwd(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    return record_dropout(be, op, out);
}

dbk_status dbk_ocl_record_dropout_bwd(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    return record_dropout(be, op, out);
}
