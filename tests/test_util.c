/* test_util.c — the test harness (see test_util.h). */
#define _POSIX_C_SOURCE 200809L
#include "test_util.h"
#include "check/curve.h"
#include "check/op_check.h"

#include "core/alloc.h"
#include "core/fileio.h"
#include "core/rng.h"
#include "models/models.h"
#include "train/recipe.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

int dbk_test_failed_checks;
static int passed, failed;

void dbk_test_run(const char *name, int (*fn)(void)) {
    int before = dbk_test_failed_checks;
    int rc = fn();
    if (rc == 0 && dbk_test_failed_checks == before) {
        passed++;
        printf("ok   %s\n", name);
    } else {
        failed++;
        printf("FAIL %s\n", name);
    }
    fflush(stdout);
}

int dbk_test_finish(void) {
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

static int skip(const char *reason) {
    printf("skipped: %s\n", reason);
    return 77;
}

bool dbk_test_in_ci(void) {
    const char *ci = getenv("CI");
    return ci && !strcmp(ci, "true");
}

int dbk_test_skip_or_fail_in_ci(const char *reason) {
    if (dbk_test_in_ci()) {
        printf("error: %s (CI=true: every test must run in CI, so this is a failure, not a skip)\n", reason);
        return 1;
    }
    return skip(reason);
}

void dbk_test_note_missing(const char *what, const char *reason) {
    if (dbk_test_in_ci()) {
        printf("FAIL %s: %s (CI=true: every test must run in CI, so this is a failure, not a skip)\n", what, reason);
        failed++;
        return;
    }
    printf("skipping %s: %s\n", what, reason);
}

int dbk_test_resolve_backend(const char *spec, dbk_backend_kind *kind, int *index) {
    const size_t len = strcspn(spec, ":");
    const char *device = spec[len] == ':' ? spec + len + 1 : NULL;
    bool known = false;
    for (int k = 0; k < DBK_BACKEND_KIND_COUNT; k++) {
        const char *name = dbk_backend_kind_name((dbk_backend_kind)k);
        known |= strlen(name) == len && strncmp(spec, name, len) == 0;
    }
    if (!known || (device && (!*device || strspn(device, "0123456789") != strlen(device)))) {
        printf("usage error: backend spec '%s' is not cpu, opencl or vulkan, optionally followed by :N\n", spec);
        return 2;
    }
    if (dbk_backend_resolve(spec, -1, kind, index) == DBK_OK) return 0;
    return dbk_test_skip_or_fail_in_ci(dbk_last_error());
}

double dbk_test_nmse(const float *ref, const float *got, size_t n) { return dbk_op_check_nmse(ref, got, n); }

double dbk_test_max_abs_diff(const float *a, const float *b, size_t n) {
    double m = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > m || isnan(d)) m = d;
    }
    return m;
}

/* $DAYBREAK_DATA/<folder> when it is a folder, else NULL with the reason printed. */
static const char *data_folder(const char *folder, char *path, size_t cap) {
    const char *root = getenv("DAYBREAK_DATA");
    if (!root || !*root) {
        printf("DAYBREAK_DATA is not set\n");
        return NULL;
    }
    snprintf(path, cap, "%s/%s", root, folder);
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
        printf("%s does not exist\n", path);
        return NULL;
    }
    return path;
}

const char *dbk_test_cifar_dir(void) {
    static char path[4096];
    return data_folder("cifar-10-batches-bin", path, sizeof path);
}

const char *dbk_test_imagenette_dir(void) {
    static char path[4096];
    return data_folder("imagenette2-224-mini", path, sizeof path);
}

const char *dbk_test_tmpdir(const char *name) {
    static char path[4096];
    const char *root = getenv("DBK_TEST_TMP");
    char base[4096];
    snprintf(base, sizeof base, "%s", root && *root ? root : "/tmp/daybreak-tests");
    mkdir(base, 0755);
    /* A truncated path must never reach rm -rf below. */
    int len = snprintf(path, sizeof path, "%s/%s", base, name);
    if (len < 0 || (size_t)len >= sizeof path) {
        printf("error: the temporary folder path %s/%s is too long\n", base, name);
        return NULL;
    }
    char cmd[8300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0 || mkdir(path, 0755) != 0) {
        printf("error: cannot create the temporary folder %s\n", path);
        return NULL;
    }
    return path;
}

const char *dbk_test_backend_tmpdir(const char *what, const char *backend, const char *size) {
    char name[160];
    snprintf(name, sizeof name, "%s-%s%s%s", what, backend, size ? "-" : "", size ? size : "");
    for (char *c = name; *c; c++)
        if (*c == ':' || *c == '/') *c = '-';
    return dbk_test_tmpdir(name);
}

cJSON *dbk_test_read_json(const char *path) {
    void *data = NULL;
    size_t n;
    if (dbk_file_read_all(path, &data, &n) != DBK_OK) return NULL;
    cJSON *j = cJSON_ParseWithLength(data, n);
    dbk_free(data);
    return j;
}

int dbk_test_run_daybreak(const char *exe, const char *args, char *out, size_t cap) {
    static char cmd[16384 + 4096];
    snprintf(cmd, sizeof cmd, "'%s' %s", exe, args);
    return dbk_test_run_command(cmd, out, cap);
}

int dbk_test_eval_should_report(const char *exe, const char *run_dir, const char *backend, int test_images,
                                double accuracy) {
    static char out[65536];
    char args[8192], expect[64];
    snprintf(args, sizeof args, "eval --checkpoint '%s/model.ckpt' --backend %s --test-subset %d", run_dir, backend,
             test_images);
    int rc = dbk_test_run_daybreak(exe, args, out, sizeof out);
    printf("%s", out);
    DBK_CHECK_MSG(rc == 0, "daybreak eval exited %d", rc);
    snprintf(expect, sizeof expect, "test accuracy %.2f%%", accuracy);
    DBK_CHECK_MSG(strstr(out, expect) != NULL, "expected '%s'", expect);
    return 0;
}

int dbk_test_run_command(const char *command, char *out, size_t cap) {
    size_t len = strlen(command) + 8;
    char *cmd = malloc(len);
    if (!cmd) return -1;
    snprintf(cmd, len, "%s 2>&1", command);
    FILE *p = popen(cmd, "r");
    free(cmd);
    if (!p) return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    /* Drain what did not fit so the child never blocks on a full pipe. */
    char sink[4096];
    while (fread(sink, 1, sizeof sink, p) > 0) {
    }
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

float *dbk_test_uniform(int64_t n, float lo, float hi, uint64_t seed) {
    float *h = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    if (!h) abort();
    dbk_rng r;
    dbk_rng_init(&r, seed);
    for (int64_t i = 0; i < n; i++) h[i] = lo + (hi - lo) * dbk_rng_uniform(&r);
    return h;
}

void *dbk_test_read(const dbk_tensor *t) {
    void *h = malloc(dbk_tensor_nbytes(t) + 4);
    if (!h || dbk_tensor_read(t, h) != DBK_OK) abort();
    return h;
}

dbk_status dbk_test_quick_session(dbk_backend_kind kind, int index, dbk_session_config cfg, const dbk_dataset *train,
                                  const dbk_dataset *test, uint64_t seed, dbk_backend **be, dbk_session **s) {
    return dbk_test_recipe_session("quick", kind, index, cfg, train, test, seed, be, s);
}

dbk_status dbk_test_recipe_session(const char *recipe, dbk_backend_kind kind, int index, dbk_session_config cfg,
                                   const dbk_dataset *train, const dbk_dataset *test, uint64_t seed, dbk_backend **be,
                                   dbk_session **s) {
    return dbk_curve_recipe_session(recipe, kind, index, cfg, train, test, seed, be, s);
}

char *dbk_test_skip_subset_marker(char *logs_tsv) {
    const char *marker = "# subset run: ";
    char *nl = strchr(logs_tsv, '\n');
    if (strncmp(logs_tsv, marker, strlen(marker)) != 0 || !nl) return NULL;
    return nl + 1;
}

/* Whether field (up to a tab or the end) has exactly `decimals` digits after its point. */
static bool has_decimals(const char *field, int decimals) {
    const char *dot = strchr(field, '.'), *end = field + strcspn(field, "\t");
    return dot && dot < end && end - dot - 1 == decimals;
}

/* One row's format and values; the line is NUL-terminated. */
static int check_log_row(const char *line, bool top5, dbk_test_log_row *row) {
    int used = 0;
    const int fields = top5 ? 4 : 3;
    const int got = top5 ? sscanf(line, "%d\t%lf\t%lf\t%lf%n", &row->epoch, &row->hours, &row->top1, &row->top5, &used)
                         : sscanf(line, "%d\t%lf\t%lf%n", &row->epoch, &row->hours, &row->top1, &used);
    DBK_CHECK_MSG(got == fields && line[used] == '\0', "bad row '%s'", line);
    const char *hours = strchr(line, '\t') + 1, *top1 = strchr(hours, '\t') + 1;
    DBK_CHECK_MSG(has_decimals(hours, 8), "hours need 8 decimals: '%s'", line);
    DBK_CHECK_MSG(has_decimals(top1, 2), "accuracy needs 2 decimals: '%s'", line);
    if (top5) DBK_CHECK_MSG(has_decimals(strchr(top1, '\t') + 1, 2), "top-5 needs 2 decimals: '%s'", line);
    DBK_CHECK_MSG(row->top1 >= 0 && row->top1 <= 100 && (!top5 || (row->top5 >= row->top1 && row->top5 <= 100)),
                  "accuracies out of order or range: '%s'", line);
    return 0;
}

/* The checks of dbk_test_read_logs_tsv on the file's text (modified: rows are cut at '\n'). */
static int parse_logs(char *text, const char *path, bool top5, dbk_test_log_row *rows, int cap, int *epochs) {
    char *line = dbk_test_skip_subset_marker(text);
    DBK_CHECK_MSG(line != NULL, "%s of a subset run lacks the marker line:\n%s", path, text);
    const char *header = top5 ? "epoch\thours\ttop1Accuracy\ttop5Accuracy\n" : "epoch\thours\ttop1Accuracy\n";
    DBK_CHECK_MSG(!strncmp(line, header, strlen(header)), "bad header in %s:\n%s", path, line);
    line += strlen(header);
    while (*line) {
        char *nl = strchr(line, '\n');
        DBK_CHECK_MSG(nl != NULL, "last line of %s is not terminated", path);
        DBK_CHECK_MSG(*epochs + 1 < cap, "%s has more rows than the %d expected", path, cap - 1);
        *nl = '\0';
        dbk_test_log_row *row = &rows[*epochs + 1];
        if (check_log_row(line, top5, row)) return 1;
        DBK_CHECK_MSG(row->epoch == *epochs + 1 && row->hours > rows[*epochs].hours,
                      "epochs must count from 1 and hours increase: '%s'", line);
        (*epochs)++;
        line = nl + 1;
    }
    return 0;
}

int dbk_test_read_logs_tsv(const char *run_dir, bool top5, dbk_test_log_row *rows, int cap, int *epochs) {
    char path[4200];
    snprintf(path, sizeof path, "%s/logs.tsv", run_dir);
    memset(rows, 0, (size_t)cap * sizeof *rows);
    *epochs = 0;
    void *data;
    size_t n;
    DBK_CHECK_OK(dbk_file_read_all(path, &data, &n));
    const int bad = parse_logs(data, path, top5, rows, cap, epochs);
    dbk_free(data);
    return bad;
}
