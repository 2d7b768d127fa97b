/*
 * ocl_ops_bn.c — batch norm (training forward, inference forward, backward) of the OpenCL
 * backend, lowered to the kernels of cl/bn.cl. Semantics are those of the CPU reference
 * (src/backends/cpu/bn.c); the kernels' file comments give the launch geometry.
 */
#include "backends/opencl/ocl_internal.h"

/* Work-group size of the per-channel reductions: a power of two within the kernel's limit
 * and the local memory (one float per work-item). */
static size_t reduce_wg(dbk_backend *be, cl_kernel k) {
    size_t ls = dbk_ocl_wg_limit(be, k, 256);
    while (ls > 1 && ls * sizeof(float) > dbk_ocl(be)->local_mem) ls /= 2;
    return ls;
}

/* relu: 0 none, 1 clamp, 2 clamp then add skip, 3 add skip then clamp (skip unread in 0, 1). */
static dbk_status bn_apply(dbk_backend *be, dbk_ocl_launches *out, const dbk_tensor *x, const dbk_tensor *y,
                           const dbk_tensor *s0, const dbk_tensor *s1, const dbk_tensor *gamma, const dbk_tensor *beta,
                           float eps, int infer, int relu, const dbk_tensor *skip) {
    const int n = (int)x->shape[0], c = (int)x->shape[1], hw = (int)(x->shape[2] * x->shape[3]);
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "bn_apply", &a));
    dbk_ocl_arg_tensor(&a, x);
    dbk_ocl_arg_tensor(&a, y);
    dbk_ocl_arg_int(&a, n * c);
    dbk_ocl_arg_int(&a, c);
    dbk_ocl_arg_int(&a, hw);
    dbk_ocl_arg_tensor(&a, s0);
    dbk_ocl_arg_tensor(&a, s1);
    dbk_ocl_arg_tensor(&a, gamma);
    dbk_ocl_arg_tensor(&a, beta);
    dbk_ocl_arg_float(&a, eps);
    dbk_ocl_arg_int(&a, infer);
    dbk_ocl_arg_int(&a, relu);
    dbk_ocl_arg_tensor(&a, skip);
    return dbk_ocl_range2(&a, ((size_t)hw + 7) / 8, (size_t)(n * c));
}

/* y (N,C,H/2,W/2) = the 2x2 max pool of max(bn(x), 0), from the saved mean and invstd */
static dbk_status bn_apply_pool(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const dbk_tensor *x = &op->src[0], *y = &op->dst[0];
    const int nc = (int)(x->shape[0] * x->shape[1]), p = (int)y->shape[2], q = (int)y->shape[3];
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "bn_apply_pool", &a));
    dbk_ocl_arg_tensor(&a, x);
    dbk_ocl_arg_tensor(&a, y);
    dbk_ocl_arg_int(&a, nc);
    dbk_ocl_arg_int(&a, (int)x->shape[1]);
    dbk_ocl_arg_int(&a, (int)(x->shape[2] * x->shape[3]));
    dbk_ocl_arg_int(&a, (int)x->shape[3]);
    dbk_ocl_arg_int(&a, p);
    dbk_ocl_arg_int(&a, q);
    dbk_ocl_arg_tensor(&a, &op->dst[1]);
    dbk_ocl_arg_tensor(&a, &op->dst[2]);
    dbk_ocl_arg_tensor(&a, &op->src[1]);
    dbk_ocl_arg_tensor(&a, &op->src[2]);
    return dbk_ocl_range2(&a, ((size_t)q + 3) / 4, (size_t)nc * (size_t)p);
}

/* Training forward, plain (relu 0), fused with ReLU (1, DBK_OP_BATCHNORM_RELU_FWD_TRAIN) or
 * with ReLU and the residual add (2, DBK_OP_BATCHNORM_RELU_ADD_FWD_TRAIN; 3,
 * DBK_OP_BATCHNORM_ADD_RELU_FWD_TRAIN: skip is src3), or with ReLU and the 2x2 max pool (4,
 * DBK_OP_BATCHNORM_RELU_POOL_FWD_TRAIN: y is pooled). */
static dbk_status fwd_train(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out, int relu) {
    const dbk_tensor *x = &op->src[0];
    const int n = (int)x->shape[0], c = (int)x->shape[1], hw = (int)(x->shape[2] * x->shape[3]);
    if (n * hw == 0) return DBK_OK;   /* no values: leave everything, as the CPU does */
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "bn_stats", &a));
    const size_t ls = reduce_wg(be, a.launch->kernel);
    dbk_ocl_arg_tensor(&a, x);
    dbk_ocl_arg_int(&a, n);
    dbk_ocl_arg_int(&a, c);
    dbk_ocl_arg_int(&a, hw);
    dbk_ocl_arg_float(&a, op->p.bn.eps);
    dbk_ocl_arg_float(&a, op->p.bn.momentum);
    for (int i = 1; i <= 4; i++) dbk_ocl_arg_tensor(&a, &op->dst[i]);
    dbk_ocl_arg_local(&a, ls * sizeof(float));
    const size_t global = ls * (size_t)c;
    DBK_TRY(dbk_ocl_args_done(&a, 1, &global, &ls));
    if (relu == 4) return bn_apply_pool(be, op, out);
    return bn_apply(be, out, x, &op->dst[0], &op->dst[1], &op->dst[2], &op->src[1], &op->src[2], op->p.bn.eps, 0,
                    relu, relu >= 2 ? &op->src[3] : x);
}

static dbk_status fwd_infer(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    return bn_apply(be, out, &op->src[0], &op->dst[0], &op->src[3], &op->src[4], &op->src[1], &op->src[2], op->p.bn.eps,
                    1, 0, &op->src[0]);
}

/* Backward, plain (relu 0) or fused with ReLU: y (the fused forward's output) masks dy
 * (relu 1), or the pre-activation recomputed with beta (relu 2, the fused residual add;
 * relu 3, through the fused 2x2 max pool: dy pooled). Unread slots are bound to tensors of the
 * op: dy for y, gamma for beta. */
static dbk_status bwd(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out, int relu) {
    const dbk_tensor *x = &op->src[0], *y = relu == 1 ? &op->src[5] : &op->src[1];
    const dbk_tensor *beta = relu >= 2 ? &op->src[5] : &op->src[2];
    const int n = (int)x->shape[0], c = (int)x->shape[1], hw = (int)(x->shape[2] * x->shape[3]);
    const int w = (int)x->shape[3], p = relu == 3 ? (int)op->src[1].shape[2] : 0;
    const int q = relu == 3 ? (int)op->src[1].shape[3] : 0;
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "bn_bwd_reduce", &a));
    const size_t ls = reduce_wg(be, a.launch->kernel);
    dbk_ocl_arg_tensor(&a, x);
    dbk_ocl_arg_tensor(&a, &op->src[1]);
    dbk_ocl_arg_tensor(&a, y);
    dbk_ocl_arg_int(&a, relu);
    dbk_ocl_arg_tensor(&a, &op->src[2]);
    dbk_ocl_arg_tensor(&a, beta);
    dbk_ocl_arg_int(&a, n);
    dbk_ocl_arg_int(&a, c);
    dbk_ocl_arg_int(&a, hw);
    dbk_ocl_arg_int(&a, w);
    dbk_ocl_arg_int(&a, p);
    dbk_ocl_arg_int(&a, q);
    dbk_ocl_arg_tensor(&a, &op->src[3]);
    dbk_ocl_arg_tensor(&a, &op->src[4]);
    dbk_ocl_arg_tensor(&a, &op->dst[1]);
    dbk_ocl_arg_tensor(&a, &op->dst[2]);
    dbk_ocl_arg_local(&a, ls * sizeof(float));
    const size_t global = ls * (size_t)c;
    DBK_TRY(dbk_ocl_args_done(&a, 1, &global, &ls));
    if (n * hw == 0) return DBK_OK;

    DBK_TRY(dbk_ocl_kernel(be, out, "bn_bwd_data", &a));
    dbk_ocl_arg_tensor(&a, x);
    dbk_ocl_arg_tensor(&a, &op->src[1]);
    dbk_ocl_arg_tensor(&a, y);
    dbk_ocl_arg_int(&a, relu);
    dbk_ocl_arg_tensor(&a, &op->dst[0]);
    dbk_ocl_arg_int(&a, n * c);
    dbk_ocl_arg_int(&a, c);
    dbk_ocl_arg_int(&a, hw);
    dbk_ocl_arg_int(&a, n * hw);
    dbk_ocl_arg_tensor(&a, &op->src[2]);
    dbk_ocl_arg_tensor(&a, &op->src[3]);
    dbk_ocl_arg_tensor(&a, &op->src[4]);
    dbk_ocl_arg_tensor(&a, &op->dst[1]);
    dbk_ocl_arg_tensor(&a, &op->dst[2]);
    dbk_ocl_arg_tensor(&a, beta);
    dbk_ocl_arg_int(&a, w);
    dbk_ocl_arg_int(&a, p);
    dbk_ocl_arg_int(&a, q);
    if (relu != 3) return dbk_ocl_range2(&a, ((size_t)hw + 7) / 8, (size_t)(n * c));
    const size_t rows[3] = {((size_t)w + 7) / 8, (size_t)(n * c), ((size_t)x->shape[2] + 1) / 2}; /* a pair of rows each */
    return dbk_ocl_args_done(&a, 3, rows, NULL);
}

/* The family's recorder (op_list.h launch FAMILY): the op picks the pass and its fusion. */
dbk_status dbk_ocl_record_bn(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    switch ((int)op->op) {   /* int: the other ops need no case */
    case DBK_OP_BATCHNORM_FWD_TRAIN:           return fwd_train(be, op, out, 0);
    case DBK_OP_BATCHNORM_RELU_FWD_TRAIN:      return fwd_train(be, op, out, 1);
    case DBK_OP_BATCHNORM_RELU_ADD_FWD_TRAIN:  return fwd_train(be, op, out, 2);
    case DBK_OP_BATCHNORM_ADD_RELU_FWD_TRAIN:  return fwd_train(be, op, out, 3);
    case DBK_OP_BATCHNORM_RELU_POOL_FWD_TRAIN: return fwd_train(be, op, out, 4);
    case DBK_OP_BATCHNORM_FWD_INFER:           return fwd_infer(be, op, out);
    case DBK_OP_BATCHNORM_BWD:                 return bwd(be, op, out, 0);
    case DBK_OP_BATCHNORM_RELU_BWD:            return bwd(be, op, out, 1);
    case DBK_OP_BATCHNORM_RELU_ADD_BWD:        return bwd(be, op, out, 2);
    case DBK_OP_BATCHNORM_RELU_POOL_BWD:       return bwd(be, op, out, 3);
    default:
        return dbk_set_error(DBK_ERR_INVALID_ARG, "%s is not a batch-norm op", dbk_op_name(op->op));
    }
}
