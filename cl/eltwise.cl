/*
 * eltwise.cl — elementwise ops: ReLU and GELU forward/backward, add, scale, fill, copy.
 * Semantics as the CPU reference (src/backends/cpu/eltwise.c). Every tensor is dense, so each kernel is one flat
 * 1-D range over n elements (rounded up to the work-group: bounds checks). In-place use
 * (y = x, dx = dy, y = a or b) is safe: each work-item reads its element before writing it.
 *
 * The kernels named after an op (relu_fwd, relu_bwd, leaky_relu_fwd, leaky_relu_bwd, gelu_fwd,
 * gelu_bwd, silu_fwd, silu_bwd, add, scale, fill) are launched
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

/* Leaky ReLU (torch.nn.LeakyReLU): y = x > 0 ? x : slope * x; dx = y > 0 ? dy : slope * dy. */
__kernel void leaky_relu_fwd(__global const float *x, const uint x_off, __global float *y, const uint y_off,
                             const float slope, const int n) {
    const int i = get_global_id(0);
    if (i >= n) return;
    const float v = x[x_off + i];
    y[y_off + i] = v > 0.0f ? v : slope * v;
}

__kernel void leaky_relu_bwd(__global const float *y, const uint y_off, __global const float *dy, const uint dy_off,
                             __global float *dx, const uint dx_off, const float slope, const int n) {
    const int i = get_global_id(0);
    if (i >= n) return;
    const float g = dy[dy_off + i];
    dx[dx_off + i] = y[y_off + i] > 0.0f ? g : slope * g;
}

/* Exact GELU: y = 0.5 x (1 + erf(x / sqrt 2)), as the CPU writes it (torch.nn.GELU), with
 * dbk_erf below rather than OpenCL C's built-in erf: PoCL's erf is a scalar libm call that
 * its work-item loops cannot vectorize, so gelu_fwd ran at ~70 ns per element, 18x a batch
 * norm of the same tensor, and GELU took 10% of an airbench94 step. dbk_erf is the fit of
 * shaders/common/erf.glsl (same coefficients and error: max abs 1.1e-7, max relative
 * 1.65e-7 over [-6, 6] in fp32), written without branches (both ranges evaluated, then
 * selected) so the work-item loop becomes SIMD:
 *   |x| < 1:      x * P(x^2), P of degree 5;
 *   1 <= |x| < 4: sign(x) (1 - exp(-x^2) Q(|x| - 2.5)), Q of degree 11;
 *   |x| >= 4:     sign(x).
 * NaN propagates (it fails |x| < 1 and |x| >= 4, and exp(-NaN) is NaN). */
inline float dbk_erf(const float x) {
    const float a = fabs(x), u = x * x;
    float p = -5.625396152e-04f;
    p = p * u + 4.916023463e-03f;
    p = p * u - 2.670994960e-02f;
    p = p * u + 1.128013059e-01f;
    p = p * u - 3.761231899e-01f;
    p = p * u + 1.128379107e+00f;
    const float t = a - 2.5f;
    float q = -3.835798736e-07f;
    q = q * t + 1.658841825e-06f;
    q = q * t - 4.009343229e-06f;
    q = q * t + 1.442577741e-05f;
    q = q * t - 5.894270726e-05f;
    q = q * t + 2.128320484e-04f;
    q = q * t - 7.337129791e-04f;
    q = q * t + 2.466092817e-03f;
    q = q * t - 8.001474664e-03f;
    q = q * t + 2.493817359e-02f;
    q = q * t - 7.434736192e-02f;
    q = q * t + 2.108063549e-01f;
    const float tail = a >= 4.0f ? 1.0f : 1.0f - exp(-u) * q;
    return a < 1.0f ? x * p : copysign(tail, x);
}

__kernel void gelu_fwd(__global const float *x, const uint x_off, __global float *y, const uint y_off, const int n) {
    const int i = get_global_id(0);
    if (i >= n) return;
    const float v = x[x_off + i];
    y[y_off + i] = 0.5f * v * (1.0f + dbk_erf(v * M_SQRT1_2_F));
}

/* dx = dy (Phi(x) + x phi(x)); x is the forward input. */
__kernel void gelu_bwd(__global const float *x, const uint x_off, __global const float *dy, const uint dy_off,
                       __global float *dx, const uint dx_off, const int n) {
    const int i = get_global_id(0);
    if (i >= n) return;
    const float v = x[x_off + i];
    const float cdf = 0.5f * (1.0f + dbk_erf(v * M_SQRT1_2_F));
    const float pdf = exp(-0.5f * v * v) * 0.39894228040143268f;   /* 1 / sqrt(2 pi) */
    dx[dx_off + i] = dy[dy_off + i] * (cdf + v * pdf);
}

/* SiLU: y = x / (1 + exp(-x)) (torch.nn.SiLU); x may alias y. */
__kernel void silu_fwd(__global const float *x, const uint x_off, __global float *y, const uint y_off, const int n) {
    const int i = get_global_id(0);
    if (i >= n) return;
    const float v = x[x_off + i];
    y[y_off + i] = v / (1.0f + exp(-v));
}

/* dx = dy s (1 + x (1 - s)), s = sigmoid(x); x is the forward input. */
__kernel void silu_bwd(__global const float *x, const uint x_off, __global const float *dy, const uint dy_off,
                       __global float *dx, const uint dx_off, const int n) {
    const int i = get_global_id(0);
    if (i >= n) return;
    const float v = x[x_off + i];
    const float s = 1.0f / (1.0f + exp(-v));
    dx[dx_off + i] = dy[dy_off + i] * s * (1.0f + v * (1.0f - s));
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
