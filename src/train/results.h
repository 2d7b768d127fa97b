/*
 * results.h — the files of a run: DAWNBench's logs.tsv and daybreak's result.json.
 *
 * logs.tsv: header "epoch\thours\ttop1Accuracy", then one row per epoch
 *   "{epoch}\t{hours:.8f}\t{accuracy:.2f}", hours cumulative on the clock (DAWNBench format).
 * result.json: see README "Result files" for every field.
 * Both are written atomically.
 */
#ifndef DBK_RESULTS_H
#define DBK_RESULTS_H

#include "train/trainer.h"

dbk_status dbk_results_write_logs_tsv(const char *path, const dbk_train_report *r);
dbk_status dbk_results_write_json(const char *path, const dbk_train_options *opt, const dbk_train_report *r,
                                  const char *started_at);

#endif
