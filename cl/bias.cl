/*
 * bias.cl — a convolution's per-channel bias and its gradient, as the CPU reference
 * (src/backends/cpu/bias.c; the bias term of torch.nn.functional.conv2d):
 *   bias_add     y[n,c,h,w] = x[n,c,h,w] + b[c]        (y may alias x)
 *   channel_sum  db[c] = sum over n,h,w of dy[n,c,h,w]  (overwrites db)
 * x, y, dy (N,C,H,W) with HW = H*W; b, db (C); M = N*HW values per channel.
 *
 * channel_sum runs one work-group per channel (the host picks a power-of-two local size within
 * the kernel's work-group limit and the local memory). Work-item l sums the channel's values
 * l, l + ls, l + 2 ls, ... in the flat (n, hw) order of the channel, so neighbouring work-items
 * read neighbouring floats and a batch-1 channel is spread over the whole group as well as a
 * batch-1024 one; then a tree in local memory adds the partial sums. The order is fixed by
 * (M, ls), so a result never changes from run to run (no atomics).
 */

/* global (M * C rounded up), one work-item per element; c from the flat index. */
__kernel void bias_add(__global const float *x, const uint x_off, __global const float *b, const uint b_off,
                       __global float *y, const uint y_off, const int C, const int HW, const int n) {
    const int i = get_global_id(0);
    if (i >= n) return;
    const int c = (i / HW) % C;
    y[y_off + i] = x[x_off + i] + b[b_off + c];
}

/* One work-group per channel.  global (C * ls), local (ls); scratch: ls floats. */
__kernel void channel_sum(__global const float *dy, const uint dy_off, const int N, const int C, const int HW,
                          __global float *db, const uint db_off, __local float *scratch) {
    const int c = get_group_id(0), lid = get_local_id(0), ls = get_local_size(0);
    /* (n, j) of flat index lid, then stepped by ls without a division per element */
    int n = lid / HW, j = lid - (lid / HW) * HW;
    float acc = 0.0f;
    while (HW > 0 && n < N) {   /* HW == 0: an empty channel, db = 0 as on the CPU */
        acc += dy[dy_off + (n * C + c) * HW + j];
        j += ls;
        while (j >= HW) {
            j -= HW;
            n++;
        }
    }
    scratch[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int off = ls / 2; off > 0; off >>= 1) {
        if (lid < off) scratch[lid] += scratch[lid + off];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) db[db_off + c] = scratch[0];
}
