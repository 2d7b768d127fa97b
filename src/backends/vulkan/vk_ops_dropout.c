/*
 * vk_ops_dropout.c — inverted dropout, forward and backward (dropout.comp, the same shader on
 * dy), on the Vulkan backend. Semantics: op_list.h and src/backends/cpu/dropout.c. Tensors
 * larger than one binding are processed in chunks; each dispatch is told its first element,
 * so the mask is the one of the whole tensor.
 */
#include <string.h>

#include "backends/vulkan/vk_internal.h"

static dbk_status record_dropout(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    dbk_vk_state *vk = dbk_vk(be);
    const int64_t n = dbk_tensor_numel(&op->dst[0]);
    const int64_t step = dbk_vk_flat_chunk(vk);
    for (int64_t e0 = 0; e0 < n; e0 += step) {
        const int64_t cnt = n - e0 < step ? n - e0 : step;
        dbk_vk_dispatch d = {.shader = "dropout", .nspec = 1, .spec = {vk->wg}, .nbind = 3};
        uint32_t rem[3];
        /* x (or dy), state, y (or dx) */
        DBK_TRY(dbk_vk_window(vk, &op->src[0], e0, cnt, false, &d.bind[0], &rem[0]));
        DBK_TRY(dbk_vk_window(vk, &op->src[1], 0, 4, false, &d.bind[1], &rem[1]));
        DBK_TRY(dbk_vk_window(vk, &op->dst[0], e0, cnt, true, &d.bind[2], &rem[2]));
        const uint32_t pc[7] = {(uint32_t)cnt, (uint32_t)e0, rem[0], rem[1], rem[2], dbk_vk_f32_bits(op->p.dropout.p),
                                op->p.dropout.salt};
        memcpy(d.push, pc, sizeof pc);
        d.groups[0] = dbk_vk_groups_1d(vk, cnt, vk->wg);
        DBK_TRY(dbk_vk_emit(be, rec, &d));
    }
    return DBK_OK;
}

dbk_status dbk_vk_record_dropout_fwd(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    return record_dropout(be, rec, op);
}

dbk_status dbk_vk_record_dropout_bwd(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    return record_dropout(be, rec, op);
}
