/*
 * vk_ops_bias.c — a convolution's per-channel bias (bias_add.comp) and its gradient
 * (channel_sum.comp) on the Vulkan backend. Semantics: op_list.h and src/backends/cpu/bias.c.
 *
 * Both split the batch so that a slice of the (N,C,H,W) tensors fits one storage-buffer
 * binding (lavapipe: 128 MiB; airbench94's whitening output is 94 MB at batch 1024, a C = 512
 * 32x32 gradient at batch 512 is 1 GiB). channel_sum's first slice overwrites db and each
 * later one adds to it, in batch order: the recorder's hazard tracking puts a barrier between
 * the dispatches, so the sum's order is fixed and the result deterministic.
 */
#include <string.h>

#include "backends/vulkan/vk_internal.h"

dbk_status dbk_vk_record_bias_add(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    dbk_vk_state *vk = dbk_vk(be);
    const dbk_tensor *x = &op->src[0], *y = &op->dst[0];
    const int64_t N = x->shape[0];
    const uint32_t C = (uint32_t)x->shape[1], HW = (uint32_t)(x->shape[2] * x->shape[3]);
    if (dbk_tensor_numel(x) == 0) return DBK_OK;
    const dbk_tensor *big[2] = {x, y};
    const int64_t step = dbk_vk_batch_chunk(vk, big, 2);
    for (int64_t n0 = 0; n0 < N; n0 += step) {
        const int64_t nb = N - n0 < step ? N - n0 : step;
        const dbk_tensor xs = dbk_vk_batch_slice(x, n0, nb), ys = dbk_vk_batch_slice(y, n0, nb);
        /* x, b -> y */
        dbk_vk_dispatch d = {.shader = "bias_add", .nspec = 1, .spec = {vk->wg}, .nbind = 3};
        uint32_t rem[3];
        DBK_TRY(dbk_vk_window(vk, &xs, 0, -1, false, &d.bind[0], &rem[0]));
        DBK_TRY(dbk_vk_window(vk, &op->src[1], 0, -1, false, &d.bind[1], &rem[1]));
        DBK_TRY(dbk_vk_window(vk, &ys, 0, -1, true, &d.bind[2], &rem[2]));
        const uint32_t pc[6] = {(uint32_t)nb, C, HW, rem[0], rem[1], rem[2]};
        memcpy(d.push, pc, sizeof pc);
        d.groups[0] = dbk_vk_groups_1d(vk, (int64_t)nb * C * HW, vk->wg);
        DBK_TRY(dbk_vk_emit(be, rec, &d));
    }
    return DBK_OK;
}

dbk_status dbk_vk_record_channel_sum(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    dbk_vk_state *vk = dbk_vk(be);
    const dbk_tensor *dy = &op->src[0];
    const int64_t N = dy->shape[0];
    const uint32_t C = (uint32_t)dy->shape[1], HW = (uint32_t)(dy->shape[2] * dy->shape[3]);
    if (C == 0) return DBK_OK;
    const dbk_tensor *big[1] = {dy};
    const int64_t step = dbk_vk_batch_chunk(vk, big, 1);
    /* N == 0 still runs one dispatch over no values: db = 0, as on the CPU */
    for (int64_t n0 = 0; n0 == 0 || n0 < N; n0 += step) {
        const int64_t nb = N - n0 < step ? N - n0 : step;
        const dbk_tensor dys = dbk_vk_batch_slice(dy, n0, nb);
        /* dy -> db (read too when accumulating) */
        dbk_vk_dispatch d = {.shader = "channel_sum", .nspec = 1, .spec = {vk->wg}, .nbind = 2};
        uint32_t rem[2];
        DBK_TRY(dbk_vk_window(vk, &dys, 0, -1, false, &d.bind[0], &rem[0]));
        DBK_TRY(dbk_vk_window(vk, &op->dst[0], 0, -1, true, &d.bind[1], &rem[1]));
        const uint32_t pc[6] = {(uint32_t)nb, C, HW, rem[0], rem[1], n0 > 0 ? 1u : 0u};
        memcpy(d.push, pc, sizeof pc);
        d.groups[0] = C;
        DBK_TRY(dbk_vk_emit(be, rec, &d));
    }
    return DBK_OK;
}
