/*
 * backend_impl.h — the vtable a backend implements. INTERNAL: include only from
 * src/backend/ and src/backends/<name>/.
 *
 * A backend provides a static const dbk_backend_vtable and registers count/info/create
 * functions in registry.c. Its ops are reached through one entry, run_op, which dispatches
 * through the backend's own table generated from op_list.h (a NULL entry there = the
 * backend lacks the op, as the list's where column says).
 */
#ifndef DBK_BACKEND_IMPL_H
#define DBK_BACKEND_IMPL_H

#include "backend/backend.h"

struct dbk_buffer {
    dbk_backend *be;       /* owner, borrowed */
    size_t       nbytes;
    void        *impl;     /* backend-private: host pointer (cpu), cl_mem, VkBuffer record */
};

struct dbk_program {
    dbk_backend *be;       /* owner, borrowed */
    dbk_op_desc *ops;      /* validated and prepared copies */
    int          count;
    void        *impl;     /* backend-private recording (NULL on the generic path) */
};

typedef dbk_status (*dbk_op_fn)(dbk_backend *be, const dbk_op_desc *op);

typedef struct dbk_backend_vtable {
    const char *name;
    void       (*destroy)     (dbk_backend *be);
    dbk_status (*buffer_alloc)(dbk_backend *be, size_t nbytes, dbk_buffer *buf); /* fills buf->impl */
    void       (*buffer_free) (dbk_backend *be, dbk_buffer *buf);
    dbk_status (*buffer_write)(dbk_backend *be, dbk_buffer *dst, size_t off, const void *src, size_t n);
    dbk_status (*buffer_read) (dbk_backend *be, const dbk_buffer *src, size_t off, void *dst, size_t n);
    dbk_status (*sync)        (dbk_backend *be);
    /* runs (enqueues) one validated, prepared op */
    dbk_op_fn   run_op;
    /* whether the backend has the op (its table) and can run this descriptor (dtype, shape
     * limits); NULL = every op, any descriptor */
    bool       (*op_supported)(const dbk_backend *be, const dbk_op_desc *op);
    /* optional: the algorithm a backend picked for this descriptor when it is not the op's
     * plain one ("winograd F(2x2,3x3)"), NULL otherwise (profiles and reports show it) */
    const char *(*op_algorithm)(const dbk_backend *be, const dbk_op_desc *op);
    /* optional: called by dbk_backend_prepare after validation */
    dbk_status (*prepare)     (dbk_backend *be, const dbk_op_desc *op);
    /* optional record/replay of programs (backend.h); each NULL entry falls back to the
     * generic path: program_run calls run_op in order, program_run_timed synchronises and
     * times each op on the host. program_record fills prog->impl; program_release frees it. */
    dbk_status (*program_record)   (dbk_backend *be, dbk_program *prog);
    void       (*program_release)  (dbk_backend *be, dbk_program *prog);
    dbk_status (*program_run)      (dbk_backend *be, dbk_program *prog);
    dbk_status (*program_run_timed)(dbk_backend *be, dbk_program *prog, double *op_seconds);
    /* optional: launches per op of a recorded program (backend.h dbk_program_op_launches) */
    void       (*program_op_launches)(const dbk_backend *be, const dbk_program *prog, int *launches);
} dbk_backend_vtable;

/* A backend's program_record records the ops through this one loop: record(be, op, i, ctx)
 * for every op i in order; the first failure stops it and its message names the op
 * ("recording <label> (<op>): <reason>"). */
typedef dbk_status (*dbk_program_record_op_fn)(dbk_backend *be, const dbk_op_desc *op, int index, void *ctx);
dbk_status dbk_program_record_each(dbk_backend *be, const dbk_program *prog, dbk_program_record_op_fn record,
                                   void *ctx);

/* The counters of backend.h and what the backends need to keep them: a backend reports each
 * host wait through dbk_backend_tally_wait and adds its launches and their bytes itself. */
typedef struct dbk_backend_tally {
    dbk_backend_counters counts;
    bool                 syncs_off;   /* dbk_backend_count_syncs(be, false) */
} dbk_backend_tally;

/* A host wait of `seconds` on the device: one sync (unless counting is off) and its time. */
void dbk_backend_tally_wait(dbk_backend_tally *t, double seconds);
/* A wait for work several submissions old while newer work stays queued (a bounded queue's
 * back-pressure: the host ran ahead of the device, which does not idle): its time only. */
void dbk_backend_tally_throttle(dbk_backend_tally *t, double seconds);

struct dbk_backend {
    const dbk_backend_vtable *vt;
    dbk_backend_kind          kind;
    dbk_device_info           info;
    void                     *impl;   /* backend-private state */
    dbk_backend_tally         tally;  /* backend.h's counters */
    /* Set during create only: the profile to use instead of the one matched by the device's
     * name (dbk_backend_create_with_profile); NULL otherwise. Borrowed. */
    const struct dbk_profile *profile;
};

/* Registry entry points a backend provides (declared here, defined in the backend). */
typedef struct dbk_backend_entry {
    dbk_backend_kind kind;
    int        (*device_count)(void);
    dbk_status (*device_info)(int index, dbk_device_info *out);
    dbk_status (*create)(int index, dbk_backend *be);   /* fills be->vt, be->info, be->impl */
} dbk_backend_entry;

extern const dbk_backend_entry dbk_cpu_backend_entry;

#endif
