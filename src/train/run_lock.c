/*
 * run_lock.c — the run folder's lock (see run_lock.h).
 */
#define _DEFAULT_SOURCE
#include "train/run_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

static void lock_path(const char *dir, char *out, size_t cap) { snprintf(out, cap, "%s/%s", dir, DBK_RUN_LOCK_FILE); }

/* The holder's "PID HOST" from the lock file, for the message ("unknown" if unreadable). */
static void read_holder(int fd, char *out, size_t cap) {
    ssize_t n = pread(fd, out, cap - 1, 0);
    out[n > 0 ? n : 0] = '\0';
    out[strcspn(out, "\n")] = '\0';
    if (!out[0]) snprintf(out, cap, "unknown");
}

dbk_status dbk_run_lock_acquire(const char *dir, dbk_run_lock *lock) {
    char path[4200];
    lock_path(dir, path, sizeof path);
    lock->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock->fd < 0) return dbk_set_error(DBK_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    if (flock(lock->fd, LOCK_EX | LOCK_NB) != 0) {
        int err = errno;
        char holder[300];
        read_holder(lock->fd, holder, sizeof holder);
        close(lock->fd);
        lock->fd = -1;
        if (err == EWOULDBLOCK) {
            char pid[32] = "", host[256] = "";
            if (sscanf(holder, "%31s %255s", pid, host) == 2)
                return dbk_set_error(DBK_ERR_IO, "%s is in use by another run (pid %s on %s)", dir, pid, host);
            return dbk_set_error(DBK_ERR_IO, "%s is in use by another run (holder %s)", dir, holder);
        }
        return dbk_set_error(DBK_ERR_IO, "cannot lock %s: %s", path, strerror(err));
    }
    char host[256] = "unknown", text[320];
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "unknown");
    host[sizeof host - 1] = '\0';
    int n = snprintf(text, sizeof text, "%ld %s\n", (long)getpid(), host);
    if (ftruncate(lock->fd, 0) != 0 || pwrite(lock->fd, text, (size_t)n, 0) != n) {
        int err = errno;
        dbk_run_lock_release(lock);
        return dbk_set_error(DBK_ERR_IO, "cannot write %s: %s", path, strerror(err));
    }
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
