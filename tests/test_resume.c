/*
 * test_resume.c — a run survives being stopped: SIGTERM, SIGINT and SIGKILL, each followed by
 * `daybreak train --resume`, and two runs started into one --out; in mixed precision the
 * resumed run goes on with the loss scale it had (CPU only: PoCL has no fp16).
 *
 * usage: test_resume <path to daybreak> [backend]
 *
 * Every run is the quick recipe with 32 real training images (2 steps of 16 per epoch), 50
 * test images and 2 epochs: a few seconds each. The uninterrupted reference run and a
 * stopped-then-resumed run must agree bit for bit on every loss and accuracy (each backend is
 * deterministic on one device and resume.ckpt holds the whole training state). On the CPU
 * backend (the default) every case runs; on a device backend (resume_opencl) the reference
 * and SIGTERM-then-resume cases, since signals, kills and the lock do not depend on the
 * backend. Without the CIFAR-10 data or the device the test is skipped, or fails when CI=true.
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
#include "train/checkpoint.h"
#include "test_util.h"

/* 16 training steps per epoch, so that the second epoch's training lasts long enough (about
 * half a second on PoCL with a warm kernel cache) for the signal sent when epoch 1's row
 * appears to land during it: a signal that arrives after the last step lets the run finish
 * normally. With 2 steps per epoch a warm PoCL run often finished first. */
#define RUN_OPTIONS                                                                                      \
    "--recipe quick --train-subset 256 --test-subset 50 --epochs 2 --batch 16 --all-epochs --seed 1 --no-progress"
#define EPOCHS 2 /* the --epochs of RUN_OPTIONS */
/* Mixed precision, smaller (fp16 on the CPU widens every f16 tensor: about 2x the time of
 * fp32), with the loss scale moving within an epoch: it doubles after every 3 clean steps
 * and halves on an overflow, so after epoch 1 it is not the initial 2^16, and a resumed run
 * that started again at 2^16 would end with another scale than the uninterrupted one. */
#define FP16_OPTIONS                                                                                     \
    "--recipe quick --train-subset 64 --test-subset 50 --epochs 2 --batch 8 --all-epochs --seed 1 "      \
    "--no-progress --precision fp16 --loss-scale-interval 3"
#define WAIT_SECONDS 600

static const char *exe, *backend = "cpu";
static char base[4096], reference[4200], reference_fp16[4200];
static char out[65536];

static void path_in(char *dst, size_t cap, const char *dir, const char *file) {
    snprintf(dst, cap, "%s/%s", dir, file);
}

static bool file_exists(const char *dir, const char *file) {
    char p[4400];
    path_in(p, sizeof p, dir, file);
    struct stat sb;
    return stat(p, &sb) == 0;
}

/* A fresh run folder name under the test's folder (not created). */
static void run_dir(char *dst, size_t cap, const char *name) { snprintf(dst, cap, "%s/%s", base, name); }

/* `daybreak train options --out dir` in the background, its output in dir.log_suffix
 * ("log", or "log2" for a second run into dir). */
static pid_t start_run_with(const char *dir, const char *log_suffix, const char *options) {
    char cmd[12000];
    snprintf(cmd, sizeof cmd, "exec '%s' train %s --backend %s --out '%s' > '%s.%s' 2>&1", exe, options, backend, dir,
             dir, log_suffix);
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    return pid;
}

static pid_t start_run(const char *dir, const char *log_suffix) { return start_run_with(dir, log_suffix, RUN_OPTIONS); }

/* The exit code of a child, or 128 + signal when a signal ended it. */
static int wait_exit(pid_t pid) {
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Whether dir/logs.tsv has a row for epoch (epoch 0: whether result.json exists yet). */
static bool has_epoch(const char *dir, int epoch) {
    if (epoch == 0) return file_exists(dir, "result.json");
    char p[4400], prefix[16];
    path_in(p, sizeof p, dir, "logs.tsv");
    snprintf(prefix, sizeof prefix, "\n%d\t", epoch);
    void *data = NULL;
    size_t n;
    if (dbk_file_read_all(p, &data, &n) != DBK_OK) return false;
    bool found = strstr(data, prefix) != NULL;
    dbk_free(data);
    return found;
}

/* Waits (polling) until the running child has written epoch; false if it exited first. */
static bool wait_for_epoch(pid_t pid, const char *dir, int epoch) {
    const struct timespec tick = {0, 20 * 1000 * 1000};
    for (int i = 0; i < WAIT_SECONDS * 50; i++) {
        if (has_epoch(dir, epoch)) return true;
        if (waitpid(pid, NULL, WNOHANG) == pid) return false;
        nanosleep(&tick, NULL);
    }
    return false;
}

static cJSON *load_json(const char *dir, const char *file) {
    char p[4400];
    path_in(p, sizeof p, dir, file);
    return dbk_test_read_json(p);
}

/* The output of a background run into out (and printed). */
static void read_log(const char *dir, const char *suffix) {
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "cat '%s.%s'", dir, suffix);
    dbk_test_run_command(cmd, out, sizeof out);
    printf("%s", out);
}

static int expect_status(const char *dir, const char *status) {
    cJSON *j = load_json(dir, "result.json");
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, "status");
    bool same = cJSON_IsString(s) && !strcmp(s->valuestring, status);
    printf("  %s: status %s\n", dir, cJSON_IsString(s) ? s->valuestring : "(none)");
    cJSON_Delete(j);
    DBK_CHECK_MSG(same, "%s/result.json should say status %s", dir, status);
    return 0;
}

/* The accuracy column of logs.tsv (third field of every row after the header). */
static int accuracy_column(const char *dir, char *dst, size_t cap) {
    char p[4400];
    path_in(p, sizeof p, dir, "logs.tsv");
    void *data = NULL;
    size_t n;
    DBK_CHECK_OK(dbk_file_read_all(p, &data, &n));
    size_t len = 0;
    dst[0] = '\0';
    char *save = NULL;
    for (char *line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        const char *acc = strrchr(line, '\t');
        if (acc && strcmp(acc + 1, "top1Accuracy") && len + strlen(acc) + 1 < cap)
            len += (size_t)snprintf(dst + len, cap - len, "%s", acc);
    }
    dbk_free(data);
    return 0;
}

/* The run in dir has every loss and accuracy of the reference run ref, exactly, in
 * result.json and the accuracy column of logs.tsv, and says it was resumed once. */
static int expect_same_numbers_as(const char *dir, const char *ref) {
    char mine[1024], theirs[1024];
    if (accuracy_column(dir, mine, sizeof mine) || accuracy_column(ref, theirs, sizeof theirs)) return 1;
    printf("  logs.tsv accuracies: %s | reference %s\n", mine, theirs);
    DBK_CHECK_MSG(!strcmp(mine, theirs), "logs.tsv accuracies differ from the uninterrupted run");
    cJSON *a = load_json(dir, "result.json"), *b = load_json(ref, "result.json");
    const cJSON *ea = cJSON_GetObjectItemCaseSensitive(a, "epochs");
    const cJSON *eb = cJSON_GetObjectItemCaseSensitive(b, "epochs");
    const cJSON *resumed = cJSON_GetObjectItemCaseSensitive(a, "resumed");
    int bad = !cJSON_IsArray(ea) || !cJSON_IsArray(eb) || cJSON_GetArraySize(ea) != EPOCHS ||
              cJSON_GetArraySize(eb) != EPOCHS;
    static const char *const fields[] = {"train_loss", "train_accuracy", "test_loss", "test_accuracy", "lr_end"};
    for (int e = 0; e < EPOCHS && !bad; e++)
        for (int f = 0; f < 5 && !bad; f++) {
            const cJSON *x = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(ea, e), fields[f]);
            const cJSON *y = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(eb, e), fields[f]);
            bad = !cJSON_IsNumber(x) || !cJSON_IsNumber(y) || x->valuedouble != y->valuedouble;
            if (bad) fprintf(stderr, "  epoch %d %s differs from the uninterrupted run\n", e + 1, fields[f]);
        }
    bool once = cJSON_IsNumber(resumed) && resumed->valueint == 1;
    cJSON_Delete(a);
    cJSON_Delete(b);
    DBK_CHECK_MSG(!bad, "result.json epochs of %s differ from the uninterrupted run", dir);
    DBK_CHECK_MSG(once, "result.json of %s should say resumed 1", dir);
    DBK_CHECK_MSG(!file_exists(dir, "resume.ckpt"), "a finished run keeps no resume.ckpt");
    DBK_CHECK_MSG(file_exists(dir, "model.ckpt"), "a finished resumed run writes model.ckpt");
    return 0;
}

static int expect_same_numbers_as_reference(const char *dir) { return expect_same_numbers_as(dir, reference); }

static int resume_to_the_end(const char *dir) {
    char args[4400];
    snprintf(args, sizeof args, "train --resume '%s'", dir);
    int rc = dbk_test_run_daybreak(exe, args, out, sizeof out);
    printf("%s", out);
    DBK_CHECK_MSG(rc == 3, "daybreak train --resume exited %d, expected 3 (target not reached)", rc);
    return 0;
}

static int uninterrupted_run_as_reference(void) {
    pid_t pid = start_run(reference, "log");
    int rc = wait_exit(pid);
    DBK_CHECK_MSG(rc == 3, "the reference run exited %d, expected 3 (target not reached)", rc);
    return expect_status(reference, "not_reached");
}

static int sigterm_then_resume_should_match_uninterrupted_run(void) {
    char dir[4200];
    run_dir(dir, sizeof dir, "sigterm");
    pid_t pid = start_run(dir, "log");
    DBK_CHECK_MSG(wait_for_epoch(pid, dir, 1), "the run ended before epoch 1 was written");
    kill(pid, SIGTERM);
    int rc = wait_exit(pid);
    DBK_CHECK_MSG(rc == 143, "SIGTERM: daybreak exited %d, expected 143", rc);
    if (expect_status(dir, "interrupted")) return 1;
    if (resume_to_the_end(dir)) return 1;
    DBK_CHECK(strstr(out, "the run was interrupted") != NULL);
    return expect_same_numbers_as_reference(dir);
}

static int sigint_should_leave_interrupted_status_and_resume_checkpoint(void) {
    char dir[4200], log[4300];
    run_dir(dir, sizeof dir, "sigint");
    pid_t pid = start_run(dir, "log");
    DBK_CHECK_MSG(wait_for_epoch(pid, dir, 0), "the run ended before its first files were written");
    kill(pid, SIGINT);
    int rc = wait_exit(pid);
    DBK_CHECK_MSG(rc == 130, "SIGINT: daybreak exited %d, expected 130", rc);
    if (expect_status(dir, "interrupted")) return 1;
    DBK_CHECK_MSG(file_exists(dir, "resume.ckpt"), "an interrupted run leaves resume.ckpt");
    read_log(dir, "log");
    char expect[4400];
    snprintf(expect, sizeof expect, "resume with: daybreak train --resume %s\n", dir);
    DBK_CHECK_MSG(strstr(out, expect) != NULL, "expected the line '%s'", expect);
    /* Resumable: --resume accepts the folder (and refuses a changed option before training). */
    snprintf(log, sizeof log, "train --resume '%s' --epochs 5", dir);
    rc = dbk_test_run_daybreak(exe, log, out, sizeof out);
    printf("%s", out);
    DBK_CHECK_MSG(rc == 2 && strstr(out, "'--epochs' cannot be given with it"), "--resume with --epochs: exit %d", rc);
    return 0;
}

/* SIGHUP (the terminal closed) stops a run as SIGTERM does: exit 129, status interrupted,
 * resume.ckpt kept. Before, SIGHUP killed the process and left result.json saying running. */
static int sighup_should_stop_the_run_as_sigterm_does(void) {
    char dir[4200];
    run_dir(dir, sizeof dir, "sighup");
    pid_t pid = start_run(dir, "log");
    DBK_CHECK_MSG(wait_for_epoch(pid, dir, 0), "the run ended before its first files were written");
    kill(pid, SIGHUP);
    int rc = wait_exit(pid);
    DBK_CHECK_MSG(rc == 129, "SIGHUP: daybreak exited %d, expected 129", rc);
    if (expect_status(dir, "interrupted")) return 1;
    DBK_CHECK_MSG(file_exists(dir, "resume.ckpt"), "an interrupted run leaves resume.ckpt");
    read_log(dir, "log");
    DBK_CHECK_MSG(strstr(out, "interrupted by SIGHUP") != NULL, "the run should say SIGHUP stopped it");
    return 0;
}

/* The bytes of dir/file (caller frees), or NULL. */
static char *read_bytes(const char *dir, const char *file, size_t *n) {
    char p[4400];
    void *data = NULL;
    path_in(p, sizeof p, dir, file);
    if (dbk_file_read_all(p, &data, n) != DBK_OK) return NULL;
    return data;
}

/* `train --resume DIR [extra]` is refused with one line naming why, and DIR's result.json and
 * logs.tsv stay as they were. */
static int resume_should_be_refused(const char *dir, const char *extra, const char *why) {
    size_t n1, n2, m1, m2;
    char *json = read_bytes(dir, "result.json", &n1), *logs = read_bytes(dir, "logs.tsv", &m1), args[13000];
    DBK_CHECK(json && logs);
    snprintf(args, sizeof args, "train --resume '%s' %s", dir, extra);
    int rc = dbk_test_run_daybreak(exe, args, out, sizeof out);
    printf("%s", out);
    char *json2 = read_bytes(dir, "result.json", &n2), *logs2 = read_bytes(dir, "logs.tsv", &m2);
    const bool kept = json2 && logs2 && n1 == n2 && m1 == m2 && !memcmp(json, json2, n1) && !memcmp(logs, logs2, m1);
    dbk_free(json), dbk_free(json2), dbk_free(logs), dbk_free(logs2);
    DBK_CHECK_MSG(rc == 1 && strstr(out, why), "--resume %s %s: exit %d, expected 1 and '%s'", dir, extra, rc, why);
    const char *error = strstr(out, "daybreak: error: ");
    DBK_CHECK_MSG(error && strchr(error, '\n') == out + strlen(out) - 1, "the refusal is not one last line");
    DBK_CHECK_MSG(kept, "a refused --resume changed %s's result.json or logs.tsv", dir);
    return 0;
}

/* --resume checks what it resumes against the folder's records: a resume.ckpt from a run of
 * another recipe (here: the folder's result.json records cifar10-resnet9) and data that
 * differs from the run's (one pixel of the first training image changed) are refused before
 * anything is written. Before, the checkpoint's recipe was trained on and replaced the
 * folder's result.json and logs.tsv, and the changed data was accepted silently. Uses the
 * interrupted run of the SIGINT case. */
static int resume_should_check_the_checkpoint_and_data_against_the_folder(void) {
    char dir[4200], foreign[4200], data[4200], cmd[24000];
    run_dir(dir, sizeof dir, "sigint");
    run_dir(foreign, sizeof foreign, "foreign");
    DBK_CHECK_MSG(file_exists(dir, "resume.ckpt"), "the SIGINT case left no run to resume");
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -r '%s' '%s' && sed -i 's/\"name\":[[:space:]]*\"quick\"/\"name\": \"cifar10-resnet9\"/; "
             "s/\"model\":[[:space:]]*\"resnet9-quarter\"/\"model\": \"resnet9\"/' '%s/result.json' && grep -q cifar10-resnet9 "
             "'%s/result.json'", foreign, dir, foreign, foreign, foreign);
    DBK_CHECK_MSG(system(cmd) == 0, "could not make the foreign folder");
    if (resume_should_be_refused(foreign, "", "is not this folder's run")) return 1;

    run_dir(data, sizeof data, "changed-data");
    const char *cifar = dbk_test_cifar_dir();
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s/cifar-10-batches-bin' && cd '%s/cifar-10-batches-bin' && "
             "for f in '%s'/*; do ln -s \"$f\" .; done && rm data_batch_1.bin && cp '%s/data_batch_1.bin' . && "
             "printf '\\377' | dd of=data_batch_1.bin bs=1 seek=1 conv=notrunc status=none", data, data, data, cifar, cifar);
    DBK_CHECK_MSG(system(cmd) == 0, "could not make the changed data");
    snprintf(cmd, sizeof cmd, "--data '%s'", data);
    return resume_should_be_refused(dir, cmd, "is not the data the run started with");
}

static int killed_run_should_be_reported_killed_and_resume(void) {
    char dir[4200], args[13000];
    run_dir(dir, sizeof dir, "killed");
    pid_t pid = start_run(dir, "log");
    DBK_CHECK_MSG(wait_for_epoch(pid, dir, 1), "the run ended before epoch 1 was written");
    kill(pid, SIGKILL);
    DBK_CHECK(wait_exit(pid) == 128 + SIGKILL);
    snprintf(args, sizeof args, "report '%s' '%s' --out '%s/report'", dir, reference, base);
    int rc = dbk_test_run_daybreak(exe, args, out, sizeof out);
    printf("%s", out);
    DBK_CHECK_MSG(rc == 0, "daybreak report exited %d", rc);
    DBK_CHECK_MSG(strstr(out, ": killed (result.json says running") != NULL, "report should say the run was killed");
    DBK_CHECK_MSG(strstr(out, "1 run)") != NULL, "the killed run should not be counted in the group");
    if (resume_to_the_end(dir)) return 1;
    DBK_CHECK(strstr(out, "the run was killed") != NULL);
    return expect_same_numbers_as_reference(dir);
}

/* A number of the object "key" of result.json in dir (NaN when missing). */
static double result_number(const char *dir, const char *object, const char *key) {
    cJSON *j = load_json(dir, "result.json");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, object), key);
    const double d = cJSON_IsNumber(v) ? v->valuedouble : (double)NAN;
    cJSON_Delete(j);
    return d;
}

/* The loss scaler's state in dir/resume.ckpt's metadata. */
static int saved_loss_scaler(const char *dir, double *scale, double *clean, double *skipped) {
    char p[4400];
    path_in(p, sizeof p, dir, "resume.ckpt");
    dbk_checkpoint *c;
    DBK_CHECK_OK(dbk_checkpoint_load(p, &c));
    cJSON *m = cJSON_Parse(dbk_checkpoint_meta(c));
    dbk_checkpoint_destroy(c);
    const cJSON *ls = cJSON_GetObjectItemCaseSensitive(m, "loss_scaler");
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(ls, "scale"), *k = cJSON_GetObjectItemCaseSensitive(ls, "clean_steps");
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(ls, "skipped_steps");
    const bool ok = cJSON_IsNumber(s) && cJSON_IsNumber(k) && cJSON_IsNumber(n);
    *scale = ok ? s->valuedouble : 0.0;
    *clean = ok ? k->valuedouble : 0.0;
    *skipped = ok ? n->valuedouble : 0.0;
    cJSON_Delete(m);
    DBK_CHECK_MSG(ok, "%s/resume.ckpt of an fp16 run has no loss_scaler {scale, clean_steps, skipped_steps}", dir);
    return 0;
}

static int fp16_resume_should_keep_the_loss_scale(void) {
    run_dir(reference_fp16, sizeof reference_fp16, "fp16-reference");
    int rc = wait_exit(start_run_with(reference_fp16, "log", FP16_OPTIONS));
    DBK_CHECK_MSG(rc == 3, "the fp16 reference run exited %d, expected 3 (target not reached)", rc);
    char dir[4200];
    run_dir(dir, sizeof dir, "fp16-sigterm");
    pid_t pid = start_run_with(dir, "log", FP16_OPTIONS);
    DBK_CHECK_MSG(wait_for_epoch(pid, dir, 1), "the fp16 run ended before epoch 1 was written");
    kill(pid, SIGTERM);
    rc = wait_exit(pid);
    DBK_CHECK_MSG(rc == 143, "SIGTERM: daybreak exited %d, expected 143", rc);
    double scale, clean, skipped;
    if (saved_loss_scaler(dir, &scale, &clean, &skipped)) return 1;
    printf("  saved after epoch 1: loss scale %g, %g clean steps, %g skipped\n", scale, clean, skipped);
    DBK_CHECK_MSG(scale != 65536.0 || clean != 0.0, "the loss scaler did not move in epoch 1: the test shows nothing");
    if (resume_to_the_end(dir) || expect_same_numbers_as(dir, reference_fp16)) return 1;
    const double ref_scale = result_number(reference_fp16, "precision", "loss_scale");
    const double ref_skipped = result_number(reference_fp16, "precision", "skipped_steps");
    const double my_scale = result_number(dir, "precision", "loss_scale");
    const double my_skipped = result_number(dir, "precision", "skipped_steps");
    printf("  at the end: loss scale %g, %g skipped; uninterrupted: %g, %g\n", my_scale, my_skipped, ref_scale,
           ref_skipped);
    DBK_CHECK_MSG(my_scale == ref_scale && my_skipped == ref_skipped,
                  "the resumed run ends with loss scale %g and %g skipped steps, the uninterrupted one with %g and %g",
                  my_scale, my_skipped, ref_scale, ref_skipped);
    return 0;
}

static int concurrent_runs_should_lock_out_one(void) {
    char dir[4200];
    run_dir(dir, sizeof dir, "concurrent");
    pid_t pids[2] = {start_run(dir, "log"), start_run(dir, "log2")};
    const char *logs[2] = {"log", "log2"};
    /* The first to exit must be the loser, at once; the winner is then stopped. */
    int status, loser = -1;
    pid_t done = waitpid(-1, &status, 0);
    for (int i = 0; i < 2; i++)
        if (done == pids[i]) loser = i;
    DBK_CHECK_MSG(loser >= 0, "waitpid returned %ld", (long)done);
    const int winner = 1 - loser;
    kill(pids[winner], SIGTERM);
    int rc_winner = wait_exit(pids[winner]);
    DBK_CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 1, "the run that ended first should exit 1");
    DBK_CHECK_MSG(rc_winner == 143, "the run holding the folder exited %d, expected 143 (SIGTERM)", rc_winner);
    read_log(dir, logs[loser]);
    char expect[4700], host[256] = "";
    gethostname(host, sizeof host);
    /* The holder's pid is in the lock file before anyone can see it held (run_lock.c). */
    snprintf(expect, sizeof expect, "daybreak: error: %s is in use by another run (pid %ld on %s)", dir,
             (long)pids[winner], host);
    DBK_CHECK_MSG(strstr(out, expect) != NULL, "expected '%s'", expect);
    read_log(dir, logs[winner]);
    DBK_CHECK_MSG(!strstr(out, "in use by another run"), "only one of the two runs may be locked out");
    return expect_status(dir, "interrupted");
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: test_resume <path to daybreak> [backend]\n");
        return 2;
    }
    exe = argv[1];
    if (argc == 3) backend = argv[2];
    dbk_backend_kind kind;
    int index, rc = dbk_test_resolve_backend(backend, &kind, &index);
    if (rc) return rc;
    if (!dbk_test_cifar_dir()) return dbk_test_skip_or_fail_in_ci("no CIFAR-10 data");
    const char *tmp = dbk_test_backend_tmpdir("resume", backend, NULL);
    if (!tmp) return 1;
    snprintf(base, sizeof base, "%s", tmp);
    run_dir(reference, sizeof reference, "reference");
    DBK_RUN(uninterrupted_run_as_reference);
    DBK_RUN(sigterm_then_resume_should_match_uninterrupted_run);
    if (kind != DBK_BACKEND_KIND_CPU) return dbk_test_finish();
    DBK_RUN(sigint_should_leave_interrupted_status_and_resume_checkpoint);
    DBK_RUN(resume_should_check_the_checkpoint_and_data_against_the_folder);
    DBK_RUN(sighup_should_stop_the_run_as_sigterm_does);
    DBK_RUN(killed_run_should_be_reported_killed_and_resume);
    DBK_RUN(concurrent_runs_should_lock_out_one);
    DBK_RUN(fp16_resume_should_keep_the_loss_scale);
    return dbk_test_finish();
}
