/*
 * ocl_ops_pool.c — max pooling (forward and backward) of the OpenCL backend, lowered to the
 * kernels of cl/pool.cl, and the global average pool (forward and backward). Semantics are those of the CPU reference (src/backends/cpu/pool.c);
 * the kernels' file comments give the launch geometry.
 */
#include "backends/opencl/ocl_internal.h"

dbk_status dbk_ocl_record_maxpool_fwd(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const dbk_tensor *x = &op->src[0], *y = &op->dst[0];
    const dbk_pool_params *p = &op->p.pool;
    const int ncp = (int)(y->shape[0] * y->shape[1] * y->shape[2]), q = (int)y->shape[3];
    dbk_ocl_args a;
    /* 2x2 windows at stride 2 have a vectorised kernel: 8 outputs per work-item, two 16-float
     * loads per row pair. When Q is not a multiple of 8 the last group's loads run past the
     * row; that is allowed while they stay inside the plane (airbench94's 31x31 and 15x15
     * planes: the unpooled last row is there), else one output row per work-item (its 7x7). */
    const bool is2x2 = p->size_h == 2 && p->size_w == 2 && p->stride_h == 2 && p->stride_w == 2 && !p->pad_h &&
                       !p->pad_w;
    const int64_t H = x->shape[2], W = x->shape[3], P = y->shape[2];
    const int64_t last_read = (2 * P - 1) * W + 2 * 8 * ((q - 1) / 8) + 15;   /* of a plane's last group */
    const bool vec2x2 = is2x2 && q > 0 && (q % 8 == 0 || last_read < H * W), rows2x2 = is2x2 && !vec2x2;
    DBK_TRY(dbk_ocl_kernel(be, out, vec2x2 ? "maxpool_fwd_2x2" : rows2x2 ? "maxpool_fwd_2x2_rows" : "maxpool_fwd", &a));
    dbk_ocl_arg_tensor(&a, x);
    dbk_ocl_arg_tensor(&a, y);
    dbk_ocl_arg_tensor(&a, &op->dst[1]);
    dbk_ocl_arg_int(&a, ncp);
    dbk_ocl_arg_int(&a, (int)x->shape[2]);
    dbk_ocl_arg_int(&a, (int)x->shape[3]);
    dbk_ocl_arg_int(&a, (int)y->shape[2]);
    dbk_ocl_arg_int(&a, q);
    if (vec2x2) return dbk_ocl_range2(&a, ((size_t)q + 7) / 8, (size_t)ncp);
    if (rows2x2) return dbk_ocl_range1(&a, (size_t)ncp);
    dbk_ocl_arg_int(&a, p->size_h);
    dbk_ocl_arg_int(&a, p->size_w);
    dbk_ocl_arg_int(&a, p->stride_h);
    dbk_ocl_arg_int(&a, p->stride_w);
    dbk_ocl_arg_int(&a, p->pad_h);
    dbk_ocl_arg_int(&a, p->pad_w);
    return dbk_ocl_range2(&a, (size_t)q, (size_t)ncp);
}

dbk_status dbk_ocl_record_maxpool_bwd(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const dbk_tensor *dy = &op->src[0], *dx = &op->dst[0];
    const int nc = (int)(dx->shape[0] * dx->shape[1]);
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "maxpool_bwd", &a));
    dbk_ocl_arg_tensor(&a, dy);
    dbk_ocl_arg_tensor(&a, &op->src[1]);
    dbk_ocl_arg_tensor(&a, dx);
    dbk_ocl_arg_int(&a, nc);
    dbk_ocl_arg_int(&a, (int)(dx->shape[2] * dx->shape[3]));
    dbk_ocl_arg_int(&a, (int)(dy->shape[2] * dy->shape[3]));
    return dbk_ocl_range1(&a, (size_t)nc);
}

dbk_status dbk_ocl_record_global_avgpool_fwd(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const dbk_tensor *x = &op->src[0];
    const int planes = (int)(x->shape[0] * x->shape[1]), hw = (int)(x->shape[2] * x->shape[3]);
    if (planes == 0) return DBK_OK;
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "global_avgpool_fwd", &a));
    /* The tree's width: a power of two no wider than the plane (a 4x4 plane needs 16), within
     * the kernel's work-group limit and the local memory (one float per work-item). */
    size_t ls = dbk_ocl_wg_limit(be, a.launch->kernel, 256);
    while (ls > 1 && (ls * sizeof(float) > dbk_ocl(be)->local_mem || ls / 2 >= (size_t)hw)) ls /= 2;
    dbk_ocl_arg_tensor(&a, x);
    dbk_ocl_arg_tensor(&a, &op->dst[0]);
    dbk_ocl_arg_int(&a, hw);
    dbk_ocl_arg_local(&a, ls * sizeof(float));
    const size_t global = ls * (size_t)planes;
    return dbk_ocl_args_done(&a, 1, &global, &ls);
}

dbk_status dbk_ocl_record_global_avgpool_bwd(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const dbk_tensor *dx = &op->dst[0];
    const int total = (int)dbk_tensor_numel(dx), hw = (int)(dx->shape[2] * dx->shape[3]);
    if (total == 0) return DBK_OK;
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "global_avgpool_bwd", &a));
    dbk_ocl_arg_tensor(&a, &op->src[0]);
    dbk_ocl_arg_tensor(&a, dx);
    dbk_ocl_arg_int(&a, total);
    dbk_ocl_arg_int(&a, hw);
    return dbk_ocl_range1(&a, (size_t)total);
}
