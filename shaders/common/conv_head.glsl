/*
 * conv_head.glsl — bindings and push constants shared by the three convolution shaders.
 * Letters as in ops.h: x (N,C,H,W), w (K,C,R,S), y (N,K,P,Q); each binding is a window of
 * its buffer starting `r0/r1/r2` elements before the tensor (vk_cmd.c dbk_vk_window).
 */
layout(push_constant) uniform Push {
    uint N, C, H, W;        /* input */
    uint K, R, S;           /* filter */
    uint P, Q;              /* output */
    uint sh, sw, ph, pw;    /* stride and zero padding */
    uint r0, r1, r2;        /* element offsets of the tensors in bindings 0, 1, 2 */
    uint step0, step1;      /* conv2d_bwd_filter: bytes per window of bindings 0 and 1 */
    uint kchunk, splits, r3; /* conv2d_bwd_filter: reduction values per work group (z), number
                                of parts, element offset of the partial sums (binding 3) */
} pc;

/* x / d for the index arithmetic of the implicit GEMMs (divisors are shapes from
 * the push constants, so no compiler turns them into multiplications). Integer division has
 * no SIMD instruction on x86, so lavapipe divides lane by lane, and it is a long sequence on
 * GPUs; float division is one vector instruction. (x + 0.5) / d lies at least 0.5/d away from
 * an integer, and a float division within 2.5 ulp (the Vulkan bound) errs by less than that
 * while x < 2^20, so truncating it gives x / d exactly. Problems with larger indices
 * (conv_small, from the shapes) divide as integers. On lavapipe (test_vk --bench, one
 * thread) this took conv2d_fwd (32,128,32,32) 3x3 from 4.4 to 4.7 GFLOP/s and the filter
 * gradient from 3.3 to 3.6. */
bool conv_small() {
    return max(pc.N * max(pc.P * pc.Q, pc.H * pc.W), max(pc.C, pc.K) * pc.R * pc.S) < (1u << 20);
}

uint conv_div(uint x, uint d) {
    if (conv_small()) return uint((float(x) + 0.5) / float(d));
    return x / d;
}
