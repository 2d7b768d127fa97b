#version 450
/*
 * sparse_gather.comp — DBK_OP_SPARSE_GATHER (random-k's packing): pair j = {indices[j],
 * x[indices[j]] * the scale of its segment}, the segment found by a binary search of the
 * segments' first pairs. Semantics: op_list.h and src/backends/cpu/compress.c. Grid-stride
 * over k.
 */
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    uint k, S;
    uint r0, r1, r2, r3;   /* element offsets of bindings 0..3 */
} pc;

layout(binding = 0) readonly buffer BufX { float x[]; };        /* (n) */
layout(binding = 1) readonly buffer BufI { int indices[]; };    /* (k) */
layout(binding = 2) readonly buffer BufS { int scales[]; };     /* (S,2) {first pair, scale bits} */
layout(binding = 3) writeonly buffer BufP { int pairs[]; };     /* (2k) */

void main() {
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint j = gl_GlobalInvocationID.x; j < pc.k; j += stride) {
        int lo = 0, hi = int(pc.S) - 1;
        while (lo < hi) { /* the last segment whose first pair is <= j */
            const int mid = (lo + hi + 1) / 2;
            if (scales[pc.r2 + uint(2 * mid)] <= int(j)) lo = mid;
            else hi = mid - 1;
        }
        const int i = indices[pc.r1 + j];
        pairs[pc.r3 + 2u * j] = i;
        pairs[pc.r3 + 2u * j + 1u] = floatBitsToInt(x[pc.r0 + uint(i)] * intBitsToFloat(scales[pc.r2 + uint(2 * lo + 1)]));
    }
}
