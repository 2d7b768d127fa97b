/*
 * backend.c — the backend-independent half of backend.h: buffer bookkeeping, bounds and
 * contract checks, and dispatch through the vtable.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_impl.h"
#include "core/alloc.h"
#include "core/timer.h"

void dbk_backend_destroy(dbk_backend *be) {
    if (!be) return;
    if (be->vt && be->vt->destroy) be->vt->destroy(be);
    free(be);
}

dbk_backend_kind dbk_backend_get_kind(const dbk_backend *be) { return be->kind; }
const dbk_device_info *dbk_backend_get_info(const dbk_backend *be) { return &be->info; }

dbk_status dbk_buffer_create(dbk_backend *be, size_t nbytes, dbk_buffer **out) {
    *out = NULL;
    if (be->info.max_alloc_bytes && nbytes > be->info.max_alloc_bytes)
        return dbk_set_error(DBK_ERR_INVALID_ARG,
                             "buffer of %zu bytes exceeds the device's max allocation of %llu bytes (%s)",
                             nbytes, (unsigned long long)be->info.max_alloc_bytes, be->info.name);
    dbk_buffer *buf = dbk_calloc(1, sizeof *buf);
    if (!buf) return DBK_ERR_OUT_OF_HOST_MEMORY;
    buf->be = be;
    buf->nbytes = nbytes;
    dbk_status s = be->vt->buffer_alloc(be, nbytes, buf);
    if (s != DBK_OK) {
        dbk_free(buf);
        return s;
    }
    *out = buf;
    return DBK_OK;
}

void dbk_buffer_destroy(dbk_buffer *buf) {
    if (!buf) return;
    buf->be->vt->buffer_free(buf->be, buf);
    dbk_free(buf);
}

size_t dbk_buffer_size(const dbk_buffer *buf) { return buf->nbytes; }

static dbk_status check_range(const dbk_buffer *buf, size_t offset, size_t nbytes, const char *what) {
    if (offset > buf->nbytes || nbytes > buf->nbytes - offset)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "%s of %zu bytes at offset %zu is outside a buffer of %zu bytes",
                             what, nbytes, offset, buf->nbytes);
    return DBK_OK;
}

dbk_status dbk_buffer_write(dbk_buffer *dst, size_t offset, const void *src, size_t nbytes) {
    DBK_TRY(check_range(dst, offset, nbytes, "buffer write"));
    dst->be->tally.counts.host_bytes += nbytes;
    return dst->be->vt->buffer_write(dst->be, dst, offset, src, nbytes);
}

dbk_status dbk_buffer_read(const dbk_buffer *src, size_t offset, void *dst, size_t nbytes) {
    DBK_TRY(check_range(src, offset, nbytes, "buffer read"));
    src->be->tally.counts.host_bytes += nbytes;
    return src->be->vt->buffer_read(src->be, src, offset, dst, nbytes);
}

dbk_status dbk_tensor_write(const dbk_tensor *t, const void *src) {
    return dbk_buffer_write(t->buf, t->offset, src, dbk_tensor_nbytes(t));
}

dbk_status dbk_tensor_read(const dbk_tensor *t, void *dst) {
    return dbk_buffer_read(t->buf, t->offset, dst, dbk_tensor_nbytes(t));
}

/* Every tensor of the descriptor lies inside its buffer, and the buffer belongs to `be`. */
static dbk_status check_tensors(const dbk_backend *be, const dbk_op_desc *op) {
    const dbk_tensor *all[2] = {op->src, op->dst};
    const int counts[2] = {DBK_OP_MAX_SRC, DBK_OP_MAX_DST};
    for (int side = 0; side < 2; side++) {
        for (int i = 0; i < counts[side]; i++) {
            const dbk_tensor *t = &all[side][i];
            if (t->ndim == 0) continue;
            if (!t->buf)
                return dbk_set_error(DBK_ERR_INVALID_ARG, "%s: %s%d has no buffer",
                                     dbk_op_name(op->op), side ? "dst" : "src", i);
            if (t->buf->be != be)
                return dbk_set_error(DBK_ERR_INVALID_ARG, "%s: %s%d lives on another backend",
                                     dbk_op_name(op->op), side ? "dst" : "src", i);
            size_t n = dbk_tensor_nbytes(t);
            if (t->offset > t->buf->nbytes || n > t->buf->nbytes - t->offset)
                return dbk_set_error(DBK_ERR_INVALID_ARG,
                                     "%s: %s%d (%zu bytes at offset %zu) overruns its %zu-byte buffer",
                                     dbk_op_name(op->op), side ? "dst" : "src", i, n, t->offset,
                                     t->buf->nbytes);
        }
    }
    return DBK_OK;
}

bool dbk_backend_has_op(const dbk_backend *be, dbk_op op) {
    const dbk_op_info *in = dbk_op_get_info(op);
    if (!in) return false;
    switch (be->kind) {
    case DBK_BACKEND_KIND_OPENCL:
        return in->where == DBK_OP_WHERE_ALL || in->where == DBK_OP_WHERE_NO_VK;
    case DBK_BACKEND_KIND_VULKAN:
        return in->where == DBK_OP_WHERE_ALL || in->where == DBK_OP_WHERE_NO_OCL;
    case DBK_BACKEND_KIND_CPU:
    case DBK_BACKEND_KIND_COUNT:
        break;
    }
    return true;
}

const char *dbk_backend_op_algorithm(const dbk_backend *be, const dbk_op_desc *op) {
    if ((unsigned)op->op >= DBK_OP_COUNT || !be->vt->op_algorithm) return NULL;
    return be->vt->op_algorithm(be, op);
}

double dbk_algorithm_multiply_add_saving(const char *algorithm) {
    if (strstr(algorithm, "F(4x4,3x3)")) return 4.0;   /* 36 multiplies per 4x4 tile instead of 144 */
    if (strstr(algorithm, "F(2x2,3x3)")) return 2.25;  /* 16 per 2x2 tile instead of 36 */
    return 1.0;
}

static bool has_f16_tensor(const dbk_op_desc *op) {
    for (int i = 0; i < DBK_OP_MAX_SRC; i++)
        if (op->src[i].ndim && op->src[i].dtype == DBK_DTYPE_F16) return true;
    for (int i = 0; i < DBK_OP_MAX_DST; i++)
        if (op->dst[i].ndim && op->dst[i].dtype == DBK_DTYPE_F16) return true;
    return false;
}

bool dbk_backend_supports(const dbk_backend *be, const dbk_op_desc *op) {
    if ((unsigned)op->op >= DBK_OP_COUNT) return false;
    if (be->info.fp16_missing[0] && has_f16_tensor(op)) return false;
    return be->vt->op_supported ? be->vt->op_supported(be, op) : true;
}

dbk_status dbk_backend_prepare(dbk_backend *be, const dbk_op_desc *op) {
    DBK_TRY(dbk_op_validate(op));
    DBK_TRY(check_tensors(be, op));
    if (!dbk_backend_supports(be, op))
        return dbk_set_error(DBK_ERR_UNSUPPORTED, "backend %s (%s) does not support %s%s%s",
                             be->vt->name, be->info.name, dbk_op_name(op->op),
                             op->label ? " for " : "", op->label ? op->label : "");
    return be->vt->prepare ? be->vt->prepare(be, op) : DBK_OK;
}

dbk_status dbk_backend_run(dbk_backend *be, const dbk_op_desc *op) {
    DBK_TRY(dbk_op_validate(op));
    DBK_TRY(check_tensors(be, op));
    if (!dbk_backend_supports(be, op))
        return dbk_set_error(DBK_ERR_UNSUPPORTED, "backend %s (%s) does not support %s",
                             be->vt->name, be->info.name, dbk_op_name(op->op));
    return be->vt->run_op(be, op);
}

dbk_status dbk_backend_sync(dbk_backend *be) { return be->vt->sync(be); }

void dbk_backend_get_counters(const dbk_backend *be, dbk_backend_counters *out) { *out = be->tally.counts; }

void dbk_backend_count_syncs(dbk_backend *be, bool on) { be->tally.syncs_off = !on; }

void dbk_backend_tally_wait(dbk_backend_tally *t, double seconds) {
    if (!t->syncs_off) t->counts.syncs++;
    t->counts.blocked_seconds += seconds;
}

void dbk_backend_tally_throttle(dbk_backend_tally *t, double seconds) { t->counts.blocked_seconds += seconds; }

/* ---------------------------------------------------------------------------------- */
/* programs                                                                           */

dbk_status dbk_program_create(dbk_backend *be, const dbk_op_desc *ops, int count, dbk_program **out) {
    *out = NULL;
    for (int i = 0; i < count; i++) DBK_TRY(dbk_backend_prepare(be, &ops[i]));
    dbk_program *p = dbk_calloc(1, sizeof *p);
    if (!p) return dbk_set_error(DBK_ERR_OUT_OF_HOST_MEMORY, "out of host memory creating a program");
    p->be = be;
    p->count = count;
    p->ops = dbk_malloc(sizeof *p->ops * (size_t)(count > 0 ? count : 1));
    if (!p->ops) {
        dbk_free(p);
        return dbk_set_error(DBK_ERR_OUT_OF_HOST_MEMORY, "out of host memory creating a program");
    }
    if (count) memcpy(p->ops, ops, sizeof *p->ops * (size_t)count);
    if (be->vt->program_record) {
        dbk_status st = be->vt->program_record(be, p);
        if (st != DBK_OK) {
            dbk_free(p->ops);
            dbk_free(p);
            return st;
        }
    }
    *out = p;
    return DBK_OK;
}

void dbk_program_destroy(dbk_program *p) {
    if (!p) return;
    if (p->impl && p->be->vt->program_release) p->be->vt->program_release(p->be, p);
    dbk_free(p->ops);
    dbk_free(p);
}

/* Names the failing op of a program in the error message ("<doing> <label> (<op>): <reason>"). */
static dbk_status program_op_failed(const dbk_op_desc *op, dbk_status st, const char *doing) {
    char reason[800];
    snprintf(reason, sizeof reason, "%s", dbk_last_error());
    return dbk_set_error(st, "%s%s (%s): %s", doing, op->label ? op->label : "op", dbk_op_name(op->op), reason);
}

dbk_status dbk_program_record_each(dbk_backend *be, const dbk_program *prog, dbk_program_record_op_fn record,
                                   void *ctx) {
    for (int i = 0; i < prog->count; i++) {
        dbk_status st = record(be, &prog->ops[i], i, ctx);
        if (st != DBK_OK) return program_op_failed(&prog->ops[i], st, "recording ");
    }
    return DBK_OK;
}

dbk_status dbk_program_run(dbk_program *p) {
    dbk_backend *be = p->be;
    if (be->vt->program_run) return be->vt->program_run(be, p);
    /* Validated and prepared at creation: call the ops directly. */
    for (int i = 0; i < p->count; i++) {
        dbk_status st = be->vt->run_op(be, &p->ops[i]);
        if (st != DBK_OK) return program_op_failed(&p->ops[i], st, "");
    }
    return DBK_OK;
}

dbk_status dbk_program_run_timed(dbk_program *p, double *op_seconds) {
    dbk_backend *be = p->be;
    if (be->vt->program_run_timed) return be->vt->program_run_timed(be, p, op_seconds);
    DBK_TRY(be->vt->sync(be));
    for (int i = 0; i < p->count; i++) {
        double t0 = dbk_time_now();
        dbk_status st = be->vt->run_op(be, &p->ops[i]);
        if (st != DBK_OK) return program_op_failed(&p->ops[i], st, "");
        DBK_TRY(be->vt->sync(be));
        op_seconds[i] += dbk_time_now() - t0;
    }
    return DBK_OK;
}

void dbk_program_op_launches(const dbk_program *p, int *launches) {
    if (p->impl && p->be->vt->program_op_launches) {
        p->be->vt->program_op_launches(p->be, p, launches);
        return;
    }
    for (int i = 0; i < p->count; i++) launches[i] = 1;
}

int dbk_program_count(const dbk_program *p) { return p->count; }
const dbk_op_desc *dbk_program_ops(const dbk_program *p) { return p->ops; }
