#version 450
/*
 * conv2d_winograd4_input.comp — Winograd F(4x4, 3x3) input transform (the scheme:
 * conv2d_winograd_gemm.comp; B^T: common/winograd4.glsl): V (36, C, T) = B^T d B of the 6x6
 * patch d of every channel c and tile t of a chunk of images x (nb, C, H, W); tile
 * t = (b, ty, tx) reads rows 4ty-1 .. 4ty+4 and columns 4tx-1 .. 4tx+4 of image b (0 outside).
 * Grid-stride over C * T, t fastest.
 */
#include "common/winograd4.glsl"

layout(local_size_x_id = 0) in;
layout(push_constant) uniform Push {
    uint C, H, W, TH, TW, T;   /* T = nb * TH * TW tiles */
    uint rx, rv;               /* element offsets of x and V in their windows */
} pc;

layout(binding = 0) readonly buffer BufX { float x[]; };    /* (nb,C,H,W) */
layout(binding = 1) writeonly buffer BufV { float v[]; };   /* (36,C,T) */

void main() {
    const uint n = pc.C * pc.T, tiles = pc.TH * pc.TW;
    for (uint i = gl_GlobalInvocationID.x; i < n; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
        const uint c = i / pc.T, t = i - c * pc.T;
        const uint b = t / tiles, ty = (t - b * tiles) / pc.TW, tx = t - b * tiles - ty * pc.TW;
        const uint src = pc.rx + (b * pc.C + c) * pc.H * pc.W;
        float e[6][6];
        for (uint s = 0; s < 6; s++) {   /* e = B^T d, a column of the patch at a time */
            const int wc = int(4 * tx + s) - 1;
            float d[6];
            for (uint r = 0; r < 6; r++) {
                const int h = int(4 * ty + r) - 1;
                d[r] = h >= 0 && h < int(pc.H) && wc >= 0 && wc < int(pc.W) ? x[src + uint(h) * pc.W + uint(wc)] : 0.0;
            }
            const float ec[6] = wino4_bt(d);
            for (uint r = 0; r < 6; r++) e[r][s] = ec[r];
        }
        for (uint r = 0; r < 6; r++) {   /* V = e B */
            const float vr[6] = wino4_bt(e[r]);
            for (uint s = 0; s < 6; s++) v[pc.rv + (6 * r + s) * n + i] = vr[s];
        }
    }
}
