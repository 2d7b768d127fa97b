/*
 * window.glsl — a float tensor bound as DBK_VK_WINDOWS (4) consecutive storage-buffer
 * windows, for tensors larger than one binding may be (maxStorageBufferRange, 128 MiB on
 * lavapipe). Window k starts k * step bytes after window 0 (step a multiple of the offset
 * alignment, vk_cmd.c dbk_vk_windows). The host passes step and the tensor's element offset
 * in window 0 as push constants.
 *
 * WINDOWED_F32(b, name) declares binding b as such an array and
 * `float name(uint e, uint step)`, element e counted from the start of window 0.
 * Array elements are selected with constant indices (no descriptor-indexing feature needed);
 * the window number is counted by comparisons, not a division (it runs per element; the
 * step may be up to 2^31, so no multiple of it is formed).
 */
#define WINDOWED_F32(B, NAME)                                                      \
    layout(binding = B) readonly buffer NAME##_block { float v[]; } NAME##_w[4];   \
    float NAME(uint e, uint step) {                                                \
        const uint b0 = e * 4u, w1 = uint(b0 >= step), b1 = b0 - w1 * step;        \
        const uint w2 = uint(b1 >= step), b2 = b1 - w2 * step, w3 = uint(b2 >= step); \
        const uint win = w1 + w2 + w3, at = (b2 - w3 * step) >> 2;                 \
        if (win == 0u) return NAME##_w[0].v[at];                                   \
        if (win == 1u) return NAME##_w[1].v[at];                                   \
        if (win == 2u) return NAME##_w[2].v[at];                                   \
        return NAME##_w[3].v[at];                                                  \
    }
