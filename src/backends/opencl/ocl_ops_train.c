/*
 * ocl_ops_train.c — the training-loop ops of the OpenCL backend: softmax cross-entropy
 * (forward and backward), accuracy counting, the SGD update and augmentation, lowered to
 * cl/loss.cl, cl/optim.cl and cl/augment.cl. Semantics are the CPU reference's
 * (src/backends/cpu/{loss,optim,augment}.c). Counters and the learning rate live in device
 * memory, so none of these reads anything back during a step.
 */
#include "backends/opencl/ocl_internal.h"

static void arg_t(dbk_ocl_args *a, const dbk_tensor *t) {
    dbk_ocl_arg_mem(a, dbk_ocl_mem(t));
    dbk_ocl_arg_uint(a, dbk_ocl_off(t));
}

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
    arg_t(&a, &op->src[0]);
    arg_t(&a, &op->src[1]);
    arg_t(&a, &op->dst[0]);
    arg_t(&a, &op->dst[1]);
    dbk_ocl_arg_int(&a, (int)op->src[0].shape[0]);
    dbk_ocl_arg_int(&a, (int)op->src[0].shape[1]);
    dbk_ocl_arg_float(&a, op->p.xent.label_smoothing);
    return single_group(&a);
}

dbk_status dbk_ocl_record_softmax_xent_bwd(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const int n = (int)op->src[0].shape[0], k = (int)op->src[0].shape[1];
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "softmax_xent_bwd", &a));
    arg_t(&a, &op->src[0]);
    arg_t(&a, &op->src[1]);
    arg_t(&a, &op->dst[0]);
    dbk_ocl_arg_int(&a, n);
    dbk_ocl_arg_int(&a, k);
    dbk_ocl_arg_float(&a, op->p.xent.label_smoothing);
    dbk_ocl_arg_float(&a, op->p.xent.grad_scale);
    return dbk_ocl_range1(&a, (size_t)n * (size_t)k);
}

dbk_status dbk_ocl_record_accuracy(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "accuracy", &a));
    arg_t(&a, &op->src[0]);
    arg_t(&a, &op->src[1]);
    arg_t(&a, &op->dst[0]);
    dbk_ocl_arg_int(&a, (int)op->src[0].shape[0]);
    dbk_ocl_arg_int(&a, (int)op->src[0].shape[1]);
    return single_group(&a);
}

dbk_status dbk_ocl_record_sgd_momentum_update(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const int n = (int)dbk_tensor_numel(&op->src[0]);
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "sgd_momentum_update", &a));
    arg_t(&a, &op->src[0]);
    arg_t(&a, &op->src[1]);
    arg_t(&a, &op->dst[0]);
    arg_t(&a, &op->dst[1]);
    dbk_ocl_arg_float(&a, op->p.sgd.momentum);
    dbk_ocl_arg_float(&a, op->p.sgd.weight_decay);
    dbk_ocl_arg_int(&a, op->p.sgd.nesterov ? 1 : 0);
    dbk_ocl_arg_int(&a, n);
    return dbk_ocl_range1(&a, (size_t)n);
}

dbk_status dbk_ocl_record_augment(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const dbk_augment_params *p = &op->p.augment;
    const dbk_tensor *x = &op->dst[0];
    const int n = (int)x->shape[0], h = (int)x->shape[2], w = (int)x->shape[3];
    const bool has_idx = op->src[2].ndim != 0;
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "augment", &a));
    arg_t(&a, &op->src[0]);
    arg_t(&a, &op->src[1]);
    arg_t(&a, has_idx ? &op->src[2] : &op->src[3]);   /* any valid buffer when absent: never read */
    dbk_ocl_arg_int(&a, has_idx ? 1 : 0);
    arg_t(&a, &op->src[3]);
    arg_t(&a, x);
    arg_t(&a, &op->dst[1]);
    dbk_ocl_arg_int(&a, n);
    dbk_ocl_arg_int(&a, h);
    dbk_ocl_arg_int(&a, w);
    dbk_ocl_arg_int(&a, p->train ? 1 : 0);
    dbk_ocl_arg_int(&a, p->pad);
    dbk_ocl_arg_int(&a, p->flip ? 1 : 0);
    dbk_ocl_arg_int(&a, p->cutout);
    for (int c = 0; c < 3; c++) dbk_ocl_arg_float(&a, p->mean[c]);
    for (int c = 0; c < 3; c++) dbk_ocl_arg_float(&a, p->std[c]);
    return dbk_ocl_range2(&a, (size_t)w, (size_t)n * 3 * (size_t)h);
}
