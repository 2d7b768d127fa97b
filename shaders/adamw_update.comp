#version 450
/*
 * adamw_update.comp — AdamW over flat buffers (DBK_OP_ADAMW_UPDATE, torch.optim.AdamW with
 * amsgrad off, launch EW), as src/backends/cpu/optim.c:
 *   p = p * (1 - lr * wd);  m = m + (1 - beta1) * (g - m);  v = beta2 * v + (1 - beta2) * g * g;
 *   p = p - step_size * m / (sqrt(v) / bc2_sqrt + eps)
 * step# = {lr, step_size, bc2_sqrt[, beta1]} is read from device memory (the host rewrites it
 * each step); a 4th value replaces params.beta1. With a mask, an element whose mask is 0 is
 * left as it is (sparse masks). With a skip flag, a non-zero skip[0] (mixed precision: an
 * inf/NaN gradient this step) changes nothing.
 */
#include "common/eltwise_head.glsl"

layout(binding = 0) readonly buffer BufG { float grad[]; };      /* (n) */
layout(binding = 1) readonly buffer BufS { float step[]; };      /* (3) {lr, step_size, bc2_sqrt} or (4) + beta1 */
layout(binding = 2) readonly buffer BufK { float mask[]; };      /* (n), optional */
layout(binding = 3) readonly buffer BufQ { float skip[]; };      /* (1), optional */
layout(binding = 4) buffer BufP { float param[]; };              /* (n) in place */
layout(binding = 5) buffer BufM { float exp_avg[]; };            /* (n) in place */
layout(binding = 6) buffer BufV { float exp_avg_sq[]; };         /* (n) in place */

/* p[]: beta1, beta2, eps, weight_decay, then step's element count */
void main() {
    if (EW_PRESENT(3) && skip[pc.r[3]] != 0.0) return;   /* a step with an inf/NaN gradient */
    const bool masked = EW_PRESENT(2);
    const uint rs = pc.r[1];
    const float beta2 = pc.p[1], eps = pc.p[2], wd = pc.p[3];
    const float decay = 1.0 - step[rs] * wd, step_size = step[rs + 1], bc2_sqrt = step[rs + 2];
    const float beta1 = EW_INT(4) == 4 ? step[rs + 3] : pc.p[0];
    EW_FOR_EACH(i) {
        if (masked && mask[pc.r[2] + i] == 0.0) continue;
        const float g = grad[pc.r[0] + i], m0 = exp_avg[pc.r[5] + i];
        const float m = m0 + (1.0 - beta1) * (g - m0);
        const float v = beta2 * exp_avg_sq[pc.r[6] + i] + (1.0 - beta2) * g * g;
        const float denom = sqrt(v) / bc2_sqrt + eps;
        exp_avg[pc.r[5] + i] = m;
        exp_avg_sq[pc.r[6] + i] = v;
        param[pc.r[4] + i] = param[pc.r[4] + i] * decay - step_size * m / denom;
    }
}
