/*
 * backend.h — what the rest of daybreak sees of a compute device.
 *
 * A dbk_backend is one device plus one in-order queue. Buffers are device allocations;
 * tensors (core/tensor.h) are views into them. dbk_backend_run enqueues one op (ops.h) and
 * may return before it finishes; dbk_backend_sync waits for everything enqueued. Host <->
 * device copies go only through dbk_buffer_write/read.
 *
 * Ownership: whoever creates, destroys. Buffers must be destroyed before their backend.
 * Backends are listed and created through the registry (registry.c), the only place that
 * knows which backends were compiled in.
 */
#ifndef DBK_BACKEND_H
#define DBK_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/ops.h"
#include "core/status.h"
#include "core/tensor.h"

struct dbk_profile;   /* core/profile.h */

typedef struct dbk_backend dbk_backend;

typedef enum dbk_backend_kind {
    DBK_BACKEND_KIND_CPU,
    DBK_BACKEND_KIND_OPENCL,
    DBK_BACKEND_KIND_VULKAN,
    DBK_BACKEND_KIND_COUNT,
} dbk_backend_kind;

typedef enum dbk_device_type {
    DBK_DEVICE_TYPE_CPU,      /* a host CPU (also PoCL, lavapipe) */
    DBK_DEVICE_TYPE_GPU,      /* discrete or integrated GPU */
    DBK_DEVICE_TYPE_OTHER,
} dbk_device_type;

typedef struct dbk_device_info {
    char            name[256];
    char            vendor[128];
    char            driver[128];          /* driver name and version */
    char            api_version[128];     /* e.g. "OpenCL 3.0 PoCL", "Vulkan 1.3.230" */
    dbk_device_type type;
    int             compute_units;
    uint64_t        global_mem_bytes;
    uint64_t        max_alloc_bytes;      /* largest single buffer the device accepts */
    uint64_t        local_mem_bytes;      /* work-group shared memory, 0 if not applicable */
    bool            fp16;                 /* the device's fp16 capability (arithmetic + 16-bit storage) */
    char            fp16_missing[160];    /* why --precision fp16 cannot run here, naming the missing
                                             feature ("the OpenCL extension cl_khr_fp16"); "" when it can */
    char            details[1024];        /* backend-specific lines for `daybreak devices` */
    char            memory[192];          /* where device buffers live and how the host reaches
                                             them (Vulkan: the memory type, mapped or staged);
                                             from the created backend, or as it would choose */
    uint32_t        vendor_id;            /* PCI vendor id (0x10de NVIDIA, 0x1002 AMD, 0x8086 Intel); 0 unknown */
    bool            has_uuid;             /* uuid is known (Vulkan deviceUUID, OpenCL cl_khr_device_uuid): */
    uint8_t         uuid[16];             /* the bytes NVML's "GPU-..." UUID spells, for energy readings */
} dbk_device_info;

/* --- registry ---------------------------------------------------------------------- */

const char *dbk_backend_kind_name(dbk_backend_kind kind);      /* "cpu", "opencl", "vulkan" */
bool        dbk_backend_kind_compiled(dbk_backend_kind kind);  /* built into this binary? */

/* Number of devices of a kind; 0 when the backend is compiled out or finds no device. */
int        dbk_backend_device_count(dbk_backend_kind kind);
dbk_status dbk_backend_device_info(dbk_backend_kind kind, int index, dbk_device_info *out);

/* Parses "cpu", "opencl", "opencl:1", "vulkan:0" (device defaults to 0; a separate --device
 * may override it: pass device >= 0, else -1). DBK_ERR_NOT_FOUND names unknown backends and
 * devices and lists what exists; DBK_ERR_INVALID_ARG for a malformed index ("opencl:x",
 * "opencl:-1"). */
dbk_status dbk_backend_resolve(const char *spec, int device, dbk_backend_kind *kind, int *index);

/* The default device: the first GPU found by OpenCL, then Vulkan; otherwise PoCL (OpenCL on the
 * host CPU: it trains `quick` 1.3-1.9x faster than the CPU backend on the 2-core AVX2 and
 * AVX-512 hosts measured, README "Quick start"); otherwise the CPU backend. lavapipe is never
 * the default (several times slower than both). */
void dbk_backend_default(dbk_backend_kind *kind, int *index);

/* Creates a backend on a device. Release with dbk_backend_destroy. */
dbk_status dbk_backend_create(dbk_backend_kind kind, int index, dbk_backend **out);
/* The same with the kernel choices and tunables of `profile` (core/profile.h; borrowed during
 * the call only) instead of the profile matched by the device's name: how `daybreak tune` tries
 * a candidate. NULL: as dbk_backend_create. */
dbk_status dbk_backend_create_with_profile(dbk_backend_kind kind, int index, const struct dbk_profile *profile,
                                       dbk_backend **out);
void       dbk_backend_destroy(dbk_backend *be);              /* accepts NULL */

dbk_backend_kind       dbk_backend_get_kind(const dbk_backend *be);
const dbk_device_info *dbk_backend_get_info(const dbk_backend *be);   /* valid until destroy */

/* --- buffers ------------------------------------------------------------------------ */

/* Allocates nbytes on the device (contents undefined). DBK_ERR_OUT_OF_DEVICE_MEMORY names
 * the size when the device refuses it, DBK_ERR_INVALID_ARG when it exceeds max_alloc_bytes. */
dbk_status dbk_buffer_create(dbk_backend *be, size_t nbytes, dbk_buffer **out);
void       dbk_buffer_destroy(dbk_buffer *buf);               /* accepts NULL */
size_t     dbk_buffer_size(const dbk_buffer *buf);

/* Copies between host memory and a buffer range, ordered after enqueued ops. The host memory
 * may be reused when they return (a backend may stage a small write and let it run later). */
dbk_status dbk_buffer_write(dbk_buffer *dst, size_t offset, const void *src, size_t nbytes);
dbk_status dbk_buffer_read(const dbk_buffer *src, size_t offset, void *dst, size_t nbytes);

/* Convenience: whole-tensor copies. */
dbk_status dbk_tensor_write(const dbk_tensor *t, const void *src);
dbk_status dbk_tensor_read(const dbk_tensor *t, void *dst);

/* --- ops ---------------------------------------------------------------------------- */

/* Whether the backend has the op at all: op_list.h's where column (the CPU has every op). */
bool dbk_backend_has_op(const dbk_backend *be, dbk_op op);
/* Whether the backend can run this descriptor (has the op, and its dtype/shape limits allow;
 * an op with an f16 tensor needs fp16_missing to be empty). */
bool dbk_backend_supports(const dbk_backend *be, const dbk_op_desc *op);

/* The algorithm the backend runs this descriptor with when it is not the op's plain one
 * (e.g. "winograd F(2x2,3x3)" for a convolution), else NULL. A static string. FLOP counts
 * (dbk_op_flops) stay the plain algorithm's, so such an op's FLOP/s can exceed the device's peak. */
const char *dbk_backend_op_algorithm(const dbk_backend *be, const dbk_op_desc *op);
/* How many times fewer multiply-adds such an algorithm does than the plain one: 2.25 for
 * "winograd F(2x2,3x3)", 4 for "winograd F(4x4,3x3)", 1 for any other string. */
double dbk_algorithm_multiply_add_saving(const char *algorithm);

/* Called once per distinct op descriptor before the first run (plan, then allocate): lets
 * the backend size its workspace, build kernels, and reject what it cannot run. */
dbk_status dbk_backend_prepare(dbk_backend *be, const dbk_op_desc *op);

/* Validates the descriptor (ops.h contracts, buffer bounds) and enqueues the op. */
dbk_status dbk_backend_run(dbk_backend *be, const dbk_op_desc *op);

/* Waits until every enqueued op has finished. */
dbk_status dbk_backend_sync(dbk_backend *be);

/* --- what the host asks of the device (DESIGN.md decision 9) ------------------------ */

/* Counted by every backend from its creation on; a caller takes the difference of two
 * readings around the work it measures (train/session.h: the costs of a training step). A CPU
 * device hides these costs; a GPU's 10-millisecond step does not. */
typedef struct dbk_backend_counters {
    uint64_t launches;        /* kernels launched: OpenCL NDRange kernels and CLBlast calls (one
                                 each), Vulkan dispatches, one per op on the CPU backend */
    uint64_t syncs;           /* host waits on the device: syncs, reads, blocking writes, and waits
                                 for the newest work that had not finished when the host asked (a
                                 wait for older work while newer work stays queued, the back-pressure
                                 of a host that ran ahead, is not one: the device does not idle) */
    uint64_t device_bytes;    /* bytes of the tensor and workspace ranges the launches read or
                                 write, each once per launch (CPU backend: each op's tensors once) */
    uint64_t host_bytes;      /* bytes copied between host and device */
    double   blocked_seconds; /* host time inside those waits; on the CPU backend also the time
                                 running the ops, which is the device's work there */
} dbk_backend_counters;

void dbk_backend_get_counters(const dbk_backend *be, dbk_backend_counters *out);

/* Off: waits are not counted as syncs (their time still adds to blocked_seconds) until it is
 * turned on again; a profiler's own synchronisation is not the step's. On at creation. */
void dbk_backend_count_syncs(dbk_backend *be, bool on);

/* --- programs: fixed op sequences, recorded once and replayed ----------------------- */

/* A training step or evaluation batch is the same op sequence every time (DESIGN.md
 * decision 4): only a few bytes of per-step values change, and those live in device
 * tensors. A program is such a sequence. Creating one validates and prepares every op and
 * lets the backend record it once (Vulkan: command buffers; OpenCL: kernels with their
 * arguments set); running it replays the recording. Backends without a recorder run the ops
 * one by one. The buffers the ops use must outlive the program. */
typedef struct dbk_program dbk_program;

/* Copies ops[0..count). Errors: the op's contract, an unsupported op (named by its label),
 * or the backend's recording failure. */
dbk_status dbk_program_create(dbk_backend *be, const dbk_op_desc *ops, int count, dbk_program **out);
void       dbk_program_destroy(dbk_program *p);              /* accepts NULL */

/* Enqueues the whole sequence; may return before it finishes (dbk_backend_sync waits). */
dbk_status dbk_program_run(dbk_program *p);

/* Runs the sequence once and waits for it, adding each op's time in seconds to
 * op_seconds[i] (count entries). Device backends measure device time (OpenCL profiling
 * events, Vulkan timestamp queries) without synchronising between ops; the generic path
 * synchronises after every op and times on the host. */
dbk_status dbk_program_run_timed(dbk_program *p, double *op_seconds);

/* The kernels each op of the program launches per run into launches[0..count): a device
 * backend's lowering (chunks, transforms, GEMMs); 1 per op on the generic path. */
void               dbk_program_op_launches(const dbk_program *p, int *launches);

int                dbk_program_count(const dbk_program *p);
const dbk_op_desc *dbk_program_ops(const dbk_program *p);   /* the copied descriptors */

#endif
