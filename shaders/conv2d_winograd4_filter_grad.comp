#version 450
/*
 * conv2d_winograd4_filter_grad.comp — the last step of Winograd F(4x4, 3x3) backward-filter
 * (the scheme: conv2d_winograd_gemm.comp; G^T: common/winograd4.glsl): dw (K, C, 3, 3) =
 * G^T du G from dU (36, K, C), overwriting dw. Grid-stride over K * C.
 */
#include "common/winograd4.glsl"

layout(local_size_x_id = 0) in;
layout(push_constant) uniform Push {
    uint K, C;
    uint rdu, rdw;          /* element offsets of dU and dw in their windows */
} pc;

layout(binding = 0) readonly buffer BufDu { float du[]; };   /* (36,K,C) */
layout(binding = 1) writeonly buffer BufDw { float dw[]; };  /* (K,C,3,3) */

void main() {
    const uint n = pc.K * pc.C;
    for (uint i = gl_GlobalInvocationID.x; i < n; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
        float a[3][6];
        for (uint s = 0; s < 6; s++) {   /* a = G^T du */
            float col[6];
            for (uint r = 0; r < 6; r++) col[r] = du[pc.rdu + (6 * r + s) * n + i];
            const float ac[3] = wino4_gt(col);
            for (uint r = 0; r < 3; r++) a[r][s] = ac[r];
        }
        const uint dst = pc.rdw + i * 9;
        for (uint r = 0; r < 3; r++) {   /* dw = a G */
            const float wr[3] = wino4_gt(a[r]);
            for (uint s = 0; s < 3; s++) dw[dst + r * 3 + s] = wr[s];
        }
    }
}
