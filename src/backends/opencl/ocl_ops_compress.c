/*
 * ocl_ops_compress.c — the gradient-compression ops (SPARSE_SELECT, SPARSE_ADD, SPARSE_SCATTER,
 * SPARSE_GATHER, QUANT_ENCODE, QUANT_ADD) on the OpenCL
 * backend, lowered to cl/compress.cl (which describes the kernel chain). Semantics are the
 * CPU reference's (src/backends/cpu/compress.c).
 */
#include <string.h>

#include "backends/opencl/ocl_internal.h"

/* Starts one of compress.cl's select kernels: its leading (buffer, offset) arguments. */
static dbk_status select_kernel(dbk_backend *be, dbk_ocl_launches *out, const char *name, const dbk_tensor *const *t,
                                int nt, dbk_ocl_args *a) {
    DBK_TRY(dbk_ocl_kernel(be, out, name, a));
    for (int i = 0; i < nt; i++) dbk_ocl_arg_tensor(a, t[i]);
    return DBK_OK;
}

dbk_status dbk_ocl_record_sparse_select(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const dbk_tensor *x = &op->src[0], *seg = &op->src[1], *ch = &op->src[2];
    const dbk_tensor *pairs = &op->dst[0], *count = &op->dst[1], *work = &op->dst[2];
    const int S = (int)seg->shape[0], C = (int)ch->shape[0];
    const bool topk = op->p.select.topk;
    uint32_t thr_bits;
    memcpy(&thr_bits, &op->p.select.threshold, sizeof thr_bits);
    dbk_ocl_args a;

    const dbk_tensor *init_t[] = {seg, work};
    DBK_TRY(select_kernel(be, out, "select_init", init_t, 2, &a));
    dbk_ocl_arg_int(&a, S);
    dbk_ocl_arg_int(&a, C);
    dbk_ocl_arg_int(&a, topk);
    dbk_ocl_arg_uint(&a, thr_bits & 0x7fffffffu);
    DBK_TRY(dbk_ocl_range1(&a, (size_t)S));
    for (int shift = 24; topk && shift >= 0; shift -= 8) {
        const dbk_tensor *hist_t[] = {x, ch, work};
        DBK_TRY(select_kernel(be, out, "select_hist", hist_t, 3, &a));
        dbk_ocl_arg_int(&a, S);
        dbk_ocl_arg_int(&a, C);
        dbk_ocl_arg_int(&a, shift);
        DBK_TRY(dbk_ocl_range1(&a, (size_t)C));
        const dbk_tensor *pick_t[] = {work};
        DBK_TRY(select_kernel(be, out, "select_pick", pick_t, 1, &a));
        dbk_ocl_arg_int(&a, S);
        dbk_ocl_arg_int(&a, C);
        dbk_ocl_arg_int(&a, shift);
        DBK_TRY(dbk_ocl_range1(&a, (size_t)S));
    }
    const dbk_tensor *count_t[] = {x, ch, work};
    DBK_TRY(select_kernel(be, out, "select_count", count_t, 3, &a));
    dbk_ocl_arg_int(&a, S);
    dbk_ocl_arg_int(&a, C);
    DBK_TRY(dbk_ocl_range1(&a, (size_t)C));
    const dbk_tensor *scan_t[] = {ch, work, count};
    DBK_TRY(select_kernel(be, out, "select_scan", scan_t, 3, &a));
    dbk_ocl_arg_int(&a, S);
    dbk_ocl_arg_int(&a, C);
    DBK_TRY(dbk_ocl_range1(&a, 1));
    const dbk_tensor *scatter_t[] = {x, ch, work, pairs};
    DBK_TRY(select_kernel(be, out, "select_scatter", scatter_t, 4, &a));
    dbk_ocl_arg_int(&a, (int)(dbk_tensor_numel(pairs) / 2));
    dbk_ocl_arg_int(&a, S);
    dbk_ocl_arg_int(&a, C);
    return dbk_ocl_range1(&a, (size_t)C);
}

dbk_status dbk_ocl_record_sparse_add(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const int k = (int)(dbk_tensor_numel(&op->src[0]) / 2);
    if (k == 0) return DBK_OK;
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "sparse_add", &a));
    dbk_ocl_arg_tensor(&a, &op->src[0]);
    dbk_ocl_arg_tensor(&a, &op->dst[0]);
    dbk_ocl_arg_float(&a, op->p.scale.alpha);
    dbk_ocl_arg_int(&a, k);
    dbk_ocl_arg_uint(&a, (cl_uint)dbk_tensor_numel(&op->dst[0]));
    return dbk_ocl_range1(&a, (size_t)k);
}

dbk_status dbk_ocl_record_sparse_scatter(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const int k = (int)(dbk_tensor_numel(&op->src[0]) / 2);
    if (k == 0) return DBK_OK;
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "sparse_scatter", &a));
    dbk_ocl_arg_tensor(&a, &op->src[0]);
    dbk_ocl_arg_tensor(&a, &op->dst[0]);
    dbk_ocl_arg_int(&a, op->p.scatter.constant ? 1 : 0);
    dbk_ocl_arg_float(&a, op->p.scatter.value);
    dbk_ocl_arg_int(&a, k);
    dbk_ocl_arg_uint(&a, (cl_uint)dbk_tensor_numel(&op->dst[0]));
    return dbk_ocl_range1(&a, (size_t)k);
}

dbk_status dbk_ocl_record_sparse_gather(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const int k = (int)dbk_tensor_numel(&op->src[1]);
    if (k == 0) return DBK_OK;
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "sparse_gather", &a));
    for (int i = 0; i < 3; i++) dbk_ocl_arg_tensor(&a, &op->src[i]);
    dbk_ocl_arg_tensor(&a, &op->dst[0]);
    dbk_ocl_arg_int(&a, k);
    dbk_ocl_arg_int(&a, (int)op->src[2].shape[0]);
    return dbk_ocl_range1(&a, (size_t)k);
}

dbk_status dbk_ocl_record_quant_encode(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const dbk_tensor *x = &op->src[0], *seg = &op->src[1], *ch = &op->src[2], *payload = &op->dst[0],
                     *work = &op->dst[1];
    const int S = (int)seg->shape[0], C = (int)ch->shape[0], levels = op->p.quant.levels;
    if (S == 0) return DBK_OK;
    dbk_ocl_args a;
    const dbk_tensor *partial_t[] = {x, ch, work};
    DBK_TRY(select_kernel(be, out, "quant_partial", partial_t, 3, &a));
    dbk_ocl_arg_int(&a, C);
    dbk_ocl_arg_int(&a, levels);
    DBK_TRY(dbk_ocl_range1(&a, (size_t)C));
    const dbk_tensor *scale_t[] = {ch, work};
    DBK_TRY(select_kernel(be, out, "quant_scale", scale_t, 2, &a));
    dbk_ocl_arg_int(&a, S);
    dbk_ocl_arg_int(&a, C);
    dbk_ocl_arg_int(&a, levels);
    DBK_TRY(dbk_ocl_range1(&a, (size_t)S));
    const dbk_tensor *pack_t[] = {x, seg, work, payload};
    DBK_TRY(select_kernel(be, out, "quant_pack", pack_t, 4, &a));
    dbk_ocl_arg_int(&a, S);
    dbk_ocl_arg_int(&a, C);
    dbk_ocl_arg_int(&a, levels);
    dbk_ocl_arg_uint(&a, op->p.quant.seed_lo);
    dbk_ocl_arg_uint(&a, op->p.quant.seed_hi);
    dbk_ocl_arg_uint(&a, (cl_uint)dbk_tensor_numel(payload));
    return dbk_ocl_range1(&a, (size_t)dbk_tensor_numel(payload));
}

dbk_status dbk_ocl_record_quant_add(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const int S = (int)op->src[1].shape[0];
    const int64_t n = dbk_tensor_numel(&op->dst[0]);
    if (S == 0 || n == 0) return DBK_OK;
    dbk_ocl_args a;
    const dbk_tensor *t[] = {&op->src[0], &op->src[1], &op->dst[0]};
    DBK_TRY(select_kernel(be, out, "quant_add", t, 3, &a));
    dbk_ocl_arg_int(&a, S);
    dbk_ocl_arg_uint(&a, (cl_uint)n);
    dbk_ocl_arg_int(&a, op->p.quant.levels);
    dbk_ocl_arg_float(&a, op->p.quant.alpha);
    return dbk_ocl_range1(&a, (size_t)n);
}
