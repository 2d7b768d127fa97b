/*
 * ocl_ops_tta.c — selective test-time augmentation on the OpenCL backend (SCATTER_ROWS,
 * CONFIDENCE_SELECT), lowered to cl/tta.cl; semantics are the CPU reference's
 * (src/backends/cpu/tta.c).
 */
#include "backends/opencl/ocl_internal.h"

dbk_status dbk_ocl_record_scatter_rows(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const int n = (int)op->src[0].shape[0], k = (int)op->src[0].shape[1], m = (int)op->dst[0].shape[0];
    if (n == 0 || k == 0) return DBK_OK;
    const bool has_idx = op->src[1].ndim != 0;
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "scatter_rows", &a));
    dbk_ocl_arg_tensor(&a, &op->src[0]);
    dbk_ocl_arg_tensor(&a, has_idx ? &op->src[1] : &op->src[2]);   /* any valid buffer when absent: never read */
    dbk_ocl_arg_int(&a, has_idx ? 1 : 0);
    dbk_ocl_arg_tensor(&a, &op->src[2]);
    dbk_ocl_arg_tensor(&a, &op->dst[0]);
    dbk_ocl_arg_int(&a, n);
    dbk_ocl_arg_int(&a, k);
    dbk_ocl_arg_int(&a, m);
    return dbk_ocl_range2(&a, (size_t)k, (size_t)n);
}

dbk_status dbk_ocl_record_confidence_select(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const int n = (int)op->src[0].shape[0], classes = (int)op->src[0].shape[1], k = (int)op->dst[0].shape[0];
    if (n == 0) return DBK_OK;
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "tta_confidence", &a));
    dbk_ocl_arg_tensor(&a, &op->src[0]);
    dbk_ocl_arg_tensor(&a, &op->dst[1]);
    dbk_ocl_arg_int(&a, n);
    dbk_ocl_arg_int(&a, classes);
    DBK_TRY(dbk_ocl_range1(&a, (size_t)n));
    DBK_TRY(dbk_ocl_kernel(be, out, "tta_rank", &a));
    dbk_ocl_arg_tensor(&a, &op->dst[1]);
    dbk_ocl_arg_tensor(&a, &op->dst[0]);
    dbk_ocl_arg_int(&a, n);
    dbk_ocl_arg_int(&a, k);
    return dbk_ocl_range1(&a, (size_t)n);
}
