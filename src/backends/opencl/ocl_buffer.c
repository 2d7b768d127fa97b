/*
 * ocl_buffer.c — OpenCL buffers, blocking host <-> device copies, synchronisation and the
 * shared conv workspace.
 *
 * Allocation is forced at create time: many drivers (PoCL, NVIDIA) only reserve memory when a
 * buffer is first used, so clCreateBuffer "succeeds" and the failure surfaces later inside a
 * training step, where it can no longer be tied to what was being allocated. A 4-byte blocking
 * write into the last word makes the driver back the buffer now, and its failure is reported
 * as DBK_ERR_OUT_OF_DEVICE_MEMORY naming the size.
 *
 * Copies go through the one in-order queue, so they are ordered after every op enqueued
 * before them (backend.h). Reads and large writes block. Small writes (at most
 * DBK_OCL_STAGING_BYTES: the learning rate and augmentation state written before every step)
 * are copied into a staging slot and enqueued without waiting: a blocking write would wait for
 * the whole queue, so the host would enqueue step k+1 only after the device finished step k,
 * and the device would idle for the time it takes to enqueue a step.
 */
#include <string.h>

#include "backends/opencl/ocl_internal.h"
#include "core/log.h"
#include "core/timer.h"

dbk_status dbk_ocl_buffer_alloc(dbk_backend *be, size_t nbytes, dbk_buffer *buf) {
    dbk_ocl_ctx *c = dbk_ocl(be);
    size_t n = nbytes ? nbytes : 4;
    cl_int err;
    cl_mem m = clCreateBuffer(c->context, CL_MEM_READ_WRITE, n, NULL, &err);
    if (!m) return dbk_ocl_fail(be, err, "allocating a buffer of %zu bytes", nbytes);
    const uint32_t zero = 0;
    size_t probe = n >= 4 ? 4 : n;
    err = clEnqueueWriteBuffer(c->queue, m, CL_TRUE, n - probe, probe, &zero, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        clReleaseMemObject(m);
        return dbk_ocl_fail(be, err, "allocating a buffer of %zu bytes (first write)", nbytes);
    }
    buf->impl = m;
    return DBK_OK;
}

void dbk_ocl_buffer_free(dbk_backend *be, dbk_buffer *buf) {
    (void)be;
    if (buf->impl) clReleaseMemObject((cl_mem)buf->impl);
    buf->impl = NULL;
}

/* A free staging slot: the next one in the ring, after its earlier write has completed. */
static dbk_status staging_slot(dbk_backend *be, dbk_ocl_staging **out) {
    dbk_ocl_ctx *c = dbk_ocl(be);
    dbk_ocl_staging *slot = &c->staging[c->staging_next];
    c->staging_next = (c->staging_next + 1) % DBK_OCL_STAGING_SLOTS;
    if (slot->done) {
        cl_int status = CL_QUEUED;
        clGetEventInfo(slot->done, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);
        const double t0 = dbk_time_now();
        cl_int err = clWaitForEvents(1, &slot->done);
        /* a write DBK_OCL_STAGING_SLOTS writes old: back-pressure, not a sync */
        if (status != CL_COMPLETE) dbk_backend_tally_throttle(&be->tally, dbk_time_now() - t0);
        clReleaseEvent(slot->done);
        slot->done = NULL;
        if (err != CL_SUCCESS) return dbk_ocl_fail(be, err, "waiting for an earlier small write");
    }
    *out = slot;
    return DBK_OK;
}

dbk_status dbk_ocl_buffer_write(dbk_backend *be, dbk_buffer *dst, size_t off, const void *src, size_t n) {
    if (n == 0) return DBK_OK;
    cl_command_queue q = dbk_ocl(be)->queue;
    cl_int err;
    if (n <= DBK_OCL_STAGING_BYTES) {
        dbk_ocl_staging *slot = NULL;
        DBK_TRY(staging_slot(be, &slot));
        memcpy(slot->data, src, n);
        err = clEnqueueWriteBuffer(q, (cl_mem)dst->impl, CL_FALSE, off, n, slot->data, 0, NULL, &slot->done);
    } else {
        const double t0 = dbk_time_now();
        err = clEnqueueWriteBuffer(q, (cl_mem)dst->impl, CL_TRUE, off, n, src, 0, NULL, NULL);
        dbk_backend_tally_wait(&be->tally, dbk_time_now() - t0);
    }
    if (err != CL_SUCCESS) return dbk_ocl_fail(be, err, "writing %zu bytes at offset %zu", n, off);
    return DBK_OK;
}

void dbk_ocl_staging_release(dbk_ocl_ctx *c) {
    for (int i = 0; i < DBK_OCL_STAGING_SLOTS; i++) {
        if (c->staging[i].done) clReleaseEvent(c->staging[i].done);
        c->staging[i].done = NULL;
    }
}

dbk_status dbk_ocl_buffer_read(dbk_backend *be, const dbk_buffer *src, size_t off, void *dst, size_t n) {
    if (n == 0) return DBK_OK;
    const double t0 = dbk_time_now();
    cl_int err = clEnqueueReadBuffer(dbk_ocl(be)->queue, (cl_mem)src->impl, CL_TRUE, off, n, dst, 0, NULL, NULL);
    dbk_backend_tally_wait(&be->tally, dbk_time_now() - t0);
    if (err != CL_SUCCESS) return dbk_ocl_fail(be, err, "reading %zu bytes at offset %zu", n, off);
    return DBK_OK;
}

dbk_status dbk_ocl_sync(dbk_backend *be) {
    const double t0 = dbk_time_now();
    cl_int err = clFinish(dbk_ocl(be)->queue);
    dbk_backend_tally_wait(&be->tally, dbk_time_now() - t0);
    if (err != CL_SUCCESS) return dbk_ocl_fail(be, err, "waiting for the queue");
    return DBK_OK;
}

/* Creates or grows *mem to at least nbytes (what: for the log and errors). */
static dbk_status grow_buffer(dbk_backend *be, cl_mem *mem, size_t *bytes, size_t nbytes, const char *what) {
    dbk_ocl_ctx *c = dbk_ocl(be);
    if (nbytes <= *bytes) return DBK_OK;
    if (c->max_alloc && nbytes > c->max_alloc)
        return dbk_set_error(DBK_ERR_OUT_OF_DEVICE_MEMORY, "OpenCL %s of %zu bytes exceeds the max allocation of %llu bytes of %s",
                             what, nbytes, (unsigned long long)c->max_alloc, be->info.name);
    dbk_buffer tmp = {.be = be, .nbytes = nbytes};
    dbk_status st = dbk_ocl_buffer_alloc(be, nbytes, &tmp);
    if (st != DBK_OK) return st;
    if (*mem) clReleaseMemObject(*mem);
    *mem = (cl_mem)tmp.impl;
    *bytes = nbytes;
    dbk_log(DBK_LOG_LEVEL_DEBUG, "opencl %s: %.1f MiB", what, (double)nbytes / 1048576.0);
    return DBK_OK;
}

/* Programs recorded earlier keep their own reference to the workspace they were recorded
 * with (ocl_record.c), so growing it here never leaves a recording with a dangling buffer. */
dbk_status dbk_ocl_reserve_workspace(dbk_backend *be, size_t nbytes) {
    dbk_ocl_ctx *c = dbk_ocl(be);
    return grow_buffer(be, &c->workspace, &c->workspace_bytes, nbytes, "workspace");
}

/* CLBlast calls take the temporary buffer when they are enqueued (ocl_launch.c), not when
 * they are recorded, so every recorded call gets the current one, never smaller than it
 * asked for; the old one lives on until the commands already enqueued with it complete. */
dbk_status dbk_ocl_reserve_blas_temp(dbk_backend *be, size_t nbytes) {
    dbk_ocl_ctx *c = dbk_ocl(be);
    return grow_buffer(be, &c->blas_temp, &c->blas_temp_bytes, nbytes, "CLBlast temporary buffer");
}
