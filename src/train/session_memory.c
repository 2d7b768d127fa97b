/*
 * session_memory.c — a session's device allocations and where its activations live
 * (see session_impl.h and nn/memplan.h).
 */
#include <stdio.h>

#include "core/alloc.h"
#include "core/log.h"
#include "train/session_impl.h"

dbk_status dbk_session_alloc(dbk_session *s, size_t nbytes, const char *what, dbk_buffer **out) {
    dbk_status st = dbk_buffer_create(s->be, nbytes ? nbytes : 4, out);
    if (st != DBK_OK) {
        char reason[700];
        snprintf(reason, sizeof reason, "%s", dbk_last_error());
        return dbk_set_error(st, "allocating %s (%.1f MiB, %.1f MiB allocated before it): %s", what,
                             (double)nbytes / 1048576.0, (double)s->device_bytes / 1048576.0, reason);
    }
    s->device_bytes += nbytes;
    return DBK_OK;
}

/* Activations scale with the batch: the hint names the largest batch whose activations
 * (total bytes at the configured batch) fit in room bytes and whose largest tensor fits in
 * max_tensor bytes (0: no limit). */
static dbk_status with_batch_hint(dbk_session *s, dbk_status st, double total, double room, double largest,
                                  double max_tensor) {
    const int batch = s->cfg.batch > s->cfg.eval_batch ? s->cfg.batch : s->cfg.eval_batch;
    if (total <= 0 || room <= 0) return st;
    double fit = room * 0.9 / (total / batch);
    if (max_tensor > 0 && largest > 0 && max_tensor / (largest / batch) < fit) fit = max_tensor / (largest / batch);
    if (fit < 1) return st;
    char reason[800];
    snprintf(reason, sizeof reason, "%s", dbk_last_error());
    return dbk_set_error(st, "%s; HINT: a batch of about %ld fits this device (--batch %ld)", reason, (long)fit, (long)fit);
}

/* Places the programs' activations by lifetime (nn/memplan.h) in buffers no larger than the
 * device's largest allocation, allocates those and points the programs at them. A plan that
 * cannot fit the device (one tensor above the largest allocation, or more than its memory in
 * all) is refused before anything is allocated: some drivers (PoCL) accept allocations beyond
 * their memory and fail, or swap, only when the step runs. */
dbk_status dbk_session_place_activations(dbk_session *s) {
    const dbk_device_info *info = dbk_backend_get_info(s->be);
    size_t max_chunk = s->cfg.max_activation_buffer ? s->cfg.max_activation_buffer : (size_t)info->max_alloc_bytes;
    if (info->max_alloc_bytes && max_chunk > info->max_alloc_bytes) max_chunk = (size_t)info->max_alloc_bytes;
    DBK_TRY(dbk_memplan_create(max_chunk, &s->memplan));
    dbk_session_program *progs[] = {&s->train, &s->train_late, &s->eval,         &s->tail,
                                    &s->tta,   &s->tta_tail,   &s->tta_select,   &s->tta_selected,
                                    &s->tta_selected_tail,     &s->tta_score,    &s->fisher};
    for (size_t i = 0; i < sizeof progs / sizeof progs[0]; i++)
        if (progs[i]->count) DBK_TRY(dbk_memplan_add_program(s->memplan, progs[i]->ops, progs[i]->count));
    const int n = dbk_memplan_chunk_count(s->memplan);
    const size_t total = dbk_memplan_total_bytes(s->memplan), largest = dbk_memplan_largest_block(s->memplan);
    const double mib = 1048576.0, room = (double)info->global_mem_bytes - (double)s->device_bytes;
    dbk_log(DBK_LOG_LEVEL_INFO, "plan: %zu parameters, %zu statistics, %.1f MiB activations in %d buffer%s (%.1f MiB without reuse)",
            dbk_graph_param_count(s->eval.graph), dbk_graph_state_count(s->eval.graph), (double)total / mib, n,
            n == 1 ? "" : "s", (double)dbk_memplan_unshared_bytes(s->memplan) / mib);
    if (max_chunk && largest > max_chunk) {
        dbk_status st = dbk_set_error(DBK_ERR_OUT_OF_DEVICE_MEMORY,
                                      "one activation takes %.1f MiB, more than the device's largest buffer (%.1f MiB)",
                                      (double)largest / mib, (double)max_chunk / mib);
        return with_batch_hint(s, st, (double)total, room, (double)largest, (double)max_chunk);
    }
    if (info->global_mem_bytes && (double)total > room) {
        dbk_status st = dbk_set_error(DBK_ERR_OUT_OF_DEVICE_MEMORY,
                                      "the activations need %.1f MiB, more than the %.1f MiB of device memory left (%.1f MiB "
                                      "of %.1f MiB taken by weights and data)",
                                      (double)total / mib, room > 0 ? room / mib : 0.0, (double)s->device_bytes / mib,
                                      (double)info->global_mem_bytes / mib);
        return with_batch_hint(s, st, (double)total, room, (double)largest, (double)max_chunk);
    }
    s->arena = dbk_calloc((size_t)(n ? n : 1), sizeof *s->arena);
    if (!s->arena) return DBK_ERR_OUT_OF_HOST_MEMORY;
    s->arena_chunks = n;
    for (int i = 0; i < n; i++) {
        char what[48];
        snprintf(what, sizeof what, "activations (buffer %d of %d)", i + 1, n);
        dbk_status st = dbk_session_alloc(s, dbk_memplan_chunk_bytes(s->memplan, i), what, &s->arena[i]);
        if (st != DBK_OK) return with_batch_hint(s, st, (double)total, room, (double)largest, (double)max_chunk);
    }
    dbk_memplan_bind(s->memplan, s->arena);
    return DBK_OK;
}
