#version 450
/*
 * bn_apply.comp — y = (x - mean_c) * scale_c + beta_c, the elementwise half of batch norm:
 *   training  (mode 0): mean and invstd from bn_stats.comp, scale = invstd * gamma
 *   inference (mode 1): running mean and variance, scale = gamma / sqrt(running_var + eps)
 *   training fused with ReLU (mode 2): as mode 0, then y = y < 0 ? 0 : y (NaN kept, as
 *             relu_fwd.comp)
 *   training fused with ReLU and the residual add (mode 3): as mode 2, then y = skip + y
 *   the residual add, then ReLU (mode 4): as mode 0, then y = max(skip + y, 0)
 *             (skip is read in modes 3 and 4 only)
 * (DBK_OP_BATCHNORM_FWD_TRAIN / _INFER / BATCHNORM_RELU_FWD_TRAIN / _RELU_ADD_FWD_TRAIN /
 * _ADD_RELU_FWD_TRAIN).
 * Grid-stride over all N*C*H*W elements. v is `precise` (no fused multiply-add): the fused
 * residual add's backward recomputes it (bn_bwd_*.comp, relu = 2) and must get the same bits.
 */
#include "common/chan_step.glsl"

layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    uint N, C, HW, mode;
    uint r0, r1, r2, r3, r4, r5;   /* element offsets of bindings 0..5 */
    float eps;
    uint r6;                       /* element offset of binding 6 */
} pc;

layout(binding = 0) readonly buffer BufX { float x[]; };       /* (N,C,H,W) */
layout(binding = 1) readonly buffer BufG { float gamma[]; };   /* (C) */
layout(binding = 2) readonly buffer BufB { float beta[]; };    /* (C) */
layout(binding = 3) readonly buffer BufM { float mean[]; };    /* (C) batch or running mean */
layout(binding = 4) readonly buffer BufS { float stat[]; };    /* (C) invstd (mode 0) or running var */
layout(binding = 5) writeonly buffer BufY { float y[]; };      /* (N,C,H,W) */
layout(binding = 6) readonly buffer BufK { float skip[]; };    /* (N,C,H,W) modes 3, 4 */

void main() {
    const uint total = pc.N * pc.C * pc.HW;
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    uint i = gl_GlobalInvocationID.x;
    if (i >= total) return;
    CHAN_STEP_INIT(i, stride, pc.HW, pc.C);   /* (j, c) of i, stepped without a division */
    for (; i < total; i += stride) {
        const float scale = pc.mode != 1 ? stat[pc.r4 + c] * gamma[pc.r1 + c]
                                         : gamma[pc.r1 + c] / sqrt(stat[pc.r4 + c] + pc.eps);
        precise const float v = (x[pc.r0 + i] - mean[pc.r3 + c]) * scale + beta[pc.r2 + c];
        const float s = pc.mode == 4 ? skip[pc.r6 + i] + v : v;
        const float r = pc.mode >= 2 && s < 0.0 ? 0.0 : s;
        y[pc.r5 + i] = pc.mode == 3 ? skip[pc.r6 + i] + r : r;
        CHAN_STEP_NEXT(pc.HW, pc.C);
    }
}
