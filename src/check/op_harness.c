/*
 * op_harness.c — places an op case on the CPU reference and on the device under test, runs
 * it on both, and judges the device's results: guards, inputs, outputs within the op's
 * tolerance, the harness's own planted faults, and the same case again as a one-op program.
 * The conventions are in op_check.h; the cases and tolerances in op_cases.c.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/op_check_impl.h"

#define GUARD_WORD 0x7fc0deadu

/* One backend's copy of a case: a buffer per slot and the bytes written to it. */
typedef struct placed {
    dbk_buffer    *buf[NSLOT];
    size_t         front[NSLOT], nbytes[NSLOT], total[NSLOT];
    unsigned char *image[NSLOT];
} placed;

/* Appends a line to the details of the current case. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void note(dbk_op_checker *ck, const char *fmt, ...) {
    if (ck->notes_len >= sizeof ck->notes - 1) return;
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(ck->notes + ck->notes_len, sizeof ck->notes - ck->notes_len, fmt, ap);
    va_end(ap);
    if (n > 0)
        ck->notes_len += (size_t)n < sizeof ck->notes - ck->notes_len ? (size_t)n : sizeof ck->notes - ck->notes_len - 1;
}

void *dbk_op_check_alloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "daybreak: op check: out of host memory (%zu bytes)\n", n);
        abort();
    }
    return p;
}

double dbk_op_check_nmse(const float *ref, const float *got, size_t n) {
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double d = (double)ref[i] - (double)got[i];
        num += d * d;
        den += (double)ref[i] * (double)ref[i];
    }
    if (den == 0.0) return num == 0.0 ? 0.0 : (double)INFINITY;
    return num / den;
}

static const char *slot_name(int s) {
    static const char *names[NSLOT] = {"src0", "src1", "src2", "src3", "src4", "dst0", "dst1", "dst2", "dst3", "dst4"};
    return names[s];
}

static dbk_tensor *desc_tensor(dbk_op_desc *d, int s) {
    return s < DBK_OP_MAX_SRC ? &d->src[s] : &d->dst[s - DBK_OP_MAX_SRC];
}

static void placed_free(placed *p) {
    for (int s = 0; s < NSLOT; s++) {
        dbk_buffer_destroy(p->buf[s]);
        free(p->image[s]);
    }
    memset(p, 0, sizeof *p);
}

/* Creates and writes every slot's guarded buffer on be and fills d's tensors. */
static dbk_status place(dbk_backend *be, const tcase *c, placed *p, dbk_op_desc *d) {
    memset(p, 0, sizeof *p);
    *d = c->desc;
    for (int s = 0; s < NSLOT; s++) {
        const slot *sl = &c->slots[s];
        if (sl->role == ROLE_NONE) continue;
        const int64_t n = slot_numel(sl);
        p->nbytes[s] = (size_t)n * dbk_dtype_size(sl->dtype);
        p->front[s] = 64u * (size_t)(2 + s) + (n <= 2 ? 4u : 0u);
        const size_t back = (1024 + p->nbytes[s] / 2 + 63) / 64 * 64;
        p->total[s] = p->front[s] + p->nbytes[s] + back;
        unsigned char *img = p->image[s] = dbk_op_check_alloc(p->total[s]);
        const uint32_t word = GUARD_WORD;
        for (size_t i = 0; i < p->total[s]; i++) img[i] = ((const unsigned char *)&word)[i % 4];
        if (sl->init)
            memcpy(img + p->front[s], sl->init, p->nbytes[s]);
        else
            memset(img + p->front[s], 0xff, p->nbytes[s]);
        DBK_TRY(dbk_buffer_create(be, p->total[s], &p->buf[s]));
        DBK_TRY(dbk_buffer_write(p->buf[s], 0, img, p->total[s]));
        *desc_tensor(d, s) = dbk_tensor_make(p->buf[s], p->front[s], sl->dtype, sl->ndim, sl->shape[0], sl->shape[1],
                                             sl->shape[2], sl->shape[3]);
    }
    for (int s = 0; s < NSLOT; s++)
        if (c->slots[s].alias_of >= 0) *desc_tensor(d, s) = *desc_tensor(d, c->slots[s].alias_of);
    return DBK_OK;
}

/* Places, runs and synchronises; got[s] receives each buffer's whole contents. The op runs
 * either directly (prepare, then dbk_backend_run) or as a one-op program (dbk_program_create
 * and dbk_program_run: the path training steps take, recorded command buffers on Vulkan). */
static dbk_status run_on(dbk_backend *be, const tcase *c, placed *p, bool as_program, unsigned char *got[NSLOT]) {
    dbk_op_desc d;
    DBK_TRY(place(be, c, p, &d));
    if (as_program) {
        dbk_program *prog;
        DBK_TRY(dbk_program_create(be, &d, 1, &prog));
        dbk_status st = dbk_program_run(prog);
        if (st == DBK_OK) st = dbk_backend_sync(be);
        dbk_program_destroy(prog);
        DBK_TRY(st);
    } else {
        DBK_TRY(dbk_backend_prepare(be, &d));
        DBK_TRY(dbk_backend_run(be, &d));
        DBK_TRY(dbk_backend_sync(be));
    }
    for (int s = 0; s < NSLOT; s++) {
        if (!p->buf[s]) continue;
        got[s] = dbk_op_check_alloc(p->total[s]);
        DBK_TRY(dbk_buffer_read(p->buf[s], 0, got[s], p->total[s]));
    }
    return DBK_OK;
}

/* First byte of [lo, hi) where a and b differ, or hi. */
static size_t first_diff(const unsigned char *a, const unsigned char *b, size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; i++)
        if (a[i] != b[i]) return i;
    return hi;
}

/* Guards of slot s on one backend; prints and returns 1 when touched. */
static int check_guards(dbk_op_checker *ck, const char *who, const placed *p, int s, const unsigned char *got) {
    const size_t end = p->front[s] + p->nbytes[s];
    size_t at = first_diff(p->image[s], got, 0, p->front[s]);
    if (at == p->front[s]) at = first_diff(p->image[s], got, end, p->total[s]);
    if (at == p->total[s]) return 0;
    const bool before = at < p->front[s];
    note(ck, "    %s %s: guard changed %zu bytes %s the tensor (offset %zu, %zu bytes)\n", who, slot_name(s),
         before ? p->front[s] - at : at - end, before ? "before the start of" : "after the end of", p->front[s],
         p->nbytes[s]);
    return 1;
}

/* Compares one output; *nmse gets the f32 NMSE (0 for bit-exact comparisons). */
static int compare_output(const tcase *c, int s, const unsigned char *ref, const unsigned char *got, double tol,
                          double *nmse) {
    const slot *sl = &c->slots[s];
    const int64_t n = slot_numel(sl);
    *nmse = sl->dtype == DBK_DTYPE_F32 ? dbk_op_check_nmse((const float *)ref, (const float *)got, (size_t)n) : 0.0;
    if (isnan(*nmse)) *nmse = INFINITY;
    if (sl->dtype == DBK_DTYPE_F32 && tol > 0.0) {
        const float *r = (const float *)ref, *g = (const float *)got;
        if (*nmse <= tol) return 0;
        int64_t worst = 0;
        double wd = -1.0;
        for (int64_t i = 0; i < n; i++) {
            const double dd = fabs((double)r[i] - (double)g[i]);
            if (dd > wd || isnan(dd)) {
                wd = dd;
                worst = i;
                if (isnan(dd)) break;
            }
        }
        note(c->ck, "    %s: NMSE %.3g > %.1g over %lld values; worst at %lld: got %.9g, want %.9g\n", slot_name(s), *nmse,
               tol, (long long)n, (long long)worst, (double)g[worst], (double)r[worst]);
        return 1;
    }
    const size_t esz = dbk_dtype_size(sl->dtype), nb = (size_t)n * esz;
    const size_t at = first_diff(ref, got, 0, nb);
    if (at == nb) {
        *nmse = 0.0;   /* bit-exact (the NMSE of equal infinities is not a number) */
        return 0;
    }
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) bad += memcmp(ref + (size_t)i * esz, got + (size_t)i * esz, esz) != 0;
    const int64_t i = (int64_t)(at / esz);
    if (sl->dtype == DBK_DTYPE_F32)
        note(c->ck, "    %s: %lld of %lld values not bit-exact; first at %lld: got %.9g, want %.9g\n", slot_name(s),
               (long long)bad, (long long)n, (long long)i, (double)((const float *)got)[i],
               (double)((const float *)ref)[i]);
    else if (sl->dtype == DBK_DTYPE_F16)
        note(c->ck, "    %s: %lld of %lld f16 values differ; first at %lld: got 0x%04x, want 0x%04x\n", slot_name(s),
               (long long)bad, (long long)n, (long long)i, ((const uint16_t *)got)[i], ((const uint16_t *)ref)[i]);
    else if (sl->dtype == DBK_DTYPE_I32)
        note(c->ck, "    %s: %lld of %lld values differ; first at %lld: got %d, want %d\n", slot_name(s), (long long)bad,
               (long long)n, (long long)i, ((const int32_t *)got)[i], ((const int32_t *)ref)[i]);
    else
        note(c->ck, "    %s: %lld of %lld bytes differ; first at %lld: got %u, want %u\n", slot_name(s), (long long)bad,
               (long long)n, (long long)i, got[i], ref[i]);
    if (sl->dtype != DBK_DTYPE_F32) *nmse = INFINITY;
    return 1;
}

/* Judges the read-back buffers of a case: guards on both sides, inputs unchanged, outputs
 * against the reference. Every slot is checked, so one report shows everything wrong.
 * Returns 1 on any failure (details in the notes); *worst gets the largest NMSE. */
static int judge(const tcase *c, const placed *pr, const placed *pd, unsigned char *const gr[NSLOT],
                 unsigned char *const gd[NSLOT], double *worst) {
    dbk_op_checker *ck = c->ck;
    const char *dev_name = ck->cfg->dev_name;
    const double tol = ck->tolerance;
    int fail = 0;
    *worst = 0.0;
    for (int s = 0; s < NSLOT; s++) {
        const slot *sl = &c->slots[s];
        if (sl->role == ROLE_NONE) continue;
        fail |= check_guards(ck, "reference", pr, s, gr[s]) | check_guards(ck, dev_name, pd, s, gd[s]);
        const unsigned char *rt = gr[s] + pr->front[s], *dt = gd[s] + pd->front[s];
        if (sl->role == ROLE_IN) {
            if (memcmp(dt, pd->image[s] + pd->front[s], pd->nbytes[s]) != 0) {
                note(ck, "    %s: an input was modified by %s\n", slot_name(s), dev_name);
                fail = 1;
            }
        } else {
            double e;
            fail |= compare_output(c, s, rt, dt, tol, &e);
            if (e > *worst) *worst = e;
        }
    }
    return fail;
}

/* The harness checks itself on every case that passed: faults planted one at a time in
 * the device's read-back buffers must each be caught. They are a changed byte just before
 * and just after every tensor (an out-of-bounds write), a changed last byte of every input
 * (a write into an input), and the last element of every output wrong (f32: off by 10
 * times the output's RMS, which any tolerance here catches even in the largest tensor;
 * integers: one bit). Returns the number of faults missed, each described in the notes. */
static int planted_faults_missed(const tcase *c, const placed *pr, const placed *pd, unsigned char *const gr[NSLOT],
                                 unsigned char *const gd[NSLOT]) {
    int missed = 0;
    for (int s = 0; s < NSLOT; s++) {
        const slot *sl = &c->slots[s];
        if (sl->role == ROLE_NONE) continue;
        const size_t esz = dbk_dtype_size(sl->dtype), last = pd->front[s] + pd->nbytes[s] - esz;
        const size_t at[3] = {pd->front[s] - 1, pd->front[s] + pd->nbytes[s], last};
        static const char *what[3] = {"a byte before the tensor", "a byte after the tensor", "the last element"};
        for (int f = 0; f < 3; f++) {
            unsigned char saved[4];
            memcpy(saved, gd[s] + at[f], f == 2 ? esz : 1);
            if (f == 2 && sl->dtype == DBK_DTYPE_F32 && sl->role != ROLE_IN) {
                const float *ref = (const float *)(gr[s] + pr->front[s]);
                const int64_t n = slot_numel(sl);
                double ss = 0.0;
                for (int64_t i = 0; i < n; i++) ss += (double)ref[i] * (double)ref[i];
                const float wrong = (float)((double)ref[n - 1] + 10.0 * sqrt(ss / (double)n) + 1.0);
                memcpy(gd[s] + at[f], &wrong, sizeof wrong);
            } else {
                gd[s][at[f]] ^= 0x01;
            }
            const size_t keep = c->ck->notes_len;
            double worst;
            const int caught = judge(c, pr, pd, gr, gd, &worst);
            c->ck->notes_len = keep;
            c->ck->notes[keep] = '\0';
            memcpy(gd[s] + at[f], saved, f == 2 ? esz : 1);
            if (!caught) {
                note(c->ck, "    harness: a planted fault in %s (%s) was not caught\n", slot_name(s), what[f]);
                missed++;
            }
        }
    }
    return missed;
}

static void case_free(tcase *c) {
    for (int s = 0; s < NSLOT; s++) free(c->slots[s].init);
    free(c);
}

/* Reports a judged case: the reason it could not run (why) comes before the notes; algorithm
 * as dbk_op_case_result's. */
static void report_case(dbk_op_checker *ck, const tcase *c, double worst, bool pass, const char *why,
                        const char *algorithm) {
    char details[sizeof ck->notes + 1300];
    snprintf(details, sizeof details, "%s%s%s%s", why[0] ? "    " : "", why, why[0] ? "\n" : "", ck->notes);
    const dbk_op_case_result r = {.op = c->desc.op, .shape = c->shape, .nmse = worst, .tolerance = ck->tolerance,
                                  .pass = pass, .details = details, .algorithm = algorithm};
    if (ck->cfg->report) ck->cfg->report(&r, ck->cfg->user);
    ck->notes_len = 0;
    ck->notes[0] = '\0';
}

static bool has_f16_slot(const tcase *c) {
    for (int s = 0; s < NSLOT; s++)
        if (c->slots[s].role != ROLE_NONE && c->slots[s].dtype == DBK_DTYPE_F16) return true;
    return false;
}

void dbk_op_check_case(tcase *c) {
    dbk_op_checker *ck = c->ck;
    dbk_backend *const ref_be = ck->cfg->ref, *const dev_be = ck->cfg->dev;
    const char *const dev_name = ck->cfg->dev_name, *const op = dbk_op_name(c->desc.op);
    placed pr, pd;
    memset(&pr, 0, sizeof pr);
    memset(&pd, 0, sizeof pd);
    unsigned char *gr[NSLOT] = {0}, *gd[NSLOT] = {0};
    double worst = 0.0;
    char why[1200] = "";

    dbk_op_desc probe;
    dbk_status st = place(dev_be, c, &pd, &probe);
    const char *algorithm = st == DBK_OK ? dbk_backend_op_algorithm(dev_be, &probe) : NULL;
    if (st == DBK_OK && ck->cfg->only_algorithm && !(algorithm && strstr(algorithm, ck->cfg->only_algorithm))) {
        placed_free(&pd);
        case_free(c);
        return;
    }
    const char *fp16_missing = dbk_backend_get_info(dev_be)->fp16_missing;
    if (st == DBK_OK && fp16_missing[0] && has_f16_slot(c)) {
        /* A device without the fp16 path must refuse the case (--precision fp16 relies on it) */
        const bool refused = !dbk_backend_supports(dev_be, &probe);
        placed_free(&pd);
        if (refused) snprintf(why, sizeof why, "f16: refused as it must be (%s lacks %s)", dev_name, fp16_missing);
        else snprintf(why, sizeof why, "%s accepted an f16 case although it lacks %s", dev_name, fp16_missing);
        report_case(ck, c, 0.0, refused, why, algorithm);
        case_free(c);
        ck->failed += !refused;
        return;
    }
    if (st != DBK_OK)
        snprintf(why, sizeof why, "cannot create the tensors on %s: %s", dev_name, dbk_last_error());
    else if (!dbk_backend_supports(dev_be, &probe))
        snprintf(why, sizeof why, "%s does not support %s for this case: every op is required", dev_name, op);
    placed_free(&pd);
    if (!why[0] && (st = run_on(ref_be, c, &pr, false, gr)) != DBK_OK)
        snprintf(why, sizeof why, "the CPU reference failed: %s: %s", dbk_status_str(st), dbk_last_error());
    if (!why[0] && (st = run_on(dev_be, c, &pd, false, gd)) != DBK_OK)
        snprintf(why, sizeof why, "%s failed: %s: %s", dev_name, dbk_status_str(st), dbk_last_error());
    int fail = why[0] != '\0';
    if (!fail) fail = judge(c, &pr, &pd, gr, gd, &worst);
    if (!fail) fail = planted_faults_missed(c, &pr, &pd, gr, gd) > 0;
    if (!fail) { /* the same case once more, as a one-op program */
        double worst_program = 0.0;
        for (int s = 0; s < NSLOT; s++) {
            free(gd[s]);
            gd[s] = NULL;
        }
        placed_free(&pd);
        if ((st = run_on(dev_be, c, &pd, true, gd)) != DBK_OK)
            snprintf(why, sizeof why, "%s failed as a program: %s: %s", dev_name, dbk_status_str(st), dbk_last_error());
        fail = why[0] != '\0';
        if (!fail && (fail = judge(c, &pr, &pd, gr, gd, &worst_program)) != 0)
            note(ck, "    (the direct run passed; the one-op program did not)\n");
        if (worst_program > worst) worst = worst_program;
    }

    report_case(ck, c, worst, !fail, why, algorithm);
    for (int s = 0; s < NSLOT; s++) {
        free(gr[s]);
        free(gd[s]);
    }
    placed_free(&pr);
    placed_free(&pd);
    case_free(c);
    ck->failed += fail;
}

/* ---------------------------------------------------------------------------------- */
/* the public entry                                                                    */

bool dbk_op_check_has_cases(dbk_op op) { return dbk_op_cases_of(op) != NULL; }

double dbk_op_check_tolerance(dbk_op op) {
    const dbk_op_cases *oc = dbk_op_cases_of(op);
    return oc ? oc->nmse : -1.0;
}

/* The seed of an op's input stream: fixed per op, so the cases do not depend on the ops run
 * before, and taken from the op's name (FNV-1a), not its place in the op list, so adding an
 * op does not give every later op new inputs. */
#define OP_SEED_BASE 20261122u

static uint64_t op_seed(dbk_op op) {
    uint64_t h = 1469598103934665603ull;
    for (const char *c = dbk_op_name(op); *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ull;
    return OP_SEED_BASE + h;
}

int dbk_op_check_run(const dbk_op_check_config *cfg, dbk_op op) {
    const dbk_op_cases *oc = dbk_op_cases_of(op);
    if (!oc) return -1;
    dbk_op_checker *ck = dbk_op_check_alloc(sizeof *ck);
    memset(ck, 0, sizeof *ck);
    ck->cfg = cfg;
    ck->tolerance = oc->nmse;
    dbk_rng_init(&ck->rng, op_seed(op));
    oc->cases(ck);
    const int failed = ck->failed;
    free(ck);
    return failed;
}
