#version 450
/*
 * conv2d_winograd_filter_grad.comp — the last step of Winograd F(2x2, 3x3) backward-filter
 * (scheme: conv2d_winograd_gemm.comp): dw (K, C, 3, 3) = G^T du G from dU (16, K, C),
 * overwriting dw. Grid-stride over K * C.
 */
layout(local_size_x_id = 0) in;
layout(push_constant) uniform Push {
    uint K, C;
    uint rdu, rdw;          /* element offsets of dU and dw in their windows */
} pc;

layout(binding = 0) readonly buffer BufDu { float du[]; };   /* (16,K,C) */
layout(binding = 1) writeonly buffer BufDw { float dw[]; };  /* (K,C,3,3) */

void main() {
    const uint n = pc.K * pc.C;
    for (uint i = gl_GlobalInvocationID.x; i < n; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
        float a[3][4];
        for (uint j = 0; j < 4; j++) {   /* a = G^T du */
            const uint src = pc.rdu + j * n + i;
            const float u0 = du[src], u1 = du[src + 4 * n], u2 = du[src + 8 * n], u3 = du[src + 12 * n];
            a[0][j] = u0 + 0.5 * (u1 + u2);
            a[1][j] = 0.5 * (u1 - u2);
            a[2][j] = 0.5 * (u1 + u2) + u3;
        }
        const uint dst = pc.rdw + i * 9;
        for (uint r = 0; r < 3; r++) {   /* dw = a G */
            dw[dst + r * 3] = a[r][0] + 0.5 * (a[r][1] + a[r][2]);
            dw[dst + r * 3 + 1] = 0.5 * (a[r][1] - a[r][2]);
            dw[dst + r * 3 + 2] = 0.5 * (a[r][1] + a[r][2]) + a[r][3];
        }
    }
}
