/*
 * ops.h — the op set every backend implements, and the descriptor that names one op call.
 *
 * Conventions (all backends, all ops):
 *  - Dimension letters: N batch, C input channels, H/W input height/width, K output
 *    channels (or classes), R/S filter height/width, P/Q output height/width.
 *  - Tensors are dense row-major views (core/tensor.h); activations are NCHW fp32, filters
 *    KCRS fp32, labels i32, the resident dataset u8.
 *  - Inputs are desc.src[i], outputs desc.dst[i]; the slot meaning of each op is listed
 *    below. An output never aliases an input unless the op says "in place".
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
 */
#ifndef DBK_OPS_H
#define DBK_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"
#include "core/tensor.h"

typedef enum dbk_op {
    /* y = conv2d(x, w), no bias.                      torch.nn.functional.conv2d
     * src0 x (N,C,H,W)  src1 w (K,C,R,S)  dst0 y (N,K,P,Q)
     * P = (H + 2*pad_h - R) / stride_h + 1 (likewise Q). */
    DBK_OP_CONV2D_FWD,
    /* dx = d(sum y*dy)/dx.    src0 dy (N,K,P,Q)  src1 w (K,C,R,S)  dst0 dx (N,C,H,W) */
    DBK_OP_CONV2D_BWD_DATA,
    /* dw = d(sum y*dy)/dw.    src0 x (N,C,H,W)   src1 dy (N,K,P,Q) dst0 dw (K,C,R,S) */
    DBK_OP_CONV2D_BWD_FILTER,

    /* C = alpha * op(A) op(B) + beta * C, op = transpose if trans_a/trans_b.
     * src0 A (M,K) or (K,M)   src1 B (K,N) or (N,K)   dst0 C (M,N) (read when beta != 0) */
    DBK_OP_GEMM,

    /* Batch norm, training mode: batch statistics over (N,H,W) per channel, biased variance
     * for normalising, unbiased variance for the running estimate.   torch.nn.BatchNorm2d
     * src0 x (N,C,H,W)  src1 gamma (C)  src2 beta (C)
     * dst0 y (N,C,H,W)  dst1 mean (C) saved  dst2 invstd (C) saved = 1/sqrt(var+eps)
     * dst3 running_mean (C) in place  dst4 running_var (C) in place:
     *      running = (1-momentum)*running + momentum*batch_stat */
    DBK_OP_BATCHNORM_FWD_TRAIN,
    /* Batch norm, inference mode with running statistics.
     * src0 x  src1 gamma  src2 beta  src3 running_mean  src4 running_var  dst0 y */
    DBK_OP_BATCHNORM_FWD_INFER,
    /* src0 x  src1 dy  src2 gamma  src3 mean  src4 invstd (dst1/dst2 of FWD_TRAIN)
     * dst0 dx (N,C,H,W)  dst1 dgamma (C)  dst2 dbeta (C) */
    DBK_OP_BATCHNORM_BWD,

    /* y = max(x, 0).       src0 x  dst0 y (any shape; y may alias x: in place allowed) */
    DBK_OP_RELU_FWD,
    /* dx = dy * (y > 0).   src0 y (the forward output)  src1 dy  dst0 dx (dx may alias dy) */
    DBK_OP_RELU_BWD,

    /* Max pool with window R x S (params.pool), no padding.   torch.nn.MaxPool2d
     * Global max pool is R = H, S = W.
     * src0 x (N,C,H,W)  dst0 y (N,C,P,Q)  dst1 argmax i32 (N,C,P,Q): index h*W+w of the
     * winner inside its (n,c) plane; ties go to the first in row-major window order. */
    DBK_OP_MAXPOOL_FWD,
    /* src0 dy (N,C,P,Q)  src1 argmax i32 (N,C,P,Q)  dst0 dx (N,C,H,W), zero except winners
     * (overlapping windows accumulate). */
    DBK_OP_MAXPOOL_BWD,

    /* y = a + b elementwise, same shapes.   src0 a  src1 b  dst0 y (may alias a or b) */
    DBK_OP_ADD,
    /* y = alpha * x.   src0 x  dst0 y (may alias x) */
    DBK_OP_SCALE,

    /* Softmax cross-entropy with label smoothing eps (params.xent):
     * target = (1-eps)*onehot + eps/K;  loss_i = -sum_k target_k * log softmax(z_i)_k.
     *                                         torch.nn.CrossEntropyLoss(label_smoothing=eps)
     * src0 logits (N,K)  src1 labels i32 (N)
     * dst0 probs (N,K) softmax, saved for BWD   dst1 loss_sum f32 (1): += sum_i loss_i */
    DBK_OP_SOFTMAX_XENT_FWD,
    /* dlogits = grad_scale * (probs - target)   (the gradient of grad_scale * sum_i loss_i)
     * src0 probs (N,K)  src1 labels i32 (N)  dst0 dlogits (N,K) */
    DBK_OP_SOFTMAX_XENT_BWD,

    /* Labels outside [0, K) add nothing to loss_sum and get a zero gradient row (device
     * kernels cannot report them; the loader guarantees valid labels). */

    /* Top-1 correct count.  src0 logits (N,K)  src1 labels i32 (N)
     * dst0 correct f32 (1): += number of rows whose argmax (first max) equals the label. */
    DBK_OP_ACCURACY,

    /* SGD with momentum and weight decay over flat buffers, PyTorch's torch.optim.SGD:
     *   g = grad + wd * p;  v = mu * v + g;  step = nesterov ? g + mu * v : v;  p -= lr * step
     * src0 grad (n)  src1 lr f32 (1), written by the host each step
     * dst0 params (n) in place  dst1 momentum v (n) in place */
    DBK_OP_SGD_MOMENTUM_UPDATE,

    /* Builds a normalised float batch from the u8 dataset resident on the device
     * (DESIGN.md decision 4). For batch row i:
     *   j = indices[state.first + i] (or state.first + i when src2 is absent),
     *   label[i] = labels[j]; the image is images[j] (3,H,W) u8, then when params.augment.train:
     *   reflect-pad by pad, random crop back to H x W, random horizontal flip, cutout of a
     *   cutout x cutout square (zeroed after normalisation, i.e. set to the mean), and always
     *   normalised: (v/255 - mean[c]) / std[c].
     * Random choices come from dbk_hash_u32(seed, first + i, purpose, 0) with
     * purpose 0 = crop y, 1 = crop x, 2 = flip, 3 = cutout y, 4 = cutout x (see
     * dbk_augment_choices in backends/cpu for the exact draw). The cutout square's top-left
     * corner is uniform over [0, H - cutout] x [0, W - cutout].
     * The host guarantees every j lies in [0, M): the CPU backend checks and returns
     * DBK_ERR_INVALID_ARG, device kernels cannot report it.
     * src0 images u8 (M,3,H,W)  src1 labels u8 (M)  src2 indices i32 (L) or absent
     * src3 state i32 (2): {first, seed}, written by the host each step
     * dst0 x f32 (N,3,H,W)  dst1 labels i32 (N) */
    DBK_OP_AUGMENT,

    /* dst0 = value for every element (f32).  dst0 (any) */
    DBK_OP_FILL,
    /* dst0 = src0 (same dtype and element count). */
    DBK_OP_COPY,

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
} dbk_pool_params;

typedef struct dbk_scale_params {
    float alpha;
} dbk_scale_params;

typedef struct dbk_xent_params {
    float label_smoothing;  /* eps in [0, 1) */
    float grad_scale;       /* BWD only: 1 for a loss summed over the batch, 1/N for a mean */
} dbk_xent_params;

typedef struct dbk_sgd_params {
    float momentum;
    float weight_decay;
    bool  nesterov;
} dbk_sgd_params;

typedef struct dbk_augment_params {
    bool  train;            /* false: no crop/flip/cutout (evaluation); normalise only */
    int   pad;              /* reflect padding before the random crop, e.g. 4 */
    bool  flip;             /* random horizontal flip with probability 1/2 */
    int   cutout;           /* side of the cutout square, 0 = none */
    float mean[3];          /* per channel, on the [0,1] scale */
    float std[3];
} dbk_augment_params;

typedef struct dbk_fill_params {
    float value;
} dbk_fill_params;

#define DBK_OP_MAX_SRC 5
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
        dbk_sgd_params     sgd;
        dbk_augment_params augment;
        dbk_fill_params    fill;
    } p;
    const char *label;      /* optional, for logs and profiles, e.g. "layer1.conv" (borrowed) */
} dbk_op_desc;

const char *dbk_op_name(dbk_op op);   /* "conv2d_fwd", ... */

/* Checks that shapes and dtypes of desc agree with the op's contract above. Returns
 * DBK_ERR_INVALID_ARG with a message naming the op and the offending tensor otherwise.
 * Every backend calls this before dispatching, so contract errors are uniform. */
dbk_status dbk_op_validate(const dbk_op_desc *desc);

/* Floating-point operations of one call (2 per multiply-add for conv/GEMM), for profiles. */
double dbk_op_flops(const dbk_op_desc *desc);

#endif
