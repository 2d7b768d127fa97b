/*
 * trainer.h — one time-to-accuracy run: the epoch loop, the DAWNBench clock, evaluation,
 * the stop rule, and the run's files.
 *
 * The clock (DAWNBench rules): it runs over preprocessing (copying the dataset to the device
 * and initialising the model) and every training step, and stops for evaluation; the
 * device is synchronised before each timestamp. After every epoch the whole test set is
 * evaluated; the run stops at the first epoch whose test accuracy reaches the target
 * unless all_epochs is set. With clock = DBK_CLOCK_MLPERF evaluation is on the clock too.
 *
 * Files written to out_dir, each atomically (temporary file + rename) after every epoch so an
 * interrupted run leaves complete files: logs.tsv (DAWNBench format), dawnbench.json (the
 * DAWNBench training entry, train/results.h), mlperf.log (train/mlperf_log.h), result.json,
 * resume.ckpt (train/resume.h; deleted when the run finishes) and at the end model.ckpt
 * (train/checkpoint.h). The run holds the folder's lock (train/run_lock.h) from before anything
 * is read until it returns.
 *
 * Stopping: when *stop_signal becomes non-zero (a signal handler sets it) the run stops at the
 * next step boundary (in a distributed run every rank stops there, whichever rank got the
 * signal: the ranks agree on it at each boundary); the epoch in progress is dropped, the files say "interrupted" and
 * resume.ckpt holds the last completed epoch. With resume set the run goes on from out_dir's
 * resume.ckpt: the same numbers as an uninterrupted run, the clock going on from the saved
 * clock plus the time to restore the state (the time between is not counted).
 */
#ifndef DBK_TRAINER_H
#define DBK_TRAINER_H

#include "train/run_report.h"

/* Runs the whole training. Returns DBK_OK when the run completed (reached or not: see
 * report->status) or was interrupted (DBK_RUN_INTERRUPTED), DBK_ERR_DIVERGED on NaN, or the
 * error that stopped it. Files already written stay valid either way. */
dbk_status dbk_train_run(const dbk_train_options *opt, dbk_train_report *report);

#endif
