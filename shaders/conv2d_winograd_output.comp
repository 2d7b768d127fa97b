#version 450
/*
 * conv2d_winograd_output.comp — Winograd F(2x2, 3x3) output transform (scheme:
 * conv2d_winograd_gemm.comp): the 2x2 tile Y = A^T m A of every channel k and tile t from
 * M (16, K, T), written into y (nb, K, P, Q) where it lies inside the output. Grid-stride
 * over K * T, t fastest.
 */
layout(local_size_x_id = 0) in;
layout(push_constant) uniform Push {
    uint K, P, Q, TH, TW, T;
    uint rm, ry;            /* element offsets of M and y in their windows */
} pc;

layout(binding = 0) readonly buffer BufM { float m[]; };    /* (16,K,T) */
layout(binding = 1) writeonly buffer BufY { float y[]; };   /* (nb,K,P,Q) */

void main() {
    const uint n = pc.K * pc.T, tiles = pc.TH * pc.TW;
    for (uint i = gl_GlobalInvocationID.x; i < n; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
        const uint k = i / pc.T, t = i - k * pc.T;
        const uint b = t / tiles, ty = (t - b * tiles) / pc.TW, tx = t - b * tiles - ty * pc.TW;
        float a[2][4];
        for (uint j = 0; j < 4; j++) {   /* a = A^T m */
            const uint src = pc.rm + j * n + i;
            const float m0 = m[src], m1 = m[src + 4 * n], m2 = m[src + 8 * n], m3 = m[src + 12 * n];
            a[0][j] = m0 + m1 + m2;
            a[1][j] = m1 - m2 - m3;
        }
        const uint dst = pc.ry + (b * pc.K + k) * pc.P * pc.Q;
        for (uint r = 0; r < 2; r++) {   /* Y = a A */
            const uint p = 2 * ty + r, q = 2 * tx;
            if (p >= pc.P) break;
            y[dst + p * pc.Q + q] = a[r][0] + a[r][1] + a[r][2];
            if (q + 1 < pc.Q) y[dst + p * pc.Q + q + 1] = a[r][1] - a[r][2] - a[r][3];
        }
    }
}
