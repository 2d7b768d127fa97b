/*
 * vk_ops_conv.c — convolution (forward, backward data, backward filter) and GEMM on the
 * Vulkan backend: one dispatch each of our own tiled shaders (gemm_tiled.comp and the
 * implicit-GEMM conv2d_*.comp, shared loop in shaders/common/gemm_core.glsl).
 *
 * GEMM view of each op (letters as in ops.h):
 *   conv2d_fwd         y  (K, N*P*Q) = w (K, C*R*S)   . col (C*R*S, N*P*Q)
 *   conv2d_bwd_data    dx (C, N*H*W) = w^T (C, K*R*S) . g   (K*R*S, N*H*W)
 *   conv2d_bwd_filter  dw (K, C*R*S) = dy (K, N*P*Q)  . col^T (N*P*Q, C*R*S)
 * Tiles (BM, BN, BK, TM, TN) are specialization constants from the profile
 * (vulkan.conv.*, vulkan.gemm.*; vk_pipeline.c).
 *
 * Binding limit: when x/y (forward) or dy/dx (backward data) exceed one storage-buffer
 * binding (maxStorageBufferRange), the batch is split into chunks that fit, one dispatch
 * each (images are independent). Backward filter reduces over the batch and is refused with
 * the limit named instead (at ResNet9 batch 512 every tensor fits lavapipe's 128 MiB).
 */
#include <string.h>

#include "backends/vulkan/vk_internal.h"

/* Specialization constants and grid of the GEMM-shaped shaders for an (m x n) output. */
static void tile_spec(const dbk_vk_tiles *t, uint64_t m, uint64_t n, dbk_vk_dispatch *d) {
    d->nspec = 6;
    d->spec[0] = (t->bm / t->tm) * (t->bn / t->tn);
    d->groups[0] = (uint32_t)((n + t->bn - 1) / t->bn);
    d->groups[1] = (uint32_t)((m + t->bm - 1) / t->bm);
    d->groups[2] = 1;
    d->spec[1] = t->bm;
    d->spec[2] = t->bn;
    d->spec[3] = t->bk;
    d->spec[4] = t->tm;
    d->spec[5] = t->tn;
}

static uint32_t fbits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* A view of images [n0, n0 + nb) of an NCHW tensor. */
static dbk_tensor batch_slice(const dbk_tensor *t, int64_t n0, int64_t nb) {
    dbk_tensor s = *t;
    s.offset += (size_t)(n0 * (dbk_tensor_numel(t) / (t->shape[0] ? t->shape[0] : 1))) * dbk_dtype_size(t->dtype);
    s.shape[0] = nb;
    return s;
}

/* One conv dispatch over the given (possibly batch-sliced) tensors. */
static dbk_status conv_dispatch(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op, const dbk_tensor *s0,
                                const dbk_tensor *s1, const dbk_tensor *d0) {
    dbk_vk_state *vk = dbk_vk(be);
    const dbk_conv2d_params *cp = &op->p.conv;
    /* x (N,C,H,W), w (K,C,R,S), y (N,K,P,Q) in whichever slots this op keeps them */
    const dbk_tensor *x = op->op == DBK_OP_CONV2D_BWD_DATA ? d0 : s0;
    const dbk_tensor *w = op->op == DBK_OP_CONV2D_BWD_FILTER ? d0 : s1;
    const dbk_tensor *y = op->op == DBK_OP_CONV2D_FWD ? d0 : op->op == DBK_OP_CONV2D_BWD_DATA ? s0 : s1;
    const uint32_t N = (uint32_t)x->shape[0], C = (uint32_t)x->shape[1], H = (uint32_t)x->shape[2],
                   W = (uint32_t)x->shape[3], K = (uint32_t)w->shape[0], R = (uint32_t)w->shape[2],
                   S = (uint32_t)w->shape[3], P = (uint32_t)y->shape[2], Q = (uint32_t)y->shape[3];
    uint64_t m = K, n = (uint64_t)C * R * S;   /* backward filter */
    if (op->op == DBK_OP_CONV2D_FWD) n = (uint64_t)N * P * Q;
    if (op->op == DBK_OP_CONV2D_BWD_DATA) {
        m = C;
        n = (uint64_t)N * H * W;
    }
    if (m == 0 || n == 0) return DBK_OK;
    dbk_vk_dispatch d = {0};
    d.shader = op->op == DBK_OP_CONV2D_FWD ? DBK_VK_SH_CONV2D_FWD
             : op->op == DBK_OP_CONV2D_BWD_DATA ? DBK_VK_SH_CONV2D_BWD_DATA : DBK_VK_SH_CONV2D_BWD_FILTER;
    tile_spec(&vk->conv_tiles, m, n, &d);
    d.nbind = 3;
    uint32_t rem[3];
    DBK_TRY(dbk_vk_window(vk, s0, 0, -1, false, &d.bind[0], &rem[0]));
    DBK_TRY(dbk_vk_window(vk, s1, 0, -1, false, &d.bind[1], &rem[1]));
    DBK_TRY(dbk_vk_window(vk, d0, 0, -1, true, &d.bind[2], &rem[2]));
    const uint32_t pc[16] = {N, C, H, W, K, R, S, P, Q, (uint32_t)cp->stride_h, (uint32_t)cp->stride_w,
                             (uint32_t)cp->pad_h, (uint32_t)cp->pad_w, rem[0], rem[1], rem[2]};
    memcpy(d.push, pc, sizeof pc);
    return dbk_vk_emit(be, rec, &d);
}

dbk_status dbk_vk_op_conv(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    dbk_vk_state *vk = dbk_vk(be);
    const dbk_tensor *s0 = &op->src[0], *s1 = &op->src[1], *d0 = &op->dst[0];
    const dbk_tensor *big0 = s0, *big1 = d0;   /* forward: x, y; backward data: dy, dx */
    const VkDeviceSize limit = vk->max_range - vk->align;
    const bool fits = dbk_tensor_nbytes(big0) <= limit && dbk_tensor_nbytes(big1) <= limit;
    const int64_t N = big0->shape[0];
    if (fits || op->op == DBK_OP_CONV2D_BWD_FILTER || N <= 1) return conv_dispatch(be, rec, op, s0, s1, d0);

    const size_t per0 = dbk_tensor_nbytes(big0) / (size_t)N, per1 = dbk_tensor_nbytes(big1) / (size_t)N;
    const size_t per = per0 > per1 ? per0 : per1;
    int64_t nb = per ? (int64_t)(limit / per) : N;
    if (nb < 1) nb = 1;
    for (int64_t n0 = 0; n0 < N; n0 += nb) {
        const int64_t cnt = N - n0 < nb ? N - n0 : nb;
        const dbk_tensor a = batch_slice(s0, n0, cnt), y = batch_slice(d0, n0, cnt);
        DBK_TRY(conv_dispatch(be, rec, op, &a, s1, &y));
    }
    return DBK_OK;
}

dbk_status dbk_vk_op_gemm(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    dbk_vk_state *vk = dbk_vk(be);
    const dbk_gemm_params *p = &op->p.gemm;
    const dbk_tensor *a = &op->src[0], *b = &op->src[1], *c = &op->dst[0];
    const uint32_t M = (uint32_t)c->shape[0], N = (uint32_t)c->shape[1];
    const uint32_t K = (uint32_t)(p->trans_a ? a->shape[0] : a->shape[1]);
    if (M == 0 || N == 0) return DBK_OK;
    dbk_vk_dispatch d = {0};
    d.shader = DBK_VK_SH_GEMM_TILED;
    tile_spec(&vk->gemm_tiles, M, N, &d);
    d.nbind = 3;
    uint32_t rem[3];
    DBK_TRY(dbk_vk_window(vk, a, 0, -1, false, &d.bind[0], &rem[0]));
    DBK_TRY(dbk_vk_window(vk, b, 0, -1, false, &d.bind[1], &rem[1]));
    DBK_TRY(dbk_vk_window(vk, c, 0, -1, true, &d.bind[2], &rem[2]));
    const uint32_t pc[10] = {M, N, K, p->trans_a, p->trans_b, fbits(p->alpha), fbits(p->beta), rem[0], rem[1], rem[2]};
    memcpy(d.push, pc, sizeof pc);
    return dbk_vk_emit(be, rec, &d);
}
