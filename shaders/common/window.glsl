/*
 * window.glsl — a float tensor bound as DBK_VK_WINDOWS (4) consecutive storage-buffer
 * windows, for tensors larger than one binding may be (maxStorageBufferRange, 128 MiB on
 * lavapipe). Window k starts k * step bytes after window 0 (step a multiple of the offset
 * alignment, vk_cmd.c dbk_vk_windows). The host passes step and the tensor's element offset
 * in window 0 as push constants.
 *
 * WINDOWED_F32(b, name) declares binding b as such an array and
 * `float name(uint e, uint step)`, element e counted from the start of window 0.
 * Array elements are selected with constant indices (no descriptor-indexing feature needed).
 */
#define WINDOWED_F32(B, NAME)                                                      \
    layout(binding = B) readonly buffer NAME##_block { float v[]; } NAME##_w[4];   \
    float NAME(uint e, uint step) {                                                \
        const uint b = e * 4u, win = b / step, at = (b - win * step) >> 2;        \
        if (win == 0u) return NAME##_w[0].v[at];                                   \
        if (win == 1u) return NAME##_w[1].v[at];                                   \
        if (win == 2u) return NAME##_w[2].v[at];                                   \
        return NAME##_w[3].v[at];                                                  \
    }
