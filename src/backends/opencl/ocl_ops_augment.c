/*
 * ocl_ops_augment.c — batch augmentation of the OpenCL backend (DESIGN.md decision 4),
 * lowered to cl/augment.cl, bit-exact with the CPU reference (src/backends/cpu/augment.c).
 * The state {first, seed, epoch, run_seed} is read from device memory, written by the host
 * each step.
 */
#include "backends/opencl/ocl_internal.h"

dbk_status dbk_ocl_record_augment(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const dbk_augment_params *p = &op->p.augment;
    const dbk_tensor *x = &op->dst[0];
    const int n = (int)x->shape[0], h = (int)x->shape[2], w = (int)x->shape[3];
    const bool has_idx = op->src[2].ndim != 0;
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "augment", &a));
    dbk_ocl_arg_tensor(&a, &op->src[0]);
    dbk_ocl_arg_tensor(&a, &op->src[1]);
    dbk_ocl_arg_tensor(&a, has_idx ? &op->src[2] : &op->src[3]);   /* any valid buffer when absent: never read */
    dbk_ocl_arg_int(&a, has_idx ? 1 : 0);
    dbk_ocl_arg_tensor(&a, &op->src[3]);
    dbk_ocl_arg_tensor(&a, x);
    dbk_ocl_arg_tensor(&a, &op->dst[1]);
    dbk_ocl_arg_int(&a, n);
    dbk_ocl_arg_int(&a, h);
    dbk_ocl_arg_int(&a, w);
    dbk_ocl_arg_int(&a, p->train ? 1 : 0);
    dbk_ocl_arg_int(&a, p->pad);
    dbk_ocl_arg_int(&a, p->flip ? 1 : 0);
    dbk_ocl_arg_int(&a, p->flip_alternating ? 1 : 0);
    dbk_ocl_arg_int(&a, p->cutout);
    dbk_ocl_arg_int(&a, p->view_dy);
    dbk_ocl_arg_int(&a, p->view_dx);
    dbk_ocl_arg_int(&a, p->view_flip ? 1 : 0);
    float scale[3], shift[3];
    dbk_augment_affine(p, scale, shift);
    for (int c = 0; c < 3; c++) dbk_ocl_arg_float(&a, scale[c]);
    for (int c = 0; c < 3; c++) dbk_ocl_arg_float(&a, shift[c]);
    dbk_ocl_arg_float(&a, p->brightness);
    dbk_ocl_arg_float(&a, p->contrast);
    return dbk_ocl_range2(&a, (size_t)w, (size_t)n * 3 * (size_t)h);
}
