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
 * (vulkan.conv.*, vulkan.gemm.*; vk_pipeline.c). f16 operands (mixed precision) run the
 * shaders' <name>_f16 variants (shaders/common/operand.glsl).
 *
 * 3x3 stride-1 pad-1 layers may run as Winograd F(2x2,3x3) instead, per the profile
 * (vk_ops_conv_winograd.c); its transformed planes share the split-K workspace.
 *
 * Binding limit: when x/y (forward) or dy/dx (backward data) exceed one storage-buffer
 * binding (maxStorageBufferRange), the batch is split into chunks that fit, one dispatch
 * each (images are independent). Backward filter reduces over the batch, so it binds x and
 * dy as arrays of windows instead (shaders/common/window.glsl).
 */
#include <stdio.h>
#include <string.h>

#include "backends/vulkan/vk_internal.h"

/* Shared memory of a tile: A (BK, BM) and B (BK, BN) floats (shaders/common/gemm_core.glsl). */
static uint32_t tile_smem(const dbk_vk_tiles *t) { return (t->bm + t->bn) * t->bk * 4; }

/* Specialization constants and grid of the GEMM-shaped shaders for an (m x n) output.
 * The profile's tile suits big layers; a narrow one (16 or 32 output channels in the quick
 * recipe's ResNet9, or the 27 columns of the first layer's filter gradient) would leave most
 * of it idle. So BM is chosen among the profile's halved, BN among the profile's halved or
 * doubled and n split evenly into 1..8 tiles (a 144-column filter gradient ran 1.5 GFLOP/s
 * in 64-wide tiles, 2.1 in one 144-wide), with at most the profile's invocations and a
 * multiple of one subgroup (8 on lavapipe, 32 or 64 on GPUs: no part-empty warp), by a cost
 * model: padded multiply-adds times (1 + 32 (1/BM + 1/BN)) (1 + 1/BK). The staging loads per
 * multiply-add cost as much as the multiply-adds at 64x64 on lavapipe, and each BK step pays
 * two barriers (test_vk --bench: a 16-row backward-data layer ran 14% faster at 16x128x32
 * than at 16x1024x4). BK is halved while the tile would overflow shared memory. */
void dbk_vk_tile_spec(const dbk_vk_state *vk, const dbk_vk_tiles *tiles, uint64_t m, uint64_t n, dbk_vk_dispatch *d) {
    const uint32_t smem = vk->props.limits.maxComputeSharedMemorySize;
    const uint32_t nt_max = (tiles->bm / tiles->tm) * (tiles->bn / tiles->tn);
    const uint32_t nt_min = nt_max < vk->subgroup ? nt_max : vk->subgroup;
    dbk_vk_tiles t = *tiles;
    double best = -1.0;
    for (uint32_t bm = tiles->bm; bm >= tiles->tm && bm % tiles->tm == 0; bm /= 2) {
        /* BN: the profile's times a power of two, or n split evenly into 1..8 tiles */
        uint32_t cand[13 + 8];
        int nc = 0;
        for (uint32_t bn = tiles->bn * 16; bn >= tiles->tn && nc < 13; bn /= 2) cand[nc++] = bn;
        for (uint64_t g = 1; g <= 8; g++) {
            const uint64_t bn = ((n + g - 1) / g + tiles->tn - 1) / tiles->tn * tiles->tn;
            if (bn <= tiles->bn * 16) cand[nc++] = (uint32_t)bn;
        }
        for (int c = 0; c < nc; c++) {
            const uint32_t bn = cand[c];
            if (bn % tiles->tn) continue;
            const uint32_t nt = (bm / tiles->tm) * (bn / tiles->tn);
            if (nt > nt_max || nt < nt_min || (nt % nt_min && nt != nt_max)) continue;
            if ((n + bn - 1) / bn > vk->props.limits.maxComputeWorkGroupCount[0] ||
                (m + bm - 1) / bm > vk->props.limits.maxComputeWorkGroupCount[1])
                continue;
            dbk_vk_tiles u = {bm, bn, tiles->bk, tiles->tm, tiles->tn};
            while (tile_smem(&u) > smem && u.bk % 2 == 0 && u.bk / 2 >= 4) u.bk /= 2;
            if (tile_smem(&u) > smem) continue;
            const double padded = (double)((m + bm - 1) / bm * bm) * (double)((n + bn - 1) / bn * bn);
            const double cost = padded * (1.0 + 32.0 * (1.0 / bm + 1.0 / bn)) * (1.0 + 1.0 / u.bk);
            if (best < 0 || cost < best) best = cost, t = u;
        }
        if (bm / 2 < tiles->tm) break;
    }
    d->nspec = 6;
    d->spec[0] = (t.bm / t.tm) * (t.bn / t.tn);
    d->spec[1] = t.bm;
    d->spec[2] = t.bn;
    d->spec[3] = t.bk;
    d->spec[4] = t.tm;
    d->spec[5] = t.tn;
    d->groups[0] = (uint32_t)((n + t.bn - 1) / t.bn);
    d->groups[1] = (uint32_t)((m + t.bm - 1) / t.bm);
    d->groups[2] = 1;
}

/* ---------------------------------------------------------------------------------- */
/* workspace: split-K partial sums, Winograd planes                                     */

/* Parts of the filter gradient's reduction (N*P*Q values) and the workspace they need. */
static uint32_t bwd_filter_splits(const dbk_op_desc *op) {
    const dbk_tensor *dy = &op->src[1];
    const uint64_t kd = (uint64_t)dy->shape[0] * (uint64_t)(dy->shape[2] * dy->shape[3]);
    return (uint32_t)(kd <= DBK_VK_KCHUNK ? 1 : (kd + DBK_VK_KCHUNK - 1) / DBK_VK_KCHUNK);
}

static size_t workspace_bytes(const dbk_backend *be, const dbk_op_desc *op) {
    const bool conv = op->op == DBK_OP_CONV2D_FWD || op->op == DBK_OP_CONV2D_BWD_DATA ||
                      op->op == DBK_OP_CONV2D_BWD_FILTER;
    if (conv && dbk_vk_conv_winograd_chosen(be, op)) return dbk_vk_conv_winograd_workspace_bytes(be, op);
    if (op->op != DBK_OP_CONV2D_BWD_FILTER) return 0;
    const uint32_t s = bwd_filter_splits(op);
    return s > 1 ? (size_t)s * dbk_tensor_nbytes(&op->dst[0]) : 0;
}

/* The workspace, at least nbytes (grown here only when prepare did not see the op). */
dbk_status dbk_vk_workspace(dbk_backend *be, size_t nbytes, dbk_buffer **out) {
    dbk_vk_state *vk = dbk_vk(be);
    if (!vk->ws || dbk_buffer_size(vk->ws) < nbytes) {
        if (vk->ws) {
            if (vk->nretired == (int)(sizeof vk->ws_retired / sizeof vk->ws_retired[0]))
                return dbk_set_error(DBK_ERR_UNSUPPORTED, "Vulkan: the convolution workspace grew too often");
            vk->ws_retired[vk->nretired++] = vk->ws;
            vk->ws = NULL;
        }
        DBK_TRY(dbk_buffer_create(be, nbytes, &vk->ws));
    }
    *out = vk->ws;
    return DBK_OK;
}

dbk_status dbk_vk_prepare(dbk_backend *be, const dbk_op_desc *op) {
    const size_t n = workspace_bytes(be, op);
    dbk_buffer *ws = NULL;
    return n ? dbk_vk_workspace(be, n, &ws) : DBK_OK;
}

void dbk_vk_workspace_destroy(dbk_backend *be) {
    dbk_vk_state *vk = dbk_vk(be);
    dbk_buffer_destroy(vk->ws);
    for (int i = 0; i < vk->nretired; i++) dbk_buffer_destroy(vk->ws_retired[i]);
    vk->ws = NULL;
    vk->nretired = 0;
}

/* ---------------------------------------------------------------------------------- */
/* dispatch                                                                             */

/* One conv dispatch over the given (possibly batch-sliced) tensors. */
static dbk_status conv_dispatch(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op, const dbk_tensor *s0,
                                const dbk_tensor *s1, const dbk_tensor *d0) {
    dbk_vk_state *vk = dbk_vk(be);
    const dbk_conv2d_params *cp = &op->p.conv;
    /* x (N,C,H,W), w (K,C,R,S), y (N,K,P,Q) of this batch slice, in whichever slots this op
     * keeps them */
    dbk_op_desc slice = *op;
    slice.src[0] = *s0;
    slice.src[1] = *s1;
    slice.dst[0] = *d0;
    const dbk_conv2d_geom g = dbk_conv2d_geom_of(&slice);
    const uint32_t N = (uint32_t)g.N, C = (uint32_t)g.C, H = (uint32_t)g.H, W = (uint32_t)g.W, K = (uint32_t)g.K,
                   R = (uint32_t)g.R, S = (uint32_t)g.S, P = (uint32_t)g.P, Q = (uint32_t)g.Q;
    uint64_t m = K, n = (uint64_t)C * R * S;   /* backward filter */
    if (op->op == DBK_OP_CONV2D_FWD) n = (uint64_t)N * P * Q;
    if (op->op == DBK_OP_CONV2D_BWD_DATA) {
        m = C;
        n = (uint64_t)N * H * W;
    }
    if (m == 0 || n == 0) return DBK_OK;
    dbk_vk_dispatch d = {0};
    char shader[DBK_VK_SHADER_NAME];
    d.shader = dbk_vk_f16_variant(dbk_op_name(op->op), op, shader);   /* shaders/conv2d_fwd.comp, ... */
    dbk_vk_tile_spec(vk, &vk->conv_tiles, m, n, &d);
    d.nbind = 3;
    uint32_t rem[4] = {0, 0, 0, 0}, step[2] = {0, 0}, splits = 1;
    dbk_tensor part = {0};
    if (op->op == DBK_OP_CONV2D_BWD_FILTER) {   /* x and dy windowed: the reduction spans the batch */
        d.nbind = 4;
        DBK_TRY(dbk_vk_windows(vk, s0, false, &d.bind[0], &step[0], &rem[0]));
        DBK_TRY(dbk_vk_windows(vk, s1, false, &d.bind[DBK_VK_WINDOWS], &step[1], &rem[1]));
        DBK_TRY(dbk_vk_window(vk, d0, 0, -1, true, &d.bind[2 * DBK_VK_WINDOWS], &rem[2]));
        splits = bwd_filter_splits(op);
        if (splits > 1) {
            dbk_buffer *ws = NULL;
            DBK_TRY(dbk_vk_workspace(be, workspace_bytes(be, op), &ws));
            part = dbk_tensor_make(ws, 0, DBK_DTYPE_F32, 2, splits, (int64_t)(m * n), 0, 0);
            DBK_TRY(dbk_vk_window(vk, &part, 0, -1, true, &d.bind[2 * DBK_VK_WINDOWS + 1], &rem[3]));
        } else {
            d.bind[2 * DBK_VK_WINDOWS + 1] = dbk_vk_placeholder(d0);
        }
    } else {
        DBK_TRY(dbk_vk_window(vk, s0, 0, -1, false, &d.bind[0], &rem[0]));
        DBK_TRY(dbk_vk_window(vk, s1, 0, -1, false, &d.bind[1], &rem[1]));
        DBK_TRY(dbk_vk_window(vk, d0, 0, -1, true, &d.bind[2], &rem[2]));
    }
    const uint32_t pc[21] = {N, C, H, W, K, R, S, P, Q, (uint32_t)cp->stride_h, (uint32_t)cp->stride_w,
                             (uint32_t)cp->pad_h, (uint32_t)cp->pad_w, rem[0], rem[1], rem[2], step[0], step[1],
                             DBK_VK_KCHUNK, splits, rem[3]};
    memcpy(d.push, pc, sizeof pc);
    d.groups[2] = splits;
    DBK_TRY(dbk_vk_emit(be, rec, &d));
    if (splits == 1) return DBK_OK;
    /* dw = sum of the parts, in order (the recorder places the barrier) */
    dbk_vk_dispatch r = {.shader = "splitk_reduce", .nspec = 1, .spec = {vk->wg}, .nbind = 2};
    uint32_t rr[2];
    DBK_TRY(dbk_vk_window(vk, &part, 0, -1, false, &r.bind[0], &rr[0]));
    DBK_TRY(dbk_vk_window(vk, d0, 0, -1, true, &r.bind[1], &rr[1]));
    const uint32_t rp[4] = {(uint32_t)(m * n), splits, rr[0], rr[1]};
    memcpy(r.push, rp, sizeof rp);
    r.groups[0] = dbk_vk_groups_1d(vk, (int64_t)(m * n), vk->wg);
    return dbk_vk_emit(be, rec, &r);
}

static dbk_status conv_op(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    dbk_vk_state *vk = dbk_vk(be);
    if (dbk_vk_conv_winograd_chosen(be, op)) return dbk_vk_record_conv2d_winograd(be, rec, op);
    const dbk_tensor *s0 = &op->src[0], *s1 = &op->src[1], *d0 = &op->dst[0];
    if (op->op == DBK_OP_CONV2D_BWD_FILTER) return conv_dispatch(be, rec, op, s0, s1, d0);
    /* forward: x, y; backward data: dy, dx — split the batch so both slices fit a binding */
    const dbk_tensor *big[2] = {s0, d0};
    const int64_t N = s0->shape[0], nb = dbk_vk_batch_chunk(vk, big, 2);
    if (nb >= N) return conv_dispatch(be, rec, op, s0, s1, d0);
    for (int64_t n0 = 0; n0 < N; n0 += nb) {
        const int64_t cnt = N - n0 < nb ? N - n0 : nb;
        const dbk_tensor a = dbk_vk_batch_slice(s0, n0, cnt), y = dbk_vk_batch_slice(d0, n0, cnt);
        DBK_TRY(conv_dispatch(be, rec, op, &a, s1, &y));
    }
    return DBK_OK;
}

dbk_status dbk_vk_record_conv2d_fwd(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    return conv_op(be, rec, op);
}

dbk_status dbk_vk_record_conv2d_bwd_data(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    return conv_op(be, rec, op);
}

dbk_status dbk_vk_record_conv2d_bwd_filter(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    return conv_op(be, rec, op);
}

dbk_status dbk_vk_record_gemm(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    dbk_vk_state *vk = dbk_vk(be);
    const dbk_gemm_params *p = &op->p.gemm;
    const dbk_tensor *a = &op->src[0], *b = &op->src[1], *c = &op->dst[0];
    const uint32_t M = (uint32_t)c->shape[0], N = (uint32_t)c->shape[1];
    const uint32_t K = (uint32_t)(p->trans_a ? a->shape[0] : a->shape[1]);
    if (M == 0 || N == 0) return DBK_OK;
    dbk_vk_dispatch d = {0};
    char shader[DBK_VK_SHADER_NAME];
    d.shader = dbk_vk_f16_variant("gemm_tiled", op, shader);
    dbk_vk_tile_spec(vk, &vk->gemm_tiles, M, N, &d);
    d.nbind = 3;
    uint32_t rem[3];
    DBK_TRY(dbk_vk_window(vk, a, 0, -1, false, &d.bind[0], &rem[0]));
    DBK_TRY(dbk_vk_window(vk, b, 0, -1, false, &d.bind[1], &rem[1]));
    DBK_TRY(dbk_vk_window(vk, c, 0, -1, true, &d.bind[2], &rem[2]));
    const uint32_t pc[10] = {M, N, K, p->trans_a, p->trans_b, dbk_vk_f32_bits(p->alpha), dbk_vk_f32_bits(p->beta), rem[0], rem[1], rem[2]};
    memcpy(d.push, pc, sizeof pc);
    return dbk_vk_emit(be, rec, &d);
}
