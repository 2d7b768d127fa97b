/*
 * session_run.c — the device side of the epoch loop: shuffling, training steps, the epoch's
 * counters and evaluation (see session.h). A step writes one small block of per-step values
 * (session_step.c declares them) and enqueues the recorded program; nothing is read back
 * until the epoch ends.
 */
#include <math.h>
#include <string.h>

#include "core/rng.h"
#include "train/epoch_order.h"
#include "train/session_impl.h"

static int shards(const dbk_session *s) { return s->cfg.shard_count > 1 ? s->cfg.shard_count : 1; }

int dbk_session_passes(const dbk_session *s) {
    return s->cfg.recipe && s->cfg.recipe->passes_per_epoch > 1 ? s->cfg.recipe->passes_per_epoch : 1;
}

/* Full global batches only (drop_last): with shards, every rank takes its rows of each. */
int dbk_session_steps_per_epoch(const dbk_session *s) {
    return dbk_epoch_steps(s->cfg.train_count, dbk_session_passes(s), s->cfg.batch * shards(s));
}

/* The counters of a program's graph live after its host-written values. */
static dbk_status zero_counters(dbk_buffer *steps, const dbk_graph *g) {
    static const float zeros[64];
    const size_t off = dbk_graph_step_host_bytes(g), n = dbk_graph_step_bytes(g) - off;
    DBK_ASSERT(n <= sizeof zeros);
    return n ? dbk_buffer_write(steps, off, zeros, n) : DBK_OK;
}

static dbk_status read_counter(dbk_buffer *steps, const dbk_graph *g, const char *name, double *out) {
    const dbk_step_value_info *v = dbk_graph_step_value_find(g, name);
    DBK_ASSERT(v && !v->rule);
    float f;
    DBK_TRY(dbk_buffer_read(steps, v->offset, &f, sizeof f));
    *out = f;
    return DBK_OK;
}

static dbk_status read_counters(dbk_session *s, dbk_buffer *steps, const dbk_graph *g, dbk_epoch_counters *out) {
    DBK_TRY(dbk_backend_sync(s->be));
    DBK_TRY(read_counter(steps, g, "loss_sum", &out->loss_sum));
    return read_counter(steps, g, "correct", &out->correct);
}

dbk_status dbk_session_begin_epoch(dbk_session *s, int epoch, uint64_t seed) {
    if (!s->cfg.streamed) { /* streamed: the loader shuffles */
        DBK_ASSERT(s->perm);
        const int passes = dbk_session_passes(s);
        DBK_TRY(dbk_epoch_order(s->cfg.train_count, passes, s->cfg.batch * shards(s), seed, epoch, s->perm_scratch,
                                s->perm));
        DBK_TRY(dbk_buffer_write(s->indices, 0, s->perm, (size_t)s->cfg.train_count * (size_t)passes * 4));
    }
    /* The augmentation seed of the epoch; rows are told apart by their position. */
    s->epoch = epoch;
    s->epoch_steps = 0;
    s->epoch_seed = dbk_hash_u32((uint32_t)seed, (uint32_t)(seed >> 32), (uint32_t)epoch, 0xa5a5u);
    /* The run's seed: the same for every epoch of a run (the trainer passes one seed), for
     * draws that belong to the image rather than the epoch (the alternating flip's coin). */
    s->run_seed = dbk_hash_u32((uint32_t)seed, (uint32_t)(seed >> 32), 0u, 0x5eedu);
    return zero_counters(s->train_steps, s->train.graph);
}

/* Mixed precision: the loss scaler lives on the device (DBK_OP_GRAD_UNSCALE flags an inf/NaN
 * gradient, the optimizer ops skip on the flag, DBK_OP_AMP_UPDATE_SCALE moves S and clears
 * it), so a step reads nothing back. The host's copy is written before the next step when it
 * changed here (creation, resume) and read when an epoch ends. */
dbk_status dbk_session_put_scaler(dbk_session *s) {
    if (!s->amp_dirty || !s->amp_state) return DBK_OK;
    const dbk_loss_scaler *ls = &s->scaler;
    const float st[DBK_SESSION_AMP_STATE] = {ls->scale, 1.0f / ls->scale, 0.0f, (float)ls->clean_steps,
                                             (float)ls->skipped_steps, (float)ls->growths};
    DBK_TRY(dbk_buffer_write(s->amp_state, 0, st, sizeof st));
    s->amp_dirty = false;
    return DBK_OK;
}

dbk_status dbk_session_read_scaler(dbk_session *s) {
    if (!s->cfg.fp16 || !s->amp_state || s->amp_dirty) return DBK_OK;
    float st[DBK_SESSION_AMP_STATE];
    DBK_TRY(dbk_buffer_read(s->amp_state, 0, st, sizeof st));
    s->scaler.scale = st[0];
    s->scaler.clean_steps = (int)st[3];
    s->scaler.skipped_steps = (long)st[4];
    s->scaler.growths = (long)st[5];
    return DBK_OK;
}

const dbk_loss_scaler *dbk_session_loss_scaler(const dbk_session *s) { return s->cfg.fp16 ? &s->scaler : NULL; }

void dbk_session_restore_loss_scaler(dbk_session *s, const dbk_loss_scaler *saved) {
    const int interval = s->scaler.growth_interval;
    s->scaler = *saved;
    s->scaler.growth_interval = interval;
    s->amp_dirty = s->cfg.fp16;
}

static dbk_status enqueue_step(dbk_session *s, int step, float lr) {
    const int epoch0 = s->epoch > 0 ? s->epoch - 1 : 0, per_epoch = dbk_session_steps_per_epoch(s);
    const dbk_step_ctx ctx = {.epoch = epoch0, /* 0-based for the rules */
                              .step = step,
                              .steps_per_epoch = per_epoch,
                              .run_step = (long)epoch0 * per_epoch + step,
                              .run_steps = dbk_recipe_total_steps(s->cfg.recipe, per_epoch),
                              .recipe = s->cfg.recipe,
                              .first = s->cfg.streamed ? 0 : (step * shards(s) + s->cfg.shard_index) * s->cfg.batch,
                              .seed = s->epoch_seed,
                              .run_seed = s->run_seed,
                              .lr = lr};
    const dbk_graph *g = s->train.graph;
    dbk_graph_fill_step(g, &ctx, s->train_host);
    DBK_TRY(dbk_buffer_write(s->train_steps, 0, s->train_host, dbk_graph_step_host_bytes(g)));
    DBK_TRY(dbk_session_put_scaler(s));
    s->epoch_steps++;
    if (s->update) return dbk_session_run_exchanged(s);
    if (s->profiling) return dbk_session_run_timed(s); /* the full step's ops, as the profile's table */
    const bool late = s->train_late.recorded && ctx.run_step >= s->train_late_from;
    return dbk_program_run(late ? s->train_late.recorded : s->train.recorded);
}

dbk_status dbk_session_train_step(dbk_session *s, int step, float lr) {
    dbk_cost_mark m;
    dbk_session_cost_begin(s, &m);
    const dbk_status st = enqueue_step(s, step, lr);
    dbk_session_cost_end(s, &m, dbk_session_program_bytes(&s->train));
    s->cost_steps++;
    return st;
}

dbk_status dbk_session_end_epoch(dbk_session *s, dbk_epoch_counters *out) {
    out->images = (int64_t)s->epoch_steps * s->cfg.batch;
    DBK_TRY(read_counters(s, s->train_steps, s->train.graph, out));
    return dbk_session_read_scaler(s);
}

void dbk_session_set_eval_sync(dbk_session *s, bool on) { s->eval_sync = on; }

/* The evaluation loader's next batch, which must hold `rows` rows, onto the device. */
static dbk_status next_eval_batch(dbk_session *s, int rows) {
    dbk_loader_batch b;
    DBK_TRY(dbk_loader_next(s->eval_loader, &b));
    if (b.count != rows)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "evaluation loader gave a batch of %d images where the session "
                             "expects %d (its batch size or image count differs from the session's)", b.count, rows);
    return dbk_session_upload_eval_batch(s, b.images, b.labels, rows);
}

/* The whole test set through prog, and tail for the last partial batch. Every evaluation
 * program has the same per-step layout as the plain one, so they share its buffers. */
static dbk_status evaluate_with(dbk_session *s, const dbk_session_program *prog, const dbk_session_program *tail,
                                dbk_epoch_counters *out) {
    const dbk_graph *g = s->eval.graph;
    DBK_TRY(zero_counters(s->eval_steps, g));
    const int eb = s->cfg.eval_batch;
    const bool streamed = s->cfg.streamed_eval;
    if (streamed) {
        DBK_ASSERT(s->eval_loader);
        DBK_TRY(dbk_loader_begin_epoch(s->eval_loader, 1));
    }
    int32_t first = 0;
    for (int rows; first < s->cfg.test_count; first += rows) {
        rows = s->cfg.test_count - first < eb ? s->cfg.test_count - first : eb;
        if (streamed) DBK_TRY(next_eval_batch(s, rows));
        /* A streamed batch sits at row 0 of its own buffer; a resident one at row `first`. */
        const dbk_step_ctx ctx = {.epoch = s->epoch > 0 ? s->epoch - 1 : 0, .step = first / eb,
                                  .first = streamed ? 0 : first};
        dbk_graph_fill_step(g, &ctx, s->eval_host);
        DBK_TRY(dbk_buffer_write(s->eval_steps, 0, s->eval_host, dbk_graph_step_host_bytes(g)));
        const bool last = rows < eb;
        DBK_TRY(dbk_program_run(last ? tail->recorded : prog->recorded));
        if (s->eval_sync) DBK_TRY(dbk_backend_sync(s->be));
    }
    out->images = s->cfg.test_count;
    DBK_TRY(read_counters(s, s->eval_steps, g, out));
    out->correct5 = 0;
    return s->cfg.top5 ? read_counter(s->eval_steps, g, "correct5", &out->correct5) : DBK_OK;
}

dbk_status dbk_session_evaluate(dbk_session *s, dbk_epoch_counters *out) {
    return evaluate_with(s, &s->eval, &s->tail, out);
}

/* One run of a program with the evaluation layout, its batch's first row at `first`. */
static dbk_status run_eval_program(dbk_session *s, const dbk_session_program *p, int32_t first) {
    const dbk_step_ctx ctx = {.epoch = s->epoch > 0 ? s->epoch - 1 : 0, .first = first};
    const dbk_graph *g = s->eval.graph;
    dbk_graph_fill_step(g, &ctx, s->eval_host);
    DBK_TRY(dbk_buffer_write(s->eval_steps, 0, s->eval_host, dbk_graph_step_host_bytes(g)));
    return dbk_program_run(p->recorded);
}

/* cifar10-speedrun's tta: the plain pass writes every image's logits into the table; the
 * int(fraction * N) least confident rows are selected; their six views' mean logits replace
 * theirs; the table is scored once. Nothing is read back before the counters. */
static dbk_status evaluate_selective(dbk_session *s, dbk_epoch_counters *out) {
    dbk_epoch_counters plain;
    DBK_TRY(evaluate_with(s, &s->eval, &s->tail, &plain));
    DBK_TRY(run_eval_program(s, &s->tta_select, 0));
    const int eb = s->cfg.eval_batch;
    for (int32_t first = 0; first < s->tta_k; first += eb)
        DBK_TRY(run_eval_program(s, s->tta_k - first < eb ? &s->tta_selected_tail : &s->tta_selected, first));
    const dbk_graph *g = s->eval.graph;
    DBK_TRY(zero_counters(s->eval_steps, g));
    DBK_TRY(run_eval_program(s, &s->tta_score, 0));
    out->images = s->cfg.test_count;
    DBK_TRY(read_counters(s, s->eval_steps, g, out));
    out->correct5 = 0;
    return s->cfg.top5 ? read_counter(s->eval_steps, g, "correct5", &out->correct5) : DBK_OK;
}

dbk_status dbk_session_check_evaluation(const dbk_epoch_counters *c, const char *model) {
    const double loss = c->images > 0 ? c->loss_sum / (double)c->images : 0.0;
    if (isfinite(loss)) return DBK_OK;
    return dbk_set_error(DBK_ERR_DIVERGED, "%s: the mean test loss is %s: the model's outputs are not finite numbers "
                         "(NaN or infinite weights or batch-norm statistics), so it has no accuracy", model,
                         isnan(loss) ? "NaN" : "infinite");
}

dbk_status dbk_session_evaluate_final(dbk_session *s, dbk_epoch_counters *out) {
    if (s->tta_score.graph) return evaluate_selective(s, out);
    if (!s->tta.graph) return dbk_session_evaluate(s, out);
    return evaluate_with(s, &s->tta, &s->tta_tail, out);
}

bool dbk_session_has_lookahead(const dbk_session *s) { return s->lookahead.graph != NULL; }

dbk_status dbk_session_lookahead(dbk_session *s, long run_step, long run_steps) {
    DBK_ASSERT(s->lookahead.graph);
    const dbk_step_ctx ctx = {.run_step = run_step, .run_steps = run_steps};
    const dbk_graph *g = s->lookahead.graph;
    dbk_graph_fill_step(g, &ctx, s->lookahead_host);
    dbk_cost_mark m;
    dbk_session_cost_begin(s, &m);
    dbk_status st = dbk_buffer_write(s->lookahead_steps, 0, s->lookahead_host, dbk_graph_step_host_bytes(g));
    if (st == DBK_OK) st = dbk_program_run(s->lookahead.recorded);
    dbk_session_cost_end(s, &m, dbk_session_program_bytes(&s->lookahead));
    return st;
}

dbk_status dbk_session_lookahead_final(dbk_session *s) { return dbk_session_lookahead(s, 0, 0); }
