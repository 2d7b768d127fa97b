/*
 * cpu_backend.c — the CPU reference backend: device info, host buffers, workspace, and the
 * op table (generated from op_list.h). The ops themselves live in one file per family
 * (conv.c, gemm.c, bn.c, ...; the family column of op_list.h).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cblas.h>

#include "backends/cpu/cpu_internal.h"
#include "core/alloc.h"
#include "core/timer.h"
#include "core/log.h"

/* OpenBLAS reports its build (version, core, threading); other CBLAS builds lack it. */
char *openblas_get_config(void) __attribute__((weak));
void openblas_set_num_threads(int num_threads) __attribute__((weak));

static void cpu_model_name(char *out, size_t cap) {
    snprintf(out, cap, "host CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "model name", 10)) {
            char *colon = strchr(line, ':');
            if (colon) {
                colon++;
                while (*colon == ' ') colon++;
                colon[strcspn(colon, "\n")] = '\0';
                snprintf(out, cap, "%s", colon);
            }
            break;
        }
    }
    fclose(f);
}

static int cpu_device_count(void) { return 1; }

static dbk_status cpu_device_info(int index, dbk_device_info *out) {
    (void)index;
    cpu_model_name(out->name, sizeof out->name);
    snprintf(out->vendor, sizeof out->vendor, "host");
    snprintf(out->driver, sizeof out->driver, "daybreak cpu reference, %s",
             openblas_get_config ? openblas_get_config() : "CBLAS");
    snprintf(out->api_version, sizeof out->api_version, "C11 + CBLAS");
    out->type = DBK_DEVICE_TYPE_CPU;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    out->compute_units = ncpu > 0 ? (int)ncpu : 1;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    out->global_mem_bytes = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
    out->max_alloc_bytes = 0; /* bounded by host memory only */
    out->local_mem_bytes = 0;
    out->fp16 = true;   /* f16 storage, widened to f32 in plain C (core/half.h) */
    out->fp16_missing[0] = '\0';
    snprintf(out->details, sizeof out->details, "threads: %d", out->compute_units);
    snprintf(out->memory, sizeof out->memory, "host memory");
    out->vendor_id = 0;
    out->has_uuid = false;
    return DBK_OK;
}

/* ---------------------------------------------------------------------------------- */

static void cpu_destroy(dbk_backend *be) {
    dbk_cpu_state *st = be->impl;
    if (!st) return;
    free(st->workspace);
    free(st->half_scratch);
    dbk_free(st);
}

static dbk_status cpu_buffer_alloc(dbk_backend *be, size_t nbytes, dbk_buffer *buf) {
    (void)be;
    /* 64-byte alignment for vector loads; a multiple of the alignment as C11 requires. */
    size_t rounded = (nbytes + 63) & ~(size_t)63;
    buf->impl = aligned_alloc(64, rounded ? rounded : 64);
    if (!buf->impl)
        return dbk_set_error(DBK_ERR_OUT_OF_DEVICE_MEMORY, "cpu backend: out of host memory allocating a %zu-byte buffer", nbytes);
    return DBK_OK;
}

static void cpu_buffer_free(dbk_backend *be, dbk_buffer *buf) {
    (void)be;
    free(buf->impl);
}

static dbk_status cpu_buffer_write(dbk_backend *be, dbk_buffer *dst, size_t off, const void *src, size_t n) {
    (void)be;
    memcpy((char *)dst->impl + off, src, n);
    return DBK_OK;
}

/* Reads and syncs wait for nothing here (every op has finished when run returns), but each is
 * counted as the sync it is on a device backend, so the CPU's counts are a step's shape. */
static dbk_status cpu_buffer_read(dbk_backend *be, const dbk_buffer *src, size_t off, void *dst, size_t n) {
    dbk_backend_tally_wait(&be->tally, 0.0);
    memcpy(dst, (const char *)src->impl + off, n);
    return DBK_OK;
}

static dbk_status cpu_sync(dbk_backend *be) {
    dbk_backend_tally_wait(&be->tally, 0.0);
    return DBK_OK;
}

static dbk_status grow_workspace(dbk_cpu_state *st, size_t nbytes) {
    if (nbytes <= st->workspace_bytes) return DBK_OK;
    float *p = aligned_alloc(64, (nbytes + 63) & ~(size_t)63);
    if (!p) return dbk_set_error(DBK_ERR_OUT_OF_HOST_MEMORY, "cpu backend: cannot allocate a %zu-byte workspace", nbytes);
    free(st->workspace);
    st->workspace = p;
    st->workspace_bytes = nbytes;
    return DBK_OK;
}

dbk_status dbk_cpu_workspace(dbk_backend *be, size_t nbytes, float **out) {
    dbk_cpu_state *st = be->impl;
    if (nbytes > st->workspace_bytes)
        dbk_log(DBK_LOG_LEVEL_DEBUG, "cpu workspace grows to %zu bytes outside prepare", nbytes);
    DBK_TRY(grow_workspace(st, nbytes));
    *out = st->workspace;
    return DBK_OK;
}

dbk_status dbk_cpu_half_scratch(dbk_backend *be, size_t nbytes) {
    dbk_cpu_state *st = be->impl;
    if (nbytes <= st->half_scratch_bytes) return DBK_OK;
    float *p = aligned_alloc(64, (nbytes + 63) & ~(size_t)63);
    if (!p) return dbk_set_error(DBK_ERR_OUT_OF_HOST_MEMORY, "cpu backend: cannot allocate %zu bytes for f16 operands", nbytes);
    free(st->half_scratch);
    st->half_scratch = p;
    st->half_scratch_bytes = nbytes;
    return DBK_OK;
}

static dbk_status cpu_prepare(dbk_backend *be, const dbk_op_desc *op) {
    DBK_TRY(dbk_cpu_half_scratch(be, dbk_cpu_widened_bytes(op)));
    return grow_workspace(be->impl, dbk_cpu_conv_workspace_bytes(op));
}

/* dbk_cpu_<name> for every op of op_list.h: the reference has them all. */
#define CPU_ENTRY_(E, name, ...) [DBK_OP_##E] = dbk_cpu_##name,
static const dbk_op_fn cpu_ops[DBK_OP_COUNT] = {DBK_OP_LIST(CPU_ENTRY_)};
#undef CPU_ENTRY_

/* One launch per op moving its tensors once; the time it computes is the device's (host
 * time per step = the step's time outside it, train/session.h). */
static dbk_status cpu_run_op(dbk_backend *be, const dbk_op_desc *op) {
    const double t0 = dbk_time_now();
    dbk_status st = dbk_cpu_widens(op) ? dbk_cpu_run_widened(be, op, cpu_ops[op->op]) : cpu_ops[op->op](be, op);
    be->tally.counts.launches++;
    be->tally.counts.device_bytes += (uint64_t)dbk_op_bytes(op);
    be->tally.counts.blocked_seconds += dbk_time_now() - t0;
    return st;
}

static const dbk_backend_vtable cpu_vtable = {
    .name         = "cpu",
    .destroy      = cpu_destroy,
    .buffer_alloc = cpu_buffer_alloc,
    .buffer_free  = cpu_buffer_free,
    .buffer_write = cpu_buffer_write,
    .buffer_read  = cpu_buffer_read,
    .sync         = cpu_sync,
    .prepare      = cpu_prepare,
    .run_op       = cpu_run_op,
};

static dbk_status cpu_create(int index, dbk_backend *be) {
    dbk_cpu_state *st = dbk_calloc(1, sizeof *st);
    if (!st) return DBK_ERR_OUT_OF_HOST_MEMORY;
#ifdef _OPENMP
    /* With OpenMP the backend parallelises over images and calls single-threaded SGEMMs
     * from its threads (conv.c). OpenBLAS's own pthreads would spin against the OpenMP
     * team on every hand-over and oversubscribe the cores, so OpenBLAS runs on one thread.
     * This is process-wide, but the CPU backend is the only BLAS user in daybreak. */
    if (openblas_set_num_threads) openblas_set_num_threads(1);
#endif
    be->vt = &cpu_vtable;
    be->impl = st;
    return cpu_device_info(index, &be->info);
}

const dbk_backend_entry dbk_cpu_backend_entry = {
    .kind         = DBK_BACKEND_KIND_CPU,
    .device_count = cpu_device_count,
    .device_info  = cpu_device_info,
    .create       = cpu_create,
};
