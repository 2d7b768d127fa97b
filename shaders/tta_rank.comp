#version 450
/*
 * tta_rank.comp — DBK_OP_CONFIDENCE_SELECT's second pass: row i's rank among all N by S
 * descending, ties by row index; rows ranked below k write their index there (each rank is
 * written by exactly one row). Grid-stride over N; N comparisons each.
 */
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    uint N, k;
    uint rw, ro;   /* element offsets of bindings 0..1 */
} pc;

layout(binding = 0) readonly buffer BufW { float work[]; };   /* (N) */
layout(binding = 1) writeonly buffer BufO { int indices[]; };  /* (k) */

void main() {
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < pc.N; i += stride) {
        const float si = work[pc.rw + i];
        uint rank = 0;
        for (uint r = 0; r < pc.N; r++) {
            const float sr = work[pc.rw + r];
            if (sr > si || (sr == si && r < i)) rank++;
        }
        if (rank < pc.k) indices[pc.ro + rank] = int(i);
    }
}
