#version 450
/*
 * adamw_update.comp — AdamW over flat buffers (DBK_OP_ADAMW_UPDATE, torch.optim.AdamW with
 * amsgrad off), as src/backends/cpu/optim.c:
 *   p = p * (1 - lr * wd);  m = m + (1 - beta1) * (g - m);  v = beta2 * v + (1 - beta2) * g * g;
 *   p = p - step_size * m / (sqrt(v) / bc2_sqrt + eps)
 * step = {lr, step_size, bc2_sqrt[, beta1]} is read from device memory (the host rewrites it
 * each step). With masked != 0, an element whose mask is 0 is left as it is (sparse masks;
 * without a mask the host binds grad there, never read). With has_skip, a non-zero skip[0]
 * (mixed precision: an inf/NaN gradient this step) changes nothing. Grid-stride over n.
 */
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    uint n;
    uint rg, rs, rp, rm, rv;   /* element offsets of bindings 0..4 */
    float beta1, beta2, eps, wd;
    uint rk, masked;           /* element offset of binding 5; whether it is a mask */
    uint beta1_in_step;        /* step holds a 4th value, the step's beta1, replacing beta1 */
    uint rq, has_skip;         /* element offset of binding 6, and whether it is bound */
} pc;

layout(binding = 0) readonly buffer BufG { float grad[]; };      /* (n) */
layout(binding = 1) readonly buffer BufS { float step[]; };      /* (3) {lr, step_size, bc2_sqrt} or (4) + beta1 */
layout(binding = 2) buffer BufP { float param[]; };              /* (n) in place */
layout(binding = 3) buffer BufM { float exp_avg[]; };            /* (n) in place */
layout(binding = 4) buffer BufV { float exp_avg_sq[]; };         /* (n) in place */
layout(binding = 5) readonly buffer BufK { float mask[]; };      /* (n) */
layout(binding = 6) readonly buffer BufQ { float skip[]; };      /* (1), when has_skip */

void main() {
    if (pc.has_skip != 0u && skip[pc.rq] != 0.0) return;   /* a step with an inf/NaN gradient */
    const float decay = 1.0 - step[pc.rs] * pc.wd, step_size = step[pc.rs + 1], bc2_sqrt = step[pc.rs + 2];
    const float beta1 = pc.beta1_in_step != 0 ? step[pc.rs + 3] : pc.beta1;
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += stride) {
        if (pc.masked != 0u && mask[pc.rk + i] == 0.0) continue;
        const float g = grad[pc.rg + i], m0 = exp_avg[pc.rm + i];
        const float m = m0 + (1.0 - beta1) * (g - m0);
        const float v = pc.beta2 * exp_avg_sq[pc.rv + i] + (1.0 - pc.beta2) * g * g;
        const float denom = sqrt(v) / bc2_sqrt + pc.eps;
        exp_avg[pc.rm + i] = m;
        exp_avg_sq[pc.rv + i] = v;
        param[pc.rp + i] = param[pc.rp + i] * decay - step_size * m / denom;
    }
}
