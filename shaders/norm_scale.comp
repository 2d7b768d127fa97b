#version 450
/*
 * norm_scale.comp — DBK_OP_NORM_SCALE: y = x * (g > 0 ? alpha g / (||x|| + eps) : 1) in ONE
 * work group: invocation l sums the squares of x[l], x[l + WG], ...; common/reduce.glsl's tree
 * adds them (a fixed order, no atomics); then each invocation scales its own elements, each
 * read before the tree's barriers, so y may alias x.
 */
#include "common/reduce.glsl"

layout(push_constant) uniform Push {
    uint n;
    uint rx, rg, ry;   /* element offsets of bindings 0..2 */
    float alpha, eps;
} pc;

layout(binding = 0) readonly buffer BufX { float x[]; };   /* (n) */
layout(binding = 1) readonly buffer BufG { float g[]; };   /* (1) */
layout(binding = 2) writeonly buffer BufY { float y[]; };  /* (n), may alias x */

void main() {
    const uint lid = gl_LocalInvocationID.x;
    const float gate = g[pc.rg];
    float acc = 0.0;
    if (gate > 0.0)
        for (uint i = lid; i < pc.n; i += WG) acc += x[pc.rx + i] * x[pc.rx + i];
    const float ss = block_sum(acc);
    const float scale = gate > 0.0 ? pc.alpha * gate / (sqrt(ss) + pc.eps) : 1.0;
    for (uint i = lid; i < pc.n; i += WG) y[pc.ry + i] = x[pc.rx + i] * scale;
}
