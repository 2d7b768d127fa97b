/*
 * loss.cl — softmax cross-entropy with label smoothing (forward, backward) and top-1
 * accuracy counting. Semantics as the CPU reference (src/backends/cpu/loss.c,
 * torch.nn.CrossEntropyLoss(label_smoothing=eps, reduction='sum')):
 *   loss_i = lse_i - ((1 - eps) z_label + eps/K sum_k z_k),  lse_i = log sum_k exp(z_ik)
 *   dlogits = grad_scale * (probs - target),  target_k = (1-eps)[k == label] + eps/K
 * Labels outside [0, K) add nothing and get a zero gradient row; accuracy counts them wrong,
 * and a row with a NaN or infinite logit too (NaN compares false, so it would rank first).
 * logits, probs, dlogits (N,K); labels i32 (N); loss_sum and correct single f32 counters the
 * op ADDS to, so a whole epoch accumulates on the device.
 *
 * The forward and the accuracy run as ONE work-group (a batch has a few hundred rows): each
 * work-item takes rows strided by the local size, then a tree reduction in local memory
 * gives the batch total, which work-item 0 adds to the counter. Deterministic, no atomics.
 */

static float xent_wg_sum(float v, __local float *scratch) {
    const int lid = get_local_id(0), ls = get_local_size(0);
    scratch[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int off = ls / 2; off > 0; off >>= 1) {
        if (lid < off) scratch[lid] += scratch[lid + off];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return scratch[0];
}

/* global = local = (ls) */
__kernel void softmax_xent_fwd(__global const float *z, const uint z_off, __global const int *labels, const uint l_off,
                       __global float *probs, const uint p_off, __global float *loss_sum, const uint loss_off,
                       const int N, const int K, const float eps, __local float *scratch) {
    float total = 0.0f;
    for (int i = get_local_id(0); i < N; i += get_local_size(0)) {
        __global const float *zi = z + z_off + i * K;
        __global float *pi = probs + p_off + i * K;
        if (K == 0) continue;
        float zmax = zi[0];
        for (int j = 1; j < K; j++) zmax = zi[j] > zmax ? zi[j] : zmax;
        float sum = 0.0f, zsum = 0.0f;
        for (int j = 0; j < K; j++) {
            sum += exp(zi[j] - zmax);
            zsum += zi[j];
        }
        for (int j = 0; j < K; j++) pi[j] = exp(zi[j] - zmax) / sum;
        const int label = labels[l_off + i];
        if (label < 0 || label >= K) continue;
        const float lse = zmax + log(sum);
        total += lse - ((1.0f - eps) * zi[label] + eps / (float)K * zsum);
    }
    const float t = xent_wg_sum(total, scratch);
    if (get_local_id(0) == 0) loss_sum[loss_off] += t;
}

/* global (N*K) */
__kernel void softmax_xent_bwd(__global const float *probs, const uint p_off, __global const int *labels, const uint l_off,
                       __global float *dz, const uint dz_off, const int N, const int K, const float eps,
                       const float grad_scale) {
    const int i = get_global_id(0);
    if (i >= N * K) return;
    const int row = i / K, j = i % K;
    const int label = labels[l_off + row];
    const float off = eps / (float)K;
    const float target = j == label ? 1.0f - eps + off : off;
    dz[dz_off + i] = (label >= 0 && label < K) ? grad_scale * (probs[p_off + i] - target) : 0.0f;
}

/* global = local = (ls) */
/* top-k: the label's rank = logits larger, plus equal ones at a lower index (op_list.h) */
__kernel void accuracy(__global const float *z, const uint z_off, __global const int *labels, const uint l_off,
                       __global float *correct, const uint c_off, const int N, const int K, const int top,
                       __local float *scratch) {
    float count = 0.0f;
    for (int i = get_local_id(0); i < N; i += get_local_size(0)) {
        const int label = labels[l_off + i];
        if (K == 0 || label < 0 || label >= K) continue;
        __global const float *zi = z + z_off + i * K;
        const float zy = zi[label];
        int rank = 0, finite = 1;
        for (int j = 0; j < K; j++) {
            rank += zi[j] > zy || (j < label && zi[j] == zy);
            finite &= isfinite(zi[j]);
        }
        if (finite && rank < top) count += 1.0f;
    }
    const float t = xent_wg_sum(count, scratch);
    if (get_local_id(0) == 0) correct[c_off] += t;
}
