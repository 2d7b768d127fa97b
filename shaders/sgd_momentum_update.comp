#version 450
/*
 * sgd_momentum_update.comp — SGD with momentum, weight decay and optional Nesterov over flat buffers
 * (DBK_OP_SGD_MOMENTUM_UPDATE, torch.optim.SGD with dampening 0, launch EW):
 *   g = grad + wd * p;  v = mu * v + g;  step = nesterov ? g + mu * v : v;  p -= lr * step
 * lr is read from device memory (the host rewrites it each step); lr# holds {lr} or {lr,
 * momentum}, whose momentum replaces params.momentum. With a mask, an element whose mask is 0
 * is left as it is (sparse masks). With a skip flag, a non-zero skip[0] (mixed precision: an
 * inf/NaN gradient this step) changes nothing.
 */
#include "common/eltwise_head.glsl"

layout(binding = 0) readonly buffer BufG { float grad[]; };   /* (n) */
layout(binding = 1) readonly buffer BufL { float lr[]; };     /* (1) or (2) */
layout(binding = 2) readonly buffer BufK { float mask[]; };   /* (n), optional */
layout(binding = 3) readonly buffer BufQ { float skip[]; };   /* (1), optional */
layout(binding = 4) buffer BufP { float param[]; };           /* (n) in place */
layout(binding = 5) buffer BufV { float mom[]; };             /* (n) in place */

/* p[]: momentum, weight_decay, nesterov (int), then lr's element count */
void main() {
    if (EW_PRESENT(3) && skip[pc.r[3]] != 0.0) return;   /* a step with an inf/NaN gradient */
    const bool masked = EW_PRESENT(2);
    const float rate = lr[pc.r[1]];
    const float mu = EW_INT(3) == 2 ? lr[pc.r[1] + 1] : pc.p[0];
    const float wd = pc.p[1];
    const bool nesterov = EW_INT(2) != 0;
    EW_FOR_EACH(i) {
        if (masked && mask[pc.r[2] + i] == 0.0) continue;
        const float p = param[pc.r[4] + i];
        const float g = grad[pc.r[0] + i] + wd * p;
        const float v = mu * mom[pc.r[5] + i] + g;
        const float step = nesterov ? g + mu * v : v;
        mom[pc.r[5] + i] = v;
        param[pc.r[4] + i] = p - rate * step;
    }
}
