/*
 * ocl_launch.c — launch lists, the lower layer every OpenCL recorder writes into: kernels
 * created with their arguments set (dbk_ocl_kernel, dbk_ocl_arg_*, dbk_ocl_range*), stored
 * CLBlast calls, and their enqueueing. It calls nothing of the recorders above it
 * (ocl_ops_*.c, ocl_blas.c) or of the dispatch (ocl_record.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <clblast_c.h>

#include "backends/opencl/ocl_internal.h"

/* ---------------------------------------------------------------------------------- */
/* launch lists                                                                       */

dbk_status dbk_ocl_launches_append(dbk_ocl_launches *l, dbk_ocl_launch **out) {
    if (l->count == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        dbk_ocl_launch *grown = realloc(l->items, sizeof *grown * (size_t)cap);
        if (!grown) return dbk_set_error(DBK_ERR_OUT_OF_HOST_MEMORY, "out of host memory recording OpenCL launches");
        l->items = grown;
        l->cap = cap;
    }
    *out = &l->items[l->count++];
    memset(*out, 0, sizeof **out);
    return DBK_OK;
}

void dbk_ocl_launches_free(dbk_ocl_launches *l) {
    for (int i = 0; i < l->count; i++)
        if (l->items[i].kernel) clReleaseKernel(l->items[i].kernel);
    free(l->items);
    memset(l, 0, sizeof *l);
}

dbk_status dbk_ocl_kernel(dbk_backend *be, dbk_ocl_launches *out, const char *name, dbk_ocl_args *args) {
    memset(args, 0, sizeof *args);
    args->be = be;
    args->name = name;
    cl_int err;
    cl_kernel k = clCreateKernel(dbk_ocl(be)->program, name, &err);
    if (!k) return dbk_ocl_fail(be, err, "creating kernel %s", name);
    dbk_status st = dbk_ocl_launches_append(out, &args->launch);
    if (st != DBK_OK) {
        clReleaseKernel(k);
        return st;
    }
    args->list = out;
    args->launch->kind = DBK_OCL_LAUNCH_KERNEL;
    args->launch->kernel = k;
    return DBK_OK;
}

static void set_arg(dbk_ocl_args *a, size_t size, const void *value, const char *what) {
    cl_int err = clSetKernelArg(a->launch->kernel, a->next, size, value);
    if (err != CL_SUCCESS && a->err == CL_SUCCESS) {
        a->err = err;
        a->failed = what;
    }
    a->next++;
}

void dbk_ocl_arg_mem(dbk_ocl_args *a, cl_mem m) { set_arg(a, sizeof m, &m, "a buffer argument"); }
void dbk_ocl_arg_int(dbk_ocl_args *a, cl_int v) { set_arg(a, sizeof v, &v, "an int argument"); }
void dbk_ocl_arg_uint(dbk_ocl_args *a, cl_uint v) { set_arg(a, sizeof v, &v, "a uint argument"); }
void dbk_ocl_arg_float(dbk_ocl_args *a, cl_float v) { set_arg(a, sizeof v, &v, "a float argument"); }
void dbk_ocl_arg_local(dbk_ocl_args *a, size_t bytes) { set_arg(a, bytes, NULL, "a local-memory argument"); }

dbk_status dbk_ocl_args_done(dbk_ocl_args *a, cl_uint dims, const size_t *global, const size_t *local) {
    if (a->err != CL_SUCCESS)
        return dbk_ocl_fail(a->be, a->err, "setting argument %u of kernel %s (%s)", a->next - 1, a->name, a->failed);
    dbk_ocl_launch *l = a->launch;
    for (cl_uint d = 0; d < dims; d++) {
        if (global[d] == 0) {
            /* An empty range: nothing to run. The launch is the last one appended. */
            clReleaseKernel(l->kernel);
            memset(l, 0, sizeof *l);
            a->list->count--;
            return DBK_OK;
        }
    }
    l->dims = dims;
    for (cl_uint d = 0; d < dims; d++) {
        size_t g = global[d];
        if (local && local[d]) {
            l->local[d] = local[d];
            g = (g + local[d] - 1) / local[d] * local[d];
        }
        l->global[d] = g;
    }
    return DBK_OK;
}

dbk_status dbk_ocl_range1(dbk_ocl_args *a, size_t n) {
    size_t local = dbk_ocl_wg_limit(a->be, a->launch->kernel, 256);
    return dbk_ocl_args_done(a, 1, &n, &local);
}

dbk_status dbk_ocl_range2(dbk_ocl_args *a, size_t n0, size_t n1) {
    size_t lim = dbk_ocl_wg_limit(a->be, a->launch->kernel, 256);
    size_t global[2] = {n0, n1}, local[2];
    local[0] = n0 < lim ? (n0 ? n0 : 1) : lim;
    local[1] = lim / local[0];
    if (local[1] > n1) local[1] = n1 ? n1 : 1;
    if (local[1] < 1) local[1] = 1;
    return dbk_ocl_args_done(a, 2, global, local);
}

size_t dbk_ocl_wg_limit(dbk_backend *be, cl_kernel k, size_t want) {
    dbk_ocl_ctx *c = dbk_ocl(be);
    size_t kmax = 0;
    if (clGetKernelWorkGroupInfo(k, c->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof kmax, &kmax, NULL) != CL_SUCCESS ||
        kmax == 0)
        kmax = c->max_wg;
    size_t lim = want;
    if (lim > kmax) lim = kmax;
    if (lim > c->max_wg) lim = c->max_wg;
    size_t p = 1;
    while (p * 2 <= lim) p *= 2;
    return p;
}

/* A recorded call with temp_bytes > 0 passes the context's temporary buffer: plain
 * CLBlastSgemm would create and release a buffer of that size inside every call on its
 * indirect path (host work a GPU driver charges per call). */
static dbk_status enqueue_blas(dbk_backend *be, const dbk_ocl_blas_call *b, cl_event *ev) {
    dbk_ocl_ctx *c = dbk_ocl(be);
    const CLBlastTranspose ta = b->trans_a ? CLBlastTransposeYes : CLBlastTransposeNo;
    const CLBlastTranspose tb = b->trans_b ? CLBlastTransposeYes : CLBlastTransposeNo;
    CLBlastStatusCode s;
    if (b->batch > 1) {
        s = CLBlastSgemmStridedBatched(CLBlastLayoutRowMajor, ta, tb, b->m, b->n, b->k, b->alpha, b->a, b->a_off, b->lda,
                                       b->a_stride, b->b, b->b_off, b->ldb, b->b_stride, b->beta, b->c, b->c_off,
                                       b->ldc, b->c_stride, b->batch, &c->queue, ev);
    } else if (b->temp_bytes > 0) {
        DBK_ASSERT(c->blas_temp && c->blas_temp_bytes >= b->temp_bytes);
        s = CLBlastSgemmWithTempBuffer(CLBlastLayoutRowMajor, ta, tb, b->m, b->n, b->k, b->alpha, b->a, b->a_off, b->lda,
                                       b->b, b->b_off, b->ldb, b->beta, b->c, b->c_off, b->ldc, &c->queue, ev,
                                       c->blas_temp);
    } else {
        s = CLBlastSgemm(CLBlastLayoutRowMajor, ta, tb, b->m, b->n, b->k, b->alpha, b->a, b->a_off, b->lda, b->b,
                         b->b_off, b->ldb, b->beta, b->c, b->c_off, b->ldc, &c->queue, ev);
    }
    if (s != CLBlastSuccess) {
        if (s > -1000) return dbk_ocl_fail(be, (cl_int)s, "CLBlastSgemm %zux%zux%zu", b->m, b->n, b->k);
        return dbk_set_error(DBK_ERR_DEVICE, "CLBlastSgemm %zux%zux%zu failed with CLBlast status %d on %s", b->m, b->n,
                             b->k, (int)s, be->info.name);
    }
    return DBK_OK;
}

dbk_status dbk_ocl_enqueue(dbk_backend *be, const dbk_ocl_launches *l, cl_event *events) {
    dbk_ocl_ctx *c = dbk_ocl(be);
    dbk_backend_counters *n = &be->tally.counts;
    for (int i = 0; i < l->count; i++) {
        const dbk_ocl_launch *x = &l->items[i];
        cl_event *ev = events ? &events[i] : NULL;
        n->launches++;
        n->device_bytes += x->bytes;
        if (x->kind == DBK_OCL_LAUNCH_CLBLAST_GEMM) {
            DBK_TRY(enqueue_blas(be, &x->blas, ev));
            continue;
        }
        cl_int err = clEnqueueNDRangeKernel(c->queue, x->kernel, x->dims, NULL, x->global, x->local[0] ? x->local : NULL,
                                            0, NULL, ev);
        if (err != CL_SUCCESS) {
            char name[128] = "?";
            clGetKernelInfo(x->kernel, CL_KERNEL_FUNCTION_NAME, sizeof name - 1, name, NULL);
            return dbk_ocl_fail(be, err, "enqueueing kernel %s (global %zux%zux%zu)", name, x->global[0],
                                x->dims > 1 ? x->global[1] : 1, x->dims > 2 ? x->global[2] : 1);
        }
    }
    return DBK_OK;
}

/* ---------------------------------------------------------------------------------- */
/* shared recorders                                                                    */

dbk_status dbk_ocl_fill_record(dbk_backend *be, dbk_ocl_launches *out, cl_mem mem, cl_uint off, cl_uint n, float v) {
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "fill", &a));
    dbk_ocl_arg_mem(&a, mem);
    dbk_ocl_arg_uint(&a, off);
    dbk_ocl_arg_float(&a, v);
    dbk_ocl_arg_int(&a, (cl_int)n);
    dbk_ocl_args_floats(&a, n);
    return dbk_ocl_range1(&a, n);
}
