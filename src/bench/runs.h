/*
 * runs.h — result folders read back (result.json of `daybreak train`/`bench`), grouped by
 * what makes runs comparable, and summarised: the input of `daybreak bench`'s summary and of
 * `daybreak report`.
 *
 * A group is the runs with the same backend, device name, driver, recipe, clock, target,
 * train/test image counts and profiling (--profile slows every step): only those are
 * repetitions of one measurement. Within a group the
 * time, epochs and cost to the target are summarised with bench/stats.h (a run that missed
 * the target counts as not converged, never dropped), and so is every threshold of the sweep
 * (90..94% and the target). The fixed-schedule accuracy and time (airbench's metric) are
 * summarised over the runs that completed their schedule.
 */
#ifndef DBK_RUNS_H
#define DBK_RUNS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "bench/stats.h"

typedef struct dbk_run_op {
    char   label[48], op[24];
    char   algorithm[40];           /* "" for the op's plain algorithm, else e.g. "winograd F(2x2,3x3)" */
    double flops, bytes, seconds;   /* per call; seconds = mean per profiled step */
} dbk_run_op;

typedef struct dbk_run {
    char     dir[1024];              /* as given, made valid UTF-8 (for printing) */
    char     path[1024];             /* as given, byte for byte (for reading it again) */
    char     version[32], status[16], clock_mode[16], started_at[32];
    char     recipe[64], model[64];
    char     backend[16], device[256], driver[128];
    char     platform_id[64], platform_name[160], instance[160];
    double   price_per_hour, peak_gflops, bandwidth_gbs;   /* 0 = unknown */
    char     price_source[160];      /* where price_per_hour comes from ("profile ID", "--price", a report's --price) */
    bool     energy_measured;
    char     energy_source[8];       /* "nvml", "hwmon", "rapl" when measured */
    char     energy_note[640];       /* what the reading covers when measured, else why it was not */
    double   joules_to_target;       /* NAN when not measured or not reached */
    double   energy_price_per_kwh;   /* 0 = unknown */
    char     energy_price_source[160];
    bool     conforms;               /* dawnbench.json is a DAWNBench entry */
    char     nonconforming[400];     /* else its reasons, "; "-joined ("" when the folder has no dawnbench.json) */
    char     bandwidth_source[256];  /* platform.mem_bandwidth_source; "estimate" when a run predates it */
    uint64_t seed;
    int      train_images, test_images;
    bool     subset;                 /* fewer images than the dataset holds (--train/--test-subset) */
    double   target;
    int      epochs_to_target;       /* 0 = not reached */
    double   seconds_to_target;      /* HUGE_VAL when not reached */
    double   schedule_accuracy;      /* fixed_schedule.test_accuracy; NAN when the schedule did not complete */
    double   schedule_seconds;       /* fixed_schedule.seconds; NAN likewise */
    double   build_seconds;          /* builds.total_seconds: programs built off the clock; NAN
                                        for a run that predates the record */
    double   achieved_gflops;
    double   utilisation;            /* fraction of peak FP32, NAN when the peak is unknown */
    int      epochs;
    double  *accuracy, *clock;       /* [epochs]: test accuracy %, cumulative clock seconds */
    int      ranks;                  /* 0: one process; else the ranks of a distributed run */
    char     exchange[80];           /* a distributed run's "compress/scope[+ef]" or "average every M",
                                        then ", mask SPEC[ fixed]" with a sparse mask; "" otherwise */
    int      op_count;               /* 0 unless the run was profiled */
    double   profiled_step_seconds;  /* wall time of a profiled step (ops plus the time outside them) */
    dbk_run_op *ops;
} dbk_run;

typedef struct dbk_run_set {
    dbk_run *runs;
    int      count;
} dbk_run_set;

/* Reads DIR/result.json. DBK_ERR_NOT_FOUND / DBK_ERR_FORMAT name the file and the field. A
 * status "running" whose folder lock (train/run_lock.h) no process holds becomes "killed". */
dbk_status dbk_run_load(const char *dir, dbk_run *out);
void       dbk_run_deinit(dbk_run *r);

/* Whether the run is still running, was killed or was interrupted: such runs are listed but
 * belong to no group (they are not counted as not converged); dbk_run_set_add warns about
 * each with the command that continues it. */
bool       dbk_run_is_unfinished(const dbk_run *r);

/* Adds DIR if it holds result.json, else every immediate subfolder that holds one (sorted by
 * name). DBK_ERR_NOT_FOUND when DIR does not exist or holds no result. */
dbk_status dbk_run_set_add(dbk_run_set *set, const char *dir);
void       dbk_run_set_deinit(dbk_run_set *set);

#define DBK_MAX_THRESHOLDS 6

typedef struct dbk_run_group {
    int       *members;              /* indices into the set, in set order */
    int        count;
    const dbk_run *first;            /* a representative run (device, recipe, ...) */
    dbk_stats  seconds;              /* clock seconds to the target */
    dbk_stats  epochs;               /* epochs to the target */
    dbk_stats  cost;                 /* USD to the target; only meaningful when priced */
    dbk_stats  schedule_accuracy;    /* fixed-schedule accuracy over the runs that completed it */
    dbk_stats  schedule_seconds;     /* and their clock seconds (n = those runs; 0 when none) */
    bool       priced;
    bool       energy_measured;      /* every run's energy was measured (else no energy figures) */
    dbk_stats  joules;               /* J to the target, when energy_measured */
    bool       energy_priced;        /* and a price per kWh is known */
    dbk_stats  energy_cost;          /* USD of energy to the target, when energy_priced */
    double     utilisation_median;   /* NAN when unknown */
    double     achieved_gflops_median;
    int        nthresholds;
    double     thresholds[DBK_MAX_THRESHOLDS];
    dbk_stats  threshold_seconds[DBK_MAX_THRESHOLDS];
    dbk_stats  threshold_epochs[DBK_MAX_THRESHOLDS];
} dbk_run_group;

/* A report's prices over the runs' own: `--price DEVICE=USD_PER_HOUR` (DEVICE: a profile id, or
 * text found in the device name, ignoring case; the longest match wins) and `--energy-price
 * USD_PER_KWH` (every run; 0 = none). Each run's price source then names the option.
 * DBK_ERR_INVALID_ARG names a --price whose DEVICE matches no run, or a malformed one. */
dbk_status dbk_run_set_apply_prices(dbk_run_set *set, const char *const *prices, int nprices, double energy_price);

/* Groups and summarises the finished runs of the set (groups in order of first appearance);
 * DBK_ERR_INVALID_ARG when none is finished. */
dbk_status dbk_run_groups_build(const dbk_run_set *set, dbk_run_group **groups, int *count);
void       dbk_run_groups_destroy(dbk_run_group *groups, int count);

/* What the group's energy reading covers when every run measured it, else why a run did not. */
const char *dbk_run_group_energy_note(const dbk_run_set *set, const dbk_run_group *g);

/* "backend · device · recipe" label of a group (for tables and chart legends). */
void dbk_run_group_label(const dbk_run_group *g, char *out, size_t cap);

/* The summary as a printed table (one line per run, then one per group). */
void dbk_runs_print_summary(FILE *out, const dbk_run_set *set, const dbk_run_group *groups, int count);
/* The summary as JSON (docs/benchmarking.md "daybreak bench"), written atomically. */
dbk_status dbk_runs_write_summary_json(const char *path, const dbk_run_set *set, const dbk_run_group *groups,
                                       int count);

#endif
