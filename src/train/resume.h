/*
 * resume.h — the resume checkpoint of a run, DIR/resume.ckpt, written atomically after
 * preprocessing and after every epoch, and deleted when the run finishes.
 *
 * It is a daybreak checkpoint (train/checkpoint.h) holding the training state
 * (dbk_session_save_state: weights, batch-norm statistics, momentum, lookahead's averages) and
 * a metadata JSON object with everything else a run needs to go on exactly where it stopped:
 *   "resume": 1, "daybreak_version", "started_at", "arguments" (the train options as given, a
 *   list of strings; null when the caller recorded none), "backend", "device", "seed" (a
 *   decimal string: u64), "epochs_done",
 *   "clock_seconds" (the clock at the end of epoch epochs_done), "preprocess_seconds",
 *   "resumed" and "resume_seconds" (earlier resumes), "epochs_to_target",
 *   "seconds_to_target", "dataset_fingerprint" (trainer.h), and "epochs" (the per-epoch
 *   records, as in result.json); a
 *   distributed run adds "distributed" (src/dist: ranks, exchanges done, the exchange's
 *   counts) and, with error feedback, the tensor "distributed.residuals" (ranks, n); a run in
 *   mixed precision adds "loss_scaler": {"scale" S, "clean_steps" since S last changed,
 *   "skipped_steps", "growths"} (train/loss_scaler.h), so a resumed run goes on with the scale
 *   it had instead of starting again at 2^16.
 * Shuffling and augmentation are drawn from the seed and the epoch number alone, so the seed
 * and epochs_done are the whole random-number and data-order state.
 */
#ifndef DBK_RESUME_H
#define DBK_RESUME_H

#include "train/checkpoint.h"
#include "train/loss_scaler.h"
#include "train/run_report.h"

#define DBK_RESUME_FILE     "resume.ckpt"
#define DBK_RESUME_MAX_ARGS 64

/* What resume.ckpt says besides the tensors and the epoch records. */
typedef struct dbk_resume_header {
    char     daybreak_version[32];
    char     started_at[32];
    char     backend[16];
    int      device;
    uint64_t seed;
    int      epochs_done;
    double   clock_seconds;
    int      argc;                        /* -1: not recorded (a run of `daybreak bench`) */
    char    *argv[DBK_RESUME_MAX_ARGS];   /* owned; dbk_resume_header_deinit */
    char     dataset_fingerprint[24];     /* the run's data (trainer.h); "" when not recorded */
    bool     has_loss_scaler;             /* saved by a run in mixed precision */
    dbk_loss_scaler loss_scaler;          /* then its state (growth_interval not saved: 0) */
} dbk_resume_header;

/* What a distributed run adds (train/peers.h save_state): the metadata object
 * "distributed" (JSON text) and the tensor of every rank's residual (NULL: none). */
typedef struct dbk_resume_peers {
    const char            *meta_json;
    const dbk_ckpt_tensor *residuals;
} dbk_resume_peers;

/* Writes dir/resume.ckpt for the run after rep->epochs_run epochs, at clock seconds; peers
 * NULL for one process. */
dbk_status dbk_resume_save(dbk_session *s, const char *dir, const dbk_train_options *opt, const dbk_train_report *rep,
                           const char *started_at, double clock, const dbk_resume_peers *peers);

/* Reads dir/resume.ckpt: the header, and when rep is not NULL the epoch records and totals
 * (epochs_run, epochs[], epochs_to_target, seconds_to_target, preprocess_seconds, resumed,
 * resume_seconds). When ckpt is not NULL it receives the loaded checkpoint (for
 * dbk_session_load_state; the caller destroys it). DBK_ERR_NOT_FOUND says the folder has
 * nothing to resume; DBK_ERR_FORMAT names the file and the field. */
dbk_status dbk_resume_read(const char *dir, dbk_resume_header *h, dbk_train_report *rep, dbk_checkpoint **ckpt);
void       dbk_resume_header_deinit(dbk_resume_header *h);

/* What dir/result.json records of the run in the folder, to check resume.ckpt and the data
 * against it before anything is resumed. */
typedef struct dbk_run_record {
    bool    present;                      /* dir/result.json exists */
    char    status[32];                   /* its "status"; "none" without result.json */
    char    recipe[64], model[64];        /* "" when not recorded */
    char    dataset_fingerprint[24];      /* "" when not recorded */
    double  train_images, test_images;    /* -1 when not recorded */
} dbk_run_record;

/* Reads dir/result.json into out (present false, status "none" when there is none).
 * DBK_ERR_FORMAT when it is not JSON or lacks "status". */
dbk_status dbk_resume_read_record(const char *dir, dbk_run_record *out);

/* Deletes dir/resume.ckpt (a finished run has nothing to resume). */
void dbk_resume_remove(const char *dir);

#endif
