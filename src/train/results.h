/*
 * results.h — the files of a run: DAWNBench's logs.tsv and daybreak's result.json.
 *
 * logs.tsv: header "epoch\thours\ttop1Accuracy", then one row per epoch
 *   "{epoch}\t{hours:.8f}\t{accuracy:.2f}", hours cumulative on the clock (DAWNBench format).
 * dawnbench.json: the DAWNBench training entry (version "v1.0", author, authorEmail, framework,
 *   model, hardware, costPerHour (null when the profile has no price), timestamp "YYYY-MM-DD",
 *   logFilename "logs.tsv", misc with daybreak's own fields), as DAWNBench's submission
 *   checks read it.
 * result.json: see README "Result files" for every field.
 * All are written atomically.
 */
#ifndef DBK_RESULTS_H
#define DBK_RESULTS_H

#include "train/trainer.h"

dbk_status dbk_results_write_logs_tsv(const char *path, const dbk_train_report *r);
dbk_status dbk_results_write_json(const char *path, const dbk_train_options *opt, const dbk_train_report *r,
                                  const char *started_at);

dbk_status dbk_results_write_dawnbench_entry(const char *path, const dbk_train_options *opt, const dbk_train_report *r,
                                             const char *started_at);

/* "DEVICE (BACKEND, DRIVER)" plus " / PROVIDER INSTANCE" when the profile names one: the
 * DAWNBench "hardware" string. */
void dbk_results_hardware_string(const char *backend, const dbk_device_info *dev, const dbk_platform_info *pl,
                                 char *out, size_t cap);

/* Writes a cJSON tree (pretty-printed, newline-terminated) atomically; deletes root. */
dbk_status dbk_results_write_cjson(const char *path, void *root);

#endif
