/*
 * ocl_blas.c — SGEMM for the OpenCL backend: our tiled kernel (cl/gemm_tiled.cl) or CLBlast,
 * as the device profile says ("opencl.gemm": "tiled" | "clblast"), and DBK_OP_GEMM itself.
 *
 *   C (M,N) = alpha * op(A) op(B) + beta * C, row-major, leading dimensions = stored row
 *   lengths; semantics as the CPU reference (src/backends/cpu/gemm.c, torch.addmm): with
 *   beta == 0 the old contents of C are never read.
 *
 * CLBlast serves devices its tuning database knows well; where it does not (PoCL here: 13-25
 * GFLOP/s with default parameters) a profile may pass tuned Xgemm parameters under
 * "opencl.clblast_xgemm" (all of GEMMK MWG NWG KWG MDIMC NDIMC MDIMA NDIMB KWI VWM VWN STRM
 * STRN SA SB KREG, as CLBlastOverrideParameters requires) or select the tiled kernel. CLBlast
 * computes beta * C even for beta == 0, so C is zero-filled first in that case (NaN * 0 is NaN).
 *
 * "tiled" means two kernels: gemm_rb / gemm_rb2 (register-blocked, B packed in panels by the
 * convolution's producers; dbk_ocl_gemm_packed_record) for the convolutions, and gemm_tiled
 * (local-memory tiles, any transposes; dbk_ocl_gemm_record) for plain GEMMs such as the
 * linear layer.
 */
#include <clblast_c.h>
#include <stdio.h>
#include <string.h>

#include "backends/opencl/ocl_internal.h"
#include "core/log.h"
#include "core/profile.h"

static const char *const kXgemmParams[] = {"GEMMK", "MWG", "NWG",  "KWG", "MDIMC", "NDIMC", "MDIMA", "NDIMB",
                                           "KWI",   "VWM", "VWN",  "STRM", "STRN", "SA",    "SB",    "KREG"};
#define XGEMM_PARAM_COUNT (sizeof kXgemmParams / sizeof kXgemmParams[0])

dbk_status dbk_ocl_blas_setup(dbk_backend *be, const void *profile) {
    const dbk_profile *p = profile;
    dbk_ocl_ctx *c = dbk_ocl(be);
    if (c->gemm != DBK_OCL_GEMM_CLBLAST || !dbk_profile_has(p, "opencl.clblast_xgemm")) return DBK_OK;
    size_t values[XGEMM_PARAM_COUNT];
    const char *names[XGEMM_PARAM_COUNT];
    for (size_t i = 0; i < XGEMM_PARAM_COUNT; i++) {
        names[i] = kXgemmParams[i];
        char path[96];
        snprintf(path, sizeof path, "opencl.clblast_xgemm.%s", kXgemmParams[i]);
        double v = dbk_profile_number(p, path, -1.0);
        if (v < 0)
            return dbk_set_error(DBK_ERR_FORMAT, "profile %s: opencl.clblast_xgemm lacks %s (CLBlast needs all of them)",
                                 dbk_profile_id(p), kXgemmParams[i]);
        values[i] = (size_t)v;
    }
    CLBlastStatusCode s = CLBlastOverrideParameters(c->device, "Xgemm", CLBlastPrecisionSingle, XGEMM_PARAM_COUNT,
                                                    names, values);
    if (s != CLBlastSuccess)
        return dbk_set_error(DBK_ERR_DEVICE, "CLBlastOverrideParameters(Xgemm) failed with status %d for %s", (int)s,
                             be->info.name);
    dbk_log(DBK_LOG_LEVEL_INFO, "CLBlast Xgemm parameters overridden by profile %s", dbk_profile_id(p));
    return DBK_OK;
}

/* The arguments gemm_tiled and gemm_rb(2) share, in their order: M, N, K, alpha, beta, A. */
static void gemm_args_head(dbk_ocl_args *g, int m, int n, int k, float alpha, float beta, dbk_ocl_matrix a,
                           bool ta) {
    dbk_ocl_arg_int(g, m);
    dbk_ocl_arg_int(g, n);
    dbk_ocl_arg_int(g, k);
    dbk_ocl_arg_float(g, alpha);
    dbk_ocl_arg_float(g, beta);
    dbk_ocl_arg_mem(g, a.mem);
    dbk_ocl_arg_uint(g, a.off);
    dbk_ocl_arg_int(g, a.ld);
    dbk_ocl_arg_int(g, ta ? 1 : 0);
}

/* What a GEMM reads and writes once: A (m,k), B (k,n), C (m,n), C read too when beta != 0. */
static double gemm_floats(int m, int n, int k, float beta) {
    return (double)m * k + (double)k * n + (double)m * n * (beta != 0.0f ? 2.0 : 1.0);
}

dbk_status dbk_ocl_gemm_packed_record(dbk_backend *be, dbk_ocl_launches *out, bool ta, int m, int n, int k, float alpha,
                                      dbk_ocl_matrix a, cl_mem bp, cl_uint bp_off, float beta, dbk_ocl_matrix c,
                                      int c_plane) {
    const dbk_ocl_batch one = {.count = 1};
    return dbk_ocl_gemm_batch_record(be, out, ta, m, n, k, alpha, a, bp, bp_off, beta, c, c_plane, one);
}

/* gemm_rb on a packed B; a work-item computes an RB_M x RB_W block of one GEMM of the batch
 * (dimension 2 of the range). */
dbk_status dbk_ocl_gemm_batch_record(dbk_backend *be, dbk_ocl_launches *out, bool ta, int m, int n, int k, float alpha,
                                     dbk_ocl_matrix a, cl_mem bp, cl_uint bp_off, float beta, dbk_ocl_matrix c,
                                     int c_plane, dbk_ocl_batch batch) {
    if (m == 0 || n == 0 || batch.count == 0) return DBK_OK;
    const dbk_ocl_gemm_tiles *t = &dbk_ocl(be)->tiles;
    dbk_ocl_args g;
    DBK_TRY(dbk_ocl_kernel(be, out, t->rb_v == 2 ? "gemm_rb2" : "gemm_rb", &g));
    gemm_args_head(&g, m, n, k, alpha, beta, a, ta);
    dbk_ocl_arg_mem(&g, bp);
    dbk_ocl_arg_uint(&g, bp_off);
    dbk_ocl_arg_mem(&g, c.mem);
    dbk_ocl_arg_uint(&g, c.off);
    dbk_ocl_arg_int(&g, c.ld);
    dbk_ocl_arg_int(&g, c_plane);
    dbk_ocl_arg_uint(&g, batch.a);
    dbk_ocl_arg_uint(&g, batch.b);
    dbk_ocl_arg_uint(&g, batch.c);
    dbk_ocl_args_floats(&g, batch.count * gemm_floats(m, n, k, beta));
    const size_t rb_n = (size_t)t->rb_w;
    const size_t panels = ((size_t)n + rb_n - 1) / rb_n;
    const size_t global[3] = {t->rb_v == 2 ? (panels + 1) / 2 : panels, ((size_t)m + (size_t)t->rb_m - 1) / (size_t)t->rb_m,
                              (size_t)batch.count};
    size_t lim = dbk_ocl_wg_limit(be, g.launch->kernel, (size_t)t->rb_wg0 * (size_t)t->rb_wg1);
    size_t local[2] = {(size_t)t->rb_wg0, (size_t)t->rb_wg1};
    while (local[0] * local[1] > lim) {
        if (local[1] > 1) local[1] /= 2;
        else local[0] /= 2;
    }
    /* No point in work-groups wider than the matrix: shrink to the range. */
    while (local[0] > 1 && local[0] / 2 >= global[0]) local[0] /= 2;
    while (local[1] > 1 && local[1] / 2 >= global[1]) local[1] /= 2;
    if (batch.count == 1) return dbk_ocl_args_done(&g, 2, global, local);
    const size_t local3[3] = {local[0], local[1], 1};
    return dbk_ocl_args_done(&g, 3, global, local3);
}

static dbk_status record_tiled(dbk_backend *be, dbk_ocl_launches *out, bool ta, bool tb, int m, int n, int k,
                               float alpha, dbk_ocl_matrix a, dbk_ocl_matrix b, float beta, dbk_ocl_matrix c) {
    const dbk_ocl_gemm_tiles *t = &dbk_ocl(be)->tiles;
    dbk_ocl_args g;
    DBK_TRY(dbk_ocl_kernel(be, out, "gemm_tiled", &g));
    const size_t local[2] = {(size_t)(t->tsn / t->wptn), (size_t)(t->tsm / t->wptm)};
    size_t kmax = 0;
    clGetKernelWorkGroupInfo(g.launch->kernel, dbk_ocl(be)->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof kmax, &kmax, NULL);
    if (kmax && local[0] * local[1] > kmax)
        return dbk_set_error(DBK_ERR_UNSUPPORTED, "gemm_tiled needs work-groups of %zu, %s allows %zu for it",
                             local[0] * local[1], be->info.name, kmax);
    gemm_args_head(&g, m, n, k, alpha, beta, a, ta);
    dbk_ocl_arg_mem(&g, b.mem);
    dbk_ocl_arg_uint(&g, b.off);
    dbk_ocl_arg_int(&g, b.ld);
    dbk_ocl_arg_int(&g, tb ? 1 : 0);
    dbk_ocl_arg_mem(&g, c.mem);
    dbk_ocl_arg_uint(&g, c.off);
    dbk_ocl_arg_int(&g, c.ld);
    dbk_ocl_args_floats(&g, gemm_floats(m, n, k, beta));
    const size_t global[2] = {(size_t)((n + t->tsn - 1) / t->tsn) * local[0],
                              (size_t)((m + t->tsm - 1) / t->tsm) * local[1]};
    return dbk_ocl_args_done(&g, 2, global, local);
}

/* A CLBlast GEMM launch appended to out (one GEMM; the strided batched form sets its batch). */
static dbk_status append_clblast(dbk_ocl_launches *out, bool ta, bool tb, int m, int n, int k, float alpha,
                                 dbk_ocl_matrix a, dbk_ocl_matrix b, float beta, dbk_ocl_matrix c, dbk_ocl_launch **l) {
    DBK_TRY(dbk_ocl_launches_append(out, l));
    (*l)->kind = DBK_OCL_LAUNCH_CLBLAST_GEMM;
    (*l)->blas = (dbk_ocl_blas_call){
        .trans_a = ta, .trans_b = tb, .m = (size_t)m, .n = (size_t)n, .k = (size_t)k, .alpha = alpha, .beta = beta,
        .a = a.mem, .b = b.mem, .c = c.mem, .a_off = a.off, .b_off = b.off, .c_off = c.off,
        .lda = (size_t)a.ld, .ldb = (size_t)b.ld, .ldc = (size_t)c.ld,
    };
    return DBK_OK;
}

dbk_status dbk_ocl_gemm_record(dbk_backend *be, dbk_ocl_launches *out, bool ta, bool tb, int m, int n, int k,
                               float alpha, dbk_ocl_matrix a, dbk_ocl_matrix b, float beta, dbk_ocl_matrix c) {
    if (m == 0 || n == 0) return DBK_OK;
    /* k == 0 (C = beta C) goes to the tiled kernel, which handles it; CLBlast rejects it. */
    if (dbk_ocl(be)->gemm == DBK_OCL_GEMM_TILED || k == 0)
        return record_tiled(be, out, ta, tb, m, n, k, alpha, a, b, beta, c);
    if (beta == 0.0f) {
        /* C is dense here (ldc == n) in every caller; zero it so CLBlast's beta * C is 0. */
        if (c.ld != n) return dbk_set_error(DBK_ERR_UNSUPPORTED, "CLBlast GEMM with beta 0 on a strided C");
        DBK_TRY(dbk_ocl_fill_record(be, out, c.mem, c.off, (cl_uint)m * (cl_uint)n, 0.0f));
    }
    dbk_ocl_launch *l;
    DBK_TRY(append_clblast(out, ta, tb, m, n, k, alpha, a, b, beta, c, &l));
    l->bytes = (uint64_t)(4.0 * gemm_floats(m, n, k, beta));
    /* The temporary matrices CLBlast's indirect path pads or transposes into: one buffer of the
     * largest size any recorded call needs, made now rather than inside every call. */
    size_t temp = 0;
    CLBlastStatusCode s = CLBlastSGemmTempBufferSize(CLBlastLayoutRowMajor, ta ? CLBlastTransposeYes : CLBlastTransposeNo,
                                                     tb ? CLBlastTransposeYes : CLBlastTransposeNo, (size_t)m, (size_t)n,
                                                     (size_t)k, a.off, (size_t)a.ld, b.off, (size_t)b.ld, c.off,
                                                     (size_t)c.ld, &dbk_ocl(be)->queue, &temp);
    if (s != CLBlastSuccess)
        return dbk_set_error(DBK_ERR_DEVICE, "CLBlastSGemmTempBufferSize %dx%dx%d failed with CLBlast status %d on %s", m,
                             n, k, (int)s, be->info.name);
    l->blas.temp_bytes = temp;
    return dbk_ocl_reserve_blas_temp(be, temp);
}

dbk_status dbk_ocl_gemm_strided_record(dbk_backend *be, dbk_ocl_launches *out, bool ta, bool tb, int m, int n, int k,
                                       float alpha, dbk_ocl_matrix a, dbk_ocl_matrix b, float beta, dbk_ocl_matrix c,
                                       int batch, size_t stride_a, size_t stride_b, size_t stride_c) {
    DBK_ASSERT(dbk_ocl(be)->gemm == DBK_OCL_GEMM_CLBLAST && batch >= 1 && k > 0);
    if (m == 0 || n == 0) return DBK_OK;
    dbk_ocl_launch *l;
    DBK_TRY(append_clblast(out, ta, tb, m, n, k, alpha, a, b, beta, c, &l));
    l->blas.batch = (size_t)batch;
    l->blas.a_stride = stride_a;
    l->blas.b_stride = stride_b;
    l->blas.c_stride = stride_c;
    l->bytes = (uint64_t)(4.0 * batch * gemm_floats(m, n, k, beta));
    return DBK_OK;
}

static dbk_ocl_matrix matrix_of(const dbk_tensor *t) {
    dbk_ocl_matrix x = {dbk_ocl_mem(t), dbk_ocl_off(t), t->shape[1] > 0 ? (int)t->shape[1] : 1};
    return x;
}

dbk_status dbk_ocl_record_gemm(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const dbk_gemm_params *p = &op->p.gemm;
    const dbk_tensor *ta = &op->src[0], *tb = &op->src[1], *tc = &op->dst[0];
    const int m = (int)tc->shape[0], n = (int)tc->shape[1];
    const int k = (int)(p->trans_a ? ta->shape[0] : ta->shape[1]);
    return dbk_ocl_gemm_record(be, out, p->trans_a, p->trans_b, m, n, k, p->alpha, matrix_of(ta), matrix_of(tb), p->beta,
                               matrix_of(tc));
}
