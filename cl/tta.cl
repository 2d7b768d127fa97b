/*
 * tta.cl — selective test-time augmentation (cifar10-speedrun's tta), as the CPU reference
 * (src/backends/cpu/tta.c):
 *   scatter_rows       table[j_i, :] = rows[i, :], j_i = indices[first + i] or first + i
 *   confidence_select  two kernels: tta_confidence writes each row's S = sum_j exp(z_j - max z)
 *                      (j in order) to work; tta_rank gives row i the rank #{r : S_r > S_i or
 *                      (S_r == S_i and r < i)} and writes i to indices[rank] when rank < k, so
 *                      the result is the CPU's stable sort without a sort (N^2 comparisons: the
 *                      test set's 10,000 rows are 10^8 compares, milliseconds on a GPU).
 * No fused multiply-adds can change S: it is exp and adds only.
 */

/* global (K, N) */
__kernel void scatter_rows(__global const float *rows, const uint r_off, __global const int *indices, const uint i_off,
                           const int has_indices, __global const int *state, const uint s_off, __global float *table,
                           const uint t_off, const int N, const int K, const int M) {
    const int c = get_global_id(0), i = get_global_id(1);
    if (c >= K || i >= N) return;
    const int at = state[s_off] + i;
    const int j = has_indices ? indices[i_off + at] : at;
    if (j < 0 || j >= M) return;
    table[t_off + j * K + c] = rows[r_off + i * K + c];
}

/* global (N) */
__kernel void tta_confidence(__global const float *z, const uint z_off, __global float *work, const uint w_off,
                             const int N, const int K) {
    const int i = get_global_id(0);
    if (i >= N) return;
    __global const float *row = z + z_off + i * K;
    float m = row[0];
    for (int j = 1; j < K; j++) m = row[j] > m ? row[j] : m;
    float s = 0.0f;
    for (int j = 0; j < K; j++) s += exp(row[j] - m);
    work[w_off + i] = s;
}

/* global (N) */
__kernel void tta_rank(__global const float *work, const uint w_off, __global int *out, const uint o_off, const int N,
                       const int k) {
    const int i = get_global_id(0);
    if (i >= N) return;
    const float si = work[w_off + i];
    int rank = 0;
    for (int r = 0; r < N; r++) {
        const float sr = work[w_off + r];
        rank += (sr > si || (sr == si && r < i)) ? 1 : 0;
    }
    if (rank < k) out[o_off + rank] = i;
}
