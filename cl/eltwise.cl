/*
 * eltwise.cl — elementwise ops: ReLU forward/backward, add, scale, fill, copy. Semantics as the
 * CPU reference (src/backends/cpu/eltwise.c). Every tensor is dense, so each kernel is one flat
 * 1-D range over n elements (rounded up to the work-group: bounds checks). In-place use
 * (y = x, dx = dy, y = a or b) is safe: each work-item reads its element before writing it.
 *
 * The kernels named after an op (relu_fwd, relu_bwd, add, scale, fill) are launched
 * generically (op_list.h, launch EW): (buffer, offset) per src slot, then per dst slot, then
 * the params struct's floats, then n.
 */

__kernel void relu_fwd(__global const float *x, const uint x_off, __global float *y, const uint y_off, const int n) {
    const int i = get_global_id(0);
    if (i >= n) return;
    const float v = x[x_off + i];
    y[y_off + i] = v < 0.0f ? 0.0f : v;   /* NaN stays NaN, as on the CPU */
}

__kernel void relu_bwd(__global const float *y, const uint y_off, __global const float *dy, const uint dy_off,
                       __global float *dx, const uint dx_off, const int n) {
    const int i = get_global_id(0);
    if (i >= n) return;
    const float g = dy[dy_off + i];
    dx[dx_off + i] = y[y_off + i] > 0.0f ? g : 0.0f;
}

__kernel void add(__global const float *a, const uint a_off, __global const float *b, const uint b_off,
                      __global float *y, const uint y_off, const int n) {
    const int i = get_global_id(0);
    if (i >= n) return;
    y[y_off + i] = a[a_off + i] + b[b_off + i];
}

__kernel void scale(__global const float *x, const uint x_off, __global float *y, const uint y_off,
                        const float alpha, const int n) {
    const int i = get_global_id(0);
    if (i >= n) return;
    y[y_off + i] = alpha * x[x_off + i];
}

__kernel void fill(__global float *y, const uint y_off, const float value, const int n) {
    const int i = get_global_id(0);
    if (i >= n) return;
    y[y_off + i] = value;
}

/* Copies of 4-byte elements (f32, i32) and of bytes (u8). Overlapping views copy correctly
 * only when they coincide (the op contract has no partial overlap). */
__kernel void copy_u32(__global const uint *x, const uint x_off, __global uint *y, const uint y_off, const int n) {
    const int i = get_global_id(0);
    if (i >= n) return;
    y[y_off + i] = x[x_off + i];
}

__kernel void copy_u8(__global const uchar *x, const uint x_off, __global uchar *y, const uint y_off, const int n) {
    const int i = get_global_id(0);
    if (i >= n) return;
    y[y_off + i] = x[x_off + i];
}
