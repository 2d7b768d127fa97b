/*
 * eltwise.cl — elementwise ops: ReLU and GELU forward/backward, add, scale, fill, copy.
 * Semantics as the CPU reference (src/backends/cpu/eltwise.c). Every tensor is dense, so each kernel is one flat
 * 1-D range over n elements (rounded up to the work-group: bounds checks). In-place use
 * (y = x, dx = dy, y = a or b) is safe: each work-item reads its element before writing it.
 *
 * The kernels named after an op (relu_fwd, relu_bwd, gelu_fwd, gelu_bwd, add, scale, fill) are launched
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

/* Exact GELU with OpenCL C's built-in erf (at most 16 ulp in the full profile; PoCL's is
 * libm's): y = 0.5 x (1 + erf(x / sqrt 2)), as the CPU writes it (torch.nn.GELU). */
__kernel void gelu_fwd(__global const float *x, const uint x_off, __global float *y, const uint y_off, const int n) {
    const int i = get_global_id(0);
    if (i >= n) return;
    const float v = x[x_off + i];
    y[y_off + i] = 0.5f * v * (1.0f + erf(v * M_SQRT1_2_F));
}

/* dx = dy (Phi(x) + x phi(x)); x is the forward input. */
__kernel void gelu_bwd(__global const float *x, const uint x_off, __global const float *dy, const uint dy_off,
                       __global float *dx, const uint dx_off, const int n) {
    const int i = get_global_id(0);
    if (i >= n) return;
    const float v = x[x_off + i];
    const float cdf = 0.5f * (1.0f + erf(v * M_SQRT1_2_F));
    const float pdf = exp(-0.5f * v * v) * 0.39894228040143268f;   /* 1 / sqrt(2 pi) */
    dx[dx_off + i] = dy[dy_off + i] * (cdf + v * pdf);
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
