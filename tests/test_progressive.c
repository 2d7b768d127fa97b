/*
 * test_progressive.c — progressive resizing (--image-sizes, recipe size phases) on real data.
 *
 * usage: test_progressive <path to daybreak> [backend]
 *
 * Every run is imagenette-resnet18 on 16 real Imagenette training images (2 steps of 8 per
 * epoch), 10 validation images and 2 epochs, seed 1: a few seconds each on the CPU backend.
 *   fixed      --image-size 32 throughout: the reference
 *   resized    --image-sizes 0:32,1:48: the log names both sizes, every loss is finite, and
 *              epoch 1 equals the fixed run's bit for bit (the phase change comes after it)
 *   same size  --image-sizes 0:32,1:32: the session and the decode threads are rebuilt at
 *              epoch 2 as for a real change, so parameters, batch-norm statistics and momentum
 *              carry over through the host; the run must equal the fixed run bit for bit, to
 *              the last byte of model.ckpt
 *   resume     (CPU only) the resized run stopped by SIGTERM in epoch 2 (at 48) and resumed:
 *              it restarts in the second phase and equals the uninterrupted resized run
 *   refused    --image-sizes on CIFAR-10 (fixed 32x32 images): one line, exit 1
 * Without the Imagenette subset or the device the test is skipped, or fails when CI=true.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "test_util.h"

#define RUN_OPTIONS                                                                                             \
    "--recipe imagenette-resnet18 --train-subset 16 --test-subset 10 --batch 8 --epochs 2 --all-epochs --seed 1 " \
    "--loader-threads 2 --no-progress"
#define EPOCHS 2

static const char *exe, *backend = "cpu", *base;
static char out[65536];

static void run_dir(char *dst, size_t cap, const char *name) { snprintf(dst, cap, "%s/%s", base, name); }

/* `daybreak train RUN_OPTIONS <extra> --out <base>/<name>`, its output in out; the exit code. */
static int train(const char *name, const char *extra) {
    char args[8192], dir[4200];
    run_dir(dir, sizeof dir, name);
    snprintf(args, sizeof args, "train " RUN_OPTIONS " --backend %s %s --out '%s'", backend, extra, dir);
    int rc = dbk_test_run_daybreak(exe, args, out, sizeof out);
    printf("%s", out);
    return rc;
}

static cJSON *load_json(const char *name, const char *file) {
    char p[4400];
    snprintf(p, sizeof p, "%s/%s/%s", base, name, file);
    return dbk_test_read_json(p);
}

static const char *const fields[] = {"train_loss", "train_accuracy", "test_loss", "test_accuracy",
                                     "test_top5_accuracy", "lr_end"};
enum { FIELDS = sizeof fields / sizeof fields[0] };

/* Epoch e's (1-based) numbers of a run's result.json into v; 1 (counted) when missing. */
static int epoch_numbers(const char *name, int e, double v[FIELDS]) {
    cJSON *j = load_json(name, "result.json");
    const cJSON *ep = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "epochs"), e - 1);
    int bad = 0;
    for (int f = 0; f < FIELDS; f++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(ep, fields[f]);
        bad |= !cJSON_IsNumber(x);
        v[f] = cJSON_IsNumber(x) ? x->valuedouble : (double)NAN;
    }
    cJSON_Delete(j);
    DBK_CHECK_MSG(!bad, "%s/result.json has no complete epoch %d", name, e);
    return 0;
}

/* Epochs first..last of runs a and b agree exactly. */
static int same_epochs(const char *a, const char *b, int first, int last) {
    for (int e = first; e <= last; e++) {
        double x[FIELDS], y[FIELDS];
        if (epoch_numbers(a, e, x) || epoch_numbers(b, e, y)) return 1;
        for (int f = 0; f < FIELDS; f++)
            DBK_CHECK_MSG(x[f] == y[f], "epoch %d %s: %s %.17g, %s %.17g (expected equal)", e, fields[f], a, x[f], b,
                          y[f]);
    }
    printf("  %s and %s: epochs %d..%d equal\n", a, b, first, last);
    return 0;
}

/* Whether the two runs' model.ckpt files are the same bytes. */
static int same_model(const char *a, const char *b) {
    char cmd[9000];
    snprintf(cmd, sizeof cmd, "cmp '%s/%s/model.ckpt' '%s/%s/model.ckpt'", base, a, base, b);
    int rc = dbk_test_run_command(cmd, out, sizeof out);
    DBK_CHECK_MSG(rc == 0, "model.ckpt of %s and %s differ: %s", a, b, out);
    printf("  %s and %s: model.ckpt identical\n", a, b);
    return 0;
}

static int fixed_size_reference(void) {
    int rc = train("fixed", "--image-size 32");
    DBK_CHECK_MSG(rc == 3, "the fixed-size run exited %d, expected 3 (target not reached)", rc);
    return 0;
}

static int resized_run_changes_size_after_epoch_1(void) {
    int rc = train("resized", "--image-sizes 0:32,1:48");
    DBK_CHECK_MSG(rc == 3, "the resized run exited %d, expected 3 (target not reached)", rc);
    DBK_CHECK_MSG(strstr(out, "image size 32x32 from epoch 1 (phase 1 of 2 of 0:32,1:48)") != NULL,
                  "the log should name the first phase's size");
    const char *second = strstr(out, "image size 48x48 from epoch 2 (phase 2 of 2 of 0:32,1:48): rebuilt in");
    DBK_CHECK_MSG(second != NULL, "the log should name the second phase's size");
    DBK_CHECK_MSG(strstr(out, "epoch   1/2") < second && strstr(second, "epoch   2/2"),
                  "the size change comes between epoch 1 and epoch 2");
    cJSON *j = load_json("resized", "result.json");
    const cJSON *recipe = cJSON_GetObjectItemCaseSensitive(j, "recipe");
    const cJSON *sizes = cJSON_GetObjectItemCaseSensitive(recipe, "image_sizes");
    const cJSON *last = cJSON_GetObjectItemCaseSensitive(recipe, "image_size");
    const bool recorded = cJSON_IsString(sizes) && !strcmp(sizes->valuestring, "0:32,1:48") && cJSON_IsNumber(last) &&
                          last->valuedouble == 48.0;
    cJSON_Delete(j);
    DBK_CHECK_MSG(recorded, "result.json's recipe should record image_sizes \"0:32,1:48\" and image_size 48");
    for (int e = 1; e <= EPOCHS; e++) {
        double v[FIELDS];
        if (epoch_numbers("resized", e, v)) return 1;
        DBK_CHECK_MSG(isfinite(v[0]) && isfinite(v[2]), "epoch %d: losses %g, %g should be finite", e, v[0], v[2]);
    }
    return same_epochs("resized", "fixed", 1, 1);
}

static int same_size_phase_carries_the_whole_state(void) {
    int rc = train("same", "--image-sizes 0:32,1:32");
    DBK_CHECK_MSG(rc == 3, "the same-size phased run exited %d, expected 3", rc);
    DBK_CHECK_MSG(strstr(out, "image size 32x32 from epoch 2 (phase 2 of 2 of 0:32,1:32): rebuilt in") != NULL,
                  "the session should be rebuilt at epoch 2");
    if (same_epochs("same", "fixed", 1, EPOCHS)) return 1;
    return same_model("same", "fixed");
}

/* The resized run in the background, SIGTERM once its epoch 1 is in logs.tsv (epoch 2 at 48
 * is under way: it takes seconds), then --resume. */
static int resume_across_the_phase_change(void) {
    char dir[4200], cmd[12000], logs[4400];
    run_dir(dir, sizeof dir, "stopped");
    snprintf(logs, sizeof logs, "%s/logs.tsv", dir);
    snprintf(cmd, sizeof cmd, "exec '%s' train " RUN_OPTIONS " --backend %s --image-sizes 0:32,1:48 --out '%s' > '%s.log' 2>&1",
             exe, backend, dir, dir);
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    const struct timespec tick = {0, 20 * 1000 * 1000};
    bool epoch1 = false, exited = false;
    for (int i = 0; i < 600 * 50 && !epoch1 && !exited; i++) {
        void *data = NULL;
        size_t n;
        if (dbk_file_read_all(logs, &data, &n) == DBK_OK) epoch1 = strstr(data, "\n1\t") != NULL;
        dbk_free(data);
        exited = waitpid(pid, NULL, WNOHANG) == pid;
        if (!epoch1 && !exited) nanosleep(&tick, NULL);
    }
    DBK_CHECK_MSG(epoch1 && !exited, "the run to stop ended before its epoch 1 was logged");
    kill(pid, SIGTERM);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) continue;
    int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    DBK_CHECK_MSG(rc == 143, "the stopped run exited %d, expected 143 (stopped by SIGTERM in epoch 2)", rc);
    char args[4400];
    snprintf(args, sizeof args, "train --resume '%s'", dir);
    rc = dbk_test_run_daybreak(exe, args, out, sizeof out);
    printf("%s", out);
    DBK_CHECK_MSG(rc == 3, "daybreak train --resume exited %d, expected 3", rc);
    DBK_CHECK_MSG(strstr(out, "image size 48x48 from epoch 2 (phase 2 of 2 of 0:32,1:48)\n") != NULL,
                  "the resumed run should start in the second phase (48x48)");
    if (same_epochs("stopped", "resized", 1, EPOCHS)) return 1;
    return same_model("stopped", "resized");
}

static int fixed_size_dataset_refused(void) {
    char dir[4200], args[8192];
    run_dir(dir, sizeof dir, "cifar");
    snprintf(args, sizeof args, "train --recipe quick --backend %s --image-sizes 0:32,1:48 --out '%s'", backend, dir);
    int rc = dbk_test_run_daybreak(exe, args, out, sizeof out);
    printf("%s", out);
    DBK_CHECK_MSG(rc == 1, "--image-sizes on CIFAR-10 exited %d, expected 1", rc);
    DBK_CHECK_MSG(strstr(out, "daybreak: error: image sizes: dataset cifar10 has fixed images") != NULL,
                  "the error should say the dataset's images are fixed");
    struct stat sb;
    DBK_CHECK_MSG(stat(dir, &sb) != 0, "a refused run leaves no folder behind");
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_progressive <path to daybreak> [backend]\n");
        return 2;
    }
    exe = argv[1];
    if (argc > 2) backend = argv[2];
    dbk_backend_kind kind;
    int index;
    int code = dbk_test_resolve_backend(backend, &kind, &index);
    if (code) return code;
    if (!dbk_test_imagenette_dir()) return dbk_test_skip_or_fail_in_ci(DBK_TEST_NO_IMAGENETTE);
    if (!(base = dbk_test_backend_tmpdir("progressive", backend, NULL))) return 1;
    DBK_RUN(fixed_size_reference);
    DBK_RUN(resized_run_changes_size_after_epoch_1);
    DBK_RUN(same_size_phase_carries_the_whole_state);
    if (kind == DBK_BACKEND_KIND_CPU) DBK_RUN(resume_across_the_phase_change);
    DBK_RUN(fixed_size_dataset_refused);
    return dbk_test_finish();
}
