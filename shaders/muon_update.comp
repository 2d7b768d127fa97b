#version 450
/*
 * muon_update.comp — DBK_OP_MUON_UPDATE: p = (p - lr * x) * (1 - lr * wd), lr read from device
 * memory (the host writes it each step). p[0] = wd.
 */
#include "common/eltwise_head.glsl"

layout(binding = 0) readonly buffer BufX { float x[]; };    /* (n) */
layout(binding = 1) readonly buffer BufL { float lr[]; };   /* (1) */
layout(binding = 2) buffer BufP { float p[]; };             /* (n) in place */

void main() {
    const float rate = lr[pc.r[1]], decay = 1.0 - rate * pc.p[0];
    EW_FOR_EACH(i) {
        p[pc.r[2] + i] = (p[pc.r[2] + i] - rate * x[pc.r[0] + i]) * decay;
    }
}
