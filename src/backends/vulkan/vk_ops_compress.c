/*
 * vk_ops_compress.c — the gradient-compression ops on the Vulkan backend: SPARSE_SELECT as
 * the chain of dispatches of sparse_select.comp (one pipeline per phase, the specialization
 * constant PHASE; the steps are described in cl/compress.cl), SPARSE_ADD (sparse_add.comp),
 * SPARSE_SCATTER (sparse_scatter.comp), SPARSE_GATHER (sparse_gather.comp), QUANT_ENCODE (quant_encode.comp, three phases likewise)
 * and QUANT_ADD (quant_add.comp).
 * Semantics: op_list.h and src/backends/cpu/compress.c. The recorder's hazard tracking puts a
 * barrier between the dispatches, which all write the work tensor. Every tensor is bound
 * whole (a gradient vector of up to 32M floats fits lavapipe's 128 MiB binding).
 */
#include <string.h>

#include "backends/vulkan/vk_internal.h"

enum { PHASE_INIT, PHASE_HIST, PHASE_PICK, PHASE_COUNT, PHASE_SCAN, PHASE_SCATTER };

static dbk_status select_phase(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op, uint32_t phase, int shift,
                               int64_t invocations) {
    dbk_vk_state *vk = dbk_vk(be);
    dbk_vk_dispatch d = {.shader = "sparse_select", .nspec = 2, .spec = {vk->wg, phase}, .nbind = 6};
    uint32_t rem[6];
    /* x, segments, chunks -> pairs, count, work */
    for (int i = 0; i < 3; i++) DBK_TRY(dbk_vk_window(vk, &op->src[i], 0, -1, false, &d.bind[i], &rem[i]));
    for (int i = 0; i < 3; i++) DBK_TRY(dbk_vk_window(vk, &op->dst[i], 0, -1, true, &d.bind[3 + i], &rem[3 + i]));
    uint32_t thr_bits;
    memcpy(&thr_bits, &op->p.select.threshold, sizeof thr_bits);
    const uint32_t pc[12] = {(uint32_t)op->src[1].shape[0], (uint32_t)op->src[2].shape[0], (uint32_t)shift,
                             op->p.select.topk ? 1u : 0u, thr_bits & 0x7fffffffu,
                             (uint32_t)(dbk_tensor_numel(&op->dst[0]) / 2), rem[0], rem[1], rem[2], rem[3], rem[4],
                             rem[5]};
    memcpy(d.push, pc, sizeof pc);
    d.groups[0] = dbk_vk_groups_1d(vk, invocations, vk->wg);
    return dbk_vk_emit(be, rec, &d);
}

dbk_status dbk_vk_record_sparse_select(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    const int64_t S = op->src[1].shape[0], C = op->src[2].shape[0];
    DBK_TRY(select_phase(be, rec, op, PHASE_INIT, 0, S));
    for (int shift = 24; op->p.select.topk && shift >= 0; shift -= 8) {
        DBK_TRY(select_phase(be, rec, op, PHASE_HIST, shift, C));
        DBK_TRY(select_phase(be, rec, op, PHASE_PICK, shift, S));
    }
    DBK_TRY(select_phase(be, rec, op, PHASE_COUNT, 0, C));
    DBK_TRY(select_phase(be, rec, op, PHASE_SCAN, 0, 1));
    return select_phase(be, rec, op, PHASE_SCATTER, 0, C);
}

dbk_status dbk_vk_record_sparse_add(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    dbk_vk_state *vk = dbk_vk(be);
    const int64_t k = dbk_tensor_numel(&op->src[0]) / 2;
    if (k == 0) return DBK_OK;
    dbk_vk_dispatch d = {.shader = "sparse_add", .nspec = 1, .spec = {vk->wg}, .nbind = 2};
    uint32_t rem[2];
    /* pairs -> acc */
    DBK_TRY(dbk_vk_window(vk, &op->src[0], 0, -1, false, &d.bind[0], &rem[0]));
    DBK_TRY(dbk_vk_window(vk, &op->dst[0], 0, -1, true, &d.bind[1], &rem[1]));
    const uint32_t pc[5] = {(uint32_t)k, (uint32_t)dbk_tensor_numel(&op->dst[0]), rem[0], rem[1],
                            dbk_vk_f32_bits(op->p.scale.alpha)};
    memcpy(d.push, pc, sizeof pc);
    d.groups[0] = dbk_vk_groups_1d(vk, k, vk->wg);
    return dbk_vk_emit(be, rec, &d);
}

dbk_status dbk_vk_record_sparse_scatter(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    dbk_vk_state *vk = dbk_vk(be);
    const int64_t k = dbk_tensor_numel(&op->src[0]) / 2;
    if (k == 0) return DBK_OK;
    dbk_vk_dispatch d = {.shader = "sparse_scatter", .nspec = 1, .spec = {vk->wg}, .nbind = 2};
    uint32_t rem[2];
    /* pairs -> y */
    DBK_TRY(dbk_vk_window(vk, &op->src[0], 0, -1, false, &d.bind[0], &rem[0]));
    DBK_TRY(dbk_vk_window(vk, &op->dst[0], 0, -1, true, &d.bind[1], &rem[1]));
    const uint32_t pc[6] = {(uint32_t)k, (uint32_t)dbk_tensor_numel(&op->dst[0]), rem[0], rem[1],
                            op->p.scatter.constant ? 1u : 0u, dbk_vk_f32_bits(op->p.scatter.value)};
    memcpy(d.push, pc, sizeof pc);
    d.groups[0] = dbk_vk_groups_1d(vk, k, vk->wg);
    return dbk_vk_emit(be, rec, &d);
}

dbk_status dbk_vk_record_sparse_gather(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    dbk_vk_state *vk = dbk_vk(be);
    const int64_t k = dbk_tensor_numel(&op->src[1]);
    if (k == 0) return DBK_OK;
    dbk_vk_dispatch d = {.shader = "sparse_gather", .nspec = 1, .spec = {vk->wg}, .nbind = 4};
    uint32_t rem[4];
    /* x, indices, scales -> pairs */
    for (int i = 0; i < 3; i++) DBK_TRY(dbk_vk_window(vk, &op->src[i], 0, -1, false, &d.bind[i], &rem[i]));
    DBK_TRY(dbk_vk_window(vk, &op->dst[0], 0, -1, true, &d.bind[3], &rem[3]));
    const uint32_t pc[6] = {(uint32_t)k, (uint32_t)op->src[2].shape[0], rem[0], rem[1], rem[2], rem[3]};
    memcpy(d.push, pc, sizeof pc);
    d.groups[0] = dbk_vk_groups_1d(vk, k, vk->wg);
    return dbk_vk_emit(be, rec, &d);
}

enum { QUANT_PARTIAL, QUANT_SCALE, QUANT_PACK };

static dbk_status quant_phase(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op, uint32_t phase,
                              int64_t invocations) {
    dbk_vk_state *vk = dbk_vk(be);
    dbk_vk_dispatch d = {.shader = "quant_encode", .nspec = 2, .spec = {vk->wg, phase}, .nbind = 5};
    uint32_t rem[5];
    /* x, segments, chunks -> payload, work */
    for (int i = 0; i < 3; i++) DBK_TRY(dbk_vk_window(vk, &op->src[i], 0, -1, false, &d.bind[i], &rem[i]));
    for (int i = 0; i < 2; i++) DBK_TRY(dbk_vk_window(vk, &op->dst[i], 0, -1, true, &d.bind[3 + i], &rem[3 + i]));
    const uint32_t pc[11] = {(uint32_t)op->src[1].shape[0], (uint32_t)op->src[2].shape[0],
                             (uint32_t)op->p.quant.levels, op->p.quant.seed_lo, op->p.quant.seed_hi,
                             (uint32_t)dbk_tensor_numel(&op->dst[0]), rem[0], rem[1], rem[2], rem[3], rem[4]};
    memcpy(d.push, pc, sizeof pc);
    d.groups[0] = dbk_vk_groups_1d(vk, invocations, vk->wg);
    return dbk_vk_emit(be, rec, &d);
}

dbk_status dbk_vk_record_quant_encode(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    const int64_t S = op->src[1].shape[0], C = op->src[2].shape[0];
    if (S == 0) return DBK_OK;
    DBK_TRY(quant_phase(be, rec, op, QUANT_PARTIAL, C));
    DBK_TRY(quant_phase(be, rec, op, QUANT_SCALE, S));
    return quant_phase(be, rec, op, QUANT_PACK, dbk_tensor_numel(&op->dst[0]));
}

dbk_status dbk_vk_record_quant_add(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    dbk_vk_state *vk = dbk_vk(be);
    const int64_t S = op->src[1].shape[0], n = dbk_tensor_numel(&op->dst[0]);
    if (S == 0 || n == 0) return DBK_OK;
    dbk_vk_dispatch d = {.shader = "quant_add", .nspec = 1, .spec = {vk->wg}, .nbind = 3};
    uint32_t rem[3];
    /* payload, segments -> acc */
    for (int i = 0; i < 2; i++) DBK_TRY(dbk_vk_window(vk, &op->src[i], 0, -1, false, &d.bind[i], &rem[i]));
    DBK_TRY(dbk_vk_window(vk, &op->dst[0], 0, -1, true, &d.bind[2], &rem[2]));
    const uint32_t pc[7] = {(uint32_t)S, (uint32_t)n, (uint32_t)op->p.quant.levels,
                            dbk_vk_f32_bits(op->p.quant.alpha), rem[0], rem[1], rem[2]};
    memcpy(d.push, pc, sizeof pc);
    d.groups[0] = dbk_vk_groups_1d(vk, n, vk->wg);
    return dbk_vk_emit(be, rec, &d);
}
