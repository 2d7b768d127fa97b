/*
 * dropout.cl — inverted dropout (training mode), forward and backward, as the CPU reference
 * (src/backends/cpu/dropout.c): element i is kept when
 *   (dbk_hash_u32(seed, first, salt, i) >> 8) >= threshold,  threshold = (uint)(p * 2^24),
 * and then scaled by 1/(1-p) (fp32); dropped elements are 0. dbk_hash_u32 is augment.cl's
 * (the files are built as one program, in file-name order). The backward is the same
 * kernel on dy: the same mask. global (n)
 */
static void dropout_apply(__global const float *x, const uint x_off, __global const int *state, const uint s_off,
                    __global float *y, const uint y_off, const float p, const uint salt, const int n) {
    const int i = get_global_id(0);
    if (i >= n) return;
    const uint first = (uint)state[s_off], seed = (uint)state[s_off + 1];
    const uint threshold = (uint)(p * 16777216.0f);
    const float scale = 1.0f / (1.0f - p);
    const bool keep = (dbk_hash_u32(seed, first, salt, (uint)i) >> 8) >= threshold;
    y[y_off + i] = keep ? x[x_off + i] * scale : 0.0f;
}

/* DBK_OP_DROPOUT_FWD and _BWD, launch EW (op_list.h's argument order). */
__kernel void dropout_fwd(__global const float *x, const uint x_off, __global const int *state, const uint s_off,
                          __global float *y, const uint y_off, const float p, const uint salt, const int n) {
    dropout_apply(x, x_off, state, s_off, y, y_off, p, salt, n);
}

__kernel void dropout_bwd(__global const float *dy, const uint dy_off, __global const int *state, const uint s_off,
                          __global float *dx, const uint dx_off, const float p, const uint salt, const int n) {
    dropout_apply(dy, dy_off, state, s_off, dx, dx_off, p, salt, n);
}
