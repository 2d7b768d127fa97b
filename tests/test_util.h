/*
 * test_util.h — the small test harness every test_*.c uses.
 *
 * A test executable runs its cases with DBK_RUN(case_fn); each case returns 0 on success and
 * reports failures through DBK_CHECK*, which print file:line and the values. main() returns
 * dbk_test_finish(): 1 if any check failed, 0 otherwise; 77 (skipped) comes only from
 * dbk_test_skip_or_fail_in_ci, which under CI=true fails instead. The last
 * line printed is "N passed, N failed" so a reader (and CI) sees the count.
 */
#ifndef DBK_TEST_UTIL_H
#define DBK_TEST_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "backend/backend.h"
#include "data/cifar10.h"
#include "train/session.h"

extern int dbk_test_failed_checks;

#define DBK_CHECK(cond)                                                             \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "  FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);       \
            dbk_test_failed_checks++;                                               \
            return 1;                                                               \
        }                                                                           \
    } while (0)

#define DBK_CHECK_MSG(cond, ...)                                                    \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "  FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);       \
            fprintf(stderr, __VA_ARGS__);                                           \
            fprintf(stderr, "\n");                                                  \
            dbk_test_failed_checks++;                                               \
            return 1;                                                               \
        }                                                                           \
    } while (0)

/* Checks a dbk_status expression is DBK_OK, printing dbk_last_error() otherwise. */
#define DBK_CHECK_OK(expr)                                                          \
    do {                                                                            \
        dbk_status s_ = (expr);                                                     \
        if (s_ != DBK_OK) {                                                         \
            fprintf(stderr, "  FAIL %s:%d: %s returned %s: %s\n", __FILE__, __LINE__, \
                    #expr, dbk_status_str(s_), dbk_last_error());                   \
            dbk_test_failed_checks++;                                               \
            return 1;                                                               \
        }                                                                           \
    } while (0)

#define DBK_RUN(fn) dbk_test_run(#fn, fn)

void dbk_test_run(const char *name, int (*fn)(void));
int  dbk_test_finish(void);                /* exit code for main */

/* True when the environment variable CI is "true": there a missing dataset, device or tool is
 * a failure, never a skip (CI must run every test). */
bool dbk_test_in_ci(void);

/* For a test that cannot run without something that may be absent (a device, the dataset, a
 * tool): prints "skipped: reason" and returns 77, except under CI=true, where it prints the
 * reason as an error and returns 1. */
int dbk_test_skip_or_fail_in_ci(const char *reason);

/* For a test that runs its other cases without what is missing: prints "skipping <what>:
 * reason", and under CI=true counts a failed case instead (so dbk_test_finish returns 1). */
void dbk_test_note_missing(const char *what, const char *reason);

/* Resolves a backend spec ("cpu", "opencl", "vulkan:1") for a device test. Returns 0 and
 * fills kind/index when the device exists. Otherwise returns the exit code main should
 * return: dbk_test_skip_or_fail_in_ci when the backend is known but not compiled in or has
 * no such device, 2 (usage error) for an unknown backend name or a malformed spec. */
int dbk_test_resolve_backend(const char *spec, dbk_backend_kind *kind, int *index);

/* Normalised mean squared error sum((a-b)^2) / sum(a^2) (a is the reference). */
double dbk_test_nmse(const float *ref, const float *got, size_t n);
double dbk_test_max_abs_diff(const float *a, const float *b, size_t n);

/* A backend (kind, index) and a session of the quick recipe's model on it, for the datasets
 * train and test (image shape and classes from train), with the data uploaded and the
 * parameters initialised from seed. From cfg only batch, eval_batch and max_activation_buffer
 * are used. On failure nothing is left
 * (*be and *s are NULL). The caller destroys the session, then the backend. */
dbk_status dbk_test_quick_session(dbk_backend_kind kind, int index, dbk_session_config cfg, const dbk_dataset *train,
                                  const dbk_dataset *test, uint64_t seed, dbk_backend **be, dbk_session **s);
/* The same for the named recipe's model, with its data-dependent initialisations. */
dbk_status dbk_test_recipe_session(const char *recipe, dbk_backend_kind kind, int index, dbk_session_config cfg,
                                   const dbk_dataset *train, const dbk_dataset *test, uint64_t seed, dbk_backend **be,
                                   dbk_session **s);

/* The text of a subset run's logs.tsv past its first line, the marker "# subset run: ..."
 * (results.h); NULL when the marker is missing. */
char *dbk_test_skip_subset_marker(char *logs_tsv);

/* One row of a DAWNBench logs.tsv. */
typedef struct dbk_test_log_row {
    int    epoch;
    double hours, top1, top5;   /* top5: 0 in a log without the top5Accuracy column */
} dbk_test_log_row;

/* Reads run_dir/logs.tsv of a subset run and checks its format: the subset marker line, then
 * DAWNBench's header (with top5Accuracy when top5), then rows epoch 1, 2, ... with hours to
 * 8 decimals and increasing, accuracies to 2 decimals, top-1 <= top-5 <= 100. Fills rows[1..]
 * (rows[0] is zero, so rows[e] is epoch e; cap entries in all) and *epochs. Returns 0, or 1
 * with the failure counted (DBK_CHECK). */
int dbk_test_read_logs_tsv(const char *run_dir, bool top5, dbk_test_log_row *rows, int cap, int *epochs);

/* $DAYBREAK_DATA/cifar-10-batches-bin, or NULL (and a printed reason) when it is missing. */
const char *dbk_test_cifar_dir(void);
/* The reason to give when dbk_test_cifar_dir returned NULL. */
#define DBK_TEST_NO_CIFAR "CIFAR-10 not found: set DAYBREAK_DATA to a folder holding cifar-10-batches-bin/"
/* $DAYBREAK_DATA/imagenette2-224-mini (the real Imagenette subset), or NULL (and a printed
 * reason) when it is missing. */
const char *dbk_test_imagenette_dir(void);
#define DBK_TEST_NO_IMAGENETTE "no imagenette2-224-mini/ under $DAYBREAK_DATA (shared/data/README.md)"

/* Host array of n uniform values in [lo, hi) from a seeded stream (caller frees with free). */
float *dbk_test_uniform(int64_t n, float lo, float hi, uint64_t seed);
/* A malloc'ed host copy of a tensor's contents (caller frees); aborts if the read fails. */
void *dbk_test_read(const dbk_tensor *t);

/* Runs a shell command with stderr folded into stdout; the output goes to out (cut at cap).
 * Returns the exit code, or -1 if the command did not exit normally. */
int dbk_test_run_command(const char *command, char *out, size_t cap);

/* A fresh empty directory for this test's files: $DBK_TEST_TMP/<name> (or /tmp/...); NULL,
 * with the reason printed, when it cannot be created. */
const char *dbk_test_tmpdir(const char *name);
/* dbk_test_tmpdir("<what>-<backend>[-<size>]") with ':' and '/' of the backend spec replaced:
 * one folder per backend and size, since ctest -j may run several at once. */
const char *dbk_test_backend_tmpdir(const char *what, const char *backend, const char *size);
/* The JSON file at path parsed (free with cJSON_Delete), or NULL when it cannot be read or parsed. */
struct cJSON *dbk_test_read_json(const char *path);
/* Runs the daybreak executable exe with args (shell words), as dbk_test_run_command. */
int dbk_test_run_daybreak(const char *exe, const char *args, char *out, size_t cap);
/* A test case body: `daybreak eval` of run_dir/model.ckpt on the first test_images test
 * images prints "test accuracy <accuracy, 2 decimals>%". Returns 0, or 1 with the failure
 * counted (DBK_CHECK). */
int dbk_test_eval_should_report(const char *exe, const char *run_dir, const char *backend, int test_images,
                                double accuracy);

#endif
