/*
 * results.h — the files of a run: DAWNBench's logs.tsv and daybreak's result.json.
 *
 * logs.tsv: header "epoch\thours\ttop1Accuracy", then one row per epoch
 *   "{epoch}\t{hours:.8f}\t{accuracy:.2f}", hours cumulative on the clock (DAWNBench format).
 *   A subset run's log starts with one marker line "# subset run: ..." before the header, so
 *   DAWNBench's checks (which read the first line as the header) reject it.
 * dawnbench.json: the DAWNBench training entry (author, authorEmail, framework, model,
 *   hardware, costPerHour (absent when the profile has no price), timestamp "YYYY-MM-DD",
 *   logFilename "logs.tsv", misc with daybreak's own fields). Only a conforming run
 *   (dbk_results_conformance) carries DAWNBench's "version": "v1.0"; any other has
 *   "conforms": false and "nonconforming_reasons" instead.
 * result.json: see docs/formats.md for every field.
 * All are written atomically, as valid UTF-8.
 */
#ifndef DBK_RESULTS_H
#define DBK_RESULTS_H

#include <stdio.h>

#include "train/run_report.h"

/* Whether a run is a DAWNBench entry: the whole training and test sets of a DAWNBench dataset
 * (CIFAR-10: 50,000 and 10,000 images), the benchmark's accuracy threshold reached in logs.tsv
 * (best top-1 >= 94.00% for CIFAR-10, whatever --target was), and the dawnbench clock. */
#define DBK_RESULTS_MAX_REASONS 4
typedef struct dbk_conformance {
    bool conforms;
    int  reason_count;
    char reasons[DBK_RESULTS_MAX_REASONS][192];   /* one sentence each, e.g. "trained on 5000 of ..." */
} dbk_conformance;

void dbk_results_conformance(const dbk_train_options *opt, const dbk_train_report *r, dbk_conformance *c);
/* Prints, for a nonconforming run, the one line "dawnbench.json is not a DAWNBench entry:
 * REASON; REASON"; nothing for a conforming one. */
void dbk_results_print_conformance(FILE *out, const dbk_train_options *opt, const dbk_train_report *r);

/* Whether an inference entry conforms: DAWNBench times inference only for a model that reaches
 * the benchmark's training threshold on the whole test set (CIFAR-10: 94.00% top-1 on all
 * 10,000 test images), compared in hundredths as printed. images: the test images classified,
 * of split_images; accuracy: top-1 in percent. */
void dbk_results_inference_conformance(const char *dataset, int images, int split_images, double accuracy,
                                       dbk_conformance *c);
/* Adds to an entry being built (a cJSON object) "version": "v1.0" when c conforms, otherwise
 * "conforms": false and "nonconforming_reasons". */
void dbk_results_add_conformance(void *entry, const dbk_conformance *c);
/* Prints "FILE is not a DAWNBench entry: REASON; REASON" for a nonconforming c; nothing else. */
void dbk_conformance_print(FILE *out, const char *file, const dbk_conformance *c);

/* A percentage in hundredths, exactly as logs.tsv prints it ("%.2f"): 90.3 -> 9030. Targets
 * and accuracies are compared in these units, so an accuracy logged as 90.30 reaches a
 * target of 90.3 whatever the binary rounding of either. */
long dbk_results_hundredths(double percent);

/* The best test accuracy over the epochs run (0 when none). */
double dbk_results_best_accuracy(const dbk_train_report *r);
/* The best per-epoch test top-5 accuracy (0 when top-5 was not evaluated). */
double dbk_results_best_top5(const dbk_train_report *r);

/* Why a run has no fixed-schedule result (r->schedule.completed false), one clause for the
 * console and result.json: "the run stopped at its target after epoch 5 of 24 (--all-epochs
 * trains the whole schedule)", "the run was interrupted after epoch 2 of 10", ...; "" when
 * the schedule completed. */
void dbk_results_schedule_note(const dbk_train_report *r, char *out, size_t cap);

dbk_status dbk_results_write_logs_tsv(const char *path, const dbk_train_report *r);
/* The subset marker line of logs.tsv (without its newline), or "" for a full run. */
void dbk_results_subset_marker(const dbk_train_report *r, char *out, size_t cap);
/* A float as the shortest decimal that reads back as the same float, widened to double: JSON
 * then says 0.9 for a recipe's 0.9f, not its binary value 0.899999976158142. */
double dbk_results_float_decimal(float v);

/* An integer (a seed) as a JSON number of its exact digits: cJSON prints numbers with 15
 * significant digits only, which would round a seed above 10^15. */
struct cJSON *dbk_results_u64_json(uint64_t v);

/* results_peers.c: adds result.json's "distributed" object (a cJSON object root) for a
 * distributed run (report->peers.ranks > 0); nothing otherwise. */
void dbk_results_add_distributed(void *json_root, const dbk_train_options *opt, const dbk_train_report *r);
/* results_mask.c: adds "sparse_mask" (a run with a sparse mask) and "checkpoint_diff" (one that
 * wrote model.diff); nothing otherwise. */
void dbk_results_add_sparse(void *json_root, const dbk_train_options *opt, const dbk_train_report *r);
#define DBK_JOULES_PER_KWH 3.6e6

/* results_energy.c: result.json's "energy" object (a cJSON object root); the joules on the clock
 * at the epoch that reached the target (NAN when not reached or not measured); the energy
 * record resume.ckpt carries (add to / read from its metadata object). */
void   dbk_results_add_energy(void *json_root, const dbk_train_report *r);
double dbk_results_joules_to_target(const dbk_train_report *r);
void   dbk_results_add_energy_state(void *json_root, const dbk_train_report *r);
void   dbk_results_read_energy_state(const void *json_root, dbk_train_report *r);
/* One console line: the energy to the target (or on the clock) and its source, or why none. */
void   dbk_results_print_energy(FILE *out, const dbk_train_report *r);
dbk_status dbk_results_write_json(const char *path, const dbk_train_options *opt, const dbk_train_report *r,
                                  const char *started_at);

dbk_status dbk_results_write_dawnbench_entry(const char *path, const dbk_train_options *opt, const dbk_train_report *r,
                                             const char *started_at);

/* "DEVICE (BACKEND, DRIVER)" plus " / PROVIDER INSTANCE" when the profile names one: the
 * DAWNBench "hardware" string. */
void dbk_results_hardware_string(const char *backend, const dbk_device_info *dev, const dbk_platform_info *pl,
                                 char *out, size_t cap);

/* One epoch record as result.json and resume.ckpt write it (a new cJSON object). */
struct cJSON *dbk_results_epoch_json(const dbk_epoch_record *e);
/* Writes a cJSON tree (pretty-printed, newline-terminated) atomically, invalid UTF-8 in its
 * strings replaced by U+FFFD; deletes root. */
dbk_status dbk_results_write_cjson(const char *path, void *root);
/* Reads DIR/result.json into *root (a cJSON object the caller deletes). DBK_ERR_NOT_FOUND
 * "DIR: no result.json (not a daybreak result folder)" when there is none, DBK_ERR_FORMAT
 * when it is not a JSON object, or the reader's error. */
dbk_status dbk_results_read_json(const char *dir, struct cJSON **root);

#endif
