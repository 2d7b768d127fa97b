#version 450
/*
 * grad_unscale.comp — DBK_OP_GRAD_UNSCALE: found = 1 when any g is inf or NaN, g *= inv[0].
 * inv and found are scalar slots (bound whole, at their own offsets r[0], r[2]). Every
 * invocation that meets a non-finite value writes the same 1.0 into found: no order to keep.
 */
#include "common/eltwise_head.glsl"

layout(binding = 0) readonly buffer BufInv { float inv[]; };   /* (1) */
layout(binding = 1) buffer BufG { float g[]; };                /* (n) in place */
layout(binding = 2) writeonly buffer BufFound { float found[]; }; /* (1) */

void main() {
    const float s = inv[pc.r[0]];
    EW_FOR_EACH(i) {
        const float v = g[pc.r[1] + i];
        if (isinf(v) || isnan(v)) found[pc.r[2]] = 1.0;
        g[pc.r[1] + i] = v * s;
    }
}
