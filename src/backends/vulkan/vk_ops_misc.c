/*
 * vk_ops_misc.c — max pool (pool_fwd/pool_bwd.comp), softmax cross-entropy and accuracy
 * (softmax_xent_fwd/bwd.comp, accuracy.comp) and batch augmentation (augment.comp) on the
 * Vulkan backend. Semantics: ops.h and src/backends/cpu/{pool,loss,augment}.c.
 *
 * Augment reads the resident dataset, which may exceed one storage-buffer binding (CIFAR-10
 * is 150 MB, lavapipe binds at most 128 MiB): the images are bound as DBK_VK_WINDOWS
 * consecutive windows of `step` bytes (a multiple of minStorageBufferOffsetAlignment), which
 * together cover the tensor; augment.comp picks the window of each byte. A dataset larger
 * than DBK_VK_WINDOWS windows is refused with the limit named.
 */
#include <string.h>

#include "backends/vulkan/vk_internal.h"

static uint32_t fbits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

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
    dbk_vk_dispatch d = {.shader = fwd ? "pool_fwd" : "pool_bwd", .nspec = 1, .spec = {vk->wg},
                         .nbind = 3};
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
    const uint32_t pc[12] = {planes, H, W, P, Q, (uint32_t)p->size_h, (uint32_t)p->size_w, (uint32_t)p->stride_h,
                             (uint32_t)p->stride_w, rem[0], rem[1], rem[2]};
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

static dbk_status loss_op(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    dbk_vk_state *vk = dbk_vk(be);
    const uint32_t N = (uint32_t)op->src[0].shape[0], K = (uint32_t)op->src[0].shape[1];
    dbk_vk_dispatch d = {.nspec = 1, .spec = {vk->wg}};
    uint32_t rem[4];
    DBK_TRY(dbk_vk_window(vk, &op->src[0], 0, -1, false, &d.bind[0], &rem[0]));
    DBK_TRY(dbk_vk_window(vk, &op->src[1], 0, -1, false, &d.bind[1], &rem[1]));
    if (op->op == DBK_OP_SOFTMAX_XENT_FWD) {
        /* logits, labels, probs, loss_sum (accumulated) */
        d.shader = "softmax_xent_fwd";
        d.nbind = 4;
        DBK_TRY(dbk_vk_window(vk, &op->dst[0], 0, -1, true, &d.bind[2], &rem[2]));
        DBK_TRY(dbk_vk_window(vk, &op->dst[1], 0, -1, true, &d.bind[3], &rem[3]));
        const uint32_t pc[7] = {N, K, rem[0], rem[1], rem[2], rem[3], fbits(op->p.xent.label_smoothing)};
        memcpy(d.push, pc, sizeof pc);
        d.groups[0] = 1;
    } else if (op->op == DBK_OP_SOFTMAX_XENT_BWD) {
        /* probs, labels, dlogits */
        if ((int64_t)N * K == 0) return DBK_OK;
        d.shader = "softmax_xent_bwd";
        d.nbind = 3;
        DBK_TRY(dbk_vk_window(vk, &op->dst[0], 0, -1, true, &d.bind[2], &rem[2]));
        const uint32_t pc[7] = {N, K, rem[0], rem[1], rem[2], fbits(op->p.xent.label_smoothing),
                                fbits(op->p.xent.grad_scale)};
        memcpy(d.push, pc, sizeof pc);
        d.groups[0] = dbk_vk_groups_1d(vk, (int64_t)N * K, vk->wg);
    } else {
        /* logits, labels, correct (accumulated) */
        d.shader = "accuracy";
        d.nbind = 3;
        DBK_TRY(dbk_vk_window(vk, &op->dst[0], 0, -1, true, &d.bind[2], &rem[2]));
        const uint32_t pc[5] = {N, K, rem[0], rem[1], rem[2]};
        memcpy(d.push, pc, sizeof pc);
        d.groups[0] = 1;
    }
    return dbk_vk_emit(be, rec, &d);
}

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
    const uint32_t pc[23] = {(uint32_t)N, (uint32_t)H, (uint32_t)W, (uint32_t)M, (uint32_t)L, has_idx ? 1u : 0u,
                             (uint32_t)p->pad, (uint32_t)p->cutout, p->train ? 1u : 0u, p->flip ? 1u : 0u,
                             step, r_img, r_lab, r_idx, r_state, r_x, r_y,
                             fbits(p->mean[0]), fbits(p->mean[1]), fbits(p->mean[2]), fbits(p->std[0]),
                             fbits(p->std[1]), fbits(p->std[2])};
    memcpy(d.push, pc, sizeof pc);
    d.groups[0] = dbk_vk_groups_1d(vk, N * 3 * H * W, vk->wg);
    return dbk_vk_emit(be, rec, &d);
}

dbk_status dbk_vk_record_maxpool_fwd(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    return pool_op(be, rec, op);
}

dbk_status dbk_vk_record_maxpool_bwd(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    return pool_op(be, rec, op);
}

dbk_status dbk_vk_record_softmax_xent_fwd(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    return loss_op(be, rec, op);
}

dbk_status dbk_vk_record_softmax_xent_bwd(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    return loss_op(be, rec, op);
}

dbk_status dbk_vk_record_accuracy(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    return loss_op(be, rec, op);
}
