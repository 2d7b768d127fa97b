#version 450
/*
 * conv2d_winograd_filter.comp — Winograd F(2x2, 3x3) filter transform (the scheme and the
 * matrices: conv2d_winograd_gemm.comp): U (16, rows, cols) = G g G^T per (row, col) from
 * w (K, C, 3, 3). Forward: rows K, cols C, g = w[k][c]. Backward-data (flip): rows C, cols K,
 * g = w[k][c] rotated by 180 degrees. Grid-stride over rows * cols.
 */
layout(local_size_x_id = 0) in;
layout(push_constant) uniform Push {
    uint K, C, flip;
    uint rw, ru;            /* element offsets of w and U in their windows */
} pc;

layout(binding = 0) readonly buffer BufW { float w[]; };    /* (K,C,3,3) */
layout(binding = 1) writeonly buffer BufU { float u[]; };   /* (16, rows, cols) */

void main() {
    const uint cols = pc.flip != 0 ? pc.K : pc.C, n = pc.K * pc.C;
    for (uint i = gl_GlobalInvocationID.x; i < n; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
        const uint row = i / cols, col = i - row * cols;
        const uint k = pc.flip != 0 ? col : row, c = pc.flip != 0 ? row : col;
        const uint src = pc.rw + (k * pc.C + c) * 9;
        float g[3][3], t[4][3];
        for (uint r = 0; r < 3; r++)
            for (uint s = 0; s < 3; s++) g[r][s] = pc.flip != 0 ? w[src + (2 - r) * 3 + (2 - s)] : w[src + r * 3 + s];
        for (uint s = 0; s < 3; s++) {   /* t = G g */
            t[0][s] = g[0][s];
            t[1][s] = 0.5 * (g[0][s] + g[1][s] + g[2][s]);
            t[2][s] = 0.5 * (g[0][s] - g[1][s] + g[2][s]);
            t[3][s] = g[2][s];
        }
        for (uint a = 0; a < 4; a++) {   /* U = t G^T */
            const uint dst = pc.ru + 4 * a * n + i;
            u[dst] = t[a][0];
            u[dst + n] = 0.5 * (t[a][0] + t[a][1] + t[a][2]);
            u[dst + 2 * n] = 0.5 * (t[a][0] - t[a][1] + t[a][2]);
            u[dst + 3 * n] = t[a][2];
        }
    }
}
