/*
 * optim.cl — SGD with momentum, weight decay and optional Nesterov, and the lookahead (EMA)
 * sync, and AdamW, over flat buffers, as the CPU reference (src/backends/cpu/optim.c).
 * SGD (torch.optim.SGD with dampening 0):
 *   g = grad + wd * p;  v = mu * v + g;  step = nesterov ? g + mu * v : v;  p -= lr * step
 * lr is read from device memory (written by the host before each step), so a recorded step
 * replays with a new learning rate without touching kernel arguments; with lr_count 2 the
 * momentum is the value after it. With a mask, an element whose mask is 0 is left as it is
 * (sparse masks). With a skip flag, a non-zero skip[0] (mixed precision: an inf/NaN gradient
 * this step) leaves everything as it was (SGD and AdamW). Both are launch EW (op_list.h): an
 * absent optional slot has the offset DBK_EW_ABSENT.  global (n)
 */
#define EW_PRESENT(off) ((off) != 0xffffffffu)

__kernel void sgd_momentum_update(__global const float *grad, const uint g_off, __global const float *lr, const uint lr_off,
                                  __global const float *mask, const uint k_off, __global const float *skip,
                                  const uint q_off, __global float *param, const uint p_off, __global float *mom,
                                  const uint m_off, const float mu_param, const float wd, const int nesterov,
                                  const int lr_count, const int n) {
    const int i = get_global_id(0);
    if (i >= n || (EW_PRESENT(q_off) && skip[q_off] != 0.0f)) return;   /* skip: a step with an inf/NaN gradient */
    if (EW_PRESENT(k_off) && mask[k_off + i] == 0.0f) return;          /* masked out: nothing changes */
    const float rate = lr[lr_off];
    const float mu = lr_count == 2 ? lr[lr_off + 1] : mu_param; /* {lr, momentum}: a scheduled momentum */
    const float p = param[p_off + i];
    const float g = grad[g_off + i] + wd * p;
    const float v = mu * mom[m_off + i] + g;
    const float step = nesterov ? g + mu * v : v;
    mom[m_off + i] = v;
    param[p_off + i] = p - rate * step;
}

/* AdamW (torch.optim.AdamW, amsgrad off), as src/backends/cpu/optim.c:
 *   p = p * (1 - lr * wd);  m = m + (1 - beta1) * (g - m);  v = beta2 * v + (1 - beta2) * g * g;
 *   p = p - step_size * m / (sqrt(v) / bc2_sqrt + eps)
 * step = {lr, step_size, bc2_sqrt[, beta1]} (step_count 3 or 4) is read from device memory
 * (the host writes it each step). global (n) */
__kernel void adamw_update(__global const float *grad, const uint g_off, __global const float *step, const uint s_off,
                           __global const float *mask, const uint k_off, __global const float *skip,
                           const uint q_off, __global float *param, const uint p_off, __global float *exp_avg,
                           const uint m_off, __global float *exp_avg_sq, const uint v_off, const float beta1_param,
                           const float beta2, const float eps, const float wd, const int step_count, const int n) {
    const int i = get_global_id(0);
    if (i >= n || (EW_PRESENT(q_off) && skip[q_off] != 0.0f)) return;
    if (EW_PRESENT(k_off) && mask[k_off + i] == 0.0f) return;   /* masked out: nothing changes */
    const float decay = 1.0f - step[s_off] * wd, step_size = step[s_off + 1], bc2_sqrt = step[s_off + 2];
    const float beta1 = step_count == 4 ? step[s_off + 3] : beta1_param;
    const float g = grad[g_off + i], m0 = exp_avg[m_off + i];
    const float m = m0 + (1.0f - beta1) * (g - m0);
    const float v = beta2 * exp_avg_sq[v_off + i] + (1.0f - beta2) * g * g;
    const float denom = sqrt(v) / bc2_sqrt + eps;
    exp_avg[m_off + i] = m;
    exp_avg_sq[v_off + i] = v;
    param[p_off + i] = param[p_off + i] * decay - step_size * m / denom;
}

/* Muon's momentum (EW): v = mu * v + g; u = nesterov ? g + mu * v : v.  global (n) */
__kernel void muon_momentum(__global const float *g, const uint g_off, __global float *v, const uint v_off,
                            __global float *u, const uint u_off, const float mu, const float nesterov, const int n) {
    const int i = get_global_id(0);
    if (i >= n) return;
    const float gi = g[g_off + i], vi = mu * v[v_off + i] + gi;
    v[v_off + i] = vi;
    u[u_off + i] = nesterov != 0.0f ? gi + mu * vi : vi;
}

/* Muon's step (EW): p = (p - lr * x) * (1 - lr * wd); lr read from device memory.  global (n) */
__kernel void muon_update(__global const float *x, const uint x_off, __global const float *lr, const uint lr_off,
                          __global float *p, const uint p_off, const float wd, const int n) {
    const int i = get_global_id(0);
    if (i >= n) return;
    const float rate = lr[lr_off];
    p[p_off + i] = (p[p_off + i] - rate * x[x_off + i]) * (1.0f - rate * wd);
}

/* y = x * (g > 0 ? alpha g / (||x|| + eps) : 1) in ONE work-group: work-item l sums the squares
 * of x[l], x[l + ls], ..., a tree in local memory adds the ls partial sums (a fixed order, so
 * the result never changes from run to run), then every work-item scales its own elements
 * (each read before the barrier, so y may alias x).  global (ls), local (ls) */
__kernel void norm_scale(__global const float *x, const uint x_off, __global const float *g, const uint g_off,
                         __global float *y, const uint y_off, const float alpha, const float eps, const int n,
                         __local float *scratch) {
    const int lid = get_local_id(0), ls = get_local_size(0);
    const float gate = g[g_off];
    float acc = 0.0f;
    if (gate > 0.0f)
        for (int i = lid; i < n; i += ls) acc += x[x_off + i] * x[x_off + i];
    scratch[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int off = ls / 2; off > 0; off >>= 1) {
        if (lid < off) scratch[lid] += scratch[lid + off];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float scale = gate > 0.0f ? alpha * gate / (sqrt(scratch[0]) + eps) : 1.0f;
    for (int i = lid; i < n; i += ls) y[y_off + i] = x[x_off + i] * scale;
}

/* Lookahead (launch EW): w = 1 - decay; ema = torch.lerp(ema, params, w) in ATen's two-branch
 * form; params = ema. decay is read from device memory (written by the host before each
 * update). global (n) */
__kernel void lookahead(__global const float *decay, const uint d_off, __global float *ema, const uint e_off,
                        __global float *param, const uint p_off, const int n) {
    const int i = get_global_id(0);
    if (i >= n) return;
    const float w = 1.0f - decay[d_off];
    const float e = ema[e_off + i], p = param[p_off + i];
    const float v = fabs(w) < 0.5f ? e + w * (p - e) : p - (p - e) * (1.0f - w);
    ema[e_off + i] = v;
    param[p_off + i] = v;
}

/* FISHER_ACCUMULATE (launch EW): acc += absolute ? |g| : g * g, the product rounded before
 * the add as on the CPU (contraction off). global (n) */
#pragma OPENCL FP_CONTRACT OFF
__kernel void fisher_accumulate(__global const float *g, const uint g_off, __global float *acc, const uint a_off,
                                const float absolute, const int n) {
    const int i = get_global_id(0);
    if (i >= n) return;
    const float v = g[g_off + i];
    const float term = absolute != 0.0f ? fabs(v) : v * v;
    acc[a_off + i] = acc[a_off + i] + term;
}
