/*
 * optim.cl — SGD with momentum, weight decay and optional Nesterov, and the lookahead (EMA)
 * sync, over flat buffers, as the CPU reference (src/backends/cpu/optim.c).
 * SGD (torch.optim.SGD with dampening 0):
 *   g = grad + wd * p;  v = mu * v + g;  step = nesterov ? g + mu * v : v;  p -= lr * step
 * lr is read from device memory (written by the host before each step), so a recorded step
 * replays with a new learning rate without touching kernel arguments.  global (n)
 */
__kernel void sgd_momentum_update(__global const float *grad, const uint g_off, __global const float *lr, const uint lr_off,
                           __global float *param, const uint p_off, __global float *mom, const uint m_off,
                           const float mu, const float wd, const int nesterov, const int n) {
    const int i = get_global_id(0);
    if (i >= n) return;
    const float rate = lr[lr_off];
    const float p = param[p_off + i];
    const float g = grad[g_off + i] + wd * p;
    const float v = mu * mom[m_off + i] + g;
    const float step = nesterov ? g + mu * v : v;
    mom[m_off + i] = v;
    param[p_off + i] = p - rate * step;
}

/* Lookahead: w = 1 - decay; ema = torch.lerp(ema, params, w) in ATen's two-branch form;
 * params = ema. decay is read from device memory (written by the host before each update).
 * global (n) */
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
