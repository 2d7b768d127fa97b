/*
 * ocl_internal.h — INTERNAL to src/backends/opencl (and tests/test_ocl.c): the OpenCL
 * backend's context object, the launch records ops are lowered to, and the functions the
 * backend's files share.
 *
 * Structure (DESIGN.md "backends/opencl"):
 *   ocl_error.c     OpenCL error names, dbk_ocl_fail
 *   ocl_device.c    platforms/devices, device info, backend create/destroy, vtable
 *   ocl_program.c   kernel sources (embedded or DBK_KERNEL_DIR), build, on-disk binary cache
 *   ocl_buffer.c    buffers (allocation forced at create time), blocking read/write, sync
 *   ocl_launch.c    launch lists: kernels with arguments set, CLBlast calls, enqueueing
 *   ocl_blas.c      GEMM: our tiled kernel (cl/gemm_tiled.cl) or CLBlast, chosen by the profile
 *   ocl_ops_<family>.c the recorders of one op family (op_list.h family column): conv
 *                   (im2col/col2im + GEMM, workspace planning; ocl_ops_conv_winograd.c the
 *                   Winograd F(2x2,3x3) / F(4x4,3x3) path it picks for 3x3 stride-1 layers), bn, pool, loss (softmax
 *                   cross-entropy, accuracy), optim (norm_scale), bias (a conv's bias and
 *                   its gradient), augment, and eltwise (the generic launcher of every op
 *                   declared launch EW, and copy); GEMM is ocl_blas.c
 *   ocl_record.c    the op table (from op_list.h) -> launch lists; dbk_backend_run, programs
 *                   (record once, replay), timing
 * Calls go downwards only: ocl_record.c -> ocl_ops_*.c / ocl_blas.c -> ocl_launch.c.
 *
 * Every op is lowered ("recorded") to a list of launches: a cl_kernel whose arguments are set
 * once, or a CLBlast GEMM call with its arguments stored. dbk_backend_run records, enqueues and
 * frees; a dbk_program records once and re-enqueues the same launches every step, so a step
 * costs one clEnqueueNDRangeKernel per launch and nothing else (no reads, no argument sets).
 *
 * Tensors are views into cl_mem buffers with a byte offset; kernels take the offset in
 * elements (a tensor's byte offset must be a multiple of its element size, checked in
 * prepare), so no sub-buffers are needed. Element counts and offsets fit in 31 bits (checked).
 */
#ifndef DBK_OCL_INTERNAL_H
#define DBK_OCL_INTERNAL_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <stdbool.h>

#include "backend/backend_impl.h"
#include "backend/conv_choice.h"
#include "backends/opencl/ocl_conv_plan.h"

/* --- context ------------------------------------------------------------------------ */

typedef enum dbk_ocl_gemm_path {
    DBK_OCL_GEMM_TILED,     /* cl/gemm_tiled.cl with tile sizes from the profile */
    DBK_OCL_GEMM_CLBLAST,   /* CLBlastSgemm (optionally with override parameters) */
} dbk_ocl_gemm_path;

/* Tile parameters of cl/gemm_tiled.cl (each is a -D option of the build). */
typedef struct dbk_ocl_gemm_tiles {
    int tsm, tsn, tsk;      /* work-group tile: rows of C, columns of C, depth per step */
    int wptm, wptn;         /* per work-item: rows x columns of C */
    /* gemm_rb (register-blocked, B not transposed): RB_M rows x RB_W columns (one vector)
     * per work-item, work-groups of wg0 x wg1 work-items */
    int rb_m, rb_w, rb_wg0, rb_wg1;
    int rb_v;               /* B panels per work-item: 1 (gemm_rb) or 2 (gemm_rb2) */
} dbk_ocl_gemm_tiles;

/* How the kernel program came to be, for logs and for tests/test_ocl.c. */
typedef struct dbk_ocl_build_stats {
    int from_source;        /* clBuildProgram on the source text */
    int from_cache;         /* program created from a cached binary */
    int cache_rejected;     /* cache files found but not trusted (bad header, checksum, build) */
    int cache_written;
    char cache_file[2200];  /* the cache file of the last build ("" when caching is off) */
} dbk_ocl_build_stats;

/* Staging for small writes (ocl_buffer.c): the per-step scalars are copied here and written
 * without waiting for the queue; a slot is reused once its write has completed. */
/* Kernels index with int (31-bit element counts) and take uint offsets: the im2col path's
 * chunks are cut so that every region stays within this many elements (ocl_ops_conv.c). */
#define DBK_OCL_MAX_INDEX 0x7fffffffu
#define DBK_OCL_STAGING_SLOTS 64
#define DBK_OCL_STAGING_BYTES 256
/* Floats between consecutive Winograd planes beyond a plane's size (WINO_PLANE in
 * cl/conv2d_winograd.cl, passed as -DWINO_PLANE_PAD): one cache line, so planes whose size is a
 * multiple of 4 KiB do not fall into one L1 set. */
#define DBK_OCL_WINO_PLANE_PAD 16
/* The forward of a layer with fewer col rows (C*R*S) than this is conv_narrow_fwd
 * (cl/conv2d_im2col.cl, passed as -DNARROW_ROWS, the length of its unrolled loops): a few
 * products per output, too few for a GEMM to pay for col and its chunks. */
#define DBK_OCL_NARROW_ROWS 16

typedef struct dbk_ocl_staging {
    unsigned char data[DBK_OCL_STAGING_BYTES];
    cl_event      done;                  /* the write reading data, NULL when free */
} dbk_ocl_staging;

typedef struct dbk_ocl_ctx {
    cl_platform_id     platform;
    cl_device_id       device;
    cl_context         context;
    cl_command_queue   queue;            /* in-order, CL_QUEUE_PROFILING_ENABLE */
    cl_program         program;          /* every .cl file of cl/, built once */
    size_t             max_wg;           /* CL_DEVICE_MAX_WORK_GROUP_SIZE */
    cl_ulong           local_mem;        /* CL_DEVICE_LOCAL_MEM_SIZE */
    cl_ulong           max_alloc;
    dbk_ocl_gemm_path  gemm;
    dbk_ocl_gemm_tiles tiles;
    size_t             conv_budget;      /* bytes of im2col workspace a conv aims for */
    int                split_k_units;    /* compute units split-K fills (ocl_conv_plan.h):
                                            "opencl.split_k_compute_units", else the device's */
    dbk_conv_choice    conv;             /* Winograd or im2col per layer (backend/conv_choice.h) */
    cl_mem             workspace;        /* im2col / gathered matrices, sized by prepare */
    size_t             workspace_bytes;
    cl_mem             blas_temp;        /* CLBlast's temporary matrices (padded or transposed
                                            copies), sized while recording: NULL while no
                                            recorded CLBlast GEMM needs one */
    size_t             blas_temp_bytes;
    dbk_ocl_build_stats stats;
    char               profile_id[64];
    dbk_ocl_staging    staging[DBK_OCL_STAGING_SLOTS];
    int                staging_next;
} dbk_ocl_ctx;

static inline dbk_ocl_ctx *dbk_ocl(const dbk_backend *be) { return (dbk_ocl_ctx *)be->impl; }

/* --- errors (ocl_error.c) ------------------------------------------------------------ */

const char *dbk_ocl_error_name(cl_int err);   /* "CL_MEM_OBJECT_ALLOCATION_FAILURE", ... */

/* Sets "OpenCL <what>: CL_NAME (code) on <device>" and returns the matching dbk_status
 * (allocation failures -> DBK_ERR_OUT_OF_DEVICE_MEMORY, build -> COMPILE, else DEVICE). */
dbk_status dbk_ocl_fail(const dbk_backend *be, cl_int err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* --- devices (ocl_device.c) ----------------------------------------------------------- */

/* The index-th device over every platform, in platform then device order. */
dbk_status dbk_ocl_find_device(int index, cl_platform_id *platform, cl_device_id *device);

/* --- program (ocl_program.c) -------------------------------------------------------- */

/* Builds every .cl file of cl/ of the backend into ctx->program with `options`, through the binary
 * cache (dbk_env_cache_dir). Build failures return DBK_ERR_COMPILE with the build log. */
dbk_status dbk_ocl_build_program(dbk_backend *be, const char *options);

/* --- buffers (ocl_buffer.c) --------------------------------------------------------- */

dbk_status dbk_ocl_buffer_alloc(dbk_backend *be, size_t nbytes, dbk_buffer *buf);
void       dbk_ocl_buffer_free(dbk_backend *be, dbk_buffer *buf);
dbk_status dbk_ocl_buffer_write(dbk_backend *be, dbk_buffer *dst, size_t off, const void *src, size_t n);
/* Releases the events of finished small writes (after clFinish, when the backend closes). */
void       dbk_ocl_staging_release(dbk_ocl_ctx *c);
dbk_status dbk_ocl_buffer_read(dbk_backend *be, const dbk_buffer *src, size_t off, void *dst, size_t n);
dbk_status dbk_ocl_sync(dbk_backend *be);

/* Creates or grows the shared workspace to at least nbytes (prepare time). */
dbk_status dbk_ocl_reserve_workspace(dbk_backend *be, size_t nbytes);
/* Creates or grows the CLBlast temporary buffer to at least nbytes (record time). */
dbk_status dbk_ocl_reserve_blas_temp(dbk_backend *be, size_t nbytes);

static inline cl_mem dbk_ocl_mem(const dbk_tensor *t) { return (cl_mem)t->buf->impl; }
static inline cl_uint dbk_ocl_off(const dbk_tensor *t) { return (cl_uint)(t->offset / dbk_dtype_size(t->dtype)); }

/* --- launches (ocl_launch.c) -------------------------------------------------------- */

typedef enum dbk_ocl_launch_kind {
    DBK_OCL_LAUNCH_KERNEL,
    DBK_OCL_LAUNCH_CLBLAST_GEMM,
} dbk_ocl_launch_kind;

/* Arguments of one CLBlastSgemm call (row-major). */
typedef struct dbk_ocl_blas_call {
    bool   trans_a, trans_b;
    size_t m, n, k;
    float  alpha, beta;
    cl_mem a, b, c;
    size_t a_off, b_off, c_off, lda, ldb, ldc;   /* in elements */
    size_t temp_bytes;   /* CLBlastSGemmTempBufferSize at record time: > 0 runs the call with
                            the context's blas_temp (at least this large) */
    size_t batch;        /* > 1: CLBlastSgemmStridedBatched, the e-th GEMM's A, B and C at
                            e * the strides below (elements) past their offsets */
    size_t a_stride, b_stride, c_stride;
} dbk_ocl_blas_call;

typedef struct dbk_ocl_launch {
    dbk_ocl_launch_kind kind;
    cl_kernel           kernel;        /* KERNEL: owned, arguments set */
    cl_uint             dims;
    size_t              global[3];
    size_t              local[3];      /* all zero: the runtime chooses */
    dbk_ocl_blas_call   blas;          /* CLBLAST_GEMM */
    uint64_t            bytes;         /* the ranges it reads and writes, each once (backend.h's
                                          device_bytes): its tensors (dbk_ocl_arg_tensor) plus
                                          what the recorder adds (dbk_ocl_args_bytes) */
} dbk_ocl_launch;

typedef struct dbk_ocl_launches {
    dbk_ocl_launch *items;
    int             count, cap;
} dbk_ocl_launches;

void dbk_ocl_launches_free(dbk_ocl_launches *l);

/* Builder for one kernel launch: creates the kernel, then sets arguments in order. Errors
 * are collected and reported once by dbk_ocl_args_done. */
typedef struct dbk_ocl_args {
    dbk_backend      *be;
    dbk_ocl_launches *list;
    dbk_ocl_launch   *launch;
    const char     *name;
    cl_uint         next;
    cl_int          err;
    const char     *failed;            /* what failed first */
} dbk_ocl_args;

dbk_status dbk_ocl_kernel(dbk_backend *be, dbk_ocl_launches *out, const char *name, dbk_ocl_args *args);
void       dbk_ocl_arg_mem(dbk_ocl_args *a, cl_mem m);
void       dbk_ocl_arg_int(dbk_ocl_args *a, cl_int v);
void       dbk_ocl_arg_uint(dbk_ocl_args *a, cl_uint v);
void       dbk_ocl_arg_float(dbk_ocl_args *a, cl_float v);
void       dbk_ocl_arg_local(dbk_ocl_args *a, size_t bytes);
/* A tensor as two arguments: its buffer and its element offset (its bytes count as moved). */
static inline void dbk_ocl_arg_tensor(dbk_ocl_args *a, const dbk_tensor *t) {
    dbk_ocl_arg_mem(a, dbk_ocl_mem(t));
    dbk_ocl_arg_uint(a, dbk_ocl_off(t));
    a->launch->bytes += dbk_tensor_nbytes(t);
}
/* Bytes of `floats` fp32 values the launch reads or writes through buffer arguments passed
 * with dbk_ocl_arg_mem (workspace regions, chunks of a tensor). */
static inline void dbk_ocl_args_floats(dbk_ocl_args *a, double floats) { a->launch->bytes += (uint64_t)(4.0 * floats); }
/* Sets the NDRange (local NULL = runtime's choice; global is rounded up to local). */
dbk_status dbk_ocl_args_done(dbk_ocl_args *a, cl_uint dims, const size_t *global, const size_t *local);

/* 1-D range over n items, or 2-D over (n0, n1) with dimension 0 contiguous, with a local
 * size within the kernel's work-group limit (global rounded up: kernels check bounds). */
dbk_status dbk_ocl_range1(dbk_ocl_args *a, size_t n);
dbk_status dbk_ocl_range2(dbk_ocl_args *a, size_t n0, size_t n1);

/* Largest work-group for a kernel on this device: min(device, kernel) limit, capped at want
 * and rounded down to a power of two. */
size_t dbk_ocl_wg_limit(dbk_backend *be, cl_kernel k, size_t want);

dbk_status dbk_ocl_launches_append(dbk_ocl_launches *l, dbk_ocl_launch **out);

/* Enqueues every launch; events (count l->count) when non-NULL. */
dbk_status dbk_ocl_enqueue(dbk_backend *be, const dbk_ocl_launches *l, cl_event *events);

/* Records a fill of n floats at (mem, off) with value (used by GEMM with beta == 0 on CLBlast). */
dbk_status dbk_ocl_fill_record(dbk_backend *be, dbk_ocl_launches *out, cl_mem mem, cl_uint off, cl_uint n, float v);

/* --- recorders: one validated op lowered to launches -------------------------------- */

typedef dbk_status (*dbk_ocl_record_fn)(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out);

/* dbk_ocl_record_<name> of every launch OWN op of op_list.h, in ocl_ops_<family>.c or
 * ocl_blas.c (GEMM), and dbk_ocl_record_<family> of every launch FAMILY op's family. */
#define DBK_OCL_DECLARE_(E, name, family, ...)                                                     \
    dbk_status dbk_ocl_record_##name(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out); \
    dbk_status dbk_ocl_record_##family(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out);
DBK_OP_LIST(DBK_OCL_DECLARE_)
#undef DBK_OCL_DECLARE_

/* ocl_ops_eltwise.c: every launch EW op: the kernel named after the op with (buffer, offset)
 * per src then dst slot, the params' words, the "#" slots' counts and n (op_list.h). */
dbk_status dbk_ocl_record_eltwise(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out);

/* vtable entries of ocl_record.c */
dbk_status dbk_ocl_prepare(dbk_backend *be, const dbk_op_desc *op);
bool       dbk_ocl_op_supported(const dbk_backend *be, const dbk_op_desc *op);
dbk_status dbk_ocl_run_op(dbk_backend *be, const dbk_op_desc *op);
dbk_status dbk_ocl_program_record(dbk_backend *be, dbk_program *prog);
void       dbk_ocl_program_release(dbk_backend *be, dbk_program *prog);
dbk_status dbk_ocl_program_run(dbk_backend *be, dbk_program *prog);
void       dbk_ocl_program_op_launches(const dbk_backend *be, const dbk_program *prog, int *launches);
dbk_status dbk_ocl_program_run_timed(dbk_backend *be, dbk_program *prog, double *op_seconds);

/* --- op families -------------------------------------------------------------------- */

/* ocl_blas.c: C = alpha op(A) op(B) + beta C on matrices given as buffer + element offset
 * + leading dimension (row-major). */
typedef struct dbk_ocl_matrix {
    cl_mem  mem;
    cl_uint off;
    int     ld;
} dbk_ocl_matrix;
dbk_status dbk_ocl_gemm_record(dbk_backend *be, dbk_ocl_launches *out, bool ta, bool tb, int m, int n, int k,
                               float alpha, dbk_ocl_matrix a, dbk_ocl_matrix b, float beta, dbk_ocl_matrix c);
/* CLBlast only: `batch` such GEMMs in one call, the e-th on A, B and C at e * stride.a, .b, .c
 * elements past their offsets (CLBlastSgemmStridedBatched); C is overwritten or accumulated
 * as beta says, and with beta 0 must hold no NaN (CLBlast multiplies it by 0). */
dbk_status dbk_ocl_gemm_strided_record(dbk_backend *be, dbk_ocl_launches *out, bool ta, bool tb, int m, int n, int k,
                                       float alpha, dbk_ocl_matrix a, dbk_ocl_matrix b, float beta, dbk_ocl_matrix c,
                                       int batch, size_t stride_a, size_t stride_b, size_t stride_c);
/* The same with B (K,N) packed in panels of tiles.rb_w columns at (bp, bp_off) (gemm_rb).
 * c_plane > 0 (a multiple of rb_w) stores C as (N/c_plane, M, c_plane) instead of row-major. */
dbk_status dbk_ocl_gemm_packed_record(dbk_backend *be, dbk_ocl_launches *out, bool ta, int m, int n, int k, float alpha,
                                      dbk_ocl_matrix a, cl_mem bp, cl_uint bp_off, float beta, dbk_ocl_matrix c,
                                      int c_plane);
/* A batch of `batch` such GEMMs of one shape in one launch, the e-th on A at a.off + e*stride.a,
 * B at bp_off + e*stride.b and C at c.off + e*stride.c (elements). */
typedef struct dbk_ocl_batch {
    int     count;
    cl_uint a, b, c;
} dbk_ocl_batch;
dbk_status dbk_ocl_gemm_batch_record(dbk_backend *be, dbk_ocl_launches *out, bool ta, int m, int n, int k, float alpha,
                                     dbk_ocl_matrix a, cl_mem bp, cl_uint bp_off, float beta, dbk_ocl_matrix c,
                                     int c_plane, dbk_ocl_batch batch);
dbk_status dbk_ocl_blas_setup(dbk_backend *be, const void *profile);   /* profile: const dbk_profile * */
/* ocl_ops_conv.c */
size_t     dbk_ocl_conv_workspace_bytes(const dbk_backend *be, const dbk_op_desc *op);
/* The backend's conv configuration (ocl_conv_plan.h), pointing into its context. */
dbk_ocl_conv_config dbk_ocl_conv_config_of(const dbk_backend *be);
/* ocl_ops_conv_winograd.c: dbk_ocl_conv_gemm_plan for an op that runs as Winograd. */
int        dbk_ocl_conv_winograd_gemm_plan(const dbk_ocl_conv_config *cfg, const dbk_op_desc *op,
                                           dbk_ocl_conv_gemm out[DBK_OCL_CONV_MAX_GEMMS]);
/* ocl_ops_conv_winograd.c: whether a conv op runs as Winograd on this backend, its workspace,
 * and its recorders (called by ocl_ops_conv.c's when it is chosen). */
bool       dbk_ocl_conv_winograd_chosen(const dbk_backend *be, const dbk_op_desc *op);
/* vtable op_algorithm: "winograd F(2x2,3x3)" or "winograd F(4x4,3x3)" for a conv op that runs
 * as Winograd, else NULL. */
const char *dbk_ocl_op_algorithm(const dbk_backend *be, const dbk_op_desc *op);
/* The "direct" 3x3 stride-1 pad-1 convolution kernels (ocl_ops_conv_direct.c, cl/conv2d_direct.cl),
 * chosen per layer as Winograd is; ocl_ops_conv.c dispatches to them. */
bool       dbk_ocl_conv_direct_chosen(const dbk_backend *be, const dbk_op_desc *op);
size_t     dbk_ocl_conv_direct_workspace_bytes(const dbk_backend *be, const dbk_op_desc *op);
dbk_status dbk_ocl_record_conv2d_direct_fwd(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out);
dbk_status dbk_ocl_record_conv2d_direct_bwd_data(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out);
dbk_status dbk_ocl_record_conv2d_direct_bwd_filter(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out);
/* vtable op_algorithm: "direct" for a conv op on the direct kernels, else dbk_ocl_op_algorithm. */
const char *dbk_ocl_conv_op_algorithm(const dbk_backend *be, const dbk_op_desc *op);
size_t     dbk_ocl_conv_winograd_workspace_bytes(const dbk_backend *be, const dbk_op_desc *op);
dbk_status dbk_ocl_record_conv2d_winograd_fwd(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out);
dbk_status dbk_ocl_record_conv2d_winograd_bwd_data(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out);
dbk_status dbk_ocl_record_conv2d_winograd_bwd_filter(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out);

#endif
