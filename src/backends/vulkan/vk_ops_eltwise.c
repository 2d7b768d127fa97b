/*
 * vk_ops_eltwise.c — elementwise ops on the Vulkan backend: the generic launcher of every
 * op declared launch EW in op_list.h (relu_fwd, relu_bwd, add, scale, fill, ...: the shader
 * shaders/<name>.comp) and copy (vkCmdCopyBuffer). Semantics: op_list.h and
 * src/backends/cpu/eltwise.c.
 *
 * Flat tensors larger than one storage-buffer binding are processed in chunks of at most
 * maxStorageBufferRange bytes, one dispatch per chunk (elements are independent), so a
 * 150 MB activation or parameter buffer works on lavapipe's 128 MiB bindings. A scalar slot
 * (one element, op_list.h) is bound whole in every chunk. An op whose src0 is f16 (relu_bwd's
 * saved output in mixed precision) runs the shader's _f16 variant (shaders/common/operand.glsl).
 */
#include <string.h>

#include "backends/vulkan/vk_internal.h"


dbk_status dbk_vk_record_copy(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    (void)be;
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

/* shaders/<name>.comp over numel(dst0) elements: src slots then dst slots at bindings 0, 1,
 * ..., push constants as shaders/common/eltwise_head.glsl lays them out. */
dbk_status dbk_vk_record_eltwise(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    enum { PUSH_OFFSETS = 1, PUSH_PARAMS = 9, MAX_PARAMS = 8, PUSH_FIRST = PUSH_PARAMS + MAX_PARAMS };
    dbk_vk_state *vk = dbk_vk(be);
    const dbk_op_info *in = dbk_op_get_info(op->op);
    const int nsrc = dbk_op_nsrc(op->op), ndst = dbk_op_ndst(op->op);
    /* the params' words, then the element counts of the "#" slots */
    uint32_t words[MAX_PARAMS];
    size_t nwords = in->param_bytes / sizeof(uint32_t);
    DBK_ASSERT(nsrc + ndst <= PUSH_PARAMS - PUSH_OFFSETS && in->param_bytes <= sizeof words &&
               in->param_bytes % sizeof(uint32_t) == 0);
    memcpy(words, &op->p, in->param_bytes);
    for (int b = 0; b < nsrc + ndst; b++)
        if (dbk_op_slot_marks(op->op, b >= nsrc, b < nsrc ? b : b - nsrc) & DBK_SLOT_COUNTED) {
            DBK_ASSERT(nwords < MAX_PARAMS);
            words[nwords++] = (uint32_t)dbk_tensor_numel(b < nsrc ? &op->src[b] : &op->dst[b - nsrc]);
        }
    const int64_t n = dbk_tensor_numel(&op->dst[0]);
    const int64_t step = dbk_vk_flat_chunk(vk);
    /* an f16 src0 (relu_bwd's saved output) runs the shader's _f16 variant; the casts are
     * shaders of their own, for their fixed dtypes */
    char variant[DBK_VK_SHADER_NAME];
    const bool cast = op->op == DBK_OP_CAST_F16_F32 || op->op == DBK_OP_CAST_F32_F16;
    const char *shader = cast ? in->name : dbk_vk_f16_variant(in->name, op, variant);
    for (int64_t e0 = 0; e0 < n; e0 += step) {
        const int64_t cnt = n - e0 < step ? n - e0 : step;
        dbk_vk_dispatch d = {.shader = shader, .nspec = 1, .spec = {vk->wg}, .nbind = nsrc + ndst};
        uint32_t *pc = d.push;
        pc[0] = (uint32_t)cnt;
        for (int b = 0; b < nsrc + ndst; b++) {
            const bool out = b >= nsrc;
            const dbk_tensor *t = out ? &op->dst[b - nsrc] : &op->src[b];
            if (!t->ndim) {   /* an absent optional slot */
                d.bind[b] = dbk_vk_placeholder(&op->dst[0]);
                pc[PUSH_OFFSETS + b] = DBK_EW_ABSENT;
                continue;
            }
            /* a slot of another element count than n (op_list.h) is bound whole in every chunk */
            const int64_t tn = dbk_tensor_numel(t);
            const bool whole = tn != n;
            DBK_TRY(dbk_vk_window(vk, t, whole ? 0 : e0, whole ? tn : cnt, out, &d.bind[b], &pc[PUSH_OFFSETS + b]));
        }
        memcpy(&pc[PUSH_PARAMS], words, nwords * sizeof *words);
        pc[PUSH_FIRST] = (uint32_t)e0;
        d.groups[0] = dbk_vk_groups_1d(vk, cnt, vk->wg);
        DBK_TRY(dbk_vk_emit(be, rec, &d));
    }
    return DBK_OK;
}
