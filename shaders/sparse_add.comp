#version 450
/*
 * sparse_add.comp — DBK_OP_SPARSE_ADD: acc[index] += alpha * value for every pair {index,
 * value bits} of a sparse payload (indices distinct within one dispatch; an index outside
 * acc adds nothing). `precise` keeps the multiply and the add apart (no fused multiply-add),
 * so they round as the CPU reference's (src/backends/cpu/compress.c). Grid-stride over k.
 */
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    uint k, n;
    uint r0, r1;    /* element offsets of bindings 0..1 */
    float alpha;
} pc;

layout(binding = 0) readonly buffer BufP { int pairs[]; };   /* (2k) */
layout(binding = 1) buffer BufA { float acc[]; };            /* (n) */

void main() {
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint j = gl_GlobalInvocationID.x; j < pc.k; j += stride) {
        const uint i = uint(pairs[pc.r0 + 2u * j]);
        if (i >= pc.n) continue;
        precise float sum = acc[pc.r1 + i] + pc.alpha * intBitsToFloat(pairs[pc.r0 + 2u * j + 1u]);
        acc[pc.r1 + i] = sum;
    }
}
