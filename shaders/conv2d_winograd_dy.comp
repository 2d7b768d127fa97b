#version 450
/*
 * conv2d_winograd_dy.comp — backward-filter of Winograd F(2x2, 3x3) (scheme:
 * conv2d_winograd_gemm.comp): Z (16, K, T) = A g A^T, the gradient reaching M = U . V, from
 * the 2x2 tile g of dy (nb, K, P, Q) of every channel k and tile t (0 outside the output).
 * Grid-stride over K * T, t fastest.
 */
layout(local_size_x_id = 0) in;
layout(push_constant) uniform Push {
    uint K, P, Q, TH, TW, T;
    uint rdy, rz;           /* element offsets of dy and Z in their windows */
} pc;

layout(binding = 0) readonly buffer BufDy { float dy[]; };   /* (nb,K,P,Q) */
layout(binding = 1) writeonly buffer BufZ { float z[]; };    /* (16,K,T) */

void main() {
    const uint n = pc.K * pc.T, tiles = pc.TH * pc.TW;
    for (uint i = gl_GlobalInvocationID.x; i < n; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
        const uint k = i / pc.T, t = i - k * pc.T;
        const uint b = t / tiles, ty = (t - b * tiles) / pc.TW, tx = t - b * tiles - ty * pc.TW;
        const uint src = pc.rdy + (b * pc.K + k) * pc.P * pc.Q;
        float g[2][2];
        for (uint r = 0; r < 2; r++)
            for (uint s = 0; s < 2; s++) {
                const uint p = 2 * ty + r, q = 2 * tx + s;
                g[r][s] = p < pc.P && q < pc.Q ? dy[src + p * pc.Q + q] : 0.0;
            }
        float a[4][2];
        for (uint s = 0; s < 2; s++) {   /* a = A g */
            a[0][s] = g[0][s];
            a[1][s] = g[0][s] + g[1][s];
            a[2][s] = g[0][s] - g[1][s];
            a[3][s] = -g[1][s];
        }
        for (uint r = 0; r < 4; r++) {   /* Z = a A^T */
            const uint dst = pc.rz + 4 * r * n + i;
            z[dst] = a[r][0];
            z[dst + n] = a[r][0] + a[r][1];
            z[dst + 2 * n] = a[r][0] - a[r][1];
            z[dst + 3 * n] = -a[r][1];
        }
    }
}
