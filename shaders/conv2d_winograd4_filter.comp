#version 450
/*
 * conv2d_winograd4_filter.comp — Winograd F(4x4, 3x3) filter transform (the scheme:
 * conv2d_winograd_gemm.comp; G: common/winograd4.glsl): U (36, rows, cols) = G g G^T per
 * (row, col) from w (K, C, 3, 3), as conv2d_winograd_filter.comp. Grid-stride over rows * cols.
 */
#include "common/winograd4.glsl"

layout(local_size_x_id = 0) in;
layout(push_constant) uniform Push {
    uint K, C, flip;
    uint rw, ru;            /* element offsets of w and U in their windows */
} pc;

layout(binding = 0) readonly buffer BufW { float w[]; };    /* (K,C,3,3) */
layout(binding = 1) writeonly buffer BufU { float u[]; };   /* (36, rows, cols) */

void main() {
    const uint cols = pc.flip != 0 ? pc.K : pc.C, n = pc.K * pc.C;
    for (uint i = gl_GlobalInvocationID.x; i < n; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
        const uint row = i / cols, col = i - row * cols;
        const uint k = pc.flip != 0 ? col : row, c = pc.flip != 0 ? row : col;
        const uint src = pc.rw + (k * pc.C + c) * 9;
        float t[6][3];
        for (uint s = 0; s < 3; s++) {   /* t = G g */
            float g[3];
            for (uint r = 0; r < 3; r++) g[r] = pc.flip != 0 ? w[src + (2 - r) * 3 + (2 - s)] : w[src + r * 3 + s];
            const float tc[6] = wino4_g(g);
            for (uint a = 0; a < 6; a++) t[a][s] = tc[a];
        }
        for (uint a = 0; a < 6; a++) {   /* U = t G^T */
            const float ur[6] = wino4_g(t[a]);
            for (uint b = 0; b < 6; b++) u[pc.ru + (6 * a + b) * n + i] = ur[b];
        }
    }
}
