#version 450
/*
 * channel_sum.comp — DBK_OP_CHANNEL_SUM over images [n0, n0 + N) of the batch:
 *   db[c] = sum over n,h,w of dy[n,c,h,w]          (accumulate == 0: the first dispatch)
 *   db[c] = db[c] + that sum                        (accumulate == 1: the later ones)
 * The host splits a batch whose dy exceeds one binding into such dispatches, in batch order
 * with a barrier between them, so the result is deterministic (no atomics).
 * One work group per channel (grid: x = C): invocation l sums the channel's values l,
 * l + WG, ... in flat (n, hw) order, so neighbours read neighbouring floats and batch 1 uses
 * the whole group; then common/reduce.glsl's shared-memory tree adds the WG partial sums.
 */
#include "common/chan_step.glsl"
#include "common/reduce.glsl"

layout(push_constant) uniform Push {
    uint N, C, HW;
    uint r0, r1;       /* element offsets of bindings 0..1 */
    uint accumulate;
} pc;

layout(binding = 0) readonly buffer BufDy { float dy[]; };  /* (N,C,H,W) */
layout(binding = 1) buffer BufDb { float db[]; };           /* (C) */

void main() {
    const uint c = gl_WorkGroupID.x, lid = gl_LocalInvocationID.x;
    float acc = 0.0;
    if (pc.HW > 0) {
        PLANE_STEP_INIT(lid, WG, pc.HW);   /* (n, j) of flat index lid, stepped by WG */
        while (n < pc.N) {
            acc += dy[pc.r0 + (n * pc.C + c) * pc.HW + j];
            PLANE_STEP_NEXT(pc.HW);
        }
    }
    const float s = block_sum(acc);
    if (lid == 0) db[pc.r1 + c] = pc.accumulate != 0 ? db[pc.r1 + c] + s : s;
}
