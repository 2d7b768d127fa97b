/*
 * test_amp.c — mixed precision on the host: the fp16 conversions of core/half.h against a
 * brute-force nearest-value search, and the dynamic loss scaler (train/loss_scaler.h) driven
 * by the CPU reference's DBK_OP_GRAD_UNSCALE on constructed gradients with an inf and a NaN.
 */
#include <math.h>
#include <string.h>

#include "core/half.h"
#include "core/rng.h"
#include "test_util.h"
#include "train/loss_scaler.h"

/* Every f16 bit pattern widens and narrows back to itself (NaNs to a NaN). */
static int every_f16_should_round_trip(void) {
    for (uint32_t h = 0; h < 65536u; h++) {
        const float f = dbk_f16_to_f32((uint16_t)h);
        const uint16_t back = dbk_f32_to_f16(f);
        if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu)) DBK_CHECK(isnan(f) && (back & 0x7c00u) == 0x7c00u && (back & 0x3ffu));
        else DBK_CHECK(back == h);
    }
    return 0;
}

/* f32 -> f16 picks the nearest finite f16 (ties: even significand), or inf beyond 65520:
 * checked against a search over all 63490 non-NaN values on random inputs of every scale. */
static int narrowing_should_round_to_nearest_even(void) {
    static float table[63490];
    static uint16_t bits[63490];
    int n = 0;
    for (uint32_t h = 0; h < 65536u; h++)
        if ((h & 0x7c00u) != 0x7c00u && (h & 0x8000u) == 0) { /* finite, non-negative */
            bits[n] = (uint16_t)h;
            table[n++] = dbk_f16_to_f32((uint16_t)h);
        }
    dbk_rng rng;
    dbk_rng_init(&rng, 7);
    for (int i = 0; i < 20000; i++) {
        float x = ldexpf(dbk_rng_uniform(&rng), (int)dbk_rng_below(&rng, 46) - 28);
        if (i % 4 == 0) x = table[dbk_rng_below(&rng, (uint32_t)n - 1)] * 0.5f + table[dbk_rng_below(&rng, (uint32_t)n - 1)] * 0.5f;
        /* the nearest by binary search over the sorted positive values */
        int lo = 0, hi = n - 1;
        while (hi - lo > 1) {
            const int mid = (lo + hi) / 2;
            if (table[mid] <= x) lo = mid;
            else hi = mid;
        }
        uint16_t want;
        if (x >= 65520.0f) want = 0x7c00u;
        else if (x - table[lo] < table[hi] - x || x <= table[lo]) want = bits[lo];
        else if (x - table[lo] > table[hi] - x) want = bits[hi];
        else want = (bits[lo] & 1u) ? bits[hi] : bits[lo];
        DBK_CHECK(dbk_f32_to_f16(x) == want);
        DBK_CHECK(dbk_f32_to_f16(-x) == (uint16_t)(want | 0x8000u));
    }
    DBK_CHECK(dbk_f32_to_f16(1.0f + 0x1p-11f) == 0x3c00u);       /* tie, down to even */
    DBK_CHECK(dbk_f32_to_f16(1.0f + 3 * 0x1p-11f) == 0x3c02u);   /* tie, up to even */
    DBK_CHECK(dbk_f32_to_f16(0x1p-25f) == 0x0000u);              /* half the smallest subnormal: to even 0 */
    DBK_CHECK(dbk_f32_to_f16(0x1.8p-25f) == 0x0001u);
    DBK_CHECK(dbk_f32_to_f16(65504.0f) == 0x7bffu);
    DBK_CHECK(dbk_f32_to_f16(INFINITY) == 0x7c00u);
    return 0;
}

/* The state machine alone: S halves on overflow (never below 1) and the step is skipped;
 * it doubles after growth_interval clean steps in a row; an overflow restarts the count. */
static int scaler_should_skip_halve_and_grow(void) {
    dbk_loss_scaler ls;
    dbk_loss_scaler_init(&ls, 65536.0f, 3);
    DBK_CHECK(!dbk_loss_scaler_step(&ls, true));
    DBK_CHECK(ls.scale == 32768.0f && ls.skipped_steps == 1);
    DBK_CHECK(dbk_loss_scaler_step(&ls, false) && dbk_loss_scaler_step(&ls, false));
    DBK_CHECK(!dbk_loss_scaler_step(&ls, true));               /* the count restarts */
    DBK_CHECK(ls.scale == 16384.0f && ls.skipped_steps == 2);
    for (int i = 0; i < 3; i++) DBK_CHECK(dbk_loss_scaler_step(&ls, false));
    DBK_CHECK(ls.scale == 32768.0f && ls.growths == 1);
    dbk_loss_scaler_init(&ls, 4.0f, 2000);
    for (int i = 0; i < 5; i++) DBK_CHECK(!dbk_loss_scaler_step(&ls, true));
    DBK_CHECK(ls.scale == 1.0f && ls.skipped_steps == 5);      /* floor at 1 */
    return 0;
}

/* One step of the device side on the CPU reference: gradients with one bad value (inf or
 * NaN) among finite ones, unscaled and checked by DBK_OP_GRAD_UNSCALE; the flag drives the
 * scaler. Then clean gradients: no flag, the update runs, and g is g / S exactly. */
static int unscale_flag_should_drive_the_scaler(void) {
    dbk_backend *be = NULL;
    dbk_buffer *buf = NULL;
    DBK_CHECK_OK(dbk_backend_create(DBK_BACKEND_KIND_CPU, 0, &be));
    enum { N = 1000 };
    DBK_CHECK_OK(dbk_buffer_create(be, (N + 2) * sizeof(float), &buf));
    dbk_op_desc op = {.op = DBK_OP_GRAD_UNSCALE};
    op.src[0] = dbk_tensor_make(buf, 0, DBK_DTYPE_F32, 1, 1, 1, 1, 1);                    /* inv */
    op.dst[0] = dbk_tensor_make(buf, 2 * sizeof(float), DBK_DTYPE_F32, 1, N, 1, 1, 1);     /* g */
    op.dst[1] = dbk_tensor_make(buf, sizeof(float), DBK_DTYPE_F32, 1, 1, 1, 1, 1);          /* found */
    dbk_loss_scaler ls;
    dbk_loss_scaler_init(&ls, 65536.0f, 2000);
    const float bad[2] = {INFINITY, NAN};
    float host[N + 2];
    for (int step = 0; step < 3; step++) {
        host[0] = 1.0f / ls.scale;
        host[1] = 0.0f;
        for (int i = 0; i < N; i++) host[2 + i] = (float)(i - N / 2) * ls.scale;
        if (step < 2) host[2 + 123 * (step + 1)] = bad[step];
        DBK_CHECK_OK(dbk_buffer_write(buf, 0, host, sizeof host));
        DBK_CHECK_OK(dbk_backend_run(be, &op));
        float out[N + 2];
        DBK_CHECK_OK(dbk_buffer_read(buf, 0, out, sizeof out));
        const bool overflow = out[1] != 0.0f;
        DBK_CHECK(overflow == (step < 2));
        const float scale_before = ls.scale;
        DBK_CHECK(dbk_loss_scaler_step(&ls, overflow) == !overflow);
        if (!overflow)
            for (int i = 0; i < N; i++) DBK_CHECK(out[2 + i] == (float)(i - N / 2));
        else DBK_CHECK(ls.scale == scale_before / 2);
    }
    DBK_CHECK(ls.skipped_steps == 2 && ls.scale == 16384.0f);
    dbk_buffer_destroy(buf);
    dbk_backend_destroy(be);
    return 0;
}

/* The device's scaler (DBK_OP_AMP_UPDATE_SCALE after GRAD_UNSCALE and an SGD update that
 * skips on the flag), on the CPU reference, against the host's state machine over a run of
 * steps with overflows at chosen steps: the same S, counts and skips, the parameters left
 * alone on a skipped step, and no read-back needed to get there. */
static int device_scaler_should_match_the_host_scaler(void) {
    dbk_backend *be = NULL;
    dbk_buffer *buf = NULL;
    DBK_CHECK_OK(dbk_backend_create(DBK_BACKEND_KIND_CPU, 0, &be));
    enum { N = 64, STATE = 0, LR = 6, G = 8, P = G + N, M = P + N, FLOATS = M + N };
    DBK_CHECK_OK(dbk_buffer_create(be, FLOATS * sizeof(float), &buf));
    const dbk_tensor state = dbk_tensor_make(buf, 0, DBK_DTYPE_F32, 1, 6, 1, 1, 1);
    const dbk_tensor scalar[3] = {dbk_tensor_make(buf, 0, DBK_DTYPE_F32, 1, 1, 1, 1, 1),               /* S */
                                  dbk_tensor_make(buf, 1 * sizeof(float), DBK_DTYPE_F32, 1, 1, 1, 1, 1), /* 1/S */
                                  dbk_tensor_make(buf, 2 * sizeof(float), DBK_DTYPE_F32, 1, 1, 1, 1, 1)}; /* found */
    dbk_op_desc unscale = {.op = DBK_OP_GRAD_UNSCALE}, sgd = {.op = DBK_OP_SGD_MOMENTUM_UPDATE},
                update = {.op = DBK_OP_AMP_UPDATE_SCALE, .p.amp.growth_interval = 3.0f};
    unscale.src[0] = scalar[1];
    unscale.dst[0] = dbk_tensor_make(buf, G * sizeof(float), DBK_DTYPE_F32, 1, N, 1, 1, 1);
    unscale.dst[1] = scalar[2];
    sgd.p.sgd = (dbk_sgd_params){0.9f, 0.0f, false};
    sgd.src[0] = unscale.dst[0];
    sgd.src[1] = dbk_tensor_make(buf, LR * sizeof(float), DBK_DTYPE_F32, 1, 1, 1, 1, 1);
    sgd.src[3] = scalar[2];
    sgd.dst[0] = dbk_tensor_make(buf, P * sizeof(float), DBK_DTYPE_F32, 1, N, 1, 1, 1);
    sgd.dst[1] = dbk_tensor_make(buf, M * sizeof(float), DBK_DTYPE_F32, 1, N, 1, 1, 1);
    update.dst[0] = state;
    dbk_loss_scaler ls;
    dbk_loss_scaler_init(&ls, 65536.0f, 3);
    float host[FLOATS] = {ls.scale, 1.0f / ls.scale, 0.0f, 0.0f, 0.0f, 0.0f, 0.1f};
    DBK_CHECK_OK(dbk_buffer_write(buf, 0, host, sizeof host));
    static const bool overflow[] = {true, false, false, false, true, true, false, false, false, false};
    for (size_t step = 0; step < sizeof overflow / sizeof overflow[0]; step++) {
        float g[N], before[FLOATS], after[FLOATS];
        for (int i = 0; i < N; i++) g[i] = (float)(i - N / 2) * ls.scale;   /* what the backward gives: S * grad */
        if (overflow[step]) g[7] = INFINITY;
        DBK_CHECK_OK(dbk_buffer_write(buf, G * sizeof(float), g, sizeof g));
        DBK_CHECK_OK(dbk_buffer_read(buf, 0, before, sizeof before));
        DBK_CHECK_OK(dbk_backend_run(be, &unscale));
        DBK_CHECK_OK(dbk_backend_run(be, &sgd));
        DBK_CHECK_OK(dbk_backend_run(be, &update));
        DBK_CHECK_OK(dbk_buffer_read(buf, 0, after, sizeof after));
        const bool ran = dbk_loss_scaler_step(&ls, overflow[step]);
        DBK_CHECK_MSG(after[0] == ls.scale && after[1] == 1.0f / ls.scale && after[2] == 0.0f &&
                          after[3] == (float)ls.clean_steps && after[4] == (float)ls.skipped_steps &&
                          after[5] == (float)ls.growths,
                      "step %zu: device {%g, %g, %g, %g, %g, %g}, host S %g clean %d skipped %ld growths %ld", step,
                      (double)after[0], (double)after[1], (double)after[2], (double)after[3], (double)after[4],
                      (double)after[5], (double)ls.scale, ls.clean_steps, ls.skipped_steps, ls.growths);
        DBK_CHECK_MSG(ran == (memcmp(before + P, after + P, 2 * N * sizeof(float)) != 0),
                      "step %zu: the update %s but the host scaler says it %s", step, ran ? "did not run" : "ran",
                      ran ? "runs" : "is skipped");
    }
    DBK_CHECK(ls.skipped_steps == 3 && ls.growths == 2);   /* the sequence reached both branches */
    dbk_buffer_destroy(buf);
    dbk_backend_destroy(be);
    return 0;
}

int main(void) {
    DBK_RUN(every_f16_should_round_trip);
    DBK_RUN(narrowing_should_round_to_nearest_even);
    DBK_RUN(scaler_should_skip_halve_and_grow);
    DBK_RUN(unscale_flag_should_drive_the_scaler);
    DBK_RUN(device_scaler_should_match_the_host_scaler);
    return dbk_test_finish();
}
