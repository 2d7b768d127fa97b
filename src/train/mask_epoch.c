/*
 * mask_epoch.c — a run's sparse mask from epoch to epoch (see sparse_mask.h,
 * dbk_mask_begin_epoch): the warm-up, the Fisher or random mask, recomputed or fixed, and in
 * a distributed job the selection shared out between the ranks.
 */
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/rng.h"
#include "core/timer.h"
#include "nn/graph.h"
#include "train/peers.h"
#include "train/session.h"
#include "train/sparse_mask.h"

void dbk_mask_report_init(dbk_mask_report *rep, const dbk_mask_spec *spec, const dbk_session *s) {
    const dbk_mask_report counts = *rep; /* a resumed run's computations so far (resume.ckpt) */
    memset(rep, 0, sizeof *rep);
    rep->computations = counts.computations;
    rep->seconds = counts.seconds;
    rep->mask_bytes = counts.mask_bytes;
    const dbk_mask_layout *l = dbk_session_mask_layout(s);
    if (!l || spec->method == DBK_MASK_ALL) return;
    rep->on = true;
    dbk_mask_spec_format(spec, rep->spec, sizeof rep->spec);
    rep->param_count = l->param_count;
    rep->classifier_count = l->classifier_count;
    rep->frozen_count = l->frozen_count;
    rep->selectable_count = l->selectable_count;
    rep->keep_count = l->keep_count;
    rep->select_count = l->select_count;
    rep->samples = spec->method == DBK_MASK_FISHER ? l->samples : 0;
}

void dbk_mask_report_print(const dbk_mask_report *rep, const dbk_mask_spec *spec, int ranks, FILE *out) {
    if (!rep->on) return;
    const double trained = (double)(rep->keep_count + rep->classifier_count);
    fprintf(out, "sparse mask %s: %zu of %zu parameters train (%.3f%%: %zu chosen of %zu, the classifier's %zu)",
            rep->spec, (size_t)trained, rep->param_count, 100.0 * trained / (double)rep->param_count, rep->keep_count,
            rep->selectable_count, rep->classifier_count);
    if (ranks > 1 && rep->select_count > rep->keep_count) fprintf(out, ", each rank its share of the top %zu", rep->select_count);
    if (spec->method == DBK_MASK_FISHER) fprintf(out, "; Fisher information of %d images (%s gradients)", rep->samples,
                                                 spec->absolute ? "absolute" : "squared");
    fprintf(out, "; %s", spec->fixed ? "computed once" : "recomputed every epoch");
    if (spec->warmup_epochs > 0) fprintf(out, " after %d dense epoch%s", spec->warmup_epochs,
                                         spec->warmup_epochs == 1 ? "" : "s");
    fprintf(out, "\n");
    fflush(out);
}

/* Ranks sharing out one selection (interleaved), 1 when every rank trains the same mask. */
static int sharing_ranks(const dbk_mask_spec *spec, const dbk_peers *peers) {
    return peers && peers->averaging && !spec->same_for_ranks ? peers->size : 1;
}

/* Every rank's share of picks[0..n) into shares (each n entries), counts. */
static void deal(dbk_mask_pick *picks, size_t n, const dbk_mask_spec *spec, int ranks, int32_t **shares,
                 size_t *counts) {
    for (int r = 0; r < ranks; r++) counts[r] = dbk_mask_share(picks, n, ranks, r, spec->same_for_ranks, shares[r]);
}

/* The selection's picks (Fisher: the device's, rank 0's broadcast in a job; random: drawn). */
static dbk_status select_picks(dbk_session *s, const dbk_mask_spec *spec, const dbk_peers *peers, uint64_t seed,
                               int epoch, dbk_mask_pick *picks, size_t n, dbk_mask_report *rep) {
    const uint32_t draw = dbk_hash_u32((uint32_t)seed, (uint32_t)(seed >> 32), (uint32_t)epoch, 0xf15bu);
    if (spec->method == DBK_MASK_RANDOM) {
        /* The same draw on every rank: a seed from the run's and the epoch's. */
        if (!dbk_mask_draw_random(dbk_session_mask_layout(s)->selectable_count, n, (uint64_t)draw << 32 | draw, picks))
            return DBK_ERR_OUT_OF_HOST_MEMORY;
        return DBK_OK;
    }
    DBK_TRY(dbk_session_fisher_select(s, spec->samples, draw, n));
    DBK_TRY(dbk_session_read_selection(s, picks));
    if (!peers) return DBK_OK;
    /* Every rank computed the same importance; rank 0's selection decides, so that a rounding
     * difference between the ranks' devices cannot give two ranks the same position. */
    DBK_TRY(peers->broadcast(peers->ctx, picks, n * sizeof *picks, "sparse mask selection"));
    rep->mask_bytes += (double)(n * sizeof *picks);
    return DBK_OK;
}

/* A new mask: selected, dealt out, this rank's share into the session, every share to the
 * averaging. */
static dbk_status compute(dbk_session *s, const dbk_mask_spec *spec, const dbk_peers *peers, uint64_t seed, int epoch,
                          dbk_mask_report *rep) {
    const dbk_mask_layout *l = dbk_session_mask_layout(s);
    const int ranks = sharing_ranks(spec, peers), rank = peers ? peers->rank : 0;
    const size_t n = l->select_count;
    if (spec->method == DBK_MASK_FISHER && !peers && ranks == 1) { /* all on the device */
        DBK_TRY(dbk_session_fisher_select(s, spec->samples, dbk_hash_u32((uint32_t)seed, (uint32_t)(seed >> 32),
                                                                         (uint32_t)epoch, 0xf15bu), n));
        return dbk_session_mask_from_selection(s);
    }
    dbk_mask_pick *picks = dbk_malloc(n * sizeof *picks + sizeof *picks);
    int32_t **shares = dbk_calloc((size_t)ranks, sizeof *shares);
    size_t *counts = dbk_calloc((size_t)ranks, sizeof *counts);
    dbk_status st = picks && shares && counts ? DBK_OK : DBK_ERR_OUT_OF_HOST_MEMORY;
    for (int r = 0; st == DBK_OK && r < ranks; r++)
        if (!(shares[r] = dbk_malloc(n * sizeof *shares[r] + 4))) st = DBK_ERR_OUT_OF_HOST_MEMORY;
    if (st == DBK_OK) st = select_picks(s, spec, peers, seed, epoch, picks, n, rep);
    if (st == DBK_OK) {
        deal(picks, n, spec, ranks, shares, counts);
        st = dbk_session_mask_from_indices(s, shares[rank % ranks], counts[rank % ranks]);
    }
    if (st == DBK_OK && peers && peers->averaging) {
        /* With the same mask on every rank, each one's share is the whole selection. */
        const int32_t *const *all = (const int32_t *const *)shares;
        const int32_t **same = NULL;
        size_t *same_counts = NULL;
        if (ranks == 1 && peers->size > 1) {
            same = dbk_calloc((size_t)peers->size, sizeof *same);
            same_counts = dbk_calloc((size_t)peers->size, sizeof *same_counts);
            if (!same || !same_counts) st = DBK_ERR_OUT_OF_HOST_MEMORY;
            for (int r = 0; st == DBK_OK && r < peers->size; r++) {
                same[r] = shares[0];
                same_counts[r] = counts[0];
            }
            all = same;
        }
        if (st == DBK_OK) st = peers->set_shares(peers->ctx, s, all, same_counts ? same_counts : counts);
        dbk_free(same);
        dbk_free(same_counts);
    }
    for (int r = 0; shares && r < ranks; r++) dbk_free(shares[r]);
    dbk_free(shares);
    dbk_free(counts);
    dbk_free(picks);
    return st;
}

dbk_status dbk_mask_begin_epoch(dbk_session *s, const dbk_mask_spec *spec, const dbk_peers *peers, uint64_t seed,
                                int epoch, dbk_mask_report *rep) {
    if (spec->method == DBK_MASK_ALL) return DBK_OK;
    if (epoch <= spec->warmup_epochs) {
        if (peers && peers->averaging) DBK_TRY(peers->set_shares(peers->ctx, s, NULL, NULL));
        return dbk_session_mask_dense(s);
    }
    if (spec->fixed && epoch > spec->warmup_epochs + 1) return DBK_OK; /* computed once, kept (or resumed) */
    const double t0 = dbk_time_now();
    /* The importance of one model: every rank's the same, the last average. */
    if (peers && peers->averaging) DBK_TRY(peers->average_now(peers->ctx, s));
    DBK_TRY(compute(s, spec, peers, seed, epoch, rep));
    DBK_TRY(dbk_backend_sync(dbk_session_backend(s)));
    rep->computations++;
    rep->seconds += dbk_time_now() - t0;
    return DBK_OK;
}
