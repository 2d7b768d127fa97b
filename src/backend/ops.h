/*
 * ops.h — the op set every backend implements, and the descriptor that names one op call.
 * The ops themselves, each with its contract (slots, shapes, PyTorch semantics), are
 * declared once in op_list.h; the enum, names, validation, FLOP and byte counts here and
 * every backend's dispatch table and the op tests' coverage are generated from that list.
 *
 * Conventions (all backends, all ops):
 *  - Dimension letters: N batch, C input channels, H/W input height/width, K output
 *    channels (or classes), R/S filter height/width, P/Q output height/width.
 *  - Tensors are dense row-major views (core/tensor.h); activations are NCHW fp32, filters
 *    KCRS fp32, labels i32, the resident dataset u8.
 *  - Inputs are desc.src[i], outputs desc.dst[i]; the slot meaning of each op is listed
 *    in op_list.h. An output never aliases an input unless the op says "in place".
 *  - Backward ops OVERWRITE their outputs (no accumulation); where a gradient has two
 *    consumers (a residual block's input), the model adds them with DBK_OP_ADD.
 *    The only accumulating outputs are the epoch counters of SOFTMAX_XENT_FWD and ACCURACY,
 *    which add into a single f32 so that a training step reads nothing back.
 *  - Values that change every step (learning rate, augmentation seed and batch offset) are
 *    read from small device tensors, not from the descriptor, so a backend may record a
 *    step's descriptors once and replay them (Vulkan) and the host only writes those few
 *    bytes per step.
 *
 * Semantics follow PyTorch where an equivalent exists; each op cites the doc it matches.
 *
 * How to add an op (DESIGN.md decision 0: its declaration, its kernels, its tests):
 *  1. op_list.h: one X(...) row with its contract comment; a new parameter struct goes into
 *     dbk_op_desc.p below; a new validation, FLOP or byte helper into ops.c.
 *  2. CPU: dbk_cpu_<name> in src/backends/cpu/<family>.c (declared by the generated list in
 *     cpu_internal.h).
 *  3. Devices. Elementwise (launch EW, op_list.h says what fits): the kernel <name> in
 *     cl/<family>.cl and shaders/<name>.comp, nothing else. Launch FAMILY: its case in the
 *     family's dbk_ocl_record_<family> and dbk_vk_record_<family>. Otherwise (OWN):
 *     dbk_ocl_record_<name> in src/backends/opencl/ocl_ops_<family>.c and dbk_vk_record_<name>
 *     in src/backends/vulkan/vk_ops_<family>.c with their kernels and shaders. A device that
 *     lacks the op says so in the where column (the op tests print "not supported by").
 *  4. Tests: <name>_cases in src/check/op_cases.c (every op; checked on every backend
 *     against the CPU), and for grad BWD or SELF <name>_should_match_finite_differences in
 *     tests/test_grad.c. A missing one fails those tests, naming the op.
 */
#ifndef DBK_OPS_H
#define DBK_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/op_list.h"
#include "core/status.h"
#include "core/tensor.h"

/* DBK_OP_CONV2D_FWD, ...: one value per op of op_list.h, where each op's contract is. */
typedef enum dbk_op {
#define DBK_OP_ENUM_(E, ...) DBK_OP_##E,
    DBK_OP_LIST(DBK_OP_ENUM_)
#undef DBK_OP_ENUM_
    DBK_OP_COUNT
} dbk_op;

typedef struct dbk_conv2d_params {
    int stride_h, stride_w;
    int pad_h, pad_w;       /* zero padding on each side */
} dbk_conv2d_params;

typedef struct dbk_gemm_params {
    bool  trans_a, trans_b;
    float alpha, beta;
} dbk_gemm_params;

typedef struct dbk_bn_params {
    float eps;              /* 1e-5 in PyTorch */
    float momentum;         /* 0.1 in PyTorch */
} dbk_bn_params;

typedef struct dbk_pool_params {
    int size_h, size_w;     /* window R x S */
    int stride_h, stride_w;
    int pad_h, pad_w;       /* implicit -inf border, at most half the window (as torch) */
} dbk_pool_params;

typedef struct dbk_scale_params {
    float alpha;
} dbk_scale_params;

typedef struct dbk_xent_params {
    float label_smoothing;  /* eps in [0, 1) */
    float grad_scale;       /* BWD only: 1 for a loss summed over the batch, 1/N for a mean */
} dbk_xent_params;

/* DBK_OP_ACCURACY. */
typedef struct dbk_accuracy_params {
    int32_t k;              /* top-k: a row counts when its label ranks among the k largest
                               logits; 0 (a zeroed descriptor) means 1 */
} dbk_accuracy_params;

/* DBK_OP_AMP_UPDATE_SCALE (a float: launched as EW). */
typedef struct dbk_amp_params {
    float growth_interval;  /* clean steps before S doubles, >= 1 */
} dbk_amp_params;

typedef struct dbk_sgd_params {
    float momentum;
    float weight_decay;
    int32_t nesterov;       /* 0 or 1 (a 32-bit word: an EW op's params, op_list.h) */
} dbk_sgd_params;

/* DBK_OP_ADAMW_UPDATE (torch.optim.AdamW, amsgrad off). The step-dependent values (learning
 * rate, bias corrections) come from device memory, so a recorded step replays. */
typedef struct dbk_adamw_params {
    float beta1;            /* first-moment decay, in [0, 1), e.g. 0.9 */
    float beta2;            /* second-moment decay, in [0, 1), e.g. 0.999 */
    float eps;              /* > 0, added to the bias-corrected sqrt(v) */
    float weight_decay;     /* decoupled: p *= 1 - lr * weight_decay before the Adam step */
} dbk_adamw_params;

/* DBK_OP_AUGMENT (op_list.h has the exact draws). The fields after std, left zero, keep the
 * behaviour from before they existed. */
typedef struct dbk_augment_params {
    bool  train;            /* false: no draws (evaluation); normalise the view below only */
    int   pad;              /* reflect padding before the random crop, e.g. 4 (train only) */
    bool  flip;             /* random horizontal flip with probability 1/2 (train only) */
    int   cutout;           /* side of the cutout square, 0 = none (train only) */
    float mean[3];          /* per channel, on the [0,1] scale */
    float std[3];
    bool  flip_alternating; /* train, needs flip: airbench's flip, a per-image coin for the
                               run XOR (epoch & 1), instead of a fresh coin per row */
    int   view_dy, view_dx; /* evaluation only: the fixed test-time view, a reflect shift */
    bool  view_flip;        /* evaluation only: mirror the shifted view horizontally */
    float brightness;       /* train: per image x = (x + b) * c after normalisation, b uniform in */
    float contrast;         /* [-brightness, brightness), c in 1 + [-contrast, contrast) (0: none;
                               cifar10-speedrun's batch_color_jitter) */
} dbk_augment_params;

/* The augment op's normalisation as one multiply and one add per channel, x = v * scale[c] +
 * shift[c] for the byte v: scale = 1 / (255 std), shift = -mean / std, computed here once in
 * double and rounded to float, so every backend applies the same two correctly rounded fp32
 * operations and gets the same bits. A division in a kernel is not correctly rounded on every
 * device (Vulkan allows 2.5 ULP, and NVIDIA's driver takes it); a multiply and an add are. */
void dbk_augment_affine(const dbk_augment_params *p, float scale[3], float shift[3]);

/* DBK_OP_LEAKY_RELU_FWD / _BWD (elementwise: floats only). */
typedef struct dbk_leaky_params {
    float slope;            /* negative_slope, > 0 (fast.ai's DarkNet: 0.1) */
} dbk_leaky_params;

/* DBK_OP_DROPOUT_FWD / _BWD. */
typedef struct dbk_dropout_params {
    float    p;             /* probability of zeroing an element, in [0, 1) */
    uint32_t salt;          /* tells the dropout layers of one network apart (their masks differ) */
} dbk_dropout_params;

typedef struct dbk_fill_params {
    float value;
} dbk_fill_params;

/* DBK_OP_FISHER_ACCUMULATE (elementwise: floats only). */
typedef struct dbk_fisher_params {
    float absolute;         /* 1: acc += |g| (FISH's "absolute"); 0: acc += g * g ("square") */
} dbk_fisher_params;

/* DBK_OP_SPARSE_SCATTER. */
typedef struct dbk_scatter_params {
    bool  constant;         /* y[index] = value for every pair (a mask), else the pair's own value */
    float value;
} dbk_scatter_params;
/* DBK_OP_MUON_MOMENTUM (elementwise: floats only). */
typedef struct dbk_muon_momentum_params {
    float momentum;         /* airbench94_muon 0.6, speedrun 0.655 */
    float nesterov;         /* 1: u = g + momentum * v; 0: u = v */
} dbk_muon_momentum_params;

/* DBK_OP_NORM_SCALE. */
typedef struct dbk_norm_scale_params {
    float alpha;            /* the target norm per unit of the step's g (sqrt(K) to renormalise a filter) */
    float eps;              /* added to the norm: X / (||X|| + eps) */
} dbk_norm_scale_params;

/* DBK_OP_MUON_UPDATE (elementwise: floats only). */
typedef struct dbk_muon_update_params {
    float weight_decay;     /* decoupled, after the step: p *= 1 - lr * weight_decay (0: none) */
} dbk_muon_update_params;

/* DBK_OP_SPARSE_SELECT (gradient compression). */
typedef struct dbk_select_params {
    bool  topk;             /* top-k per segment (the segments' k), else threshold */
    float threshold;        /* threshold: magnitudes >= this are kept, > 0 */
} dbk_select_params;

/* DBK_OP_QUANT_ENCODE / QUANT_ADD (gradient compression: TernGrad, QSGD; core/quant.h). */
typedef struct dbk_quant_params {
    int32_t  levels;        /* 0: TernGrad; QSGD's levels q in [1, 65535] */
    uint32_t seed_lo;       /* ENCODE: the draws' 64-bit seed */
    uint32_t seed_hi;
    float    alpha;         /* ADD: acc += alpha * decoded */
} dbk_quant_params;

/* Rows of DBK_OP_SPARSE_SELECT's chunk table for segments (S,3) {offset, count, k}: each
 * segment cut into pieces of at most chunk elements. Writes (C,3) rows into chunks when it
 * is not NULL; returns C. */
int dbk_select_chunks(const int32_t *segments, int segment_count, int chunk, int32_t *chunks);

#define DBK_OP_MAX_SRC 6   /* BATCHNORM_RELU_BWD, _RELU_ADD_BWD: batch norm's five sources and ReLU's mask source */
#define DBK_OP_MAX_DST 5

typedef struct dbk_op_desc {
    dbk_op     op;
    dbk_tensor src[DBK_OP_MAX_SRC];
    dbk_tensor dst[DBK_OP_MAX_DST];
    union {
        dbk_conv2d_params  conv;
        dbk_gemm_params    gemm;
        dbk_bn_params      bn;
        dbk_pool_params    pool;
        dbk_scale_params   scale;
        dbk_xent_params    xent;
        dbk_accuracy_params accuracy;
        dbk_sgd_params     sgd;
        dbk_adamw_params   adamw;
        dbk_amp_params     amp;
        dbk_leaky_params   leaky;
        dbk_dropout_params dropout;
        dbk_augment_params augment;
        dbk_fill_params    fill;
        dbk_muon_momentum_params muon_momentum;
        dbk_norm_scale_params norm_scale;
        dbk_muon_update_params muon_update;
        dbk_select_params  select;
        dbk_quant_params   quant;
        dbk_fisher_params  fisher;
        dbk_scatter_params scatter;
    } p;
    const char *label;      /* optional, for logs and profiles, e.g. "layer1.conv" (borrowed) */
} dbk_op_desc;

/* How an op is differentiated (op_list.h grad column). */
typedef enum dbk_op_grad {
    DBK_OP_GRAD_NONE,       /* not differentiated (counters, optimizer, data, copies) */
    DBK_OP_GRAD_FWD,        /* a forward op; its backward op is listed separately */
    DBK_OP_GRAD_BWD,        /* a backward op: finite-difference checked by test_grad */
    DBK_OP_GRAD_SELF,       /* linear, its own backward (GEMM, add, scale): checked too */
} dbk_op_grad;

/* Which device backends have an op (op_list.h where column); the CPU has every op. */
typedef enum dbk_op_where {
    DBK_OP_WHERE_ALL,
    DBK_OP_WHERE_NO_VK,
    DBK_OP_WHERE_NO_OCL,
    DBK_OP_WHERE_CPU_ONLY,
} dbk_op_where;

/* One row of op_list.h as data. */
typedef struct dbk_op_info {
    dbk_op       op;
    const char  *name;          /* "conv2d_fwd" */
    const char  *family;        /* "conv": cpu/conv.c, cl/conv*.cl, vulkan/vk_ops_conv.c */
    const char  *src_slots;     /* "dy w": names of src[0], src[1], ...; "name?" = optional,
                                   "name#" = counted (dbk_op_slot_marks) */
    const char  *dst_slots;
    const char  *params;        /* member of dbk_op_desc.p, or "none" */
    size_t       param_bytes;   /* its size (0 for none) */
    dbk_op_grad  grad;
    bool         eltwise;       /* launch EW: generic elementwise kernel / shader <name> */
    dbk_op_where where;
    dbk_status (*check)(const dbk_op_desc *desc);   /* the contract; dbk_op_validate */
    double     (*flops)(const dbk_op_desc *desc);
    double     (*bytes)(const dbk_op_desc *desc);
} dbk_op_info;

/* The row of `op`; NULL when op is not a valid dbk_op. */
const dbk_op_info *dbk_op_get_info(dbk_op op);

const char *dbk_op_name(dbk_op op);   /* "conv2d_fwd", ...; "unknown_op" when out of range */
int         dbk_op_nsrc(dbk_op op);   /* src slots of the declaration (optional ones included) */
int         dbk_op_ndst(dbk_op op);   /* dst slots */

/* The marks of slot i of the declaration (op_list.h): DBK_SLOT_OPTIONAL for "name?" (the
 * tensor may be absent), DBK_SLOT_COUNTED for "name#" (an EW kernel is told its element
 * count); 0 for none or past the last slot. */
enum { DBK_SLOT_OPTIONAL = 1u, DBK_SLOT_COUNTED = 2u };
unsigned dbk_op_slot_marks(dbk_op op, bool dst, int i);
/* The element offset an EW kernel is given for an absent optional slot (op_list.h). */
#define DBK_EW_ABSENT 0xffffffffu

/* The op named `name` ("conv2d_fwd"); DBK_ERR_INVALID_ARG naming it when there is none. */
dbk_status dbk_op_from_name(const char *name, dbk_op *out);

/* Checks that shapes and dtypes of desc agree with the op's contract in op_list.h. Returns
 * DBK_ERR_INVALID_ARG with a message naming the op and the offending tensor otherwise.
 * Every backend calls this before dispatching, so contract errors are uniform. */
dbk_status dbk_op_validate(const dbk_op_desc *desc);

/* Floating-point operations of one call (2 per multiply-add for conv/GEMM), for profiles. */
double dbk_op_flops(const dbk_op_desc *desc);

/* Bytes one call reads plus writes (every present tensor once; AUGMENT counts the batch it
 * reads, one u8 per output element, not the whole resident dataset), for profiles. */
double dbk_op_bytes(const dbk_op_desc *desc);

/* Convolution geometry, the same for the three directions: which slot holds the forward's
 * x, w and y (for BWD_DATA x is dx and y is dy; for BWD_FILTER w is dw and y is dy), and the
 * dimension letters. Used by validation, FLOP counts and every backend's convolution. */
typedef struct dbk_conv2d_geom {
    const dbk_tensor *x;        /* (N,C,H,W) */
    const dbk_tensor *w;        /* (K,C,R,S) */
    const dbk_tensor *y;        /* (N,K,P,Q) */
    int64_t N, C, H, W, K, R, S, P, Q;
    int     stride_h, stride_w, pad_h, pad_w;
} dbk_conv2d_geom;

/* The geometry of a CONV2D_FWD, _BWD_DATA or _BWD_FILTER descriptor (asserts the op). The
 * letters are read from the tensors as they are; dbk_op_validate checks they agree. */
dbk_conv2d_geom dbk_conv2d_geom_of(const dbk_op_desc *desc);

/* Output length of a convolution or pooling window along one axis: (in + 2 pad - k) / stride + 1. */
static inline int64_t dbk_conv_out_len(int64_t in, int64_t k, int stride, int pad) {
    return (in + 2 * pad - k) / stride + 1;
}

#endif
