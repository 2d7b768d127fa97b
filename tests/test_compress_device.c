/*
 * test_compress_device.c — top-k, threshold, random-k, TernGrad and QSGD compression on a
 * device (dist/compress_device.h) against the host compressors (dist/compress.h), so the
 * properties test_compress asserts of the host path hold for the device path: on the same
 * gradients and seeds, over several steps with and without error feedback, layer-wise and
 * model-wide, the payloads are byte for byte the host's (top-k: exactly the k largest
 * magnitudes, ties in index order; random-k: the same draws, in draw order, scaled by n/k;
 * TernGrad and QSGD: the same scales, draws and packed codes, including 17-bit codes across
 * words), the residual is the host's, and the decoded mean of two ranks' payloads is the
 * host's bit for bit; a bad payload is refused before decoding. Usage: test_compress_device
 * BACKEND (cpu, opencl, vulkan[:N]).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "dist/compress_device.h"
#include "test_util.h"

enum { STEPS = 4, RANKS = 2 };

static dbk_backend *g_be;

/* Segments of odd sizes, one of a single element, one larger than a select chunk. */
static const dbk_segment segments[] = {{0, 3}, {3, 1000}, {1003, 17}, {1020, 5000}, {6020, 1}, {6021, 700}};
enum { SEGMENTS = sizeof segments / sizeof segments[0], N = 6721 };

/* A step's gradient: uniform in [-1, 1), on a coarse grid every other step (many ties at the
 * k-th magnitude and at the threshold). */
static void gradient(float *g, int step, int rank) {
    dbk_rng rng;
    dbk_rng_init(&rng, 1000u * (uint64_t)step + (uint64_t)rank + 1u);
    for (int i = 0; i < N; i++) {
        g[i] = 2.0f * dbk_rng_uniform(&rng) - 1.0f;
        if (step % 2) g[i] = roundf(g[i] * 16.0f) / 16.0f;
        if (i % 5 == 0) g[i] *= 1e-39f; /* subnormal: a device that flushes them differs */
    }
}

/* One method: STEPS steps of rank 0's encoding on both paths, and the decoding of both
 * ranks' payloads. */
static int check_method(const char *text, bool layerwise, bool error_feedback) {
    dbk_compress_spec spec = {.layerwise = layerwise, .error_feedback = error_feedback};
    DBK_CHECK_OK(dbk_compress_parse(text, &spec));
    dbk_compressor *host[RANKS];
    for (int r = 0; r < RANKS; r++) DBK_CHECK_OK(dbk_compressor_create(&spec, segments, SEGMENTS, N, &host[r]));
    dbk_compressor *mirror; /* rank 0's compressor again, for the device path's tables */
    DBK_CHECK_OK(dbk_compressor_create(&spec, segments, SEGMENTS, N, &mirror));
    dbk_device_compressor *dev;
    DBK_CHECK_OK(dbk_device_compressor_create(g_be, mirror, RANKS, &dev));
    const size_t cap = dbk_compressor_max_payload(mirror);
    uint8_t *recv = malloc(cap * RANKS), *mine = malloc(cap);
    float *g = malloc(N * sizeof *g), *x = malloc(N * sizeof *x), *residual = calloc(N, sizeof *residual);
    float *got = malloc(N * sizeof *got), *want = malloc(N * sizeof *want);
    int counts[RANKS], displs[RANKS], failures = 0;
    for (int step = 0; step < STEPS; step++) {
        size_t at = 0;
        for (int r = 0; r < RANKS; r++) {
            gradient(g, step, r);
            counts[r] = (int)dbk_compressor_encode(host[r], g, (uint64_t)(100 * step + r), recv + at);
            displs[r] = (int)at;
            at += (size_t)counts[r];
        }
        /* rank 0 on the device: the same gradient, the same payload */
        gradient(g, step, 0);
        for (int i = 0; i < N; i++) x[i] = g[i] + (error_feedback ? residual[i] : 0.0f);
        const dbk_tensor v = dbk_device_compressor_vector(dev);
        DBK_CHECK_OK(dbk_tensor_write(&v, g));
        size_t bytes;
        DBK_CHECK_OK(dbk_device_compressor_encode(dev, (uint64_t)(100 * step), mine, &bytes));
        if (bytes != (size_t)counts[0] || memcmp(mine, recv, bytes) != 0) {
            fprintf(stderr, "  %s %s%s step %d: device payload of %zu bytes differs from the host's %d bytes\n",
                    text, layerwise ? "layerwise" : "model", error_feedback ? " feedback" : "", step, bytes, counts[0]);
            failures++;
        }
        if (error_feedback) { /* the residual: x less what the payload sent */
            memcpy(residual, x, N * sizeof *x);
            DBK_CHECK_OK(dbk_compressor_decode_add(host[0], mine, bytes, -1.0f, residual));
            DBK_CHECK_OK(dbk_device_compressor_read_residual(dev, got));
            if (memcmp(got, residual, N * sizeof *got) != 0) {
                fprintf(stderr, "  %s step %d: device residual differs from the host's\n", text, step);
                failures++;
            }
        }
        /* both ranks' payloads decoded into their mean */
        memset(want, 0, N * sizeof *want);
        for (int r = 0; r < RANKS; r++)
            DBK_CHECK_OK(dbk_compressor_decode_add(host[0], recv + displs[r], (size_t)counts[r], 0.5f, want));
        DBK_CHECK_OK(dbk_device_compressor_decode_mean(dev, recv, counts, displs));
        DBK_CHECK_OK(dbk_backend_sync(g_be));
        DBK_CHECK_OK(dbk_tensor_read(&v, got));
        if (memcmp(got, want, N * sizeof *got) != 0) {
            fprintf(stderr, "  %s step %d: device mean differs from the host's\n", text, step);
            failures++;
        }
    }
    /* a bad payload is refused before anything is decoded: a sparse index outside the
     * vector, TernGrad's code 3, QSGD's level above q (qsgd:4, 3 level bits) or a size short
     * of the fixed one (q = 2^b - 1: every level valid) */
    const bool sparse = dbk_compress_is_sparse(spec.method);
    const bool all_valid = spec.method == DBK_COMPRESS_QSGD && (spec.levels & (spec.levels + 1)) == 0;
    const uint32_t bad = N;
    if (sparse) memcpy(recv, &bad, 4);
    else memset(recv + 4, 0xff, 1);
    counts[0] = sparse ? 8 : (all_valid ? (int)cap - 1 : (int)cap);
    counts[1] = sparse ? 0 : (int)cap;
    displs[0] = 0;
    displs[1] = sparse ? 0 : (int)cap;
    if (dbk_device_compressor_decode_mean(dev, recv, counts, displs) != DBK_ERR_FORMAT) {
        fprintf(stderr, "  %s: a bad payload was not refused\n", text);
        failures++;
    }
    dbk_device_compressor_destroy(dev);
    for (int r = 0; r < RANKS; r++) dbk_compressor_destroy(host[r]);
    dbk_compressor_destroy(mirror);
    free(recv), free(mine), free(g), free(x), free(residual), free(got), free(want);
    return failures ? 1 : 0;
}

static int topk_layerwise_matches_host(void) {
    return check_method("topk:1%", true, true) | check_method("topk:10%", true, false);
}

static int topk_model_matches_host(void) {
    return check_method("topk:1%", false, true) | check_method("topk:0.5", false, false);
}

static int threshold_matches_host(void) {
    return check_method("threshold:0.5", true, true) | check_method("threshold:0.9375", false, false);
}

static int randomk_matches_host(void) {
    return check_method("randomk:10%", true, true) | check_method("randomk:1%", false, false);
}

static int terngrad_matches_host(void) {
    return check_method("terngrad", true, true) | check_method("terngrad", false, false);
}

static int qsgd_matches_host(void) {
    return check_method("qsgd:255", true, true) | check_method("qsgd:4", false, true) |
           check_method("qsgd:65535", true, false);
}

static int none_is_refused(void) {
    dbk_compress_spec spec = {.layerwise = true};
    DBK_CHECK_OK(dbk_compress_parse("none", &spec));
    dbk_compressor *c;
    DBK_CHECK_OK(dbk_compressor_create(&spec, segments, SEGMENTS, N, &c));
    dbk_device_compressor *dev;
    const dbk_status st = dbk_device_compressor_create(g_be, c, RANKS, &dev);
    dbk_compressor_destroy(c);
    DBK_CHECK(st == DBK_ERR_INVALID_ARG);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_compress_device BACKEND\n");
        return 2;
    }
    dbk_backend_kind kind;
    int index;
    const int rc = dbk_test_resolve_backend(argv[1], &kind, &index);
    if (rc) return rc;
    if (dbk_backend_create(kind, index, &g_be) != DBK_OK) {
        fprintf(stderr, "%s: %s\n", argv[1], dbk_last_error());
        return 1;
    }
    DBK_RUN(topk_layerwise_matches_host);
    DBK_RUN(topk_model_matches_host);
    DBK_RUN(threshold_matches_host);
    DBK_RUN(randomk_matches_host);
    DBK_RUN(terngrad_matches_host);
    DBK_RUN(qsgd_matches_host);
    DBK_RUN(none_is_refused);
    dbk_backend_destroy(g_be);
    return dbk_test_finish();
}
