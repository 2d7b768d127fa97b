/*
 * augment.cl — batch assembly from the device-resident u8 dataset: index lookup, reflect pad
 * + random crop, random or alternating horizontal flip, normalisation, cutout, or a fixed
 * test-time view (DBK_OP_AUGMENT in op_list.h).
 * BIT-EXACT with the CPU reference (src/backends/cpu/augment.c): the random choices are
 * dbk_augment_choices and dbk_augment_base_flip, built on dbk_hash_u32 (src/core/rng.h) —
 * keep these in sync — and the normalisation is v * scale + shift in IEEE float, scale and
 * shift computed on the host (dbk_augment_affine): two correctly rounded operations, never
 * contracted into a multiply-add (FP_CONTRACT OFF below).
 *
 * Layout: images u8 (M,3,H,W), labels u8 (M), indices i32 (L) (has_indices), state i32 (4)
 * {first, seed, epoch, run_seed}; out x f32 (N,3,H,W), out labels i32 (N). Rows are trusted
 * to be in range (op_list.h: the host guarantees it; the CPU backend checks).
 * global (W, N*3*H)
 */

#pragma OPENCL FP_CONTRACT OFF

static uint dbk_hash_mix(uint h) {
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    h ^= h >> 16;
    return h;
}

static uint dbk_hash_u32(uint a, uint b, uint c, uint d) {
    uint h = dbk_hash_mix(a ^ 0x9e3779b9u);
    h = dbk_hash_mix(h ^ b);
    h = dbk_hash_mix(h ^ c);
    h = dbk_hash_mix(h ^ d);
    return h;
}

/* ((uint64)h * n) >> 32, the multiply-shift of the CPU's hash_below */
static int hash_below(uint h, int n) { return (int)mul_hi(h, (uint)n); }

static int reflect_index(int u, int n) {
    if (u < 0) u = -u;
    if (u >= n) u = 2 * (n - 1) - u;
    return u;
}

__kernel void augment(__global const uchar *images, const uint img_off, __global const uchar *labels, const uint lab_off,
                      __global const int *indices, const uint idx_off, const int has_indices,
                      __global const int *state, const uint state_off,
                      __global float *out, const uint out_off, __global int *out_labels, const uint ol_off,
                      const int N, const int H, const int W, const int train, const int pad, const int flip_on,
                      const int flip_alt, const int cutout, const int view_dy, const int view_dx,
                      const int view_flip, const float scale0, const float scale1, const float scale2,
                      const float shift0, const float shift1, const float shift2, const float brightness,
                      const float contrast) {
    const int x = get_global_id(0), row3 = get_global_id(1);
    if (x >= W || row3 >= N * 3 * H) return;
    const int y = row3 % H, ic = row3 / H;
    const int c = ic % 3, i = ic / 3;
    const int first = state[state_off], row = first + i;
    const uint seed = (uint)state[state_off + 1];
    const uint epoch_odd = (uint)state[state_off + 2] & 1u, run_seed = (uint)state[state_off + 3];
    const int j = has_indices ? indices[idx_off + row] : row;
    if (c == 0 && y == 0 && x == 0) out_labels[ol_off + i] = labels[lab_off + j];

    /* Evaluation reads the fixed view; training replaces it with the row's draws. */
    int dy = view_dy, dx = view_dx, flip = view_flip, cut_y = 0, cut_x = 0, cut = 0;
    if (train) {
        const int crop_y = pad > 0 ? hash_below(dbk_hash_u32(seed, (uint)row, 0u, 0u), 2 * pad + 1) : 0;
        const int crop_x = pad > 0 ? hash_below(dbk_hash_u32(seed, (uint)row, 1u, 0u), 2 * pad + 1) : 0;
        dy = crop_y - pad;
        dx = crop_x - pad;
        if (flip_alt) flip = (int)((dbk_hash_u32(run_seed, (uint)j, 5u, 0u) & 1u) ^ epoch_odd);
        else flip = (int)(dbk_hash_u32(seed, (uint)row, 2u, 0u) >> 31) && flip_on;
        cut_y = cutout > 0 ? hash_below(dbk_hash_u32(seed, (uint)row, 3u, 0u), H - cutout + 1) : 0;
        cut_x = cutout > 0 ? hash_below(dbk_hash_u32(seed, (uint)row, 4u, 0u), W - cutout + 1) : 0;
        cut = cutout;
    }
    const float scale = c == 0 ? scale0 : c == 1 ? scale1 : scale2;
    const float shift = c == 0 ? shift0 : c == 1 ? shift1 : shift2;
    const int xs = flip ? W - 1 - x : x;
    const int sy = reflect_index(y + dy, H), sx = reflect_index(xs + dx, W);
    const float v = (float)images[img_off + ((j * 3 + c) * H + sy) * W + sx];
    const float scaled = v * scale;
    float o = scaled + shift;
    if (train && (brightness > 0.0f || contrast > 0.0f)) { /* speedrun's jitter: (o + b) * c per row */
#pragma OPENCL FP_CONTRACT OFF /* rounded as the CPU rounds: no fused multiply-add */
        const float b = (2.0f * (float)(dbk_hash_u32(seed, (uint)row, 6u, 0u) >> 8) * 0x1p-24f - 1.0f) * brightness;
        const float cc = (2.0f * (float)(dbk_hash_u32(seed, (uint)row, 7u, 0u) >> 8) * 0x1p-24f - 1.0f) * contrast + 1.0f;
        o = (o + b) * cc;
    }
    if (y >= cut_y && y < cut_y + cut && x >= cut_x && x < cut_x + cut) o = 0.0f;
    out[out_off + ((i * 3 + c) * H + y) * W + x] = o;
}
