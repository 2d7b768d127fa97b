/*
 * trainer.c — the epoch loop, the clock, and the stop rule (see trainer.h), read top to
 * bottom: the run (folder, setup, loop, end), the loop (preprocessing, then per epoch: the size
 * phase, training, evaluation, the stop rule), then each step of it. The side jobs are hooks
 * it calls in one place each (trainer_impl.h): the folder, its lock and resume.ckpt
 * (trainer_folder.c), the setup before the clock (trainer_setup.c), the size phases
 * (trainer_phases.c); mlperf.log's events are logged where their step runs, run_stop in
 * end_run; the peers' collective steps (train/peers.h) where the loop exchanges.
 */
#define _POSIX_C_SOURCE 200809L
#include "train/trainer_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <sys/stat.h>

#include "core/log.h"
#include "core/timer.h"
#include "train/results.h"
#include "train/resume.h"

static dbk_status end_run(dbk_trainer_run *r, const dbk_train_options *opt, dbk_train_report *rep, dbk_status st);
static dbk_status train_loop(dbk_trainer_run *r, const dbk_train_options *opt, dbk_train_report *rep);
static dbk_status prepare(dbk_trainer_run *r, const dbk_train_options *opt, dbk_train_report *rep, double *clock);
static dbk_status train_epoch(dbk_trainer_run *r, const dbk_train_options *opt, dbk_train_report *rep,
                              dbk_epoch_record *e, long total_steps, double *clock, int *stopped);
static dbk_status evaluate_epoch(dbk_trainer_run *r, const dbk_train_options *opt, dbk_epoch_record *e, double *clock);
static dbk_status final_evaluation(dbk_trainer_run *r, const dbk_train_options *opt, dbk_train_report *rep,
                                   double *clock);
static dbk_status finish(dbk_trainer_run *r, const dbk_train_options *opt, dbk_train_report *rep);
static dbk_status save_diff(dbk_trainer_run *r, const dbk_train_options *opt, dbk_train_report *rep, const char *meta);
static dbk_status stop_requested(const dbk_train_options *opt, int *stopped);
static dbk_status lookahead_after(dbk_session *s, const dbk_recipe *rc, long done, long total);
static dbk_status diverged(const dbk_epoch_record *e);
static void record_schedule(dbk_train_report *rep, const dbk_epoch_record *e, long total_steps, int epochs,
                            double clock);
static void collect_profile(const dbk_session *s, dbk_train_report *rep);
static void collect_loss_scale(const dbk_session *s, dbk_train_report *rep, int epoch);
static void print_epoch(const dbk_epoch_record *e, int max_epochs, const dbk_train_report *rep);
static void progress_bar(int epoch, int step, int steps, double seconds, int batch);
static dbk_status checkpoint_meta(const dbk_train_options *opt, const dbk_train_report *rep, char *out, size_t cap);

dbk_status dbk_train_run(const dbk_train_options *opt, dbk_train_report *rep) {
    dbk_trainer_run r;
    memset(&r, 0, sizeof r);
    r.lock.fd = -1;
    dbk_mlperf_log_init(&r.mlperf);
    memset(rep, 0, sizeof *rep);
    rep->status = DBK_RUN_FAILED;
    dbk_status st = dbk_trainer_open_folder(&r, opt, rep);
    if (!r.folder_held) return st; /* another run's folder: touch nothing */
    if (st == DBK_OK) st = dbk_trainer_setup(&r, opt, rep);
    const bool started = st == DBK_OK;
    if (started) {
        rep->status = DBK_RUN_RUNNING;
        st = end_run(&r, opt, rep, train_loop(&r, opt, rep));
    }
    if (opt->peers) opt->peers->detach(opt->peers->ctx); /* its device buffers, before the backend goes */
    dbk_trainer_release(&r);
    dbk_trainer_close_folder(&r, opt, started);
    return st;
}

/* The run's end, whatever ended it (st: the loop's status): mlperf.log's run_stop and the
 * run's files, in this one place. Finished or diverged: finish; interrupted: the files, with
 * resume.ckpt kept; failed (an error, or the files that could not be written): the record of
 * the epochs that completed, marked failed (not "running"). */
static dbk_status end_run(dbk_trainer_run *r, const dbk_train_options *opt, dbk_train_report *rep, dbk_status st) {
    if (st == DBK_OK || st == DBK_ERR_DIVERGED) {
        if (rep->status == DBK_RUN_RUNNING) return st; /* DBK_MAX_EPOCHS ran: the files are the last epoch's */
        dbk_mlperf_log_run_stop(&r->mlperf, rep->status == DBK_RUN_REACHED);
        const dbk_status ended = rep->status == DBK_RUN_INTERRUPTED ? dbk_trainer_write_files(r, opt, rep)
                                                                   : finish(r, opt, rep);
        if (ended == DBK_OK) return st == DBK_OK ? st : dbk_set_error(st, "%s", rep->end_reason);
        st = ended;
    }
    char reason[1024];
    snprintf(reason, sizeof reason, "%s", dbk_last_error());
    snprintf(rep->end_reason, sizeof rep->end_reason, "%.500s", reason);
    rep->status = DBK_RUN_FAILED;
    dbk_mlperf_log_run_stop(&r->mlperf, false);
    dbk_trainer_write_files(r, opt, rep);
    return dbk_set_error(st, "%s", reason);
}

static dbk_status train_loop(dbk_trainer_run *r, const dbk_train_options *opt, dbk_train_report *rep) {
    const dbk_recipe *rc = &opt->recipe;
    double clock;
    DBK_TRY(prepare(r, opt, rep, &clock));

    /* the first "average" */
    if (dbk_trainer_averaging(opt)) DBK_TRY(opt->peers->average_now(opt->peers->ctx, r->session));
    const int steps = dbk_session_steps_per_epoch(r->session);
    const long total_steps = dbk_recipe_total_steps(rc, steps);
    const int epochs = (int)((total_steps + steps - 1) / steps);
    rep->schedule.epochs = epochs;
    rep->schedule.steps = total_steps;
    for (int epoch = rep->epochs_run + 1; epoch <= epochs && epoch <= DBK_MAX_EPOCHS; epoch++) {
        dbk_epoch_record *e = &rep->epochs[epoch - 1];
        memset(e, 0, sizeof *e);
        e->epoch = epoch;
        DBK_TRY(dbk_trainer_enter_size_phase(r, opt, rep, epoch - 1, &clock));
        DBK_TRY(train_epoch(r, opt, rep, e, total_steps, &clock, &rep->stop_signal));
        if (rep->stop_signal) { /* the epoch in progress is dropped; resume.ckpt holds the last one */
            rep->status = DBK_RUN_INTERRUPTED;
            return DBK_OK;
        }
        DBK_TRY(evaluate_epoch(r, opt, e, &clock));
        if (opt->peers) DBK_TRY(opt->peers->summarise(opt->peers->ctx, &rep->peers));
        rep->epochs_run = epoch;
        if (opt->profile) collect_profile(r->session, rep);
        dbk_session_step_costs(r->session, &rep->step_costs);
        collect_loss_scale(r->session, rep, epoch);
        if (!opt->quiet) print_epoch(e, epochs, rep);

        bool last = epoch == epochs;
        if (rc->fixed_budget && last && isfinite(e->train_loss) && isfinite(e->test_loss)) {
            DBK_TRY(final_evaluation(r, opt, rep, &clock));
            if (!opt->quiet && rc->tta_select.fraction > 0.0f)
                printf("final evaluation (test-time augmentation level %d for the %.0f%% least confident images, on the "
                       "clock): test %6.2f%%  time %7.2fs  clock %8.2fs\n", rc->tta_level,
                       100.0 * (double)rc->tta_select.fraction, e->test_accuracy, rep->final_eval.seconds, clock);
            else if (!opt->quiet)
                printf("final evaluation (test-time augmentation level %d, on the clock): test %6.2f%%  time %7.2fs  "
                       "clock %8.2fs\n", rc->tta_level, e->test_accuracy, rep->final_eval.seconds, clock);
        }
        /* Non-finite logits give a non-finite loss (and count as wrong, op_list.h ACCURACY): the
         * run ends as diverged, whichever evaluation (per epoch or the final one) saw them. */
        if (!isfinite(e->train_loss) || !isfinite(e->test_loss)) {
            rep->status = DBK_RUN_DIVERGED;
            const dbk_status st = diverged(e);
            snprintf(rep->end_reason, sizeof rep->end_reason, "%s", dbk_last_error());
            return st;
        }
        /* A fixed budget is judged by its final evaluation only. */
        const double judged = rc->target_top5 ? e->test_top5 : e->test_accuracy;
        if (rep->epochs_to_target == 0 && (!rc->fixed_budget || last) &&
            dbk_results_hundredths(judged) >= dbk_results_hundredths(rc->target)) {
            rep->epochs_to_target = epoch;
            rep->seconds_to_target = clock;
        }
        bool reached = rep->epochs_to_target > 0;
        if (last) record_schedule(rep, e, total_steps, epochs, clock);
        if (last || (reached && !opt->all_epochs)) {
            rep->status = reached ? DBK_RUN_REACHED : DBK_RUN_NOT_REACHED;
            return DBK_OK;
        }
        /* resume.ckpt first: whatever the other files say, it holds this epoch or the last. */
        DBK_TRY(dbk_trainer_save_resume(r, opt, rep, clock));
        DBK_TRY(dbk_trainer_write_files(r, opt, rep));
    }
    return DBK_OK;
}

/* Preprocessing, on the clock: the dataset to the device and the model's initial state; or,
 * resuming, the state of resume.ckpt, its time added to the saved clock. A fresh run then
 * saves resume.ckpt for epoch 0 (off the clock), so it can be resumed from its first step. */
static dbk_status prepare(dbk_trainer_run *r, const dbk_train_options *opt, dbk_train_report *rep, double *clock) {
    dbk_session *s = r->session;
    if (!r->mlperf_continued) {
        dbk_mlperf_log_event(&r->mlperf, DBK_MLPERF_END, "init_stop", 0);
        dbk_mlperf_log_event(&r->mlperf, DBK_MLPERF_START, "run_start", 0);
    }
    dbk_energy_clock_start(&r->energy);
    double t0 = dbk_time_now();
    DBK_TRY(dbk_session_upload_data(s, &r->train, &r->test));
    if (opt->resume) return dbk_trainer_restore(r, opt, rep, t0, clock);
    DBK_TRY(dbk_session_init_params(s, opt->seed));
    DBK_TRY(dbk_session_init_from_data(s, &r->train));
    if (opt->base) DBK_TRY(dbk_session_start_from(s, opt->base));
    DBK_TRY(dbk_backend_sync(r->be));
    *clock = rep->preprocess_seconds = dbk_time_now() - t0;
    dbk_energy_clock_stop(&r->energy);
    DBK_TRY(dbk_peers_slowest(opt->peers, clock, "preprocessing time"));
    rep->preprocess_seconds = *clock;
    if (opt->checkpoint_diff && !opt->base && dbk_peers_writes_files(opt->peers)) { /* the difference's base */
        char meta[1024];
        DBK_TRY(checkpoint_meta(opt, rep, meta, sizeof meta));
        DBK_TRY(dbk_session_save(s, r->base_path, meta));
    }
    DBK_TRY(dbk_trainer_save_resume(r, opt, rep, *clock));
    return dbk_trainer_write_files(r, opt, rep);
}

/* Trains one epoch's steps into e (train loss, accuracy, time, lr). *stopped is the signal
 * that ended it early (the record is then incomplete), 0 otherwise. */
static dbk_status train_epoch(dbk_trainer_run *r, const dbk_train_options *opt, dbk_train_report *rep,
                              dbk_epoch_record *e, long total_steps, double *clock, int *stopped) {
    const dbk_recipe *rc = &opt->recipe;
    dbk_session *s = r->session;
    const int steps = dbk_session_steps_per_epoch(s);
    double start = dbk_time_now();
    const long first_step = (long)(e->epoch - 1) * steps;
    const int epoch_steps = total_steps - first_step < steps ? (int)(total_steps - first_step) : steps;
    dbk_energy_clock_start(&r->energy);
    dbk_mlperf_log_event(&r->mlperf, DBK_MLPERF_START, "epoch_start", e->epoch);
    DBK_TRY(dbk_session_begin_epoch(s, e->epoch, opt->seed));
    DBK_TRY(dbk_mask_begin_epoch(s, &opt->mask, opt->peers, opt->seed, e->epoch, &rep->mask)); /* on the clock */
    if (r->loader) DBK_TRY(dbk_loader_begin_epoch(r->loader, e->epoch));
    for (int step = 0; step < epoch_steps; step++) {
        DBK_TRY(stop_requested(opt, stopped));
        if (*stopped) return dbk_backend_sync(r->be);
        if (r->loader) { /* the next decoded batch; the threads are already on the ones after it */
            dbk_loader_batch b;
            DBK_TRY(dbk_loader_next(r->loader, &b));
            DBK_ASSERT(b.count == rc->batch);
            DBK_TRY(dbk_session_upload_batch(s, b.images, b.labels));
        }
        e->lr_end = dbk_recipe_lr_at_step(rc, first_step + step, steps, total_steps);
        DBK_TRY(dbk_session_train_step(s, step, e->lr_end));
        if (dbk_trainer_averaging(opt))
            DBK_TRY(opt->peers->after_step(opt->peers->ctx, s, first_step + step + 1, total_steps));
        DBK_TRY(lookahead_after(s, rc, first_step + step + 1, total_steps));
        if (opt->progress) progress_bar(e->epoch, step + 1, epoch_steps, dbk_time_now() - start, rc->batch);
    }
    dbk_epoch_counters tc;
    DBK_TRY(dbk_session_end_epoch(s, &tc)); /* synchronises the device */
    /* An asynchronous device lets the loop above enqueue the whole epoch in a moment and wait
     * here: a signal that came during that wait stops the run now, before the evaluation, and
     * the epoch is dropped as one stopped between steps is. */
    DBK_TRY(stop_requested(opt, stopped));
    if (*stopped) return DBK_OK;
    e->epoch_seconds = dbk_time_now() - start;
    dbk_energy_clock_stop(&r->energy);
    DBK_TRY(dbk_peers_combine_epoch(opt->peers, &tc, &e->epoch_seconds)); /* all ranks: the slowest's time */
    dbk_mlperf_log_event(&r->mlperf, DBK_MLPERF_END, "epoch_stop", e->epoch);
    *clock += e->epoch_seconds;
    e->clock_seconds = *clock;
    dbk_energy_clock_record(&r->energy, e);
    e->images_per_second = (double)tc.images / e->epoch_seconds;
    e->flops = dbk_session_steps_flops(s, first_step, epoch_steps);
    e->train_loss = tc.loss_sum / (double)tc.images;
    e->train_accuracy = 100.0 * tc.correct / (double)tc.images;
    if (r->loader) {
        dbk_loader_stats ls;
        dbk_loader_get_stats(r->loader, &ls);
        e->loader_wait_seconds = ls.wait_seconds;
        e->decode_seconds = ls.decode_seconds;
    }
    if (opt->progress) printf("\r%*s\r", 79, "");
    return DBK_OK;
}

/* The test set after an epoch: off the clock (DAWNBench), on it with --clock mlperf. */
static dbk_status evaluate_epoch(dbk_trainer_run *r, const dbk_train_options *opt, dbk_epoch_record *e, double *clock) {
    dbk_mlperf_log_event(&r->mlperf, DBK_MLPERF_START, "eval_start", e->epoch);
    if (opt->clock == DBK_CLOCK_MLPERF) dbk_energy_clock_start(&r->energy);
    double eval_start = dbk_time_now();
    dbk_epoch_counters ec = {0};
    if (opt->peers) DBK_TRY(opt->peers->before_eval(opt->peers->ctx, r->session));
    if (dbk_peers_evaluates(opt->peers)) DBK_TRY(dbk_session_evaluate(r->session, &ec));
    if (dbk_trainer_averaging(opt)) DBK_TRY(opt->peers->after_eval(opt->peers->ctx, r->session));
    e->eval_seconds = dbk_time_now() - eval_start;
    dbk_energy_clock_stop(&r->energy);   /* nothing to stop on the DAWNBench clock */
    if (r->eval_loader) {
        dbk_loader_stats ls;
        dbk_loader_get_stats(r->eval_loader, &ls);
        e->eval_wait_seconds = ls.wait_seconds;
        e->decode_seconds += ls.decode_seconds;
    }
    DBK_TRY(dbk_peers_share_eval(opt->peers, &ec, &e->eval_seconds));
    e->test_loss = ec.loss_sum / (double)ec.images;
    e->test_accuracy = 100.0 * ec.correct / (double)ec.images;
    e->test_top5 = 100.0 * ec.correct5 / (double)ec.images;
    dbk_mlperf_log_event(&r->mlperf, DBK_MLPERF_END, "eval_stop", e->epoch);
    dbk_mlperf_log_accuracy(&r->mlperf, e->epoch, e->test_accuracy);
    if (opt->clock == DBK_CLOCK_MLPERF) {
        *clock += e->eval_seconds;
        e->clock_seconds = *clock;
        dbk_energy_clock_record(&r->energy, e);
    }
    return DBK_OK;
}

/* A fixed-budget recipe's final evaluation, on the clock (see dbk_final_eval). */
static dbk_status final_evaluation(dbk_trainer_run *r, const dbk_train_options *opt, dbk_train_report *rep,
                                   double *clock) {
    const dbk_recipe *rc = &opt->recipe;
    dbk_epoch_record *e = &rep->epochs[rep->epochs_run - 1];
    dbk_mlperf_log_event(&r->mlperf, DBK_MLPERF_START, "eval_start", e->epoch);
    dbk_energy_clock_start(&r->energy);
    double start = dbk_time_now();
    dbk_epoch_counters fc = {0};
    if (dbk_peers_evaluates(opt->peers)) DBK_TRY(dbk_session_evaluate_final(r->session, &fc)); /* synchronises */
    dbk_final_eval *f = &rep->final_eval;
    f->done = true;
    f->tta_level = rc->tta_level;
    f->seconds = dbk_time_now() - start;
    dbk_energy_clock_stop(&r->energy);
    DBK_TRY(dbk_peers_share_eval(opt->peers, &fc, &f->seconds));
    f->accuracy = 100.0 * fc.correct / (double)fc.images;
    f->loss = fc.loss_sum / (double)fc.images;
    f->plain_accuracy = e->test_accuracy;
    *clock += f->seconds;
    e->clock_seconds = *clock;
    dbk_energy_clock_record(&r->energy, e);
    e->test_accuracy = f->accuracy;
    e->test_loss = f->loss;
    dbk_mlperf_log_event(&r->mlperf, DBK_MLPERF_END, "eval_stop", e->epoch);
    dbk_mlperf_log_accuracy(&r->mlperf, e->epoch, e->test_accuracy);
    return DBK_OK;
}

/* The run's end: final files, the model, and no resume.ckpt (nothing is left to resume). */
static dbk_status finish(dbk_trainer_run *r, const dbk_train_options *opt, dbk_train_report *rep) {
    DBK_TRY(dbk_trainer_write_files(r, opt, rep));
    if (dbk_peers_writes_files(opt->peers)) dbk_resume_remove(opt->out_dir);
    if (rep->status == DBK_RUN_DIVERGED) return DBK_OK;
    if (opt->profile) dbk_session_print_op_times(r->session, stdout);
    /* Model averaging: the model saved is the last average, the one the last evaluation saw. */
    if (dbk_trainer_averaging(opt)) DBK_TRY(opt->peers->before_eval(opt->peers->ctx, r->session));
    if (!dbk_peers_writes_files(opt->peers)) return DBK_OK;
    char meta[1024];
    DBK_TRY(checkpoint_meta(opt, rep, meta, sizeof meta));
    DBK_TRY(dbk_session_save(r->session, r->ckpt_path, meta));
    if (!opt->checkpoint_diff) return DBK_OK;
    DBK_TRY(save_diff(r, opt, rep, meta));
    return dbk_trainer_write_files(r, opt, rep); /* result.json with the difference's bytes */
}

/* model.diff: the saved model as its difference from the base (--base, or base.ckpt), with its
 * bytes next to model.ckpt's on the console and in the report. */
static dbk_status save_diff(dbk_trainer_run *r, const dbk_train_options *opt, dbk_train_report *rep, const char *meta) {
    const char *base = opt->base ? opt->base : r->base_path;
    DBK_TRY(dbk_session_save_diff(r->session, base, r->diff_path, meta, &rep->diff));
    struct stat sb;
    rep->model_ckpt_bytes = stat(r->ckpt_path, &sb) == 0 ? (double)sb.st_size : 0.0;
    rep->diff_written = true;
    snprintf(rep->diff_base, sizeof rep->diff_base, "%s", base);
    if (!opt->quiet)
        printf("small checkpoint %s: %.0f bytes, %llu of %llu parameters changed (%.3f%%) against %s; model.ckpt "
               "%.0f bytes (%.2f%% of it)\n", r->diff_path, rep->diff.bytes, (unsigned long long)rep->diff.changed,
               (unsigned long long)rep->diff.param_count,
               100.0 * (double)rep->diff.changed / (double)(rep->diff.param_count ? rep->diff.param_count : 1), base,
               rep->model_ckpt_bytes, rep->model_ckpt_bytes > 0 ? 100.0 * rep->diff.bytes / rep->model_ckpt_bytes : 0.0);
    return DBK_OK;
}

/* *stopped: the signal that stops the run here, agreed by every rank (0: go on). */
static dbk_status stop_requested(const dbk_train_options *opt, int *stopped) {
    *stopped = opt->stop_signal ? (int)*opt->stop_signal : 0;
    return dbk_peers_agree_stop(opt->peers, stopped);
}

/* airbench94's lookahead: every lookahead_every steps, and once more with decay 1 after the
 * run's last step. */
static dbk_status lookahead_after(dbk_session *s, const dbk_recipe *rc, long done, long total) {
    if (!dbk_session_has_lookahead(s)) return DBK_OK;
    if (done % rc->lookahead_every == 0) DBK_TRY(dbk_session_lookahead(s, done, total));
    if (done == total) DBK_TRY(dbk_session_lookahead_final(s));
    return DBK_OK;
}

static dbk_status diverged(const dbk_epoch_record *e) {
    return dbk_set_error(DBK_ERR_DIVERGED,
                         "training diverged: the %s loss is %s in epoch %d (learning rate %.4g); "
                         "try a lower learning rate or another seed",
                         isfinite(e->train_loss) ? "test" : "training",
                         isnan(isfinite(e->train_loss) ? e->test_loss : e->train_loss) ? "NaN" : "infinite", e->epoch,
                         (double)e->lr_end);
}

/* The whole schedule ran: its accuracy (the final evaluation's, now in e) and its clock. */
static void record_schedule(dbk_train_report *rep, const dbk_epoch_record *e, long total_steps, int epochs,
                            double clock) {
    rep->schedule = (dbk_schedule_result){.completed = true, .epochs = epochs, .steps = total_steps,
                                          .accuracy = e->test_accuracy, .top5 = e->test_top5, .seconds = clock};
}

/* Copies the per-op profile into the report (result.json "profile"). */
static void collect_profile(const dbk_session *s, dbk_train_report *rep) {
    rep->profiled_steps = dbk_session_timed_steps(s);
    rep->profiled_step_seconds = dbk_session_timed_step_seconds(s);
    rep->op_count = 0;
    if (!rep->profiled_steps) return;
    int n = dbk_session_timed_op_count(s);
    if (n > DBK_MAX_TIMED_OPS) n = DBK_MAX_TIMED_OPS;
    for (int i = 0; i < n; i++) dbk_session_op_times(s, i, &rep->ops[i]);
    rep->op_count = n;
}

/* The loss scaler's state after an epoch (mixed precision), into the report and the log. */
static void collect_loss_scale(const dbk_session *s, dbk_train_report *rep, int epoch) {
    const dbk_loss_scaler *ls = dbk_session_loss_scaler(s);
    if (!ls) return;
    if (ls->skipped_steps > rep->skipped_steps || epoch == 1)
        dbk_log(DBK_LOG_LEVEL_INFO, "fp16: epoch %d: loss scale %g, %ld step%s skipped for inf/NaN gradients so far",
                epoch, (double)ls->scale, ls->skipped_steps, ls->skipped_steps == 1 ? "" : "s");
    rep->skipped_steps = ls->skipped_steps;
    rep->loss_scale = ls->scale;
}

static void print_epoch(const dbk_epoch_record *e, int max_epochs, const dbk_train_report *rep) {
    printf("epoch %3d/%d  loss %.4f  train %6.2f%%  test %6.2f%%", e->epoch, max_epochs, e->train_loss,
           e->train_accuracy, e->test_accuracy);
    if (rep->top5) printf("  top-5 %6.2f%%", e->test_top5);
    printf("  time %7.2fs  clock %8.2fs  %8.1f img/s", e->epoch_seconds, e->clock_seconds, e->images_per_second);
    /* How long the device waited for decoded batches: the host is the bottleneck when large. */
    if (rep->streamed) printf("  loader wait %.2fs  eval wait %.2fs", e->loader_wait_seconds, e->eval_wait_seconds);
    printf("\n");
    fflush(stdout);
}

/*
 * trainer.c — the epoch loop, the clock, and the stop rule (see trainer.h).
 */




static void progress_bar(int epoch, int step, int steps, double seconds, int batch) {
    const int width = 30;
    int filled = steps ? step * width / steps : width;
    char bar[64];
    for (int i = 0; i < width; i++) bar[i] = i < filled ? '=' : (i == filled ? '>' : ' ');
    bar[width] = '\0';
    double ips = seconds > 0 ? (double)step * batch / seconds : 0.0;
    printf("\r  epoch %3d [%s] %4d/%d  %7.1f img/s", epoch, bar, step, steps, ips);
    fflush(stdout);
}

static dbk_status checkpoint_meta(const dbk_train_options *opt, const dbk_train_report *rep, char *out, size_t cap) {
    const dbk_epoch_record *last = rep->epochs_run ? &rep->epochs[rep->epochs_run - 1] : NULL;
    snprintf(out, cap,
             "{\"recipe\": \"%s\", \"model\": \"%s\", \"seed\": %llu, \"epochs\": %d, \"test_accuracy\": %.2f, "
             "\"mean\": [%.9g, %.9g, %.9g], \"std\": [%.9g, %.9g, %.9g]}",
             opt->recipe.name, opt->recipe.model, (unsigned long long)opt->seed, rep->epochs_run,
             last ? last->test_accuracy : 0.0, (double)opt->recipe.augment.mean[0], (double)opt->recipe.augment.mean[1],
             (double)opt->recipe.augment.mean[2], (double)opt->recipe.augment.std[0],
             (double)opt->recipe.augment.std[1], (double)opt->recipe.augment.std[2]);
    return DBK_OK;
}
