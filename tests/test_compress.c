/*
 * test_compress.c — the gradient compressors of src/dist (dist/compress.h) and the link model
 * (dist/link_model.h), without MPI: encode/decode on known inputs, payload sizes, the
 * statistical unbiasedness of random-k, TernGrad and QSGD, layer-wise against whole-model
 * scope, error feedback, malformed payloads and the option parser.
 *
 * Statistical bounds: for an unbiased estimator x_hat of x averaged over T independent draws,
 * the mean's error per element has standard deviation sd/sqrt(T); the checks allow 5 of those
 * (computed from the method's own variance bound below), a false failure rate of about 6e-7
 * per element, and the draws are seeded, so the test is deterministic.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "dist/compress.h"
#include "dist/link_model.h"
#include "test_util.h"

enum { N = 64 };

/* A gradient with distinct magnitudes: g[i] = (-1)^i * (i + 1) / N, shuffled by a fixed rule. */
static void known_gradient(float *g, int n) {
    for (int i = 0; i < n; i++) {
        const int v = (i * 37) % n; /* 37 is coprime with 64: a permutation of 0..n-1 */
        g[i] = (v % 2 ? -1.0f : 1.0f) * (float)(v + 1) / (float)n;
    }
}

static dbk_compress_spec spec_of(const char *text, bool layerwise) {
    dbk_compress_spec s = {.layerwise = layerwise};
    if (dbk_compress_parse(text, &s) != DBK_OK) abort();
    return s;
}

/* Decodes a payload into a fresh zeroed vector. */
static int decode(const dbk_compressor *c, const uint8_t *p, size_t bytes, float *out, int n) {
    memset(out, 0, (size_t)n * sizeof *out);
    DBK_CHECK_OK(dbk_compressor_decode_add(c, p, bytes, 1.0f, out));
    return 0;
}

static int topk_should_pick_the_k_largest_magnitudes(void) {
    float g[N], out[N];
    known_gradient(g, N);
    dbk_compress_spec s = spec_of("topk:0.125", false); /* k = 8 */
    dbk_compressor *c;
    DBK_CHECK_OK(dbk_compressor_create(&s, NULL, 0, N, &c));
    uint8_t payload[N * 8];
    const size_t bytes = dbk_compressor_encode(c, g, 1, payload);
    DBK_CHECK_MSG(bytes == 8 * 8, "payload %zu bytes, expected 8 pairs of 8 bytes", bytes);
    DBK_CHECK(decode(c, payload, bytes, out, N) == 0);
    int kept = 0;
    for (int i = 0; i < N; i++) {
        const bool large = fabsf(g[i]) > (float)(N - 8) / (float)N; /* magnitudes 57/64..64/64 */
        if (large) DBK_CHECK_MSG(out[i] == g[i], "element %d (%g) not sent exactly: %g", i, (double)g[i], (double)out[i]);
        else DBK_CHECK_MSG(out[i] == 0.0f, "element %d (%g) sent though not among the 8 largest", i, (double)g[i]);
        kept += out[i] != 0.0f;
    }
    DBK_CHECK(kept == 8);
    dbk_compressor_destroy(c);
    return 0;
}

static int topk_should_send_exactly_k_when_magnitudes_tie(void) {
    float g[N], out[N];
    for (int i = 0; i < N; i++) g[i] = i % 2 ? 0.5f : -0.5f;
    dbk_compress_spec s = spec_of("topk:10%", false); /* k = ceil(6.4) = 7 */
    dbk_compressor *c;
    DBK_CHECK_OK(dbk_compressor_create(&s, NULL, 0, N, &c));
    uint8_t payload[N * 8];
    const size_t bytes = dbk_compressor_encode(c, g, 1, payload);
    DBK_CHECK_MSG(bytes == 7 * 8, "payload %zu bytes, expected 7 pairs", bytes);
    DBK_CHECK(decode(c, payload, bytes, out, N) == 0);
    for (int i = 0; i < N; i++) DBK_CHECK(out[i] == (i < 7 ? g[i] : 0.0f)); /* ties in index order */
    dbk_compressor_destroy(c);
    return 0;
}

static int threshold_should_send_every_element_at_or_above_v(void) {
    float g[N], out[N];
    known_gradient(g, N);
    dbk_compress_spec s = spec_of("threshold:0.5", false);
    dbk_compressor *c;
    DBK_CHECK_OK(dbk_compressor_create(&s, NULL, 0, N, &c));
    uint8_t payload[N * 8];
    const size_t bytes = dbk_compressor_encode(c, g, 1, payload);
    DBK_CHECK_MSG(bytes == 33 * 8, "payload %zu bytes: magnitudes 32/64..64/64 are 33 pairs", bytes);
    DBK_CHECK(decode(c, payload, bytes, out, N) == 0);
    for (int i = 0; i < N; i++) DBK_CHECK(out[i] == (fabsf(g[i]) >= 0.5f ? g[i] : 0.0f));
    dbk_compressor_destroy(c);
    return 0;
}

/* Mean of T decoded encodings (seeds 0..T-1) against g: every element within 5 standard
 * deviations of the mean, sd from the per-element variance bound var(i). */
static int check_unbiased(const char *method, double (*var)(const float *g, int i, int n, const dbk_compress_spec *s)) {
    enum { T = 4000 };
    float g[N], out[N];
    double mean[N] = {0};
    known_gradient(g, N);
    dbk_compress_spec s = spec_of(method, false);
    dbk_compressor *c;
    DBK_CHECK_OK(dbk_compressor_create(&s, NULL, 0, N, &c));
    uint8_t *payload = malloc(dbk_compressor_max_payload(c));
    DBK_CHECK(payload);
    for (int t = 0; t < T; t++) {
        const size_t bytes = dbk_compressor_encode(c, g, (uint64_t)t * 7919u + 1u, payload);
        DBK_CHECK(decode(c, payload, bytes, out, N) == 0);
        for (int i = 0; i < N; i++) mean[i] += (double)out[i] / (double)T;
    }
    double worst = 0.0;
    for (int i = 0; i < N; i++) {
        const double bound = 5.0 * sqrt(var(g, i, N, &s) / T) + 1e-6;
        const double err = fabs(mean[i] - (double)g[i]);
        if (err / bound > worst) worst = err / bound;
        DBK_CHECK_MSG(err <= bound, "%s: element %d: mean of %d decodings %.5f, gradient %.5f (bound %.5f)", method, i,
                      T, mean[i], (double)g[i], bound);
    }
    printf("  %s: worst |mean - g| is %.2f of the 5-sigma bound over %d draws\n", method, worst, T);
    free(payload);
    dbk_compressor_destroy(c);
    return 0;
}

/* random-k: x_hat = (n/k) g with probability k/n, else 0: variance g^2 (n/k - 1). */
static double var_randomk(const float *g, int i, int n, const dbk_compress_spec *s) {
    const double k = ceil(s->ratio * n);
    return (double)g[i] * (double)g[i] * (n / k - 1.0);
}

/* TernGrad: x_hat = s sign(g) Bernoulli(|g|/s): variance |g| (s - |g|). */
static double var_terngrad(const float *g, int i, int n, const dbk_compress_spec *s) {
    (void)s;
    double m = 0.0;
    for (int j = 0; j < n; j++) m = fmax(m, fabs((double)g[j]));
    return fabs((double)g[i]) * (m - fabs((double)g[i]));
}

/* QSGD: x_hat = r sign(g) l/Q with l = floor(Q|g|/r + u): variance at most (r/Q)^2 / 4. */
static double var_qsgd(const float *g, int i, int n, const dbk_compress_spec *s) {
    (void)i;
    double r = 0.0;
    for (int j = 0; j < n; j++) r += (double)g[j] * (double)g[j];
    r = sqrt(r);
    return (r / s->levels) * (r / s->levels) / 4.0;
}

static int randomk_should_be_unbiased_after_scaling(void) { return check_unbiased("randomk:0.25", var_randomk); }
static int terngrad_should_be_unbiased(void) { return check_unbiased("terngrad", var_terngrad); }
static int qsgd_should_be_unbiased(void) { return check_unbiased("qsgd:4", var_qsgd); }

static int randomk_should_repeat_with_its_seed_and_vary_without(void) {
    float g[N];
    known_gradient(g, N);
    dbk_compress_spec s = spec_of("randomk:0.25", false);
    dbk_compressor *c;
    DBK_CHECK_OK(dbk_compressor_create(&s, NULL, 0, N, &c));
    uint8_t a[N * 8], b[N * 8], d[N * 8];
    const size_t na = dbk_compressor_encode(c, g, 42, a), nb = dbk_compressor_encode(c, g, 42, b);
    const size_t nd = dbk_compressor_encode(c, g, 43, d);
    DBK_CHECK(na == 16 * 8 && nb == na && nd == na);
    DBK_CHECK_MSG(memcmp(a, b, na) == 0, "same seed, different payloads");
    DBK_CHECK_MSG(memcmp(a, d, na) != 0, "seeds 42 and 43 drew the same elements");
    /* 16 distinct indices, each value g * 64/16. */
    float out[N];
    DBK_CHECK(decode(c, a, na, out, N) == 0);
    int sent = 0;
    for (int i = 0; i < N; i++) {
        if (out[i] == 0.0f) continue;
        sent++;
        DBK_CHECK_MSG(fabsf(out[i] - 4.0f * g[i]) < 1e-6f, "element %d: %g is not 4 x %g", i, (double)out[i], (double)g[i]);
    }
    DBK_CHECK(sent == 16);
    dbk_compressor_destroy(c);
    return 0;
}

static int quantised_payloads_should_have_the_computed_sizes(void) {
    const dbk_segment segs[2] = {{0, 40}, {40, 24}};
    struct {
        const char *method;
        bool        layerwise;
        size_t      bytes;
    } cases[] = {
        {"terngrad", false, 4 + 16},           /* scale + 64 x 2 bits */
        {"terngrad", true, (4 + 10) + (4 + 6)}, /* per tensor: 40 x 2 bits, 24 x 2 bits */
        {"qsgd:255", false, 4 + 72},           /* 64 x (1 + 8) bits */
        {"qsgd:4", true, (4 + 20) + (4 + 12)},  /* 3 level bits: 40 x 4 bits, 24 x 4 bits */
        {"none", true, 64 * 4},
        {"topk:0.1", true, (4 + 3) * 8},       /* ceil(4.0) + ceil(2.4) pairs */
        {"topk:0.1", false, 7 * 8},            /* ceil(6.4) */
    };
    float g[N];
    known_gradient(g, N);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        dbk_compress_spec s = spec_of(cases[k].method, cases[k].layerwise);
        dbk_compressor *c;
        DBK_CHECK_OK(dbk_compressor_create(&s, segs, 2, N, &c));
        uint8_t payload[N * 8];
        const size_t bytes = dbk_compressor_encode(c, g, 5, payload);
        DBK_CHECK_MSG(bytes == cases[k].bytes && dbk_compressor_max_payload(c) == cases[k].bytes,
                      "%s %s: payload %zu bytes (max %zu), computed %zu", cases[k].method,
                      cases[k].layerwise ? "layerwise" : "model", bytes, dbk_compressor_max_payload(c), cases[k].bytes);
        dbk_compressor_destroy(c);
    }
    return 0;
}

/* Two tensors of very different scales: top-k over the model takes only the large one;
 * layer-wise, each tensor keeps its own largest. */
static int layerwise_should_select_per_tensor_and_model_over_all(void) {
    float g[N], out[N];
    for (int i = 0; i < N; i++) g[i] = i < 32 ? 100.0f + (float)i : 0.01f * (float)(i - 31);
    const dbk_segment segs[2] = {{0, 32}, {32, 32}};
    uint8_t payload[N * 8];
    dbk_compressor *c;
    dbk_compress_spec model = spec_of("topk:0.125", false);
    DBK_CHECK_OK(dbk_compressor_create(&model, segs, 2, N, &c));
    size_t bytes = dbk_compressor_encode(c, g, 1, payload);
    DBK_CHECK(decode(c, payload, bytes, out, N) == 0);
    for (int i = 0; i < N; i++) DBK_CHECK_MSG((out[i] != 0.0f) == (i >= 24 && i < 32), "model scope, element %d", i);
    dbk_compressor_destroy(c);
    dbk_compress_spec layer = spec_of("topk:0.125", true);
    DBK_CHECK_OK(dbk_compressor_create(&layer, segs, 2, N, &c));
    bytes = dbk_compressor_encode(c, g, 1, payload);
    DBK_CHECK(decode(c, payload, bytes, out, N) == 0);
    for (int i = 0; i < N; i++)
        DBK_CHECK_MSG((out[i] != 0.0f) == ((i >= 28 && i < 32) || i >= 60), "layerwise scope, element %d", i);
    dbk_compressor_destroy(c);
    return 0;
}

/* With error feedback, what a step leaves out is sent later: once the residual is drained,
 * the sum of everything decoded equals the sum of the gradients, every element included. */
static int error_feedback_should_carry_what_was_left_out(void) {
    float g[N], out[N], sum_sent[N] = {0};
    known_gradient(g, N);
    dbk_compress_spec s = spec_of("topk:0.125", false);
    s.error_feedback = true;
    dbk_compressor *c;
    DBK_CHECK_OK(dbk_compressor_create(&s, NULL, 0, N, &c));
    uint8_t payload[N * 8];
    enum { STEPS = 8 };
    for (int t = 0; t < STEPS; t++) {
        const size_t bytes = dbk_compressor_encode(c, g, 1, payload);
        DBK_CHECK(decode(c, payload, bytes, out, N) == 0);
        for (int i = 0; i < N; i++) sum_sent[i] += out[i];
    }
    /* Then zero gradients: each step sends the 8 largest of the residual, which drains it
     * (64 nonzero elements, 8 per step). Without feedback nothing more would be sent, and the
     * 56 smaller elements would never have been. */
    float zero[N] = {0};
    for (int t = 0; t < 16; t++) {
        const size_t bytes = dbk_compressor_encode(c, zero, 1, payload);
        DBK_CHECK(decode(c, payload, bytes, out, N) == 0);
        for (int i = 0; i < N; i++) sum_sent[i] += out[i];
    }
    for (int i = 0; i < N; i++)
        DBK_CHECK_MSG(fabsf(sum_sent[i] - STEPS * g[i]) < 1e-4f, "element %d: sent %g in all, gradients summed %g", i,
                      (double)sum_sent[i], (double)(STEPS * g[i]));
    dbk_compressor_destroy(c);
    return 0;
}

static int decode_should_refuse_malformed_payloads(void) {
    float out[N] = {0};
    dbk_compressor *c;
    dbk_compress_spec sparse = spec_of("threshold:0.1", false);
    DBK_CHECK_OK(dbk_compressor_create(&sparse, NULL, 0, N, &c));
    uint8_t p[16] = {0};
    const uint32_t bad = N;
    memcpy(p, &bad, 4);
    DBK_CHECK(dbk_compressor_decode_add(c, p, 8, 1.0f, out) == DBK_ERR_FORMAT);  /* index out of range */
    DBK_CHECK(dbk_compressor_decode_add(c, p, 7, 1.0f, out) == DBK_ERR_FORMAT);  /* not whole pairs */
    dbk_compressor_destroy(c);
    dbk_compress_spec tern = spec_of("terngrad", false);
    DBK_CHECK_OK(dbk_compressor_create(&tern, NULL, 0, N, &c));
    uint8_t t[20];
    memset(t, 0xff, sizeof t); /* code 3 */
    DBK_CHECK(dbk_compressor_decode_add(c, t, 20, 1.0f, out) == DBK_ERR_FORMAT);
    DBK_CHECK(dbk_compressor_decode_add(c, t, 19, 1.0f, out) == DBK_ERR_FORMAT); /* wrong size */
    dbk_compressor_destroy(c);
    return 0;
}

static int parse_should_accept_the_documented_forms_and_refuse_others(void) {
    dbk_compress_spec s = {0};
    char text[48];
    const char *good[] = {"none", "randomk:0.01", "topk:1%", "threshold:0.001", "terngrad", "qsgd:255"};
    const char *back[] = {"none", "randomk:0.01", "topk:0.01", "threshold:0.001", "terngrad", "qsgd:255"};
    for (int i = 0; i < 6; i++) {
        DBK_CHECK_OK(dbk_compress_parse(good[i], &s));
        dbk_compress_format(&s, text, sizeof text);
        DBK_CHECK_MSG(!strcmp(text, back[i]), "'%s' formats back as '%s'", good[i], text);
    }
    const char *bad[] = {"topk", "topk:0", "topk:1.5", "topk:abc", "randomk:200%", "threshold:-1", "threshold",
                         "qsgd", "qsgd:0", "qsgd:70000", "terngrad:2", "none:1", "gzip", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        DBK_CHECK_MSG(dbk_compress_parse(bad[i], &s) == DBK_ERR_INVALID_ARG, "'%s' accepted", bad[i]);
    DBK_CHECK_OK(dbk_compress_parse_scope("model", &s));
    DBK_CHECK(!s.layerwise);
    DBK_CHECK_OK(dbk_compress_parse_scope("layerwise", &s));
    DBK_CHECK(s.layerwise);
    DBK_CHECK(dbk_compress_parse_scope("layer", &s) == DBK_ERR_INVALID_ARG);
    return 0;
}

static int link_model_should_follow_the_ring_formulas(void) {
    const dbk_link l = {.gbps = 8.0, .latency_us = 10.0}; /* 1e9 bytes/s */
    /* 2 ranks, 1e6 bytes: 2 steps of (10 us + 0.5e6 / 1e9 s) = 1.02 ms */
    DBK_CHECK(fabs(dbk_link_allreduce_seconds(&l, 2, 1e6) - 1.02e-3) < 1e-12);
    const double payload[3] = {100.0, 300.0, 200.0};
    /* 3 ranks: 2 x 10 us + (600 - 100) bytes / 1e9 */
    DBK_CHECK(fabs(dbk_link_allgather_seconds(&l, 3, payload) - (20e-6 + 500e-9)) < 1e-15);
    DBK_CHECK(dbk_link_allreduce_seconds(&l, 1, 1e6) == 0.0);
    return 0;
}

int main(void) {
    DBK_RUN(topk_should_pick_the_k_largest_magnitudes);
    DBK_RUN(topk_should_send_exactly_k_when_magnitudes_tie);
    DBK_RUN(threshold_should_send_every_element_at_or_above_v);
    DBK_RUN(randomk_should_be_unbiased_after_scaling);
    DBK_RUN(randomk_should_repeat_with_its_seed_and_vary_without);
    DBK_RUN(terngrad_should_be_unbiased);
    DBK_RUN(qsgd_should_be_unbiased);
    DBK_RUN(quantised_payloads_should_have_the_computed_sizes);
    DBK_RUN(layerwise_should_select_per_tensor_and_model_over_all);
    DBK_RUN(error_feedback_should_carry_what_was_left_out);
    DBK_RUN(decode_should_refuse_malformed_payloads);
    DBK_RUN(parse_should_accept_the_documented_forms_and_refuse_others);
    DBK_RUN(link_model_should_follow_the_ring_formulas);
    return dbk_test_finish();
}
