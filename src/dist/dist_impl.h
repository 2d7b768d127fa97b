/*
 * dist_impl.h — the rank's state and the collectives with a deadline, shared by dist_mpi.c
 * (MPI; or dist_nompi.c, which has none) and dist_exchange.c (the gradient exchange, no MPI
 * types). INTERNAL: include only from src/dist/.
 */
#ifndef DBK_DIST_IMPL_H
#define DBK_DIST_IMPL_H

#include "dist/compress_device.h"
#include "dist/dist.h"

struct dbk_dist {
    int              rank, size, local_rank;
    dbk_dist_options opt;
    dbk_peers_summary summary;    /* this rank's counts (bytes: its own payloads) */
    /* the exchange, sized by attach */
    struct dbk_session *session;
    dbk_compressor  *compressor;
    dbk_device_compressor *device; /* top-k, threshold: compression on the training device */
    dbk_segment     *segments;    /* (segment_count) trainable tensors in the flat buffer */
    int              segment_count;
    size_t           flat_count;  /* floats of the flat gradient buffer */
    size_t           packed_count;/* trainable floats */
    float           *flat;        /* (flat_count) the gradients as read back */
    float           *packed;      /* (packed_count) the trainable ones, packed */
    float           *mean;        /* (packed_count) the decoded average */
    uint8_t         *send;        /* (max payload) */
    uint8_t         *recv;        /* (size * max payload) */
    int             *counts, *displs; /* (size) payload bytes and offsets per rank */
    double          *payload;     /* (size) this step's payload bytes per rank, for the model */
    float           *statistics;  /* (statistics_count) for --sync-bn-stats */
    size_t           statistics_count;
    long             step;        /* exchanges done: names the step in messages, seeds draws */
    struct dbk_average *average;  /* model averaging (--local-steps): dist_average.c */
};

/* Collectives over every rank, polled until done or the timeout (then an error naming what,
 * the rank and the step). */
dbk_status dbk_dist_sum_f32(dbk_dist *d, float *v, size_t n, const char *what);
dbk_status dbk_dist_reduce_f64(dbk_dist *d, double *v, int n, dbk_peers_op op, const char *what);
/* Rank 0's `bytes` bytes of data to every rank. */
dbk_status dbk_dist_broadcast(dbk_dist *d, void *data, size_t bytes, const char *what);
/* Every rank's `bytes` bytes into recv (size * bytes, in rank order). */
dbk_status dbk_dist_allgather(dbk_dist *d, const void *send, int bytes, void *recv, const char *what);
/* Every rank's counts[r] bytes into recv at displs[r]. */
dbk_status dbk_dist_allgatherv(dbk_dist *d, const void *send, int bytes, void *recv, const int *counts,
                               const int *displs, const char *what);

/* dist_exchange.c: the peers table's functions. */
dbk_status dbk_dist_attach(void *ctx, struct dbk_session *s, const dbk_device_info *device);
void       dbk_dist_detach(void *ctx);
/* dist_state.c: the exchange's part of resume.ckpt (train/peers.h save_state, restore_state). */
dbk_status dbk_dist_save_state(void *ctx, char **meta_json, float **residuals, int64_t shape[2]);
dbk_status dbk_dist_restore_state(void *ctx, const struct dbk_checkpoint *ckpt, const char *path);
dbk_status dbk_dist_before_eval(void *ctx, struct dbk_session *s);
dbk_status dbk_dist_summarise(void *ctx, dbk_peers_summary *out);
void       dbk_dist_release_exchange(dbk_dist *d);

/* dist_average.c: model averaging every opt.local_steps steps (train/peers.h, averaging):
 * attach's part, the peers functions, and the release. */
dbk_status dbk_dist_average_attach(dbk_dist *d, struct dbk_session *s);
void       dbk_dist_average_release(dbk_dist *d);
dbk_status dbk_dist_average_after_step(void *ctx, struct dbk_session *s, long run_step, long run_steps);
dbk_status dbk_dist_average_now(void *ctx, struct dbk_session *s);
dbk_status dbk_dist_average_set_shares(void *ctx, struct dbk_session *s, const int32_t *const *shares,
                                       const size_t *counts);
dbk_status dbk_dist_average_before_eval(dbk_dist *d, struct dbk_session *s);
dbk_status dbk_dist_average_after_eval(void *ctx, struct dbk_session *s);

#endif
