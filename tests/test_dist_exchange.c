/*
 * test_dist_exchange.c — the gradient exchange of src/dist over real MPI, on the host with
 * known gradients: run as `mpirun -np 2 test_dist_exchange` (test_dist.c does).
 *
 * Each rank holds a flat vector of 3 trainable tensors and a gap (a frozen tensor) between
 * them, different on each rank. After one exchange, for every method and scope:
 *   every rank holds the same trainable values, bit for bit (the parameters stay in sync);
 *   the gap is untouched;
 *   none: each value is (g0 + g1) / 2 exactly as fp32 computes it;
 *   topk, threshold (deterministic): the mean of the two ranks' decoded payloads, computed
 *     here from the same compressor;
 *   the bytes counted are the payload sizes (all ranks together).
 * And --sync-bn-stats: a CPU session's batch-norm running statistics, different on each rank,
 * become their average on every rank before evaluation.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dist/dist.h"
#include "test_util.h"

enum { FLAT = 100 };
static const dbk_segment segments[3] = {{0, 30}, {40, 50}, {90, 10}}; /* [30, 40): frozen */
static dbk_dist *dist;

static float value(int rank, int i) { return (float)((i * 7 + rank * 13) % 23 - 11) / (float)(3 + rank); }

static int exchange_should_average(const char *method, bool layerwise) {
    dbk_dist_options o = {.timeout_seconds = 30, .seed = 7};
    DBK_CHECK_OK(dbk_compress_parse(method, &o.compress));
    o.compress.layerwise = layerwise;
    dbk_dist_configure(dist, &o);
    float *flat;
    DBK_CHECK_OK(dbk_dist_prepare_exchange(dist, segments, 3, FLAT, &flat));
    const int rank = dbk_dist_rank(dist);
    for (int i = 0; i < FLAT; i++) flat[i] = value(rank, i);
    DBK_CHECK_OK(dbk_dist_exchange_host(dist, flat));

    /* The expected mean, from both ranks' gradients (packed as the exchange packs them). */
    float packed[2][90], expect[90] = {0};
    for (int r = 0; r < 2; r++)
        for (int s = 0, at = 0; s < 3; at += (int)segments[s].count, s++)
            for (size_t k = 0; k < segments[s].count; k++) packed[r][at + (int)k] = value(r, (int)(segments[s].offset + k));
    const bool exact = o.compress.method == DBK_COMPRESS_NONE || o.compress.method == DBK_COMPRESS_TOPK ||
                       o.compress.method == DBK_COMPRESS_THRESHOLD;
    double bytes = 0;
    if (o.compress.method == DBK_COMPRESS_NONE) {
        for (int i = 0; i < 90; i++) expect[i] = (packed[0][i] + packed[1][i]) * 0.5f;
        bytes = 2 * 90 * 4;
    } else {
        const dbk_segment local[3] = {{0, 30}, {30, 50}, {80, 10}};
        dbk_compressor *c;
        DBK_CHECK_OK(dbk_compressor_create(&o.compress, local, 3, 90, &c));
        uint8_t payload[90 * 8];
        for (int r = 0; r < 2; r++) {
            const size_t n = dbk_compressor_encode(c, packed[r], 1, payload);
            DBK_CHECK_OK(dbk_compressor_decode_add(c, payload, n, 0.5f, expect));
            bytes += (double)n + (dbk_compress_is_sparse(o.compress.method) ? 4 : 0);
        }
        dbk_compressor_destroy(c);
    }
    /* Every collective before any check, so a failed check cannot leave the ranks out of step. */
    double mine[FLAT], theirs[FLAT];
    for (int i = 0; i < FLAT; i++) mine[i] = theirs[i] = flat[i];
    dbk_peers peers;
    dbk_dist_peers(dist, &peers);
    DBK_CHECK_OK(peers.reduce(peers.ctx, theirs, FLAT, DBK_PEERS_BROADCAST, "rank 0's result"));
    dbk_peers_summary sum;
    DBK_CHECK_OK(dbk_dist_summary(dist, &sum));

    for (int i = 30; i < 40; i++) DBK_CHECK_MSG(flat[i] == value(rank, i), "%s: the frozen gap changed at %d", method, i);
    for (int i = 0; i < FLAT; i++) /* the frozen gap is each rank's own */
        DBK_CHECK_MSG((i >= 30 && i < 40) || mine[i] == theirs[i], "%s: rank %d differs from rank 0 at %d", method, rank, i);
    if (exact)
        for (int s = 0, at = 0; s < 3; at += (int)segments[s].count, s++)
            for (size_t k = 0; k < segments[s].count; k++)
                DBK_CHECK_MSG(flat[segments[s].offset + k] == expect[at + (int)k], "%s %s: value %zu is %g, expected %g",
                              method, layerwise ? "layerwise" : "model", segments[s].offset + k,
                              (double)flat[segments[s].offset + k], (double)expect[at + (int)k]);
    if (exact)
        DBK_CHECK_MSG(sum.bytes_sent == bytes, "%s: %.1f bytes counted, payloads are %.1f", method, sum.bytes_sent, bytes);
    return 0;
}

static int none_should_average_exactly(void) { return exchange_should_average("none", true); }
static int topk_layerwise_should_average_the_decoded_payloads(void) { return exchange_should_average("topk:0.2", true); }
static int topk_model_should_average_the_decoded_payloads(void) { return exchange_should_average("topk:0.2", false); }
static int threshold_should_average_the_decoded_payloads(void) { return exchange_should_average("threshold:1.5", true); }
static int randomk_should_leave_every_rank_the_same(void) { return exchange_should_average("randomk:0.3", true); }
static int terngrad_should_leave_every_rank_the_same(void) { return exchange_should_average("terngrad", false); }
static int qsgd_should_leave_every_rank_the_same(void) { return exchange_should_average("qsgd:255", true); }

static int sync_bn_stats_should_average_the_running_statistics(void) {
    uint8_t images[8 * 3 * 32 * 32] = {0}, labels[8] = {0};
    dbk_dataset data = {.count = 8, .channels = 3, .height = 32, .width = 32, .num_classes = 10, .images = images,
                        .labels = labels};
    dbk_backend *be = NULL;
    dbk_session *session = NULL;
    dbk_session_config cfg = {.batch = 4, .eval_batch = 4, .shard_count = 2, .shard_index = dbk_dist_rank(dist),
                              .separate_update = true};
    DBK_CHECK_OK(dbk_test_quick_session(DBK_BACKEND_KIND_CPU, 0, cfg, &data, &data, 1, &be, &session));
    dbk_dist_options o = {.timeout_seconds = 30, .sync_statistics = true};
    dbk_dist_configure(dist, &o);
    size_t n;
    dbk_buffer *state = dbk_session_statistics(session, &n);
    float *v = malloc(n * sizeof *v);
    DBK_CHECK(v && n > 0);
    const int rank = dbk_dist_rank(dist);
    for (size_t i = 0; i < n; i++) v[i] = (float)(rank + 1) * (float)(i % 97);
    DBK_CHECK_OK(dbk_buffer_write(state, 0, v, n * sizeof *v));
    dbk_peers peers;
    dbk_dist_peers(dist, &peers);
    DBK_CHECK_OK(peers.before_eval(peers.ctx, session));
    DBK_CHECK_OK(dbk_buffer_read(state, 0, v, n * sizeof *v));
    for (size_t i = 0; i < n; i++)
        DBK_CHECK_MSG(v[i] == 1.5f * (float)(i % 97), "statistic %zu is %g, the ranks' mean is %g", i, (double)v[i],
                      1.5 * (double)(i % 97));
    free(v);
    dbk_session_destroy(session);
    dbk_backend_destroy(be);
    return 0;
}

int main(int argc, char **argv) {
    if (dbk_dist_init(&argc, &argv, &dist) != DBK_OK) {
        fprintf(stderr, "%s\n", dbk_last_error());
        return 1;
    }
    if (dbk_dist_size(dist) != 2) {
        fprintf(stderr, "run with mpirun -np 2 (got %d ranks)\n", dbk_dist_size(dist));
        dbk_dist_finalize(dist);
        return 2;
    }
    DBK_RUN(none_should_average_exactly);
    DBK_RUN(topk_layerwise_should_average_the_decoded_payloads);
    DBK_RUN(topk_model_should_average_the_decoded_payloads);
    DBK_RUN(threshold_should_average_the_decoded_payloads);
    DBK_RUN(randomk_should_leave_every_rank_the_same);
    DBK_RUN(terngrad_should_leave_every_rank_the_same);
    DBK_RUN(qsgd_should_leave_every_rank_the_same);
    DBK_RUN(sync_bn_stats_should_average_the_running_statistics);
    const int rc = dbk_test_finish();
    dbk_dist_finalize(dist);
    return rc;
}
