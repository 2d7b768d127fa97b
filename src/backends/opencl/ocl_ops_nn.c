/*
 * ocl_ops_nn.c — batch norm and max pooling of the OpenCL backend, lowered to the kernels
 * of cl/bn.cl and cl/pool.cl. Semantics are those of the CPU reference
 * (src/backends/cpu/{bn,pool}.c); the kernels' file comments give the launch geometry.
 */
#include "backends/opencl/ocl_internal.h"

/* Shorthand: a tensor as (buffer, element offset) kernel arguments. */
static void arg_t(dbk_ocl_args *a, const dbk_tensor *t) {
    dbk_ocl_arg_mem(a, dbk_ocl_mem(t));
    dbk_ocl_arg_uint(a, dbk_ocl_off(t));
}

/* ---------------------------------------------------------------------------------- */
/* batch norm                                                                          */

/* Work-group size of the per-channel reductions: a power of two within the kernel's limit
 * and the local memory (one float per work-item). */
static size_t reduce_wg(dbk_backend *be, cl_kernel k) {
    size_t ls = dbk_ocl_wg_limit(be, k, 256);
    while (ls > 1 && ls * sizeof(float) > dbk_ocl(be)->local_mem) ls /= 2;
    return ls;
}

static dbk_status bn_apply(dbk_backend *be, dbk_ocl_launches *out, const dbk_tensor *x, const dbk_tensor *y,
                           const dbk_tensor *s0, const dbk_tensor *s1, const dbk_tensor *gamma, const dbk_tensor *beta,
                           float eps, int infer) {
    const int n = (int)x->shape[0], c = (int)x->shape[1], hw = (int)(x->shape[2] * x->shape[3]);
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "bn_apply", &a));
    arg_t(&a, x);
    arg_t(&a, y);
    dbk_ocl_arg_int(&a, n * c);
    dbk_ocl_arg_int(&a, c);
    dbk_ocl_arg_int(&a, hw);
    arg_t(&a, s0);
    arg_t(&a, s1);
    arg_t(&a, gamma);
    arg_t(&a, beta);
    dbk_ocl_arg_float(&a, eps);
    dbk_ocl_arg_int(&a, infer);
    return dbk_ocl_range2(&a, ((size_t)hw + 7) / 8, (size_t)(n * c));
}

dbk_status dbk_ocl_record_batchnorm_fwd_train(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const dbk_tensor *x = &op->src[0];
    const int n = (int)x->shape[0], c = (int)x->shape[1], hw = (int)(x->shape[2] * x->shape[3]);
    if (n * hw == 0) return DBK_OK;   /* no values: leave everything, as the CPU does */
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "bn_stats", &a));
    const size_t ls = reduce_wg(be, a.launch->kernel);
    arg_t(&a, x);
    dbk_ocl_arg_int(&a, n);
    dbk_ocl_arg_int(&a, c);
    dbk_ocl_arg_int(&a, hw);
    dbk_ocl_arg_float(&a, op->p.bn.eps);
    dbk_ocl_arg_float(&a, op->p.bn.momentum);
    for (int i = 1; i <= 4; i++) arg_t(&a, &op->dst[i]);
    dbk_ocl_arg_local(&a, ls * sizeof(float));
    const size_t global = ls * (size_t)c;
    DBK_TRY(dbk_ocl_args_done(&a, 1, &global, &ls));
    return bn_apply(be, out, x, &op->dst[0], &op->dst[1], &op->dst[2], &op->src[1], &op->src[2], op->p.bn.eps, 0);
}

dbk_status dbk_ocl_record_batchnorm_fwd_infer(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    return bn_apply(be, out, &op->src[0], &op->dst[0], &op->src[3], &op->src[4], &op->src[1], &op->src[2], op->p.bn.eps,
                    1);
}

dbk_status dbk_ocl_record_batchnorm_bwd(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const dbk_tensor *x = &op->src[0];
    const int n = (int)x->shape[0], c = (int)x->shape[1], hw = (int)(x->shape[2] * x->shape[3]);
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "bn_bwd_reduce", &a));
    const size_t ls = reduce_wg(be, a.launch->kernel);
    arg_t(&a, x);
    arg_t(&a, &op->src[1]);
    dbk_ocl_arg_int(&a, n);
    dbk_ocl_arg_int(&a, c);
    dbk_ocl_arg_int(&a, hw);
    arg_t(&a, &op->src[3]);
    arg_t(&a, &op->src[4]);
    arg_t(&a, &op->dst[1]);
    arg_t(&a, &op->dst[2]);
    dbk_ocl_arg_local(&a, ls * sizeof(float));
    const size_t global = ls * (size_t)c;
    DBK_TRY(dbk_ocl_args_done(&a, 1, &global, &ls));
    if (n * hw == 0) return DBK_OK;

    DBK_TRY(dbk_ocl_kernel(be, out, "bn_bwd_data", &a));
    arg_t(&a, x);
    arg_t(&a, &op->src[1]);
    arg_t(&a, &op->dst[0]);
    dbk_ocl_arg_int(&a, n * c);
    dbk_ocl_arg_int(&a, c);
    dbk_ocl_arg_int(&a, hw);
    dbk_ocl_arg_int(&a, n * hw);
    arg_t(&a, &op->src[2]);
    arg_t(&a, &op->src[3]);
    arg_t(&a, &op->src[4]);
    arg_t(&a, &op->dst[1]);
    arg_t(&a, &op->dst[2]);
    return dbk_ocl_range2(&a, ((size_t)hw + 7) / 8, (size_t)(n * c));
}

/* ---------------------------------------------------------------------------------- */
/* max pooling                                                                         */

dbk_status dbk_ocl_record_maxpool_fwd(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const dbk_tensor *x = &op->src[0], *y = &op->dst[0];
    const dbk_pool_params *p = &op->p.pool;
    const int ncp = (int)(y->shape[0] * y->shape[1] * y->shape[2]), q = (int)y->shape[3];
    dbk_ocl_args a;
    /* 2x2 windows at stride 2 have a vectorised kernel: 8 outputs per work-item. */
    const bool vec2x2 = p->size_h == 2 && p->size_w == 2 && p->stride_h == 2 && p->stride_w == 2 && q % 8 == 0;
    DBK_TRY(dbk_ocl_kernel(be, out, vec2x2 ? "maxpool_fwd_2x2" : "maxpool_fwd", &a));
    arg_t(&a, x);
    arg_t(&a, y);
    arg_t(&a, &op->dst[1]);
    dbk_ocl_arg_int(&a, ncp);
    dbk_ocl_arg_int(&a, (int)x->shape[2]);
    dbk_ocl_arg_int(&a, (int)x->shape[3]);
    dbk_ocl_arg_int(&a, (int)y->shape[2]);
    dbk_ocl_arg_int(&a, q);
    if (vec2x2) return dbk_ocl_range2(&a, (size_t)q / 8, (size_t)ncp);
    dbk_ocl_arg_int(&a, p->size_h);
    dbk_ocl_arg_int(&a, p->size_w);
    dbk_ocl_arg_int(&a, p->stride_h);
    dbk_ocl_arg_int(&a, p->stride_w);
    return dbk_ocl_range2(&a, (size_t)q, (size_t)ncp);
}

dbk_status dbk_ocl_record_maxpool_bwd(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const dbk_tensor *dy = &op->src[0], *dx = &op->dst[0];
    const int nc = (int)(dx->shape[0] * dx->shape[1]);
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "maxpool_bwd", &a));
    arg_t(&a, dy);
    arg_t(&a, &op->src[1]);
    arg_t(&a, dx);
    dbk_ocl_arg_int(&a, nc);
    dbk_ocl_arg_int(&a, (int)(dx->shape[2] * dx->shape[3]));
    dbk_ocl_arg_int(&a, (int)(dy->shape[2] * dy->shape[3]));
    return dbk_ocl_range1(&a, (size_t)nc);
}
