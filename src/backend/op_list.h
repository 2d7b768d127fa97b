/*
 * op_list.h — THE op list: every op daybreak has, declared once, with its contract.
 *
 * DBK_OP_LIST(X) calls X once per op, in enum order, with these columns:
 *
 *   X(ENUM, name, family, src, dst, params, check, flops, bytes, grad, launch, where)
 *
 *   ENUM    DBK_OP_<ENUM> in the dbk_op enum (ops.h)
 *   name    the op's name: dbk_op_name, the CLI and logs, and the per-op functions
 *           dbk_cpu_<name> (backends/cpu), dbk_ocl_record_<name> (backends/opencl),
 *           dbk_vk_record_<name> (backends/vulkan), <name>_cases (src/check/op_cases.c),
 *           <name>_should_match_finite_differences (tests/test_grad.c)
 *   family  the file family in every backend, so a grep finds all of an op: cpu/<family>.c,
 *           cl/<family>.cl, opencl/ocl_ops_<family>.c, vulkan/vk_ops_<family>.c (GEMM, the
 *           one exception: cl/gemm_tiled.cl, ocl_blas.c, and vk_ops_conv.c with the
 *           convolutions that share its tiled core; conv kernels: cl/conv2d_im2col.cl);
 *           shaders are shaders/<name>.comp or <family>_<pass>.comp (bn_stats.comp)
 *   src,dst slot names of desc.src[i] / desc.dst[i], space-separated; "name?" = optional;
 *           "name#" = counted: an EW kernel is told its element count (below)
 *   params  the member of dbk_op_desc.p the op reads, or none
 *   check   the validation function in ops.c (shapes and dtypes against the contract)
 *   flops   an expression of `const dbk_op_desc *d` in ops.c: floating-point operations
 *           (2 per multiply-add)
 *   bytes   an expression of d in ops.c: bytes read plus bytes written
 *   grad    NONE (not differentiated), FWD (a forward whose backward op is listed), BWD (a
 *           backward op) or SELF (linear: its backward is the op itself, e.g. GEMM with
 *           transposes); BWD and SELF ops must have a finite-difference check in test_grad
 *   launch  OWN: each device backend has its own recorder dbk_<b>_record_<name>;
 *           FAMILY: the ops of the family share one recorder per device backend,
 *           dbk_<b>_record_<family>, which tells them apart by desc.op (batch norm and its
 *           fusions);
 *           EW: elementwise over numel(dst0) values, launched generically: the OpenCL
 *           kernel <name> of cl/ and the shader shaders/<name>.comp (see "elementwise
 *           kernels" below); no host code in the device backends
 *   where   the device backends that have the op: ALL, NO_VK, NO_OCL or CPU_ONLY (the CPU
 *           reference has every op: it is the specification)
 *
 * Elementwise kernels (launch EW): the OpenCL kernel takes, in order, (buffer, element
 * offset) per src slot, then per dst slot, then the params struct's 32-bit words (float,
 * int32_t or uint32_t, in member order), then the element count of each slot marked "name#"
 * (int, in slot order), then the element count n of dst0 as int, and runs one work-item per
 * element (n rounded up: check bounds). The shader binds src slots then dst slots at
 * bindings 0, 1, ... and reads the push constants of shaders/common/eltwise_head.glsl (n,
 * element offsets, the params' words then the "#" counts in p[], the dispatch's first
 * element), grid-stride over n. An EW op's params struct holds 32-bit words only (no bool).
 * A slot whose element count is not n (a scalar, a step's few values: LOSS_SCALE's s,
 * GRAD_UNSCALE's inv and found, SGD's lr) is bound whole (never split into chunks) and read
 * or written at its own element offset. An absent optional slot ("name?") is passed with
 * the element offset DBK_EW_ABSENT (0xffffffff; EW_PRESENT in the kernels) and another
 * slot's buffer, never read.
 *
 * Slot conventions and contract rules common to all ops are in ops.h.
 */
#ifndef DBK_OP_LIST_H
#define DBK_OP_LIST_H

/* clang-format off */
#define DBK_OP_LIST(X)                                                                          \
    /* y = conv2d(x, w), no bias.                      torch.nn.functional.conv2d             \
     * src0 x (N,C,H,W)  src1 w (K,C,R,S)  dst0 y (N,K,P,Q)                                   \
     * P = (H + 2*pad_h - R) / stride_h + 1 (likewise Q). */                                  \
    X(CONV2D_FWD, conv2d_fwd, conv, "x w", "y", conv, check_conv2d,                           \
      conv2d_flops(d), all_bytes(d), FWD, OWN, ALL)                                           \
    /* dx = d(sum y*dy)/dx.    src0 dy (N,K,P,Q)  src1 w (K,C,R,S)  dst0 dx (N,C,H,W) */      \
    X(CONV2D_BWD_DATA, conv2d_bwd_data, conv, "dy w", "dx", conv, check_conv2d,               \
      conv2d_flops(d), all_bytes(d), BWD, OWN, ALL)                                           \
    /* dw = d(sum y*dy)/dw.    src0 x (N,C,H,W)   src1 dy (N,K,P,Q) dst0 dw (K,C,R,S) */      \
    X(CONV2D_BWD_FILTER, conv2d_bwd_filter, conv, "x dy", "dw", conv, check_conv2d,           \
      conv2d_flops(d), all_bytes(d), BWD, OWN, ALL)                                           \
                                                                                              \
    /* C = alpha * op(A) op(B) + beta * C, op = transpose if trans_a/trans_b.                 \
     * src0 A (M,K) or (K,M)   src1 B (K,N) or (N,K)   dst0 C (M,N) (read when beta != 0) */  \
    X(GEMM, gemm, gemm, "A B", "C", gemm, check_gemm,                                         \
      gemm_flops(d), all_bytes(d), SELF, OWN, ALL)                                            \
                                                                                              \
    /* Batch norm, training mode: batch statistics over (N,H,W) per channel, biased variance  \
     * for normalising, unbiased variance for the running estimate.   torch.nn.BatchNorm2d    \
     * src0 x (N,C,H,W)  src1 gamma (C)  src2 beta (C)                                        \
     * dst0 y (N,C,H,W)  dst1 mean (C) saved  dst2 invstd (C) saved = 1/sqrt(var+eps)         \
     * dst3 running_mean (C) in place  dst4 running_var (C) in place:                         \
     *      running = (1-momentum)*running + momentum*batch_stat */                           \
    X(BATCHNORM_FWD_TRAIN, batchnorm_fwd_train, bn, "x gamma beta",                           \
      "y mean invstd running_mean running_var", bn, check_bn_fwd_train,                       \
      8.0 * n_src(d, 0), all_bytes(d), FWD, FAMILY, ALL)                                      \
    /* Batch norm, inference mode with running statistics.                                    \
     * src0 x  src1 gamma  src2 beta  src3 running_mean  src4 running_var  dst0 y */          \
    X(BATCHNORM_FWD_INFER, batchnorm_fwd_infer, bn, "x gamma beta running_mean running_var",  \
      "y", bn, check_bn_fwd_infer, 2.0 * n_src(d, 0), all_bytes(d), NONE, FAMILY, ALL)       \
    /* src0 x  src1 dy  src2 gamma  src3 mean  src4 invstd (dst1/dst2 of FWD_TRAIN)           \
     * dst0 dx (N,C,H,W)  dst1 dgamma (C)  dst2 dbeta (C). x may be f16 (mixed precision:    \
     * the f16 copy of the forward input), read widened to f32; all else is f32. */           \
    X(BATCHNORM_BWD, batchnorm_bwd, bn, "x dy gamma mean invstd", "dx dgamma dbeta", bn,      \
      check_bn_bwd, 10.0 * n_src(d, 0), all_bytes(d), BWD, FAMILY, ALL)                       \
    /* Fusion (docs/fusion.md; the graph emits these where ReLU follows batch norm in place,  \
     * fp32 only): BATCHNORM_FWD_TRAIN then RELU_FWD on y, in one op: y = max(bn(x), 0).       \
     * Slots as BATCHNORM_FWD_TRAIN. */                                                       \
    X(BATCHNORM_RELU_FWD_TRAIN, batchnorm_relu_fwd_train, bn, "x gamma beta",                 \
      "y mean invstd running_mean running_var", bn, check_bn_fwd_train,                       \
      9.0 * n_src(d, 0), all_bytes(d), FWD, FAMILY, ALL)                                      \
    /* RELU_BWD then BATCHNORM_BWD in one op: BATCHNORM_BWD with dy replaced by               \
     * dy * (y > 0), y the fused forward's output; dy itself is not written.                  \
     * src0 x  src1 dy  src2 gamma  src3 mean  src4 invstd  src5 y (N,C,H,W)                  \
     * dst0 dx  dst1 dgamma  dst2 dbeta (as BATCHNORM_BWD) */                                 \
    X(BATCHNORM_RELU_BWD, batchnorm_relu_bwd, bn, "x dy gamma mean invstd y",                 \
      "dx dgamma dbeta", bn, check_bn_relu_bwd, 11.0 * n_src(d, 0), all_bytes(d), BWD, FAMILY, ALL)\
    /* Fusion of the residual add (docs/fusion.md; the graph emits these where a residual add  \
     * takes a fused batch norm + ReLU's output, fp32 only): y = max(bn(x), 0) + skip, the      \
     * ReLU's output never written. Slots as BATCHNORM_FWD_TRAIN plus src3 skip (N,C,H,W). */   \
    X(BATCHNORM_RELU_ADD_FWD_TRAIN, batchnorm_relu_add_fwd_train, bn, "x gamma beta skip",    \
      "y mean invstd running_mean running_var", bn, check_bn_fwd_train_skip,                  \
      10.0 * n_src(d, 0), all_bytes(d), FWD, FAMILY, ALL)                                     \
    /* Its backward with respect to x, gamma and beta (skip's gradient is dy itself):          \
     * BATCHNORM_RELU_BWD with the mask recomputed as (x - mean) * (invstd * gamma) + beta > 0  \
     * in float, the forward's own arithmetic, so no ReLU output is kept.                      \
     * src0 x  src1 dy  src2 gamma  src3 mean  src4 invstd  src5 beta (C)                      \
     * dst0 dx  dst1 dgamma  dst2 dbeta (as BATCHNORM_BWD) */                                 \
    X(BATCHNORM_RELU_ADD_BWD, batchnorm_relu_add_bwd, bn, "x dy gamma mean invstd beta",      \
      "dx dgamma dbeta", bn, check_bn_relu_add_bwd, 16.0 * n_src(d, 0), all_bytes(d), BWD, FAMILY, ALL)\
    /* The same for ResNet-18/50's add, which ReLU follows: y = max(bn(x) + skip, 0). Its      \
     * backward is BATCHNORM_RELU_BWD with y as the mask, and RELU_BWD for skip's gradient.     \
     * Slots as BATCHNORM_RELU_ADD_FWD_TRAIN. */                                              \
    X(BATCHNORM_ADD_RELU_FWD_TRAIN, batchnorm_add_relu_fwd_train, bn, "x gamma beta skip",    \
      "y mean invstd running_mean running_var", bn, check_bn_fwd_train_skip,                  \
      10.0 * n_src(d, 0), all_bytes(d), FWD, FAMILY, ALL)                                     \
    /* Fusion of the 2x2 max pool that follows (docs/fusion.md; fp32 training only):          \
     * y = MAXPOOL_FWD 2x2, stride 2, no padding, of max(bn(x), 0), ties and NaN as there;   \
     * the full-size ReLU output is never written and no argmax is kept.                      \
     * src as BATCHNORM_FWD_TRAIN  dst0 y (N,C,H/2,W/2)  dst1-4 as BATCHNORM_FWD_TRAIN */     \
    X(BATCHNORM_RELU_POOL_FWD_TRAIN, batchnorm_relu_pool_fwd_train, bn, "x gamma beta",       \
      "y mean invstd running_mean running_var", bn, check_bn_relu_pool_fwd_train,             \
      12.0 * n_src(d, 0), all_bytes(d), FWD, FAMILY, ALL)                                     \
    /* Its backward: MAXPOOL_BWD, RELU_BWD and BATCHNORM_BWD in one op. Each window's winner  \
     * and ReLU mask are recomputed from x with the forward's float arithmetic                \
     * ((x - mean) * (invstd * gamma) + beta), so dy reaches x exactly where it did unfused.  \
     * src0 x  src1 dy (N,C,H/2,W/2)  src2 gamma  src3 mean  src4 invstd  src5 beta (C)       \
     * dst0 dx  dst1 dgamma  dst2 dbeta (as BATCHNORM_BWD) */                                 \
    X(BATCHNORM_RELU_POOL_BWD, batchnorm_relu_pool_bwd, bn, "x dy gamma mean invstd beta",    \
      "dx dgamma dbeta", bn, check_bn_relu_pool_bwd, 24.0 * n_src(d, 0), all_bytes(d), BWD, FAMILY, ALL)\
                                                                                              \
    /* y = max(x, 0).       src0 x  dst0 y (any shape; y may alias x: in place allowed) */    \
    X(RELU_FWD, relu_fwd, eltwise, "x", "y", none, check_eltwise,                             \
      n_dst(d, 0), all_bytes(d), FWD, EW, ALL)                                                \
    /* dx = dy * (y > 0).   src0 y (the forward output)  src1 dy  dst0 dx (dx may alias dy)   \
     * y may be f16 (mixed precision: the f16 copy of the output); dy, dx are f32. */         \
    X(RELU_BWD, relu_bwd, eltwise, "y dy", "dx", none, check_relu_bwd,                        \
      n_dst(d, 0), all_bytes(d), BWD, EW, ALL)                                                \
    /* y = x > 0 ? x : slope * x.      torch.nn.LeakyReLU(negative_slope=slope)              \
     * src0 x  dst0 y (any shape; y may alias x: in place allowed) */                         \
    X(LEAKY_RELU_FWD, leaky_relu_fwd, eltwise, "x", "y", leaky, check_leaky_relu,             \
      n_dst(d, 0), all_bytes(d), FWD, EW, ALL)                                                \
    /* dx = y > 0 ? dy : slope * dy (slope > 0, so y > 0 exactly when x > 0).                 \
     * src0 y (the forward output)  src1 dy  dst0 dx (dx may alias dy) */                     \
    X(LEAKY_RELU_BWD, leaky_relu_bwd, eltwise, "y dy", "dx", leaky, check_leaky_relu,         \
      n_dst(d, 0), all_bytes(d), BWD, EW, ALL)                                                \
                                                                                              \
    /* Max pool with window R x S, stride, padding pad_h, pad_w <= R/2, S/2 (params.pool):   \
     * torch.nn.MaxPool2d; the padding is -inf (it never wins). Global: R = H, S = W.         \
     * P = (H + 2 pad_h - R) / stride_h + 1, Q likewise.                                      \
     * src0 x (N,C,H,W)  dst0 y (N,C,P,Q)  dst1 argmax i32 (N,C,P,Q): index h*W+w of the      \
     * winner inside its (n,c) plane; ties go to the first in row-major window order. */      \
    X(MAXPOOL_FWD, maxpool_fwd, pool, "x", "y argmax", pool, check_maxpool,                   \
      n_src(d, 0), all_bytes(d), FWD, OWN, ALL)                                               \
    /* src0 dy (N,C,P,Q)  src1 argmax i32 (N,C,P,Q)  dst0 dx (N,C,H,W), zero except winners   \
     * (overlapping windows accumulate). */                                                   \
    X(MAXPOOL_BWD, maxpool_bwd, pool, "dy argmax", "dx", pool, check_maxpool,                 \
      0.0, all_bytes(d), BWD, OWN, ALL)                                                       \
    /* Global average pool: y[n,c] = mean over h,w of x[n,c,h,w].                              \
     *                                         torch.nn.AdaptiveAvgPool2d(1)                  \
     * src0 x (N,C,H,W)  dst0 y (N,C,1,1) (the shape a linear layer's input takes) */         \
    X(GLOBAL_AVGPOOL_FWD, global_avgpool_fwd, pool, "x", "y", none, check_global_avgpool,     \
      n_src(d, 0), all_bytes(d), FWD, OWN, ALL)                                               \
    /* dx[n,c,h,w] = dy[n,c] / (H*W) (overwrites).  src0 dy (N,C,1,1)  dst0 dx (N,C,H,W) */   \
    X(GLOBAL_AVGPOOL_BWD, global_avgpool_bwd, pool, "dy", "dx", none, check_global_avgpool,   \
      n_dst(d, 0), all_bytes(d), BWD, OWN, ALL)                                               \
                                                                                              \
    /* y = a + b elementwise, same shapes.   src0 a  src1 b  dst0 y (may alias a or b) */     \
    X(ADD, add, eltwise, "a b", "y", none, check_eltwise,                                     \
      n_dst(d, 0), all_bytes(d), SELF, EW, ALL)                                               \
    /* y = alpha * x.   src0 x  dst0 y (may alias x) */                                       \
    X(SCALE, scale, eltwise, "x", "y", scale, check_eltwise,                                  \
      n_dst(d, 0), all_bytes(d), SELF, EW, ALL)                                               \
                                                                                              \
    /* Softmax cross-entropy with label smoothing eps (params.xent):                          \
     * target = (1-eps)*onehot + eps/K;  loss_i = -sum_k target_k * log softmax(z_i)_k.       \
     *                                         torch.nn.CrossEntropyLoss(label_smoothing=eps) \
     * src0 logits (N,K)  src1 labels i32 (N)                                                 \
     * dst0 probs (N,K) softmax, saved for BWD   dst1 loss_sum f32 (1): += sum_i loss_i       \
     * Labels outside [0, K) add nothing to loss_sum and get a zero gradient row (device      \
     * kernels cannot report them; the loader guarantees valid labels). */                    \
    X(SOFTMAX_XENT_FWD, softmax_xent_fwd, loss, "logits labels", "probs loss_sum", xent,      \
      check_softmax_xent_fwd, 5.0 * n_src(d, 0), all_bytes(d), FWD, OWN, ALL)                 \
    /* dlogits = grad_scale * (probs - target)   (the gradient of grad_scale * sum_i loss_i)  \
     * src0 probs (N,K)  src1 labels i32 (N)  dst0 dlogits (N,K) */                           \
    X(SOFTMAX_XENT_BWD, softmax_xent_bwd, loss, "probs labels", "dlogits", xent,              \
      check_softmax_xent_bwd, 5.0 * n_src(d, 0), all_bytes(d), BWD, OWN, ALL)                 \
                                                                                              \
    /* Top-k correct count.  src0 logits (N,K)  src1 labels i32 (N)                           \
     * dst0 correct f32 (1): += number of rows whose label ranks below k (k = max(p.k, 1)),   \
     * rank = #{j : z_j > z_label} + #{j < label : z_j == z_label}: logits ordered by value,  \
     * ties by index, so top-1 is the first maximum (torch.argmax) and a tie at the k-th      \
     * place goes to the lower class index. Labels outside [0, K) count as wrong, and so      \
     * does a row with any NaN or infinite logit (a NaN compares false: it would rank         \
     * first, so a model with NaN logits would score 100%). */                                \
    X(ACCURACY, accuracy, loss, "logits labels", "correct", accuracy, check_accuracy,         \
      0.0, all_bytes(d), NONE, OWN, ALL)                                                      \
                                                                                              \
    /* SGD with momentum and weight decay over flat buffers, PyTorch's torch.optim.SGD:       \
     *   g = grad + wd * p;  v = mu * v + g;  step = nesterov ? g + mu * v : v;  p -= lr*step \
     * src0 grad (n)  src1 lr f32 (1 or 2), written by the host each step: {lr}, or {lr, mu} \
     *   whose mu replaces params.momentum (a momentum schedule: fastai's cycled momentum)     \
     * src2 mask f32 (n), optional (sparse masks, docs/sparse-masks.md): where mask[i] == 0   \
     *   element i is left as it is, params and momentum alike (no decay, no momentum step)   \
     * src3 skip f32 (1), optional: non-zero = change nothing (mixed precision: the step found \
     *      an inf/NaN gradient, AMP_UPDATE_SCALE's state[2])                                 \
     * dst0 params (n) in place  dst1 momentum v (n) in place */                              \
    X(SGD_MOMENTUM_UPDATE, sgd_momentum_update, optim, "grad lr# mask? skip?", "params momentum", sgd, \
      check_sgd_momentum_update, 6.0 * n_src(d, 0), all_bytes(d), NONE, EW, ALL)             \
                                                                                              \
    /* AdamW over flat buffers, PyTorch's torch.optim.AdamW (amsgrad off):                    \
     *   p = p * (1 - lr * wd)                           (decoupled weight decay)             \
     *   m = m + (1 - beta1) * (g - m)                   (exp_avg.lerp_(grad, 1 - beta1))     \
     *   v = beta2 * v + (1 - beta2) * g * g                                                  \
     *   p = p - step_size * m / (sqrt(v) / bc2_sqrt + eps)                                   \
     * src0 grad (n)  src1 step f32 (3 or 4): {lr, step_size = lr / (1 - beta1^t),            \
     *   bc2_sqrt = sqrt(1 - beta2^t)} for the 1-based step t, written by the host each step, \
     *   and a 4th, beta1, replacing params.beta1 (a beta1 schedule: fastai's cycled momentum) \
     * src2 mask f32 (n), optional: where mask[i] == 0 element i is left as it is (p, m, v)   \
     * src3 skip f32 (1), optional: non-zero = change nothing (as SGD's)                      \
     * dst0 params (n) in place  dst1 exp_avg m (n) in place  dst2 exp_avg_sq v (n) in place */\
    X(ADAMW_UPDATE, adamw_update, optim, "grad step# mask? skip?", "params exp_avg exp_avg_sq", \
      adamw, check_adamw_update, 12.0 * n_src(d, 0), all_bytes(d), NONE, EW, ALL)            \
                                                                                              \
    /* The empirical Fisher information of one sample's gradient, accumulated (FISH's         \
     * calculate_the_importance_label, docs/sparse-masks.md):                                 \
     *   acc += absolute ? |g| : g * g       (params.fisher.absolute 1 or 0)                  \
     * contraction off: the product rounds once, then the sum (every backend alike).          \
     * src0 g f32 (n)  dst0 acc f32 (n) in place */                                           \
    X(FISHER_ACCUMULATE, fisher_accumulate, optim, "g", "acc", fisher, check_eltwise,         \
      2.0 * n_dst(d, 0), all_bytes(d), NONE, EW, ALL)                                         \
                                                                                              \
    /* Builds a normalised float batch from the u8 dataset resident on the device             \
     * (DESIGN.md decision 4). For batch row i:                                               \
     *   j = indices[state.first + i] (or state.first + i when src2 is absent),               \
     *   label[i] = labels[j]; the image is images[j] (3,H,W) u8; output pixel (y, x) of      \
     *   channel c reads source pixel (reflect(y + dy, H), reflect(xs + dx, W)),              \
     *   xs = flip ? W-1-x : x (the flip applies to the shifted view), normalised as          \
     *   v * scale[c] + shift[c] (two fp32 operations, each rounded, never fused), scale and  \
     *   shift from dbk_augment_affine: (v/255 - mean[c]) / std[c] within an ulp, the same    \
     *   bits on every device; reflect is F.pad(mode='reflect'), ReflectionPad2d:             \
     *   no edge repeat, reflect(-1) = 1, reflect(H) = H-2.                                   \
     * Training (params.augment.train): reflect-pad by pad and crop back to H x W at          \
     *   (crop_y, crop_x) in [0, 2 pad]^2, i.e. dy = crop_y - pad, dx = crop_x - pad;         \
     *   flip when params.flip (below); then a cutout x cutout square is zeroed after         \
     *   normalisation (i.e. set to the mean).                                                \
     *   Random choices come from dbk_hash_u32(seed, first + i, purpose, 0) with              \
     *   purpose 0 = crop y, 1 = crop x, 2 = flip, 3 = cutout y, 4 = cutout x (see            \
     *   dbk_augment_choices in backends/cpu for the exact draw). The cutout square's         \
     *   top-left corner is uniform over [0, H - cutout] x [0, W - cutout].                   \
     *   flip without flip_alternating: a fresh coin per row, hash(seed, row, 2, 0) >> 31.    \
     *   flip with flip_alternating (airbench94): image j is mirrored when                    \
     *     base_flip(j) XOR (epoch & 1) is 1,                                                 \
     *     base_flip(j) = dbk_hash_u32(run_seed, j, 5, 0) & 1                                 \
     *   (dbk_augment_base_flip in backends/cpu), keyed by the dataset index j, not the row:  \
     *   one random orientation per image for the whole run, all images mirrored on odd       \
     *   epochs, so in any two consecutive epochs every image is seen once each way.          \
     *   Crop and cutout draws are the same in both flip modes.                               \
     *   brightness/contrast > 0 (cifar10-speedrun's jitter): after normalising, every value of \
     *   the row becomes (x + b) * c, b = (2 u6 - 1) * brightness, c = (2 u7 - 1) * contrast + 1,\
     *   u_k = (dbk_hash_u32(seed, row, k, 0) >> 8) * 2^-24 (purposes 6, 7), fp32 in this order; \
     *   cutout applies after it.                                                             \
     * Evaluation (train false): no draws; pad, flip, cutout and flip_alternating do not      \
     *   apply; the fixed test-time view dy = view_dy, dx = view_dx, flip = view_flip         \
     *   (0, 0, false: the plain normalised image). airbench94's infer_mirror_translate,      \
     *   padded = F.pad(x, (1,1,1,1), 'reflect'), r = reflect:                                \
     *   padded[0:32, 0:32](y, x) = x(r(y-1), r(x-1)) is view (-1,-1); padded[2:34, 2:34]     \
     *   is view (+1,+1); x.flip(-1) is view (0,0,flip);                                      \
     *   t.flip(-1) of a translated view t is t(y, W-1-x) = x(r(y+dy), r(W-1-x+dx)), i.e.     \
     *   view (dy, dx, flip) with the same dy, dx.                                            \
     * Checked: state i32 with 4 elements; pad in [0, min(H, W)); cutout <= H, W; std > 0;    \
     *   flip_alternating only with train and flip; brightness, contrast in [0, 1) and zero   \
     *   in evaluation; view_dy, view_dx, view_flip zero in                                   \
     *   training (rejected otherwise), |view_dy| < H and |view_dx| < W in evaluation.        \
     * The host guarantees every j lies in [0, M): the CPU backend checks and returns         \
     * DBK_ERR_INVALID_ARG, device kernels cannot report it.                                  \
     * src0 images u8 (M,3,H,W)  src1 labels u8 (M)  src2 indices i32 (L) or absent           \
     * src3 state i32 (4): {first, seed, epoch, run_seed}, written by the host each step:     \
     *   first = index of the batch's first row, seed = the epoch's draw seed, epoch =        \
     *   0-based epoch number, run_seed = constant for the whole run (the last two are read   \
     *   by flip_alternating only)                                                            \
     * dst0 x f32 (N,3,H,W)  dst1 labels i32 (N)                                              \
     * Bytes: the batch it reads (one u8 per output element), not the whole dataset. */       \
    X(AUGMENT, augment, augment, "images labels indices? state", "x labels", augment,         \
      check_augment, 0.0, augment_bytes(d), NONE, OWN, ALL)                                   \
                                                                                              \
    /* dst0 = value for every element (f32).  dst0 (any) */                                   \
    X(FILL, fill, eltwise, "", "y", fill, check_eltwise,                                      \
      0.0, all_bytes(d), NONE, EW, ALL)                                                       \
    /* dst0 = src0 (same dtype and element count). */                                         \
    X(COPY, copy, eltwise, "x", "y", none, check_copy,                                        \
      0.0, all_bytes(d), NONE, OWN, ALL)                                                      \
                                                                                              \
    /* Exact GELU: y = 0.5 * x * (1 + erf(x / sqrt(2))).  torch.nn.GELU(approximate='none')   \
     * src0 x  dst0 y (any shape; y may alias x, but the backward needs x: not in training).  \
     * ~10 FLOPs per element (erf counted as ~6). */                                          \
    X(GELU_FWD, gelu_fwd, eltwise, "x", "y", none, check_eltwise,                             \
      10.0 * n_dst(d, 0), all_bytes(d), FWD, EW, ALL)                                         \
    /* dx = dy * (Phi(x) + x * phi(x)), Phi(x) = 0.5 * (1 + erf(x / sqrt(2))),                \
     * phi(x) = exp(-x^2 / 2) / sqrt(2 pi).   src0 x (the forward INPUT)  src1 dy              \
     * dst0 dx (dx may alias dy). ~15 FLOPs per element. */                                   \
    X(GELU_BWD, gelu_bwd, eltwise, "x dy", "dx", none, check_eltwise,                         \
      15.0 * n_dst(d, 0), all_bytes(d), BWD, EW, ALL)                                         \
    /* SiLU (swish): y = x * sigmoid(x) = x / (1 + exp(-x)).         torch.nn.SiLU            \
     * src0 x  dst0 y (any shape; y may alias x, but the backward needs x: not in training).  \
     * ~5 FLOPs per element (exp counted as 1). */                                             \
    X(SILU_FWD, silu_fwd, eltwise, "x", "y", none, check_eltwise,                             \
      5.0 * n_dst(d, 0), all_bytes(d), FWD, EW, ALL)                                          \
    /* dx = dy * s * (1 + x * (1 - s)), s = 1 / (1 + exp(-x)) (torch's silu_backward).        \
     * src0 x (the forward INPUT)  src1 dy  dst0 dx (dx may alias dy). ~8 FLOPs per element. */\
    X(SILU_BWD, silu_bwd, eltwise, "x dy", "dx", none, check_eltwise,                         \
      8.0 * n_dst(d, 0), all_bytes(d), BWD, EW, ALL)                                          \
                                                                                              \
    /* Per-channel bias: y[n,c,h,w] = x[n,c,h,w] + b[c]; conv2d's bias term.                  \
     *                                                 torch.nn.functional.conv2d(x, w, b)    \
     * src0 x (N,C,H,W)  src1 b (C)  dst0 y (N,C,H,W), may alias x (in place). */             \
    X(BIAS_ADD, bias_add, bias, "x b", "y", none, check_bias_add,                             \
      n_src(d, 0), all_bytes(d), FWD, OWN, ALL)                                               \
    /* The gradient of BIAS_ADD with respect to b: db[c] = sum over n,h,w of dy[n,c,h,w]      \
     * (overwrites). Device kernels reduce in a fixed order (no float atomics).               \
     * src0 dy (N,C,H,W)  dst0 db (C) */                                                      \
    X(CHANNEL_SUM, channel_sum, bias, "dy", "db", none, check_channel_sum,                    \
      n_src(d, 0), all_bytes(d), BWD, OWN, ALL)                                               \
                                                                                              \
    /* --- Muon (airbench94_muon.py, cifar10-speedrun): per 4-D filter, its gradient's momentum \
     * orthogonalised by Newton-Schulz (GEMM and SCALE ops between these), train/recipe.h --- */\
    /* v = momentum * v + g;  u = nesterov ? g + momentum * v : v   (Muon.step's buffer)      \
     * src0 g (n)  dst0 v (n) in place  dst1 u (n) */                                         \
    X(MUON_MOMENTUM, muon_momentum, optim, "g", "v u", muon_momentum, check_muon_momentum,    \
      3.0 * n_src(d, 0), all_bytes(d), NONE, EW, ALL)                                         \
    /* y = x * (g > 0 ? alpha * g / (||x||_2 + eps) : 1), ||x|| over all n elements; g the     \
     * step's value (its gate or target: 0 leaves x as it is). Muon's weight renormalisation   \
     * p *= sqrt(K) / ||p|| and Newton-Schulz's X /= ||X|| + eps. Device kernels reduce in one \
     * work-group in a fixed order.                                                           \
     * src0 x (n)  src1 g f32 (1), written by the host each step  dst0 y (n), may alias x */  \
    X(NORM_SCALE, norm_scale, optim, "x g", "y", norm_scale, check_norm_scale,                \
      3.0 * n_src(d, 0), all_bytes(d), NONE, OWN, ALL)                                        \
    /* p = (p - lr * x) * (1 - lr * weight_decay)   (Muon's step, then speedrun's decay)     \
     * src0 x (n) the orthogonalised update  src1 lr f32 (1), written by the host each step   \
     * dst0 params (n) in place */                                                            \
    X(MUON_UPDATE, muon_update, optim, "x lr", "params", muon_update, check_muon_update,      \
      3.0 * n_src(d, 0), all_bytes(d), NONE, EW, ALL)                                         \
                                                                                              \
    /* Lookahead (EMA) sync of airbench94's LookaheadState.update: with w = 1 - decay in fp32 \
     *   ema = torch.lerp(ema, params, w)                                                     \
     *       = |w| < 0.5 ? ema + w * (params - ema) : params - (params - ema) * (1 - w)       \
     *   params = ema                       (ema_param.lerp_(net_param, 1 - decay);           \
     *                                       net_param.copy_(ema_param))                      \
     * src0 decay f32 (1), written by the host each run                                       \
     * dst0 ema (n) in place  dst1 params (n) in place (same element count) */                \
    X(LOOKAHEAD, lookahead, optim, "decay", "ema params", none, check_lookahead,              \
      3.0 * n_dst(d, 0), all_bytes(d), NONE, EW, ALL)                                         \
                                                                                              \
    /* --- selective test-time augmentation (cifar10-speedrun's tta) --- */                  \
    /* table[j_i, :] = rows[i, :] for every row i, j_i = indices[state.first + i], or         \
     * state.first + i without indices: a batch of logits into the whole test set's table.    \
     * The host guarantees every j_i in [0, M) (the CPU checks: DBK_ERR_INVALID_ARG).          \
     * src0 rows f32 (N,K)  src1 indices i32 (L) or absent  src2 state i32 (4) {first, ...}    \
     * dst0 table f32 (M,K), rows not addressed untouched */                                  \
    X(SCATTER_ROWS, scatter_rows, tta, "rows indices? state", "table", none, check_scatter_rows,\
      0.0, all_bytes(d), NONE, OWN, ALL)                                                      \
    /* The k rows of least confidence: confidence = max softmax probability of a row of       \
     * logits = 1 / S, S = sum_j exp(z_j - max z) (j in order, fp32); the rows in order of      \
     * increasing confidence (decreasing S), ties by row index (torch.topk(confidences, k,     \
     * largest=False) without its unspecified order).                                          \
     * src0 logits f32 (N,K)  dst0 indices i32 (k), k <= N  dst1 work f32 (N): each row's S */\
    X(CONFIDENCE_SELECT, confidence_select, tta, "logits", "indices work", none,              \
      check_confidence_select, 3.0 * n_src(d, 0), all_bytes(d), NONE, OWN, ALL)               \
                                                                                              \
    /* Inverted dropout, training mode.                torch.nn.Dropout(p) in train()         \
     *   y[i] = keep(i) ? x[i] * (1 / (1 - p)) : 0,  scale 1/(1-p) formed in fp32;            \
     *   keep(i) = (dbk_hash_u32(state[1], state[0], salt, i) >> 8) >= (uint32)(p * 2^24)     \
     * (state = the step's {first, seed, epoch, run_seed}: a fresh mask for every batch, the  \
     * same on every backend). src0 x (any)  src1 state i32 (4)  dst0 y (may alias x) */      \
    X(DROPOUT_FWD, dropout_fwd, dropout, "x state", "y", dropout, check_dropout,              \
      n_dst(d, 0), all_bytes(d), FWD, EW, ALL)                                                \
    /* dx[i] = keep(i) ? dy[i] * (1 / (1 - p)) : 0, the same mask (same state, salt, p).      \
     * src0 dy  src1 state i32 (4)  dst0 dx (may alias dy) */                                 \
    X(DROPOUT_BWD, dropout_bwd, dropout, "dy state", "dx", dropout, check_dropout,            \
      n_dst(d, 0), all_bytes(d), BWD, EW, ALL)                                                \
                                                                                              \
    /* --- gradient compression of data-parallel training (src/dist/compress_device.c) --- */ \
    /* Sparse selection into index/value pairs, per segment of x, in index order: top-k      \
     * (params.select.topk) keeps the k elements of largest magnitude (exactly k: of those    \
     * equal to the k-th largest magnitude t, the first in index order), threshold keeps     \
     * every element with |x| >= params.select.threshold (> 0). Magnitudes compare as the    \
     * bits of |x| (uint order = float order; a NaN counts above +inf).                       \
     * src0 x f32 (n)  src1 segments i32 (S,3) {offset, count, k}: ranges of x in order, k in \
     *   [1, count] (top-k only)  src2 chunks i32 (C,3) {offset, count, segment}: the         \
     *   segments cut into consecutive pieces, each inside one segment, in order (device      \
     *   kernels work per chunk; dbk_select_chunks builds the table)                          \
     * dst0 pairs i32 (2P, P >= the pairs written): pair j = {index into x, bits of x[index]} \
     *   at [2j, 2j+2); the rest untouched   dst1 count i32 (1): pairs written                \
     * dst2 work i32 (258S + 2C) afterwards: [2s] the bits of segment s's threshold t (top-k: \
     *   the k-th largest magnitude, found by a radix select on the bits, 8 per pass) and    \
     *   [2s+1] its ties (top-k: elements equal to t taken; threshold: INT32_MAX); at        \
     *   2S + [2c, 2c+2): chunk c's first pair and the ties left at its start; then S x 256   \
     *   histogram counts, zero. The host guarantees valid tables (the CPU checks them). */   \
    X(SPARSE_SELECT, sparse_select, compress, "x segments chunks", "pairs count work", select,\
      check_sparse_select, 0.0, all_bytes(d), NONE, OWN, ALL)                                 \
    /* Decoding of a sparse payload: acc[index] += alpha * value for every pair {index, bits  \
     * of value} (params.scale.alpha), indices distinct within one call (a payload); a pair   \
     * whose index is outside acc adds nothing (the host validates payloads first).           \
     * src0 pairs i32 (2k)  dst0 acc f32 (n) in place */                                      \
    X(SPARSE_ADD, sparse_add, compress, "pairs", "acc", scale, check_sparse_add,              \
      n_src(d, 0), all_bytes(d), NONE, OWN, ALL)                                              \
    /* Scatter of a sparse payload: y[index] = v for every pair {index, bits of value}, where  \
     * v is params.scatter.value when params.scatter.constant, else the pair's value (a mask's \
     * ones from a selection's pairs; the averaged values of sparse model averaging); indices \
     * distinct within one call; a pair whose index is outside y writes nothing.              \
     * src0 pairs i32 (2k)  dst0 y f32 (n) in place */                                        \
    X(SPARSE_SCATTER, sparse_scatter, compress, "pairs", "y", scatter, check_sparse_scatter,  \
      0.0, all_bytes(d), NONE, OWN, ALL)                                                      \
    /* Random-k's packing: pair j = {indices[j], bits of x[indices[j]] * scale}, the scale of \
     * the segment whose pairs j falls in (the host draws the indices and the scales, so the  \
     * draws are the host compressor's).                                                     \
     * src0 x f32 (n)  src1 indices i32 (k), each in [0, n)  src2 scales i32 (S,2) {first     \
     *   pair of the segment, bits of its fp32 scale}, first pairs increasing from 0          \
     * dst0 pairs i32 (2k). The host guarantees valid tables (the CPU checks them). */        \
    X(SPARSE_GATHER, sparse_gather, compress, "x indices scales", "pairs", none,              \
      check_sparse_gather, n_src(d, 1), all_bytes(d), NONE, OWN, ALL)                         \
    /* TernGrad's and QSGD's encoding (params.quant.levels: 0 TernGrad, q QSGD), the payload   \
     * of src/dist/compress.c byte for byte: per segment its fp32 scale (TernGrad max |x|;     \
     * QSGD the L2 norm: fp32 squares summed in index order per chunk, the chunks' sums in    \
     * order, sqrt) then one code per element drawn with hash(params.quant.seed, index), as    \
     * core/quant.h; x finite.                                                                \
     * src0 x f32 (n)  src1 segments i32 (S,3) {offset, count, payload byte of its scale}:    \
     *   ranges of x in order, each segment's bytes right after the previous one's           \
     *   src2 chunks i32 (C,3) {offset, count, segment}: dbk_select_chunks's rows for         \
     *   DBK_QUANT_CHUNK                                                                      \
     * dst0 payload i32 (W): the payload's bytes, little-endian, the last word's tail zero;   \
     *   words past the payload untouched                                                     \
     * dst1 work f32 (C + S) afterwards: per chunk its max |x| or sum of squares, per segment \
     *   its scale. The host guarantees valid tables (the CPU checks them). */                \
    X(QUANT_ENCODE, quant_encode, compress, "x segments chunks", "payload work", quant,       \
      check_quant_encode, 2.0 * n_src(d, 0), all_bytes(d), NONE, OWN, ALL)                    \
    /* Decoding of a TernGrad or QSGD payload (as QUANT_ENCODE writes it): acc += alpha *      \
     * value for every element whose code is not zero (params.quant.alpha; codes out of       \
     * range add nothing: the host validates payloads first).                                 \
     * src0 payload i32 (W)  src1 segments i32 (S,3) as QUANT_ENCODE's                        \
     * dst0 acc f32 (n) in place, n = the segments' total */                                  \
    X(QUANT_ADD, quant_add, compress, "payload segments", "acc", quant, check_quant_add,      \
      3.0 * n_dst(d, 0), all_bytes(d), NONE, OWN, ALL)                                        \
    /* Mixed precision (--precision fp16, docs/precision.md). The casts are NO_OCL: the       \
     * OpenCL backend has no fp16 path; fp16 there is refused by capability (cl_khr_fp16).    \
     * y = fp16(x), round to nearest even (core/half.h).  src0 x f32  dst0 y f16, same count */\
    X(CAST_F32_F16, cast_f32_f16, amp, "x", "y", none, check_cast,                            \
      n_dst(d, 0), all_bytes(d), NONE, EW, NO_OCL)                                            \
    /* y = x widened to f32 (exact).    src0 x f16  dst0 y f32, same count */                 \
    X(CAST_F16_F32, cast_f16_f32, amp, "x", "y", none, check_cast,                            \
      0.0, all_bytes(d), NONE, EW, NO_OCL)                                                    \
    /* Dynamic loss scaling, the loss side: y = x * s[0], s the step's loss scale S.          \
     * src0 x f32 (any)  src1 s f32 (1), written by the host each step  dst0 y (may alias x) */\
    X(LOSS_SCALE, loss_scale, amp, "x s", "y", none, check_loss_scale,                        \
      n_dst(d, 0), all_bytes(d), NONE, EW, ALL)                                               \
    /* Dynamic loss scaling, the gradient side (torch's _amp_foreach_non_finite_check_and_    \
     * unscale_): found = 1 when any g is inf or NaN (judged before scaling; never cleared    \
     * here: AMP_UPDATE_SCALE clears it), and g = g * inv[0] (inv = 1/S).                     \
     * src0 inv f32 (1) (AMP_UPDATE_SCALE's state[1])  dst0 g f32 (n) in place               \
     * dst1 found f32 (1) in place */                                                         \
    X(GRAD_UNSCALE, grad_unscale, amp, "inv", "g found", none, check_grad_unscale,            \
      n_dst(d, 0), all_bytes(d), NONE, EW, ALL)                                               \
    /* Dynamic loss scaling, the scale's update after the optimizer (torch's                  \
     * _amp_update_scale_, train/loss_scaler.h dbk_loss_scaler_step on the device, so no step \
     * reads the flag back): state f32 (6) = {S, 1/S, found, clean steps, skipped steps,      \
     * growths}; found != 0: skipped += 1, clean = 0, S halves while above 1; else clean += 1 \
     * and at params.growth_interval S doubles (below 2^64: growths += 1) and clean = 0; then \
     * 1/S is recomputed and found cleared. One element does all (n = 6, launched as EW).     \
     * dst0 state f32 (6) in place */                                                         \
    X(AMP_UPDATE_SCALE, amp_update_scale, amp, "", "state", amp, check_amp_update_scale,      \
      0.0, all_bytes(d), NONE, EW, ALL)
/* clang-format on */

/* DBK_OP_ON(OCL|VK, where, f): f when the backend has the op (the where column), else NULL;
 * used by the backends' generated tables, so a lacking backend never names the function. */
#define DBK_OP_ON(backend, where, f) DBK_OP_ON_##backend##_##where(f)
#define DBK_OP_ON_OCL_ALL(f)      f
#define DBK_OP_ON_OCL_NO_VK(f)    f
#define DBK_OP_ON_OCL_NO_OCL(f)   NULL
#define DBK_OP_ON_OCL_CPU_ONLY(f) NULL
#define DBK_OP_ON_VK_ALL(f)       f
#define DBK_OP_ON_VK_NO_VK(f)     NULL
#define DBK_OP_ON_VK_NO_OCL(f)    f
#define DBK_OP_ON_VK_CPU_ONLY(f)  NULL

/* DBK_OP_LAUNCH(launch, own, family, ew): a device backend's entry for an op: its own
 * recorder, its family's, or its generic elementwise launcher. */
#define DBK_OP_LAUNCH(launch, own, family, ew) DBK_OP_LAUNCH_##launch(own, family, ew)
#define DBK_OP_LAUNCH_OWN(own, family, ew)    own
#define DBK_OP_LAUNCH_FAMILY(own, family, ew) family
#define DBK_OP_LAUNCH_EW(own, family, ew)     ew

#endif
