/*
 * vk_record.c — the Vulkan backend's op dispatch (the recorder table generated from
 * op_list.h), immediate runs, and programs: record once, replay (DESIGN.md decision 4).
 * The upper layer: it calls the recorders (vk_ops_*.c), which emit into vk_cmd.c.
 *
 * A program's command buffers are recorded once by dbk_program_create and submitted again
 * on every run. Nothing is allocated or recorded per run, and a run waits for nothing: the
 * command buffer is recorded for simultaneous use, so step k+1 is submitted while step k still
 * runs (waiting for it there was a sync in every step: the device idled while the host
 * prepared the next one); its first command's barrier orders it after everything queued.
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

/* Every op's recorder, from op_list.h: dbk_vk_record_<name> (launch OWN), its family's
 * dbk_vk_record_<family> (FAMILY) or the generic elementwise one (EW); NULL where the where
 * column says Vulkan lacks the op. */
#define VK_ENTRY_(E, name, family, src, dst, params, check, fl, by, grad, launch, where) \
    [DBK_OP_##E] = DBK_OP_ON(VK, where,                                                        \
                             DBK_OP_LAUNCH(launch, dbk_vk_record_##name, dbk_vk_record_##family,     \
                                           dbk_vk_record_eltwise)),
static const dbk_vk_record_fn recorders[DBK_OP_COUNT] = {DBK_OP_LIST(VK_ENTRY_)};
#undef VK_ENTRY_

static dbk_status record_op(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    return recorders[op->op](be, rec, op);
}

bool dbk_vk_op_supported(const dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    return (unsigned)op->op < DBK_OP_COUNT && recorders[op->op] != NULL;
}

dbk_status dbk_vk_run_op(dbk_backend *be, const dbk_op_desc *op) {
    dbk_vk_rec *rec = NULL;
    DBK_TRY(dbk_vk_imm(be, &rec));
    return record_op(be, rec, op);
}

/* ---------------------------------------------------------------------------------- */
/* programs                                                                             */

/* A program's recording on this device (dbk_program's impl; OpenCL's is ocl_recording). */
typedef struct vk_recording {
    VkCommandBuffer cmd;         /* the ops, hazard barriers only */
    VkCommandBuffer timed;       /* barriers at op boundaries, a timestamp after each op */
    VkFence         fence;       /* of the timed run */
    bool            pending;     /* the timed run submitted, fence not yet waited for */
    bool            in_flight;   /* cmd submitted since the last release check (no fence) */
    VkQueryPool     queries;     /* count + 1 timestamps; VK_NULL_HANDLE without timestamps */
    uint64_t       *ticks;
    int             dispatches, barriers;
    uint64_t        bytes;       /* device_bytes of one run (backend.h) */
    int            *op_dispatches;   /* (op count): the dispatches of each op */
} vk_recording;

/* What one recording pass of dbk_program_record_each carries to its per-op step. */
typedef struct vk_record_ctx {
    dbk_vk_rec *rec;
    VkQueryPool qp;              /* the timed recording's timestamps, or VK_NULL_HANDLE */
    int        *op_dispatches;   /* (op count) or NULL */
} vk_record_ctx;

/* dbk_program_record_each's step: op i (the timed recording: after a barrier, then its
 * timestamp). */
static dbk_status record_program_op(dbk_backend *be, const dbk_op_desc *op, int i, void *ctx) {
    vk_record_ctx *r = ctx;
    if (r->qp) r->rec->barrier_next = true;
    const int before = r->rec->dispatches;
    dbk_status st = record_op(be, r->rec, op);
    if (r->op_dispatches) r->op_dispatches[i] = r->rec->dispatches - before;
    if (r->qp) vkCmdWriteTimestamp(r->rec->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, r->qp, (uint32_t)i + 1);
    return st;
}

/* op_dispatches (prog->count), when not NULL: each op's dispatches. */
static dbk_status record(dbk_backend *be, dbk_program *prog, VkCommandBuffer cmd, VkQueryPool qp, int *dispatches,
                         int *barriers, uint64_t *bytes, int *op_dispatches) {
    const VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                         .flags = qp ? 0 : VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT};
    DBK_VK_TRY(vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer (program)");
    dbk_vk_rec *rec = dbk_malloc(sizeof *rec);
    if (!rec) return DBK_ERR_OUT_OF_HOST_MEMORY;
    dbk_vk_rec_begin(rec, cmd);
    dbk_status st = DBK_OK;
    if (qp) {
        vkCmdResetQueryPool(cmd, qp, 0, (uint32_t)prog->count + 1);
        dbk_vk_rec_barrier(rec);
        vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, qp, 0);
    }
    vk_record_ctx each = {rec, qp, op_dispatches};
    st = dbk_program_record_each(be, prog, record_program_op, &each);
    dbk_vk_rec_end(rec);
    *dispatches = rec->dispatches;
    *barriers = rec->barriers;
    *bytes = rec->bytes;
    dbk_free(rec);
    VkResult r = vkEndCommandBuffer(cmd);
    if (st == DBK_OK && r != VK_SUCCESS) st = dbk_vk_fail(r, "vkEndCommandBuffer (program)");
    return st;
}

void dbk_vk_program_release(dbk_backend *be, dbk_program *prog) {
    dbk_vk_state *vk = dbk_vk(be);
    vk_recording *vp = prog->impl;
    if (!vp) return;
    if (vp->pending) vkWaitForFences(vk->dev, 1, &vp->fence, VK_TRUE, UINT64_MAX);
    if (vp->in_flight) vkQueueWaitIdle(vk->queue);   /* its runs may still execute it */
    if (vp->fence) vkDestroyFence(vk->dev, vp->fence, NULL);
    if (vp->queries) vkDestroyQueryPool(vk->dev, vp->queries, NULL);
    VkCommandBuffer cmds[2] = {vp->cmd, vp->timed};
    for (int i = 0; i < 2; i++)
        if (cmds[i]) vkFreeCommandBuffers(vk->dev, vk->pool, 1, &cmds[i]);
    dbk_free(vp->ticks);
    dbk_free(vp->op_dispatches);
    dbk_free(vp);
    prog->impl = NULL;
}

dbk_status dbk_vk_program_record(dbk_backend *be, dbk_program *prog) {
    dbk_vk_state *vk = dbk_vk(be);
    vk_recording *vp = dbk_calloc(1, sizeof *vp);
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
    uint64_t tbytes;
    vp->op_dispatches = dbk_calloc((size_t)prog->count + 1, sizeof *vp->op_dispatches);
    if (st == DBK_OK && !vp->op_dispatches) st = DBK_ERR_OUT_OF_HOST_MEMORY;
    if (st == DBK_OK)
        st = record(be, prog, vp->cmd, VK_NULL_HANDLE, &vp->dispatches, &vp->barriers, &vp->bytes, vp->op_dispatches);
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
        if (st == DBK_OK) st = record(be, prog, vp->timed, vp->queries, &td, &tb, &tbytes, NULL);
    }
    if (st != DBK_OK) {
        dbk_vk_program_release(be, prog);
        return st;
    }
    dbk_log(DBK_LOG_LEVEL_DEBUG, "Vulkan program: %d ops, %d dispatches, %d barriers", prog->count, vp->dispatches,
            vp->barriers);
    return DBK_OK;
}

void dbk_vk_program_op_launches(const dbk_backend *be, const dbk_program *prog, int *launches) {
    (void)be;
    const vk_recording *vp = prog->impl;
    for (int i = 0; i < prog->count; i++) launches[i] = vp->op_dispatches[i];
}

/* Submits cmd (the program or, with fence, its timed recording). */
static dbk_status submit(dbk_vk_state *vk, vk_recording *vp, VkCommandBuffer cmd, VkFence fence) {
    DBK_TRY(dbk_vk_flush(vk));   /* earlier immediate work (the step's scalars) goes first */
    const VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cmd};
    DBK_VK_TRY(vkQueueSubmit(vk->queue, 1, &si, fence), "vkQueueSubmit (program)");
    if (fence) vp->pending = true;
    else vp->in_flight = true;
    vk->tally->counts.launches += (uint64_t)vp->dispatches;   /* the timed recording has the same ones */
    vk->tally->counts.device_bytes += vp->bytes;
    return DBK_OK;
}

dbk_status dbk_vk_program_run(dbk_backend *be, dbk_program *prog) {
    return submit(dbk_vk(be), prog->impl, ((vk_recording *)prog->impl)->cmd, VK_NULL_HANDLE);
}

dbk_status dbk_vk_program_run_timed(dbk_backend *be, dbk_program *prog, double *op_seconds) {
    dbk_vk_state *vk = dbk_vk(be);
    vk_recording *vp = prog->impl;
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
    DBK_TRY(submit(vk, vp, vp->timed, vp->fence));
    DBK_TRY(dbk_vk_wait_fence(vk, vp->fence, true, "vkWaitForFences (timed program run)"));
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
