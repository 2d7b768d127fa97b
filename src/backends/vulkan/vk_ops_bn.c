/*
 * vk_ops_bn.c — batch normalisation on the Vulkan backend (semantics: ops.h and
 * src/backends/cpu/bn.c).
 *   training forward  bn_stats (one work group per channel: mean, invstd, running stats),
 *                     then bn_apply (elementwise)
 *   inference forward bn_apply with the running statistics
 *   backward          bn_bwd_reduce (per channel: dbeta, dgamma), then bn_bwd_data
 * The second dispatch reads what the first wrote; the recorder's hazard tracking places
 * the barrier between them. Reductions sum in fp32 in a fixed order (per-invocation strided
 * partial sums, then a shared-memory tree), so results are deterministic.
 */
#include <string.h>

#include "backends/vulkan/vk_internal.h"

static uint32_t fbits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* Binds tensors[i] to binding i; write[i] marks outputs. */
static dbk_status bind_all(const dbk_vk_state *vk, dbk_vk_dispatch *d, const dbk_tensor *const *t, const bool *write,
                           int n, uint32_t *rem) {
    d->nbind = n;
    for (int i = 0; i < n; i++) DBK_TRY(dbk_vk_window(vk, t[i], 0, -1, write[i], &d->bind[i], &rem[i]));
    return DBK_OK;
}

dbk_status dbk_vk_op_bn(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    dbk_vk_state *vk = dbk_vk(be);
    const dbk_tensor *x = &op->src[0];
    const uint32_t N = (uint32_t)x->shape[0], C = (uint32_t)x->shape[1];
    const uint32_t HW = (uint32_t)(x->shape[2] * x->shape[3]);
    const uint32_t total = N * C * HW;
    if (C == 0) return DBK_OK;
    uint32_t rem[8];

    if (op->op == DBK_OP_BATCHNORM_BWD) {
        /* src0 x, src1 dy, src2 gamma, src3 mean, src4 invstd; dst0 dx, dst1 dgamma, dst2 dbeta */
        dbk_vk_dispatch r = {.shader = DBK_VK_SH_BN_BWD_REDUCE, .nspec = 1, .spec = {vk->wg}};
        const dbk_tensor *rt[6] = {&op->src[0], &op->src[1], &op->src[3], &op->src[4], &op->dst[1], &op->dst[2]};
        const bool rw[6] = {false, false, false, false, true, true};
        DBK_TRY(bind_all(vk, &r, rt, rw, 6, rem));
        const uint32_t rp[9] = {N, C, HW, rem[0], rem[1], rem[2], rem[3], rem[4], rem[5]};
        memcpy(r.push, rp, sizeof rp);
        r.groups[0] = C;
        DBK_TRY(dbk_vk_emit(be, rec, &r));
        if (total == 0) return DBK_OK;
        dbk_vk_dispatch a = {.shader = DBK_VK_SH_BN_BWD_DATA, .nspec = 1, .spec = {vk->wg}};
        const dbk_tensor *at[8] = {&op->src[0], &op->src[1], &op->src[2], &op->src[3],
                                   &op->src[4], &op->dst[1], &op->dst[2], &op->dst[0]};
        const bool aw[8] = {false, false, false, false, false, false, false, true};
        DBK_TRY(bind_all(vk, &a, at, aw, 8, rem));
        const uint32_t ap[11] = {N, C, HW, rem[0], rem[1], rem[2], rem[3], rem[4], rem[5], rem[6], rem[7]};
        memcpy(a.push, ap, sizeof ap);
        a.groups[0] = dbk_vk_groups_1d(vk, total, vk->wg);
        return dbk_vk_emit(be, rec, &a);
    }

    const bool train = op->op == DBK_OP_BATCHNORM_FWD_TRAIN;
    if (train) {
        if (total == 0) return DBK_OK;   /* no values: statistics undefined, leave everything */
        /* src0 x; dst1 mean, dst2 invstd, dst3 running_mean, dst4 running_var */
        dbk_vk_dispatch s = {.shader = DBK_VK_SH_BN_STATS, .nspec = 1, .spec = {vk->wg}};
        const dbk_tensor *st[5] = {&op->src[0], &op->dst[1], &op->dst[2], &op->dst[3], &op->dst[4]};
        const bool sw[5] = {false, true, true, true, true};
        DBK_TRY(bind_all(vk, &s, st, sw, 5, rem));
        const uint32_t sp[10] = {N, C, HW, rem[0], rem[1], rem[2], rem[3], rem[4], fbits(op->p.bn.eps),
                                 fbits(op->p.bn.momentum)};
        memcpy(s.push, sp, sizeof sp);
        s.groups[0] = C;
        DBK_TRY(dbk_vk_emit(be, rec, &s));
    }
    if (total == 0) return DBK_OK;
    /* bindings: x, gamma, beta, mean (batch or running), invstd or running var, y */
    dbk_vk_dispatch a = {.shader = DBK_VK_SH_BN_APPLY, .nspec = 1, .spec = {vk->wg}};
    const dbk_tensor *at[6] = {&op->src[0], &op->src[1], &op->src[2], train ? &op->dst[1] : &op->src[3],
                               train ? &op->dst[2] : &op->src[4], &op->dst[0]};
    const bool aw[6] = {false, false, false, false, false, true};
    DBK_TRY(bind_all(vk, &a, at, aw, 6, rem));
    const uint32_t ap[11] = {N, C, HW, train ? 0u : 1u, rem[0], rem[1], rem[2], rem[3], rem[4], rem[5],
                             fbits(op->p.bn.eps)};
    memcpy(a.push, ap, sizeof ap);
    a.groups[0] = dbk_vk_groups_1d(vk, total, vk->wg);
    return dbk_vk_emit(be, rec, &a);
}
