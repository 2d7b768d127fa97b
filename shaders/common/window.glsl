/*
 * window.glsl — a tensor bound as DBK_VK_WINDOWS (4) consecutive storage-buffer
 * windows, for tensors larger than one binding may be (maxStorageBufferRange, 128 MiB on
 * lavapipe). Window k starts k * step bytes after window 0 (step a multiple of the offset
 * alignment, vk_cmd.c dbk_vk_windows). The host passes step and the tensor's element offset
 * in window 0 as push constants.
 *
 * WINDOWED(b, name, T, L) declares binding b as such an array of T (2^L bytes each) and
 * `float name(uint e, uint step)`, element e counted from the start of window 0, widened to
 * float. WINDOWED_F32(b, name) is the f32 case; WINDOWED_OPERAND(b, name) the operand type
 * of common/operand.glsl (f32, or f16 in the _f16 variants).
 * Array elements are selected with constant indices (no descriptor-indexing feature needed);
 * the window number is counted by comparisons, not a division (it runs per element; the
 * step may be up to 2^31, so no multiple of it is formed).
 */
#define WINDOWED(B, NAME, T, L)                                                    \
    layout(binding = B) readonly buffer NAME##_block { T v[]; } NAME##_w[4];       \
    float NAME(uint e, uint step) {                                                \
        const uint b0 = e << L, w1 = uint(b0 >= step), b1 = b0 - w1 * step;        \
        const uint w2 = uint(b1 >= step), b2 = b1 - w2 * step, w3 = uint(b2 >= step); \
        const uint win = w1 + w2 + w3, at = (b2 - w3 * step) >> L;                 \
        if (win == 0u) return float(NAME##_w[0].v[at]);                            \
        if (win == 1u) return float(NAME##_w[1].v[at]);                            \
        if (win == 2u) return float(NAME##_w[2].v[at]);                            \
        return float(NAME##_w[3].v[at]);                                           \
    }
#define WINDOWED_F32(B, NAME) WINDOWED(B, NAME, float, 2u)
#define WINDOWED_OPERAND(B, NAME) WINDOWED(B, NAME, OPERAND, OPERAND_BYTES_LOG2)
