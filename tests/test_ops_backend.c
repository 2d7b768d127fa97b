/*
 * test_ops_backend.c — every op of op_list.h (all DBK_OP_COUNT of them, forward and backward) on
 * one backend against the CPU reference backend (DESIGN.md decision 1, STYLE.md 3.9).
 *
 * usage: test_ops_backend <backend-spec> [op]  e.g. cpu, opencl:0, vulkan:0 conv2d_fwd
 * (with an op name, only that op's cases run)
 *
 * Each case builds one op descriptor, gives both backends the same random inputs, runs it on
 * both and compares every output. A passing case runs once more on the device as a one-op
 * program (dbk_program_create/run, the path of training steps) and is judged again. One line per case: op, shape summary, the largest NMSE of
 * its f32 outputs, the tolerance, PASS/FAIL (details follow a FAIL).
 *
 * Conventions:
 *  - Every tensor has a buffer of its own: [front guard | tensor | back guard]. The guards
 *    are the NaN word 0x7fc0dead repeated; the front guard (the tensor's offset) differs per
 *    slot, 64-byte aligned as the graph aligns parameters (scalar tensors at 4 bytes past
 *    that, as the session's counters are), so a kernel that ignores or mixes up offsets
 *    reads NaN. The back guard is 1 KiB plus half the tensor, so a kernel writing whole
 *    tiles past the end is caught. After the op every buffer is read back whole: guards
 *    must be untouched, inputs unchanged.
 *  - Outputs that the op overwrites start as 0xff bytes (NaN in f32, -1 in i32), so an
 *    element the kernel never writes, or an output read before it is written (GEMM with
 *    beta = 0), shows up. In-place outputs (running statistics, SGD state, aliased
 *    relu/add/scale) and accumulating counters (loss_sum, correct) start from nonzero values.
 *  - NMSE = sum (ref - got)^2 / sum ref^2 over one output, ref from the CPU backend.
 *    Tolerance 0 means bit-exact. Integer outputs (argmax, labels) are always bit-exact.
 *  - The harness checks itself on every passing case (planted_faults_missed): a byte
 *    changed on either side of each tensor, in each input, and a wrong last element of each
 *    output, planted one at a time in the device's results, must each fail the case.
 *    Run against `cpu` (ops_cpu_vs_cpu) the results are bit-identical, so that run tests
 *    the harness: case construction, guards, comparisons and planted faults.
 *  - Coverage comes from op_list.h: every declared op must have <name>_test here (else the
 *    run fails, "op X has no test cases"). An op the backend lacks by its declaration
 *    (op_list.h where column) is printed as "not supported by <backend>" and listed at the
 *    end; a case the backend refuses for an op it has is a failure.
 *  - No such backend or device: "skipped" (exit 77), or exit 1 when CI=true.
 *
 * Tolerances (NMSE; fp32 on both sides, so they only differ in summation order and in
 * the last bits of exp/log/sqrt/division; an indexing bug gives NMSE 1e-3 .. 1):
 *  - conv fwd / bwd_data / bwd_filter, GEMM: 1e-7. Sums of up to ~130k products (bwd_filter
 *    at ResNet9 shapes); naive fp32 summation has relative error ~sqrt(n)*6e-8 ~ 2e-5, NMSE
 *    ~4e-10; blocked, tiled or Winograd orders stay well inside 1e-7.
 *  - batchnorm fwd train: 1e-7 (per-channel reductions over N*H*W up to 8192 values; a
 *    one-pass E[x^2]-E[x]^2 variance loses a few bits to cancellation).
 *  - batchnorm bwd: 1e-6 (two reductions, then dy - mean(dy) - xhat*mean(dy*xhat), a
 *    difference of nearly equal terms).
 *  - batchnorm fwd infer: 1e-9 (elementwise; rsqrt may differ by an ulp or two).
 *  - softmax xent fwd: 1e-8 (exp/log may differ by a few ulp; loss_sum sums N rows).
 *  - softmax xent bwd: 1e-9 (elementwise difference probs - target).
 *  - SGD: 1e-10 (elementwise; fused multiply-add contraction may move the last bit).
 *  - relu, maxpool, add, scale, fill, copy: 1e-10, i.e. exact up to a contraction or
 *    accumulation-order difference in an ulp (max-pool backward sums overlapping windows).
 *  - gelu fwd / bwd: 1e-9 (elementwise erf and exp: the device kernels' own erf, the fit
 *    of shaders/common/erf.glsl (cl/eltwise.cl has the same coefficients, branch-free),
 *    relative error <= 1.7e-7; measured <= 3e-13 on lavapipe, where 1 + erf cancels in the
 *    negative tail on both sides alike).
 *  - bias_add: 1e-10 (one add; measured bit-exact). lookahead: 1e-10, as SGD.
 *  - channel_sum: 1e-9 (fp32 partial sums and a tree on the device against the CPU's double
 *    sum, up to ~1M values per channel; measured <= 1.5e-14).
 *  - accuracy: bit-exact (a count). augment: bit-exact, the device kernels reproduce the
 *    CPU's hash draw and compute (v / 255 - mean) / std with correctly rounded division.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/rng.h"
#include "test_util.h"

/* ---------------------------------------------------------------------------------- */
/* the per-op tests, one for each op of op_list.h                                      */

/* An op's cases and their NMSE tolerance (see above). Each op of op_list.h defines
 * <name>_test with OP_TEST after its cases function; an op without one fails the run
 * ("op X has no test cases"), so a new op cannot go untested. The declarations are weak:
 * a <name>_test never defined is a null address here instead of a link error, so the run
 * names the op rather than the build failing on a symbol. */
typedef struct op_test {
    int  (*cases)(void);
    double nmse;
} op_test;

#define OP_TEST_DECLARE_(E, name, ...) extern const op_test name##_test __attribute__((weak));
DBK_OP_LIST(OP_TEST_DECLARE_)
#undef OP_TEST_DECLARE_
#define OP_TEST(name, tol) const op_test name##_test = {name##_cases, tol}

#define OP_TEST_ROW_(E, name, ...) [DBK_OP_##E] = &name##_test,
static const op_test *const op_tests[DBK_OP_COUNT] = {DBK_OP_LIST(OP_TEST_ROW_)};
#undef OP_TEST_ROW_

/* ---------------------------------------------------------------------------------- */
/* cases: slots, placement in guarded buffers, comparison                              */

static dbk_backend *ref_be, *dev_be;
static const char *dev_name;
static dbk_rng rng;

enum { NSLOT = DBK_OP_MAX_SRC + DBK_OP_MAX_DST };
#define SRC(i) (i)
#define DST(i) (DBK_OP_MAX_SRC + (i))

#define GUARD_WORD 0x7fc0deadu

typedef enum role {
    ROLE_NONE,    /* unused slot, or an alias of another slot */
    ROLE_IN,      /* written before the op, must be unchanged after */
    ROLE_OUT,     /* overwritten by the op: starts as 0xff bytes, compared */
    ROLE_INOUT,   /* starts from given values, compared (in place, accumulating, aliased) */
} role;

typedef struct slot {
    role          role;
    dbk_dtype     dtype;
    int           ndim;
    int64_t       shape[DBK_MAX_DIMS];
    unsigned char *init;     /* starting bytes of IN / INOUT tensors (owned) */
    int           alias_of;  /* -1, or the slot whose tensor this one is (in place) */
} slot;

typedef struct tcase {
    dbk_op_desc desc;        /* the op and its params; tensors are filled in per backend */
    char        shape[200];
    slot        slots[NSLOT];
} tcase;

/* One backend's copy of a case: a buffer per slot and the bytes written to it. */
typedef struct placed {
    dbk_buffer    *buf[NSLOT];
    size_t         front[NSLOT], nbytes[NSLOT], total[NSLOT];
    unsigned char *image[NSLOT];
} placed;

/* Details of a failing case, printed under its summary line. */
static char notes[8192];
static size_t notes_len;

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
static void note(const char *fmt, ...) {
    if (notes_len >= sizeof notes - 1) return;
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(notes + notes_len, sizeof notes - notes_len, fmt, ap);
    va_end(ap);
    if (n > 0) notes_len += (size_t)n < sizeof notes - notes_len ? (size_t)n : sizeof notes - notes_len - 1;
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "test_ops_backend: out of host memory (%zu bytes)\n", n);
        abort();
    }
    return p;
}

static tcase *case_new(dbk_op op, const char *fmt, ...) {
    tcase *c = calloc(1, sizeof *c);
    if (!c) abort();
    c->desc.op = op;
    for (int s = 0; s < NSLOT; s++) c->slots[s].alias_of = -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->shape, sizeof c->shape, fmt, ap);
    va_end(ap);
    return c;
}

static void case_free(tcase *c) {
    for (int s = 0; s < NSLOT; s++) free(c->slots[s].init);
    free(c);
}

static int64_t slot_numel(const slot *sl) {
    int64_t n = 1;
    for (int i = 0; i < sl->ndim; i++) n *= sl->shape[i];
    return n;
}

/* Declares slot s; returns its starting bytes to fill (NULL for ROLE_OUT). */
static void *set_slot(tcase *c, int s, role r, dbk_dtype dt, int ndim, int64_t d0, int64_t d1, int64_t d2,
                      int64_t d3) {
    slot *sl = &c->slots[s];
    const int64_t dims[DBK_MAX_DIMS] = {d0, d1, d2, d3};
    sl->role = r;
    sl->dtype = dt;
    sl->ndim = ndim;
    for (int i = 0; i < DBK_MAX_DIMS; i++) sl->shape[i] = i < ndim ? dims[i] : 1;
    if (r == ROLE_OUT) return NULL;
    sl->init = xmalloc((size_t)slot_numel(sl) * dbk_dtype_size(dt));
    return sl->init;
}

static float *uniform_into(float *h, int64_t n, float lo, float hi) {
    for (int64_t i = 0; i < n; i++) h[i] = lo + (hi - lo) * dbk_rng_uniform(&rng);
    return h;
}

/* An f32 slot of uniform values in [lo, hi). */
static float *set_uniform(tcase *c, int s, role r, float lo, float hi, int ndim, int64_t d0, int64_t d1, int64_t d2,
                          int64_t d3) {
    float *h = set_slot(c, s, r, DBK_DTYPE_F32, ndim, d0, d1, d2, d3);
    return uniform_into(h, slot_numel(&c->slots[s]), lo, hi);
}

/* An f32 slot of small integers 0..levels-1, so maxima tie often (tie-breaking rules). */
static void set_levels(tcase *c, int s, int levels, int ndim, int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    float *h = set_slot(c, s, ROLE_IN, DBK_DTYPE_F32, ndim, d0, d1, d2, d3);
    for (int64_t i = 0; i < slot_numel(&c->slots[s]); i++) h[i] = (float)dbk_rng_below(&rng, (uint32_t)levels);
}

/* One f32 value (learning rate, a counter's starting value). */
static void set_scalar(tcase *c, int s, role r, float v) {
    float *h = set_slot(c, s, r, DBK_DTYPE_F32, 1, 1, 1, 1, 1);
    h[0] = v;
}

/* Labels i32 (n) uniform in [0, k); rows 1 and 3 (when present) get -1 and k: the contract
 * says out-of-range labels add no loss, no correct count and a zero gradient row. */
static void set_labels(tcase *c, int s, int64_t n, int k, bool out_of_range) {
    int32_t *h = set_slot(c, s, ROLE_IN, DBK_DTYPE_I32, 1, n, 1, 1, 1);
    for (int64_t i = 0; i < n; i++) h[i] = (int32_t)dbk_rng_below(&rng, (uint32_t)k);
    if (out_of_range && n > 1) h[1] = -1;
    if (out_of_range && n > 3) h[3] = k;
}

/* Slot s is the same tensor as slot target (in place); target is then compared as output. */
static void set_alias(tcase *c, int s, int target) {
    c->slots[s].alias_of = target;
    c->slots[target].role = ROLE_INOUT;
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
        unsigned char *img = p->image[s] = xmalloc(p->total[s]);
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
        got[s] = xmalloc(p->total[s]);
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
static int check_guards(const char *who, const placed *p, int s, const unsigned char *got) {
    const size_t end = p->front[s] + p->nbytes[s];
    size_t at = first_diff(p->image[s], got, 0, p->front[s]);
    if (at == p->front[s]) at = first_diff(p->image[s], got, end, p->total[s]);
    if (at == p->total[s]) return 0;
    const bool before = at < p->front[s];
    note("    %s %s: guard changed %zu bytes %s the tensor (offset %zu, %zu bytes)\n", who, slot_name(s),
         before ? p->front[s] - at : at - end, before ? "before the start of" : "after the end of", p->front[s],
         p->nbytes[s]);
    return 1;
}

/* Compares one output; *nmse gets the f32 NMSE (0 for bit-exact comparisons). */
static int compare_output(const tcase *c, int s, const unsigned char *ref, const unsigned char *got, double tol,
                          double *nmse) {
    const slot *sl = &c->slots[s];
    const int64_t n = slot_numel(sl);
    *nmse = sl->dtype == DBK_DTYPE_F32 ? dbk_test_nmse((const float *)ref, (const float *)got, (size_t)n) : 0.0;
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
        note("    %s: NMSE %.3g > %.1g over %lld values; worst at %lld: got %.9g, want %.9g\n", slot_name(s), *nmse,
               tol, (long long)n, (long long)worst, (double)g[worst], (double)r[worst]);
        return 1;
    }
    const size_t esz = dbk_dtype_size(sl->dtype), nb = (size_t)n * esz;
    const size_t at = first_diff(ref, got, 0, nb);
    if (at == nb) return 0;
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) bad += memcmp(ref + (size_t)i * esz, got + (size_t)i * esz, esz) != 0;
    const int64_t i = (int64_t)(at / esz);
    if (sl->dtype == DBK_DTYPE_F32)
        note("    %s: %lld of %lld values not bit-exact; first at %lld: got %.9g, want %.9g\n", slot_name(s),
               (long long)bad, (long long)n, (long long)i, (double)((const float *)got)[i],
               (double)((const float *)ref)[i]);
    else if (sl->dtype == DBK_DTYPE_I32)
        note("    %s: %lld of %lld values differ; first at %lld: got %d, want %d\n", slot_name(s), (long long)bad,
               (long long)n, (long long)i, ((const int32_t *)got)[i], ((const int32_t *)ref)[i]);
    else
        note("    %s: %lld of %lld bytes differ; first at %lld: got %u, want %u\n", slot_name(s), (long long)bad,
               (long long)n, (long long)i, got[i], ref[i]);
    if (sl->dtype != DBK_DTYPE_F32) *nmse = INFINITY;
    return 1;
}

/* Judges the read-back buffers of a case: guards on both sides, inputs unchanged, outputs
 * against the reference. Every slot is checked, so one report shows everything wrong.
 * Returns 1 on any failure (details in the notes); *worst gets the largest NMSE. */
static int judge(const tcase *c, const placed *pr, const placed *pd, unsigned char *const gr[NSLOT],
                 unsigned char *const gd[NSLOT], double *worst) {
    const double tol = op_tests[c->desc.op]->nmse;
    int fail = 0;
    *worst = 0.0;
    for (int s = 0; s < NSLOT; s++) {
        const slot *sl = &c->slots[s];
        if (sl->role == ROLE_NONE) continue;
        fail |= check_guards("reference", pr, s, gr[s]) | check_guards(dev_name, pd, s, gd[s]);
        const unsigned char *rt = gr[s] + pr->front[s], *dt = gd[s] + pd->front[s];
        if (sl->role == ROLE_IN) {
            if (memcmp(dt, pd->image[s] + pd->front[s], pd->nbytes[s]) != 0) {
                note("    %s: an input was modified by %s\n", slot_name(s), dev_name);
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
            const size_t keep = notes_len;
            double worst;
            const int caught = judge(c, pr, pd, gr, gd, &worst);
            notes_len = keep;
            notes[keep] = '\0';
            memcpy(gd[s] + at[f], saved, f == 2 ? esz : 1);
            if (!caught) {
                note("    harness: a planted fault in %s (%s) was not caught\n", slot_name(s), what[f]);
                missed++;
            }
        }
    }
    return missed;
}

/* Runs case c on both backends and compares; prints its line; frees c. 0 = pass. */
static int run_case(tcase *c) {
    const double tol = op_tests[c->desc.op]->nmse;
    const char *op = dbk_op_name(c->desc.op);
    placed pr, pd;
    memset(&pr, 0, sizeof pr);
    memset(&pd, 0, sizeof pd);
    unsigned char *gr[NSLOT] = {0}, *gd[NSLOT] = {0};
    double worst = 0.0;
    char why[1200] = "";

    dbk_op_desc probe;
    dbk_status st = place(dev_be, c, &pd, &probe);
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
            note("    (the direct run passed; the one-op program did not)\n");
        if (worst_program > worst) worst = worst_program;
    }

    printf("%-20s %-64s nmse %9.2e  tol %-7.1g %s\n", op, c->shape, worst, tol, fail ? "FAIL" : "PASS");
    if (why[0]) printf("    %s\n", why);
    printf("%s", notes);
    notes_len = 0;
    notes[0] = '\0';
    fflush(stdout);
    for (int s = 0; s < NSLOT; s++) {
        free(gr[s]);
        free(gd[s]);
    }
    placed_free(&pr);
    placed_free(&pd);
    case_free(c);
    if (fail) dbk_test_failed_checks++;
    return fail;
}

/* ---------------------------------------------------------------------------------- */
/* convolution                                                                         */

typedef struct conv_shape {
    int n, c, h, w, k, r, s, sh, sw, ph, pw;
    const char *note;
} conv_shape;

static const conv_shape conv_shapes[] = {
    {2, 3, 7, 7, 10, 3, 3, 1, 1, 1, 1, "odd sizes"},
    {1, 5, 13, 13, 3, 3, 3, 1, 1, 1, 1, "batch 1"},
    {3, 4, 13, 13, 10, 3, 3, 2, 2, 1, 1, "stride 2"},
    {2, 3, 9, 11, 4, 3, 3, 1, 1, 0, 0, "no padding"},
    {2, 8, 7, 7, 17, 1, 1, 1, 1, 0, 0, "1x1"},
    {2, 6, 13, 13, 5, 1, 1, 2, 2, 0, 0, "1x1 stride 2"},
    {2, 3, 29, 29, 8, 7, 7, 2, 2, 3, 3, "ResNet50 stem 7x7"},
    {2, 2, 9, 9, 3, 5, 5, 3, 3, 2, 2, "5x5 stride 3"},
    {2, 3, 5, 6, 2, 2, 3, 1, 2, 2, 1, "non-square"},
    {1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, "one element"},
    {4, 3, 32, 32, 64, 3, 3, 1, 1, 1, 1, "ResNet9 prep"},
    {2, 64, 32, 32, 128, 3, 3, 1, 1, 1, 1, "ResNet9 layer1"},
    {2, 128, 16, 16, 128, 3, 3, 1, 1, 1, 1, "ResNet9 res1"},
    {2, 128, 16, 16, 256, 3, 3, 1, 1, 1, 1, "ResNet9 layer2"},
    {2, 256, 8, 8, 512, 3, 3, 1, 1, 1, 1, "ResNet9 layer3"},
    {2, 512, 4, 4, 512, 3, 3, 1, 1, 1, 1, "ResNet9 res3"},
};

static int conv_cases(dbk_op op) {
    int rc = 0;
    for (size_t i = 0; i < sizeof conv_shapes / sizeof conv_shapes[0]; i++) {
        const conv_shape *v = &conv_shapes[i];
        const int64_t P = (v->h + 2 * v->ph - v->r) / v->sh + 1, Q = (v->w + 2 * v->pw - v->s) / v->sw + 1;
        tcase *c = case_new(op, "N%d C%d %dx%d K%d %dx%d s%dx%d p%dx%d %s", v->n, v->c, v->h, v->w, v->k, v->r, v->s,
                            v->sh, v->sw, v->ph, v->pw, v->note);
        c->desc.p.conv = (dbk_conv2d_params){v->sh, v->sw, v->ph, v->pw};
        /* x (N,C,H,W), w (K,C,R,S), y and dy (N,K,P,Q) */
        if (op == DBK_OP_CONV2D_FWD) {
            set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, 4, v->n, v->c, v->h, v->w);
            set_uniform(c, SRC(1), ROLE_IN, -1.0f, 1.0f, 4, v->k, v->c, v->r, v->s);
            set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, 4, v->n, v->k, P, Q);
        } else if (op == DBK_OP_CONV2D_BWD_DATA) {
            set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, 4, v->n, v->k, P, Q);
            set_uniform(c, SRC(1), ROLE_IN, -1.0f, 1.0f, 4, v->k, v->c, v->r, v->s);
            set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, 4, v->n, v->c, v->h, v->w);
        } else {
            set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, 4, v->n, v->c, v->h, v->w);
            set_uniform(c, SRC(1), ROLE_IN, -1.0f, 1.0f, 4, v->n, v->k, P, Q);
            set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, 4, v->k, v->c, v->r, v->s);
        }
        rc |= run_case(c);
    }
    return rc;
}

static int conv2d_fwd_cases(void) { return conv_cases(DBK_OP_CONV2D_FWD); }
OP_TEST(conv2d_fwd, 1e-7);
static int conv2d_bwd_data_cases(void) { return conv_cases(DBK_OP_CONV2D_BWD_DATA); }
OP_TEST(conv2d_bwd_data, 1e-7);
static int conv2d_bwd_filter_cases(void) { return conv_cases(DBK_OP_CONV2D_BWD_FILTER); }
OP_TEST(conv2d_bwd_filter, 1e-7);

/* ---------------------------------------------------------------------------------- */
/* GEMM                                                                                */

static int gemm_cases(void) {
    /* M, N, K; the last two are the ResNet9 classifier (batch 256, 512 -> 10, forward and
     * the data gradient). */
    static const int sizes[][3] = {{1, 1, 1},      {1, 17, 65},   {17, 1, 100},  {65, 100, 17},
                                   {100, 129, 65}, {129, 65, 129}, {256, 10, 512}, {256, 512, 10}};
    int rc = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (int t = 0; t < 4; t++)
            for (int b = 0; b < 2; b++) {
                const int m = sizes[i][0], n = sizes[i][1], k = sizes[i][2];
                const bool ta = t & 1, tb = t & 2;
                const float alpha = b ? 0.5f : 1.0f, beta = b ? 0.75f : 0.0f;
                tcase *c = case_new(DBK_OP_GEMM, "M%d N%d K%d %s %s alpha %.2g beta %.2g", m, n, k, ta ? "A^T" : "A",
                                    tb ? "B^T" : "B", (double)alpha, (double)beta);
                c->desc.p.gemm = (dbk_gemm_params){ta, tb, alpha, beta};
                /* A (M,K) or (K,M), B (K,N) or (N,K), C (M,N): not read when beta = 0 */
                set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, 2, ta ? k : m, ta ? m : k, 1, 1);
                set_uniform(c, SRC(1), ROLE_IN, -1.0f, 1.0f, 2, tb ? n : k, tb ? k : n, 1, 1);
                if (b)
                    set_uniform(c, DST(0), ROLE_INOUT, -1.0f, 1.0f, 2, m, n, 1, 1);
                else
                    set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, 2, m, n, 1, 1);
                rc |= run_case(c);
            }
    return rc;
}
OP_TEST(gemm, 1e-7);

/* ---------------------------------------------------------------------------------- */
/* batch norm                                                                          */

/* N*H*W per channel: 147, 169, 45, 2048, 8192, 32 (only 2048 and 8192 are multiples of 64). */
static const int bn_shapes[][4] = {{3, 5, 7, 7}, {1, 3, 13, 13}, {5, 7, 3, 3}, {2, 16, 32, 32}, {8, 64, 32, 32},
                                   {2, 512, 4, 4}};
#define BN_SHAPE_COUNT (sizeof bn_shapes / sizeof bn_shapes[0])

/* x (N,C,H,W) uniform around a per-channel mean in [-1, 2): a nonzero mean exercises the
 * variance's cancellation. */
static float *set_bn_input(tcase *c, int s, const int *d) {
    float *x = set_uniform(c, s, ROLE_IN, -1.0f, 1.0f, 4, d[0], d[1], d[2], d[3]);
    for (int n = 0; n < d[0]; n++)
        for (int ch = 0; ch < d[1]; ch++)
            for (int e = 0; e < d[2] * d[3]; e++) x[((int64_t)n * d[1] + ch) * d[2] * d[3] + e] += -1.0f + 0.37f * (float)(ch % 9);
    return x;
}

static int batchnorm_fwd_train_cases(void) {
    int rc = 0;
    for (size_t i = 0; i < BN_SHAPE_COUNT; i++) {
        const int *d = bn_shapes[i];
        tcase *c = case_new(DBK_OP_BATCHNORM_FWD_TRAIN, "N%d C%d %dx%d (N*H*W %d)", d[0], d[1], d[2], d[3],
                            d[0] * d[2] * d[3]);
        c->desc.p.bn = (dbk_bn_params){1e-5f, 0.1f};
        set_bn_input(c, SRC(0), d);
        set_uniform(c, SRC(1), ROLE_IN, 0.5f, 1.5f, 1, d[1], 1, 1, 1);
        set_uniform(c, SRC(2), ROLE_IN, -0.5f, 0.5f, 1, d[1], 1, 1, 1);
        set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, 4, d[0], d[1], d[2], d[3]);
        set_slot(c, DST(1), ROLE_OUT, DBK_DTYPE_F32, 1, d[1], 1, 1, 1);
        set_slot(c, DST(2), ROLE_OUT, DBK_DTYPE_F32, 1, d[1], 1, 1, 1);
        set_uniform(c, DST(3), ROLE_INOUT, -0.5f, 0.5f, 1, d[1], 1, 1, 1);
        set_uniform(c, DST(4), ROLE_INOUT, 0.5f, 1.5f, 1, d[1], 1, 1, 1);
        rc |= run_case(c);
    }
    return rc;
}
OP_TEST(batchnorm_fwd_train, 1e-7);

static int batchnorm_fwd_infer_cases(void) {
    int rc = 0;
    for (size_t i = 0; i < BN_SHAPE_COUNT; i++) {
        const int *d = bn_shapes[i];
        tcase *c = case_new(DBK_OP_BATCHNORM_FWD_INFER, "N%d C%d %dx%d", d[0], d[1], d[2], d[3]);
        c->desc.p.bn = (dbk_bn_params){1e-5f, 0.1f};
        set_bn_input(c, SRC(0), d);
        set_uniform(c, SRC(1), ROLE_IN, 0.5f, 1.5f, 1, d[1], 1, 1, 1);
        set_uniform(c, SRC(2), ROLE_IN, -0.5f, 0.5f, 1, d[1], 1, 1, 1);
        set_uniform(c, SRC(3), ROLE_IN, -1.0f, 2.0f, 1, d[1], 1, 1, 1);
        set_uniform(c, SRC(4), ROLE_IN, 0.2f, 1.5f, 1, d[1], 1, 1, 1);
        set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, 4, d[0], d[1], d[2], d[3]);
        rc |= run_case(c);
    }
    return rc;
}
OP_TEST(batchnorm_fwd_infer, 1e-9);

static int batchnorm_bwd_cases(void) {
    int rc = 0;
    for (size_t i = 0; i < BN_SHAPE_COUNT; i++) {
        const int *d = bn_shapes[i];
        tcase *c = case_new(DBK_OP_BATCHNORM_BWD, "N%d C%d %dx%d (N*H*W %d)", d[0], d[1], d[2], d[3],
                            d[0] * d[2] * d[3]);
        c->desc.p.bn = (dbk_bn_params){1e-5f, 0.1f};
        const float *x = set_bn_input(c, SRC(0), d);
        set_uniform(c, SRC(1), ROLE_IN, -1.0f, 1.0f, 4, d[0], d[1], d[2], d[3]);
        set_uniform(c, SRC(2), ROLE_IN, 0.5f, 1.5f, 1, d[1], 1, 1, 1);
        /* mean and invstd: the batch statistics of x, as FWD_TRAIN saves them */
        float *mean = set_slot(c, SRC(3), ROLE_IN, DBK_DTYPE_F32, 1, d[1], 1, 1, 1);
        float *invstd = set_slot(c, SRC(4), ROLE_IN, DBK_DTYPE_F32, 1, d[1], 1, 1, 1);
        const int64_t hw = (int64_t)d[2] * d[3], m = d[0] * hw;
        for (int ch = 0; ch < d[1]; ch++) {
            double s = 0.0, s2 = 0.0;
            for (int n = 0; n < d[0]; n++)
                for (int64_t e = 0; e < hw; e++) s += (double)x[((int64_t)n * d[1] + ch) * hw + e];
            const double mu = s / (double)m;
            for (int n = 0; n < d[0]; n++)
                for (int64_t e = 0; e < hw; e++) {
                    const double t = (double)x[((int64_t)n * d[1] + ch) * hw + e] - mu;
                    s2 += t * t;
                }
            mean[ch] = (float)mu;
            invstd[ch] = (float)(1.0 / sqrt(s2 / (double)m + 1e-5));
        }
        set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, 4, d[0], d[1], d[2], d[3]);
        set_slot(c, DST(1), ROLE_OUT, DBK_DTYPE_F32, 1, d[1], 1, 1, 1);
        set_slot(c, DST(2), ROLE_OUT, DBK_DTYPE_F32, 1, d[1], 1, 1, 1);
        rc |= run_case(c);
    }
    return rc;
}
OP_TEST(batchnorm_bwd, 1e-6);

/* ---------------------------------------------------------------------------------- */
/* elementwise: relu, add, scale, fill, copy                                           */

/* Shapes (ndim, dims) shared by the elementwise ops: one element, odd counts, NCHW. */
static const int64_t ew_shapes[][5] = {{1, 1, 1, 1, 1}, {1, 4099, 1, 1, 1}, {4, 3, 5, 7, 7}, {4, 2, 16, 32, 32}};
#define EW_SHAPE_COUNT (sizeof ew_shapes / sizeof ew_shapes[0])

static const char *ew_summary(int i, char *out, size_t cap) {
    const int64_t *e = ew_shapes[i];
    if (e[0] == 1)
        snprintf(out, cap, "(%lld)", (long long)e[1]);
    else
        snprintf(out, cap, "(%lld,%lld,%lld,%lld)", (long long)e[1], (long long)e[2], (long long)e[3], (long long)e[4]);
    return out;
}

#define EW(i) (int)ew_shapes[i][0], ew_shapes[i][1], ew_shapes[i][2], ew_shapes[i][3], ew_shapes[i][4]

/* dst 0 of an elementwise case: a fresh f32 output of shape EW(i), or (alias >= 0) that
 * slot itself, for the in-place forms. */
static void set_ew_output(tcase *c, int i, int alias) {
    if (alias >= 0)
        set_alias(c, DST(0), alias);
    else
        set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, EW(i));
}

static int relu_fwd_cases(void) {
    int rc = 0;
    char sh[64];
    for (int in_place = 0; in_place < 2; in_place++)
        for (int i = 0; i < (int)EW_SHAPE_COUNT; i++) {
            tcase *c = case_new(DBK_OP_RELU_FWD, "%s%s", ew_summary(i, sh, sizeof sh), in_place ? " in place (y = x)" : "");
            set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, EW(i));
            set_ew_output(c, i, in_place ? SRC(0) : -1);
            rc |= run_case(c);
        }
    return rc;
}
OP_TEST(relu_fwd, 1e-10);

static int relu_bwd_cases(void) {
    int rc = 0;
    char sh[64];
    for (int in_place = 0; in_place < 2; in_place++)
        for (int i = 0; i < (int)EW_SHAPE_COUNT; i++) {
            tcase *c = case_new(DBK_OP_RELU_BWD, "%s%s", ew_summary(i, sh, sizeof sh), in_place ? " in place (dx = dy)" : "");
            /* y is a forward output: half of it exactly zero */
            float *y = set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, EW(i));
            for (int64_t k = 0; k < slot_numel(&c->slots[SRC(0)]); k++) y[k] = y[k] > 0.0f ? y[k] : 0.0f;
            set_uniform(c, SRC(1), ROLE_IN, -1.0f, 1.0f, EW(i));
            set_ew_output(c, i, in_place ? SRC(1) : -1);
            rc |= run_case(c);
        }
    return rc;
}
OP_TEST(relu_bwd, 1e-10);

static int add_cases(void) {
    int rc = 0;
    char sh[64];
    static const char *modes[3] = {"", " y aliases a", " y aliases b"};
    for (int mode = 0; mode < 3; mode++)
        for (int i = 0; i < (int)EW_SHAPE_COUNT; i++) {
            tcase *c = case_new(DBK_OP_ADD, "%s%s", ew_summary(i, sh, sizeof sh), modes[mode]);
            set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, EW(i));
            set_uniform(c, SRC(1), ROLE_IN, -1.0f, 1.0f, EW(i));
            set_ew_output(c, i, mode == 0 ? -1 : mode == 1 ? SRC(0) : SRC(1));
            rc |= run_case(c);
        }
    return rc;
}
OP_TEST(add, 1e-10);

static int scale_cases(void) {
    int rc = 0;
    char sh[64];
    for (int in_place = 0; in_place < 2; in_place++)
        for (int i = 0; i < (int)EW_SHAPE_COUNT; i++) {
            const float alpha = in_place ? -3.0f : 0.125f;
            tcase *c = case_new(DBK_OP_SCALE, "%s alpha %g%s", ew_summary(i, sh, sizeof sh), (double)alpha,
                                in_place ? " in place" : "");
            c->desc.p.scale.alpha = alpha;
            set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, EW(i));
            set_ew_output(c, i, in_place ? SRC(0) : -1);
            rc |= run_case(c);
        }
    return rc;
}
OP_TEST(scale, 1e-10);

static int fill_cases(void) {
    static const float values[] = {-2.5f, 0.0f, 3.0f, 1e-3f};
    int rc = 0;
    char sh[64];
    for (int i = 0; i < (int)EW_SHAPE_COUNT; i++) {
        tcase *c = case_new(DBK_OP_FILL, "%s value %g", ew_summary(i, sh, sizeof sh), (double)values[i % 4]);
        c->desc.p.fill.value = values[i % 4];
        set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, EW(i));
        rc |= run_case(c);
    }
    return rc;
}
OP_TEST(fill, 1e-10);

static int copy_cases(void) {
    int rc = 0;
    char sh[64];
    for (int i = 0; i < (int)EW_SHAPE_COUNT; i++) {
        tcase *c = case_new(DBK_OP_COPY, "f32 %s", ew_summary(i, sh, sizeof sh));
        set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, EW(i));
        set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, EW(i));
        rc |= run_case(c);
    }
    /* f32 (2,3,4,4) into a flat (96): only the element counts must agree */
    tcase *c = case_new(DBK_OP_COPY, "f32 (2,3,4,4) -> (96)");
    set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, 4, 2, 3, 4, 4);
    set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, 1, 96, 1, 1, 1);
    rc |= run_case(c);
    /* i32 and u8 (odd byte counts: a kernel writing whole words past the end hits the guard) */
    static const int64_t counts[] = {1, 1001};
    for (int dt = 0; dt < 2; dt++)
        for (int i = 0; i < 2; i++) {
            const dbk_dtype type = dt ? DBK_DTYPE_U8 : DBK_DTYPE_I32;
            c = case_new(DBK_OP_COPY, "%s (%lld)", dbk_dtype_name(type), (long long)counts[i]);
            unsigned char *h = set_slot(c, SRC(0), ROLE_IN, type, 1, counts[i], 1, 1, 1);
            for (size_t k = 0; k < (size_t)counts[i] * dbk_dtype_size(type); k++) h[k] = (unsigned char)dbk_rng_u32(&rng);
            set_slot(c, DST(0), ROLE_OUT, type, 1, counts[i], 1, 1, 1);
            rc |= run_case(c);
        }
    return rc;
}
OP_TEST(copy, 1e-10);

/* ---------------------------------------------------------------------------------- */
/* max pool                                                                            */

typedef struct pool_shape {
    int n, c, h, w, r, s, sh, sw;
    int levels;          /* > 0: inputs are integers 0..levels-1, so maxima tie */
    const char *note;
} pool_shape;

static const pool_shape pool_shapes[] = {
    {2, 3, 8, 8, 2, 2, 2, 2, 0, "2x2 stride 2"},
    {1, 5, 13, 13, 2, 2, 2, 2, 0, "2x2 stride 2, odd size"},
    {2, 4, 13, 13, 3, 3, 2, 2, 0, "3x3 stride 2, overlapping"},
    {2, 10, 4, 4, 4, 4, 1, 1, 0, "global 4x4"},
    {3, 7, 7, 5, 7, 5, 1, 1, 0, "global 7x5"},
    {2, 32, 32, 32, 2, 2, 2, 2, 0, "ResNet9-quarter layer1"},
    {4, 128, 4, 4, 4, 4, 4, 4, 0, "ResNet9-quarter global"},
    {2, 6, 8, 8, 2, 2, 2, 2, 3, "2x2 stride 2, ties"},
    {1, 3, 9, 9, 3, 3, 2, 2, 2, "3x3 stride 2, overlapping, ties"},
    {2, 5, 6, 6, 6, 6, 1, 1, 2, "global 6x6, ties"},
};

static int maxpool_cases(dbk_op op) {
    int rc = 0;
    for (size_t i = 0; i < sizeof pool_shapes / sizeof pool_shapes[0]; i++) {
        const pool_shape *v = &pool_shapes[i];
        if (op == DBK_OP_MAXPOOL_BWD && v->levels) continue;   /* ties matter to the forward only */
        const int P = (v->h - v->r) / v->sh + 1, Q = (v->w - v->s) / v->sw + 1;
        tcase *c = case_new(op, "N%d C%d %dx%d window %dx%d stride %dx%d %s", v->n, v->c, v->h, v->w, v->r, v->s,
                            v->sh, v->sw, v->note);
        c->desc.p.pool = (dbk_pool_params){v->r, v->s, v->sh, v->sw};
        if (op == DBK_OP_MAXPOOL_FWD) {
            /* x (N,C,H,W) -> y, argmax (N,C,P,Q) */
            if (v->levels)
                set_levels(c, SRC(0), v->levels, 4, v->n, v->c, v->h, v->w);
            else
                set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, 4, v->n, v->c, v->h, v->w);
            set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, 4, v->n, v->c, P, Q);
            set_slot(c, DST(1), ROLE_OUT, DBK_DTYPE_I32, 4, v->n, v->c, P, Q);
        } else {
            /* dy, argmax (N,C,P,Q) -> dx (N,C,H,W); argmax a random cell of each window */
            set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, 4, v->n, v->c, P, Q);
            int32_t *arg = set_slot(c, SRC(1), ROLE_IN, DBK_DTYPE_I32, 4, v->n, v->c, P, Q);
            for (int64_t plane = 0; plane < (int64_t)v->n * v->c; plane++)
                for (int p = 0; p < P; p++)
                    for (int q = 0; q < Q; q++) {
                        const int y = p * v->sh + (int)dbk_rng_below(&rng, (uint32_t)v->r);
                        const int x = q * v->sw + (int)dbk_rng_below(&rng, (uint32_t)v->s);
                        arg[(plane * P + p) * Q + q] = y * v->w + x;
                    }
            set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, 4, v->n, v->c, v->h, v->w);
        }
        rc |= run_case(c);
    }
    return rc;
}

static int maxpool_fwd_cases(void) { return maxpool_cases(DBK_OP_MAXPOOL_FWD); }
OP_TEST(maxpool_fwd, 1e-10);
static int maxpool_bwd_cases(void) { return maxpool_cases(DBK_OP_MAXPOOL_BWD); }
OP_TEST(maxpool_bwd, 1e-10);

/* ---------------------------------------------------------------------------------- */
/* loss and accuracy                                                                   */

typedef struct xent_shape {
    int   n, k;
    float smoothing;
    bool  out_of_range;   /* rows 1 and 3 get labels -1 and K */
    const char *note;
} xent_shape;

static const xent_shape xent_shapes[] = {
    {1, 10, 0.0f, false, "batch 1"},
    {7, 10, 0.0f, true, "labels -1 and K"},
    {7, 10, 0.2f, true, "labels -1 and K"},
    {256, 10, 0.2f, false, "ResNet9 batch"},
    {256, 10, 0.0f, true, "ResNet9 batch, labels -1 and K"},
    {5, 3, 0.2f, false, "K 3"},
    {4, 1000, 0.1f, true, "ImageNet classes"},
    {3, 1, 0.0f, false, "K 1"},
};
#define XENT_SHAPE_COUNT (sizeof xent_shapes / sizeof xent_shapes[0])

static int softmax_xent_fwd_cases(void) {
    int rc = 0;
    for (size_t i = 0; i < XENT_SHAPE_COUNT; i++) {
        const xent_shape *v = &xent_shapes[i];
        tcase *c = case_new(DBK_OP_SOFTMAX_XENT_FWD, "N%d K%d smoothing %.1f %s, loss_sum += from 3.5", v->n, v->k,
                            (double)v->smoothing, v->note);
        c->desc.p.xent = (dbk_xent_params){v->smoothing, 1.0f};
        /* logits (N,K), labels (N) -> probs (N,K), loss_sum (1) accumulated */
        set_uniform(c, SRC(0), ROLE_IN, -4.0f, 4.0f, 2, v->n, v->k, 1, 1);
        set_labels(c, SRC(1), v->n, v->k, v->out_of_range);
        set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, 2, v->n, v->k, 1, 1);
        set_scalar(c, DST(1), ROLE_INOUT, 3.5f);
        rc |= run_case(c);
    }
    return rc;
}
OP_TEST(softmax_xent_fwd, 1e-8);

static int softmax_xent_bwd_cases(void) {
    int rc = 0;
    for (size_t i = 0; i < XENT_SHAPE_COUNT; i++) {
        const xent_shape *v = &xent_shapes[i];
        const float grad_scale = i % 2 ? 1.0f / (float)v->n : 1.0f;
        tcase *c = case_new(DBK_OP_SOFTMAX_XENT_BWD, "N%d K%d smoothing %.1f grad_scale %.3g %s", v->n, v->k,
                            (double)v->smoothing, (double)grad_scale, v->note);
        c->desc.p.xent = (dbk_xent_params){v->smoothing, grad_scale};
        /* probs (N,K): rows of a real softmax; labels (N) -> dlogits (N,K) */
        float *p = set_uniform(c, SRC(0), ROLE_IN, -4.0f, 4.0f, 2, v->n, v->k, 1, 1);
        for (int r = 0; r < v->n; r++) {
            float *row = p + (int64_t)r * v->k, mx = row[0];
            double sum = 0.0;
            for (int k = 1; k < v->k; k++) mx = row[k] > mx ? row[k] : mx;
            for (int k = 0; k < v->k; k++) sum += exp((double)row[k] - (double)mx);
            for (int k = 0; k < v->k; k++) row[k] = (float)(exp((double)row[k] - (double)mx) / sum);
        }
        set_labels(c, SRC(1), v->n, v->k, v->out_of_range);
        set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, 2, v->n, v->k, 1, 1);
        rc |= run_case(c);
    }
    return rc;
}
OP_TEST(softmax_xent_bwd, 1e-9);

static int accuracy_cases(void) {
    int rc = 0;
    for (size_t i = 0; i < XENT_SHAPE_COUNT; i++) {
        const xent_shape *v = &xent_shapes[i];
        const bool ties = i % 2 == 0;
        tcase *c = case_new(DBK_OP_ACCURACY, "N%d K%d %s%s, correct += from 5", v->n, v->k, v->note,
                            ties ? ", tied maxima" : "");
        /* logits (N,K), labels (N) -> correct (1) accumulated */
        if (ties)
            set_levels(c, SRC(0), 3, 2, v->n, v->k, 1, 1);
        else
            set_uniform(c, SRC(0), ROLE_IN, -4.0f, 4.0f, 2, v->n, v->k, 1, 1);
        set_labels(c, SRC(1), v->n, v->k, v->out_of_range);
        set_scalar(c, DST(0), ROLE_INOUT, 5.0f);
        rc |= run_case(c);
    }
    return rc;
}
OP_TEST(accuracy, 0.0);

/* ---------------------------------------------------------------------------------- */
/* optimizer                                                                           */

static int sgd_momentum_update_cases(void) {
    static const int64_t counts[] = {1, 17, 4099, 262147};
    int rc = 0;
    for (int nesterov = 0; nesterov < 2; nesterov++)
        for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
            /* weight decay 5e-4, and 5e-4 * 256 as a summed loss over batch 256 uses */
            const float wd = i % 2 ? 0.128f : 5e-4f;
            tcase *c = case_new(DBK_OP_SGD_MOMENTUM_UPDATE, "n %lld momentum 0.9 wd %g nesterov %s", (long long)counts[i],
                                (double)wd, nesterov ? "true" : "false");
            c->desc.p.sgd = (dbk_sgd_params){0.9f, wd, nesterov};
            /* grad (n), lr (1) -> params (n), momentum (n) in place */
            set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, 1, counts[i], 1, 1, 1);
            set_scalar(c, SRC(1), ROLE_IN, 0.4f / 256.0f);
            set_uniform(c, DST(0), ROLE_INOUT, -0.5f, 0.5f, 1, counts[i], 1, 1, 1);
            set_uniform(c, DST(1), ROLE_INOUT, -0.1f, 0.1f, 1, counts[i], 1, 1, 1);
            rc |= run_case(c);
        }
    return rc;
}
OP_TEST(sgd_momentum_update, 1e-10);

/* ---------------------------------------------------------------------------------- */
/* augmentation                                                                        */

typedef struct aug_shape {
    int     m, h, w;        /* dataset: M images (3,H,W) */
    int     l;              /* index list length, 0 = no indices */
    int     n, first;
    int32_t seed;
    bool    train, flip;
    int     pad, cutout;
    int32_t epoch, run_seed;            /* state[2], state[3] */
    bool    flip_alt;                   /* params.flip_alternating */
    int     view_dy, view_dx;           /* evaluation view */
    bool    view_flip;
} aug_shape;

static const aug_shape aug_shapes[] = {
    {50, 32, 32, 64, 16, 5, 12345, true, true, 4, 8, 0, 0, false, 0, 0, false},
    {50, 32, 32, 0, 16, 7, -123456789, true, true, 4, 8, 0, 0, false, 0, 0, false},
    {50, 32, 32, 64, 16, 5, 99, false, true, 4, 8, 0, 0, false, 0, 0, false},
    {50, 32, 32, 0, 50, 0, 0, false, false, 4, 0, 0, 0, false, 0, 0, false},
    {50, 32, 32, 64, 16, 40, 7, true, false, 4, 0, 0, 0, false, 0, 0, false},
    {20, 13, 11, 40, 9, 30, 2024, true, true, 2, 5, 0, 0, false, 0, 0, false},
    {50, 32, 32, 64, 1, 63, 31337, true, true, 4, 8, 0, 0, false, 0, 0, false},
    {300, 32, 32, 300, 256, 44, 5, true, true, 4, 8, 0, 0, false, 0, 0, false},
    /* the old modes ignore epoch and run_seed */
    {50, 32, 32, 64, 16, 5, 12345, true, true, 4, 8, 3, 987654, false, 0, 0, false},
    /* airbench94's training augmentation: pad 2, alternating flip, no cutout, over epochs
     * 0..3 with a seed per epoch, with and without indices; one case keeps a cutout */
    {50, 32, 32, 64, 48, 5, 111, true, true, 2, 0, 0, 424242, true, 0, 0, false},
    {50, 32, 32, 64, 48, 5, 222, true, true, 2, 0, 1, 424242, true, 0, 0, false},
    {50, 32, 32, 64, 48, 5, 333, true, true, 2, 0, 2, 424242, true, 0, 0, false},
    {50, 32, 32, 64, 48, 5, 444, true, true, 2, 0, 3, 424242, true, 0, 0, false},
    {50, 32, 32, 0, 50, 0, 555, true, true, 2, 0, 0, -77, true, 0, 0, false},
    {50, 32, 32, 0, 50, 0, 666, true, true, 2, 0, 1, -77, true, 0, 0, false},
    {20, 13, 11, 40, 9, 30, 2024, true, true, 3, 4, 7, 31, true, 0, 0, false},
    /* test-time views: airbench94's six (pad 1) and larger shifts on an odd image */
    {50, 32, 32, 0, 50, 0, 0, false, false, 4, 0, 0, 0, false, 0, 0, true},
    {50, 32, 32, 0, 50, 0, 0, false, false, 4, 0, 0, 0, false, -1, -1, false},
    {50, 32, 32, 0, 50, 0, 0, false, false, 4, 0, 0, 0, false, -1, -1, true},
    {50, 32, 32, 0, 50, 0, 0, false, false, 4, 0, 0, 0, false, 1, 1, false},
    {50, 32, 32, 0, 50, 0, 0, false, false, 4, 0, 0, 0, false, 1, 1, true},
    {50, 32, 32, 64, 16, 5, 99, false, true, 4, 8, 1, 5, false, 1, -1, true},
    {20, 13, 11, 40, 9, 30, 0, false, false, 2, 0, 0, 0, false, -3, 4, true},
    {20, 13, 11, 0, 20, 0, 0, false, false, 2, 0, 0, 0, false, 12, -10, false},
    {20, 13, 11, 0, 20, 0, 0, false, false, 2, 0, 0, 0, false, -12, 10, true},
};

static int augment_cases(void) {
    static const dbk_augment_params base = {.train = true, .pad = 4, .flip = true, .cutout = 8,
                                            .mean = {125.31f / 255.0f, 122.95f / 255.0f, 113.87f / 255.0f},
                                            .std = {62.99f / 255.0f, 62.09f / 255.0f, 66.70f / 255.0f}};
    int rc = 0;
    for (size_t i = 0; i < sizeof aug_shapes / sizeof aug_shapes[0]; i++) {
        const aug_shape *v = &aug_shapes[i];
        tcase *c = case_new(DBK_OP_AUGMENT, "M%d %dx%d N%d first %d %s pad %d%s%s cutout %d %s epoch %d view %d,%d%s",
                            v->m, v->h, v->w, v->n, v->first, v->train ? "train" : "eval", v->pad,
                            v->flip ? " flip" : "", v->flip_alt ? " alternating" : "", v->cutout,
                            v->l ? "indices" : "no indices", v->epoch, v->view_dy, v->view_dx,
                            v->view_flip ? " flipped" : "");
        c->desc.p.augment = base;
        c->desc.p.augment.train = v->train;
        c->desc.p.augment.flip = v->flip;
        c->desc.p.augment.pad = v->pad;
        c->desc.p.augment.cutout = v->cutout;
        c->desc.p.augment.flip_alternating = v->flip_alt;
        c->desc.p.augment.view_dy = v->view_dy;
        c->desc.p.augment.view_dx = v->view_dx;
        c->desc.p.augment.view_flip = v->view_flip;
        /* images u8 (M,3,H,W), labels u8 (M), indices i32 (L), state i32 {first, seed, epoch,
         * run_seed} -> x f32 (N,3,H,W), labels i32 (N) */
        uint8_t *img = set_slot(c, SRC(0), ROLE_IN, DBK_DTYPE_U8, 4, v->m, 3, v->h, v->w);
        for (int64_t k = 0; k < (int64_t)v->m * 3 * v->h * v->w; k++) img[k] = (uint8_t)dbk_rng_u32(&rng);
        uint8_t *lab = set_slot(c, SRC(1), ROLE_IN, DBK_DTYPE_U8, 1, v->m, 1, 1, 1);
        for (int k = 0; k < v->m; k++) lab[k] = (uint8_t)dbk_rng_below(&rng, 10);
        if (v->l) {
            int32_t *idx = set_slot(c, SRC(2), ROLE_IN, DBK_DTYPE_I32, 1, v->l, 1, 1, 1);
            for (int k = 0; k < v->l; k++) idx[k] = (int32_t)dbk_rng_below(&rng, (uint32_t)v->m);
        }
        int32_t *state = set_slot(c, SRC(3), ROLE_IN, DBK_DTYPE_I32, 1, 4, 1, 1, 1);
        state[0] = v->first;
        state[1] = v->seed;
        state[2] = v->epoch;
        state[3] = v->run_seed;
        set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, 4, v->n, 3, v->h, v->w);
        set_slot(c, DST(1), ROLE_OUT, DBK_DTYPE_I32, 1, v->n, 1, 1, 1);
        rc |= run_case(c);
    }
    return rc;
}
OP_TEST(augment, 0.0);

/* ---------------------------------------------------------------------------------- */
/* GELU, bias, lookahead (airbench94's ops)                                            */

/* x spans [-5, 5): all three ranges of the Vulkan shaders' erf (common/erf.glsl) and the
 * tails where 1 + erf cancels. */
static int gelu_fwd_cases(void) {
    int rc = 0;
    char sh[64];
    for (int in_place = 0; in_place < 2; in_place++)
        for (int i = 0; i < (int)EW_SHAPE_COUNT; i++) {
            tcase *c = case_new(DBK_OP_GELU_FWD, "%s%s", ew_summary(i, sh, sizeof sh), in_place ? " in place (y = x)" : "");
            set_uniform(c, SRC(0), ROLE_IN, -5.0f, 5.0f, EW(i));
            set_ew_output(c, i, in_place ? SRC(0) : -1);
            rc |= run_case(c);
        }
    return rc;
}
OP_TEST(gelu_fwd, 1e-9);

static int gelu_bwd_cases(void) {
    int rc = 0;
    char sh[64];
    for (int in_place = 0; in_place < 2; in_place++)
        for (int i = 0; i < (int)EW_SHAPE_COUNT; i++) {
            tcase *c = case_new(DBK_OP_GELU_BWD, "%s%s", ew_summary(i, sh, sizeof sh), in_place ? " in place (dx = dy)" : "");
            set_uniform(c, SRC(0), ROLE_IN, -5.0f, 5.0f, EW(i));
            set_uniform(c, SRC(1), ROLE_IN, -1.0f, 1.0f, EW(i));
            set_ew_output(c, i, in_place ? SRC(1) : -1);
            rc |= run_case(c);
        }
    return rc;
}
OP_TEST(gelu_bwd, 1e-9);

/* (N,C,H,W) of the bias ops: odd sizes, batch 1, 1x1 maps, airbench94's whitening output
 * (C 24, 31x31) at batch 1 and 16, C 512 as in ResNet9's last layers, and (channel_sum only)
 * airbench's batch 1024 at 31x31: ~1M values per channel, the longest reduction the op must
 * do, with C 2 so that the case stays at 8 MB. H*W of 49, 169, 961 and N*H*W of 98, 169,
 * 15376, 984064 are not multiples of any work-group size. */
static const int bias_shapes[][4] = {{2, 3, 7, 7}, {1, 5, 13, 13}, {3, 17, 1, 1}, {1, 24, 31, 31}, {16, 24, 31, 31},
                                     {8, 512, 4, 4}, {2, 512, 32, 32}, {1024, 2, 31, 31}};
#define BIAS_SHAPE_COUNT (sizeof bias_shapes / sizeof bias_shapes[0])

static int bias_add_cases(void) {
    int rc = 0;
    for (int in_place = 0; in_place < 2; in_place++)
        for (size_t i = 0; i < BIAS_SHAPE_COUNT; i++) {
            const int *d = bias_shapes[i];
            if (d[0] == 1024) continue;   /* elementwise: the long reduction adds nothing */
            tcase *c = case_new(DBK_OP_BIAS_ADD, "N%d C%d %dx%d%s", d[0], d[1], d[2], d[3], in_place ? " in place (y = x)" : "");
            /* x (N,C,H,W), b (C) -> y (N,C,H,W) */
            set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, 4, d[0], d[1], d[2], d[3]);
            set_uniform(c, SRC(1), ROLE_IN, -1.0f, 1.0f, 1, d[1], 1, 1, 1);
            if (in_place)
                set_alias(c, DST(0), SRC(0));
            else
                set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, 4, d[0], d[1], d[2], d[3]);
            rc |= run_case(c);
        }
    return rc;
}
OP_TEST(bias_add, 1e-10);

/* dy around a per-channel mean in [-1, 2) (as set_bn_input): sums far from zero, as a
 * bias gradient summed over a batch is, and cancellation in the channels around zero. */
static int channel_sum_cases(void) {
    int rc = 0;
    for (size_t i = 0; i < BIAS_SHAPE_COUNT; i++) {
        const int *d = bias_shapes[i];
        tcase *c = case_new(DBK_OP_CHANNEL_SUM, "N%d C%d %dx%d (N*H*W %d)", d[0], d[1], d[2], d[3], d[0] * d[2] * d[3]);
        /* dy (N,C,H,W) -> db (C) */
        set_bn_input(c, SRC(0), d);
        set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, 1, d[1], 1, 1, 1);
        rc |= run_case(c);
    }
    return rc;
}
OP_TEST(channel_sum, 1e-9);

static int lookahead_cases(void) {
    static const int64_t counts[] = {1, 17, 4099, 262147};
    /* decay 0.95^5 (w = 0.226, first branch), 0.3 (w = 0.7, second branch), 0.5 (w = 0.5,
     * the boundary: second branch), 1 (w = 0: params = ema, the final sync) and 0 (w = 1:
     * ema = params) */
    static const float decays[] = {0.77378094f, 0.3f, 0.5f, 1.0f, 0.0f};
    int rc = 0;
    for (size_t k = 0; k < sizeof decays / sizeof decays[0]; k++)
        for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
            tcase *c = case_new(DBK_OP_LOOKAHEAD, "n %lld decay %.8g", (long long)counts[i], (double)decays[k]);
            /* decay (1) -> ema (n), params (n) in place */
            set_scalar(c, SRC(0), ROLE_IN, decays[k]);
            set_uniform(c, DST(0), ROLE_INOUT, -0.5f, 0.5f, 1, counts[i], 1, 1, 1);
            set_uniform(c, DST(1), ROLE_INOUT, -0.5f, 0.5f, 1, counts[i], 1, 1, 1);
            rc |= run_case(c);
        }
    return rc;
}
OP_TEST(lookahead, 1e-10);

/* ---------------------------------------------------------------------------------- */

/* An op without cases fails the run instead of going untested. */
static int missing_op(void) { return 1; }

int main(int argc, char **argv) {
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: test_ops_backend <backend-spec> [op]   (cpu, opencl[:N], vulkan[:N]; op as in "
                        "src/backend/op_list.h)\n");
        return 2;
    }
    dbk_op only = DBK_OP_COUNT;
    if (argc == 3 && dbk_op_from_name(argv[2], &only) != DBK_OK) {
        fprintf(stderr, "test_ops_backend: %s\n", dbk_last_error());
        return 2;
    }
    dev_name = argv[1];
    dbk_backend_kind kind;
    int index;
    const int unavailable = dbk_test_resolve_backend(dev_name, &kind, &index);
    if (unavailable) return unavailable;
    dbk_status s = dbk_backend_create(DBK_BACKEND_KIND_CPU, 0, &ref_be);
    if (s == DBK_OK) s = dbk_backend_create(kind, index, &dev_be);
    if (s != DBK_OK) {
        printf("cannot create the backends: %s: %s\n", dbk_status_str(s), dbk_last_error());
        dbk_backend_destroy(ref_be);
        return 1;
    }
    const dbk_device_info *info = dbk_backend_get_info(dev_be);
    printf("%s: %s (%s, %s) against the CPU reference\n", dev_name, info->name, info->driver, info->api_version);
    dbk_rng_init(&rng, 20261122);
    char lacking[1024] = "";
    for (int op = 0; op < DBK_OP_COUNT; op++) {
        if (only != DBK_OP_COUNT && op != (int)only) continue;
        const char *const opname = dbk_op_name((dbk_op)op);
        char name[80];
        snprintf(name, sizeof name, "%s matches the CPU reference", opname);
        if (!op_tests[op]) {
            printf("op %s has no test cases: define %s_test in tests/test_ops_backend.c\n", opname, opname);
            dbk_test_run(name, missing_op);
            continue;
        }
        if (!dbk_backend_has_op(dev_be, (dbk_op)op)) {
            /* the declaration says so (op_list.h where column): reported, not failed */
            printf("%-20s not supported by %s\n", opname, dev_name);
            size_t len = strlen(lacking);
            snprintf(lacking + len, sizeof lacking - len, "%s%s", len ? ", " : "", opname);
            continue;
        }
        dbk_test_run(name, op_tests[op]->cases);
    }
    if (lacking[0]) printf("not supported by %s: %s\n", dev_name, lacking);
    dbk_backend_destroy(dev_be);
    dbk_backend_destroy(ref_be);
    return dbk_test_finish();
}
