/*
 * vk_ops_bn.c — batch normalisation on the Vulkan backend (semantics: ops.h and
 * src/backends/cpu/bn.c).
 *   training forward  bn_stats (one work group per channel: mean, invstd, running stats),
 *                     then bn_apply (elementwise)
 *   inference forward bn_apply with the running statistics
 *   backward          bn_bwd_reduce (per channel: dbeta, dgamma), then bn_bwd_data (their
 *                     _f16 variants when x is the f16 copy of mixed precision)
 *   fused with ReLU   the same shaders: bn_apply's mode 2 clamps y; the backward shaders'
 *                     relu flag masks dy with the fused forward's y (bound to dy, unread,
 *                     in the plain backward)
 *   fused with ReLU   bn_apply's mode 3 clamps y and adds skip (mode 4: adds, then clamps);
 *   and residual add  the backward shaders' relu = 2 recomputes the mask from x, gamma and
 *                     beta (beta bound to gamma, unread, in the other backwards)
 *   fused with ReLU   bn_stats, then bn_apply_pool (one 2x2 window per invocation, y
 *   and 2x2 max pool  pooled); the backward shaders' relu = 3 read the pooled dy and find
 *                     each window's winner again from x, gamma and beta
 * The second dispatch reads what the first wrote; the recorder's hazard tracking places
 * the barrier between them. Reductions sum in fp32 in a fixed order (per-invocation strided
 * partial sums, then a shared-memory tree), so results are deterministic.
 */
#include <string.h>

#include "backends/vulkan/vk_internal.h"

/* Binds tensors[i] to binding i; write[i] marks outputs. */
static dbk_status bind_all(const dbk_vk_state *vk, dbk_vk_dispatch *d, const dbk_tensor *const *t, const bool *write,
                           int n, uint32_t *rem) {
    d->nbind = n;
    for (int i = 0; i < n; i++) DBK_TRY(dbk_vk_window(vk, t[i], 0, -1, write[i], &d->bind[i], &rem[i]));
    return DBK_OK;
}

static bool is_bwd(const dbk_op_desc *op) {
    return op->op == DBK_OP_BATCHNORM_BWD || op->op == DBK_OP_BATCHNORM_RELU_BWD ||
           op->op == DBK_OP_BATCHNORM_RELU_ADD_BWD || op->op == DBK_OP_BATCHNORM_RELU_POOL_BWD;
}

/* The backward shaders' relu mode: 0 plain, 1 masked by y, 2 by the recomputed bn(x), 3 that
 * through the 2x2 max pool. */
static uint32_t relu_mode(const dbk_op_desc *op) {
    return op->op == DBK_OP_BATCHNORM_RELU_BWD        ? 1u
           : op->op == DBK_OP_BATCHNORM_RELU_ADD_BWD  ? 2u
           : op->op == DBK_OP_BATCHNORM_RELU_POOL_BWD ? 3u
                                                      : 0u;
}

/* The backward's beta binding: beta for relu modes 2 and 3, else gamma (unread). */
static const dbk_tensor *relu_beta(const dbk_op_desc *op) {
    return relu_mode(op) >= 2u ? &op->src[5] : &op->src[2];
}

/* relu mode 3: x's width, the pooled dy's height and width (0 otherwise, unread) */
static void pool_dims(const dbk_op_desc *op, uint32_t out[3]) {
    const bool pool = relu_mode(op) == 3u;
    out[0] = pool ? (uint32_t)op->src[0].shape[3] : 0u;
    out[1] = pool ? (uint32_t)op->src[1].shape[2] : 0u;
    out[2] = pool ? (uint32_t)op->src[1].shape[3] : 0u;
}

/* The forward's skip binding: the residual for modes 3 and 4, else x (unread). */
static const dbk_tensor *skip_of(const dbk_op_desc *op) {
    const bool add = op->op == DBK_OP_BATCHNORM_RELU_ADD_FWD_TRAIN || op->op == DBK_OP_BATCHNORM_ADD_RELU_FWD_TRAIN;
    return add ? &op->src[3] : &op->src[0];
}

/* The backward's y binding: the fused forward's output, or dy (unread) without fusion. */
static const dbk_tensor *relu_y(const dbk_op_desc *op) {
    return op->op == DBK_OP_BATCHNORM_RELU_BWD ? &op->src[5] : &op->src[1];
}

/* bn_apply_pool over images [n0, n0 + nb): y pooled (DBK_OP_BATCHNORM_RELU_POOL_FWD_TRAIN) */
static dbk_status apply_pool(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op, int64_t n0, int64_t nb) {
    dbk_vk_state *vk = dbk_vk(be);
    const dbk_tensor *x = &op->src[0], *y = &op->dst[0];
    const dbk_tensor xs = dbk_vk_batch_slice(x, n0, nb), ys = dbk_vk_batch_slice(y, n0, nb);
    /* x, gamma, beta, mean, invstd -> y */
    dbk_vk_dispatch a = {.shader = "bn_apply_pool", .nspec = 1, .spec = {vk->wg}};
    const dbk_tensor *at[6] = {&xs, &op->src[1], &op->src[2], &op->dst[1], &op->dst[2], &ys};
    const bool aw[6] = {false, false, false, false, false, true};
    uint32_t rem[6];
    DBK_TRY(bind_all(vk, &a, at, aw, 6, rem));
    const uint32_t P = (uint32_t)y->shape[2], Q = (uint32_t)y->shape[3];
    const uint32_t ap[12] = {(uint32_t)nb, (uint32_t)x->shape[1], (uint32_t)(x->shape[2] * x->shape[3]),
                             (uint32_t)x->shape[3], P, Q, rem[0], rem[1], rem[2], rem[3], rem[4], rem[5]};
    memcpy(a.push, ap, sizeof ap);
    a.groups[0] = dbk_vk_groups_1d(vk, (uint32_t)nb * (uint32_t)x->shape[1] * P * Q, vk->wg);
    return dbk_vk_emit(be, rec, &a);
}

/* The elementwise pass of batch norm over images [n0, n0 + nb): bn_apply (mode 0 train,
 * 1 inference, 2 training with ReLU, 3 and the residual add, 4 the add, then ReLU) or
 * bn_bwd_data. m is the whole batch's values per channel. */
static dbk_status elementwise(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op, int64_t n0, int64_t nb,
                              uint32_t m) {
    dbk_vk_state *vk = dbk_vk(be);
    const dbk_tensor *x = &op->src[0];
    const uint32_t C = (uint32_t)x->shape[1], HW = (uint32_t)(x->shape[2] * x->shape[3]);
    const uint32_t total = (uint32_t)nb * C * HW;
    uint32_t rem[10];
    if (is_bwd(op)) {
        /* x, dy, gamma, mean, invstd, dgamma, dbeta -> dx; y, beta */
        const dbk_tensor xs = dbk_vk_batch_slice(&op->src[0], n0, nb), dys = dbk_vk_batch_slice(&op->src[1], n0, nb),
                         dxs = dbk_vk_batch_slice(&op->dst[0], n0, nb), ys = dbk_vk_batch_slice(relu_y(op), n0, nb);
        char variant[DBK_VK_SHADER_NAME];   /* bn_bwd_data_f16 for an f16 x */
        dbk_vk_dispatch a = {.shader = dbk_vk_f16_variant("bn_bwd_data", op, variant), .nspec = 1, .spec = {vk->wg}};
        const dbk_tensor *at[10] = {&xs,        &dys,       &op->src[2], &op->src[3], &op->src[4],
                                    &op->dst[1], &op->dst[2], &dxs,       &ys,         relu_beta(op)};
        const bool aw[10] = {false, false, false, false, false, false, false, true, false, false};
        DBK_TRY(bind_all(vk, &a, at, aw, 10, rem));
        uint32_t wpq[3];
        pool_dims(op, wpq);
        const uint32_t ap[18] = {(uint32_t)nb, C,      HW,     rem[0], rem[1], rem[2],        rem[3], rem[4], rem[5],
                                 rem[6],       rem[7], m,      rem[8], relu_mode(op), rem[9], wpq[0], wpq[1], wpq[2]};
        memcpy(a.push, ap, sizeof ap);
        a.groups[0] = dbk_vk_groups_1d(vk, total, vk->wg);
        return dbk_vk_emit(be, rec, &a);
    }
    if (op->op == DBK_OP_BATCHNORM_RELU_POOL_FWD_TRAIN) return apply_pool(be, rec, op, n0, nb);
    const bool train = op->op != DBK_OP_BATCHNORM_FWD_INFER;
    const dbk_tensor xs = dbk_vk_batch_slice(&op->src[0], n0, nb), ys = dbk_vk_batch_slice(&op->dst[0], n0, nb);
    const dbk_tensor ks = dbk_vk_batch_slice(skip_of(op), n0, nb);
    /* x, gamma, beta, mean (batch or running), invstd or running var -> y; skip */
    dbk_vk_dispatch a = {.shader = "bn_apply", .nspec = 1, .spec = {vk->wg}};
    const dbk_tensor *at[7] = {&xs, &op->src[1], &op->src[2], train ? &op->dst[1] : &op->src[3],
                               train ? &op->dst[2] : &op->src[4], &ys, &ks};
    const bool aw[7] = {false, false, false, false, false, true, false};
    DBK_TRY(bind_all(vk, &a, at, aw, 7, rem));
    const uint32_t mode = op->op == DBK_OP_BATCHNORM_ADD_RELU_FWD_TRAIN ? 4u
                          : op->op == DBK_OP_BATCHNORM_RELU_ADD_FWD_TRAIN ? 3u
                          : op->op == DBK_OP_BATCHNORM_RELU_FWD_TRAIN   ? 2u
                          : train                                       ? 0u
                                                                        : 1u;
    const uint32_t ap[12] = {(uint32_t)nb, C,      HW,     mode, rem[0], rem[1], rem[2], rem[3], rem[4], rem[5],
                             dbk_vk_f32_bits(op->p.bn.eps), rem[6]};
    memcpy(a.push, ap, sizeof ap);
    a.groups[0] = dbk_vk_groups_1d(vk, total, vk->wg);
    return dbk_vk_emit(be, rec, &a);
}

/* The family's recorder (op_list.h launch FAMILY): every batch-norm op. */
dbk_status dbk_vk_record_bn(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    dbk_vk_state *vk = dbk_vk(be);
    const dbk_tensor *x = &op->src[0];
    const uint32_t N = (uint32_t)x->shape[0], C = (uint32_t)x->shape[1];
    const uint32_t HW = (uint32_t)(x->shape[2] * x->shape[3]);
    if (C == 0) return DBK_OK;
    uint32_t rem[9], step[3];

    if (is_bwd(op)) {
        /* bindings: x, dy, y (windowed), mean, invstd, dgamma, dbeta, gamma, beta */
        char variant[DBK_VK_SHADER_NAME];   /* bn_bwd_reduce_f16 for an f16 x */
        dbk_vk_dispatch r = {.shader = dbk_vk_f16_variant("bn_bwd_reduce", op, variant), .nspec = 1,
                             .spec = {vk->wg}, .nbind = 9};
        DBK_TRY(dbk_vk_windows(vk, &op->src[0], false, &r.bind[0], &step[0], &rem[0]));
        DBK_TRY(dbk_vk_windows(vk, &op->src[1], false, &r.bind[DBK_VK_WINDOWS], &step[1], &rem[1]));
        DBK_TRY(dbk_vk_windows(vk, relu_y(op), false, &r.bind[2 * DBK_VK_WINDOWS], &step[2], &rem[2]));
        const dbk_tensor *rt[6] = {&op->src[3], &op->src[4], &op->dst[1], &op->dst[2], &op->src[2], relu_beta(op)};
        for (int i = 0; i < 6; i++)
            DBK_TRY(dbk_vk_window(vk, rt[i], 0, -1, i == 2 || i == 3, &r.bind[3 * DBK_VK_WINDOWS + i], &rem[3 + i]));
        uint32_t wpq[3];
        pool_dims(op, wpq);
        const uint32_t rp[19] = {N,       C,       HW,      rem[0],        rem[1], rem[2], rem[3],
                                 rem[4],  rem[5],  rem[6],  step[0],       step[1], step[2], relu_mode(op),
                                 rem[7],  rem[8],  wpq[0],  wpq[1],        wpq[2]};
        memcpy(r.push, rp, sizeof rp);
        r.groups[0] = C;
        DBK_TRY(dbk_vk_emit(be, rec, &r));
    } else if (op->op != DBK_OP_BATCHNORM_FWD_INFER) {
        if ((uint64_t)N * HW == 0) return DBK_OK;   /* no values: statistics undefined, leave everything */
        /* bindings: x (windowed), mean, invstd, running_mean, running_var */
        dbk_vk_dispatch s = {.shader = "bn_stats", .nspec = 1, .spec = {vk->wg}, .nbind = 5};
        DBK_TRY(dbk_vk_windows(vk, &op->src[0], false, &s.bind[0], &step[0], &rem[0]));
        for (int i = 1; i < 5; i++)
            DBK_TRY(dbk_vk_window(vk, &op->dst[i], 0, -1, true, &s.bind[DBK_VK_WINDOWS + i - 1], &rem[i]));
        const uint32_t sp[11] = {N, C, HW, rem[0], rem[1], rem[2], rem[3], rem[4], dbk_vk_f32_bits(op->p.bn.eps),
                                 dbk_vk_f32_bits(op->p.bn.momentum), step[0]};
        memcpy(s.push, sp, sizeof sp);
        s.groups[0] = C;
        DBK_TRY(dbk_vk_emit(be, rec, &s));
    }
    if ((uint64_t)N * C * HW == 0) return DBK_OK;
    /* the elementwise pass, the batch split so that x, y (dy, dx) slices fit one binding */
    const dbk_tensor *big[4] = {&op->src[0], is_bwd(op) ? &op->src[1] : &op->dst[0], &op->dst[0],
                                is_bwd(op) ? relu_y(op) : skip_of(op)};
    const int64_t nb = dbk_vk_batch_chunk(vk, big, 4);
    for (int64_t n0 = 0; n0 < N; n0 += nb)
        DBK_TRY(elementwise(be, rec, op, n0, (int64_t)N - n0 < nb ? (int64_t)N - n0 : nb, N * HW));
    return DBK_OK;
}
