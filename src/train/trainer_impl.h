/*
 * trainer_impl.h — the run's state, shared by the trainer's files. INTERNAL: include only
 * from src/train/trainer*.c.
 *
 *   trainer.c         the epoch loop: preprocessing, the epochs' training and evaluation, the
 *                     stop rule, the final evaluation and the run's end; it calls each side
 *                     job below at its place in the loop
 *   trainer_setup.c   before the clock: precision, the data, the device, the session and its
 *                     warm-up; and releasing what the run holds
 *   trainer_phases.c  progressive resizing: the session rebuilt at each size phase
 *   trainer_folder.c  the run folder: its lock, the fresh-run check, resume.ckpt (read,
 *                     checked, restored, saved) and the run's files
 */
#ifndef DBK_TRAINER_IMPL_H
#define DBK_TRAINER_IMPL_H

#include <stdbool.h>

#include "data/dataset.h"
#include "data/loader.h"
#include "train/checkpoint.h"
#include "train/energy_clock.h"
#include "train/loss_scaler.h"
#include "train/mlperf_log.h"
#include "train/resume.h"
#include "train/run_lock.h"
#include "train/session.h"
#include "train/trainer.h"

/* Everything a run holds, released in one place. */
typedef struct dbk_trainer_run {
    dbk_dataset_info data;
    dbk_dataset  train, test;
    dbk_split_files *train_files;   /* streamed: the training images, decoded by loader */
    dbk_loader  *loader;
    dbk_split_files *test_files;    /* streamed: the validation images, decoded by eval_loader */
    dbk_loader  *eval_loader;
    dbk_backend *be;
    dbk_session *session;
    char         logs_path[4096], json_path[4096], ckpt_path[4096], entry_path[4096], mlperf_path[4096];
    char         base_path[4096], diff_path[4096];   /* --checkpoint-diff: base.ckpt, model.diff */
    dbk_mlperf_log mlperf;
    bool         mlperf_continued;  /* with opt->resume: mlperf.log of the run it continues loaded */
    char         started_at[32];
    dbk_run_lock lock;
    bool         folder_held;       /* the folder is this run's: locked (or this rank writes no files) */
    bool         folder_created;    /* and this run created it */
    dbk_checkpoint *resume_ckpt;    /* with opt->resume: resume.ckpt, until the state is restored */
    double       resume_clock;      /* with opt->resume: the saved clock */
    int          size_phase;        /* progressive resizing: the phase the session is built for */
    bool         resume_has_scaler; /* with opt->resume: resume.ckpt holds the loss scaler's state */
    dbk_loss_scaler resume_scaler;  /* then that state */
    dbk_run_record resume_record;   /* with opt->resume: what the folder's result.json records */
    char         resume_fingerprint[24]; /* and the data resume.ckpt was trained on ("" unknown) */
    dbk_energy_clock energy;        /* the energy on the clock */
} dbk_trainer_run;

/* Whether the ranks average their models every few steps (--local-steps) instead of
 * exchanging gradients every step. */
static inline bool dbk_trainer_averaging(const dbk_train_options *opt) { return opt->peers && opt->peers->averaging; }

/* trainer_setup.c. setup: everything before the clock; release: everything the run holds. */
dbk_status dbk_trainer_setup(dbk_trainer_run *r, const dbk_train_options *opt, dbk_train_report *rep);
void       dbk_trainer_release(dbk_trainer_run *r);
dbk_status dbk_trainer_create_loaders(dbk_trainer_run *r, const dbk_train_options *opt, const dbk_train_report *rep,
                                      int phase);
dbk_status dbk_trainer_create_session(dbk_trainer_run *r, const dbk_train_options *opt, dbk_train_report *rep);
dbk_status dbk_trainer_warm_up(dbk_trainer_run *r, const dbk_train_options *opt, dbk_train_report *rep, bool say);

/* trainer_phases.c: progressive resizing. */
dbk_status dbk_trainer_check_size_phases(const dbk_train_options *opt, const dbk_dataset_kind *kind);
dbk_status dbk_trainer_first_size_phase(dbk_trainer_run *r, const dbk_train_options *opt, const dbk_train_report *rep);
void       dbk_trainer_print_size_phase(const dbk_recipe *rc, int phase, int epoch0, const char *how);
dbk_status dbk_trainer_enter_size_phase(dbk_trainer_run *r, const dbk_train_options *opt, dbk_train_report *rep,
                                        int epoch0, double *clock);

/* trainer_folder.c: the run folder. open: its paths, created if needed and locked, then
 * resume.ckpt read (--resume) or the folder checked to hold no earlier run; close: the lock
 * released, or, for a fresh run that never started, discarded with the folder it created. */
dbk_status dbk_trainer_open_folder(dbk_trainer_run *r, const dbk_train_options *opt, dbk_train_report *rep);
void       dbk_trainer_close_folder(dbk_trainer_run *r, const dbk_train_options *opt, bool started);
dbk_status dbk_trainer_check_resumed_data(const dbk_trainer_run *r, const dbk_train_options *opt,
                                          const dbk_train_report *rep);
dbk_status dbk_trainer_restore(dbk_trainer_run *r, const dbk_train_options *opt, dbk_train_report *rep, double t0,
                               double *clock);
dbk_status dbk_trainer_save_resume(dbk_trainer_run *r, const dbk_train_options *opt, const dbk_train_report *rep,
                                   double clock);
dbk_status dbk_trainer_write_files(dbk_trainer_run *r, const dbk_train_options *opt, const dbk_train_report *rep);

#endif
