/*
 * test_outputs.c — every command's output option against the same hostile targets, as a
 * careful and a hostile user would give them (core/output.h, the one guarded way to write):
 * an empty name, a device (/dev/null, through a link so that a regression cannot replace the
 * machine's own node), a FIFO, another run's model.ckpt and result.json,
 * another dataset's classes.txt, a file or folder inside a dataset folder, a dataset folder,
 * another run's folder, a user's unrelated file, a folder that does not exist. Each must be
 * refused with one line "daybreak: error: ..." (exit 2 for the empty name, 1 otherwise) before
 * any work, and leave the target as it was and no temp file behind. Then the positive side (an
 * earlier inference entry and an earlier report are replaced), and pack-data stopped by SIGINT
 * mid-write: no temp file, no pack, the signal's exit status.
 *
 * usage: test_outputs <path to daybreak>. Needs CIFAR-10 (one 64-image CPU run, ~3 s); tune's
 * --out is walked where an OpenCL device exists.
 */
#define _XOPEN_SOURCE 700
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "test_util.h"

static const char *exe, *dir;
static char out[65536];

static int run(const char *args) { return dbk_test_run_daybreak(exe, args, out, sizeof out); }

/* template with every "@" replaced by path (a command line with its target). */
static void fill(char *dst, size_t cap, const char *template, const char *path) {
    size_t n = 0;
    for (const char *p = template; *p && n + 1 < cap; p++) {
        if (*p != '@') {
            dst[n++] = *p;
            continue;
        }
        n += (size_t)snprintf(dst + n, cap - n, "%s", path);
        if (n >= cap) n = cap - 1;
    }
    dst[n] = '\0';
}

/* What a target is before and after: its type, size, modification time and a checksum of its
 * bytes (regular files), or that it does not exist. */
typedef struct snapshot {
    bool     exists;
    mode_t   mode;
    off_t    size;
    struct timespec mtime;
    uint64_t sum;
} snapshot;

static snapshot take(const char *path) {
    snapshot s;
    memset(&s, 0, sizeof s);
    struct stat st;
    if (lstat(path, &st) != 0) return s;
    s.exists = true;
    s.mode = st.st_mode;
    s.size = st.st_size;
    s.mtime = st.st_mtim;
    void *data;
    size_t n;
    if (S_ISREG(st.st_mode) && dbk_file_read_all(path, &data, &n) == DBK_OK) {
        s.sum = dbk_fnv1a64(data, n);
        free(data);
    }
    return s;
}

static bool same(const snapshot *a, const snapshot *b) {
    return a->exists == b->exists && a->mode == b->mode && a->size == b->size && a->mtime.tv_sec == b->mtime.tv_sec &&
           a->mtime.tv_nsec == b->mtime.tv_nsec && a->sum == b->sum;
}

typedef struct target {
    const char *path;     /* relative to dir, except absolute ones */
    const char *expect;   /* a phrase of the refusal */
    bool        file_only, folder_only;
} target;

/* The hostile targets, for file outputs (F) and folder outputs (D). */
static const target targets[] = {
    {"", "empty", false, false},
    {"null", "character device", false, false},   /* a link to /dev/null: a regression replaces the link only */
    {"fifo", "FIFO", false, false},
    {"other/model.ckpt", "exists and is not", true, false},
    {"other/model.ckpt", "not a folder", false, true},
    {"run/result.json", "exists and is not", true, false},
    {"data/imagenette2-224-mini/classes.txt", "inside the dataset folder", true, false},
    {"data/imagenette2-224-mini/classes.txt", "not a folder", false, true},
    {"data/cifar-10-batches-bin/new.out", "inside the dataset folder", false, false},
    {"data/cifar-10-batches-bin", "not a regular file", true, false},
    {"data/cifar-10-batches-bin", "dataset folder", false, true},
    {"data/imagenette2-224-mini", "dataset folder", false, true},
    {"data/imagenette2-224-mini/train/sub", "inside the dataset folder", false, true},
    {"notes.txt", "exists and is not", true, false},
    {"no/such/folder/x.out", "does not exist", true, false},
};

static int no_temp_files(void) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "test -z \"$(find '%s' -name '*.tmp.*' -print -quit)\"", dir);
    DBK_CHECK_MSG(system(cmd) == 0, "a temp file was left in %s", dir);
    return 0;
}

/* One command with its output option on every target of its kind; "@" in args marks the target. */
static int walk(const char *cmd, const char *template, bool folder, const char *work_marker) {
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
        const target *t = &targets[i];
        if ((folder && t->file_only) || (!folder && t->folder_only)) continue;
        char path[4200], args[16384];
        if (!t->path[0] || t->path[0] == '/') snprintf(path, sizeof path, "%s", t->path);
        else snprintf(path, sizeof path, "%s/%s", dir, t->path);
        snapshot before = take(path);
        fill(args, sizeof args, template, path);
        const int rc = run(args), want = t->path[0] ? 1 : 2;
        snapshot after = take(path);
        DBK_CHECK_MSG(rc == want, "%s --out '%s': exit %d, expected %d; output:\n%s", cmd, path, rc, want, out);
        DBK_CHECK_MSG(!strncmp(out, "daybreak: error: ", 17) && strchr(out, '\n') == out + strlen(out) - 1,
                      "%s --out '%s': not one 'daybreak: error:' line:\n%s", cmd, path, out);
        DBK_CHECK_MSG(strstr(out, t->expect) != NULL, "%s --out '%s': the refusal lacks '%s':\n%s", cmd, path,
                      t->expect, out);
        DBK_CHECK_MSG(!strstr(out, work_marker), "%s --out '%s': refused only after the work:\n%s", cmd, path, out);
        DBK_CHECK_MSG(same(&before, &after), "%s --out '%s' changed the target", cmd, path);
        if (no_temp_files()) return 1;
    }
    return 0;
}

static int setup(void) {
    const char *cifar = dbk_test_cifar_dir();
    DBK_CHECK(cifar != NULL);
    /* Data made of links to the real CIFAR-10 (nothing can land in the shared data even if a
     * check failed) and an image-folder dataset's layout beside it. */
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "cd '%s' && mkdir -p data/cifar-10-batches-bin data/imagenette2-224-mini/train "
             "data/imagenette2-224-mini/val other && for f in '%s'/*; do ln -s \"$f\" data/cifar-10-batches-bin/; done && "
             "printf 'n01440764\\tfish\\n' > data/imagenette2-224-mini/classes.txt && mkfifo fifo && ln -s /dev/null null && "
             "printf 'my notes\\n' > notes.txt", dir, cifar);
    DBK_CHECK(system(cmd) == 0);
    char args[8192];
    snprintf(args, sizeof args, "train --backend cpu --quiet --no-progress --batch 32 --train-subset 64 --test-subset 50 "
             "--epochs 1 --target 0 --data '%s/data' --out '%s/run'", dir, dir);
    int rc = run(args);
    DBK_CHECK_MSG(rc == 0, "the setup run exited %d:\n%s", rc, out);
    snprintf(cmd, sizeof cmd, "cp '%s/run/model.ckpt' '%s/other/model.ckpt'", dir, dir);
    DBK_CHECK(system(cmd) == 0);
    return 0;
}

static int every_output_option_should_refuse_hostile_targets_before_any_work(void) {
    char fmt[8192];
    snprintf(fmt, sizeof fmt, "infer --backend cpu --checkpoint '%s/run/model.ckpt' --data '%s/data' --test-subset 2 "
             "--out '@'", dir, dir);
    if (walk("infer", fmt, false, "latency")) return 1;
    snprintf(fmt, sizeof fmt, "pack-data --data '%s/data' --out '@'", dir);
    if (walk("pack-data", fmt, false, "packed")) return 1;
    snprintf(fmt, sizeof fmt, "train --backend cpu --quiet --batch 32 --train-subset 64 --test-subset 50 --epochs 1 "
             "--data '%s/data' --out '@'", dir);
    if (walk("train", fmt, true, "reached")) return 1;
    snprintf(fmt, sizeof fmt, "bench --runs 1 --backend cpu --quiet --batch 32 --train-subset 64 --test-subset 50 "
             "--epochs 1 --data '%s/data' --out '@'", dir);
    if (walk("bench", fmt, true, "run 1/1")) return 1;
    snprintf(fmt, sizeof fmt, "report '%s/run' --out '@'", dir);
    if (walk("report", fmt, true, "report in")) return 1;
#if DBK_WITH_OPENCL
    if (dbk_backend_device_count(DBK_BACKEND_KIND_OPENCL) > 0) {
        if (walk("tune", "tune --backend opencl --budget 1 --out '@'", false, "tuning")) return 1;
    } else {
        dbk_test_note_missing("tune --out", "no OpenCL device");
    }
#else
    /* a build without the OpenCL backend (the sanitizer build) has no tune to walk */
    printf("tune --out: not in this build (no OpenCL backend); the default build checks it\n");
#endif
    return 0;
}

/* Folders that hold a run's or another program's files, and the profiles folder. */
static int run_and_report_folders_should_refuse_other_contents(void) {
    char args[16384];
    snprintf(args, sizeof args, "train --backend cpu --quiet --batch 32 --train-subset 64 --test-subset 50 --epochs 1 "
             "--data '%s/data' --out '%s/other'", dir, dir);
    int rc = run(args);
    DBK_CHECK_MSG(rc == 1 && strstr(out, "model.ckpt already exists"), "train into a folder with a model.ckpt: %d\n%s",
                  rc, out);
    snprintf(args, sizeof args, "report '%s/run' --out '%s/run'", dir, dir);
    rc = run(args);
    DBK_CHECK_MSG(rc == 1 && strstr(out, "is the result folder"), "report --out its input: %d\n%s", rc, out);
    snprintf(args, sizeof args, "report '%s/run' --out '%s/other'", dir, dir);
    rc = run(args);
    DBK_CHECK_MSG(rc == 1 && strstr(out, "other files"), "report into a folder of other files: %d\n%s", rc, out);
    snprintf(args, sizeof args, "DBK_PLATFORMS_DIR='%s/other' '%s' infer --backend cpu --checkpoint '%s/run/model.ckpt' "
             "--data '%s/data' --out '%s/other/entry.json'", dir, exe, dir, dir, dir);
    rc = dbk_test_run_command(args, out, sizeof out);
    DBK_CHECK_MSG(rc == 1 && strstr(out, "DBK_PLATFORMS_DIR"), "an output among the profiles: %d\n%s", rc, out);
    return no_temp_files();
}

/* The recognisers do not refuse everything: an earlier entry and an earlier report are replaced. */
static int earlier_outputs_of_the_same_option_should_be_replaced(void) {
    char args[16384];
    for (int i = 0; i < 2; i++) {
        snprintf(args, sizeof args, "infer --backend cpu --checkpoint '%s/run/model.ckpt' --data '%s/data' "
                 "--test-subset 2 --out '%s/entry.json'", dir, dir, dir);
        int rc = run(args);
        DBK_CHECK_MSG(rc == 0, "infer #%d into its own earlier entry: exit %d\n%s", i + 1, rc, out);
        snprintf(args, sizeof args, "report '%s/run' --out '%s/report'", dir, dir);
        rc = run(args);
        DBK_CHECK_MSG(rc == 0, "report #%d into its own earlier report: exit %d\n%s", i + 1, rc, out);
    }
    return no_temp_files();
}

/* SIGINT while pack-data writes its pack: the temp file is removed, no pack appears, and the
 * process ends of the signal (130 in the shell). */
static int a_signal_should_leave_no_temp_file(void) {
    char cmd[16384];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && '%s' pack-data --data data --out stopped.dbkpack > /dev/null 2>&1 & pid=$!; "
             "for i in $(seq 400); do ls '%s'/stopped.dbkpack.tmp.* > /dev/null 2>&1 && break; sleep 0.05; done; "
             "kill -INT $pid; wait $pid; echo \"status $?\"; ls '%s' | grep -c stopped.dbkpack || true",
             dir, exe, dir, dir);
    int rc = dbk_test_run_command(cmd, out, sizeof out);
    DBK_CHECK_MSG(rc == 0 && strstr(out, "status 130\n0\n"), "pack-data stopped by SIGINT:\n%s", out);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_outputs <path to daybreak>\n");
        return 2;
    }
    static char exe_path[4096];
    if (!realpath(argv[1], exe_path)) { /* the signal test runs it from another folder */
        fprintf(stderr, "test_outputs: %s not found\n", argv[1]);
        return 1;
    }
    exe = exe_path;
    if (!dbk_test_cifar_dir()) return dbk_test_skip_or_fail_in_ci(DBK_TEST_NO_CIFAR);
    dir = dbk_test_tmpdir("outputs");
    if (!dir || setup() != 0) return 1;
    DBK_RUN(every_output_option_should_refuse_hostile_targets_before_any_work);
    DBK_RUN(run_and_report_folders_should_refuse_other_contents);
    DBK_RUN(earlier_outputs_of_the_same_option_should_be_replaced);
    DBK_RUN(a_signal_should_leave_no_temp_file);
    return dbk_test_finish();
}
