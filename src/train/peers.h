/*
 * peers.h — what the trainer sees of data-parallel training: the other processes of the job
 * ("peers") as a small table of functions, filled by src/dist (dbk_dist_peers) so that train/
 * never calls MPI. NULL in dbk_train_options means one process.
 *
 * With peers, every rank runs the same trainer: the session's step becomes forward and
 * backward, attach's exchange (the gradients averaged over the ranks), then the optimizer
 * update; the training set is sharded per step (rank r trains on rows r*B.. of each global
 * batch of size*B rows of the shared permutation); counters are summed and the clock takes
 * the slowest rank; rank 0 evaluates and writes the files and broadcasts what the others need
 * to take the same decisions. Every call is collective: every rank makes it, in the same order.
 */
#ifndef DBK_PEERS_H
#define DBK_PEERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "core/status.h"

struct dbk_session;
struct dbk_checkpoint;

typedef enum dbk_peers_op {
    DBK_PEERS_SUM,        /* every rank gets the sum */
    DBK_PEERS_MAX,        /* every rank gets the largest */
    DBK_PEERS_BROADCAST,  /* every rank gets rank 0's values */
} dbk_peers_op;

#define DBK_PEERS_MAX_LINKS  4
#define DBK_PEERS_MAX_LISTED 8  /* ranks whose device is listed in the summary */

/* What result.json and the report say about the exchange (docs/distributed.md). */
typedef struct dbk_peers_summary {
    int    ranks;                                /* 0: not a distributed run */
    char   devices[DBK_PEERS_MAX_LISTED][160];   /* per rank: its device name */
    char   compress[48];                         /* "none", "topk:0.01", ... */
    bool   layerwise, error_feedback, sync_statistics;
    bool   compression_on_device;                /* every compressor: encoding and decoding on the device */
    long   steps;                                /* gradient exchanges so far */
    double gradient_floats;                      /* trainable gradient values exchanged per step */
    double bytes_sent;                           /* payload bytes, all ranks together, whole run */
    double exchange_seconds;                     /* per rank (mean over ranks), whole run */
    double codec_seconds;                        /* of which encoding and decoding (host or device) */
    int    link_count;                           /* modelled links */
    double link_gbps[DBK_PEERS_MAX_LINKS];
    double link_latency_us[DBK_PEERS_MAX_LINKS];
    double modelled_exchange_seconds[DBK_PEERS_MAX_LINKS]; /* whole run, on that link (a model) */
    /* model averaging (--local-steps; local_steps 0: a gradient exchange every step) */
    int    local_steps;                          /* steps between averages */
    long   train_steps;                          /* training steps so far (each rank's) */
    long   averages;                             /* models averaged so far (steps: the training steps) */
    double trainable_values;                     /* trainable parameters: the dense average's and the
                                                    gradient allreduce's values */
    double statistics_values;                    /* batch-norm statistics, averaged with the model */
    double averaged_values;                      /* values sent per rank over all averages (parameters
                                                    and statistics) */
} dbk_peers_summary;

typedef struct dbk_peers {
    void *ctx;
    int   rank, size;
    /* After the session is built (with shard_count = size, separate_update): sizes the
     * exchange from its trainable tensors and installs it as the session's exchange. */
    dbk_status (*attach)(void *ctx, struct dbk_session *s, const dbk_device_info *device);
    /* Before the session and its backend are destroyed: releases what attach created on the
     * device (not collective; the summary stays). */
    void (*detach)(void *ctx);
    /* v[0..n) combined over the ranks in place; what names the values in a timeout message. */
    dbk_status (*reduce)(void *ctx, double *v, int n, dbk_peers_op op, const char *what);
    /* Before rank 0 evaluates: the batch-norm running statistics averaged over the ranks when
     * the job asked for it (--sync-bn-stats), else nothing. */
    dbk_status (*before_eval)(void *ctx, struct dbk_session *s);
    /* The summary so far (collective: sums the ranks' counts). */
    dbk_status (*summarise)(void *ctx, dbk_peers_summary *out);
    /* For resume.ckpt (collective): *meta_json (owned by the caller, dbk_free) the object
     * "distributed" of its metadata (ranks, exchanges done, the counts of the summary), and on
     * rank 0, with error feedback, *residuals (owned, dbk_free) every rank's residual, (ranks,
     * n) floats in rank order (else NULL, shape untouched). */
    dbk_status (*save_state)(void *ctx, char **meta_json, float **residuals, int64_t shape[2]);
    /* From a loaded resume.ckpt (every rank): the exchange's counts and this rank's residual.
     * DBK_ERR_INVALID_ARG when the job's ranks or exchange differ from the saved run's. */
    dbk_status (*restore_state)(void *ctx, const struct dbk_checkpoint *ckpt, const char *path);
    /* Rank 0's `bytes` bytes of data to every rank (collective; a sparse mask's selection). */
    dbk_status (*broadcast)(void *ctx, void *data, size_t bytes, const char *what);
    /* --- model averaging (--local-steps, docs/sparse-masks.md); `averaging` false: these
     * are not called (the job exchanges gradients every step) --- */
    bool averaging;
    /* After each training step (collective): the ranks' models averaged every `local steps`
     * steps and after the run's last step (run_step of run_steps done). */
    dbk_status (*after_step)(void *ctx, struct dbk_session *s, long run_step, long run_steps);
    /* An average now if a step ran since the last one, so that every rank holds the same model
     * (before a mask is computed from it). Collective. */
    dbk_status (*average_now)(void *ctx, struct dbk_session *s);
    /* The parameters each rank trains: shares[r][0..counts[r]) packed selectable indices
     * (train/sparse_mask.h), or shares NULL: every trainable parameter (dense averaging). The
     * classifier, which every rank trains, is added. Not collective (every rank knows all). */
    dbk_status (*set_shares)(void *ctx, struct dbk_session *s, const int32_t *const *shares, const size_t *counts);
    /* After rank 0 evaluated the last average (before_eval put it in place): its own model back. */
    dbk_status (*after_eval)(void *ctx, struct dbk_session *s);
} dbk_peers;

/* --- the trainer's uses (peers.c); with p NULL each is what one process does -------------- */

struct dbk_epoch_counters;

/* The epoch's counters summed over the ranks and its seconds the slowest rank's. */
dbk_status dbk_peers_combine_epoch(const dbk_peers *p, struct dbk_epoch_counters *c, double *seconds);
/* Rank 0's value of seconds on every rank (preprocessing: the slowest rank's). */
dbk_status dbk_peers_slowest(const dbk_peers *p, double *seconds, const char *what);
/* Whether this rank evaluates (rank 0, or the only process). */
bool       dbk_peers_evaluates(const dbk_peers *p);
/* Rank 0's evaluation (counters and seconds) to every rank. */
dbk_status dbk_peers_share_eval(const dbk_peers *p, struct dbk_epoch_counters *c, double *seconds);
/* The stop signal the ranks agree on (the largest of theirs, 0 if none): a SIGINT or SIGTERM
 * that reached one rank stops every rank at the same step boundary, instead of leaving the
 * others waiting in an exchange the stopped rank never joins. */
dbk_status dbk_peers_agree_stop(const dbk_peers *p, int *signal);
/* Whether this rank writes the run's files (rank 0, or the only process). */
bool       dbk_peers_writes_files(const dbk_peers *p);

#endif
