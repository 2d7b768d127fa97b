/*
 * vk_ops_tta.c — selective test-time augmentation on the Vulkan backend: SCATTER_ROWS
 * (scatter_rows.comp) and CONFIDENCE_SELECT (tta_confidence.comp, then tta_rank.comp).
 * Semantics: op_list.h and src/backends/cpu/tta.c. The tensors are a test set's logits (10,000
 * x 10 floats): one binding each on every device.
 */
#include <string.h>

#include "backends/vulkan/vk_internal.h"

dbk_status dbk_vk_record_scatter_rows(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    dbk_vk_state *vk = dbk_vk(be);
    const int64_t n = op->src[0].shape[0], k = op->src[0].shape[1], m = op->dst[0].shape[0];
    if (n == 0 || k == 0) return DBK_OK;
    const bool has_idx = op->src[1].ndim != 0;
    dbk_vk_dispatch d = {.shader = "scatter_rows", .nspec = 1, .spec = {vk->wg}, .nbind = 4};
    uint32_t rem[4];
    /* rows, indices (or the state again: never read), state -> table */
    DBK_TRY(dbk_vk_window(vk, &op->src[0], 0, -1, false, &d.bind[0], &rem[0]));
    DBK_TRY(dbk_vk_window(vk, has_idx ? &op->src[1] : &op->src[2], 0, -1, false, &d.bind[1], &rem[1]));
    DBK_TRY(dbk_vk_window(vk, &op->src[2], 0, -1, false, &d.bind[2], &rem[2]));
    DBK_TRY(dbk_vk_window(vk, &op->dst[0], 0, -1, true, &d.bind[3], &rem[3]));
    const uint32_t pc[8] = {(uint32_t)n, (uint32_t)k, (uint32_t)m, has_idx ? 1u : 0u, rem[0], rem[1], rem[2], rem[3]};
    memcpy(d.push, pc, sizeof pc);
    d.groups[0] = dbk_vk_groups_1d(vk, n * k, vk->wg);
    return dbk_vk_emit(be, rec, &d);
}

dbk_status dbk_vk_record_confidence_select(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    dbk_vk_state *vk = dbk_vk(be);
    const int64_t n = op->src[0].shape[0], classes = op->src[0].shape[1], k = op->dst[0].shape[0];
    if (n == 0) return DBK_OK;
    dbk_vk_dispatch d = {.shader = "tta_confidence", .nspec = 1, .spec = {vk->wg}, .nbind = 2};
    uint32_t rem[2];
    /* logits -> work */
    DBK_TRY(dbk_vk_window(vk, &op->src[0], 0, -1, false, &d.bind[0], &rem[0]));
    DBK_TRY(dbk_vk_window(vk, &op->dst[1], 0, -1, true, &d.bind[1], &rem[1]));
    const uint32_t pc[4] = {(uint32_t)n, (uint32_t)classes, rem[0], rem[1]};
    memcpy(d.push, pc, sizeof pc);
    d.groups[0] = dbk_vk_groups_1d(vk, n, vk->wg);
    DBK_TRY(dbk_vk_emit(be, rec, &d));
    /* work -> indices (the recorder orders it after the pass that wrote work) */
    dbk_vk_dispatch r = {.shader = "tta_rank", .nspec = 1, .spec = {vk->wg}, .nbind = 2};
    DBK_TRY(dbk_vk_window(vk, &op->dst[1], 0, -1, false, &r.bind[0], &rem[0]));
    DBK_TRY(dbk_vk_window(vk, &op->dst[0], 0, -1, true, &r.bind[1], &rem[1]));
    const uint32_t pr[4] = {(uint32_t)n, (uint32_t)k, rem[0], rem[1]};
    memcpy(r.push, pr, sizeof pr);
    r.groups[0] = dbk_vk_groups_1d(vk, n, vk->wg);
    return dbk_vk_emit(be, rec, &r);
}
