/*
 * vk_ops_optim.c — the SGD momentum update (sgd_momentum_update.comp), AdamW
 * (adamw_update.comp), each with an optional sparse mask and skip flag, and the lookahead (EMA)
 * sync (lookahead.comp) on the Vulkan backend over flat parameter, gradient, momentum and EMA
 * buffers. Semantics: op_list.h and src/backends/cpu/optim.c. The learning rate and the
 * lookahead decay are read from device memory (the host writes them before each run). Buffers
 * larger than one binding are processed in chunks, one dispatch each.
 */
#include <string.h>

#include "backends/vulkan/vk_internal.h"

/* The optional skip flag (src3), or an unused placeholder binding when absent. */
static dbk_status skip_binding(const dbk_vk_state *vk, const dbk_op_desc *op, dbk_vk_bind *b, uint32_t *rem) {
    if (!op->src[3].ndim) {
        *b = dbk_vk_placeholder(&op->src[1]);
        *rem = 0;
        return DBK_OK;
    }
    return dbk_vk_window(vk, &op->src[3], 0, 1, false, b, rem);
}

dbk_status dbk_vk_record_sgd_momentum_update(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    dbk_vk_state *vk = dbk_vk(be);
    const bool masked = op->src[2].ndim != 0;
    const int64_t n = dbk_tensor_numel(&op->dst[0]);
    const int64_t step = dbk_vk_flat_chunk(vk);
    for (int64_t e0 = 0; e0 < n; e0 += step) {
        const int64_t cnt = n - e0 < step ? n - e0 : step;
        dbk_vk_dispatch d = {.shader = "sgd_momentum_update", .nspec = 1, .spec = {vk->wg}, .nbind = 6};
        uint32_t rem[6];
        /* grad, lr, params (in place), momentum (in place), mask (no mask: grad, unread), skip */
        DBK_TRY(dbk_vk_window(vk, &op->src[0], e0, cnt, false, &d.bind[0], &rem[0]));
        const int64_t nlr = dbk_tensor_numel(&op->src[1]); /* {lr} or {lr, momentum} */
        DBK_TRY(dbk_vk_window(vk, &op->src[1], 0, nlr, false, &d.bind[1], &rem[1]));
        DBK_TRY(dbk_vk_window(vk, &op->dst[0], e0, cnt, true, &d.bind[2], &rem[2]));
        DBK_TRY(dbk_vk_window(vk, &op->dst[1], e0, cnt, true, &d.bind[3], &rem[3]));
        DBK_TRY(dbk_vk_window(vk, masked ? &op->src[2] : &op->src[0], e0, cnt, false, &d.bind[4], &rem[4]));
        DBK_TRY(skip_binding(vk, op, &d.bind[5], &rem[5]));
        const uint32_t pc[13] = {(uint32_t)cnt, rem[0], rem[1], rem[2], rem[3], dbk_vk_f32_bits(op->p.sgd.momentum),
                                 dbk_vk_f32_bits(op->p.sgd.weight_decay), op->p.sgd.nesterov ? 1u : 0u, rem[4],
                                 masked ? 1u : 0u, nlr == 2 ? 1u : 0u, rem[5], op->src[3].ndim ? 1u : 0u};
        memcpy(d.push, pc, sizeof pc);
        d.groups[0] = dbk_vk_groups_1d(vk, cnt, vk->wg);
        DBK_TRY(dbk_vk_emit(be, rec, &d));
    }
    return DBK_OK;
}

dbk_status dbk_vk_record_adamw_update(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    dbk_vk_state *vk = dbk_vk(be);
    const bool masked = op->src[2].ndim != 0;
    const dbk_adamw_params *p = &op->p.adamw;
    const int64_t n = dbk_tensor_numel(&op->dst[0]);
    const int64_t step = dbk_vk_flat_chunk(vk);
    for (int64_t e0 = 0; e0 < n; e0 += step) {
        const int64_t cnt = n - e0 < step ? n - e0 : step;
        dbk_vk_dispatch d = {.shader = "adamw_update", .nspec = 1, .spec = {vk->wg}, .nbind = 7};
        uint32_t rem[7];
        /* grad, step values, params, exp_avg, exp_avg_sq (the last three in place), mask (no
         * mask: grad, unread), skip */
        DBK_TRY(dbk_vk_window(vk, &op->src[0], e0, cnt, false, &d.bind[0], &rem[0]));
        const int64_t nstep = dbk_tensor_numel(&op->src[1]); /* 3, or 4 with beta1 */
        DBK_TRY(dbk_vk_window(vk, &op->src[1], 0, nstep, false, &d.bind[1], &rem[1]));
        for (int i = 0; i < 3; i++) DBK_TRY(dbk_vk_window(vk, &op->dst[i], e0, cnt, true, &d.bind[2 + i], &rem[2 + i]));
        DBK_TRY(dbk_vk_window(vk, masked ? &op->src[2] : &op->src[0], e0, cnt, false, &d.bind[5], &rem[5]));
        DBK_TRY(skip_binding(vk, op, &d.bind[6], &rem[6]));
        const uint32_t pc[15] = {(uint32_t)cnt,          rem[0], rem[1], rem[2], rem[3], rem[4],
                                 dbk_vk_f32_bits(p->beta1), dbk_vk_f32_bits(p->beta2), dbk_vk_f32_bits(p->eps),
                                 dbk_vk_f32_bits(p->weight_decay), rem[5], masked ? 1u : 0u, nstep == 4 ? 1u : 0u,
                                 rem[6], op->src[3].ndim ? 1u : 0u};
        memcpy(d.push, pc, sizeof pc);
        d.groups[0] = dbk_vk_groups_1d(vk, cnt, vk->wg);
        DBK_TRY(dbk_vk_emit(be, rec, &d));
    }
    return DBK_OK;
}

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

dbk_status dbk_vk_record_lookahead(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    dbk_vk_state *vk = dbk_vk(be);
    const int64_t n = dbk_tensor_numel(&op->dst[0]);
    const int64_t step = dbk_vk_flat_chunk(vk);
    for (int64_t e0 = 0; e0 < n; e0 += step) {
        const int64_t cnt = n - e0 < step ? n - e0 : step;
        dbk_vk_dispatch d = {.shader = "lookahead", .nspec = 1, .spec = {vk->wg}, .nbind = 3};
        uint32_t rem[3];
        /* decay, ema (in place), params (in place) */
        DBK_TRY(dbk_vk_window(vk, &op->src[0], 0, 1, false, &d.bind[0], &rem[0]));
        DBK_TRY(dbk_vk_window(vk, &op->dst[0], e0, cnt, true, &d.bind[1], &rem[1]));
        DBK_TRY(dbk_vk_window(vk, &op->dst[1], e0, cnt, true, &d.bind[2], &rem[2]));
        const uint32_t pc[4] = {(uint32_t)cnt, rem[0], rem[1], rem[2]};
        memcpy(d.push, pc, sizeof pc);
        d.groups[0] = dbk_vk_groups_1d(vk, cnt, vk->wg);
        DBK_TRY(dbk_vk_emit(be, rec, &d));
    }
    return DBK_OK;
}
