/*
 * mlperf_log.h — the run's MLPerf-style log, mlperf.log in the run folder: one line per event,
 *
 *   :::MLLOG {"namespace": "", "time_ms": T, "event_type": E, "key": K, "value": V, "metadata": M}
 *
 * as the mlperf-logging package's mllog writes them (keys in that order; time_ms is Unix time
 * in milliseconds; E is INTERVAL_START, INTERVAL_END or POINT_IN_TIME; M an object). Keys and
 * their order, from the package's training rules:
 *   cache_clear, init_start, submission_{benchmark,org,poc_email,division,status,platform},
 *   seed, global_batch_size, gradient_accumulation_steps, opt_name, opt_base_learning_rate,
 *   opt_weight_decay, train_samples, eval_samples, init_stop, run_start; per epoch
 *   epoch_start/epoch_stop and eval_start/eval_stop {"epoch_num": N}, eval_accuracy (a fraction
 *   of 1) {"epoch_num": N}; last run_stop {"status": "success"|"aborted"}.
 * Events are kept in memory and the whole file is rewritten atomically with the run's other
 * files, so a killed run leaves a log of what happened, without run_stop (a run stopped by
 * SIGINT/SIGTERM ends it with run_stop "aborted"; --resume carries the log on). Strings are
 * written as valid UTF-8 (core/utf8.h).
 */
#ifndef DBK_MLPERF_LOG_H
#define DBK_MLPERF_LOG_H

#include <stdbool.h>

#include "core/fileio.h"
#include "train/run_report.h"

typedef struct dbk_mlperf_log {
    dbk_strbuf lines;
} dbk_mlperf_log;

typedef enum dbk_mlperf_event {
    DBK_MLPERF_START,         /* INTERVAL_START */
    DBK_MLPERF_END,           /* INTERVAL_END */
    DBK_MLPERF_POINT,         /* POINT_IN_TIME */
} dbk_mlperf_event;

void dbk_mlperf_log_init(dbk_mlperf_log *log);
void dbk_mlperf_log_deinit(dbk_mlperf_log *log);

/* cache_clear, init_start, then the submission and hyper-parameter keys of the run (train and
 * eval samples from report). */
void dbk_mlperf_log_init_start(dbk_mlperf_log *log, const dbk_train_options *opt, const dbk_train_report *report);

/* One event now. epoch_num < 1: metadata {}; otherwise {"epoch_num": epoch_num}. */
void dbk_mlperf_log_event(dbk_mlperf_log *log, dbk_mlperf_event type, const char *key, int epoch_num);

/* eval_accuracy of an epoch, percent in, fraction of 1 out. */
void dbk_mlperf_log_accuracy(dbk_mlperf_log *log, int epoch_num, double percent);

/* run_stop with status "success" when the target was reached, else "aborted". */
void dbk_mlperf_log_run_stop(dbk_mlperf_log *log, bool reached);

/* A resumed run's log: the lines of path (mlperf.log of the run it continues) for the run up to
 * the end of epoch epochs_done, without run_stop and without the events of a dropped later
 * epoch, so the resumed run appends to one log. A missing file leaves the log empty
 * (dbk_mlperf_log_is_empty); a line that is not an mllog line is DBK_ERR_FORMAT. */
dbk_status dbk_mlperf_log_load(dbk_mlperf_log *log, const char *path, int epochs_done);

bool dbk_mlperf_log_is_empty(const dbk_mlperf_log *log);

/* Writes the events so far to path atomically. */
dbk_status dbk_mlperf_log_write(const dbk_mlperf_log *log, const char *path);

#endif
