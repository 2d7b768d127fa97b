#version 450
/*
 * amp_update_scale.comp — DBK_OP_AMP_UPDATE_SCALE: the loss scale's state machine after the
 * update, state (6) = {S, 1/S, found, clean steps, skipped steps, growths}, as
 * src/backends/cpu/amp.c (train/loss_scaler.c on the device). Invocation 0 alone (n = 6);
 * params: p[0] = growth interval.
 */
#include "common/eltwise_head.glsl"

layout(binding = 0) buffer BufS { float st[]; };   /* (6) in place */

void main() {
    if (gl_GlobalInvocationID.x != 0 || pc.n < 6) return;
    const uint o = pc.r[0];
    if (st[o + 2] != 0.0) {
        st[o + 4] += 1.0;
        st[o + 3] = 0.0;
        if (st[o] > 1.0) st[o] *= 0.5;
    } else {
        st[o + 3] += 1.0;
        if (st[o + 3] >= pc.p[0]) {
            st[o + 3] = 0.0;
            if (st[o] < 18446744073709551616.0) {   /* 2^64 */
                st[o] *= 2.0;
                st[o + 5] += 1.0;
            }
        }
    }
    st[o + 1] = 1.0 / st[o];
    st[o + 2] = 0.0;
}
