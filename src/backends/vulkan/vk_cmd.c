/*
 * vk_cmd.c — command recording and submission for the Vulkan backend.
 *
 * Recorders (dbk_vk_rec, see vk_internal.h for the barrier rule) write into either
 *  - the immediate command buffer: dbk_backend_run and small dbk_buffer_write append to it;
 *    it is submitted by the next sync, read, program run or large write (a ring of
 *    DBK_VK_IMM_RING command buffers with fences, so recording never waits for the GPU
 *    unless the ring is full), or
 *  - a program's command buffers, recorded once by dbk_program_create and submitted again
 *    on every run (record once, replay: DESIGN.md decision 4). Nothing is allocated or
 *    recorded per run; a run waits only for the program's own previous submission (a
 *    command buffer may not be pending twice).
 *
 * Timing: a program also records a second command buffer with a timestamp before the first
 * op and after every op, and a barrier at every op boundary so the ops do not overlap;
 * dbk_program_run_timed submits it, waits and converts the ticks with timestampPeriod (masked
 * to timestampValidBits). A queue without timestamps falls back to the generic host timing
 * (each op submitted and waited for alone).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/vulkan/vk_internal.h"
#include "core/alloc.h"
#include "core/log.h"
#include "core/timer.h"

/* ---------------------------------------------------------------------------------- */
/* windows                                                                              */

dbk_status dbk_vk_window(const dbk_vk_state *vk, const dbk_tensor *t, int64_t first, int64_t count, bool write,
                         dbk_vk_bind *out, uint32_t *rem) {
    const dbk_vk_buffer *vb = dbk_vk_buf(t->buf);
    const size_t es = dbk_dtype_size(t->dtype);
    if (count < 0) count = dbk_tensor_numel(t) - first;
    const VkDeviceSize begin = t->offset + (VkDeviceSize)first * es;
    const VkDeviceSize base = begin / vk->align * vk->align;
    if (es > 1 && (begin - base) % es)
        return dbk_set_error(DBK_ERR_UNSUPPORTED, "Vulkan: a %s tensor at byte offset %zu is not %zu-byte aligned",
                             dbk_dtype_name(t->dtype), t->offset, es);
    VkDeviceSize range = (begin - base + (VkDeviceSize)count * es + 3) / 4 * 4;
    if (range == 0) range = 4;
    if (base + range > vb->size) range = vb->size - base;
    if (range > vk->max_range) {
        char desc[64];
        dbk_tensor_describe(t, desc, sizeof desc);
        return dbk_set_error(DBK_ERR_UNSUPPORTED,
                             "Vulkan: tensor %s needs a %llu-byte binding, over the device's maxStorageBufferRange "
                             "of %llu bytes (%s); use a smaller batch",
                             desc, (unsigned long long)range, (unsigned long long)vk->max_range, vk->props.deviceName);
    }
    *out = (dbk_vk_bind){.buf = vb->buf, .offset = base, .range = range, .write = write};
    *rem = (uint32_t)((begin - base) / es);
    return DBK_OK;
}

dbk_status dbk_vk_windows(const dbk_vk_state *vk, const dbk_tensor *t, bool write, dbk_vk_bind *out, uint32_t *step,
                          uint32_t *rem) {
    const dbk_vk_buffer *vb = dbk_vk_buf(t->buf);
    const size_t es = dbk_dtype_size(t->dtype);
    const VkDeviceSize base = t->offset / vk->align * vk->align;
    const VkDeviceSize span = t->offset - base + dbk_tensor_nbytes(t);
    if ((t->offset - base) % es)
        return dbk_set_error(DBK_ERR_UNSUPPORTED, "Vulkan: a %s tensor at byte offset %zu is not %zu-byte aligned",
                             dbk_dtype_name(t->dtype), t->offset, es);
    VkDeviceSize s = (span + DBK_VK_WINDOWS - 1) / DBK_VK_WINDOWS;
    s = (s + vk->align - 1) / vk->align * vk->align;
    if (s > vk->max_range || s > UINT32_MAX / 2) {
        char desc[64];
        dbk_tensor_describe(t, desc, sizeof desc);
        return dbk_set_error(DBK_ERR_UNSUPPORTED,
                             "Vulkan: tensor %s (%llu bytes) needs more than %d bindings of maxStorageBufferRange "
                             "(%llu bytes) on '%s'; use a smaller batch",
                             desc, (unsigned long long)span, DBK_VK_WINDOWS, (unsigned long long)vk->max_range,
                             vk->props.deviceName);
    }
    for (int k = 0; k < DBK_VK_WINDOWS; k++) {
        VkDeviceSize off = base + (VkDeviceSize)k * s;
        if (off >= vb->size) off = base;   /* an unused window: repeat the first */
        const VkDeviceSize range = vb->size - off < s ? vb->size - off : s;
        out[k] = (dbk_vk_bind){.buf = vb->buf, .offset = off, .range = range, .write = write};
    }
    *step = (uint32_t)s;
    *rem = (uint32_t)((t->offset - base) / es);
    return DBK_OK;
}

int64_t dbk_vk_batch_chunk(const dbk_vk_state *vk, const dbk_tensor *const *t, int n) {
    const VkDeviceSize limit = vk->max_range - vk->align;
    const int64_t N = t[0]->shape[0];
    size_t per = 0;
    for (int i = 0; i < n; i++) {
        const size_t b = t[i]->shape[0] ? dbk_tensor_nbytes(t[i]) / (size_t)t[i]->shape[0] : 0;
        if (b > per) per = b;
    }
    if (per == 0 || (VkDeviceSize)N * per <= limit) return N > 0 ? N : 1;
    const int64_t nb = (int64_t)(limit / per);
    return nb > 0 ? nb : 1;
}

dbk_vk_bind dbk_vk_placeholder(const dbk_tensor *any) {
    return (dbk_vk_bind){.buf = dbk_vk_buf(any->buf)->buf, .offset = 0, .range = 16, .unused = true};
}

uint32_t dbk_vk_groups_1d(const dbk_vk_state *vk, int64_t n, uint32_t wg) {
    int64_t g = (n + wg - 1) / wg;
    /* Shaders loop grid-stride; a few thousand groups keep every GPU busy. */
    const int64_t cap = vk->props.limits.maxComputeWorkGroupCount[0] < 8192 ? vk->props.limits.maxComputeWorkGroupCount[0]
                                                                              : 8192;
    if (g > cap) g = cap;
    return (uint32_t)(g < 1 ? 1 : g);
}

/* ---------------------------------------------------------------------------------- */
/* hazards and barriers                                                                 */

static bool overlaps(const dbk_vk_range *list, int n, VkBuffer buf, VkDeviceSize lo, VkDeviceSize hi) {
    for (int i = 0; i < n; i++)
        if (list[i].buf == buf && lo < list[i].hi && list[i].lo < hi) return true;
    return false;
}

static void barrier(dbk_vk_rec *rec) {
    const VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                         VK_ACCESS_TRANSFER_WRITE_BIT,
    };
    const VkPipelineStageFlags st = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    vkCmdPipelineBarrier(rec->cmd, st, st, 0, 1, &mb, 0, NULL, 0, NULL);
    rec->nwrites = rec->nreads = 0;
    rec->barrier_next = false;
    rec->barriers++;
}

/* Places a barrier when any access conflicts with what ran since the last one, then notes
 * the accesses. */
static void track(dbk_vk_rec *rec, const dbk_vk_range *acc, const bool *write, int n) {
    bool need = rec->barrier_next;
    for (int i = 0; i < n && !need; i++) {
        need = overlaps(rec->writes, rec->nwrites, acc[i].buf, acc[i].lo, acc[i].hi) ||
               (write[i] && overlaps(rec->reads, rec->nreads, acc[i].buf, acc[i].lo, acc[i].hi));
    }
    if (need) barrier(rec);
    for (int i = 0; i < n; i++) {
        dbk_vk_range *list = write[i] ? rec->writes : rec->reads;
        int *cnt = write[i] ? &rec->nwrites : &rec->nreads;
        if (*cnt == DBK_VK_MAX_HAZARDS) {
            rec->barrier_next = true;   /* lost track: the next command gets a barrier */
            continue;
        }
        list[(*cnt)++] = acc[i];
    }
}

static void rec_begin(dbk_vk_rec *rec, VkCommandBuffer cmd) {
    memset(rec, 0, sizeof *rec);
    rec->cmd = cmd;
    rec->barrier_next = true;   /* it may follow any earlier submission */
}

/* Makes device writes visible to host reads after the fence. */
static void rec_end_barrier(dbk_vk_rec *rec) {
    const VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                                .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                                .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
    vkCmdPipelineBarrier(rec->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
}

/* ---------------------------------------------------------------------------------- */
/* recording                                                                            */

dbk_status dbk_vk_emit(dbk_backend *be, dbk_vk_rec *rec, const dbk_vk_dispatch *d) {
    dbk_vk_state *vk = dbk_vk(be);
    const dbk_vk_pipeline *pp;
    DBK_TRY(dbk_vk_pipeline_get(vk, d->shader, d->spec, d->nspec, &pp));
    DBK_ASSERT(d->nbind == dbk_vk_shader_bindings(d->shader));
    int ndesc = 0;
    for (int i = 0; i < d->nbind; i++) ndesc += dbk_vk_shader_windowed(d->shader, i) ? DBK_VK_WINDOWS : 1;

    dbk_vk_range acc[DBK_VK_MAX_BINDINGS * DBK_VK_WINDOWS];
    bool wr[DBK_VK_MAX_BINDINGS * DBK_VK_WINDOWS];
    VkDescriptorBufferInfo info[DBK_VK_MAX_BINDINGS * DBK_VK_WINDOWS];
    int nacc = 0;
    for (int i = 0; i < ndesc; i++) {
        const dbk_vk_bind *b = &d->bind[i];
        info[i] = (VkDescriptorBufferInfo){.buffer = b->buf, .offset = b->offset, .range = b->range};
        if (b->unused) continue;
        acc[nacc] = (dbk_vk_range){b->buf, b->offset, b->offset + b->range};
        wr[nacc++] = b->write;
    }
    track(rec, acc, wr, nacc);

    VkWriteDescriptorSet w[DBK_VK_MAX_BINDINGS];
    for (int i = 0, at = 0; i < d->nbind; i++) {
        const int cnt = dbk_vk_shader_windowed(d->shader, i) ? DBK_VK_WINDOWS : 1;
        w[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                      .dstBinding = (uint32_t)i,
                                      .descriptorCount = (uint32_t)cnt,
                                      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                      .pBufferInfo = &info[at]};
        at += cnt;
    }
    vkCmdBindPipeline(rec->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pp->pipeline);
    vk->push_descriptor(rec->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pp->layout, 0, (uint32_t)d->nbind, w);
    vkCmdPushConstants(rec->cmd, pp->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, DBK_VK_PUSH_BYTES, d->push);
    const VkPhysicalDeviceLimits *l = &vk->props.limits;
    for (int k = 0; k < 3; k++)
        if (d->groups[k] > l->maxComputeWorkGroupCount[k])
            return dbk_set_error(DBK_ERR_UNSUPPORTED, "Vulkan: %u work groups in dimension %d exceed the device's %u",
                                 d->groups[k], k, l->maxComputeWorkGroupCount[k]);
    vkCmdDispatch(rec->cmd, d->groups[0], d->groups[1] ? d->groups[1] : 1, d->groups[2] ? d->groups[2] : 1);
    rec->dispatches++;
    return DBK_OK;
}

void dbk_vk_emit_copy(dbk_vk_rec *rec, VkBuffer src, VkDeviceSize soff, VkBuffer dst, VkDeviceSize doff,
                      VkDeviceSize n) {
    const dbk_vk_range acc[2] = {{src, soff, soff + n}, {dst, doff, doff + n}};
    const bool wr[2] = {false, true};
    track(rec, acc, wr, 2);
    const VkBufferCopy region = {.srcOffset = soff, .dstOffset = doff, .size = n};
    vkCmdCopyBuffer(rec->cmd, src, dst, 1, &region);
}

void dbk_vk_emit_update(dbk_vk_rec *rec, VkBuffer dst, VkDeviceSize off, const void *src, VkDeviceSize n) {
    const dbk_vk_range acc = {dst, off, off + n};
    const bool wr = true;
    track(rec, &acc, &wr, 1);
    vkCmdUpdateBuffer(rec->cmd, dst, off, n, src);
}

/* ---------------------------------------------------------------------------------- */
/* immediate submission                                                                 */

dbk_status dbk_vk_cmd_init(dbk_vk_state *vk) {
    const VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                         .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                         .queueFamilyIndex = vk->queue_family};
    DBK_VK_TRY(vkCreateCommandPool(vk->dev, &pci, NULL, &vk->pool), "vkCreateCommandPool");
    const VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                            .commandPool = vk->pool,
                                            .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                            .commandBufferCount = DBK_VK_IMM_RING};
    DBK_VK_TRY(vkAllocateCommandBuffers(vk->dev, &ai, vk->imm_cmd), "vkAllocateCommandBuffers");
    const VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    for (int i = 0; i < DBK_VK_IMM_RING; i++)
        DBK_VK_TRY(vkCreateFence(vk->dev, &fci, NULL, &vk->imm_fence[i]), "vkCreateFence");
    vk->imm_cur = -1;
    return DBK_OK;
}

void dbk_vk_cmd_destroy(dbk_vk_state *vk) {
    for (int i = 0; i < DBK_VK_IMM_RING; i++)
        if (vk->imm_fence[i]) vkDestroyFence(vk->dev, vk->imm_fence[i], NULL);
    if (vk->pool) vkDestroyCommandPool(vk->dev, vk->pool, NULL);
}

/* Waits for a fence that was submitted, then resets it for the next submission. */
static dbk_status wait_fence(dbk_vk_state *vk, VkFence f, const char *what) {
    DBK_VK_TRY(vkWaitForFences(vk->dev, 1, &f, VK_TRUE, UINT64_MAX), what);
    DBK_VK_TRY(vkResetFences(vk->dev, 1, &f), "vkResetFences");
    return DBK_OK;
}

dbk_status dbk_vk_imm(dbk_backend *be, dbk_vk_rec **out) {
    dbk_vk_state *vk = dbk_vk(be);
    if (vk->imm_cur < 0) {
        const int slot = vk->imm_next;
        if (vk->imm_pending[slot]) {
            DBK_TRY(wait_fence(vk, vk->imm_fence[slot], "vkWaitForFences (immediate command buffer)"));
            vk->imm_pending[slot] = false;
        }
        const VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                             .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
        DBK_VK_TRY(vkBeginCommandBuffer(vk->imm_cmd[slot], &bi), "vkBeginCommandBuffer");
        rec_begin(&vk->imm, vk->imm_cmd[slot]);
        vk->imm_cur = slot;
        vk->imm_next = (slot + 1) % DBK_VK_IMM_RING;
    }
    *out = &vk->imm;
    return DBK_OK;
}

dbk_status dbk_vk_flush(dbk_vk_state *vk) {
    if (vk->imm_cur < 0) return DBK_OK;
    const int slot = vk->imm_cur;
    vk->imm_cur = -1;
    rec_end_barrier(&vk->imm);
    DBK_VK_TRY(vkEndCommandBuffer(vk->imm_cmd[slot]), "vkEndCommandBuffer");
    const VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                             .commandBufferCount = 1,
                             .pCommandBuffers = &vk->imm_cmd[slot]};
    DBK_VK_TRY(vkQueueSubmit(vk->queue, 1, &si, vk->imm_fence[slot]), "vkQueueSubmit (ops)");
    vk->imm_pending[slot] = true;
    return DBK_OK;
}

dbk_status dbk_vk_sync(dbk_backend *be) {
    dbk_vk_state *vk = dbk_vk(be);
    DBK_TRY(dbk_vk_flush(vk));
    DBK_VK_TRY(vkQueueWaitIdle(vk->queue), "vkQueueWaitIdle");
    for (int i = 0; i < DBK_VK_IMM_RING; i++)
        if (vk->imm_pending[i]) {
            DBK_TRY(wait_fence(vk, vk->imm_fence[i], "vkWaitForFences"));
            vk->imm_pending[i] = false;
        }
    return dbk_vk_check_validation(vk);
}

dbk_status dbk_vk_record_op(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    switch (op->op) {
    case DBK_OP_CONV2D_FWD:
    case DBK_OP_CONV2D_BWD_DATA:
    case DBK_OP_CONV2D_BWD_FILTER:   return dbk_vk_op_conv(be, rec, op);
    case DBK_OP_GEMM:                return dbk_vk_op_gemm(be, rec, op);
    case DBK_OP_BATCHNORM_FWD_TRAIN:
    case DBK_OP_BATCHNORM_FWD_INFER:
    case DBK_OP_BATCHNORM_BWD:       return dbk_vk_op_bn(be, rec, op);
    case DBK_OP_RELU_FWD:
    case DBK_OP_RELU_BWD:
    case DBK_OP_ADD:
    case DBK_OP_SCALE:
    case DBK_OP_FILL:
    case DBK_OP_COPY:
    case DBK_OP_SGD_MOMENTUM_UPDATE: return dbk_vk_op_eltwise(be, rec, op);
    case DBK_OP_MAXPOOL_FWD:
    case DBK_OP_MAXPOOL_BWD:         return dbk_vk_op_pool(be, rec, op);
    case DBK_OP_SOFTMAX_XENT_FWD:
    case DBK_OP_SOFTMAX_XENT_BWD:
    case DBK_OP_ACCURACY:            return dbk_vk_op_loss(be, rec, op);
    case DBK_OP_AUGMENT:             return dbk_vk_op_augment(be, rec, op);
    case DBK_OP_COUNT:               break;
    }
    return dbk_set_error(DBK_ERR_UNSUPPORTED, "Vulkan: unknown op %d", (int)op->op);
}

dbk_status dbk_vk_run_op(dbk_backend *be, const dbk_op_desc *op) {
    dbk_vk_rec *rec = NULL;
    DBK_TRY(dbk_vk_imm(be, &rec));
    return dbk_vk_record_op(be, rec, op);
}

/* ---------------------------------------------------------------------------------- */
/* programs                                                                             */

typedef struct vk_program {
    VkCommandBuffer cmd;         /* the ops, hazard barriers only */
    VkCommandBuffer timed;       /* barriers at op boundaries, a timestamp after each op */
    VkFence         fence;
    bool            pending;     /* submitted, fence not yet waited for */
    VkQueryPool     queries;     /* count + 1 timestamps; VK_NULL_HANDLE without timestamps */
    uint64_t       *ticks;
    int             dispatches, barriers;
} vk_program;

static dbk_status record(dbk_backend *be, dbk_program *prog, VkCommandBuffer cmd, VkQueryPool qp, int *dispatches,
                         int *barriers) {
    const VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    DBK_VK_TRY(vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer (program)");
    dbk_vk_rec *rec = dbk_malloc(sizeof *rec);
    if (!rec) return DBK_ERR_OUT_OF_HOST_MEMORY;
    rec_begin(rec, cmd);
    dbk_status st = DBK_OK;
    if (qp) {
        vkCmdResetQueryPool(cmd, qp, 0, (uint32_t)prog->count + 1);
        barrier(rec);
        vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, qp, 0);
    }
    for (int i = 0; i < prog->count && st == DBK_OK; i++) {
        if (qp) rec->barrier_next = true;
        st = dbk_vk_record_op(be, rec, &prog->ops[i]);
        if (st != DBK_OK) {
            char reason[800];
            snprintf(reason, sizeof reason, "%s", dbk_last_error());
            st = dbk_set_error(st, "recording %s (%s): %s", prog->ops[i].label ? prog->ops[i].label : "op",
                               dbk_op_name(prog->ops[i].op), reason);
        }
        if (qp) vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, qp, (uint32_t)i + 1);
    }
    rec_end_barrier(rec);
    *dispatches = rec->dispatches;
    *barriers = rec->barriers;
    dbk_free(rec);
    VkResult r = vkEndCommandBuffer(cmd);
    if (st == DBK_OK && r != VK_SUCCESS) st = dbk_vk_fail(r, "vkEndCommandBuffer (program)");
    return st;
}

void dbk_vk_program_release(dbk_backend *be, dbk_program *prog) {
    dbk_vk_state *vk = dbk_vk(be);
    vk_program *vp = prog->impl;
    if (!vp) return;
    if (vp->pending) vkWaitForFences(vk->dev, 1, &vp->fence, VK_TRUE, UINT64_MAX);
    if (vp->fence) vkDestroyFence(vk->dev, vp->fence, NULL);
    if (vp->queries) vkDestroyQueryPool(vk->dev, vp->queries, NULL);
    VkCommandBuffer cmds[2] = {vp->cmd, vp->timed};
    for (int i = 0; i < 2; i++)
        if (cmds[i]) vkFreeCommandBuffers(vk->dev, vk->pool, 1, &cmds[i]);
    dbk_free(vp->ticks);
    dbk_free(vp);
    prog->impl = NULL;
}

dbk_status dbk_vk_program_record(dbk_backend *be, dbk_program *prog) {
    dbk_vk_state *vk = dbk_vk(be);
    vk_program *vp = dbk_calloc(1, sizeof *vp);
    if (!vp) return DBK_ERR_OUT_OF_HOST_MEMORY;
    prog->impl = vp;
    dbk_status st = DBK_OK;
    const VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                            .commandPool = vk->pool,
                                            .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                            .commandBufferCount = 1};
    const VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkResult r = vkAllocateCommandBuffers(vk->dev, &ai, &vp->cmd);
    if (r == VK_SUCCESS) r = vkCreateFence(vk->dev, &fci, NULL, &vp->fence);
    if (r != VK_SUCCESS) st = dbk_vk_fail(r, "creating a program's command buffer");
    int tb;
    if (st == DBK_OK) st = record(be, prog, vp->cmd, VK_NULL_HANDLE, &vp->dispatches, &vp->barriers);
    if (st == DBK_OK && vk->timestamp_bits) {
        const VkQueryPoolCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                           .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                           .queryCount = (uint32_t)prog->count + 1};
        r = vkCreateQueryPool(vk->dev, &qci, NULL, &vp->queries);
        if (r == VK_SUCCESS) r = vkAllocateCommandBuffers(vk->dev, &ai, &vp->timed);
        if (r != VK_SUCCESS) st = dbk_vk_fail(r, "creating a program's timestamp queries");
        vp->ticks = dbk_malloc(sizeof *vp->ticks * (size_t)(prog->count + 1));
        if (st == DBK_OK && !vp->ticks) st = DBK_ERR_OUT_OF_HOST_MEMORY;
        int td;
        if (st == DBK_OK) st = record(be, prog, vp->timed, vp->queries, &td, &tb);
    }
    if (st != DBK_OK) {
        dbk_vk_program_release(be, prog);
        return st;
    }
    dbk_log(DBK_LOG_LEVEL_DEBUG, "Vulkan program: %d ops, %d dispatches, %d barriers", prog->count, vp->dispatches,
            vp->barriers);
    return DBK_OK;
}

static dbk_status submit(dbk_vk_state *vk, vk_program *vp, VkCommandBuffer cmd) {
    DBK_TRY(dbk_vk_flush(vk));   /* earlier immediate work (the step's scalars) goes first */
    if (vp->pending) {
        DBK_TRY(wait_fence(vk, vp->fence, "vkWaitForFences (previous program run)"));
        vp->pending = false;
    }
    const VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cmd};
    DBK_VK_TRY(vkQueueSubmit(vk->queue, 1, &si, vp->fence), "vkQueueSubmit (program)");
    vp->pending = true;
    return DBK_OK;
}

dbk_status dbk_vk_program_run(dbk_backend *be, dbk_program *prog) {
    return submit(dbk_vk(be), prog->impl, ((vk_program *)prog->impl)->cmd);
}

dbk_status dbk_vk_program_run_timed(dbk_backend *be, dbk_program *prog, double *op_seconds) {
    dbk_vk_state *vk = dbk_vk(be);
    vk_program *vp = prog->impl;
    if (!vp->queries) {   /* no timestamps on this queue: host timing, one op at a time */
        DBK_TRY(dbk_vk_sync(be));
        for (int i = 0; i < prog->count; i++) {
            const double t0 = dbk_time_now();
            DBK_TRY(dbk_vk_run_op(be, &prog->ops[i]));
            DBK_TRY(dbk_vk_sync(be));
            op_seconds[i] += dbk_time_now() - t0;
        }
        return DBK_OK;
    }
    DBK_TRY(submit(vk, vp, vp->timed));
    DBK_TRY(wait_fence(vk, vp->fence, "vkWaitForFences (timed program run)"));
    vp->pending = false;
    DBK_VK_TRY(vkGetQueryPoolResults(vk->dev, vp->queries, 0, (uint32_t)prog->count + 1,
                                     sizeof *vp->ticks * (size_t)(prog->count + 1), vp->ticks, sizeof *vp->ticks,
                                     VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
               "vkGetQueryPoolResults");
    const uint64_t mask = vk->timestamp_bits >= 64 ? UINT64_MAX : ((uint64_t)1 << vk->timestamp_bits) - 1;
    const double period = (double)vk->props.limits.timestampPeriod * 1e-9;
    for (int i = 0; i < prog->count; i++)
        op_seconds[i] += (double)((vp->ticks[i + 1] - vp->ticks[i]) & mask) * period;
    return dbk_vk_check_validation(vk);
}
