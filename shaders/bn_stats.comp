#version 450
/*
 * bn_stats.comp — batch-norm training statistics (first half of DBK_OP_BATCHNORM_FWD_TRAIN;
 * bn_apply.comp normalises). One work group per channel c reduces its M = N*H*W values in
 * two passes, as the CPU reference: mean, then the mean squared deviation (no E[x^2]-E[x]^2
 * cancellation). Writes mean, invstd = 1/sqrt(var + eps) and the running statistics
 * (running = (1-momentum)*running + momentum*stat, unbiased variance M/(M-1)).
 * x is windowed (common/window.glsl): a batch's activations may exceed one binding.
 * Grid: x = C.
 */
#include "common/chan_step.glsl"
#include "common/reduce.glsl"
#include "common/window.glsl"

layout(push_constant) uniform Push {
    uint N, C, HW;
    uint r0, r1, r2, r3, r4;   /* element offsets of bindings 0..4 */
    float eps, momentum;
    uint step0;                /* bytes per window of binding 0 */
} pc;

WINDOWED_F32(0, x_at)                                                    /* (N,C,H,W) */
layout(binding = 1) writeonly buffer BufMean { float mean_out[]; };     /* (C) */
layout(binding = 2) writeonly buffer BufInv { float invstd_out[]; };    /* (C) */
layout(binding = 3) buffer BufRM { float run_mean[]; };                 /* (C) in place */
layout(binding = 4) buffer BufRV { float run_var[]; };                  /* (C) in place */

/* value j of plane (n, c) */
float value(uint n, uint c, uint j) {
    return x_at(pc.r0 + (n * pc.C + c) * pc.HW + j, pc.step0);
}

void main() {
    const uint c = gl_WorkGroupID.x, lid = gl_LocalInvocationID.x;
    const uint m = pc.N * pc.HW;
    if (m == 0) return;
    float s = 0.0;
    {
        PLANE_STEP_INIT(lid, WG, pc.HW);   /* (n, j) of i, stepped without a division */
        for (uint i = lid; i < m; i += WG) {
            s += value(n, c, j);
            PLANE_STEP_NEXT(pc.HW);
        }
    }
    const float mean = block_sum(s) / float(m);
    float ss = 0.0;
    {
        PLANE_STEP_INIT(lid, WG, pc.HW);
        for (uint i = lid; i < m; i += WG) {
            const float d = value(n, c, j) - mean;
            ss += d * d;
            PLANE_STEP_NEXT(pc.HW);
        }
    }
    const float sq = block_sum(ss);
    if (lid == 0) {
        const float var = sq / float(m);
        const float unbiased = m > 1 ? sq / float(m - 1) : var;
        mean_out[pc.r1 + c] = mean;
        invstd_out[pc.r2 + c] = 1.0 / sqrt(var + pc.eps);
        run_mean[pc.r3 + c] = (1.0 - pc.momentum) * run_mean[pc.r3 + c] + pc.momentum * mean;
        run_var[pc.r4 + c] = (1.0 - pc.momentum) * run_var[pc.r4 + c] + pc.momentum * unbiased;
    }
}
