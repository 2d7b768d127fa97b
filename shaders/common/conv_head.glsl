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
