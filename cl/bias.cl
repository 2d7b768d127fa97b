/*
 * bias.cl — a convolution's per-channel bias and its gradient, as the CPU reference
 * (src/backends/cpu/bias.c; the bias term of torch.nn.functional.conv2d):
 *   bias_add     y[n,c,h,w] = x[n,c,h,w] + b[c]        (y may alias x)
 *   channel_sum  db[c] = sum over n,h,w of dy[n,c,h,w]  (overwrites db)
 * x, y, dy (N,C,H,W) with HW = H*W; b, db (C); M = N*HW values per channel.
 *
 * bias_add: a work-item adds the bias to 8 consecutive values of one (n, c) plane (one vector),
 * so the channel comes from the row index, not from a division per element (PoCL runs
 * work-items as loops on the CPU, where a per-element integer division costs more than the add).
 *
 * channel_sum runs one work-group per channel (the host picks a power-of-two local size within
 * the kernel's work-group limit and the local memory), as bn.cl's reductions: work-item l sums
 * the planes l, l + ls, ... with float8 partial sums over each contiguous plane, then a tree in
 * local memory adds the partial sums. The order is fixed by (N, H*W, ls), so a result never
 * changes from run to run (no atomics).
 */

/* y = x + b[c] on 8 values of plane row = n*C + c.  global (ceil(HW / 8), N*C) */
__kernel void bias_add(__global const float *x, const uint x_off, __global const float *b, const uint b_off,
                       __global float *y, const uint y_off, const int NC, const int C, const int HW) {
    const int j0 = get_global_id(0) * 8, row = get_global_id(1);
    if (j0 >= HW || row >= NC) return;
    const float bc = b[b_off + row % C];
    const int i = row * HW + j0;
    if (j0 + 8 <= HW) {
        vstore8(vload8(0, x + x_off + i) + bc, 0, y + y_off + i);
        return;
    }
    for (int j = 0; j < HW - j0; j++) y[y_off + i + j] = x[x_off + i + j] + bc;
}

/* One work-group per channel.  global (C * ls), local (ls); scratch: ls floats. */
__kernel void channel_sum(__global const float *dy, const uint dy_off, const int N, const int C, const int HW,
                          __global float *db, const uint db_off, __local float *scratch) {
    const int c = get_group_id(0), lid = get_local_id(0), ls = get_local_size(0);
    float8 acc8 = (float8)(0.0f);
    float acc1 = 0.0f;
    for (int n = lid; n < N; n += ls) {
        __global const float *p = dy + dy_off + (n * C + c) * HW;
        int j = 0;
        for (; j + 8 <= HW; j += 8) acc8 += vload8(0, p + j);
        for (; j < HW; j++) acc1 += p[j];
    }
    const float4 h = acc8.lo + acc8.hi;
    scratch[lid] = ((h.x + h.y) + (h.z + h.w)) + acc1;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int off = ls / 2; off > 0; off >>= 1) {
        if (lid < off) scratch[lid] += scratch[lid + off];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) db[db_off + c] = scratch[0];
}
