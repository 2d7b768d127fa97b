/*
 * trainer_folder.c — the run folder: its lock, the check that a fresh run replaces nothing,
 * resume.ckpt (read, checked, restored, saved), and the run's files (see trainer_impl.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "train/trainer_impl.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "core/log.h"
#include "core/timer.h"
#include "train/results.h"
#include "train/resume.h"

static void run_paths(dbk_trainer_run *r, const char *dir) {
    snprintf(r->logs_path, sizeof r->logs_path, "%s/logs.tsv", dir);
    snprintf(r->json_path, sizeof r->json_path, "%s/result.json", dir);
    snprintf(r->ckpt_path, sizeof r->ckpt_path, "%s/model.ckpt", dir);
    snprintf(r->entry_path, sizeof r->entry_path, "%s/dawnbench.json", dir);
    snprintf(r->mlperf_path, sizeof r->mlperf_path, "%s/mlperf.log", dir);
    snprintf(r->base_path, sizeof r->base_path, "%s/base.ckpt", dir);
    snprintf(r->diff_path, sizeof r->diff_path, "%s/model.diff", dir);
}

/* The folder, created if needed, and its lock. *created says whether this run made it. */
static dbk_status lock_folder(dbk_trainer_run *r, const char *dir, const dbk_peers *peers, bool *created) {
    *created = false;
    if (!dbk_peers_writes_files(peers)) return DBK_OK;
    struct stat sb;
    *created = stat(dir, &sb) != 0;
    DBK_TRY(dbk_mkdir_p(dir));
    return dbk_run_lock_acquire(dir, &r->lock);
}

/* A fresh run: the folder must hold no earlier run. */
static dbk_status check_fresh(dbk_trainer_run *r, const dbk_train_options *opt) {
    if (access(r->json_path, F_OK) == 0)
        return dbk_set_error(DBK_ERR_IO, "%s already exists; choose another --out or remove it", r->json_path);
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", opt->out_dir, DBK_RESUME_FILE);
    if (access(path, F_OK) == 0)
        return dbk_set_error(DBK_ERR_IO, "%s holds an unfinished run (%s); continue it with --resume %s or remove it",
                             opt->out_dir, DBK_RESUME_FILE, opt->out_dir);
    /* Another run's (or program's) files of the names a run writes are never replaced. */
    const char *const others[] = {r->logs_path, r->ckpt_path, r->entry_path, r->mlperf_path};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        if (access(others[i], F_OK) == 0)
            return dbk_set_error(DBK_ERR_IO, "%s already exists and a run would replace it; choose another --out or "
                                 "remove it", others[i]);
    time_t now = time(NULL);
    struct tm tmv;
    gmtime_r(&now, &tmv);
    strftime(r->started_at, sizeof r->started_at, "%Y-%m-%dT%H:%M:%SZ", &tmv);
    return DBK_OK;
}

/* A resumed run: resume.ckpt read (records into rep, the state kept for prepare), and one
 * line saying how the run it continues ended. */
static dbk_status open_resume(dbk_trainer_run *r, const dbk_train_options *opt, dbk_train_report *rep) {
    dbk_run_record *rec = &r->resume_record;
    if (dbk_peers_writes_files(opt->peers)) {
        DBK_TRY(dbk_resume_read_record(opt->out_dir, rec));
    } else { /* the other ranks of a distributed run check resume.ckpt only */
        snprintf(rec->status, sizeof rec->status, "running");
        rec->train_images = rec->test_images = -1;
    }
    const char *previous = rec->status;
    dbk_resume_header h;
    DBK_TRY(dbk_resume_read(opt->out_dir, &h, rep, &r->resume_ckpt));
    snprintf(r->resume_fingerprint, sizeof r->resume_fingerprint, "%s", h.dataset_fingerprint);
    dbk_status st = DBK_OK;
    /* resume.ckpt must be the run the folder records: a checkpoint copied in from another run
     * would otherwise train that run on and replace this one's result.json and logs.tsv. */
    if (rec->recipe[0] && (strcmp(rec->recipe, opt->recipe.name) || strcmp(rec->model, opt->recipe.model)))
        st = dbk_set_error(DBK_ERR_INVALID_ARG, "%s/%s continues a run of recipe %s (model %s), but %s/result.json "
                           "records recipe %s (model %s): the checkpoint is not this folder's run; nothing was resumed",
                           opt->out_dir, DBK_RESUME_FILE, opt->recipe.name, opt->recipe.model, opt->out_dir, rec->recipe,
                           rec->model[0] ? rec->model : "?");
    else if (rec->dataset_fingerprint[0] && h.dataset_fingerprint[0] &&
             strcmp(rec->dataset_fingerprint, h.dataset_fingerprint))
        st = dbk_set_error(DBK_ERR_INVALID_ARG, "%s/%s was trained on other data (dataset %s) than %s/result.json records "
                           "(dataset %s): the checkpoint is not this folder's run; nothing was resumed", opt->out_dir,
                           DBK_RESUME_FILE, h.dataset_fingerprint, opt->out_dir, rec->dataset_fingerprint);
    else if (strcmp(h.daybreak_version, DBK_VERSION) != 0)
        st = dbk_set_error(DBK_ERR_INVALID_ARG, "%s/%s was written by daybreak %s; this is daybreak %s", opt->out_dir,
                           DBK_RESUME_FILE, h.daybreak_version, DBK_VERSION);
    else if (h.seed != opt->seed || strcmp(h.backend, dbk_backend_kind_name(opt->backend)) != 0 ||
             (h.device != opt->device && !opt->peers)) /* ranks may each have their own device */
        st = dbk_set_error(DBK_ERR_INVALID_ARG, "%s was run with seed %llu on %s:%d; resume it with the same",
                           opt->out_dir, (unsigned long long)h.seed, h.backend, h.device);
    /* Still "running" (or no result.json yet) while we hold the lock: that run is dead, killed. */
    const bool killed = !strcmp(previous, "running") || !strcmp(previous, "none");
    if (st == DBK_OK && !killed && strcmp(previous, "interrupted") && strcmp(previous, "failed"))
        st = dbk_set_error(DBK_ERR_INVALID_ARG, "%s: the run has finished (status %s); nothing to resume", opt->out_dir,
                           previous);
    if (st == DBK_OK && dbk_peers_writes_files(opt->peers))
        st = dbk_mlperf_log_load(&r->mlperf, r->mlperf_path, h.epochs_done);
    if (st == DBK_OK) {
        r->mlperf_continued = !dbk_mlperf_log_is_empty(&r->mlperf);
        snprintf(r->started_at, sizeof r->started_at, "%s", h.started_at);
        r->resume_clock = h.clock_seconds;
        r->resume_has_scaler = h.has_loss_scaler;
        r->resume_scaler = h.loss_scaler;
        printf("resuming %s after epoch %d (clock %.2f s): the run was %s\n", opt->out_dir, h.epochs_done,
               h.clock_seconds, killed ? "killed" : previous);
        fflush(stdout);
    }
    dbk_resume_header_deinit(&h);
    return st;
}

/* A resumed run trains on the data it started with: the same image counts as result.json
 * records and the same fingerprint as resume.ckpt (and result.json) record. */
dbk_status dbk_trainer_check_resumed_data(const dbk_trainer_run *r, const dbk_train_options *opt,
                                          const dbk_train_report *rep) {
    const dbk_run_record *rec = &r->resume_record;
    if ((rec->train_images >= 0 && rec->train_images != rep->train_images) ||
        (rec->test_images >= 0 && rec->test_images != rep->test_images))
        return dbk_set_error(DBK_ERR_INVALID_ARG, "%s: the run trained on %.0f images and evaluated %.0f; the data in %s "
                             "now gives %d and %d: resume it with the data it started with", opt->out_dir,
                             rec->train_images, rec->test_images, opt->data_dir, (int)rep->train_images,
                             (int)rep->test_images);
    const char *expected = r->resume_fingerprint[0] ? r->resume_fingerprint : rec->dataset_fingerprint;
    if (expected[0] && strcmp(expected, rep->dataset_fingerprint))
        return dbk_set_error(DBK_ERR_INVALID_ARG, "%s: the data in %s is not the data the run started with (dataset "
                             "fingerprint %s, the run's %s): resume it with the same data", opt->out_dir, opt->data_dir,
                             rep->dataset_fingerprint, expected);
    return DBK_OK;
}

/* The state of resume.ckpt into the session (and the peers' part), after the data's upload
 * that began at t0 on the clock: the restore's time is added to the saved clock. */
dbk_status dbk_trainer_restore(dbk_trainer_run *r, const dbk_train_options *opt, dbk_train_report *rep, double t0,
                               double *clock) {
    dbk_session *s = r->session;
    DBK_TRY(dbk_session_load_state(s, r->resume_ckpt, DBK_RESUME_FILE)); /* synchronises the device */
    if (opt->peers) DBK_TRY(opt->peers->restore_state(opt->peers->ctx, r->resume_ckpt, DBK_RESUME_FILE));
    dbk_checkpoint_destroy(r->resume_ckpt); /* its host copy of the state is no longer needed */
    r->resume_ckpt = NULL;
    if (dbk_session_loss_scaler(s) && r->resume_has_scaler) dbk_session_restore_loss_scaler(s, &r->resume_scaler);
    else if (dbk_session_loss_scaler(s))
        dbk_log(DBK_LOG_LEVEL_WARN, "%s holds no loss scale (the run it continues trained in fp32): fp16 starts "
                "at the initial scale %g", DBK_RESUME_FILE, (double)DBK_LOSS_SCALE_INIT);
    const double restore = dbk_time_now() - t0;
    dbk_energy_clock_stop(&r->energy);
    rep->resumed++;
    rep->resume_seconds += restore;
    *clock = r->resume_clock + restore;
    return DBK_OK;
}

/* resume.ckpt, written by rank 0; in a distributed run every rank takes part (collective):
 * the exchange's counts and every rank's error-feedback residual go into it. */
dbk_status dbk_trainer_save_resume(dbk_trainer_run *r, const dbk_train_options *opt, const dbk_train_report *rep,
                                   double clock) {
    if (!opt->peers) return dbk_resume_save(r->session, opt->out_dir, opt, rep, r->started_at, clock, NULL);
    char *meta = NULL;
    float *residuals = NULL;
    int64_t shape[2] = {0, 0};
    dbk_status st = opt->peers->save_state(opt->peers->ctx, &meta, &residuals, shape);
    if (st == DBK_OK && dbk_peers_writes_files(opt->peers)) {
        const dbk_ckpt_tensor t = {.name = "distributed.residuals", .ndim = 2, .shape = {shape[0], shape[1]},
                                   .data = residuals};
        const dbk_resume_peers p = {meta, residuals ? &t : NULL};
        st = dbk_resume_save(r->session, opt->out_dir, opt, rep, r->started_at, clock, &p);
    }
    dbk_free(meta);
    dbk_free(residuals);
    return st;
}

dbk_status dbk_trainer_write_files(dbk_trainer_run *r, const dbk_train_options *opt, const dbk_train_report *rep) {
    if (!dbk_peers_writes_files(opt->peers)) return DBK_OK;
    DBK_TRY(dbk_results_write_logs_tsv(r->logs_path, rep));
    DBK_TRY(dbk_results_write_dawnbench_entry(r->entry_path, opt, rep, r->started_at));
    DBK_TRY(dbk_mlperf_log_write(&r->mlperf, r->mlperf_path));
    return dbk_results_write_json(r->json_path, opt, rep, r->started_at);
}

dbk_status dbk_trainer_open_folder(dbk_trainer_run *r, const dbk_train_options *opt, dbk_train_report *rep) {
    run_paths(r, opt->out_dir);
    DBK_TRY(lock_folder(r, opt->out_dir, opt->peers, &r->folder_created)); /* another run's folder: touch nothing */
    r->folder_held = true;
    if (opt->resume) return open_resume(r, opt, rep); /* every rank of a distributed job reads resume.ckpt */
    return dbk_peers_writes_files(opt->peers) ? check_fresh(r, opt) : DBK_OK;
}

void dbk_trainer_close_folder(dbk_trainer_run *r, const dbk_train_options *opt, bool started) {
    if (!r->folder_held || !dbk_peers_writes_files(opt->peers)) return;
    if (started || opt->resume) {
        dbk_run_lock_release(&r->lock);
        return;
    }
    /* A run that cannot start (data, device, memory) leaves no folder behind. */
    dbk_run_lock_discard(&r->lock, opt->out_dir);
    if (r->folder_created) rmdir(opt->out_dir);
}
