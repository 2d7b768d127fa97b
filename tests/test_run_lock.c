/*
 * test_run_lock.c — the run folder's lock under a race (ctest `run_lock`, label unit; 2-4 s
 * on the loaded 2-core machine).
 *
 * Two takers race for one folder 1,000 times, as two `daybreak train --out DIR` started
 * together do: exactly one must win each time, and the loser's message must name the holder
 * "(pid N on HOST)" — never an empty lock file read before the holder wrote its pid — whether
 * the folder had no lock file yet or a stale one left by an earlier run.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"
#include "train/run_lock.h"

enum { TRIALS = 1000 };

typedef struct taker {
    const char *dir;
    pthread_barrier_t *start;
    dbk_run_lock lock;
    dbk_status status;
    char message[1024];
} taker;

static void *take(void *arg) {
    taker *t = arg;
    pthread_barrier_wait(t->start);
    t->status = dbk_run_lock_acquire(t->dir, &t->lock);
    snprintf(t->message, sizeof t->message, "%s", t->status == DBK_OK ? "" : dbk_last_error());
    return NULL;
}

/* Files in dir other than run.lock: leftovers of the private lock files. */
static int stray_files(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, DBK_RUN_LOCK_FILE)) n++;
    closedir(d);
    return n;
}

static int racing_takers_should_lock_out_one_naming_the_holder(void) {
    const char *dir = dbk_test_tmpdir("run_lock-race");
    DBK_CHECK(dir != NULL);
    char expect[64], host[256] = "";
    gethostname(host, sizeof host);
    snprintf(expect, sizeof expect, "(pid %ld on ", (long)getpid());
    for (int trial = 0; trial < TRIALS; trial++) {
        pthread_barrier_t start;
        pthread_barrier_init(&start, NULL, 2);
        taker t[2] = {{.dir = dir, .start = &start}, {.dir = dir, .start = &start}};
        pthread_t th[2];
        for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, take, &t[i]);
        for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
        pthread_barrier_destroy(&start);
        int winners = (t[0].status == DBK_OK) + (t[1].status == DBK_OK);
        DBK_CHECK_MSG(winners == 1, "trial %d: %d takers hold the lock (%s / %s)", trial, winners, t[0].message,
                      t[1].message);
        taker *winner = t[0].status == DBK_OK ? &t[0] : &t[1], *loser = winner == &t[0] ? &t[1] : &t[0];
        DBK_CHECK_MSG(strstr(loser->message, "is in use by another run") && strstr(loser->message, expect) &&
                          strstr(loser->message, host),
                      "trial %d: the loser said '%s', expected '... %s%s)'", trial, loser->message, expect, host);
        DBK_CHECK_MSG(dbk_run_lock_is_held(dir), "trial %d: the lock should be seen held", trial);
        /* Alternate between a folder without a lock file and one with a stale lock file. */
        if (trial % 2) dbk_run_lock_discard(&winner->lock, dir);
        else dbk_run_lock_release(&winner->lock);
        DBK_CHECK_MSG(!dbk_run_lock_is_held(dir), "trial %d: a released lock should be seen free", trial);
    }
    DBK_CHECK_MSG(stray_files(dir) == 0, "%d private lock files were left in %s", stray_files(dir), dir);
    return 0;
}

int main(void) {
    DBK_RUN(racing_takers_should_lock_out_one_naming_the_holder);
    return dbk_test_finish();
}
