/*
 * dist.h — data-parallel training over MPI: the job's processes (ranks), the gradient
 * exchange with optional compression (dist/compress.h), and the link model of its time
 * (dist/link_model.h). The trainer sees it through train/peers.h (dbk_dist_peers).
 *
 * Built with MPI when CMake finds it (dist_mpi.c); otherwise (dist_nompi.c) dbk_dist_init
 * fails with a message saying the build has no MPI. A collective that does not complete
 * within the configured timeout fails the rank with a message naming the collective, the
 * rank and the step (a peer failed, died or hangs); the application then prints it and calls
 * dbk_dist_abort, which ends every rank of the job.
 */
#ifndef DBK_DIST_H
#define DBK_DIST_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"
#include "dist/compress.h"
#include "train/peers.h"

typedef struct dbk_dist dbk_dist;

typedef struct dbk_dist_options {
    dbk_compress_spec compress;
    double   timeout_seconds;     /* a collective not done within this fails the rank */
    bool     sync_statistics;     /* average batch-norm running statistics before evaluation */
    uint64_t seed;                /* the run's seed: random-k, TernGrad and QSGD draws */
    int      link_count;          /* links of the exchange-time model */
    double   link_gbps[DBK_PEERS_MAX_LINKS];
    double   link_latency_us[DBK_PEERS_MAX_LINKS];
    int      local_steps;         /* > 0: model averaging every this many steps (--local-steps)
                                     instead of a gradient exchange every step */
} dbk_dist_options;

/* Whether this build has MPI (false: dbk_dist_init always fails). */
bool       dbk_dist_compiled(void);
/* MPI_Init; errors become return values (MPI_ERRORS_RETURN). */
dbk_status dbk_dist_init(int *argc, char ***argv, dbk_dist **out);
int        dbk_dist_rank(const dbk_dist *d);
int        dbk_dist_size(const dbk_dist *d);
int        dbk_dist_local_rank(const dbk_dist *d);   /* rank among the processes of this host */
/* The options of the job (the same on every rank); before dbk_dist_peers is used. */
void       dbk_dist_configure(dbk_dist *d, const dbk_dist_options *opt);
/* The trainer's view of the job (train/peers.h); d must outlive it. */
void       dbk_dist_peers(dbk_dist *d, dbk_peers *out);
/* The exchange alone, on the host (what the session's exchange does between its read-back
 * and write-back; tests call it directly): prepares for a flat gradient vector of flat_count
 * floats whose trainable tensors are segments (offsets and counts in it, not overlapping),
 * returning in *flat (may be NULL) the vector to fill; dbk_dist_exchange_host then replaces
 * the segments of that vector by their average over the ranks, as configured (collective). */
dbk_status dbk_dist_prepare_exchange(dbk_dist *d, const dbk_segment *segments, int count, size_t flat_count,
                                     float **flat);
dbk_status dbk_dist_exchange_host(dbk_dist *d, float *flat);
/* The counts so far, as result.json reports them (collective). */
dbk_status dbk_dist_summary(dbk_dist *d, dbk_peers_summary *out);

/* Ends every rank of the job with exit code `code` (after this rank printed why). */
void       dbk_dist_abort(dbk_dist *d, int code);
/* MPI_Finalize and free; accepts NULL. */
void       dbk_dist_finalize(dbk_dist *d);

#endif
