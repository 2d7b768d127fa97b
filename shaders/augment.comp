#version 450
/*
 * augment.comp — batch assembly from the resident u8 dataset (DBK_OP_AUGMENT): index lookup,
 * reflect pad + random crop, random or alternating flip, normalisation and cutout, or a fixed
 * test-time view, bit-identical to the CPU reference (src/backends/cpu/augment.c: same hash
 * draws, same float expression v * scale + shift with the host's dbk_augment_affine values:
 * a multiply and an add, each correctly rounded on every Vulkan device and kept apart by
 * `precise`; a division is not: Vulkan allows 2.5 ULP, as NVIDIA's driver does).
 *
 * The dataset may be larger than one storage-buffer binding (150 MB for CIFAR-10, lavapipe
 * allows 128 MiB), so it is bound as DBK_VK_WINDOWS (4) consecutive windows of `step`
 * bytes each: byte b (counted from the start of window 0) lives in window b / step at
 * b % step. u8 data is read as 32-bit words (no 8-bit storage feature needed).
 * One invocation per output element; the (c,y,x) = 0 invocation of a row writes its label.
 * Grid-stride over N*3*H*W.
 */
layout(local_size_x_id = 0) in;

#include "common/hash.glsl"

layout(push_constant) uniform Push {
    uint N, H, W, M, L, has_idx;
    uint pad, cutout, train, flip;
    uint step;                     /* bytes per image window */
    uint r_img, r_lab;             /* byte offsets of images (in window 0) and labels */
    uint r_idx, r_state, r_x, r_y; /* element offsets of bindings 2..5 */
    float scale0, scale1, scale2, shift0, shift1, shift2;   /* dbk_augment_affine */
    uint flip_alt;                 /* params.flip_alternating */
    int view_dy, view_dx;          /* the evaluation view */
    uint view_flip;
    float brightness, contrast;    /* train: speedrun's jitter, (x + b) * c per row (0, 0: none) */
} pc;

layout(binding = 0) readonly buffer BufI { uint words[]; } images[4];   /* (M,3,H,W) u8, windowed */
layout(binding = 1) readonly buffer BufL { uint lab_words[]; };          /* (M) u8 */
layout(binding = 2) readonly buffer BufX { int indices[]; };             /* (L) i32, or unused */
layout(binding = 3) readonly buffer BufS { int state[]; };               /* (4) {first, seed, epoch, run_seed} */
layout(binding = 4) writeonly buffer BufO { float x[]; };                /* (N,3,H,W) */
layout(binding = 5) writeonly buffer BufY { int out_labels[]; };         /* (N) */

uint image_byte(uint b) {
    const uint win = b / pc.step, at = b % pc.step;
    uint word;
    if (win == 0) word = images[0].words[at >> 2];
    else if (win == 1) word = images[1].words[at >> 2];
    else if (win == 2) word = images[2].words[at >> 2];
    else word = images[3].words[at >> 2];
    return (word >> ((at & 3u) * 8u)) & 0xffu;
}

int reflect_index(int u, int n) {
    if (u < 0) u = -u;
    if (u >= n) u = 2 * (n - 1) - u;
    return u;
}

void main() {
    const uint hw = pc.H * pc.W, total = pc.N * 3u * hw;
    const int first = state[pc.r_state], seed = state[pc.r_state + 1];
    const uint epoch_odd = uint(state[pc.r_state + 2]) & 1u, run_seed = uint(state[pc.r_state + 3]);
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint e = gl_GlobalInvocationID.x; e < total; e += stride) {
        const uint i = e / (3u * hw), c = (e / hw) % 3u, yx = e % hw;
        const int y = int(yx / pc.W), xo = int(yx % pc.W);
        const uint row = uint(first) + i;
        /* The host guarantees rows and indices in range; clamping keeps a bad one in bounds. */
        const uint rowc = min(row, pc.L - 1u);
        uint j = pc.has_idx != 0 ? uint(indices[pc.r_idx + rowc]) : rowc;
        j = min(j, pc.M - 1u);

        /* Evaluation reads the fixed view; training replaces it with the row's draws. */
        int dy = pc.view_dy, dx = pc.view_dx, flip = int(pc.view_flip != 0), cut_y = 0, cut_x = 0, cut = 0;
        if (pc.train != 0) {
            const uint s = uint(seed);
            const int crop_y = pc.pad > 0 ? hash_below(dbk_hash_u32(s, row, 0u, 0u), 2u * pc.pad + 1u) : 0;
            const int crop_x = pc.pad > 0 ? hash_below(dbk_hash_u32(s, row, 1u, 0u), 2u * pc.pad + 1u) : 0;
            dy = crop_y - int(pc.pad);
            dx = crop_x - int(pc.pad);
            if (pc.flip_alt != 0) flip = int((dbk_hash_u32(run_seed, j, 5u, 0u) & 1u) ^ epoch_odd);
            else flip = int(dbk_hash_u32(s, row, 2u, 0u) >> 31) & int(pc.flip != 0);
            cut_y = pc.cutout > 0 ? hash_below(dbk_hash_u32(s, row, 3u, 0u), pc.H - pc.cutout + 1u) : 0;
            cut_x = pc.cutout > 0 ? hash_below(dbk_hash_u32(s, row, 4u, 0u), pc.W - pc.cutout + 1u) : 0;
            cut = int(pc.cutout);
        }
        const int xs = flip != 0 ? int(pc.W) - 1 - xo : xo;
        const int sy = reflect_index(y + dy, int(pc.H));
        const int sx = reflect_index(xs + dx, int(pc.W));
        const float v = float(image_byte(pc.r_img + (j * 3u + c) * hw + uint(sy) * pc.W + uint(sx)));
        const float scale = c == 0 ? pc.scale0 : (c == 1 ? pc.scale1 : pc.scale2);
        const float shift = c == 0 ? pc.shift0 : (c == 1 ? pc.shift1 : pc.shift2);
        precise float scaled = v * scale;
        precise float out_v = scaled + shift;
        if (pc.train != 0 && (pc.brightness > 0.0 || pc.contrast > 0.0)) {
            const uint s = uint(seed);
            precise float b = (2.0 * float(dbk_hash_u32(s, row, 6u, 0u) >> 8) * (1.0 / 16777216.0) - 1.0) * pc.brightness;
            precise float cc = (2.0 * float(dbk_hash_u32(s, row, 7u, 0u) >> 8) * (1.0 / 16777216.0) - 1.0) * pc.contrast + 1.0;
            out_v = (out_v + b) * cc;
        }
        if (y >= cut_y && y < cut_y + cut && xo >= cut_x && xo < cut_x + cut) out_v = 0.0;
        x[pc.r_x + e] = out_v;
        if (c == 0 && yx == 0) {
            const uint b = pc.r_lab + j;
            out_labels[pc.r_y + i] = int((lab_words[b >> 2] >> ((b & 3u) * 8u)) & 0xffu);
        }
    }
}
