/*
 * vk_ops_optim.c — Muon's weight renormalisation and Newton-Schulz scaling (norm_scale.comp:
 * one work-group reduction) on the Vulkan backend. The other optimizer ops (SGD, AdamW,
 * lookahead, Muon's elementwise steps) are launch EW: launched generically (vk_ops_eltwise.c).
 * Semantics: op_list.h and src/backends/cpu/optim.c.
 */
#include <string.h>

#include "backends/vulkan/vk_internal.h"

/* One work group over the whole tensor (norm_scale.comp); Muon's filters (at most 256 x 2304
 * floats) fit one binding on every device. */
dbk_status dbk_vk_record_norm_scale(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    dbk_vk_state *vk = dbk_vk(be);
    const int64_t n = dbk_tensor_numel(&op->src[0]);
    if (n == 0) return DBK_OK;
    dbk_vk_dispatch d = {.shader = "norm_scale", .nspec = 1, .spec = {vk->wg}, .nbind = 3};
    uint32_t rem[3];
    /* x, g -> y (may alias x) */
    DBK_TRY(dbk_vk_window(vk, &op->src[0], 0, n, false, &d.bind[0], &rem[0]));
    DBK_TRY(dbk_vk_window(vk, &op->src[1], 0, 1, false, &d.bind[1], &rem[1]));
    DBK_TRY(dbk_vk_window(vk, &op->dst[0], 0, n, true, &d.bind[2], &rem[2]));
    const uint32_t pc[6] = {(uint32_t)n, rem[0], rem[1], rem[2], dbk_vk_f32_bits(op->p.norm_scale.alpha),
                            dbk_vk_f32_bits(op->p.norm_scale.eps)};
    memcpy(d.push, pc, sizeof pc);
    d.groups[0] = 1;
    return dbk_vk_emit(be, rec, &d);
}
