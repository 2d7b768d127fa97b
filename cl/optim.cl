/*
 * optim.cl — SGD with momentum, weight decay and optional Nesterov over flat buffers, as the
 * CPU reference (src/backends/cpu/optim.c, torch.optim.SGD with dampening 0):
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
