/*
 * cpu_internal.h — INTERNAL to src/backends/cpu: the reference op implementations and the
 * backend state they share.
 *
 * The CPU backend is the specification every device backend is tested against (DESIGN.md
 * decision 1): plain, obviously correct C loops with shape comments; GEMM-shaped work goes
 * through CBLAS (OpenBLAS) and loops may use OpenMP. Buffers are host memory, so a tensor's
 * data is `(char *)buf->impl + offset`.
 *
 * Each dbk_cpu_<op> implements the contract of the matching DBK_OP_* in backend/op_list.h; the
 * descriptor has been validated by backend.c before the call.
 */
#ifndef DBK_CPU_INTERNAL_H
#define DBK_CPU_INTERNAL_H

#include "backend/backend_impl.h"

typedef struct dbk_cpu_state {
    float *workspace;          /* scratch for im2col and friends, grown by prepare */
    size_t workspace_bytes;
    float *half_scratch;       /* f16 operands widened to f32 (amp.c), grown by prepare */
    size_t half_scratch_bytes;
} dbk_cpu_state;

/* Host pointer of a tensor's first element. */
static inline void *dbk_cpu_ptr(const dbk_tensor *t) { return (char *)t->buf->impl + t->offset; }
static inline float *dbk_cpu_f32(const dbk_tensor *t) { return (float *)dbk_cpu_ptr(t); }
static inline int32_t *dbk_cpu_i32(const dbk_tensor *t) { return (int32_t *)dbk_cpu_ptr(t); }
static inline uint8_t *dbk_cpu_u8(const dbk_tensor *t) { return (uint8_t *)dbk_cpu_ptr(t); }

/* Scratch memory of at least nbytes, owned by the backend (valid until the next call).
 * Grows only when prepare was not told about this size; then it logs at debug level. */
dbk_status dbk_cpu_workspace(dbk_backend *be, size_t nbytes, float **out);

/* Workspace bytes an op needs (0 for most ops); used by prepare. */
size_t dbk_cpu_conv_workspace_bytes(const dbk_op_desc *op);

/* f16 inputs (amp.c): an op other than the casts whose src slots include f16 tensors (the
 * operands of a convolution or GEMM, the saved input of a backward op) runs as the f32 op on
 * those inputs widened into half_scratch (at least nbytes: dbk_cpu_half_scratch grows it). */
bool       dbk_cpu_widens(const dbk_op_desc *op);
size_t     dbk_cpu_widened_bytes(const dbk_op_desc *op);
dbk_status dbk_cpu_half_scratch(dbk_backend *be, size_t nbytes);
dbk_status dbk_cpu_run_widened(dbk_backend *be, const dbk_op_desc *op, dbk_op_fn run);

/* dbk_cpu_<name> of every op of op_list.h, defined in <family>.c (conv.c, gemm.c, bn.c,
 * eltwise.c, pool.c, loss.c, optim.c, augment.c, bias.c). */
#define DBK_CPU_DECLARE_(E, name, ...) dbk_status dbk_cpu_##name(dbk_backend *be, const dbk_op_desc *op);
DBK_OP_LIST(DBK_CPU_DECLARE_)
#undef DBK_CPU_DECLARE_

/* The random choices DBK_OP_AUGMENT makes for one batch row (row = state.first + i), the
 * arithmetic the OpenCL and Vulkan kernels reproduce bit for bit. With h_k =
 * dbk_hash_u32(seed, row, k, 0) and below(h, n) = ((uint64_t)h * n) >> 32:
 *   crop_y = below(h_0, 2*pad + 1), crop_x = below(h_1, 2*pad + 1)   (0 when pad == 0)
 *   flip   = h_2 >> 31                (the coin; the op flips only when params.flip is set)
 *   cut_y  = below(h_3, H - cutout + 1), cut_x = below(h_4, W - cutout + 1)  (0 when cutout == 0)
 * Crop offsets index the reflect-padded (H + 2*pad, W + 2*pad) image. */
void dbk_augment_choices(uint32_t seed, uint32_t row, int pad, int cutout, int H, int W, int *crop_y, int *crop_x,
                         int *flip, int *cut_y, int *cut_x);

/* The per-image coin of the alternating flip (params.flip_alternating): dbk_hash_u32(run_seed,
 * j, 5, 0) & 1 for dataset index j. Image j is mirrored in epoch e when base_flip XOR (e & 1). */
int dbk_augment_base_flip(uint32_t run_seed, uint32_t j);
/* cifar10-speedrun's jitter of batch row `row`: b = (2u - 1) * brightness, c = (2u' - 1) *
 * contrast + 1 from the hash purposes 6 and 7 (op_list.h DBK_OP_AUGMENT). */
void dbk_augment_jitter(uint32_t seed, uint32_t row, float brightness, float contrast, float *b, float *c);

#endif
