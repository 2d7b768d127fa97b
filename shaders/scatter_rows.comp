#version 450
/*
 * scatter_rows.comp — DBK_OP_SCATTER_ROWS: table[j_i, c] = rows[i, c], j_i = indices[first + i]
 * (has_idx) or first + i; a row outside the table is skipped (the host guarantees none).
 * Grid-stride over N * K.
 */
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    uint N, K, M, has_idx;
    uint rr, ri, rs, rt;   /* element offsets of bindings 0..3 */
} pc;

layout(binding = 0) readonly buffer BufR { float rows[]; };    /* (N,K) */
layout(binding = 1) readonly buffer BufI { int indices[]; };   /* (L), or unused */
layout(binding = 2) readonly buffer BufS { int state[]; };     /* (4) {first, ...} */
layout(binding = 3) buffer BufT { float table[]; };            /* (M,K) */

void main() {
    const uint total = pc.N * pc.K, stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint e = gl_GlobalInvocationID.x; e < total; e += stride) {
        const uint i = e / pc.K, c = e % pc.K;
        const int at = state[pc.rs] + int(i);
        const int j = pc.has_idx != 0 ? indices[pc.ri + uint(at)] : at;
        if (j < 0 || uint(j) >= pc.M) continue;
        table[pc.rt + uint(j) * pc.K + c] = rows[pc.rr + e];
    }
}
