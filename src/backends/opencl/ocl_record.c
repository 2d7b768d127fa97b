/*
 * ocl_record.c — ops lowered to launch lists, and the fast path of DESIGN.md decision 4.
 *
 * An op is "recorded" into launches (ocl_internal.h): kernels created with their arguments
 * set, or stored CLBlast calls. dbk_backend_run records one op, enqueues it and frees the
 * launches (kernel objects are reference counted, so releasing after enqueue is safe).
 * A dbk_program records every op once; running it re-enqueues the same launches on the one
 * in-order queue: no argument is set and nothing is read back during a step, the per-step
 * values (learning rate, augmentation state) being in device buffers the host writes.
 *
 * Timing: dbk_program_run_timed enqueues with an event per launch (the queue has
 * CL_QUEUE_PROFILING_ENABLE), waits once, and adds each op's summed kernel time
 * (CL_PROFILING_COMMAND_END - START of its launches). A CLBlast call reports the event of its
 * last kernel only, so CLBlast GEMMs that pad or transpose first are slightly under-timed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <clblast_c.h>

#include "backends/opencl/ocl_internal.h"
#include "core/alloc.h"
#include "core/log.h"

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

static dbk_status enqueue_blas(dbk_backend *be, const dbk_ocl_blas_call *b, cl_event *ev) {
    dbk_ocl_ctx *c = dbk_ocl(be);
    CLBlastStatusCode s = CLBlastSgemm(CLBlastLayoutRowMajor, b->trans_a ? CLBlastTransposeYes : CLBlastTransposeNo,
                                       b->trans_b ? CLBlastTransposeYes : CLBlastTransposeNo, b->m, b->n, b->k, b->alpha,
                                       b->a, b->a_off, b->lda, b->b, b->b_off, b->ldb, b->beta, b->c, b->c_off, b->ldc,
                                       &c->queue, ev);
    if (s != CLBlastSuccess) {
        if (s > -1000) return dbk_ocl_fail(be, (cl_int)s, "CLBlastSgemm %zux%zux%zu", b->m, b->n, b->k);
        return dbk_set_error(DBK_ERR_DEVICE, "CLBlastSgemm %zux%zux%zu failed with CLBlast status %d on %s", b->m, b->n,
                             b->k, (int)s, be->info.name);
    }
    return DBK_OK;
}

dbk_status dbk_ocl_enqueue(dbk_backend *be, const dbk_ocl_launches *l, cl_event *events) {
    dbk_ocl_ctx *c = dbk_ocl(be);
    for (int i = 0; i < l->count; i++) {
        const dbk_ocl_launch *x = &l->items[i];
        cl_event *ev = events ? &events[i] : NULL;
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
/* ops                                                                                */

static const dbk_ocl_record_fn kRecorders[DBK_OP_COUNT] = {
    [DBK_OP_CONV2D_FWD]          = dbk_ocl_record_conv2d_fwd,
    [DBK_OP_CONV2D_BWD_DATA]     = dbk_ocl_record_conv2d_bwd_data,
    [DBK_OP_CONV2D_BWD_FILTER]   = dbk_ocl_record_conv2d_bwd_filter,
    [DBK_OP_GEMM]                = dbk_ocl_record_gemm,
    [DBK_OP_BATCHNORM_FWD_TRAIN] = dbk_ocl_record_bn_fwd_train,
    [DBK_OP_BATCHNORM_FWD_INFER] = dbk_ocl_record_bn_fwd_infer,
    [DBK_OP_BATCHNORM_BWD]       = dbk_ocl_record_bn_bwd,
    [DBK_OP_RELU_FWD]            = dbk_ocl_record_relu_fwd,
    [DBK_OP_RELU_BWD]            = dbk_ocl_record_relu_bwd,
    [DBK_OP_MAXPOOL_FWD]         = dbk_ocl_record_maxpool_fwd,
    [DBK_OP_MAXPOOL_BWD]         = dbk_ocl_record_maxpool_bwd,
    [DBK_OP_ADD]                 = dbk_ocl_record_add,
    [DBK_OP_SCALE]               = dbk_ocl_record_scale,
    [DBK_OP_SOFTMAX_XENT_FWD]    = dbk_ocl_record_xent_fwd,
    [DBK_OP_SOFTMAX_XENT_BWD]    = dbk_ocl_record_xent_bwd,
    [DBK_OP_ACCURACY]            = dbk_ocl_record_accuracy,
    [DBK_OP_SGD_MOMENTUM_UPDATE] = dbk_ocl_record_sgd,
    [DBK_OP_AUGMENT]             = dbk_ocl_record_augment,
    [DBK_OP_FILL]                = dbk_ocl_record_fill,
    [DBK_OP_COPY]                = dbk_ocl_record_copy,
};

dbk_status dbk_ocl_record_op(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    return kRecorders[op->op](be, op, out);
}

bool dbk_ocl_op_supported(const dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    return (unsigned)op->op < DBK_OP_COUNT && kRecorders[op->op] != NULL;
}

/* Kernels index tensors with 32-bit element offsets and 31-bit element counts. */
static dbk_status check_views(const dbk_op_desc *op) {
    const dbk_tensor *all[2] = {op->src, op->dst};
    const int counts[2] = {DBK_OP_MAX_SRC, DBK_OP_MAX_DST};
    for (int side = 0; side < 2; side++) {
        for (int i = 0; i < counts[side]; i++) {
            const dbk_tensor *t = &all[side][i];
            if (!t->ndim) continue;
            size_t es = dbk_dtype_size(t->dtype);
            if (t->offset % es)
                return dbk_set_error(DBK_ERR_UNSUPPORTED, "%s: %s%d byte offset %zu is not a multiple of its %zu-byte elements",
                                     dbk_op_name(op->op), side ? "dst" : "src", i, t->offset, es);
            int64_t n = dbk_tensor_numel(t);
            if (n > INT32_MAX || (uint64_t)(t->offset / es) + (uint64_t)n > UINT32_MAX)
                return dbk_set_error(DBK_ERR_UNSUPPORTED, "%s: %s%d is too large for 32-bit kernel indexing",
                                     dbk_op_name(op->op), side ? "dst" : "src", i);
        }
    }
    return DBK_OK;
}

dbk_status dbk_ocl_prepare(dbk_backend *be, const dbk_op_desc *op) {
    DBK_TRY(check_views(op));
    return dbk_ocl_reserve_workspace(be, dbk_ocl_conv_workspace_bytes(be, op));
}

dbk_status dbk_ocl_run_op(dbk_backend *be, const dbk_op_desc *op) {
    DBK_TRY(dbk_ocl_prepare(be, op));
    dbk_ocl_launches l = {0};
    dbk_status st = dbk_ocl_record_op(be, op, &l);
    if (st == DBK_OK) st = dbk_ocl_enqueue(be, &l, NULL);
    dbk_ocl_launches_free(&l);
    return st;
}

/* ---------------------------------------------------------------------------------- */
/* programs                                                                           */

typedef struct ocl_recording {
    dbk_ocl_launches launches;
    int             *first;       /* (count + 1): launches of op i are [first[i], first[i+1]) */
    cl_mem           workspace;   /* retained: the workspace the launches were recorded with */
    cl_event        *events;      /* (launch count), for run_timed */
} ocl_recording;

static void recording_free(ocl_recording *r) {
    if (!r) return;
    dbk_ocl_launches_free(&r->launches);
    if (r->workspace) clReleaseMemObject(r->workspace);
    free(r->first);
    free(r->events);
    dbk_free(r);
}

dbk_status dbk_ocl_program_record(dbk_backend *be, dbk_program *prog) {
    ocl_recording *r = dbk_calloc(1, sizeof *r);
    if (!r) return dbk_set_error(DBK_ERR_OUT_OF_HOST_MEMORY, "out of host memory recording a program");
    r->first = calloc((size_t)prog->count + 1, sizeof *r->first);
    dbk_status st = r->first ? DBK_OK : DBK_ERR_OUT_OF_HOST_MEMORY;
    for (int i = 0; st == DBK_OK && i < prog->count; i++) {
        r->first[i] = r->launches.count;
        st = dbk_ocl_record_op(be, &prog->ops[i], &r->launches);
        if (st != DBK_OK) {
            char reason[700];
            snprintf(reason, sizeof reason, "%s", dbk_last_error());
            st = dbk_set_error(st, "recording %s (%s): %s", prog->ops[i].label ? prog->ops[i].label : "op",
                               dbk_op_name(prog->ops[i].op), reason);
        }
    }
    if (st == DBK_OK) {
        r->first[prog->count] = r->launches.count;
        r->events = calloc((size_t)r->launches.count + 1, sizeof *r->events);
        if (!r->events) st = DBK_ERR_OUT_OF_HOST_MEMORY;
    }
    if (st == DBK_OK && dbk_ocl(be)->workspace) {
        r->workspace = dbk_ocl(be)->workspace;
        clRetainMemObject(r->workspace);
    }
    if (st != DBK_OK) {
        recording_free(r);
        return st;
    }
    dbk_log(DBK_LOG_LEVEL_DEBUG, "opencl program: %d ops, %d launches", prog->count, r->launches.count);
    prog->impl = r;
    return DBK_OK;
}

void dbk_ocl_program_release(dbk_backend *be, dbk_program *prog) {
    (void)be;
    recording_free(prog->impl);
    prog->impl = NULL;
}

dbk_status dbk_ocl_program_run(dbk_backend *be, dbk_program *prog) {
    const ocl_recording *r = prog->impl;
    return dbk_ocl_enqueue(be, &r->launches, NULL);
}

dbk_status dbk_ocl_program_run_timed(dbk_backend *be, dbk_program *prog, double *op_seconds) {
    ocl_recording *r = prog->impl;
    const int n = r->launches.count;
    memset(r->events, 0, sizeof *r->events * (size_t)n);
    dbk_status st = dbk_ocl_enqueue(be, &r->launches, r->events);
    if (st == DBK_OK) st = dbk_ocl_sync(be);
    for (int i = 0; st == DBK_OK && i < prog->count; i++) {
        for (int j = r->first[i]; j < r->first[i + 1]; j++) {
            if (!r->events[j]) continue;
            cl_ulong t0 = 0, t1 = 0;
            cl_int err = clGetEventProfilingInfo(r->events[j], CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
            if (err == CL_SUCCESS)
                err = clGetEventProfilingInfo(r->events[j], CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
            if (err != CL_SUCCESS) {
                st = dbk_ocl_fail(be, err, "reading the profiling times of %s",
                                  prog->ops[i].label ? prog->ops[i].label : dbk_op_name(prog->ops[i].op));
                break;
            }
            if (t1 > t0) op_seconds[i] += (double)(t1 - t0) * 1e-9;
        }
    }
    for (int j = 0; j < n; j++)
        if (r->events[j]) clReleaseEvent(r->events[j]);
    return st;
}
