#version 450
/*
 * dropout.comp — DBK_OP_DROPOUT_FWD and DBK_OP_DROPOUT_BWD (the same mask on dy), as
 * src/backends/cpu/dropout.c: element e0 + i of the tensor is kept when
 *   (dbk_hash_u32(seed, first, salt, e0 + i) >> 8) >= threshold,  threshold = uint(p * 2^24),
 * and scaled by 1/(1-p); dropped elements are 0. y may alias x. The host splits tensors
 * larger than one binding into chunks starting at element e0. Grid-stride over n.
 */
#include "common/hash.glsl"

layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    uint n, e0;
    uint r0, r1, r2;   /* element offsets of bindings 0..2 */
    float p;
    uint salt;
} pc;

layout(binding = 0) readonly buffer BufX { float x[]; };      /* (n): x or dy */
layout(binding = 1) readonly buffer BufS { int state[]; };    /* (4) {first, seed, epoch, run_seed} */
layout(binding = 2) writeonly buffer BufY { float y[]; };     /* (n): y or dx */

void main() {
    const uint first = uint(state[pc.r1]), seed = uint(state[pc.r1 + 1]);
    const uint threshold = uint(pc.p * 16777216.0);
    const float scale = 1.0 / (1.0 - pc.p);
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += stride) {
        const bool keep = (dbk_hash_u32(seed, first, pc.salt, pc.e0 + i) >> 8) >= threshold;
        y[pc.r2 + i] = keep ? x[pc.r0 + i] * scale : 0.0;
    }
}
