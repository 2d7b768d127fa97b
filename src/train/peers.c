/*
 * peers.c — the trainer's collective steps of a data-parallel run (see peers.h): counters and
 * the clock combined over the ranks, rank 0's evaluation shared.
 */
#include "train/peers.h"

#include "train/session.h"

dbk_status dbk_peers_combine_epoch(const dbk_peers *p, dbk_epoch_counters *c, double *seconds) {
    if (!p) return DBK_OK;
    double sums[3] = {c->loss_sum, c->correct, (double)c->images};
    DBK_TRY(p->reduce(p->ctx, sums, 3, DBK_PEERS_SUM, "epoch counters"));
    c->loss_sum = sums[0];
    c->correct = sums[1];
    c->images = (int64_t)sums[2];
    return dbk_peers_slowest(p, seconds, "epoch time");
}

dbk_status dbk_peers_slowest(const dbk_peers *p, double *seconds, const char *what) {
    return p ? p->reduce(p->ctx, seconds, 1, DBK_PEERS_MAX, what) : DBK_OK;
}

dbk_status dbk_peers_agree_stop(const dbk_peers *p, int *signal) {
    if (!p) return DBK_OK;
    double v = *signal;
    DBK_TRY(p->reduce(p->ctx, &v, 1, DBK_PEERS_MAX, "stop signal"));
    *signal = (int)v;
    return DBK_OK;
}

bool dbk_peers_evaluates(const dbk_peers *p) { return !p || p->rank == 0; }

bool dbk_peers_writes_files(const dbk_peers *p) { return !p || p->rank == 0; }

dbk_status dbk_peers_share_eval(const dbk_peers *p, dbk_epoch_counters *c, double *seconds) {
    if (!p) return DBK_OK;
    double v[4] = {c->loss_sum, c->correct, (double)c->images, *seconds};
    DBK_TRY(p->reduce(p->ctx, v, 4, DBK_PEERS_BROADCAST, "rank 0's evaluation"));
    c->loss_sum = v[0];
    c->correct = v[1];
    c->images = (int64_t)v[2];
    *seconds = v[3];
    return DBK_OK;
}
