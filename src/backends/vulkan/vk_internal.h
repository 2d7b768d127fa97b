/*
 * vk_internal.h — INTERNAL to src/backends/vulkan: the Vulkan backend's state and the
 * functions its files share.
 *
 * Files (split by concern, STYLE.md 3.1):
 *   vk_error.c     VkResult names, dbk_vk_fail, validation errors as a status
 *   vk_device.c    instance, physical-device listing, logical device, validation messenger,
 *                  the registry entry and the vtable
 *   vk_memory.c    buffers sub-allocated from a few large VkDeviceMemory blocks; host copies
 *   vk_pipeline.c  compute pipelines from the embedded SPIR-V with specialization constants
 *   vk_cmd.c       recording dispatches (push descriptors, hazard barriers), immediate
 *                  submission
 *   vk_ops_<family>.c the recorders of one op family (op_list.h family column): conv (conv
 *                  and GEMM, which share the tiled GEMM core), bn, pool, loss (softmax
 *                  cross-entropy, accuracy), optim (norm_scale), bias (a conv's bias and
 *                  its gradient), augment, and eltwise (the generic launcher of every op
 *                  declared launch EW, and copy)
 *   vk_record.c    the op table generated from op_list.h, immediate runs, programs (record
 *                  once, replay), timestamp queries
 * Calls go downwards only: vk_record.c -> vk_ops_*.c -> vk_cmd.c / vk_pipeline.c.
 *
 * Binding model: every op binds each tensor as a *window* of its VkBuffer through
 * vkCmdPushDescriptorSetKHR (VK_KHR_push_descriptor): the window starts at the tensor's
 * offset rounded down to minStorageBufferOffsetAlignment, and the remainder is passed to the
 * shader in elements (bytes for u8) as a push constant. A window never exceeds
 * maxStorageBufferRange (128 MiB on lavapipe): elementwise ops and convolution/pool/
 * batch-norm passes over independent images split large tensors into several dispatches,
 * and the shaders that must see a whole large tensor at once (augment: the resident dataset;
 * the batch-norm reductions and the filter gradient: a batch's activations) bind it as an
 * array of DBK_VK_WINDOWS consecutive windows (dbk_vk_windows). Beyond that an op is refused
 * with the limit named.
 *
 * Ordering: a recorder (dbk_vk_rec) remembers the byte ranges written and read since its last
 * barrier and inserts a global compute/transfer memory barrier only before a command that
 * conflicts with one of them (read-after-write, write-after-read, write-after-write). Every
 * command buffer starts with a barrier (it may follow any earlier submission) and ends with
 * one that makes device writes visible to the host.
 */
#ifndef DBK_VK_INTERNAL_H
#define DBK_VK_INTERNAL_H

#include <string.h>
#include <vulkan/vulkan.h>

#include "backend/backend_impl.h"
#include "backend/conv_choice.h"
#include "backends/vulkan/vk_conv_plan.h"

#define DBK_VK_MAX_BINDINGS   10     /* bindings per shader (the augment images array is one; bn_bwd_data has 10) */
#define DBK_VK_WINDOWS        4      /* windows of a windowed binding (shaders/common/window.glsl) */
#define DBK_VK_PUSH_BYTES     128    /* push-constant block of every shader (the guaranteed minimum) */
#define DBK_VK_MAX_SPEC       8      /* specialization constants per pipeline */
#define DBK_VK_MAX_HAZARDS    48     /* ranges a recorder tracks before it just places a barrier */
#define DBK_VK_IMM_RING       4      /* immediate command buffers in flight */
/* Reduction values per work group of the split-K filter gradient: short loops per invocation
 * (lavapipe stops a shader's loops after 65535 iterations in total) and parallelism over the
 * batch on GPUs. A multiple of every BK. */
#define DBK_VK_KCHUNK         8192

/* ---------------------------------------------------------------------------------- */
/* shaders and pipelines (vk_pipeline.c)                                               */


/* A shader is named by its file in shaders/ without .comp ("conv2d_fwd"); its SPIR-V is
 * embedded as <name>.spv (every .comp file of shaders/ is compiled, vulkan.cmake). Its bindings and
 * which of them are windowed come from the SPIR-V itself (vk_pipeline.c reflection). */
#define DBK_VK_SHADER_NAME 48

typedef struct dbk_vk_pipeline {
    char                  shader[DBK_VK_SHADER_NAME];
    int                   nbind;           /* storage-buffer bindings (reflected) */
    unsigned              windowed;        /* bit i: binding i is an array of DBK_VK_WINDOWS windows */
    int                   nspec;
    uint32_t              spec[DBK_VK_MAX_SPEC];
    VkDescriptorSetLayout dsl;
    VkPipelineLayout      layout;
    VkPipeline            pipeline;
} dbk_vk_pipeline;

/* Tile parameters of the GEMM-shaped shaders (gemm_tiled, conv2d_*), from the profile. */
typedef struct dbk_vk_tiles {
    uint32_t bm, bn, bk, tm, tn;   /* work-group tile BM x BN, K step BK, per-thread TM x TN */
} dbk_vk_tiles;

/* ---------------------------------------------------------------------------------- */
/* backend state                                                                        */

typedef struct dbk_vk_block {              /* one VkDeviceMemory, sub-allocated first-fit */
    VkDeviceMemory mem;
    VkDeviceSize   size;
    void          *mapped;                 /* host pointer when the memory is host-visible */
    int            nused;
    int            cap;
    VkDeviceSize  (*used)[2];              /* sorted [begin, end) ranges in use */
} dbk_vk_block;

typedef struct dbk_vk_buffer {             /* dbk_buffer.impl */
    VkBuffer     buf;
    VkDeviceSize size;                     /* the VkBuffer's size (dbk size rounded up to 16) */
    int          block;                    /* index into dbk_vk_state.blocks */
    VkDeviceSize at;                       /* offset inside the block */
} dbk_vk_buffer;

typedef struct dbk_vk_range {
    VkBuffer     buf;
    VkDeviceSize lo, hi;
} dbk_vk_range;

/* Records commands into one command buffer and places barriers where ranges conflict. */
typedef struct dbk_vk_rec {
    VkCommandBuffer cmd;
    int             nwrites, nreads;
    dbk_vk_range    writes[DBK_VK_MAX_HAZARDS], reads[DBK_VK_MAX_HAZARDS];
    bool            barrier_next;          /* the next command gets a barrier regardless */
    int             dispatches;            /* counters for logs and tests */
    int             barriers;
    uint64_t        bytes;                 /* the ranges its commands bind, copy or update (backend.h
                                              device_bytes), added to the counters at submission */
} dbk_vk_rec;

typedef struct dbk_vk_state {
    VkInstance               instance;
    VkDebugUtilsMessengerEXT messenger;    /* only with DBK_VK_VALIDATION */
    VkPhysicalDevice         phys;
    VkDevice                 dev;
    VkQueue                  queue;
    uint32_t                 queue_family;
    VkPhysicalDeviceProperties props;
    uint32_t                 subgroup;     /* subgroupSize: invocations per SIMD vector or warp */
    VkDeviceSize             max_range;    /* maxStorageBufferRange */
    VkDeviceSize             max_alloc;    /* maxMemoryAllocationSize */
    VkDeviceSize             align;        /* minStorageBufferOffsetAlignment, at least 4 */
    uint32_t                 timestamp_bits;   /* 0: the queue has no timestamps */
    dbk_backend_tally       *tally;        /* the backend's counters (backend_impl.h) */
    PFN_vkCmdPushDescriptorSetKHR push_descriptor;

    /* validation (vk_device.c): errors counted by the messenger, reported by the next sync */
    int                      validation_errors;
    char                     validation_first[1024];

    /* memory (vk_memory.c) */
    uint32_t                 mem_type;     /* device-local, host-visible when possible */
    bool                     host_visible; /* mem_type is host-visible and coherent */
    VkDeviceSize             block_bytes;  /* default block size (profile vulkan.block_mib) */
    dbk_vk_block            *blocks;
    int                      nblocks;
    void                    *staging;      /* host-visible copy buffer; NULL when blocks are mapped */
    char                     memory_note[192]; /* dbk_vk_memory_describe of the choice */

    /* pipelines (vk_pipeline.c) */
    dbk_vk_pipeline         *pipes;
    int                      npipes;
    const char              *shader_dir;   /* DBK_SHADER_DIR: .spv files replacing embedded ones */
    double                   pipe_seconds; /* spent creating them (llvmpipe JIT-compiles each) */
    dbk_vk_tiles             gemm_tiles, conv_tiles;
    uint32_t                 wg;           /* work-group size of elementwise and reduction shaders */
    dbk_conv_choice          conv;         /* Winograd or the implicit GEMM per 3x3 layer */

    /* workspace (vk_ops_conv.c): split-K partial sums or Winograd planes; grown by prepare, never shrunk; a
     * replaced workspace is kept until destroy, since recorded programs may still use it */
    dbk_buffer              *ws;
    dbk_buffer              *ws_retired[16];
    int                      nretired;

    /* commands (vk_cmd.c) */
    VkCommandPool            pool;
    VkCommandBuffer          imm_cmd[DBK_VK_IMM_RING];
    VkFence                  imm_fence[DBK_VK_IMM_RING];
    bool                     imm_pending[DBK_VK_IMM_RING];   /* submitted, fence not yet waited */
    int                      imm_cur;      /* ring slot being recorded, -1 = none open */
    int                      imm_next;
    dbk_vk_rec               imm;          /* recorder of the open immediate command buffer */
} dbk_vk_state;

static inline dbk_vk_state *dbk_vk(const dbk_backend *be) { return (dbk_vk_state *)be->impl; }

/* ---------------------------------------------------------------------------------- */
/* vk_error.c                                                                           */

const char *dbk_vk_result_name(VkResult r);
/* DBK_ERR_DEVICE (DBK_ERR_OUT_OF_DEVICE_MEMORY, DBK_ERR_DEVICE_LOST for those results)
 * with "Vulkan: <what> failed: VK_ERROR_...". */
dbk_status dbk_vk_fail(VkResult r, const char *what);
/* A validation error seen by the messenger since the last check, as DBK_ERR_DEVICE. */
dbk_status dbk_vk_check_validation(dbk_vk_state *vk);

#define DBK_VK_TRY(call, what)                                \
    do {                                                      \
        VkResult dbk_vk_r_ = (call);                          \
        if (dbk_vk_r_ != VK_SUCCESS) return dbk_vk_fail(dbk_vk_r_, what); \
    } while (0)

/* ---------------------------------------------------------------------------------- */
/* vk_memory.c                                                                          */

/* The memory type device buffers use among type_bits (the file comment of vk_memory.c says
 * the rule); staged forces one the host does not map. false when no type fits. */
bool dbk_vk_memory_choose(const VkPhysicalDeviceMemoryProperties *mp, uint32_t type_bits, bool staged,
                          uint32_t *type, bool *host_visible);
/* One line for dbk_device_info.memory: the type's flags and heap, and mapped or staged. */
void dbk_vk_memory_describe(const VkPhysicalDeviceMemoryProperties *mp, uint32_t type, bool host_visible, char *out,
                            size_t cap);
dbk_status dbk_vk_memory_init(dbk_vk_state *vk);
void       dbk_vk_memory_destroy(dbk_vk_state *vk);
dbk_status dbk_vk_buffer_alloc(dbk_backend *be, size_t nbytes, dbk_buffer *buf);
void       dbk_vk_buffer_free(dbk_backend *be, dbk_buffer *buf);
dbk_status dbk_vk_buffer_write(dbk_backend *be, dbk_buffer *dst, size_t off, const void *src, size_t n);
dbk_status dbk_vk_buffer_read(dbk_backend *be, const dbk_buffer *src, size_t off, void *dst, size_t n);

static inline const dbk_vk_buffer *dbk_vk_buf(const dbk_buffer *b) { return (const dbk_vk_buffer *)b->impl; }

/* ---------------------------------------------------------------------------------- */
/* vk_pipeline.c                                                                        */

/* Reads tile sizes and work-group sizes from the profile, clamped to the device limits, and
 * the convolution algorithm choice (DBK_ERR_FORMAT for a malformed one). */
dbk_status dbk_vk_pipeline_init(dbk_backend *be);
void       dbk_vk_pipeline_destroy(dbk_vk_state *vk);
/* The pipeline for (shader, spec constants), created on first use; DBK_ERR_COMPILE when no
 * shader of that name is embedded. */
dbk_status dbk_vk_pipeline_get(dbk_vk_state *vk, const char *shader, const uint32_t *spec, int nspec,
                               const dbk_vk_pipeline **out);

/* ---------------------------------------------------------------------------------- */
/* vk_cmd.c                                                                             */

/* One buffer window bound to a shader binding. */
typedef struct dbk_vk_bind {
    VkBuffer     buf;
    VkDeviceSize offset, range;
    bool         write;                    /* the shader writes through it */
    bool         unused;                   /* a placeholder for an absent tensor: not tracked */
} dbk_vk_bind;

typedef struct dbk_vk_dispatch {
    const char   *shader;                  /* shaders/<shader>.comp */
    int           nspec;
    uint32_t      spec[DBK_VK_MAX_SPEC];
    int           nbind;                   /* bindings; a windowed one takes DBK_VK_WINDOWS entries of bind[] */
    dbk_vk_bind   bind[DBK_VK_MAX_BINDINGS * DBK_VK_WINDOWS];
    uint32_t      push[DBK_VK_PUSH_BYTES / 4];
    uint32_t      groups[3];
} dbk_vk_dispatch;

/* Binds the byte range [t.offset + first*esize, + count*esize) of a tensor: *rem receives the
 * distance from the window start in elements (bytes for u8). DBK_ERR_UNSUPPORTED names
 * maxStorageBufferRange when the window does not fit it; count < 0 means the whole tensor. */
dbk_status dbk_vk_window(const dbk_vk_state *vk, const dbk_tensor *t, int64_t first, int64_t count, bool write,
                         dbk_vk_bind *out, uint32_t *rem);
/* Binds a whole tensor as DBK_VK_WINDOWS consecutive windows of *step bytes (a multiple of
 * the offset alignment) from its aligned start; *rem is the tensor's distance from that start
 * in elements (bytes for u8). DBK_ERR_UNSUPPORTED when even that does not cover it. */
dbk_status dbk_vk_windows(const dbk_vk_state *vk, const dbk_tensor *t, bool write, dbk_vk_bind *out, uint32_t *step,
                          uint32_t *rem);
/* A view of images [n0, n0 + nb) of a batch-major tensor. */
static inline dbk_tensor dbk_vk_batch_slice(const dbk_tensor *t, int64_t n0, int64_t nb) {
    dbk_tensor s = *t;
    const int64_t per = t->shape[0] ? dbk_tensor_numel(t) / t->shape[0] : 0;
    s.offset += (size_t)(n0 * per) * dbk_dtype_size(t->dtype);
    s.shape[0] = nb;
    return s;
}
/* Images per dispatch so that every listed batch-major tensor's slice fits one binding
 * (at least 1; N when all fit). */
int64_t dbk_vk_batch_chunk(const dbk_vk_state *vk, const dbk_tensor *const *t, int n);
/* A valid but untracked binding for a shader slot whose tensor is absent. */
dbk_vk_bind dbk_vk_placeholder(const dbk_tensor *any);

/* Records one dispatch (barrier if needed, pipeline, push descriptors, push constants). */
dbk_status dbk_vk_emit(dbk_backend *be, dbk_vk_rec *rec, const dbk_vk_dispatch *d);
/* Records a buffer copy (transfer) with the same hazard tracking. */
void       dbk_vk_emit_copy(dbk_vk_rec *rec, VkBuffer src, VkDeviceSize soff, VkBuffer dst, VkDeviceSize doff,
                            VkDeviceSize n);
/* Records vkCmdUpdateBuffer (n <= 65536, 4-byte aligned). */
void       dbk_vk_emit_update(dbk_vk_rec *rec, VkBuffer dst, VkDeviceSize off, const void *src, VkDeviceSize n);

/* Elements of a flat f32 tensor per dispatch: whole windows below maxStorageBufferRange
 * (and 32-bit indices), for ops whose elements are independent. */
int64_t    dbk_vk_flat_chunk(const dbk_vk_state *vk);

/* The bits of a float, for a push constant. */
static inline uint32_t dbk_vk_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* The shader for op: name, or its variant name_f16 when op's src0 is f16 (the operands of a
 * convolution or GEMM, the saved input of a backward op: shaders/common/operand.glsl);
 * written into buf. */
const char *dbk_vk_f16_variant(const char *name, const dbk_op_desc *op, char buf[DBK_VK_SHADER_NAME]);

/* Groups for `n` work items at `wg` per group, capped (shaders loop grid-stride). */
uint32_t   dbk_vk_groups_1d(const dbk_vk_state *vk, int64_t n, uint32_t wg);

dbk_status dbk_vk_cmd_init(dbk_vk_state *vk);
void       dbk_vk_cmd_destroy(dbk_vk_state *vk);
/* The open immediate recorder (begins a command buffer when none is open). */
dbk_status dbk_vk_imm(dbk_backend *be, dbk_vk_rec **out);
/* Submits the open immediate command buffer, if any (does not wait). */
dbk_status dbk_vk_flush(dbk_vk_state *vk);
/* Submits and waits for everything; reports validation errors. */
dbk_status dbk_vk_sync(dbk_backend *be);

/* Starts a recorder on a command buffer being recorded; the first command gets a barrier. */
void       dbk_vk_rec_begin(dbk_vk_rec *rec, VkCommandBuffer cmd);
/* Records a full compute/transfer barrier now. */
void       dbk_vk_rec_barrier(dbk_vk_rec *rec);
/* Records the barrier that makes device writes visible to host reads after the fence. */
void       dbk_vk_rec_end(dbk_vk_rec *rec);
/* Waits for a submitted fence, then resets it. */
/* newest: the fence of the latest work (a wait on it counts as a sync); else of older work
 * with newer work queued (back-pressure, backend_impl.h dbk_backend_tally_throttle). */
dbk_status dbk_vk_wait_fence(dbk_vk_state *vk, VkFence f, bool newest, const char *what);

/* ---------------------------------------------------------------------------------- */
/* vk_record.c: the op table (from op_list.h), immediate runs and programs              */

bool       dbk_vk_op_supported(const dbk_backend *be, const dbk_op_desc *op);
dbk_status dbk_vk_run_op(dbk_backend *be, const dbk_op_desc *op);   /* immediate: the vtable's run_op */

dbk_status dbk_vk_program_record(dbk_backend *be, dbk_program *prog);
void       dbk_vk_program_release(dbk_backend *be, dbk_program *prog);
dbk_status dbk_vk_program_run(dbk_backend *be, dbk_program *prog);
dbk_status dbk_vk_program_run_timed(dbk_backend *be, dbk_program *prog, double *op_seconds);
void       dbk_vk_program_op_launches(const dbk_backend *be, const dbk_program *prog, int *launches);

/* ---------------------------------------------------------------------------------- */
/* vk_ops_*.c: the recorders, one file per op family                                   */

/* Records one validated op into a recorder. */
typedef dbk_status (*dbk_vk_record_fn)(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op);

/* dbk_vk_record_<name> of every launch OWN op of op_list.h, in vk_ops_<family>.c, and
 * dbk_vk_record_<family> of every launch FAMILY op's family. */
#define DBK_VK_DECLARE_(E, name, family, ...)                                                 \
    dbk_status dbk_vk_record_##name(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op); \
    dbk_status dbk_vk_record_##family(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op);
DBK_OP_LIST(DBK_VK_DECLARE_)
#undef DBK_VK_DECLARE_

/* vk_ops_eltwise.c: every launch EW op: shaders/<name>.comp with src then dst slots at
 * bindings 0, 1, ... and the push constants of shaders/common/eltwise_head.glsl. */
dbk_status dbk_vk_record_eltwise(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op);

/* vk_ops_conv.c: vtable prepare: sizes the workspace for a filter-gradient op's split-K
 * partial sums or a Winograd conv's transformed planes. */
dbk_status dbk_vk_prepare(dbk_backend *be, const dbk_op_desc *op);
void       dbk_vk_workspace_destroy(dbk_backend *be);
/* The workspace, at least nbytes. */
dbk_status dbk_vk_workspace(dbk_backend *be, size_t nbytes, dbk_buffer **out);
/* Specialization constants (work-group size, tiles) and grid x, y of the GEMM-shaped shaders
 * (common/gemm_core.glsl) for an (m x n) output, within the device's limits. */
void       dbk_vk_tile_spec(const dbk_vk_state *vk, const dbk_vk_tiles *tiles, uint64_t m, uint64_t n,
                            dbk_vk_dispatch *d);

/* vk_ops_conv_winograd.c: 3x3 stride-1 pad-1 convolutions as Winograd F(2x2,3x3) or F(4x4,3x3). */
bool       dbk_vk_conv_winograd_chosen(const dbk_backend *be, const dbk_op_desc *op);
size_t     dbk_vk_conv_winograd_workspace_bytes(const dbk_backend *be, const dbk_op_desc *op);
dbk_status dbk_vk_record_conv2d_winograd(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op);
/* vtable op_algorithm: "winograd F(2x2,3x3)" or "winograd F(4x4,3x3)" for a conv op that runs as
 * Winograd, else NULL. */
const char *dbk_vk_op_algorithm(const dbk_backend *be, const dbk_op_desc *op);

#endif
