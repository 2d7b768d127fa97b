/*
 * ocl_record.c — the OpenCL backend's op dispatch (the recorder table generated from
 * op_list.h), dbk_backend_run, and the fast path of DESIGN.md decision 4: programs.
 * It is the upper layer: it calls the recorders (ocl_ops_*.c, ocl_blas.c), which write into
 * launch lists (ocl_launch.c), and nothing below calls back into it.
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

#include "backends/opencl/ocl_internal.h"
#include "core/alloc.h"
#include "core/log.h"

/* ---------------------------------------------------------------------------------- */
/* ops                                                                                */

/* Every op's recorder, from op_list.h: dbk_ocl_record_<name> (launch OWN), its family's
 * dbk_ocl_record_<family> (FAMILY) or the generic elementwise one (EW); NULL where the where
 * column says OpenCL lacks the op. */
#define OCL_ENTRY_(E, name, family, src, dst, params, check, fl, by, grad, launch, where) \
    [DBK_OP_##E] = DBK_OP_ON(OCL, where,                                                        \
                             DBK_OP_LAUNCH(launch, dbk_ocl_record_##name, dbk_ocl_record_##family,     \
                                           dbk_ocl_record_eltwise)),
static const dbk_ocl_record_fn recorders[DBK_OP_COUNT] = {DBK_OP_LIST(OCL_ENTRY_)};
#undef OCL_ENTRY_

static dbk_status record_op(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    return recorders[op->op](be, op, out);
}

bool dbk_ocl_op_supported(const dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    return (unsigned)op->op < DBK_OP_COUNT && recorders[op->op] != NULL;
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
    dbk_status st = record_op(be, op, &l);
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

/* dbk_program_record_each's step: op i's launches, appended. */
static dbk_status record_program_op(dbk_backend *be, const dbk_op_desc *op, int i, void *ctx) {
    ocl_recording *r = ctx;
    r->first[i] = r->launches.count;
    return record_op(be, op, &r->launches);
}

dbk_status dbk_ocl_program_record(dbk_backend *be, dbk_program *prog) {
    ocl_recording *r = dbk_calloc(1, sizeof *r);
    if (!r) return dbk_set_error(DBK_ERR_OUT_OF_HOST_MEMORY, "out of host memory recording a program");
    r->first = calloc((size_t)prog->count + 1, sizeof *r->first);
    dbk_status st = r->first ? DBK_OK : DBK_ERR_OUT_OF_HOST_MEMORY;
    if (st == DBK_OK) st = dbk_program_record_each(be, prog, record_program_op, r);
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

void dbk_ocl_program_op_launches(const dbk_backend *be, const dbk_program *prog, int *launches) {
    (void)be;
    const ocl_recording *r = prog->impl;
    for (int i = 0; i < prog->count; i++) launches[i] = r->first[i + 1] - r->first[i];
}

dbk_status dbk_ocl_program_run(dbk_backend *be, dbk_program *prog) {
    const ocl_recording *r = prog->impl;
    return dbk_ocl_enqueue(be, &r->launches, NULL);
}

/* DBK_OCL_KERNEL_TIMES=<text>: after a timed run, one stderr line per kernel of each op whose
 * label contains <text> (launches, summed ms), the breakdown behind an op's --profile time
 * (docs/winograd.md uses it for the Winograd pipeline). */
static void print_kernel_times(const dbk_program *prog, const ocl_recording *r, int op, const char *filter) {
    const char *label = prog->ops[op].label ? prog->ops[op].label : dbk_op_name(prog->ops[op].op);
    if (!strstr(label, filter)) return;
    enum { MAX_NAMES = 16 };
    char names[MAX_NAMES][64];
    double ms[MAX_NAMES];
    int launches[MAX_NAMES], used = 0;
    for (int j = r->first[op]; j < r->first[op + 1]; j++) {
        cl_ulong t0 = 0, t1 = 0;
        char name[64] = "(clblast)";
        if (!r->events[j]) continue;
        clGetEventProfilingInfo(r->events[j], CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
        clGetEventProfilingInfo(r->events[j], CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
        if (r->launches.items[j].kind == DBK_OCL_LAUNCH_KERNEL)
            clGetKernelInfo(r->launches.items[j].kernel, CL_KERNEL_FUNCTION_NAME, sizeof name, name, NULL);
        int i = 0;
        while (i < used && strcmp(names[i], name) != 0) i++;
        if (i == used) {
            if (used == MAX_NAMES) continue;
            snprintf(names[used], sizeof names[used], "%s", name);
            ms[used] = 0.0;
            launches[used++] = 0;
        }
        launches[i]++;
        if (t1 > t0) ms[i] += (double)(t1 - t0) * 1e-6;
    }
    for (int i = 0; i < used; i++)
        fprintf(stderr, "kernel-times\t%s\t%s\t%d\t%.2f\n", label, names[i], launches[i], ms[i]);
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
    const char *filter = getenv("DBK_OCL_KERNEL_TIMES");
    for (int i = 0; st == DBK_OK && filter && i < prog->count; i++) print_kernel_times(prog, r, i, filter);
    for (int j = 0; j < n; j++)
        if (r->events[j]) clReleaseEvent(r->events[j]);
    return st;
}
