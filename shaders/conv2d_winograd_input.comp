#version 450
/*
 * conv2d_winograd_input.comp — Winograd F(2x2, 3x3) input transform (scheme:
 * conv2d_winograd_gemm.comp): V (16, C, T) = B^T d B of the 4x4 patch d of every channel c
 * and tile t of a chunk of images x (nb, C, H, W); tile t = (b, ty, tx) reads rows
 * 2ty-1 .. 2ty+2 and columns 2tx-1 .. 2tx+2 of image b (0 outside). Grid-stride over C * T,
 * t fastest (neighbouring invocations write neighbouring addresses).
 */
layout(local_size_x_id = 0) in;
layout(push_constant) uniform Push {
    uint C, H, W, TH, TW, T;   /* T = nb * TH * TW tiles */
    uint rx, rv;               /* element offsets of x and V in their windows */
} pc;

layout(binding = 0) readonly buffer BufX { float x[]; };    /* (nb,C,H,W) */
layout(binding = 1) writeonly buffer BufV { float v[]; };   /* (16,C,T) */

void main() {
    const uint n = pc.C * pc.T, tiles = pc.TH * pc.TW;
    for (uint i = gl_GlobalInvocationID.x; i < n; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
        const uint c = i / pc.T, t = i - c * pc.T;
        const uint b = t / tiles, ty = (t - b * tiles) / pc.TW, tx = t - b * tiles - ty * pc.TW;
        const uint src = pc.rx + (b * pc.C + c) * pc.H * pc.W;
        float d[4][4];
        for (uint r = 0; r < 4; r++) {
            const int h = int(2 * ty + r) - 1;
            for (uint s = 0; s < 4; s++) {
                const int wc = int(2 * tx + s) - 1;
                d[r][s] = h >= 0 && h < int(pc.H) && wc >= 0 && wc < int(pc.W) ? x[src + uint(h) * pc.W + uint(wc)] : 0.0;
            }
        }
        float e[4][4];
        for (uint s = 0; s < 4; s++) {   /* e = B^T d */
            e[0][s] = d[0][s] - d[2][s];
            e[1][s] = d[1][s] + d[2][s];
            e[2][s] = d[2][s] - d[1][s];
            e[3][s] = d[1][s] - d[3][s];
        }
        for (uint r = 0; r < 4; r++) {   /* V = e B */
            const uint dst = pc.rv + 4 * r * n + i;
            v[dst] = e[r][0] - e[r][2];
            v[dst + n] = e[r][1] + e[r][2];
            v[dst + 2 * n] = e[r][2] - e[r][1];
            v[dst + 3 * n] = e[r][1] - e[r][3];
        }
    }
}
