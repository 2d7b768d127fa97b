#version 450
/*
 * sparse_scatter.comp — DBK_OP_SPARSE_SCATTER: y[index] = the constant (use_constant != 0) or
 * the pair's value, for every pair {index, value bits} (indices distinct within one dispatch;
 * an index outside y writes nothing). Grid-stride over k.
 */
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    uint k, n;
    uint r0, r1;    /* element offsets of bindings 0..1 */
    uint use_constant;
    float value;
} pc;

layout(binding = 0) readonly buffer BufP { int pairs[]; };   /* (2k) */
layout(binding = 1) buffer BufY { float y[]; };              /* (n) */

void main() {
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint j = gl_GlobalInvocationID.x; j < pc.k; j += stride) {
        const uint i = uint(pairs[pc.r0 + 2u * j]);
        if (i >= pc.n) continue;
        y[pc.r1 + i] = pc.use_constant != 0u ? pc.value : intBitsToFloat(pairs[pc.r0 + 2u * j + 1u]);
    }
}
