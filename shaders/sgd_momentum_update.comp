#version 450
/*
 * sgd_momentum_update.comp — SGD with momentum, weight decay and optional Nesterov over flat buffers
 * (DBK_OP_SGD_MOMENTUM_UPDATE, torch.optim.SGD with dampening 0):
 *   g = grad + wd * p;  v = mu * v + g;  step = nesterov ? g + mu * v : v;  p -= lr * step
 * lr is read from device memory (the host rewrites it each step). With masked != 0, an element
 * whose mask is 0 is left as it is (sparse masks; without a mask the host binds grad there,
 * never read). With has_skip, a non-zero skip[0] (mixed precision: an inf/NaN gradient this
 * step) changes nothing. Grid-stride over n.
 */
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    uint n;
    uint rg, rl, rp, rv;   /* element offsets of bindings 0..3 */
    float mu, wd;
    uint nesterov;
    uint rk, masked;       /* element offset of binding 4; whether it is a mask */
    uint mu_in_lr;         /* lr holds {lr, momentum}: the step's momentum replaces mu */
    uint rq, has_skip;     /* element offset of binding 5, and whether it is bound */
} pc;

layout(binding = 0) readonly buffer BufG { float grad[]; };   /* (n) */
layout(binding = 1) readonly buffer BufL { float lr[]; };     /* (1) or (2) */
layout(binding = 2) buffer BufP { float param[]; };           /* (n) in place */
layout(binding = 3) buffer BufV { float mom[]; };             /* (n) in place */
layout(binding = 4) readonly buffer BufK { float mask[]; };   /* (n) */
layout(binding = 5) readonly buffer BufQ { float skip[]; };   /* (1), when has_skip */

void main() {
    if (pc.has_skip != 0u && skip[pc.rq] != 0.0) return;   /* a step with an inf/NaN gradient */
    const float rate = lr[pc.rl];
    const float mu = pc.mu_in_lr != 0 ? lr[pc.rl + 1] : pc.mu;
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += stride) {
        if (pc.masked != 0u && mask[pc.rk + i] == 0.0) continue;
        const float p = param[pc.rp + i];
        const float g = grad[pc.rg + i] + pc.wd * p;
        const float v = mu * mom[pc.rv + i] + g;
        const float step = pc.nesterov != 0 ? g + mu * v : v;
        mom[pc.rv + i] = v;
        param[pc.rp + i] = p - rate * step;
    }
}
