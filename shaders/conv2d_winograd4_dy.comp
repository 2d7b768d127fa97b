#version 450
/*
 * conv2d_winograd4_dy.comp — backward-filter of Winograd F(4x4, 3x3) (the scheme:
 * conv2d_winograd_gemm.comp; A: common/winograd4.glsl): Z (36, K, T) = A g A^T, the gradient
 * reaching M = U . V, from the 4x4 tile g of dy (nb, K, P, Q) of every channel k and tile t
 * (0 outside the output). Grid-stride over K * T, t fastest.
 */
#include "common/winograd4.glsl"

layout(local_size_x_id = 0) in;
layout(push_constant) uniform Push {
    uint K, P, Q, TH, TW, T;
    uint rdy, rz;           /* element offsets of dy and Z in their windows */
} pc;

layout(binding = 0) readonly buffer BufDy { float dy[]; };   /* (nb,K,P,Q) */
layout(binding = 1) writeonly buffer BufZ { float z[]; };    /* (36,K,T) */

void main() {
    const uint n = pc.K * pc.T, tiles = pc.TH * pc.TW;
    for (uint i = gl_GlobalInvocationID.x; i < n; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
        const uint k = i / pc.T, t = i - k * pc.T;
        const uint b = t / tiles, ty = (t - b * tiles) / pc.TW, tx = t - b * tiles - ty * pc.TW;
        const uint src = pc.rdy + (b * pc.K + k) * pc.P * pc.Q;
        float a[6][4];
        for (uint s = 0; s < 4; s++) {   /* a = A g, a column of the tile at a time */
            const uint q = 4 * tx + s;
            float g[4];
            for (uint r = 0; r < 4; r++) {
                const uint p = 4 * ty + r;
                g[r] = p < pc.P && q < pc.Q ? dy[src + p * pc.Q + q] : 0.0;
            }
            const float ac[6] = wino4_a(g);
            for (uint r = 0; r < 6; r++) a[r][s] = ac[r];
        }
        for (uint r = 0; r < 6; r++) {   /* Z = a A^T */
            const float zr[6] = wino4_a(a[r]);
            for (uint s = 0; s < 6; s++) z[pc.rz + (6 * r + s) * n + i] = zr[s];
        }
    }
}
