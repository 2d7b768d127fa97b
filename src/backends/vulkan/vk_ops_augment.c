/*
 * vk_ops_augment.c — batch augmentation (augment.comp) on the Vulkan backend, bit-exact
 * with src/backends/cpu/augment.c (op_list.h).
 *
 * Augment reads the resident dataset, which may exceed one storage-buffer binding (CIFAR-10
 * is 150 MB, lavapipe binds at most 128 MiB): the images are bound as DBK_VK_WINDOWS
 * consecutive windows of `step` bytes (a multiple of minStorageBufferOffsetAlignment), which
 * together cover the tensor; augment.comp picks the window of each byte. A dataset larger
 * than DBK_VK_WINDOWS windows is refused with the limit named.
 */
#include <string.h>

#include "backends/vulkan/vk_internal.h"

/* The push block of augment.comp, 29 words, within the 128 bytes every shader may use. */
_Static_assert(29 * 4 <= DBK_VK_PUSH_BYTES, "augment push constants exceed the push block");

dbk_status dbk_vk_record_augment(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    dbk_vk_state *vk = dbk_vk(be);
    const dbk_augment_params *p = &op->p.augment;
    const dbk_tensor *img = &op->src[0];
    const int64_t M = img->shape[0], H = img->shape[2], W = img->shape[3];
    const int64_t N = op->dst[0].shape[0];
    const bool has_idx = op->src[2].ndim != 0;
    const int64_t L = has_idx ? op->src[2].shape[0] : M;
    if (N == 0) return DBK_OK;
    if (M == 0 || L == 0)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "augment: a batch of %lld rows from an empty dataset", (long long)N);

    /* Images: DBK_VK_WINDOWS windows of `step` bytes from the aligned start of the tensor. */
    dbk_vk_dispatch d = {.shader = "augment", .nspec = 1, .spec = {vk->wg}, .nbind = 6};
    uint32_t step, r_img;
    DBK_TRY(dbk_vk_windows(vk, img, false, d.bind, &step, &r_img));
    dbk_vk_bind *rest = &d.bind[DBK_VK_WINDOWS];   /* bindings 1..5 */
    uint32_t r_lab, r_idx = 0, r_state, r_x, r_y;
    DBK_TRY(dbk_vk_window(vk, &op->src[1], 0, -1, false, &rest[0], &r_lab));
    if (has_idx) DBK_TRY(dbk_vk_window(vk, &op->src[2], 0, -1, false, &rest[1], &r_idx));
    else rest[1] = dbk_vk_placeholder(&op->src[3]);
    DBK_TRY(dbk_vk_window(vk, &op->src[3], 0, -1, false, &rest[2], &r_state));
    DBK_TRY(dbk_vk_window(vk, &op->dst[0], 0, -1, true, &rest[3], &r_x));
    DBK_TRY(dbk_vk_window(vk, &op->dst[1], 0, -1, true, &rest[4], &r_y));
    float scale[3], shift[3];
    dbk_augment_affine(p, scale, shift);
    const uint32_t pc[29] = {(uint32_t)N, (uint32_t)H, (uint32_t)W, (uint32_t)M, (uint32_t)L, has_idx ? 1u : 0u,
                             (uint32_t)p->pad, (uint32_t)p->cutout, p->train ? 1u : 0u, p->flip ? 1u : 0u,
                             step, r_img, r_lab, r_idx, r_state, r_x, r_y,
                             dbk_vk_f32_bits(scale[0]), dbk_vk_f32_bits(scale[1]), dbk_vk_f32_bits(scale[2]),
                             dbk_vk_f32_bits(shift[0]), dbk_vk_f32_bits(shift[1]), dbk_vk_f32_bits(shift[2]),
                             p->flip_alternating ? 1u : 0u, (uint32_t)p->view_dy, (uint32_t)p->view_dx, p->view_flip ? 1u : 0u,
                             dbk_vk_f32_bits(p->brightness), dbk_vk_f32_bits(p->contrast)};
    memcpy(d.push, pc, sizeof pc);
    d.groups[0] = dbk_vk_groups_1d(vk, N * 3 * H * W, vk->wg);
    return dbk_vk_emit(be, rec, &d);
}
