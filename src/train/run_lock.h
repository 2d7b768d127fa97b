/*
 * run_lock.h — the exclusive lock of a run folder, so two runs never share an --out.
 *
 * The lock is flock(LOCK_EX) on DIR/run.lock, a text file holding "PID HOST" of the holder,
 * written before the file is renamed into place, so whoever sees it held reads the holder.
 * The kernel drops it when the holder exits in any way (SIGKILL included), so a free lock on a
 * folder whose result.json still says "running" means that run was killed.
 */
#ifndef DBK_RUN_LOCK_H
#define DBK_RUN_LOCK_H

#include <stdbool.h>

#include "core/status.h"

#define DBK_RUN_LOCK_FILE "run.lock"

typedef struct dbk_run_lock {
    int fd;                         /* -1 when not held */
} dbk_run_lock;

/* Takes the lock of the existing folder dir without waiting and writes this process's pid and
 * host into the lock file. DBK_ERR_IO with "DIR is in use by another run (pid N on HOST)"
 * when another process holds it, or naming the lock file for other failures. */
dbk_status dbk_run_lock_acquire(const char *dir, dbk_run_lock *lock);

/* Releases the lock (the lock file stays: it is free, not gone). Accepts a lock not held. */
void dbk_run_lock_release(dbk_run_lock *lock);

/* Releases the lock and deletes the lock file: for a run that could not start and leaves
 * nothing behind. */
void dbk_run_lock_discard(dbk_run_lock *lock, const char *dir);

/* Whether some process holds dir's lock now (false when there is no lock file). */
bool dbk_run_lock_is_held(const char *dir);

#endif
