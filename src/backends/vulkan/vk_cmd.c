/*
 * vk_cmd.c — command recording and submission for the Vulkan backend, the layer the
 * recorders (vk_ops_*.c) write into: buffer windows, dispatches with hazard tracking, copies,
 * and the immediate command buffers.
 *
 * Recorders (dbk_vk_rec, see vk_internal.h for the barrier rule) write into either
 *  - the immediate command buffer: dbk_backend_run and small dbk_buffer_write append to it;
 *    it is submitted by the next sync, read, program run or large write (a ring of
 *    DBK_VK_IMM_RING command buffers with fences, so recording never waits for the GPU
 *    unless the ring is full), or
 *  - a program's command buffers (vk_record.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/vulkan/vk_internal.h"
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

int64_t dbk_vk_flat_chunk(const dbk_vk_state *vk) {
    int64_t c = (int64_t)((vk->max_range - vk->align) / 4) / 1024 * 1024;
    if (c > ((int64_t)1 << 30)) c = (int64_t)1 << 30;
    return c > 0 ? c : 1024;
}

const char *dbk_vk_f16_variant(const char *name, const dbk_op_desc *op, char buf[DBK_VK_SHADER_NAME]) {
    if (op->src[0].dtype != DBK_DTYPE_F16) return name;
    snprintf(buf, DBK_VK_SHADER_NAME, "%s_f16", name);
    return buf;
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

void dbk_vk_rec_barrier(dbk_vk_rec *rec) {
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
    if (need) dbk_vk_rec_barrier(rec);
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

void dbk_vk_rec_begin(dbk_vk_rec *rec, VkCommandBuffer cmd) {
    memset(rec, 0, sizeof *rec);
    rec->cmd = cmd;
    rec->barrier_next = true;   /* it may follow any earlier submission */
}

/* Makes device writes visible to host reads after the fence. */
void dbk_vk_rec_end(dbk_vk_rec *rec) {
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
    DBK_ASSERT(d->nbind == pp->nbind);
    int ndesc = 0;
    for (int i = 0; i < d->nbind; i++) ndesc += (pp->windowed >> i) & 1u ? DBK_VK_WINDOWS : 1;

    dbk_vk_range acc[DBK_VK_MAX_BINDINGS * DBK_VK_WINDOWS];
    bool wr[DBK_VK_MAX_BINDINGS * DBK_VK_WINDOWS];
    VkDescriptorBufferInfo info[DBK_VK_MAX_BINDINGS * DBK_VK_WINDOWS];
    int nacc = 0;
    for (int i = 0; i < ndesc; i++) {
        const dbk_vk_bind *b = &d->bind[i];
        info[i] = (VkDescriptorBufferInfo){.buffer = b->buf, .offset = b->offset, .range = b->range};
        if (b->unused) continue;
        /* a window repeating an earlier one of the same binding (dbk_vk_windows) moves nothing more */
        bool again = false;
        for (int j = 0; j < nacc && !again; j++) again = acc[j].buf == b->buf && acc[j].lo == b->offset && wr[j] == b->write;
        if (!again) rec->bytes += b->range;
        acc[nacc] = (dbk_vk_range){b->buf, b->offset, b->offset + b->range};
        wr[nacc++] = b->write;
    }
    track(rec, acc, wr, nacc);

    VkWriteDescriptorSet w[DBK_VK_MAX_BINDINGS];
    for (int i = 0, at = 0; i < d->nbind; i++) {
        const int cnt = (pp->windowed >> i) & 1u ? DBK_VK_WINDOWS : 1;
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
    rec->bytes += 2 * n;
    const VkBufferCopy region = {.srcOffset = soff, .dstOffset = doff, .size = n};
    vkCmdCopyBuffer(rec->cmd, src, dst, 1, &region);
}

void dbk_vk_emit_update(dbk_vk_rec *rec, VkBuffer dst, VkDeviceSize off, const void *src, VkDeviceSize n) {
    const dbk_vk_range acc = {dst, off, off + n};
    const bool wr = true;
    track(rec, &acc, &wr, 1);
    rec->bytes += n;
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

dbk_status dbk_vk_wait_fence(dbk_vk_state *vk, VkFence f, bool newest, const char *what) {
    const bool waits = vkGetFenceStatus(vk->dev, f) != VK_SUCCESS;   /* not yet signalled: the host blocks */
    const double t0 = dbk_time_now();
    DBK_VK_TRY(vkWaitForFences(vk->dev, 1, &f, VK_TRUE, UINT64_MAX), what);
    if (waits && newest) dbk_backend_tally_wait(vk->tally, dbk_time_now() - t0);
    else if (waits) dbk_backend_tally_throttle(vk->tally, dbk_time_now() - t0);
    DBK_VK_TRY(vkResetFences(vk->dev, 1, &f), "vkResetFences");
    return DBK_OK;
}

dbk_status dbk_vk_imm(dbk_backend *be, dbk_vk_rec **out) {
    dbk_vk_state *vk = dbk_vk(be);
    if (vk->imm_cur < 0) {
        const int slot = vk->imm_next;
        if (vk->imm_pending[slot]) {
            /* the oldest of the ring, newer ones queued after it: back-pressure */
            DBK_TRY(dbk_vk_wait_fence(vk, vk->imm_fence[slot], false, "vkWaitForFences (immediate command buffer)"));
            vk->imm_pending[slot] = false;
        }
        const VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                             .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
        DBK_VK_TRY(vkBeginCommandBuffer(vk->imm_cmd[slot], &bi), "vkBeginCommandBuffer");
        dbk_vk_rec_begin(&vk->imm, vk->imm_cmd[slot]);
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
    dbk_vk_rec_end(&vk->imm);
    DBK_VK_TRY(vkEndCommandBuffer(vk->imm_cmd[slot]), "vkEndCommandBuffer");
    const VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                             .commandBufferCount = 1,
                             .pCommandBuffers = &vk->imm_cmd[slot]};
    DBK_VK_TRY(vkQueueSubmit(vk->queue, 1, &si, vk->imm_fence[slot]), "vkQueueSubmit (ops)");
    vk->imm_pending[slot] = true;
    vk->tally->counts.launches += (uint64_t)vk->imm.dispatches;
    vk->tally->counts.device_bytes += vk->imm.bytes;
    return DBK_OK;
}

dbk_status dbk_vk_sync(dbk_backend *be) {
    dbk_vk_state *vk = dbk_vk(be);
    DBK_TRY(dbk_vk_flush(vk));
    const double t0 = dbk_time_now();
    DBK_VK_TRY(vkQueueWaitIdle(vk->queue), "vkQueueWaitIdle");
    dbk_backend_tally_wait(vk->tally, dbk_time_now() - t0);
    for (int i = 0; i < DBK_VK_IMM_RING; i++)
        if (vk->imm_pending[i]) {
            DBK_TRY(dbk_vk_wait_fence(vk, vk->imm_fence[i], true, "vkWaitForFences"));
            vk->imm_pending[i] = false;
        }
    return dbk_vk_check_validation(vk);
}
