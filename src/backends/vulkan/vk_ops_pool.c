/*
 * vk_ops_pool.c — max pooling, forward and backward (maxpool_fwd.comp, maxpool_bwd.comp), on the
 * Vulkan backend, and the global average pool (global_avgpool_fwd.comp, global_avgpool_bwd.comp).
 * Semantics: op_list.h and src/backends/cpu/pool.c. Tensors larger than one storage-buffer
 * binding are processed in batch slices, one dispatch each.
 */
#include <string.h>

#include "backends/vulkan/vk_internal.h"

/* One pool dispatch over (possibly batch-sliced) tensors: forward x -> y, argmax;
 * backward dy, argmax -> dx. */
static dbk_status pool_dispatch(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op, const dbk_tensor *s0,
                                const dbk_tensor *s1, const dbk_tensor *d0, const dbk_tensor *d1) {
    dbk_vk_state *vk = dbk_vk(be);
    const bool fwd = op->op == DBK_OP_MAXPOOL_FWD;
    const dbk_tensor *x = fwd ? s0 : d0, *y = fwd ? d0 : s0;
    const uint32_t planes = (uint32_t)(x->shape[0] * x->shape[1]), H = (uint32_t)x->shape[2],
                   W = (uint32_t)x->shape[3], P = (uint32_t)y->shape[2], Q = (uint32_t)y->shape[3];
    const int64_t total = (int64_t)planes * (fwd ? P * Q : H * W);
    if (total == 0) return DBK_OK;
    /* shaders/maxpool_fwd.comp or maxpool_bwd.comp, named after the op */
    dbk_vk_dispatch d = {.shader = dbk_op_name(op->op), .nspec = 1, .spec = {vk->wg}, .nbind = 3};
    uint32_t rem[3];
    DBK_TRY(dbk_vk_window(vk, s0, 0, -1, false, &d.bind[0], &rem[0]));
    if (fwd) {
        DBK_TRY(dbk_vk_window(vk, d0, 0, -1, true, &d.bind[1], &rem[1]));
        DBK_TRY(dbk_vk_window(vk, d1, 0, -1, true, &d.bind[2], &rem[2]));
    } else {
        DBK_TRY(dbk_vk_window(vk, s1, 0, -1, false, &d.bind[1], &rem[1]));
        DBK_TRY(dbk_vk_window(vk, d0, 0, -1, true, &d.bind[2], &rem[2]));
    }
    const dbk_pool_params *p = &op->p.pool;
    const uint32_t pc[14] = {planes, H, W, P, Q, (uint32_t)p->size_h, (uint32_t)p->size_w, (uint32_t)p->stride_h,
                             (uint32_t)p->stride_w, (uint32_t)p->pad_h, (uint32_t)p->pad_w, rem[0], rem[1], rem[2]};
    memcpy(d.push, pc, sizeof pc);
    d.groups[0] = dbk_vk_groups_1d(vk, total, vk->wg);
    return dbk_vk_emit(be, rec, &d);
}

static dbk_status pool_op(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    /* Images are independent: split the batch so that every slice fits one binding. */
    const dbk_tensor *t[4] = {&op->src[0], &op->src[1], &op->dst[0], &op->dst[1]};
    const bool fwd = op->op == DBK_OP_MAXPOOL_FWD;
    const dbk_tensor *big[3] = {t[0], fwd ? t[2] : t[1], fwd ? t[3] : t[2]};
    const int64_t N = op->src[0].shape[0], nb = dbk_vk_batch_chunk(dbk_vk(be), big, 3);
    for (int64_t n0 = 0; n0 < N; n0 += nb) {
        const int64_t cnt = N - n0 < nb ? N - n0 : nb;
        dbk_tensor s[4];
        for (int i = 0; i < 4; i++) s[i] = t[i]->ndim ? dbk_vk_batch_slice(t[i], n0, cnt) : *t[i];
        DBK_TRY(pool_dispatch(be, rec, op, &s[0], &s[1], &s[2], &s[3]));
    }
    return DBK_OK;
}

dbk_status dbk_vk_record_maxpool_fwd(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    return pool_op(be, rec, op);
}

dbk_status dbk_vk_record_maxpool_bwd(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    return pool_op(be, rec, op);
}

/* Forward: x (N,C,H,W) -> y (N,C,1,1); backward: dy (N,C,1,1) -> dx (N,C,H,W); in batch
 * slices whose (N,C,H,W) side fits one binding. */
static dbk_status global_avgpool_op(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    dbk_vk_state *vk = dbk_vk(be);
    const bool fwd = op->op == DBK_OP_GLOBAL_AVGPOOL_FWD;
    const dbk_tensor *in = &op->src[0], *out = &op->dst[0], *plane_side = fwd ? in : out;
    const int64_t N = plane_side->shape[0];
    const uint32_t C = (uint32_t)plane_side->shape[1], HW = (uint32_t)(plane_side->shape[2] * plane_side->shape[3]);
    const dbk_tensor *big[1] = {plane_side};
    const int64_t step = dbk_vk_batch_chunk(vk, big, 1);
    for (int64_t n0 = 0; n0 < N; n0 += step) {
        const int64_t nb = N - n0 < step ? N - n0 : step;
        const dbk_tensor is = dbk_vk_batch_slice(in, n0, nb), os = dbk_vk_batch_slice(out, n0, nb);
        const uint32_t planes = (uint32_t)nb * C;
        if (planes == 0) continue;
        dbk_vk_dispatch d = {.shader = dbk_op_name(op->op), .nspec = 1, .spec = {vk->wg}, .nbind = 2};
        uint32_t rem[2];
        DBK_TRY(dbk_vk_window(vk, &is, 0, -1, false, &d.bind[0], &rem[0]));
        DBK_TRY(dbk_vk_window(vk, &os, 0, -1, true, &d.bind[1], &rem[1]));
        const uint32_t pc[4] = {fwd ? planes : planes * HW, HW, rem[0], rem[1]};
        memcpy(d.push, pc, sizeof pc);
        /* forward: one group per plane (grid-stride past the cap); backward: per element */
        d.groups[0] = fwd ? dbk_vk_groups_1d(vk, (int64_t)planes * vk->wg, vk->wg)
                          : dbk_vk_groups_1d(vk, (int64_t)planes * HW, vk->wg);
        DBK_TRY(dbk_vk_emit(be, rec, &d));
    }
    return DBK_OK;
}

dbk_status dbk_vk_record_global_avgpool_fwd(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    return global_avgpool_op(be, rec, op);
}

dbk_status dbk_vk_record_global_avgpool_bwd(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    return global_avgpool_op(be, rec, op);
}
