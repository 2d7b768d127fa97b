/*
 * reduce.glsl — work-group sums through a shared-memory tree. The work-group size WG
 * (specialization constant 0, a power of two: vk_pipeline.c) is the tree width; every
 * invocation must call block_sum (it contains barriers).
 */
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;

shared float red[WG];

float block_sum(float v) {
    const uint lid = gl_LocalInvocationID.x;
    red[lid] = v;
    barrier();
    for (uint s = WG / 2; s > 0; s >>= 1) {
        if (lid < s) red[lid] += red[lid + s];
        barrier();
    }
    const float r = red[0];
    barrier();
    return r;
}
