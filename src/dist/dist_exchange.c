/*
 * dist_exchange.c — the gradient exchange of a training step and the rest of the peers table
 * (see dist.h, train/peers.h), above the collectives of dist_impl.h.
 *
 * A step's exchange: the flat gradient buffer is read back (one read), its trainable tensors
 * packed into one vector, then
 *   --compress none:  one allreduce (sum) of the packed vector, divided by the ranks;
 *   sparse methods:   each rank's payload size by allgather, the payloads by allgatherv;
 *   quantised:        the fixed-size payloads by allgather;
 * each rank decodes every payload (its own too) into the mean, and the mean is written back
 * to the gradient buffer before the optimizer update. Every rank decodes the same payloads in
 * the same order, so the parameters stay identical across ranks.
 *
 * Top-k, threshold and random-k run on the training device instead (dist/compress_device.h):
 * the trainable tensors are copied into a packed vector on the device, selected (random-k:
 * gathered at the host's draws) there, and only the payload is read back; the received payloads are written to the device, decoded into
 * the mean there and copied back into the gradient buffer. The payloads are the host path's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/rng.h"
#include "core/timer.h"
#include "dist/dist_impl.h"
#include "dist/link_model.h"
#include "train/session.h"

static int by_offset(const void *a, const void *b) {
    const dbk_segment *x = a, *y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

void dbk_dist_release_exchange(dbk_dist *d) {
    dbk_dist_average_release(d);
    dbk_device_compressor_destroy(d->device);
    d->device = NULL;
    dbk_compressor_destroy(d->compressor);
    d->compressor = NULL;
    void *bufs[] = {d->segments, d->flat, d->packed, d->mean, d->send, d->recv, d->counts, d->displs,
                    d->statistics, d->payload};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) dbk_free(bufs[i]);
    d->segments = NULL;
    d->flat = d->packed = d->mean = d->statistics = NULL;
    d->send = d->recv = NULL;
    d->counts = d->displs = NULL;
    d->payload = NULL;
}

/* Flat buffer <-> packed trainable vector. */
static void pack(dbk_dist *d) {
    size_t at = 0;
    for (int i = 0; i < d->segment_count; i++) {
        memcpy(d->packed + at, d->flat + d->segments[i].offset, d->segments[i].count * sizeof(float));
        at += d->segments[i].count;
    }
}

static void unpack(dbk_dist *d) {
    size_t at = 0;
    for (int i = 0; i < d->segment_count; i++) {
        memcpy(d->flat + d->segments[i].offset, d->mean + at, d->segments[i].count * sizeof(float));
        at += d->segments[i].count;
    }
}

/* The modelled time of this step's exchange on every link, from the payload sizes. */
static void model_step(dbk_dist *d, const double *payload) {
    for (int l = 0; l < d->summary.link_count; l++) {
        const dbk_link link = {d->summary.link_gbps[l], d->summary.link_latency_us[l]};
        double t;
        if (d->opt.compress.method == DBK_COMPRESS_NONE) {
            t = dbk_link_allreduce_seconds(&link, d->size, payload[0]);
        } else {
            t = dbk_link_allgather_seconds(&link, d->size, payload);
            if (dbk_compress_is_sparse(d->opt.compress.method)) /* the sizes' allgather first: 4 bytes each */
                t += (d->size - 1) * (link.latency_us * 1e-6 + 4.0 / (link.gbps * 1e9 / 8.0));
        }
        d->summary.modelled_exchange_seconds[l] += t;
    }
}

/* Every rank's payload of this step (this rank's: send, bytes) into recv, counts, displs. */
static dbk_status gather_payloads(dbk_dist *d, size_t bytes, double *payload_bytes) {
    const int mine = (int)bytes;
    if (dbk_compress_is_sparse(d->opt.compress.method)) {
        DBK_TRY(dbk_dist_allgather(d, &mine, (int)sizeof mine, d->counts, "payload sizes"));
        int at = 0;
        for (int r = 0; r < d->size; r++) {
            d->displs[r] = at;
            at += d->counts[r];
        }
        DBK_TRY(dbk_dist_allgatherv(d, d->send, mine, d->recv, d->counts, d->displs, "sparse gradients"));
        d->summary.bytes_sent += sizeof mine;
    } else {
        DBK_TRY(dbk_dist_allgather(d, d->send, mine, d->recv, "quantised gradients"));
        for (int r = 0; r < d->size; r++) {
            d->counts[r] = mine;
            d->displs[r] = r * mine;
        }
    }
    for (int r = 0; r < d->size; r++) payload_bytes[r] = d->counts[r];
    d->summary.bytes_sent += (double)bytes;
    return DBK_OK;
}

/* The draws' seed of this rank's step (random-k, TernGrad, QSGD). */
static uint64_t step_seed(const dbk_dist *d) {
    return ((uint64_t)dbk_hash_u32((uint32_t)d->opt.seed, (uint32_t)(d->opt.seed >> 32), (uint32_t)d->step,
                                   (uint32_t)d->rank) << 32) | (uint32_t)d->step;
}

static dbk_status exchange_compressed(dbk_dist *d, double *payload_bytes) {
    double t0 = dbk_time_now();
    const size_t bytes = dbk_compressor_encode(d->compressor, d->packed, step_seed(d), d->send);
    d->summary.codec_seconds += dbk_time_now() - t0;
    DBK_TRY(gather_payloads(d, bytes, payload_bytes));
    t0 = dbk_time_now();
    memset(d->mean, 0, d->packed_count * sizeof *d->mean);
    const float alpha = 1.0f / (float)d->size;
    for (int r = 0; r < d->size; r++)
        DBK_TRY(dbk_compressor_decode_add(d->compressor, d->recv + d->displs[r], (size_t)d->counts[r], alpha, d->mean));
    d->summary.codec_seconds += dbk_time_now() - t0;
    return DBK_OK;
}

/* Copies the trainable tensors between the gradient buffer and the device vector
 * (to_vector: pack, else unpack). */
static dbk_status copy_segments(dbk_dist *d, dbk_buffer *grads, bool to_vector) {
    const dbk_tensor v = dbk_device_compressor_vector(d->device);
    size_t at = 0;
    for (int i = 0; i < d->segment_count; i++) {
        const int64_t n = (int64_t)d->segments[i].count;
        const dbk_tensor g = dbk_tensor_make(grads, d->segments[i].offset * sizeof(float), DBK_DTYPE_F32, 1, n, 1, 1, 1);
        const dbk_tensor p = dbk_tensor_make(v.buf, v.offset + at * sizeof(float), DBK_DTYPE_F32, 1, n, 1, 1, 1);
        const dbk_op_desc op = {.op = DBK_OP_COPY, .src = {to_vector ? g : p}, .dst = {to_vector ? p : g},
                                .label = to_vector ? "compress.pack" : "compress.unpack"};
        DBK_TRY(dbk_backend_run(dbk_session_backend(d->session), &op));
        at += (size_t)n;
    }
    return DBK_OK;
}

/* The step's exchange with compression on the device. */
static dbk_status exchange_on_device(dbk_dist *d, dbk_buffer *grads) {
    double t0 = dbk_time_now();
    size_t bytes;
    DBK_TRY(copy_segments(d, grads, true));
    DBK_TRY(dbk_device_compressor_encode(d->device, step_seed(d), d->send, &bytes));
    d->summary.codec_seconds += dbk_time_now() - t0;
    DBK_TRY(gather_payloads(d, bytes, d->payload));
    t0 = dbk_time_now();
    DBK_TRY(dbk_device_compressor_decode_mean(d->device, d->recv, d->counts, d->displs));
    DBK_TRY(copy_segments(d, grads, false));
    DBK_TRY(dbk_backend_sync(dbk_session_backend(d->session)));
    d->summary.codec_seconds += dbk_time_now() - t0;
    model_step(d, d->payload);
    d->step++;
    d->summary.steps++;
    return DBK_OK;
}

dbk_status dbk_dist_exchange_host(dbk_dist *d, float *flat) {
    DBK_ASSERT(d->compressor && flat == d->flat);
    pack(d);
    double *payload = d->payload;
    if (d->opt.compress.method == DBK_COMPRESS_NONE) {
        DBK_TRY(dbk_dist_sum_f32(d, d->packed, d->packed_count, "gradient allreduce"));
        const float inv = 1.0f / (float)d->size;
        for (size_t i = 0; i < d->packed_count; i++) d->mean[i] = d->packed[i] * inv;
        payload[0] = (double)d->packed_count * 4.0;
        d->summary.bytes_sent += payload[0];
    } else {
        DBK_TRY(exchange_compressed(d, payload));
    }
    unpack(d);
    model_step(d, payload);
    d->step++;
    d->summary.steps++;
    return DBK_OK;
}

/* The session's exchange (dbk_session_exchange_fn): averages the step's gradients. */
static dbk_status exchange(void *ctx, dbk_buffer *grads) {
    dbk_dist *d = ctx;
    const double start = dbk_time_now();
    if (d->device) {
        DBK_TRY(exchange_on_device(d, grads));
    } else {
        DBK_TRY(dbk_buffer_read(grads, 0, d->flat, d->flat_count * sizeof *d->flat));
        DBK_TRY(dbk_dist_exchange_host(d, d->flat));
        DBK_TRY(dbk_buffer_write(grads, 0, d->flat, d->flat_count * sizeof *d->flat));
    }
    d->summary.exchange_seconds += dbk_time_now() - start;
    return DBK_OK;
}

dbk_status dbk_dist_prepare_exchange(dbk_dist *d, const dbk_segment *segments, int count, size_t flat_count,
                                     float **flat) {
    dbk_dist_release_exchange(d);
    d->step = d->summary.steps = 0; /* the counts start again with the new exchange */
    d->summary.bytes_sent = d->summary.exchange_seconds = d->summary.codec_seconds = 0.0;
    memset(d->summary.modelled_exchange_seconds, 0, sizeof d->summary.modelled_exchange_seconds);
    d->segments = dbk_malloc((size_t)(count > 0 ? count : 1) * sizeof *d->segments);
    dbk_segment *packed = dbk_malloc((size_t)(count > 0 ? count : 1) * sizeof *packed);
    if (!d->segments || !packed) {
        dbk_free(packed);
        return DBK_ERR_OUT_OF_HOST_MEMORY;
    }
    memcpy(d->segments, segments, (size_t)count * sizeof *segments);
    d->segment_count = count;
    qsort(d->segments, (size_t)count, sizeof *d->segments, by_offset);
    d->packed_count = 0;
    for (int i = 0; i < count; i++) {
        DBK_ASSERT(d->segments[i].offset + d->segments[i].count <= flat_count);
        DBK_ASSERT(i == 0 || d->segments[i].offset >= d->segments[i - 1].offset + d->segments[i - 1].count);
        packed[i] = (dbk_segment){d->packed_count, d->segments[i].count};
        d->packed_count += d->segments[i].count;
    }
    d->flat_count = flat_count;
    dbk_status st = dbk_compressor_create(&d->opt.compress, packed, count, d->packed_count, &d->compressor);
    dbk_free(packed);
    DBK_TRY(st);
    const size_t max_payload = dbk_compressor_max_payload(d->compressor);
    if (max_payload * (size_t)d->size > (size_t)2147483647)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "gradient payloads of %zu bytes from %d ranks: more than one MPI "
                             "message holds (2 GiB)", max_payload, d->size);
    d->flat = dbk_malloc((flat_count ? flat_count : 1) * sizeof *d->flat);
    d->packed = dbk_malloc((d->packed_count ? d->packed_count : 1) * sizeof *d->packed);
    d->mean = dbk_malloc((d->packed_count ? d->packed_count : 1) * sizeof *d->mean);
    d->send = dbk_malloc(max_payload ? max_payload : 1);
    d->recv = dbk_malloc(max_payload ? max_payload * (size_t)d->size : 1);
    d->counts = dbk_calloc((size_t)d->size, sizeof *d->counts);
    d->displs = dbk_calloc((size_t)d->size, sizeof *d->displs);
    d->payload = dbk_calloc((size_t)d->size, sizeof *d->payload);
    if (!d->flat || !d->packed || !d->mean || !d->send || !d->recv || !d->counts || !d->displs || !d->payload)
        return DBK_ERR_OUT_OF_HOST_MEMORY;
    d->summary.gradient_floats = (double)d->packed_count;
    if (flat) *flat = d->flat;
    return DBK_OK;
}

/* The session's trainable tensors as the exchange's segments. */
static dbk_status size_exchange(dbk_dist *d, dbk_session *s) {
    const int n = dbk_session_trainable_tensors(s, NULL, NULL, 0);
    dbk_segment *segments = dbk_malloc((size_t)(n > 0 ? n : 1) * sizeof *segments);
    size_t *offsets = dbk_malloc((size_t)(n > 0 ? n : 1) * sizeof *offsets);
    size_t *counts = dbk_malloc((size_t)(n > 0 ? n : 1) * sizeof *counts);
    dbk_status st = DBK_ERR_OUT_OF_HOST_MEMORY;
    if (segments && offsets && counts && dbk_session_trainable_tensors(s, offsets, counts, n) == n) {
        for (int i = 0; i < n; i++) segments[i] = (dbk_segment){offsets[i], counts[i]};
        st = dbk_dist_prepare_exchange(d, segments, n, dbk_session_param_count(s), NULL);
    }
    dbk_free(segments);
    dbk_free(offsets);
    dbk_free(counts);
    return st;
}

/* Every rank's device into the summary (the first DBK_PEERS_MAX_LISTED). */
static dbk_status gather_devices(dbk_dist *d, const dbk_device_info *device) {
    enum { LEN = sizeof d->summary.devices[0] };
    char mine[LEN];
    snprintf(mine, sizeof mine, "%.*s", (int)sizeof mine - 1, device->name);
    char *all = dbk_malloc((size_t)d->size * LEN);
    if (!all) return DBK_ERR_OUT_OF_HOST_MEMORY;
    dbk_status st = dbk_dist_allgather(d, mine, LEN, all, "device names");
    for (int r = 0; st == DBK_OK && r < d->size && r < DBK_PEERS_MAX_LISTED; r++)
        snprintf(d->summary.devices[r], LEN, "%.*s", LEN - 1, all + (size_t)r * LEN);
    dbk_free(all);
    return st;
}

dbk_status dbk_dist_attach(void *ctx, dbk_session *s, const dbk_device_info *device) {
    dbk_dist *d = ctx;
    d->session = s;
    if (d->opt.local_steps > 0) { /* model averaging: no exchange between backward and update */
        DBK_TRY(dbk_dist_average_attach(d, s));
        return gather_devices(d, device);
    }
    DBK_TRY(size_exchange(d, s));
    if (dbk_device_compress_supported(&d->opt.compress))
        DBK_TRY(dbk_device_compressor_create(dbk_session_backend(s), d->compressor, d->size, &d->device));
    d->summary.compression_on_device = d->device != NULL;
    DBK_TRY(gather_devices(d, device));
    dbk_session_set_exchange(s, exchange, d);
    return DBK_OK;
}

void dbk_dist_detach(void *ctx) {
    dbk_dist *d = ctx;
    dbk_dist_average_release(d);
    dbk_device_compressor_destroy(d->device);
    d->device = NULL;
    d->session = NULL;
}

dbk_status dbk_dist_before_eval(void *ctx, dbk_session *s) {
    dbk_dist *d = ctx;
    if (d->average) return dbk_dist_average_before_eval(d, s); /* the last average, statistics included */
    if (!d->opt.sync_statistics) return DBK_OK;
    size_t n;
    dbk_buffer *state = dbk_session_statistics(s, &n);
    if (!n) return DBK_OK;
    if (!d->statistics) {
        d->statistics = dbk_malloc(n * sizeof *d->statistics);
        if (!d->statistics) return DBK_ERR_OUT_OF_HOST_MEMORY;
        d->statistics_count = n;
    }
    DBK_ASSERT(n == d->statistics_count);
    DBK_TRY(dbk_buffer_read(state, 0, d->statistics, n * sizeof *d->statistics));
    DBK_TRY(dbk_dist_sum_f32(d, d->statistics, n, "batch-norm statistics"));
    for (size_t i = 0; i < n; i++) d->statistics[i] /= (float)d->size;
    return dbk_buffer_write(state, 0, d->statistics, n * sizeof *d->statistics);
}

dbk_status dbk_dist_summarise(void *ctx, dbk_peers_summary *out) {
    dbk_dist *d = ctx;
    *out = d->summary;
    double v[4] = {d->summary.bytes_sent, d->summary.exchange_seconds, d->summary.codec_seconds,
                   d->summary.averaged_values};
    DBK_TRY(dbk_dist_reduce_f64(d, v, 4, DBK_PEERS_SUM, "exchange summary"));
    out->bytes_sent = v[0];
    out->exchange_seconds = v[1] / d->size;
    out->codec_seconds = v[2] / d->size;
    out->averaged_values = v[3];
    return DBK_OK;
}

/* ---------------------------------------------------------------------------------- */
/* the job's options and the trainer's view                                           */

void dbk_dist_configure(dbk_dist *d, const dbk_dist_options *opt) {
    d->opt = *opt;
    dbk_peers_summary *m = &d->summary;
    m->ranks = d->size;
    dbk_compress_format(&opt->compress, m->compress, sizeof m->compress);
    m->layerwise = opt->compress.layerwise;
    m->error_feedback = opt->compress.error_feedback;
    m->sync_statistics = opt->sync_statistics;
    m->link_count = opt->link_count;
    for (int l = 0; l < opt->link_count; l++) {
        m->link_gbps[l] = opt->link_gbps[l];
        m->link_latency_us[l] = opt->link_latency_us[l];
    }
}

dbk_status dbk_dist_summary(dbk_dist *d, dbk_peers_summary *out) { return dbk_dist_summarise(d, out); }

static dbk_status peers_reduce(void *ctx, double *v, int n, dbk_peers_op op, const char *what) {
    return dbk_dist_reduce_f64(ctx, v, n, op, what);
}

static dbk_status peers_broadcast(void *ctx, void *data, size_t bytes, const char *what) {
    return dbk_dist_broadcast(ctx, data, bytes, what);
}

void dbk_dist_peers(dbk_dist *d, dbk_peers *out) {
    *out = (dbk_peers){.ctx = d,
                       .rank = d->rank,
                       .size = d->size,
                       .attach = dbk_dist_attach,
                       .detach = dbk_dist_detach,
                       .save_state = dbk_dist_save_state,
                       .restore_state = dbk_dist_restore_state,
                       .reduce = peers_reduce,
                       .before_eval = dbk_dist_before_eval,
                       .summarise = dbk_dist_summarise,
                       .broadcast = peers_broadcast,
                       .averaging = d->opt.local_steps > 0,
                       .after_step = dbk_dist_average_after_step,
                       .average_now = dbk_dist_average_now,
                       .set_shares = dbk_dist_average_set_shares,
                       .after_eval = dbk_dist_average_after_eval};
}
