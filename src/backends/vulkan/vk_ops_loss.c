/*
 * vk_ops_loss.c — softmax cross-entropy forward and backward (softmax_xent_fwd.comp,
 * softmax_xent_bwd.comp) and accuracy counting (accuracy.comp) on the Vulkan backend.
 * Semantics: op_list.h and src/backends/cpu/loss.c. The counters (loss_sum, correct)
 * accumulate in device memory, so nothing is read back during a step.
 */
#include <string.h>

#include "backends/vulkan/vk_internal.h"

/* logits, labels, probs, loss_sum (accumulated) */
dbk_status dbk_vk_record_softmax_xent_fwd(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    dbk_vk_state *vk = dbk_vk(be);
    const uint32_t N = (uint32_t)op->src[0].shape[0], K = (uint32_t)op->src[0].shape[1];
    dbk_vk_dispatch d = {.shader = "softmax_xent_fwd", .nspec = 1, .spec = {vk->wg}, .nbind = 4};
    uint32_t rem[4];
    DBK_TRY(dbk_vk_window(vk, &op->src[0], 0, -1, false, &d.bind[0], &rem[0]));
    DBK_TRY(dbk_vk_window(vk, &op->src[1], 0, -1, false, &d.bind[1], &rem[1]));
    DBK_TRY(dbk_vk_window(vk, &op->dst[0], 0, -1, true, &d.bind[2], &rem[2]));
    DBK_TRY(dbk_vk_window(vk, &op->dst[1], 0, -1, true, &d.bind[3], &rem[3]));
    const uint32_t pc[7] = {N, K, rem[0], rem[1], rem[2], rem[3], dbk_vk_f32_bits(op->p.xent.label_smoothing)};
    memcpy(d.push, pc, sizeof pc);
    d.groups[0] = 1;
    return dbk_vk_emit(be, rec, &d);
}

/* probs, labels, dlogits */
dbk_status dbk_vk_record_softmax_xent_bwd(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    dbk_vk_state *vk = dbk_vk(be);
    const uint32_t N = (uint32_t)op->src[0].shape[0], K = (uint32_t)op->src[0].shape[1];
    if ((int64_t)N * K == 0) return DBK_OK;
    dbk_vk_dispatch d = {.shader = "softmax_xent_bwd", .nspec = 1, .spec = {vk->wg}, .nbind = 3};
    uint32_t rem[3];
    DBK_TRY(dbk_vk_window(vk, &op->src[0], 0, -1, false, &d.bind[0], &rem[0]));
    DBK_TRY(dbk_vk_window(vk, &op->src[1], 0, -1, false, &d.bind[1], &rem[1]));
    DBK_TRY(dbk_vk_window(vk, &op->dst[0], 0, -1, true, &d.bind[2], &rem[2]));
    const uint32_t pc[7] = {N, K, rem[0], rem[1], rem[2], dbk_vk_f32_bits(op->p.xent.label_smoothing),
                            dbk_vk_f32_bits(op->p.xent.grad_scale)};
    memcpy(d.push, pc, sizeof pc);
    d.groups[0] = dbk_vk_groups_1d(vk, (int64_t)N * K, vk->wg);
    return dbk_vk_emit(be, rec, &d);
}

/* logits, labels, correct (accumulated) */
dbk_status dbk_vk_record_accuracy(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    dbk_vk_state *vk = dbk_vk(be);
    const uint32_t N = (uint32_t)op->src[0].shape[0], K = (uint32_t)op->src[0].shape[1];
    dbk_vk_dispatch d = {.shader = "accuracy", .nspec = 1, .spec = {vk->wg}, .nbind = 3};
    uint32_t rem[3];
    DBK_TRY(dbk_vk_window(vk, &op->src[0], 0, -1, false, &d.bind[0], &rem[0]));
    DBK_TRY(dbk_vk_window(vk, &op->src[1], 0, -1, false, &d.bind[1], &rem[1]));
    DBK_TRY(dbk_vk_window(vk, &op->dst[0], 0, -1, true, &d.bind[2], &rem[2]));
    const uint32_t top = op->p.accuracy.k > 1 ? (uint32_t)op->p.accuracy.k : 1u;
    const uint32_t pc[6] = {N, K, rem[0], rem[1], rem[2], top};
    memcpy(d.push, pc, sizeof pc);
    d.groups[0] = 1;
    return dbk_vk_emit(be, rec, &d);
}
