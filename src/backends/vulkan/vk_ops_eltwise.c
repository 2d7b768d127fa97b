/*
 * vk_ops_eltwise.c — elementwise ops on the Vulkan backend: ReLU forward/backward, add,
 * scale, fill (eltwise.comp), SGD momentum update (sgd.comp) and copy (vkCmdCopyBuffer).
 * Semantics: ops.h and src/backends/cpu/{act,optim}.c.
 *
 * Flat tensors larger than one storage-buffer binding are processed in chunks of at most
 * maxStorageBufferRange bytes, one dispatch per chunk (elements are independent), so a
 * 150 MB activation or parameter buffer works on lavapipe's 128 MiB bindings.
 */
#include <string.h>

#include "backends/vulkan/vk_internal.h"

static uint32_t fbits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* Elements per dispatch: whole windows below maxStorageBufferRange (and 32-bit indices). */
static int64_t chunk_elems(const dbk_vk_state *vk) {
    int64_t c = (int64_t)((vk->max_range - vk->align) / 4) / 1024 * 1024;
    if (c > ((int64_t)1 << 30)) c = (int64_t)1 << 30;
    return c > 0 ? c : 1024;
}

static dbk_status copy_op(dbk_vk_rec *rec, const dbk_op_desc *op) {
    const dbk_tensor *s = &op->src[0], *t = &op->dst[0];
    const VkDeviceSize n = dbk_tensor_nbytes(s);
    const VkBuffer sb = dbk_vk_buf(s->buf)->buf, db = dbk_vk_buf(t->buf)->buf;
    if (n == 0 || (sb == db && s->offset == t->offset)) return DBK_OK;
    if (sb == db && s->offset < t->offset + n && t->offset < s->offset + n)
        return dbk_set_error(DBK_ERR_UNSUPPORTED, "copy: partially overlapping source and destination (%zu and %zu, "
                             "%llu bytes) are not supported by the Vulkan backend",
                             s->offset, t->offset, (unsigned long long)n);
    dbk_vk_emit_copy(rec, sb, s->offset, db, t->offset, n);
    return DBK_OK;
}

dbk_status dbk_vk_op_eltwise(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    dbk_vk_state *vk = dbk_vk(be);
    if (op->op == DBK_OP_COPY) return copy_op(rec, op);
    const int64_t n = dbk_tensor_numel(&op->dst[0]);
    const int64_t step = chunk_elems(vk);
    for (int64_t e0 = 0; e0 < n; e0 += step) {
        const int64_t cnt = n - e0 < step ? n - e0 : step;
        dbk_vk_dispatch d = {.nspec = 1, .spec = {vk->wg}};
        uint32_t rem[4];
        if (op->op == DBK_OP_SGD_MOMENTUM_UPDATE) {
            /* grad, lr, params (in place), momentum (in place) */
            d.shader = DBK_VK_SH_SGD;
            d.nbind = 4;
            DBK_TRY(dbk_vk_window(vk, &op->src[0], e0, cnt, false, &d.bind[0], &rem[0]));
            DBK_TRY(dbk_vk_window(vk, &op->src[1], 0, 1, false, &d.bind[1], &rem[1]));
            DBK_TRY(dbk_vk_window(vk, &op->dst[0], e0, cnt, true, &d.bind[2], &rem[2]));
            DBK_TRY(dbk_vk_window(vk, &op->dst[1], e0, cnt, true, &d.bind[3], &rem[3]));
            const uint32_t pc[8] = {(uint32_t)cnt, rem[0], rem[1], rem[2], rem[3], fbits(op->p.sgd.momentum),
                                    fbits(op->p.sgd.weight_decay), op->p.sgd.nesterov ? 1u : 0u};
            memcpy(d.push, pc, sizeof pc);
        } else {
            /* eltwise.comp modes: 0 relu_fwd, 1 relu_bwd, 2 add, 3 scale, 4 fill */
            uint32_t mode = 4;
            float alpha = op->p.fill.value;
            const dbk_tensor *a = NULL, *b = NULL;
            if (op->op == DBK_OP_RELU_FWD) {
                mode = 0;
                a = &op->src[0];
            } else if (op->op == DBK_OP_RELU_BWD || op->op == DBK_OP_ADD) {
                mode = op->op == DBK_OP_RELU_BWD ? 1 : 2;
                a = &op->src[0];
                b = &op->src[1];
            } else if (op->op == DBK_OP_SCALE) {
                mode = 3;
                a = &op->src[0];
                alpha = op->p.scale.alpha;
            }
            d.shader = DBK_VK_SH_ELTWISE;
            d.nbind = 3;
            rem[0] = rem[1] = 0;
            DBK_TRY(dbk_vk_window(vk, &op->dst[0], e0, cnt, true, &d.bind[2], &rem[2]));
            if (a) DBK_TRY(dbk_vk_window(vk, a, e0, cnt, false, &d.bind[0], &rem[0]));
            else d.bind[0] = dbk_vk_placeholder(&op->dst[0]);
            if (b) DBK_TRY(dbk_vk_window(vk, b, e0, cnt, false, &d.bind[1], &rem[1]));
            else d.bind[1] = dbk_vk_placeholder(&op->dst[0]);
            const uint32_t pc[6] = {(uint32_t)cnt, mode, rem[0], rem[1], rem[2], fbits(alpha)};
            memcpy(d.push, pc, sizeof pc);
        }
        d.groups[0] = dbk_vk_groups_1d(vk, cnt, vk->wg);
        DBK_TRY(dbk_vk_emit(be, rec, &d));
    }
    return DBK_OK;
}
