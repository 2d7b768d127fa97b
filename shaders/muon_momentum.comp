#version 450
/*
 * muon_momentum.comp — DBK_OP_MUON_MOMENTUM: v = mu * v + g; u = nesterov ? g + mu * v : v
 * (Muon.step's momentum buffer). p[0] = mu, p[1] = nesterov (0 or 1).
 */
#include "common/eltwise_head.glsl"

layout(binding = 0) readonly buffer BufG { float g[]; };   /* (n) */
layout(binding = 1) buffer BufV { float v[]; };            /* (n) in place */
layout(binding = 2) writeonly buffer BufU { float u[]; };  /* (n) */

void main() {
    const float mu = pc.p[0];
    EW_FOR_EACH(i) {
        const float gi = g[pc.r[0] + i], vi = mu * v[pc.r[1] + i] + gi;
        v[pc.r[1] + i] = vi;
        u[pc.r[2] + i] = pc.p[1] != 0.0 ? gi + mu * vi : vi;
    }
}
