/*
 * test_ops_cpu_augment.c — the augment op: draws, geometry, determinism, flips,
 * views and its validation
 * (part of the test_ops_cpu executable: test_ops_cpu.c has the tolerances and main).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
/* For dbk_augment_choices, the documented draw the device kernels reimplement. */
#include "backends/cpu/cpu_internal.h"
#include "core/log.h"
#include "core/rng.h"
#include "test_ops_cpu.h"
#include "test_util.h"


/* ---------------------------------------------------------------------------------- */
/* augment                                                                            */

enum { AUG_M = 7, AUG_H = 12, AUG_W = 10, AUG_L = 24, AUG_N = 16 };

typedef struct aug_fixture {
    dbk_tensor images, labels, indices, state, x, y;
    uint8_t    himg[AUG_M * 3 * AUG_H * AUG_W];
    uint8_t    hlab[AUG_M];
    int32_t    hidx[AUG_L];
} aug_fixture;

/* A ramp dataset: pixel (j, c, y, x) = (40c + 10y + 3x + 7j) mod 256, so position errors
 * change values; labels 9 - j; indices a fixed shuffle. */
static int aug_setup(aug_fixture *f) {
    f->images = gt(DBK_DTYPE_U8, 4, AUG_M, 3, AUG_H, AUG_W);
    f->labels = gt(DBK_DTYPE_U8, 1, AUG_M, 1, 1, 1);
    f->indices = gt(DBK_DTYPE_I32, 1, AUG_L, 1, 1, 1);
    f->state = gt(DBK_DTYPE_I32, 1, 4, 1, 1, 1);
    f->x = gf(4, AUG_N, 3, AUG_H, AUG_W);
    f->y = gt(DBK_DTYPE_I32, 1, AUG_N, 1, 1, 1);
    for (int j = 0; j < AUG_M; j++) {
        f->hlab[j] = (uint8_t)(9 - j);
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < AUG_H; y++)
                for (int x = 0; x < AUG_W; x++)
                    f->himg[((j * 3 + c) * AUG_H + y) * AUG_W + x] = (uint8_t)((40 * c + 10 * y + 3 * x + 7 * j) % 256);
    }
    for (int i = 0; i < AUG_L; i++) f->hidx[i] = (i * 5 + 3) % AUG_M;
    DBK_CHECK_OK(dbk_tensor_write(&f->images, f->himg));
    DBK_CHECK_OK(dbk_tensor_write(&f->labels, f->hlab));
    DBK_CHECK_OK(dbk_tensor_write(&f->indices, f->hidx));
    return 0;
}

static dbk_op_desc aug_desc(const aug_fixture *f, bool train, bool with_indices) {
    dbk_op_desc d = {.op = DBK_OP_AUGMENT};
    d.p.augment = (dbk_augment_params){
        .train = train, .pad = 3, .flip = true, .cutout = 4, .mean = {0.4f, 0.5f, 0.6f}, .std = {0.2f, 0.25f, 0.3f}};
    d.src[0] = f->images;
    d.src[1] = f->labels;
    if (with_indices) d.src[2] = f->indices;
    d.src[3] = f->state;
    d.dst[0] = f->x;
    d.dst[1] = f->y;
    return d;
}

/* Runs d with state {first, seed, epoch, run_seed}. */
static int aug_run_epoch(const aug_fixture *f, const dbk_op_desc *d, int32_t first, int32_t seed, int32_t epoch,
                         int32_t run_seed) {
    const int32_t st[4] = {first, seed, epoch, run_seed};
    DBK_CHECK_OK(dbk_tensor_write(&f->state, st));
    DBK_CHECK_OK(dbk_backend_run(be, d));
    return 0;
}

static int aug_run(const aug_fixture *f, const dbk_op_desc *d, int32_t first, int32_t seed) {
    return aug_run_epoch(f, d, first, seed, 0, 0);
}

/* numpy.pad(mode='reflect') index, written as a triangle wave of period 2(n-1) (the backend
 * uses two conditional mirrors instead). */
static int reflect_ref(int i, int n) {
    const int period = 2 * (n - 1);
    i = ((i % period) + period) % period;
    return i < n ? i : period - i;
}

/* The choices as ops.h documents them, computed from dbk_hash_u32 here. */
typedef struct aug_draw {
    int crop_y, crop_x, flip, cut_y, cut_x;
} aug_draw;

static aug_draw draw_ref(uint32_t seed, uint32_t row, int pad, int cutout, int h, int w) {
    aug_draw d;
    d.crop_y = pad ? (int)(((uint64_t)dbk_hash_u32(seed, row, 0, 0) * (uint64_t)(2 * pad + 1)) >> 32) : 0;
    d.crop_x = pad ? (int)(((uint64_t)dbk_hash_u32(seed, row, 1, 0) * (uint64_t)(2 * pad + 1)) >> 32) : 0;
    d.flip = (int)(dbk_hash_u32(seed, row, 2, 0) >> 31);
    d.cut_y = cutout ? (int)(((uint64_t)dbk_hash_u32(seed, row, 3, 0) * (uint64_t)(h - cutout + 1)) >> 32) : 0;
    d.cut_x = cutout ? (int)(((uint64_t)dbk_hash_u32(seed, row, 4, 0) * (uint64_t)(w - cutout + 1)) >> 32) : 0;
    return d;
}

/* The alternating flip's coin as op_list.h documents it, computed from dbk_hash_u32 here. */
static int base_flip_ref(uint32_t run_seed, uint32_t j) { return (int)(dbk_hash_u32(run_seed, j, 5, 0) & 1u); }

/* Expected training batch: explicit padded image, crop, flip, normalise, cutout. */
static void aug_expect(const aug_fixture *f, const dbk_augment_params *p, int32_t first, int32_t seed, int32_t epoch,
                       int32_t run_seed, bool with_indices, float *out, int *flips) {
    const int H = AUG_H, W = AUG_W, HP = AUG_H + 2 * p->pad, WP = AUG_W + 2 * p->pad;
    uint8_t *padded = malloc((size_t)(HP * WP));
    *flips = 0;
    for (int i = 0; i < AUG_N; i++) {
        const int row = first + i, j = with_indices ? f->hidx[row] : row;
        aug_draw d = {p->pad, p->pad, 0, 0, 0};
        if (p->train) {
            d = draw_ref((uint32_t)seed, (uint32_t)row, p->pad, p->cutout, H, W);
            if (p->flip_alternating) d.flip = base_flip_ref((uint32_t)run_seed, (uint32_t)j) ^ (epoch & 1);
            else d.flip = d.flip && p->flip;
        }
        *flips += d.flip;
        for (int c = 0; c < 3; c++) {
            const uint8_t *img = f->himg + (j * 3 + c) * H * W;
            for (int y = 0; y < HP; y++)
                for (int x = 0; x < WP; x++)
                    padded[y * WP + x] = img[reflect_ref(y - p->pad, H) * W + reflect_ref(x - p->pad, W)];
            float *o = out + ((int64_t)i * 3 + c) * H * W;
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++) {
                    const int xs = d.flip ? W - 1 - x : x;
                    const float v = (float)padded[(y + d.crop_y) * WP + xs + d.crop_x];
                    const bool cut = p->train && p->cutout && y >= d.cut_y && y < d.cut_y + p->cutout &&
                                     x >= d.cut_x && x < d.cut_x + p->cutout;
                    o[y * W + x] = cut ? 0.0f : (v / 255.0f - p->mean[c]) / p->std[c];
                }
        }
    }
    free(padded);
}

int augment_choices_should_follow_the_documented_draw(void) {
    /* Sanity of the test's own reflect: numpy.pad([0,1,2,3], 2, 'reflect') = 2 1 0 1 2 3 2 1. */
    static const int np_reflect[8] = {2, 1, 0, 1, 2, 3, 2, 1};
    for (int i = 0; i < 8; i++) DBK_CHECK(reflect_ref(i - 2, 4) == np_reflect[i]);

    int crop_seen[9] = {0}, flips = 0, cut_lo = 0, cut_hi = 0;
    const int rows = 4000, pad = 4, cutout = 8, H = 32, W = 32;
    for (int r = 0; r < rows; r++) {
        int cy, cx, fl, ky, kx;
        dbk_augment_choices(99u, (uint32_t)r, pad, cutout, H, W, &cy, &cx, &fl, &ky, &kx);
        const aug_draw d = draw_ref(99u, (uint32_t)r, pad, cutout, H, W);
        DBK_CHECK_MSG(cy == d.crop_y && cx == d.crop_x && fl == d.flip && ky == d.cut_y && kx == d.cut_x,
                      "row %d: choices (%d %d %d %d %d) differ from the documented draw (%d %d %d %d %d)", r, cy, cx,
                      fl, ky, kx, d.crop_y, d.crop_x, d.flip, d.cut_y, d.cut_x);
        DBK_CHECK(cy >= 0 && cy <= 2 * pad && cx >= 0 && cx <= 2 * pad && (fl == 0 || fl == 1));
        DBK_CHECK(ky >= 0 && ky <= H - cutout && kx >= 0 && kx <= W - cutout);
        crop_seen[cy]++;
        flips += fl;
        cut_lo += ky == 0;
        cut_hi += ky == H - cutout;
    }
    for (int v = 0; v <= 2 * pad; v++) DBK_CHECK_MSG(crop_seen[v] > rows / 20, "crop offset %d drawn %d times", v, crop_seen[v]);
    DBK_CHECK_MSG(flips > rows * 45 / 100 && flips < rows * 55 / 100, "%d flips in %d rows", flips, rows);
    DBK_CHECK(cut_lo > 0 && cut_hi > 0);

    int cy, cx, fl, ky, kx;
    dbk_augment_choices(5u, 17u, 0, 0, H, W, &cy, &cx, &fl, &ky, &kx);
    DBK_CHECK(cy == 0 && cx == 0 && ky == 0 && kx == 0);
    return 0;
}

int augment_train_should_match_independent_geometry(void) {
    aug_fixture *f = calloc(1, sizeof *f);
    int rc = aug_setup(f);
    float *expect = malloc(sizeof(float) * AUG_N * 3 * AUG_H * AUG_W);
    const int first = 5, seed = 4242;
    for (int flip_on = 1; flip_on >= 0 && rc == 0; flip_on--) {
        dbk_op_desc d = aug_desc(f, true, true);
        d.p.augment.flip = flip_on;
        rc |= aug_run(f, &d, first, seed);
        float *got = dbk_test_read(&f->x);
        int32_t *gl = dbk_test_read(&f->y);
        int flips;
        aug_expect(f, &d.p.augment, first, seed, 0, 0, true, expect, &flips);
        rc |= close_abs(flip_on ? "augment train (crop, flip, cutout)" : "augment train without flip", expect, got,
                        AUG_N * 3 * AUG_H * AUG_W, 1e-6);
        /* The case must exercise both branches of the flip, or it proves little. */
        if (flip_on) DBK_CHECK_MSG(flips > 0 && flips < AUG_N, "%d of %d rows flipped", flips, AUG_N);
        for (int i = 0; i < AUG_N; i++)
            DBK_CHECK_MSG(gl[i] == f->hlab[f->hidx[first + i]], "row %d label %d", i, gl[i]);
        free(got);
        free(gl);
    }
    rc |= guards_intact();
    free(expect);
    free(f);
    free_all();
    return rc;
}

int augment_eval_should_only_normalise(void) {
    aug_fixture *f = calloc(1, sizeof *f);
    int rc = aug_setup(f);
    /* No indices: row i reads image first + i, so a batch of M rows is the whole dataset. */
    dbk_op_desc d = aug_desc(f, false, false);
    const int first = 0;
    d.dst[0].shape[0] = AUG_M;
    d.dst[1].shape[0] = AUG_M;
    rc |= aug_run(f, &d, first, 1);
    float *got = dbk_test_read(&d.dst[0]);
    int32_t *gl = dbk_test_read(&d.dst[1]);
    float *expect = malloc(sizeof(float) * AUG_M * 3 * AUG_H * AUG_W);
    for (int j = 0; j < AUG_M; j++)
        for (int c = 0; c < 3; c++)
            for (int e = 0; e < AUG_H * AUG_W; e++)
                expect[(j * 3 + c) * AUG_H * AUG_W + e] =
                    ((float)f->himg[(j * 3 + c) * AUG_H * AUG_W + e] / 255.0f - d.p.augment.mean[c]) / d.p.augment.std[c];
    rc |= close_abs("augment eval = normalisation only", expect, got, AUG_M * 3 * AUG_H * AUG_W, 1e-6);
    for (int j = 0; j < AUG_M; j++) DBK_CHECK_MSG(gl[j] == f->hlab[j], "row %d label %d", j, gl[j]);
    rc |= guards_intact();
    free(got); free(gl); free(expect); free(f);
    free_all();
    return rc;
}

/* cifar10-speedrun's jitter: with brightness B and contrast C every value of a row is (o + b) c,
 * o the same op's output without jitter (same seed: same crops and flips), one (b, c) per row,
 * |b| <= B, |c - 1| <= C; different rows draw different pairs. The cutout (after the jitter)
 * is off here. */
int augment_jitter_should_shift_and_scale_each_row(void) {
    aug_fixture *f = calloc(1, sizeof *f);
    int rc = aug_setup(f);
    dbk_op_desc d = aug_desc(f, true, true);
    d.p.augment.cutout = 0;
    rc |= aug_run(f, &d, 5, 77);
    float *plain = dbk_test_read(&d.dst[0]);
    d.p.augment.brightness = 0.1399f;
    d.p.augment.contrast = 0.1308f;
    rc |= aug_run(f, &d, 5, 77);
    float *jit = dbk_test_read(&d.dst[0]);
    const int per = 3 * AUG_H * AUG_W;
    double first_c = 0.0;
    int distinct = 0;
    for (int i = 0; i < AUG_N && !rc; i++) {
        const float *o = plain + i * per, *v = jit + i * per;
        /* two values of the row with different o give c and b */
        int k = 1;
        while (k < per && fabsf(o[k] - o[0]) < 0.5f) k++;
        const double v0 = v[0], vk = v[k], o0 = o[0], ok = o[k];
        const double c = (vk - v0) / (ok - o0), b = v0 / c - o0;
        DBK_CHECK_MSG(fabs(b) <= 0.1399 + 1e-4 && fabs(c - 1.0) <= 0.1308 + 1e-4, "row %d: b %g, c %g out of range", i,
                      b, c);
        for (int e = 0; e < per; e++)
            DBK_CHECK_MSG(fabs((double)v[e] - ((double)o[e] + b) * c) < 1e-5, "row %d value %d: %g, (o + b) c = %g", i, e,
                          (double)v[e], ((double)o[e] + b) * c);
        if (i == 0) first_c = c;
        else distinct += fabs(c - first_c) > 1e-6;
    }
    DBK_CHECK_MSG(distinct > 0, "every row drew the same contrast");
    rc |= guards_intact();
    free(plain); free(jit); free(f);
    free_all();
    return rc;
}

int augment_should_be_deterministic_per_seed(void) {
    aug_fixture *f = calloc(1, sizeof *f);
    int rc = aug_setup(f);
    const dbk_op_desc d = aug_desc(f, true, true);
    rc |= aug_run(f, &d, 3, 77);
    float *a = dbk_test_read(&f->x);
    rc |= aug_run(f, &d, 0, 1);       /* something else in between */
    rc |= aug_run(f, &d, 3, 77);
    float *b = dbk_test_read(&f->x);
    rc |= aug_run(f, &d, 3, 78);
    float *c = dbk_test_read(&f->x);
    const size_t nb = sizeof(float) * AUG_N * 3 * AUG_H * AUG_W;
    rc |= equal_bytes("augment twice with the same state", a, b, nb);
    DBK_CHECK_MSG(memcmp(a, c, nb) != 0, "a different seed gave the same batch");
    free(a); free(b); free(c); free(f);
    free_all();
    return rc;
}

int augment_should_reject_out_of_range_rows(void) {
    aug_fixture *f = calloc(1, sizeof *f);
    int rc = aug_setup(f);
    const size_t nb = sizeof(float) * AUG_N * 3 * AUG_H * AUG_W;
    float *before = dbk_test_read(&f->x);
    struct { int32_t first; bool indices; int32_t bad_index; const char *what; } cases[] = {
        {AUG_L - AUG_N + 1, true, 0, "state.first + N past the index list"},
        {-1, true, 0, "negative state.first"},
        {0, true, AUG_M, "index equal to the dataset size"},
        {0, true, -3, "negative index"},
        {0, false, 0, "no indices and first + N past the dataset"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int32_t idx[AUG_L];
        memcpy(idx, f->hidx, sizeof idx);
        if (cases[k].bad_index) idx[AUG_N / 2] = cases[k].bad_index;
        DBK_CHECK_OK(dbk_tensor_write(&f->indices, idx));
        dbk_op_desc dk = aug_desc(f, true, cases[k].indices);
        const int32_t st[4] = {cases[k].first, 9, 0, 0};
        DBK_CHECK_OK(dbk_tensor_write(&f->state, st));
        const dbk_status s = dbk_backend_run(be, &dk);
        DBK_CHECK_MSG(s == DBK_ERR_INVALID_ARG, "%s: got %s", cases[k].what, dbk_status_str(s));
        DBK_CHECK_MSG(strstr(dbk_last_error(), "augment") != NULL, "%s: message '%s'", cases[k].what, dbk_last_error());
        float *after = dbk_test_read(&f->x);
        const int same = memcmp(before, after, nb) == 0;
        free(after);
        DBK_CHECK_MSG(same, "%s: the output was written before the error", cases[k].what);
    }
    rc |= guards_intact();
    free(before);
    free(f);
    free_all();
    return rc;
}

/* Which way row i of x shows image j, with pad 0 and no cutout (so the only geometry is the
 * flip): 0 as stored, 1 mirrored, -1 neither (a wrong pixel somewhere). */
static int aug_orientation(const aug_fixture *f, const dbk_augment_params *p, const float *x, int i, int j) {
    int as_is = 1, mirrored = 1;
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < AUG_H; y++)
            for (int xo = 0; xo < AUG_W; xo++) {
                const float got = x[((i * 3 + c) * AUG_H + y) * AUG_W + xo];
                const uint8_t *img = f->himg + (j * 3 + c) * AUG_H * AUG_W + y * AUG_W;
                const float a = ((float)img[xo] / 255.0f - p->mean[c]) / p->std[c];
                const float b = ((float)img[AUG_W - 1 - xo] / 255.0f - p->mean[c]) / p->std[c];
                as_is &= fabsf(got - a) <= 1e-6f;
                mirrored &= fabsf(got - b) <= 1e-6f;
            }
    return as_is ? 0 : mirrored ? 1 : -1;
}

int augment_alternating_flip_should_mirror_each_image_once_per_two_epochs(void) {
    aug_fixture *f = calloc(1, sizeof *f);
    int rc = aug_setup(f);
    dbk_op_desc d = aug_desc(f, true, true);
    d.p.augment.pad = 0;
    d.p.augment.cutout = 0;
    d.p.augment.flip_alternating = true;
    const int first = 4, run_seed = 20240611;
    int orient[8][AUG_M];   /* per epoch, per image; -2 = not in the batch */
    for (int e = 0; e < 8 && rc == 0; e++) {
        for (int j = 0; j < AUG_M; j++) orient[e][j] = -2;
        /* a new draw seed every epoch, as the trainer does: the flip must not depend on it */
        rc |= aug_run_epoch(f, &d, first, 1000 + 17 * e, e, run_seed);
        float *x = dbk_test_read(&f->x);
        for (int i = 0; i < AUG_N; i++) {
            const int j = f->hidx[first + i], o = aug_orientation(f, &d.p.augment, x, i, j);
            DBK_CHECK_MSG(o >= 0, "epoch %d row %d: neither image %d nor its mirror", e, i, j);
            /* rows showing the same image agree: the coin is the image's, not the row's */
            DBK_CHECK_MSG(orient[e][j] == -2 || orient[e][j] == o, "epoch %d: image %d shown both ways", e, j);
            orient[e][j] = o;
            DBK_CHECK_MSG(o == (base_flip_ref((uint32_t)run_seed, (uint32_t)j) ^ (e & 1)),
                          "epoch %d image %d: flip %d, documented %d", e, j, o,
                          base_flip_ref((uint32_t)run_seed, (uint32_t)j) ^ (e & 1));
            DBK_CHECK(dbk_augment_base_flip((uint32_t)run_seed, (uint32_t)j) ==
                      base_flip_ref((uint32_t)run_seed, (uint32_t)j));
        }
        free(x);
    }
    int seen = 0, flipped0 = 0;
    for (int j = 0; j < AUG_M; j++) {
        if (orient[0][j] == -2) continue;
        seen++;
        flipped0 += orient[0][j];
        for (int e = 0; e + 1 < 8; e++)
            DBK_CHECK_MSG(orient[e][j] + orient[e + 1][j] == 1, "image %d: flipped %d times in epochs %d and %d", j,
                          orient[e][j] + orient[e + 1][j], e, e + 1);
    }
    /* The batch shows every image, and epoch 0 has both orientations, or the case proves little. */
    DBK_CHECK_MSG(seen == AUG_M, "the batch shows %d of %d images", seen, AUG_M);
    DBK_CHECK_MSG(flipped0 > 0 && flipped0 < AUG_M, "%d of %d images flipped at epoch 0", flipped0, AUG_M);
    rc |= guards_intact();
    free(f);
    free_all();
    return rc;
}

/* Under the alternating flip the crop and cutout stay the row's draws: the whole batch
 * against the explicit pad, crop, flip, cutout of aug_expect, over two epochs. */
int augment_alternating_flip_should_keep_the_crop_and_cutout_draws(void) {
    aug_fixture *f = calloc(1, sizeof *f);
    int rc = aug_setup(f);
    float *expect = malloc(sizeof(float) * AUG_N * 3 * AUG_H * AUG_W);
    const int first = 2, seed = 777, run_seed = -5;
    for (int e = 0; e < 2 && rc == 0; e++) {
        dbk_op_desc d = aug_desc(f, true, true);
        d.p.augment.flip_alternating = true;
        rc |= aug_run_epoch(f, &d, first, seed, e, run_seed);
        float *got = dbk_test_read(&f->x);
        int flips;
        aug_expect(f, &d.p.augment, first, seed, e, run_seed, true, expect, &flips);
        rc |= close_abs(e ? "alternating flip, epoch 1" : "alternating flip, epoch 0", expect, got,
                        AUG_N * 3 * AUG_H * AUG_W, 1e-6);
        DBK_CHECK_MSG(flips > 0 && flips < AUG_N, "epoch %d: %d of %d rows flipped", e, flips, AUG_N);
        free(got);
    }
    rc |= guards_intact();
    free(expect);
    free(f);
    free_all();
    return rc;
}

/* One 3x4 image, v(c, y, x) = 100c + 10y + x, mean 0 and std 1 (so x * 255 = v), read through
 * views worked out by hand with reflect(-1) = 1, reflect(n) = n-2. */
int augment_view_should_match_hand_computed_pixels(void) {
    static const struct { int dy, dx; bool flip; uint8_t v[3][4]; } views[] = {
        {0, 0, false, {{0, 1, 2, 3}, {10, 11, 12, 13}, {20, 21, 22, 23}}},
        {0, 0, true, {{3, 2, 1, 0}, {13, 12, 11, 10}, {23, 22, 21, 20}}},
        /* airbench94 padded[0:H, 0:W]: rows 1 0 1, columns 1 0 1 2 */
        {-1, -1, false, {{11, 10, 11, 12}, {1, 0, 1, 2}, {11, 10, 11, 12}}},
        /* ... then .flip(-1) */
        {-1, -1, true, {{12, 11, 10, 11}, {2, 1, 0, 1}, {12, 11, 10, 11}}},
        /* padded[2:H+2, 2:W+2] then .flip(-1): rows 1 2 1, columns 2 3 2 1 */
        {1, 1, true, {{12, 13, 12, 11}, {22, 23, 22, 21}, {12, 13, 12, 11}}},
        /* the largest shifts reflect once: rows 2 1 0, columns 3 2 1 0 */
        {2, -3, false, {{23, 22, 21, 20}, {13, 12, 11, 10}, {3, 2, 1, 0}}},
    };
    dbk_tensor img = gt(DBK_DTYPE_U8, 4, 1, 3, 3, 4), lab = gt(DBK_DTYPE_U8, 1, 1, 1, 1, 1);
    dbk_tensor st = gt(DBK_DTYPE_I32, 1, 4, 1, 1, 1), x = gf(4, 1, 3, 3, 4), y = gt(DBK_DTYPE_I32, 1, 1, 1, 1, 1);
    uint8_t himg[3 * 3 * 4], hlab[1] = {6};
    for (int c = 0; c < 3; c++)
        for (int r = 0; r < 3; r++)
            for (int k = 0; k < 4; k++) himg[(c * 3 + r) * 4 + k] = (uint8_t)(100 * c + 10 * r + k);
    const int32_t hst[4] = {0, 3, 1, 9};   /* evaluation ignores seed, epoch and run_seed */
    DBK_CHECK_OK(dbk_tensor_write(&img, himg));
    DBK_CHECK_OK(dbk_tensor_write(&lab, hlab));
    DBK_CHECK_OK(dbk_tensor_write(&st, hst));
    for (size_t k = 0; k < sizeof views / sizeof views[0]; k++) {
        dbk_op_desc d = {.op = DBK_OP_AUGMENT};
        d.p.augment = (dbk_augment_params){.train = false, .pad = 2, .flip = true, .mean = {0, 0, 0}, .std = {1, 1, 1},
                                           .view_dy = views[k].dy, .view_dx = views[k].dx,
                                           .view_flip = views[k].flip};
        d.src[0] = img; d.src[1] = lab; d.src[3] = st; d.dst[0] = x; d.dst[1] = y;
        DBK_CHECK_OK(dbk_backend_run(be, &d));
        float got[3 * 3 * 4];
        int32_t gl;
        DBK_CHECK_OK(dbk_tensor_read(&x, got));
        DBK_CHECK_OK(dbk_tensor_read(&y, &gl));
        DBK_CHECK(gl == 6);
        for (int c = 0; c < 3; c++)
            for (int r = 0; r < 3; r++)
                for (int q = 0; q < 4; q++) {
                    const float want = (float)(100 * c + views[k].v[r][q]), v = got[(c * 3 + r) * 4 + q] * 255.0f;
                    DBK_CHECK_MSG(fabsf(v - want) < 1e-3f, "view (%d, %d%s) c%d (%d, %d): %g, by hand %g", views[k].dy,
                                  views[k].dx, views[k].flip ? ", flip" : "", c, r, q, (double)v, (double)want);
                }
    }
    int rc = guards_intact();
    free_all();
    return rc;
}

/* airbench94's infer_mirror_translate built literally: F.pad(x, P, 'reflect'), the window
 * padded[P+dy : P+dy+H, P+dx : P+dx+W], then .flip(-1) of that window; the op's view (dy, dx,
 * flip) must equal it (the contract's algebra), on the ramp dataset through the indices. */
int augment_view_should_equal_pad_crop_then_flip(void) {
    static const struct { int dy, dx; bool flip; } views[] = {
        {0, 0, false}, {0, 0, true}, {-1, -1, false}, {-1, -1, true}, {1, 1, false}, {1, 1, true},
        {-4, 5, true}, {AUG_H - 1, -(AUG_W - 1), true}, {3, 0, false},
    };
    aug_fixture *f = calloc(1, sizeof *f);
    int rc = aug_setup(f);
    const int P = AUG_H > AUG_W ? AUG_H - 1 : AUG_W - 1, HP = AUG_H + 2 * P, WP = AUG_W + 2 * P, first = 3;
    uint8_t *padded = malloc((size_t)(HP * WP));
    float *expect = malloc(sizeof(float) * AUG_N * 3 * AUG_H * AUG_W);
    for (size_t k = 0; k < sizeof views / sizeof views[0] && rc == 0; k++) {
        dbk_op_desc d = aug_desc(f, false, true);
        d.p.augment.view_dy = views[k].dy;
        d.p.augment.view_dx = views[k].dx;
        d.p.augment.view_flip = views[k].flip;
        rc |= aug_run_epoch(f, &d, first, 5, 2, 7);
        float *got = dbk_test_read(&f->x);
        for (int i = 0; i < AUG_N; i++) {
            const int j = f->hidx[first + i];
            for (int c = 0; c < 3; c++) {
                const uint8_t *img = f->himg + (j * 3 + c) * AUG_H * AUG_W;
                for (int y = 0; y < HP; y++)
                    for (int x = 0; x < WP; x++)
                        padded[y * WP + x] = img[reflect_ref(y - P, AUG_H) * AUG_W + reflect_ref(x - P, AUG_W)];
                for (int y = 0; y < AUG_H; y++)
                    for (int x = 0; x < AUG_W; x++) {
                        const int xw = views[k].flip ? AUG_W - 1 - x : x;   /* .flip(-1) of the window */
                        const float v = (float)padded[(P + views[k].dy + y) * WP + P + views[k].dx + xw];
                        expect[((i * 3 + c) * AUG_H + y) * AUG_W + x] = (v / 255.0f - d.p.augment.mean[c]) / d.p.augment.std[c];
                    }
            }
        }
        char what[64];
        snprintf(what, sizeof what, "view (%d, %d%s)", views[k].dy, views[k].dx, views[k].flip ? ", flip" : "");
        rc |= close_abs(what, expect, got, AUG_N * 3 * AUG_H * AUG_W, 1e-6);
        free(got);
    }
    rc |= guards_intact();
    free(padded);
    free(expect);
    free(f);
    free_all();
    return rc;
}

/* 32-bit FNV-1a of a byte range, to pin a batch in a few characters. */
static uint32_t fnv1a(const void *p, size_t n) {
    const unsigned char *b = p;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 16777619u;
    return h;
}

/* The modes that existed before the alternating flip and the views give the bytes they gave
 * then, whatever epoch and run_seed say: existing recipes train exactly as before. The checksums
 * were taken with the two-element state code (commit 9b7f1e5) and taken again, the draws
 * unchanged, when the normalisation became v * scale + shift (dbk_augment_affine: no division,
 * which GPUs do not round correctly; within an ulp of the old (v / 255 - mean) / std, which
 * augment_view_should_equal_pad_crop_then_flip still checks to 1e-6). */
int augment_old_modes_should_keep_their_bytes(void) {
    static const struct { bool train, indices; int32_t first, seed, epoch, run_seed; uint32_t fnv; } cases[] = {
        {true, true, 5, 4242, 0, 0, 0x73973928u},
        {true, true, 5, 4242, 3, 123457, 0x73973928u},
        {true, true, 8, -9, 1, 99, 0x96da6911u},
        {false, true, 2, 1, 0, 0, 0xd92da4b2u},
        {false, true, 2, 77, 5, -3, 0xd92da4b2u},
    };
    aug_fixture *f = calloc(1, sizeof *f);
    int rc = aug_setup(f);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0] && rc == 0; k++) {
        const dbk_op_desc d = aug_desc(f, cases[k].train, cases[k].indices);
        rc |= aug_run_epoch(f, &d, cases[k].first, cases[k].seed, cases[k].epoch, cases[k].run_seed);
        float *x = dbk_test_read(&f->x);
        const uint32_t h = fnv1a(x, sizeof(float) * AUG_N * 3 * AUG_H * AUG_W);
        free(x);
        DBK_CHECK_MSG(h == cases[k].fnv, "case %zu: batch checksum 0x%08x, pinned 0x%08x", k, h, cases[k].fnv);
    }
    free(f);
    free_all();
    return rc;
}

int augment_should_reject_bad_flip_and_view_settings(void) {
    aug_fixture *f = calloc(1, sizeof *f);
    int rc = aug_setup(f);
    struct { bool train, flip, alt; int dy, dx; bool vflip; const char *what; } cases[] = {
        {true, false, true, 0, 0, false, "flip_alternating without flip"},
        {false, true, true, 0, 0, false, "flip_alternating in evaluation"},
        {true, true, false, 1, 0, false, "view_dy in training"},
        {true, true, false, 0, -1, false, "view_dx in training"},
        {true, true, false, 0, 0, true, "view_flip in training"},
        {false, true, false, AUG_H, 0, false, "view_dy = H"},
        {false, true, false, 0, -AUG_W, false, "view_dx = -W"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        dbk_op_desc d = aug_desc(f, cases[k].train, true);
        d.p.augment.flip = cases[k].flip;
        d.p.augment.flip_alternating = cases[k].alt;
        d.p.augment.view_dy = cases[k].dy;
        d.p.augment.view_dx = cases[k].dx;
        d.p.augment.view_flip = cases[k].vflip;
        const dbk_status s = dbk_backend_run(be, &d);
        DBK_CHECK_MSG(s == DBK_ERR_INVALID_ARG, "%s: got %s", cases[k].what, dbk_status_str(s));
        DBK_CHECK_MSG(strstr(dbk_last_error(), "augment") != NULL, "%s: message '%s'", cases[k].what, dbk_last_error());
    }
    /* the largest shift is allowed, and the old two-element state is not */
    dbk_op_desc ok = aug_desc(f, false, true);
    ok.p.augment.view_dy = -(AUG_H - 1);
    ok.p.augment.view_dx = AUG_W - 1;
    DBK_CHECK_OK(dbk_op_validate(&ok));
    ok.src[3].shape[0] = 2;
    DBK_CHECK(dbk_op_validate(&ok) == DBK_ERR_INVALID_ARG);
    DBK_CHECK_MSG(strstr(dbk_last_error(), "state") != NULL, "message '%s'", dbk_last_error());
    rc |= guards_intact();
    free(f);
    free_all();
    return rc;
}

