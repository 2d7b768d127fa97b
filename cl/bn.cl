/*
 * bn.cl — 2-D batch normalisation: training statistics, normalisation, backward. Semantics
 * and letters as the CPU reference (src/backends/cpu/bn.c, torch.nn.BatchNorm2d): x, y, dy,
 * dx (N,C,H,W) with HW = H*W; per-channel vectors (C); M = N*HW values per channel.
 *
 * Reductions run one work-group per channel (local size a power of two chosen by the host
 * within the kernel's work-group limit). The channel is N planes of HW contiguous floats;
 * the work-group covers `rows` planes at once with `lanes` work-items each, so small planes
 * (4x4) still keep every work-item busy without a division per element. Each work-item
 * keeps a compensated (Kahan) float sum — the CPU sums in double, and a plain float sum of
 * 2,000 values per work-item would lose a few digits — then a tree reduction in local
 * memory combines them. Mean and variance take two passes (mean first), as on the CPU.
 */

static void bn_span(const int HW, int *lanes, int *rows, int *jl, int *nl) {
    const int ls = get_local_size(0), lid = get_local_id(0);
    *lanes = HW < ls ? (HW > 0 ? HW : 1) : ls;
    *rows = ls / *lanes;
    *jl = lid % *lanes;
    *nl = lid / *lanes;
}

/* Sum of v over the work-group (every work-item gets it). scratch: local_size floats. */
static float bn_wg_sum(float v, __local float *scratch) {
    const int lid = get_local_id(0), ls = get_local_size(0);
    scratch[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int off = ls / 2; off > 0; off >>= 1) {
        if (lid < off) scratch[lid] += scratch[lid + off];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float r = scratch[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

#define KAHAN_ADD(sum, comp, v) do { const float y_ = (v) - comp; const float t_ = sum + y_; \
                                     comp = (t_ - sum) - y_; sum = t_; } while (0)

/* One work-group per channel: mean, invstd (saved), running statistics updated in place.
 * global (C * ls), local (ls) */
__kernel void bn_stats(__global const float *x, const uint x_off, const int N, const int C, const int HW,
                       const float eps, const float momentum,
                       __global float *mean, const uint mean_off, __global float *invstd, const uint invstd_off,
                       __global float *rmean, const uint rmean_off, __global float *rvar, const uint rvar_off,
                       __local float *scratch) {
    const int c = get_group_id(0);
    int lanes, rows, jl, nl;
    bn_span(HW, &lanes, &rows, &jl, &nl);
    const int M = N * HW;
    if (M == 0) return;
    float s = 0.0f, e = 0.0f;
    if (nl < rows)
        for (int n = nl; n < N; n += rows) {
            __global const float *xp = x + x_off + (n * C + c) * HW;
            for (int j = jl; j < HW; j += lanes) KAHAN_ADD(s, e, xp[j]);
        }
    const float mu = bn_wg_sum(s, scratch) / (float)M;
    s = 0.0f;
    e = 0.0f;
    if (nl < rows)
        for (int n = nl; n < N; n += rows) {
            __global const float *xp = x + x_off + (n * C + c) * HW;
            for (int j = jl; j < HW; j += lanes) {
                const float d = xp[j] - mu;
                KAHAN_ADD(s, e, d * d);
            }
        }
    const float ss = bn_wg_sum(s, scratch);
    if (get_local_id(0) == 0) {
        const float var = ss / (float)M;
        const float unbiased = M > 1 ? ss / (float)(M - 1) : var;
        mean[mean_off + c] = mu;
        invstd[invstd_off + c] = 1.0f / sqrt(var + eps);
        rmean[rmean_off + c] = (1.0f - momentum) * rmean[rmean_off + c] + momentum * mu;
        rvar[rvar_off + c] = (1.0f - momentum) * rvar[rvar_off + c] + momentum * unbiased;
    }
}

/* y = (x - m) * scale + shift; training: m = mean, scale = invstd * gamma; inference:
 * m = running_mean, scale = gamma / sqrt(running_var + eps).  global (HW, N*C) */
__kernel void bn_apply(__global const float *x, const uint x_off, __global float *y, const uint y_off,
                       const int NC, const int C, const int HW,
                       __global const float *s0, const uint s0_off, __global const float *s1, const uint s1_off,
                       __global const float *gamma, const uint g_off, __global const float *beta, const uint b_off,
                       const float eps, const int infer) {
    const int j = get_global_id(0), row = get_global_id(1);
    if (j >= HW || row >= NC) return;
    const int c = row % C;
    const float m = s0[s0_off + c], g = gamma[g_off + c];
    const float scale = infer ? g / sqrt(s1[s1_off + c] + eps) : s1[s1_off + c] * g;
    const int i = row * HW + j;
    y[y_off + i] = (x[x_off + i] - m) * scale + beta[b_off + c];
}

/* One work-group per channel: dbeta = sum dy, dgamma = sum dy * xhat.  global (C * ls) */
__kernel void bn_bwd_reduce(__global const float *x, const uint x_off, __global const float *dy, const uint dy_off,
                            const int N, const int C, const int HW,
                            __global const float *mean, const uint mean_off, __global const float *invstd,
                            const uint invstd_off, __global float *dgamma, const uint dg_off,
                            __global float *dbeta, const uint db_off, __local float *scratch) {
    const int c = get_group_id(0);
    int lanes, rows, jl, nl;
    bn_span(HW, &lanes, &rows, &jl, &nl);
    const float mu = mean[mean_off + c], is = invstd[invstd_off + c];
    float a = 0.0f, ea = 0.0f, b = 0.0f, eb = 0.0f;
    if (nl < rows)
        for (int n = nl; n < N; n += rows) {
            const int base = (n * C + c) * HW;
            for (int j = jl; j < HW; j += lanes) {
                const float g = dy[dy_off + base + j];
                KAHAN_ADD(a, ea, g);
                KAHAN_ADD(b, eb, g * ((x[x_off + base + j] - mu) * is));
            }
        }
    const float sa = bn_wg_sum(a, scratch);
    const float sb = bn_wg_sum(b, scratch);
    if (get_local_id(0) == 0) {
        dbeta[db_off + c] = sa;
        dgamma[dg_off + c] = sb;
    }
}

/* dx = gamma*invstd * (dy - dbeta/M - xhat * dgamma/M).  global (HW, N*C) */
__kernel void bn_bwd_dx(__global const float *x, const uint x_off, __global const float *dy, const uint dy_off,
                        __global float *dx, const uint dx_off, const int NC, const int C, const int HW, const int M,
                        __global const float *gamma, const uint g_off, __global const float *mean, const uint mean_off,
                        __global const float *invstd, const uint invstd_off,
                        __global const float *dgamma, const uint dg_off, __global const float *dbeta, const uint db_off) {
    const int j = get_global_id(0), row = get_global_id(1);
    if (j >= HW || row >= NC) return;
    const int c = row % C;
    const float mu = mean[mean_off + c], is = invstd[invstd_off + c];
    const float k = gamma[g_off + c] * is;
    const float a = dbeta[db_off + c] / (float)M, b = dgamma[dg_off + c] / (float)M;
    const int i = row * HW + j;
    dx[dx_off + i] = k * (dy[dy_off + i] - a - (x[x_off + i] - mu) * is * b);
}
