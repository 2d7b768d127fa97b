/*
 * dist_average.c — sparse model averaging (--local-steps M; FISH's asgd_dawn.py, docs/sparse-
 * masks.md): every rank trains its own copy of the model for M steps, then the copies are
 * averaged and every rank continues from the average.
 *
 * What travels: each rank trains only the parameters of its mask share and the classifier
 * (the optimizer leaves the others exactly as they were), so its copy differs from the last
 * average only there; it sends just those values, 4 bytes each (the positions are known to
 * every rank: the masks are dealt out deterministically), and its batch-norm statistics. With
 * every parameter trained (a dense mask, or --sparse-mask all) the values are all the
 * trainable ones: the dense model average.
 *
 * The average, as merge_models(..., 'mean') of the source: per position j,
 *   avg[j] = base[j] + (sum over the ranks r that train j of (p_r[j] - base[j])) / N
 * with base the last average and N the ranks: a position one rank trains moves by 1/N of that
 * rank's change (the source's mean of the differences, the untrained ranks contributing 0),
 * one every rank trains becomes the mean. The statistics are averaged the same way. The sums
 * run in double in rank order on the host, over the values every rank received alike, so
 * every rank computes the same bits. The momentum stays each rank's own, as in the source.
 *
 * Rank 0 evaluates the last average (before_eval puts it in place, after_eval its own model
 * back) and saves it as model.ckpt. A rank's parameter that changed outside its share is a
 * bug the average would lose silently: it is checked and refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/timer.h"
#include "dist/dist_impl.h"
#include "dist/link_model.h"
#include "train/session.h"
#include "train/sparse_mask.h"

typedef struct dbk_average {
    size_t    np, ns;              /* flat parameters, statistics */
    float    *base, *base_stats;   /* the last average */
    float    *live, *live_stats;   /* this rank's model, as read back */
    double   *acc, *acc_stats;     /* the sums of the differences (zero between averages) */
    int32_t **positions;           /* (size) flat offsets each rank sends, increasing */
    size_t   *counts;
    int32_t  *all;                 /* the union of the positions, increasing */
    size_t    all_count;
    char     *mine;                /* (np) 1 where this rank trains */
    char     *tracked;             /* (np) 1 at every trainable parameter (not the flat buffer's
                                      alignment padding, which no one reads) */
    float    *send, *recv;
    int      *bytes, *displs;      /* per rank: bytes sent, offsets in recv */
    double   *payload;             /* per rank: bytes, for the link model */
    bool      started;
    long      since;               /* steps since the last average */
    size_t    trainable;
} dbk_average;

void dbk_dist_average_release(dbk_dist *d) {
    dbk_average *a = d->average;
    if (!a) return;
    for (int r = 0; a->positions && r < d->size; r++) dbk_free(a->positions[r]);
    void *bufs[] = {a->base, a->base_stats, a->live, a->live_stats, a->acc, a->acc_stats, a->positions, a->counts,
                    a->all, a->mine, a->tracked, a->send, a->recv, a->bytes, a->displs, a->payload};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) dbk_free(bufs[i]);
    dbk_free(a);
    d->average = NULL;
}

/* Every rank's positions from per-rank range lists (a rank's list is ranges[r][0..n[r])). The
 * union, this rank's marks and the exchange's byte counts follow. */
static dbk_status set_positions(dbk_dist *d, const int32_t *const *flat, const size_t *n) {
    dbk_average *a = d->average;
    memset(a->mine, 0, a->np);
    char *any = dbk_calloc(a->np, 1);
    if (!any) return DBK_ERR_OUT_OF_HOST_MEMORY;
    size_t most = 0;
    for (int r = 0; r < d->size; r++) {
        dbk_free(a->positions[r]);
        a->positions[r] = dbk_malloc(n[r] * sizeof *a->positions[r] + 4);
        if (!a->positions[r]) {
            dbk_free(any);
            return DBK_ERR_OUT_OF_HOST_MEMORY;
        }
        memcpy(a->positions[r], flat[r], n[r] * sizeof *flat[r]);
        a->counts[r] = n[r];
        if (n[r] > most) most = n[r];
        for (size_t t = 0; t < n[r]; t++) {
            any[flat[r][t]] = 1;
            if (r == d->rank) a->mine[flat[r][t]] = 1;
        }
    }
    a->all_count = 0;
    for (size_t j = 0; j < a->np; j++)
        if (any[j]) a->all[a->all_count++] = (int32_t)j;
    dbk_free(any);
    const size_t per = (most + a->ns) * sizeof(float);
    if (per * (size_t)d->size > (size_t)2147483647)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "model averaging: %zu bytes from %d ranks are more than one MPI "
                             "message holds (2 GiB)", per, d->size);
    dbk_free(a->send);
    dbk_free(a->recv);
    a->send = dbk_malloc(per + 4);
    a->recv = dbk_malloc(per * (size_t)d->size + 4);
    if (!a->send || !a->recv) return DBK_ERR_OUT_OF_HOST_MEMORY;
    int at = 0;
    for (int r = 0; r < d->size; r++) {
        a->bytes[r] = (int)((a->counts[r] + a->ns) * sizeof(float));
        a->displs[r] = at;
        at += a->bytes[r];
    }
    return DBK_OK;
}

/* Appends the flat offsets of ranges[0..n) to out at *k. */
static void append_ranges(const dbk_mask_range *ranges, int n, int32_t *out, size_t *k) {
    for (int i = 0; i < n; i++)
        for (size_t j = 0; j < ranges[i].count; j++) out[(*k)++] = (int32_t)(ranges[i].offset + j);
}

/* Every rank trains every trainable parameter: the dense model average. */
static dbk_status dense_positions(dbk_dist *d, dbk_session *s) {
    const int n = dbk_session_trainable_tensors(s, NULL, NULL, 0);
    size_t *offsets = dbk_malloc((size_t)(n + 1) * sizeof *offsets), *counts = dbk_malloc((size_t)(n + 1) * sizeof *counts);
    dbk_mask_range *ranges = dbk_malloc((size_t)(n + 1) * sizeof *ranges);
    int32_t *flat = NULL;
    const int32_t **per = dbk_calloc((size_t)d->size, sizeof *per);
    size_t *k = dbk_calloc((size_t)d->size, sizeof *k);
    dbk_status st = offsets && counts && ranges && per && k ? DBK_OK : DBK_ERR_OUT_OF_HOST_MEMORY;
    size_t total = 0;
    if (st == DBK_OK) {
        dbk_session_trainable_tensors(s, offsets, counts, n);
        for (int i = 0; i < n; i++) {
            ranges[i] = (dbk_mask_range){offsets[i], counts[i]};
            total += counts[i];
        }
        if (!(flat = dbk_malloc(total * sizeof *flat + 4))) st = DBK_ERR_OUT_OF_HOST_MEMORY;
    }
    if (st == DBK_OK) {
        size_t m = 0;
        append_ranges(ranges, n, flat, &m);
        for (size_t t = 0; t < m; t++) d->average->tracked[flat[t]] = 1;
        for (int r = 0; r < d->size; r++) {
            per[r] = flat;
            k[r] = m;
        }
        d->average->trainable = m;
        st = set_positions(d, per, k);
    }
    dbk_free(offsets);
    dbk_free(counts);
    dbk_free(ranges);
    dbk_free(flat);
    dbk_free(per);
    dbk_free(k);
    return st;
}

static int by_value(const void *x, const void *y) {
    const int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    return a < b ? -1 : a > b;
}

dbk_status dbk_dist_average_set_shares(void *ctx, dbk_session *s, const int32_t *const *shares, const size_t *counts) {
    dbk_dist *d = ctx;
    if (!shares) return dense_positions(d, s);
    const dbk_mask_layout *l = dbk_session_mask_layout(s);
    DBK_ASSERT(l);
    /* Packed selectable index -> flat offset: the ranges' starts in packed order. */
    size_t *start = dbk_malloc(((size_t)l->range_count + 1) * sizeof *start);
    int32_t **flat = dbk_calloc((size_t)d->size, sizeof *flat);
    size_t *k = dbk_calloc((size_t)d->size, sizeof *k);
    dbk_status st = start && flat && k ? DBK_OK : DBK_ERR_OUT_OF_HOST_MEMORY;
    size_t at = 0;
    for (int i = 0; st == DBK_OK && i <= l->range_count; i++) {
        start[i] = at;
        if (i < l->range_count) at += l->ranges[i].count;
    }
    for (int r = 0; st == DBK_OK && r < d->size; r++) {
        if (!(flat[r] = dbk_malloc((counts[r] + l->classifier_count) * sizeof *flat[r] + 4))) {
            st = DBK_ERR_OUT_OF_HOST_MEMORY;
            break;
        }
        for (size_t t = 0; t < counts[r]; t++) {
            const size_t p = (size_t)shares[r][t];
            DBK_ASSERT(p < l->selectable_count);
            int lo = 0, hi = l->range_count - 1; /* the last range starting at or before p */
            while (lo < hi) {
                const int mid = (lo + hi + 1) / 2;
                if (start[mid] <= p) lo = mid;
                else hi = mid - 1;
            }
            flat[r][k[r]++] = (int32_t)(l->ranges[lo].offset + (p - start[lo]));
        }
        append_ranges(l->classifier_ranges, l->classifier_range_count, flat[r], &k[r]);
        qsort(flat[r], k[r], sizeof *flat[r], by_value);
    }
    if (st == DBK_OK) st = set_positions(d, (const int32_t *const *)flat, k);
    for (int r = 0; flat && r < d->size; r++) dbk_free(flat[r]);
    dbk_free(flat);
    dbk_free(k);
    dbk_free(start);
    return st;
}

dbk_status dbk_dist_average_attach(dbk_dist *d, dbk_session *s) {
    dbk_dist_average_release(d);
    dbk_average *a = dbk_calloc(1, sizeof *a);
    if (!a) return DBK_ERR_OUT_OF_HOST_MEMORY;
    d->average = a;
    a->np = dbk_session_param_count(s);
    dbk_session_statistics(s, &a->ns);
    const size_t np = a->np + 1, ns = a->ns + 1;
    a->base = dbk_malloc(np * 4);
    a->live = dbk_malloc(np * 4);
    a->acc = dbk_calloc(np, sizeof *a->acc);
    a->base_stats = dbk_malloc(ns * 4);
    a->live_stats = dbk_malloc(ns * 4);
    a->acc_stats = dbk_calloc(ns, sizeof *a->acc_stats);
    a->positions = dbk_calloc((size_t)d->size, sizeof *a->positions);
    a->counts = dbk_calloc((size_t)d->size, sizeof *a->counts);
    a->all = dbk_malloc(np * sizeof *a->all);
    a->mine = dbk_malloc(np);
    a->tracked = dbk_calloc(np, 1);
    a->bytes = dbk_calloc((size_t)d->size, sizeof *a->bytes);
    a->displs = dbk_calloc((size_t)d->size, sizeof *a->displs);
    a->payload = dbk_calloc((size_t)d->size, sizeof *a->payload);
    if (!a->base || !a->live || !a->acc || !a->base_stats || !a->live_stats || !a->acc_stats || !a->positions ||
        !a->counts || !a->all || !a->mine || !a->tracked || !a->bytes || !a->displs || !a->payload)
        return DBK_ERR_OUT_OF_HOST_MEMORY;
    DBK_TRY(dense_positions(d, s));
    d->summary.local_steps = d->opt.local_steps;
    d->summary.trainable_values = (double)a->trainable;
    d->summary.gradient_floats = (double)a->trainable;
    d->summary.statistics_values = (double)a->ns;
    return DBK_OK;
}

static dbk_status read_model(dbk_session *s, float *params, float *stats, size_t ns) {
    size_t n;
    dbk_buffer *state = dbk_session_statistics(s, &n);
    DBK_TRY(dbk_backend_sync(dbk_session_backend(s)));
    DBK_TRY(dbk_session_read_params(s, params));
    return ns ? dbk_buffer_read(state, 0, stats, ns * 4) : DBK_OK;
}

static dbk_status write_model(dbk_session *s, const float *params, const float *stats, size_t ns) {
    size_t n;
    dbk_buffer *state = dbk_session_statistics(s, &n);
    DBK_TRY(dbk_session_write_params(s, params));
    if (ns) DBK_TRY(dbk_buffer_write(state, 0, stats, ns * 4));
    return dbk_backend_sync(dbk_session_backend(s));
}

/* The modelled time of one average on every link: an allgather of the ranks' payloads. */
static void model_average(dbk_dist *d) {
    dbk_average *a = d->average;
    for (int r = 0; r < d->size; r++) a->payload[r] = a->bytes[r];
    for (int l = 0; l < d->summary.link_count; l++) {
        const dbk_link link = {d->summary.link_gbps[l], d->summary.link_latency_us[l]};
        d->summary.modelled_exchange_seconds[l] += dbk_link_allgather_seconds(&link, d->size, a->payload);
    }
}

/* One average of the ranks' models (collective). */
static dbk_status average(dbk_dist *d, dbk_session *s) {
    dbk_average *a = d->average;
    const double t0 = dbk_time_now();
    DBK_TRY(read_model(s, a->live, a->live_stats, a->ns));
    size_t stray = 0, first = 0;
    for (size_t j = 0; j < a->np; j++)
        if (a->tracked[j] && !a->mine[j] && memcmp(&a->live[j], &a->base[j], 4) != 0 && !stray++) first = j;
    if (stray)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "rank %d: model averaging: %zu parameters changed outside this rank's "
                             "mask (the first at flat offset %zu); they would be lost (a lookahead or another update "
                             "that ignores the mask?)", d->rank, stray, first);
    const size_t mine = a->counts[d->rank];
    for (size_t t = 0; t < mine; t++) a->send[t] = a->live[a->positions[d->rank][t]];
    memcpy(a->send + mine, a->live_stats, a->ns * 4);
    DBK_TRY(dbk_dist_allgatherv(d, a->send, a->bytes[d->rank], a->recv, a->bytes, a->displs, "model average"));
    for (int r = 0; r < d->size; r++) {
        const float *v = (const float *)((const char *)a->recv + a->displs[r]);
        for (size_t t = 0; t < a->counts[r]; t++) {
            const int32_t j = a->positions[r][t];
            a->acc[j] += (double)v[t] - (double)a->base[j];
        }
        for (size_t i = 0; i < a->ns; i++) a->acc_stats[i] += (double)v[a->counts[r] + i] - (double)a->base_stats[i];
    }
    const double n = (double)d->size;
    for (size_t t = 0; t < a->all_count; t++) {
        const int32_t j = a->all[t];
        a->base[j] = a->live[j] = (float)((double)a->base[j] + a->acc[j] / n);
        a->acc[j] = 0.0;
    }
    for (size_t i = 0; i < a->ns; i++) {
        a->base_stats[i] = a->live_stats[i] = (float)((double)a->base_stats[i] + a->acc_stats[i] / n);
        a->acc_stats[i] = 0.0;
    }
    DBK_TRY(write_model(s, a->live, a->live_stats, a->ns));
    a->since = 0;
    d->summary.averages++;
    d->summary.bytes_sent += (double)a->bytes[d->rank];
    d->summary.averaged_values += (double)(mine + a->ns);
    d->summary.exchange_seconds += dbk_time_now() - t0;
    model_average(d);
    d->step++;
    return DBK_OK;
}

dbk_status dbk_dist_average_now(void *ctx, dbk_session *s) {
    dbk_dist *d = ctx;
    dbk_average *a = d->average;
    if (a->started) return a->since > 0 ? average(d, s) : DBK_OK;
    /* The start: every rank holds the same initial model, the first "average". */
    DBK_TRY(read_model(s, a->base, a->base_stats, a->ns));
    a->started = true;
    a->since = 0;
    return DBK_OK;
}

dbk_status dbk_dist_average_after_step(void *ctx, dbk_session *s, long run_step, long run_steps) {
    dbk_dist *d = ctx;
    dbk_average *a = d->average;
    DBK_ASSERT(a->started);
    a->since++;
    d->summary.train_steps++;
    d->summary.steps++; /* the summary's per-step figures are per training step */
    if (run_step % d->opt.local_steps == 0 || run_step == run_steps) return average(d, s);
    return DBK_OK;
}

dbk_status dbk_dist_average_before_eval(dbk_dist *d, dbk_session *s) {
    dbk_average *a = d->average;
    if (d->rank != 0 || !a->started) return DBK_OK;
    DBK_TRY(read_model(s, a->live, a->live_stats, a->ns));
    return write_model(s, a->base, a->base_stats, a->ns);
}

dbk_status dbk_dist_average_after_eval(void *ctx, dbk_session *s) {
    dbk_dist *d = ctx;
    dbk_average *a = d->average;
    if (d->rank != 0 || !a->started) return DBK_OK;
    return write_model(s, a->live, a->live_stats, a->ns);
}
