/*
 * session_warmup.c — every recorded program run once before the clock starts, so that the
 * driver's own compilation happens off the clock (DESIGN.md decision 8).
 *
 * Creating the backend builds the OpenCL program (or loads it from the cache) and recording a
 * session creates the Vulkan pipelines, but drivers compile more on first use: PoCL compiles
 * each kernel for its work-group size at its first launch, CLBlast builds its kernels at the
 * first call of each routine and size class, GPU drivers finish pipelines lazily. airbench
 * leaves torch.compile's warm-up off its clock for the same reason.
 *
 * The warm-up runs before any real data reaches the device (MLPerf's rule: nothing of the
 * dataset is touched before run_start), on a freshly created session: it zeroes every label
 * buffer (labels index the logits, so they must be in range; image bytes are valid whatever
 * they hold), writes an identity-like permutation and initial parameters, then runs the
 * training step (and the separate update, and the step once a group stopped), an evaluation
 * batch, the last partial batch, the test-time augmentation's batches (selective TTA's
 * selection, views and scoring), the lookahead and a sparse mask's computation (the Fisher
 * program once, the selection, the scatter and copies) once each with the real shapes, and
 * waits. It leaves the datasets, parameters, statistics and optimizer state undefined: the
 * caller uploads the data and initialises (or loads) the state afterwards, as it would
 * without a warm-up, so a run trains bit for bit the same. The data-parallel exchange is not
 * called (no collective runs); its compressors' kernels still compile at their first use.
 */
#include "core/alloc.h"
#include "core/timer.h"
#include "train/session_impl.h"

/* Zeroes a buffer (NULL: none). */
static dbk_status zero_buffer(dbk_buffer *b) {
    if (!b) return DBK_OK;
    const size_t n = dbk_buffer_size(b);
    void *zeros = dbk_calloc(n ? n : 1, 1);
    if (!zeros) return DBK_ERR_OUT_OF_HOST_MEMORY;
    dbk_status st = dbk_buffer_write(b, 0, zeros, n);
    dbk_free(zeros);
    return st;
}

/* One run of an evaluation program (NULL graph: the session has none) from row `first`. */
static dbk_status run_eval_at(dbk_session *s, const dbk_session_program *p, int32_t first) {
    if (!p->graph) return DBK_OK;
    const dbk_step_ctx ctx = {.epoch = 0, .step = 0, .first = first, .recipe = s->cfg.recipe};
    dbk_graph_fill_step(s->eval.graph, &ctx, s->eval_host);
    DBK_TRY(dbk_buffer_write(s->eval_steps, 0, s->eval_host, dbk_graph_step_host_bytes(s->eval.graph)));
    return dbk_program_run(p->recorded);
}

static dbk_status run_eval(dbk_session *s, const dbk_session_program *p) { return run_eval_at(s, p, 0); }

/* Selective TTA's programs once each, at the rows its evaluation gives them (the table was
 * zeroed, so the selection's indices are in range). */
static dbk_status run_selective(dbk_session *s) {
    if (!s->tta_score.graph) return DBK_OK;
    const int eb = s->cfg.eval_batch;
    DBK_TRY(run_eval(s, &s->tta_select));
    if (s->tta_k >= eb) DBK_TRY(run_eval(s, &s->tta_selected));
    if (s->tta_k % eb) DBK_TRY(run_eval_at(s, &s->tta_selected_tail, s->tta_k - s->tta_k % eb));
    return run_eval(s, &s->tta_score);
}

/* One training step with the values dbk_session_train_step gives step `run_step` of the run. */
static dbk_status run_train_at(dbk_session *s, const dbk_session_program *p, long run_step) {
    const int per_epoch = dbk_session_steps_per_epoch(s);
    const dbk_step_ctx ctx = {.epoch = (int)(run_step / per_epoch), .step = (int)(run_step % per_epoch),
                              .steps_per_epoch = per_epoch, .run_step = run_step,
                              .run_steps = dbk_recipe_total_steps(s->cfg.recipe, per_epoch),
                              .recipe = s->cfg.recipe, .lr = 0.0};
    dbk_graph_fill_step(s->train.graph, &ctx, s->train_host);
    DBK_TRY(dbk_buffer_write(s->train_steps, 0, s->train_host, dbk_graph_step_host_bytes(s->train.graph)));
    DBK_TRY(dbk_session_put_scaler(s));   /* mixed precision: the device's scaler state */
    return dbk_program_run(p->recorded);
}

static dbk_status run_train(dbk_session *s) {
    DBK_TRY(dbk_session_begin_epoch(s, 1, 0)); /* the permutation the augment op reads */
    DBK_TRY(run_train_at(s, &s->train, 0));
    if (s->train_late.recorded) DBK_TRY(run_train_at(s, &s->train_late, s->train_late_from));
    return s->update ? dbk_program_run(s->update) : DBK_OK;
}

static dbk_status run_lookahead(dbk_session *s) {
    if (!s->lookahead.graph) return DBK_OK;
    const dbk_step_ctx ctx = {.run_step = 0, .run_steps = 0};
    dbk_graph_fill_step(s->lookahead.graph, &ctx, s->lookahead_host);
    DBK_TRY(dbk_buffer_write(s->lookahead_steps, 0, s->lookahead_host, dbk_graph_step_host_bytes(s->lookahead.graph)));
    return dbk_program_run(s->lookahead.recorded);
}

dbk_status dbk_session_warm_up(dbk_session *s, double *seconds) {
    const double t0 = dbk_time_now();
    dbk_buffer *zeroed[] = {s->train_labels, s->test_labels, s->batch_labels, s->eval_batch_labels,
                            s->test_labels_i32, s->tta_table, s->tta_rows};
    for (size_t i = 0; i < sizeof zeroed / sizeof zeroed[0]; i++) DBK_TRY(zero_buffer(zeroed[i]));
    DBK_TRY(dbk_session_init_params(s, 0));
    if (s->train.graph) DBK_TRY(run_train(s));
    if (s->mask) DBK_TRY(dbk_session_warm_up_mask(s)); /* after run_train: its shuffle */
    DBK_TRY(run_eval(s, &s->eval));
    DBK_TRY(run_eval(s, &s->tail));
    DBK_TRY(run_eval(s, &s->tta));
    DBK_TRY(run_eval(s, &s->tta_tail));
    DBK_TRY(run_selective(s));
    DBK_TRY(run_lookahead(s));
    DBK_TRY(dbk_backend_sync(s->be));
    s->epoch = 0;
    s->epoch_steps = 0;
    s->amp_dirty = s->cfg.fp16;   /* the warm-up step moved the device's scaler: the host's goes back */
    if (seconds) *seconds = dbk_time_now() - t0;
    return DBK_OK;
}
