/*
 * amp.cl — the f32 ops of dynamic loss scaling (mixed precision), launched generically
 * (op_list.h, launch EW): (buffer, offset) per src slot, then per dst slot, then n. The
 * casts to and from f16 are not here: the OpenCL backend has no fp16 path (op_list.h).
 * Semantics as the CPU reference (src/backends/cpu/amp.c).
 */

/* y = x * s[0]; s is the step's loss scale (one element). y may alias x. */
__kernel void loss_scale(__global const float *x, const uint x_off, __global const float *s, const uint s_off,
                         __global float *y, const uint y_off, const int n) {
    const int i = get_global_id(0);
    if (i >= n) return;
    y[y_off + i] = x[x_off + i] * s[s_off];
}

/* found = 1 when g is inf or NaN (every such work-item writes the same 1: no reduction
 * order to keep), then g *= inv[0]. */
/* The loss scale's state machine after the update, state (6) = {S, 1/S, found, clean, skipped,
 * growths} (op_list.h AMP_UPDATE_SCALE): work-item 0 alone, n = 6. */
__kernel void amp_update_scale(__global float *st, const uint s_off, const float growth_interval, const int n) {
    if (get_global_id(0) != 0 || n < 6) return;
    st += s_off;
    if (st[2] != 0.0f) {
        st[4] += 1.0f;
        st[3] = 0.0f;
        if (st[0] > 1.0f) st[0] *= 0.5f;
    } else if ((st[3] += 1.0f) >= growth_interval) {
        st[3] = 0.0f;
        if (st[0] < 0x1p64f) {
            st[0] *= 2.0f;
            st[5] += 1.0f;
        }
    }
    st[1] = 1.0f / st[0];
    st[2] = 0.0f;
}

__kernel void grad_unscale(__global const float *inv, const uint inv_off, __global float *g, const uint g_off,
                           __global float *found, const uint found_off, const int n) {
    const int i = get_global_id(0);
    if (i >= n) return;
    const float v = g[g_off + i];
    if (isinf(v) || isnan(v)) found[found_off] = 1.0f;
    g[g_off + i] = v * inv[inv_off];
}
