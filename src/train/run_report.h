/*
 * run_report.h — the types a training run is given and reports: its options
 * (dbk_train_options), the per-epoch records and the whole report (dbk_train_report), with the
 * names of their enums. train/trainer.h runs a training with them; the run's files
 * (train/results.h, train/resume.h, train/mlperf_log.h, train/energy_clock.h) read and fill
 * them without depending on the trainer.
 */
#ifndef DBK_RUN_REPORT_H
#define DBK_RUN_REPORT_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"
#include "train/peers.h"
#include "train/platform.h"
#include "train/recipe.h"
#include "train/session.h"
#include "train/sparse_mask.h"

#define DBK_MAX_EPOCHS 1000
#define DBK_MAX_TIMED_OPS 512

/* What is on the clock. DAWNBench (default): preprocessing and training, evaluation off.
 * MLPerf: evaluation on the clock too. */
typedef enum dbk_clock_mode {
    DBK_CLOCK_DAWNBENCH,
    DBK_CLOCK_MLPERF,
} dbk_clock_mode;

const char *dbk_clock_mode_name(dbk_clock_mode m);   /* "dawnbench", "mlperf" */

/* --precision: fp32; fp16 (mixed precision, docs/precision.md: refused where the device lacks
 * the fp16 path); auto (fp16 where the device has it, else fp32, saying why). */
typedef enum dbk_precision {
    DBK_PRECISION_FP32,
    DBK_PRECISION_FP16,
    DBK_PRECISION_AUTO,
} dbk_precision;

const char *dbk_precision_name(dbk_precision p);                 /* "fp32", "fp16", "auto" */
/* Parses "fp32", "fp16" or "auto"; false for anything else. */
bool        dbk_precision_parse(const char *s, dbk_precision *out);

typedef struct dbk_train_options {
    dbk_recipe       recipe;        /* a copy, with command-line overrides applied */
    dbk_backend_kind backend;
    int              device;
    const char      *data_dir;      /* the recipe's dataset's own folder (dbk_dataset_resolve) */
    uint64_t         seed;
    const char      *out_dir;
    bool             all_epochs;    /* keep training after the target is reached */
    int32_t          train_limit;   /* use only the first N training images (0 = all) */
    int32_t          test_limit;    /* evaluate on the first N test images (0 = all) */
    int              loader_threads;/* streamed datasets: decode threads (0 = online cores) */
    bool             progress;      /* live progress bar (stdout is a terminal) */
    bool             quiet;         /* no per-epoch console lines */
    bool             profile;       /* time every op of the training steps and print a table */
    dbk_precision    precision;     /* DBK_PRECISION_FP32 unless set */
    int              loss_scale_interval; /* fp16: clean steps before S doubles (0: DBK_LOSS_SCALE_INTERVAL) */
    const char      *command_line;  /* recorded in result.json */
    dbk_clock_mode   clock;         /* DBK_CLOCK_DAWNBENCH unless set */
    const char      *platform;      /* profile id (--platform), NULL = match the device name */
    const char      *author;        /* DAWNBench entry "author" (NULL = "daybreak") */
    const char      *author_email;  /* DAWNBench entry "authorEmail" (NULL = "") */
    bool             resume;        /* go on from out_dir/resume.ckpt (the same options) */
    const volatile sig_atomic_t *stop_signal; /* NULL, or set to a signal number to stop */
    int              arg_count;     /* the train arguments, recorded in resume.ckpt (args NULL:
                                       not recorded, the run cannot be resumed) */
    char *const     *args;
    const dbk_peers *peers;         /* data-parallel job (train/peers.h); NULL = one process.
                                       recipe.batch is then each rank's batch */
    dbk_mask_spec    mask;          /* --sparse-mask and its options (zeroed: every parameter
                                       trains; docs/sparse-masks.md) */
    bool             checkpoint_diff; /* --checkpoint-diff: model.diff, the trained model as its
                                       difference from the base (train/ckpt_diff.h) */
    const char      *base;          /* --base FILE: start from that model.ckpt (the difference's
                                       base); NULL: the run's initial model, saved as base.ckpt */
    double           price_per_hour;       /* --price: USD per hour over the profile's (0 = the profile's) */
    double           energy_price_per_kwh; /* --energy-price: USD per kWh over the profile's (0 = the profile's) */
    const char      *energy_root;   /* energy readers' sysfs root (DBK_ENERGY_ROOT, a test hook); NULL = "/" */
    const char      *nvml_library;  /* NVML's library (DBK_NVML_LIBRARY, a test hook); NULL = libnvidia-ml.so.1 */
} dbk_train_options;

typedef struct dbk_epoch_record {
    int    epoch;                   /* 1-based */
    double train_loss;              /* mean over the epoch's images */
    double train_accuracy;          /* percent, on augmented training images */
    double test_loss;
    double test_accuracy;           /* percent */
    double test_top5;               /* percent; evaluated for streamed datasets and top-5 targets */
    double loader_wait_seconds;     /* streamed: training time spent waiting for decoded batches */
    double decode_seconds;          /* streamed: decode-thread time, all threads (training and evaluation) */
    double eval_wait_seconds;       /* streamed: evaluation time spent waiting for decoded batches */
    double epoch_seconds;           /* on the clock */
    double clock_seconds;           /* cumulative clock at the end of the epoch */
    double eval_seconds;            /* off the clock */
    double images_per_second;       /* training images / epoch_seconds */
    double flops;                   /* model FLOPs of the epoch's training steps (a step after a
                                       group stopped computes less: dbk_session_steps_flops) */
    double clock_joules;            /* energy on the clock up to the epoch's end (J); NAN when not measured */
    float  lr_end;                  /* learning rate at the last step */
} dbk_epoch_record;

typedef enum dbk_run_status {
    DBK_RUN_RUNNING,                /* epochs are still running (files written mid-run) */
    DBK_RUN_REACHED,                /* the target was reached */
    DBK_RUN_NOT_REACHED,            /* every epoch ran, the target was not reached */
    DBK_RUN_DIVERGED,               /* the loss became NaN or infinite */
    DBK_RUN_FAILED,                 /* an error stopped the run */
    DBK_RUN_INTERRUPTED,            /* SIGINT or SIGTERM stopped it; --resume goes on */
} dbk_run_status;

/* A fixed-budget recipe's final evaluation (recipe.fixed_budget): on the clock, with the
 * recipe's test-time augmentation. It becomes the last epoch's test accuracy and loss, and its
 * time is added to that epoch's clock, so logs.tsv and the DAWNBench entry carry the run's
 * result; the last epoch's plain (per-epoch, off-clock) evaluation is kept here. */
typedef struct dbk_final_eval {
    bool   done;
    int    tta_level;
    double seconds;                 /* on the clock */
    double accuracy, loss;          /* percent; mean loss */
    double plain_accuracy;          /* the last epoch's diagnostic evaluation, without TTA */
} dbk_final_eval;

/* The fixed-schedule result, airbench's metric next to DAWNBench's time to target: the test
 * accuracy after the recipe's whole schedule and the clock at its end (a fixed-budget recipe's
 * final evaluation included). completed is false when the run ended before the schedule did
 * (stopped at the target without all_epochs, diverged, failed, interrupted). */
typedef struct dbk_schedule_result {
    bool   completed;
    int    epochs;                  /* the schedule's epochs, the last one possibly partial */
    long   steps;                   /* its training steps */
    double accuracy;                /* percent: the final evaluation's, else the last epoch's */
    double top5;                    /* percent, when top-5 is evaluated */
    double seconds;                 /* the clock at the schedule's end */
} dbk_schedule_result;
/* Time spent off the clock building programs (DESIGN.md decision 8): a resumed run's are
 * this process's, not the interrupted one's. */
typedef struct dbk_build_times {
    double backend_seconds;   /* creating the backend: the OpenCL program compiled or read from
                                 the kernel cache */
    double session_seconds;   /* planning, allocating and recording the session: Vulkan's
                                 pipelines, each op's preparation */
    double warmup_seconds;    /* every program run once (dbk_session_warm_up): the drivers' lazy
                                 compilation; with progressive resizing, each size's session */
} dbk_build_times;

/* The energy of the run on the clock (energy/energy.h reads it; train/energy_clock.h adds up
 * the intervals the clock runs): measured, or why not. */
typedef struct dbk_energy_record {
    bool   measured;
    char   reason[512];             /* why not measured ("" when measured) */
    char   source[8];               /* "nvml", "hwmon", "rapl" */
    char   scope[640];              /* what the reading covers, from where */
    bool   counter;                 /* an energy counter; false: power sampled and integrated */
    double interval;                /* seconds between the sampling thread's samples */
    long   samples;
    double joules;                  /* on the clock so far */
} dbk_energy_record;

typedef struct dbk_train_report {
    dbk_run_status   status;
    int              epochs_run;
    int              epochs_to_target;     /* 0 when not reached */
    double           seconds_to_target;    /* clock seconds, 0 when not reached */
    double           preprocess_seconds;
    dbk_final_eval   final_eval;
    dbk_schedule_result schedule;          /* airbench's metric (see dbk_schedule_result) */
    dbk_epoch_record epochs[DBK_MAX_EPOCHS];
    dbk_device_info  device;
    size_t           param_count;
    dbk_platform_info platform;            /* the hardware profile used for cost and peak */
    double           step_flops;           /* FLOPs of one training step */
    int              steps_per_epoch;
    int32_t          train_images;         /* training images used (after train_limit) */
    int32_t          test_images;          /* test images evaluated (after test_limit) */
    int32_t          train_split_images;   /* the dataset's whole training split */
    int32_t          test_split_images;    /* and test split */
    bool             subset;               /* fewer than the dataset's whole splits */
    bool             top5;                 /* test top-5 is evaluated (streamed dataset or top-5 target) */
    bool             streamed;             /* training batches decoded on host threads */
    int              loader_threads;       /* their number (streamed) */
    long             profiled_steps;       /* > 0 only with options.profile */
    double           profiled_step_seconds;
    int              op_count;             /* ops[] filled only with options.profile */
    dbk_op_times   ops[DBK_MAX_TIMED_OPS];
    int              resumed;              /* times the run was resumed (--resume) */
    double           resume_seconds;       /* on the clock: restoring the state, all resumes */
    int              stop_signal;          /* the signal that interrupted the run, 0 if none */
    dbk_peers_summary peers;               /* ranks 0: one process */
    bool             fp16;                 /* trained in mixed precision (options.precision resolved) */
    char             precision_note[224];  /* auto that fell back to fp32: why; else "" */
    long             skipped_steps;        /* fp16: steps skipped for an inf/NaN gradient */
    double           loss_scale;           /* fp16: the dynamic loss scale at the end */
    uint64_t         activation_bytes;     /* the memory plan's activation buffers, all together */
    dbk_step_costs   step_costs;           /* launches, syncs, host time, bytes per training step
                                              (of the session of the last epoch run) */
    dbk_mask_report  mask;                 /* the sparse mask (mask.on false without one) */
    bool             diff_written;         /* model.diff was written (--checkpoint-diff) */
    dbk_diff_summary diff;                 /* its counts and bytes */
    double           model_ckpt_bytes;     /* model.ckpt's bytes, beside the difference's */
    char             diff_base[4096];      /* the base it is against */
    char             end_reason[512];      /* status failed or diverged: the one-line error that ended it */
    char             dataset_fingerprint[24]; /* the data trained and evaluated on: 16 hex digits of
                                            * dbk_dataset_fingerprint / dbk_split_files_fingerprint */
    dbk_build_times  builds;               /* off the clock */
    dbk_energy_record energy;
} dbk_train_report;

const char *dbk_run_status_name(dbk_run_status s);     /* "reached", "not_reached", ... */

#endif
