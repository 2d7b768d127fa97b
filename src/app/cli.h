/*
 * cli.h — helpers shared by the command files of src/app (cmd_bench.c, cmd_infer.c,
 * cmd_report.c, cmd_platforms.c, cmd_check.c): option matching, number parsing, the error and usage lines, and
 * device resolution. Exit codes are main.c's (README "Exit codes").
 */
#ifndef DBK_CLI_H
#define DBK_CLI_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"
#include "core/output.h"
#include "data/dataset.h"
#include "train/trainer.h"

enum { DBK_EXIT_OK = 0, DBK_EXIT_ERROR = 1, DBK_EXIT_USAGE = 2, DBK_EXIT_NOT_REACHED = 3, DBK_EXIT_DIVERGED = 4 };

typedef struct dbk_cli_args {
    int    argc, i;
    char **argv;
} dbk_cli_args;

/* "daybreak: error: WHAT: <last error>" on stderr; returns DBK_EXIT_ERROR. */
int dbk_cli_fail(const char *what);
/* "daybreak: error: CMD: <message> (see 'daybreak CMD --help')", one line on stderr; returns
 * DBK_EXIT_USAGE. */
int dbk_cli_usage_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Matches --name or --name=value at argv[i]; 1 on a match (value stored), 0 if another
 * option, -1 when the value is missing. */
int  dbk_cli_match(dbk_cli_args *a, const char *name, bool takes_value, const char **value);
bool dbk_cli_parse_long(const char *s, long min, long max, long *out);
bool dbk_cli_parse_u64(const char *s, uint64_t *out);
/* The largest --seed (and bench's last seed): 2^53 - 1, the largest integer every JSON reader
 * holds exactly, so result.json records the seed that ran. */
#define DBK_CLI_MAX_SEED 9007199254740991ULL
/* A seed 0..DBK_CLI_MAX_SEED. */
bool dbk_cli_parse_seed(const char *s, uint64_t *out);
bool dbk_cli_parse_double(const char *s, double min, double max, double *out);
/* "dawnbench" or "mlperf"; returns 0 on success, -1 otherwise. */
int  dbk_cli_parse_clock(const char *s, dbk_clock_mode *out);

/* Upper bound of --train-subset/--test-subset as parsed; the real bound is the dataset's split
 * size, checked by dbk_cli_open_dataset once the dataset is opened. */
#define DBK_CLI_MAX_SUBSET 2147483647L

/* Opens dataset kind `dataset` (a recipe's) from data_arg (--data) or $DAYBREAK_DATA, with the
 * quick check of its folder, and checks train_subset/test_subset (0: not given) against its
 * real split sizes. Returns an exit code: 1 for a data error ("daybreak: error: ..."), 2 with
 * one line naming the limit when a subset is larger than its split. On success the caller
 * releases out with dbk_dataset_info_deinit. */
int dbk_cli_open_dataset(const char *cmd, const char *dataset, const char *data_arg, long train_subset,
                         long test_subset, dbk_dataset_info *out);

/* Every output option of every command is checked here, before any work: the guard of
 * core/output.h with the dataset layouts of data/dataset.h, and the folders of
 * DBK_PLATFORMS_DIR and DBK_KERNEL_DIR added as inputs. spec holds the command's own inputs.
 * Prints one line and returns DBK_EXIT_USAGE for an empty path, DBK_EXIT_ERROR for a refusal;
 * DBK_EXIT_OK when path may be written. */
int dbk_cli_check_output(dbk_output_spec *spec, const char *path);

/* A run's --out folder (train, bench): dbk_cli_check_output with the data folder given (--data,
 * else $DAYBREAK_DATA) and the dataset's own folder as inputs. */
int dbk_cli_check_run_out(const char *out, const char *data_arg, const char *dataset_dir);

/* The exit code of a failed dbk_backend_resolve, its message printed: 2 for a malformed spec
 * (DBK_ERR_INVALID_ARG: "opencl:x", "opencl:-1"), 1 for an unknown backend or a missing device. */
int dbk_cli_backend_error(dbk_status st);

/* --backend/--device (or $DBK_BACKEND, or the default device). Returns an exit code. */
int dbk_cli_resolve_device(const char *backend, long device, dbk_backend_kind *kind, int *index);

/* The options `train` and `bench` share (README, "daybreak train"). */
typedef struct dbk_cli_train_args {
    const char    *recipe, *backend, *data, *out, *platform, *author, *author_email;
    dbk_clock_mode clock;
    dbk_precision  precision;
    long           device, epochs, batch, train_subset, test_subset;   /* -1 / 0 = not given */
    long           loader_threads;                                     /* 0 = online cores */
    long           image_size;                                         /* 0 = the recipe's */
    const char    *image_sizes;                                        /* NULL = the recipe's phases */
    long           loss_scale_interval;                                /* 0 = the default */
    double         target;                                             /* -1 = the recipe's */
    double         price, energy_price;                                 /* --price, --energy-price; 0 = the profile's */
    bool           all_epochs, quiet, no_progress, profile;
    dbk_mask_spec  mask;                                               /* --sparse-mask and its options */
    const char    *mask_option;                                        /* the first mask option given */
    unsigned       mask_given;                                         /* which were given (cli.c) */
    double         lr;                                                 /* --lr: the schedule's peak; 0 = the recipe's */
    bool           checkpoint_diff;                                    /* --checkpoint-diff */
    const char    *base;                                               /* --base FILE */
} dbk_cli_train_args;

void dbk_cli_train_args_init(dbk_cli_train_args *t);

/* Tries argv[a->i] as one of the shared options of command `cmd`. Returns true when it was
 * one; *exit_code is then DBK_EXIT_OK, or DBK_EXIT_USAGE after printing why its value is bad. */
bool dbk_cli_train_option(dbk_cli_args *a, const char *cmd, dbk_cli_train_args *t, int *exit_code);

/* Fills opt's recipe (with --epochs/--batch/--target applied), device, subsets, flags, clock,
 * platform and author from t (opt is zeroed first; data folder, seed and output stay to the
 * caller). Returns an exit code (errors printed). */
int dbk_cli_train_setup(const dbk_cli_train_args *t, dbk_train_options *opt);

/* The help lines of the sparse-mask and small-checkpoint options (train and bench). */
void dbk_cli_mask_help(void);
/* Signals (main() calls it first with NULL). SIGINT, SIGTERM and SIGHUP remove the temp files
 * being written (core/fileio.h dbk_file_remove_temps) and end the process as the signal would
 * have. With stop non-NULL (train, bench), the first of them only sets *stop, so the run stops
 * at its next step with a resumable checkpoint; a second one ends the process at once. */
void dbk_cli_catch_signals(volatile sig_atomic_t *stop);
/* "SIGINT", "SIGTERM", "SIGHUP" or "signal N". */
const char *dbk_cli_signal_name(int sig);

/* "YYYYmmdd-HHMMSS" of the current UTC time. */
void dbk_cli_utc_stamp(char *out, size_t cap);
/* argv joined by spaces, whole, never cut (result.json "command"): a new string the caller
 * frees with dbk_free; NULL when out of memory. */
char *dbk_cli_join(int argc, char **argv);

/* `daybreak devices`: the ICD files the OpenCL or Vulkan loader finds and whether each
 * driver library loads (icd_report.c); nothing for the CPU backend. */
void dbk_cli_print_icd(dbk_backend_kind kind);

/* The commands of this folder (main.c dispatches to them). */
int dbk_cmd_bench(dbk_cli_args *a);
int dbk_cmd_infer(dbk_cli_args *a);
int dbk_cmd_report(dbk_cli_args *a);
int dbk_cmd_platforms(dbk_cli_args *a);
int dbk_cmd_check(dbk_cli_args *a);
int dbk_cmd_pack_data(dbk_cli_args *a);
int dbk_cmd_tune(dbk_cli_args *a);
void dbk_help_bench(void);
void dbk_help_infer(void);
void dbk_help_report(void);
void dbk_help_platforms(void);
void dbk_help_check(void);
void dbk_help_pack_data(void);
void dbk_help_tune(void);

#endif
