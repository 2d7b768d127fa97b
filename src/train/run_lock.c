/*
 * run_lock.c — the run folder's lock (see run_lock.h).
 *
 * A lock file is complete before anyone can see it: the taker writes "PID HOST" into a private
 * file run.lock.XXXXXX, locks it, and only then renames it to run.lock. So a run that finds
 * run.lock held always reads its holder's pid, never an empty file. Replacing a stale run.lock
 * (left by a run that ended or was killed) is serialised by a brief flock on the folder itself,
 * so two takers cannot both replace it and both believe they hold it.
 */
#define _GNU_SOURCE
#include "train/run_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static void lock_path(const char *dir, char *out, size_t cap) { snprintf(out, cap, "%s/%s", dir, DBK_RUN_LOCK_FILE); }

/* The holder's "PID HOST" from the lock file, for the message ("unknown" if unreadable). */
static void read_holder(int fd, char *out, size_t cap) {
    ssize_t n = pread(fd, out, cap - 1, 0);
    out[n > 0 ? n : 0] = '\0';
    out[strcspn(out, "\n")] = '\0';
    if (!out[0]) snprintf(out, cap, "unknown");
}

static dbk_status in_use_error(const char *dir, const char *holder) {
    char pid[32] = "", host[256] = "";
    if (sscanf(holder, "%31s %255s", pid, host) == 2)
        return dbk_set_error(DBK_ERR_IO, "%s is in use by another run (pid %s on %s)", dir, pid, host);
    return dbk_set_error(DBK_ERR_IO, "%s is in use by another run (holder %s)", dir, holder);
}

/* Creates a new file from the template tmp (run.lock.XXXXXX) holding "PID HOST\n", locked by
 * this process; its fd, or -1 with errno. */
static int write_private_lock(char *tmp) {
    char host[256] = "unknown", text[320];
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "unknown");
    host[sizeof host - 1] = '\0';
    int n = snprintf(text, sizeof text, "%ld %s\n", (long)getpid(), host);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) return -1;
    if (fchmod(fd, 0644) != 0 || flock(fd, LOCK_EX | LOCK_NB) != 0 || pwrite(fd, text, (size_t)n, 0) != n) {
        int err = errno;
        close(fd);
        unlink(tmp);
        errno = err;
        return -1;
    }
    return fd;
}

/* With the folder's flock held: puts the private lock file tmp in place of run.lock unless a
 * live run holds run.lock (then DBK_ERR_IO naming it). */
static dbk_status install_lock(const char *dir, const char *path, const char *tmp) {
    int old = open(path, O_RDONLY | O_CLOEXEC);
    if (old >= 0) {
        if (flock(old, LOCK_SH | LOCK_NB) != 0) {
            int err = errno;
            char holder[300];
            read_holder(old, holder, sizeof holder);
            close(old);
            if (err == EWOULDBLOCK) return in_use_error(dir, holder);
            return dbk_set_error(DBK_ERR_IO, "cannot lock %s: %s", path, strerror(err));
        }
    } else if (errno != ENOENT) {
        return dbk_set_error(DBK_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    }
    dbk_status st = DBK_OK;
    if (rename(tmp, path) != 0) st = dbk_set_error(DBK_ERR_IO, "cannot create %s: %s", path, strerror(errno));
    if (old >= 0) close(old);
    return st;
}

dbk_status dbk_run_lock_acquire(const char *dir, dbk_run_lock *lock) {
    char path[4200], tmp[4300];
    lock_path(dir, path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
    lock->fd = -1;
    int dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0) return dbk_set_error(DBK_ERR_IO, "cannot open %s: %s", dir, strerror(errno));
    int fd = write_private_lock(tmp);
    if (fd < 0) {
        int err = errno;
        close(dir_fd);
        return dbk_set_error(DBK_ERR_IO, "cannot write %s: %s", tmp, strerror(err));
    }
    /* Where a folder cannot be flocked (NFS emulates flock with POSIX locks, which need a
     * writable descriptor) the replacement goes unguarded: only two runs starting at the same
     * instant on a folder with a stale lock file could then both take it. */
    const bool guarded = flock(dir_fd, LOCK_EX) == 0;
    dbk_status st = install_lock(dir, path, tmp);
    if (guarded) flock(dir_fd, LOCK_UN);
    close(dir_fd);
    if (st != DBK_OK) {
        unlink(tmp);
        close(fd);
        return st;
    }
    lock->fd = fd;
    return DBK_OK;
}

void dbk_run_lock_release(dbk_run_lock *lock) {
    if (lock->fd < 0) return;
    close(lock->fd); /* closing the only descriptor drops the flock */
    lock->fd = -1;
}

void dbk_run_lock_discard(dbk_run_lock *lock, const char *dir) {
    if (lock->fd < 0) return;
    char path[4200];
    lock_path(dir, path, sizeof path);
    unlink(path); /* while still held, so no other run has taken it meanwhile */
    dbk_run_lock_release(lock);
}

bool dbk_run_lock_is_held(const char *dir) {
    char path[4200];
    lock_path(dir, path, sizeof path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    bool held = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd);
    return held;
}
