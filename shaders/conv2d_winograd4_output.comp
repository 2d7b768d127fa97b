#version 450
/*
 * conv2d_winograd4_output.comp — Winograd F(4x4, 3x3) output transform (the scheme:
 * conv2d_winograd_gemm.comp; A^T: common/winograd4.glsl): the 4x4 tile Y = A^T m A of every
 * channel k and tile t from M (36, K, T), written into y (nb, K, P, Q) where it lies inside
 * the output. Grid-stride over K * T, t fastest.
 */
#include "common/winograd4.glsl"

layout(local_size_x_id = 0) in;
layout(push_constant) uniform Push {
    uint K, P, Q, TH, TW, T;
    uint rm, ry;            /* element offsets of M and y in their windows */
} pc;

layout(binding = 0) readonly buffer BufM { float m[]; };    /* (36,K,T) */
layout(binding = 1) writeonly buffer BufY { float y[]; };   /* (nb,K,P,Q) */

void main() {
    const uint n = pc.K * pc.T, tiles = pc.TH * pc.TW;
    for (uint i = gl_GlobalInvocationID.x; i < n; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
        const uint k = i / pc.T, t = i - k * pc.T;
        const uint b = t / tiles, ty = (t - b * tiles) / pc.TW, tx = t - b * tiles - ty * pc.TW;
        float a[4][6];
        for (uint s = 0; s < 6; s++) {   /* a = A^T m */
            float col[6];
            for (uint r = 0; r < 6; r++) col[r] = m[pc.rm + (6 * r + s) * n + i];
            const float ac[4] = wino4_at(col);
            for (uint r = 0; r < 4; r++) a[r][s] = ac[r];
        }
        const uint dst = pc.ry + (b * pc.K + k) * pc.P * pc.Q;
        for (uint r = 0; r < 4; r++) {   /* Y = a A */
            const uint p = 4 * ty + r;
            if (p >= pc.P) break;
            const float yr[4] = wino4_at(a[r]);
            for (uint s = 0; s < 4 && 4 * tx + s < pc.Q; s++) y[dst + p * pc.Q + 4 * tx + s] = yr[s];
        }
    }
}
