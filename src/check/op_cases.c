/*
 * op_cases.c — the cases of every op of op_list.h and their NMSE tolerances: what
 * tests/test_ops_backend and `daybreak check` run on a device against the CPU reference
 * (conventions: op_check.h; the harness: op_harness.c).
 *
 * Each op of op_list.h defines <name>_cases and OP_TEST(<name>, tolerance) here; an op
 * without them is reported as "op X has no test cases" (dbk_op_check_run returns -1) and
 * fails the run, so a new op cannot go unchecked. Shapes include odd sizes, non-multiples of
 * tile sizes, batch 1, stride 2, 1x1, 7x7 stride 2 and the ResNet9 layers.
 *
 * Tolerances (NMSE; fp32 on both sides, so they only differ in summation order and in
 * the last bits of exp/log/sqrt/division; an indexing bug gives NMSE 1e-3 .. 1):
 *  - conv fwd / bwd_data / bwd_filter, GEMM: 1e-7. Sums of up to ~130k products (bwd_filter
 *    at ResNet9 shapes); naive fp32 summation has relative error ~sqrt(n)*6e-8 ~ 2e-5, NMSE
 *    ~4e-10; blocked, tiled or Winograd orders stay well inside 1e-7. Winograd F(2x2,3x3)
 *    (the OpenCL backend's 3x3 stride-1 path, ocl_ops_conv_winograd.c) adds the transforms'
 *    rounding (entries of magnitude up to 4x the inputs): measured on PoCL 2026-11-23
 *    (ops_opencl_winograd) NMSE <= 6.0e-13 forward, <= 5.9e-13 backward-data, <= 9.3e-13
 *    backward-filter over these shapes, against <= 1.2e-12 / 1.7e-13 / 1.4e-12 for im2col:
 *    the same 1e-7 holds with five orders of magnitude to spare (per shape: docs/measurements/winograd.md).
 *    The Vulkan Winograd shaders (vk_ops_conv_winograd.c), measured on lavapipe 2026-11-23
 *    (ops_vulkan_winograd): <= 6.1e-13 forward, <= 5.9e-13 backward-data, <= 9.2e-13
 *    backward-filter. Winograd F(4x4,3x3) (OpenCL, DBK_FORCE_CONV=winograd4; transform
 *    entries up to 8 and fractions 1/6, 1/24), measured on PoCL 2026-11-24
 *    (ops_opencl_winograd4): <= 2.6e-11 forward, <= 2.7e-11 backward-data, <= 9.1e-12
 *    backward-filter, 10-50x F(2x2,3x3)'s and still four orders of magnitude inside 1e-7. The
 *    OpenCL "direct" kernels (ocl_ops_conv_direct.c, DBK_FORCE_CONV=direct), measured on PoCL
 *    2026-11-24 (ops_opencl_direct): <= 1.2e-12 forward, <= 1.4e-12 backward-data, <= 1.5e-13
 *    backward-filter (its G partial sums per group of images).
 *  - batchnorm fwd train: 1e-7 (per-channel reductions over N*H*W up to 8192 values; a
 *    one-pass E[x^2]-E[x]^2 variance loses a few bits to cancellation).
 *  - batchnorm bwd: 1e-6 (two reductions, then dy - mean(dy) - xhat*mean(dy*xhat), a
 *    difference of nearly equal terms).
 *  - batchnorm fwd infer: 1e-9 (elementwise; rsqrt may differ by an ulp or two).
 *  - batchnorm fused with ReLU, fwd train / bwd: as the plain ops (1e-7, 1e-6): the clamp
 *    and the mask are exact, so only the batch norm's own rounding differs. The same for the
 *    fusion with the residual add: the add is one rounding, and the backward's recomputed
 *    mask is the same float expression on every backend (no contraction).
 *  - softmax xent fwd: 1e-8 (exp/log may differ by a few ulp; loss_sum sums N rows).
 *  - softmax xent bwd: 1e-9 (elementwise difference probs - target).
 *  - SGD, AdamW: 1e-10 (elementwise; fused multiply-add contraction may move the last bit,
 *    AdamW's sqrt and division an ulp).
 *  - relu, maxpool, add, scale, fill, copy: 1e-10, i.e. exact up to a contraction or
 *    accumulation-order difference in an ulp (max-pool backward sums overlapping windows).
 *  - gelu fwd / bwd: 1e-9 (elementwise erf and exp: the device kernels' own erf, the fit
 *    of shaders/common/erf.glsl (cl/eltwise.cl has the same coefficients, branch-free),
 *    relative error <= 1.7e-7; measured <= 3e-13 on lavapipe, where 1 + erf cancels in the
 *    negative tail on both sides alike).
 *  - bias_add: 1e-10 (one add; measured bit-exact). lookahead: 1e-10, as SGD.
 *  - channel_sum: 1e-9 (fp32 partial sums and a tree on the device against the CPU's double
 *    sum, up to ~1M values per channel; measured <= 1.5e-14).
 *  - global_avgpool fwd / bwd: 1e-10 (a mean of at most 1024 values in fp32 against the
 *    CPU's double sum; the backward is one division per element).
 *  - leaky_relu fwd / bwd, dropout fwd / bwd: 1e-10 (one multiply per element; dropout's mask
 *    is an integer hash, the same on every backend, so any other mask fails by NMSE ~1).
 *  - accuracy: bit-exact (a count; cases with NaN and infinite logits planted, never correct on
 *    any backend). augment: bit-exact, the device kernels reproduce the
 *    CPU's hash draw and normalise with one multiply and one add, never fused, by the host's
 *    dbk_augment_affine values (no division: a GPU's is not correctly rounded).
 *  - fisher_accumulate: bit-exact (one rounded product or |g|, one rounded add; contraction
 *    off on every backend). sparse_scatter: bit-exact (copies).
 *  - sparse_select, sparse_add, sparse_gather: bit-exact (the selection is integer comparisons
 *    of magnitude bits and copies; the gathering one multiply per pair; the decoding one
 *    unfused multiply and add per pair, contraction off).
 *  - quant_encode, quant_add: bit-exact (core/quant.h: max or fp32 sums in a fixed order,
 *    correctly rounded division and sqrt, a hash draw, unfused multiplies and adds).
 *  - f16 operands of conv fwd / bwd_data / bwd_filter and GEMM (mixed precision): the same
 *    1e-7. Both sides multiply fp16 values, whose products are exact in fp32, and sum in
 *    fp32 (the CPU widens the operands, backends/cpu/amp.c), so only the summation order
 *    differs, as in the f32 cases. On a device without the fp16 path these cases must be
 *    refused (op_harness.c).
 *  - f16 saved inputs (mixed precision): batchnorm_bwd's x, relu_bwd's y; the same tolerances
 *    as in f32 (both sides widen the f16 values exactly); refused where fp16 is missing.
 *  - cast_f32_f16, cast_f16_f32: bit-exact (round to nearest even; widening is exact).
 *  - loss_scale, grad_unscale, amp_update_scale: bit-exact (multiplications by powers of two;
 *    found is 0 or 1; the scaler's counters are small whole numbers).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/op_check_impl.h"
#include "core/half.h"
#include "core/quant.h"

/* ---------------------------------------------------------------------------------- */
/* the table                                                                           */

/* Tentative definitions: a <name>_test that OP_TEST never defines stays all zero (no cases
 * function) instead of being a build error, so the run names the op. */
#define OP_TEST_DECLARE_(E, name, ...) static const dbk_op_cases name##_test;
DBK_OP_LIST(OP_TEST_DECLARE_)
#undef OP_TEST_DECLARE_
#define OP_TEST(name, tol) static const dbk_op_cases name##_test = {name##_cases, tol}

#define OP_TEST_ROW_(E, name, ...) [DBK_OP_##E] = &name##_test,
static const dbk_op_cases *const op_tests[DBK_OP_COUNT] = {DBK_OP_LIST(OP_TEST_ROW_)};
#undef OP_TEST_ROW_

const dbk_op_cases *dbk_op_cases_of(dbk_op op) {
    return (int)op >= 0 && op < DBK_OP_COUNT && op_tests[op]->cases ? op_tests[op] : NULL;
}

/* ---------------------------------------------------------------------------------- */
/* building a case                                                                     */

static tcase *case_new(dbk_op_checker *ck, dbk_op op, const char *fmt, ...) {
    tcase *c = dbk_op_check_alloc(sizeof *c);
    memset(c, 0, sizeof *c);
    c->ck = ck;
    c->desc.op = op;
    for (int s = 0; s < NSLOT; s++) c->slots[s].alias_of = -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->shape, sizeof c->shape, fmt, ap);
    va_end(ap);
    return c;
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
    sl->init = dbk_op_check_alloc((size_t)slot_numel(sl) * dbk_dtype_size(dt));
    return sl->init;
}

static float *uniform_into(dbk_rng *rng, float *h, int64_t n, float lo, float hi) {
    for (int64_t i = 0; i < n; i++) h[i] = lo + (hi - lo) * dbk_rng_uniform(rng);
    return h;
}

/* An f32 slot of uniform values in [lo, hi). */
static float *set_uniform(tcase *c, int s, role r, float lo, float hi, int ndim, int64_t d0, int64_t d1, int64_t d2,
                          int64_t d3) {
    float *h = set_slot(c, s, r, DBK_DTYPE_F32, ndim, d0, d1, d2, d3);
    return uniform_into(&c->ck->rng, h, slot_numel(&c->slots[s]), lo, hi);
}

/* An f16 slot of uniform values in [lo, hi), rounded to fp16 (core/half.h). */
static void set_uniform_f16(tcase *c, int s, float lo, float hi, int ndim, int64_t d0, int64_t d1, int64_t d2,
                            int64_t d3) {
    uint16_t *h = set_slot(c, s, ROLE_IN, DBK_DTYPE_F16, ndim, d0, d1, d2, d3);
    for (int64_t i = 0; i < slot_numel(&c->slots[s]); i++) h[i] = dbk_f32_to_f16(lo + (hi - lo) * dbk_rng_uniform(&c->ck->rng));
}

/* Rounds an f32 input slot to f16 in place (mixed precision's saved copies): element i is
 * written at bytes [2i, 2i+2), inside f32 element i/2, which was read already; the buffer
 * keeps its f32 size. */
static void narrow_to_f16(tcase *c, int s) {
    slot *sl = &c->slots[s];
    const float *x = (const float *)(void *)sl->init;
    uint16_t *h = (uint16_t *)(void *)sl->init;
    for (int64_t i = 0; i < slot_numel(sl); i++) h[i] = dbk_f32_to_f16(x[i]);
    sl->dtype = DBK_DTYPE_F16;
}

/* An f32 slot of small integers 0..levels-1, so maxima tie often (tie-breaking rules). */
static void set_levels(tcase *c, int s, int levels, int ndim, int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    float *h = set_slot(c, s, ROLE_IN, DBK_DTYPE_F32, ndim, d0, d1, d2, d3);
    for (int64_t i = 0; i < slot_numel(&c->slots[s]); i++) h[i] = (float)dbk_rng_below(&c->ck->rng, (uint32_t)levels);
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
    for (int64_t i = 0; i < n; i++) h[i] = (int32_t)dbk_rng_below(&c->ck->rng, (uint32_t)k);
    if (out_of_range && n > 1) h[1] = -1;
    if (out_of_range && n > 3) h[3] = k;
}

/* Slot s is the same tensor as slot target (in place); target is then compared as output. */
static void set_alias(tcase *c, int s, int target) {
    c->slots[s].alias_of = target;
    c->slots[target].role = ROLE_INOUT;
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
    /* ResNet-18/50 (models/resnet.c) at their channel counts, small spatial sizes */
    {2, 64, 14, 14, 128, 1, 1, 2, 2, 0, 0, "ResNet18 layer2.0.downsample: strided 1x1 projection"},
    {1, 512, 8, 8, 1024, 1, 1, 2, 2, 0, 0, "ResNet50 layer3.0.downsample: strided 1x1, 512->1024"},
    {2, 128, 9, 9, 128, 3, 3, 2, 2, 1, 1, "ResNet50 layer2.0.conv2: v1.5 strided 3x3, odd size"},
    {2, 256, 7, 7, 64, 1, 1, 1, 1, 0, 0, "ResNet50 bottleneck conv1: 1x1 reduction"},
    {3, 512, 1, 1, 10, 1, 1, 1, 1, 0, 0, "ResNet fc as a 1x1 convolution on the pooled features"},
    /* 3x3 stride-1 pad-1 with H != W and the last Winograd tiles cut short: 2 and 3 of 4
     * (F(4x4,3x3)), 0 and 1 of 2 (F(2x2,3x3)) */
    {2, 5, 10, 7, 6, 3, 3, 1, 1, 1, 1, "non-square, partial Winograd tiles"},
    /* a tile count that is not a multiple of 4 (3 x 2 = 6 F(4x4,3x3) tiles): the OpenCL F(4x4)
     * kernels' last work-item has fewer than four tiles; 9 and 5 channels, not multiples of 4 */
    {1, 9, 9, 5, 5, 3, 3, 1, 1, 1, 1, "6 Winograd 4x4 tiles, odd channel counts"},
    /* airbench94's first block: rows of 8 F(4x4,3x3) tiles, the second four of a row cut at
     * column 31 (the OpenCL input transform's masked 16-column rows) */
    {2, 5, 31, 31, 6, 3, 3, 1, 1, 1, 1, "31x31, a row of tiles cut short"},
    /* airbench94's 7x7 layers: 2 x 2 F(4x4,3x3) tiles per image, so the OpenCL input
     * transform's 16 tiles are four images (the first 16 here), then a partial panel of one */
    {5, 6, 7, 7, 4, 3, 3, 1, 1, 1, 1, "7x7, four images per 16 Winograd tiles, then one"},
    {1, 3, 64, 64, 8, 7, 7, 2, 2, 3, 3, "ResNet stem 7x7/2, Q = 32: OpenCL's packed stride-2 vector path"},
    {2, 16, 8, 8, 24, 1, 1, 1, 1, 0, 0, "1x1, P*Q = 64 (whole panels): OpenCL's GEMM stores into dx's layout"},
    {1, 32, 16, 16, 48, 1, 1, 1, 1, 0, 0, "1x1, one image: OpenCL's GEMMs read x and write dx in place"},
    /* fewer than 16 col rows (C*R*S): OpenCL's one-launch narrow forward (conv_narrow_fwd) */
    {2, 3, 32, 32, 24, 2, 2, 1, 1, 0, 0, "airbench94 whitening 2x2, 12 col rows"},
    {2, 2, 9, 8, 5, 2, 3, 2, 1, 1, 0, "12 col rows, strided and padded"},
};

/* An operand of a GEMM-shaped case: f32, or f16 in the mixed-precision cases. */
static void set_operand(tcase *c, int s, bool f16, int ndim, int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    if (f16) set_uniform_f16(c, s, -1.0f, 1.0f, ndim, d0, d1, d2, d3);
    else set_uniform(c, s, ROLE_IN, -1.0f, 1.0f, ndim, d0, d1, d2, d3);
}

/* The shapes that also run with f16 operands: the small ones and one ResNet9 layer (the
 * f16 shader variants share their indexing with the f32 ones, checked on every shape). */
static bool conv_f16_shape(size_t i) { return i < 10 || i == 12; }

static void conv_cases(dbk_op_checker *ck, dbk_op op) {
    for (int f16 = 0; f16 < 2; f16++)
    for (size_t i = 0; i < sizeof conv_shapes / sizeof conv_shapes[0]; i++) {
        if (f16 && !conv_f16_shape(i)) continue;
        const conv_shape *v = &conv_shapes[i];
        const int64_t P = (v->h + 2 * v->ph - v->r) / v->sh + 1, Q = (v->w + 2 * v->pw - v->s) / v->sw + 1;
        tcase *c = case_new(ck, op, "%sN%d C%d %dx%d K%d %dx%d s%dx%d p%dx%d %s", f16 ? "f16 " : "", v->n, v->c, v->h,
                            v->w, v->k, v->r, v->s, v->sh, v->sw, v->ph, v->pw, v->note);
        c->desc.p.conv = (dbk_conv2d_params){v->sh, v->sw, v->ph, v->pw};
        /* x (N,C,H,W), w (K,C,R,S), y and dy (N,K,P,Q) */
        if (op == DBK_OP_CONV2D_FWD) {
            set_operand(c, SRC(0), f16, 4, v->n, v->c, v->h, v->w);
            set_operand(c, SRC(1), f16, 4, v->k, v->c, v->r, v->s);
            set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, 4, v->n, v->k, P, Q);
        } else if (op == DBK_OP_CONV2D_BWD_DATA) {
            set_operand(c, SRC(0), f16, 4, v->n, v->k, P, Q);
            set_operand(c, SRC(1), f16, 4, v->k, v->c, v->r, v->s);
            set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, 4, v->n, v->c, v->h, v->w);
        } else {
            set_operand(c, SRC(0), f16, 4, v->n, v->c, v->h, v->w);
            set_operand(c, SRC(1), f16, 4, v->n, v->k, P, Q);
            set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, 4, v->k, v->c, v->r, v->s);
        }
        dbk_op_check_case(c);
    }
}

static void conv2d_fwd_cases(dbk_op_checker *ck) { conv_cases(ck, DBK_OP_CONV2D_FWD); }
OP_TEST(conv2d_fwd, 1e-7);
static void conv2d_bwd_data_cases(dbk_op_checker *ck) { conv_cases(ck, DBK_OP_CONV2D_BWD_DATA); }
OP_TEST(conv2d_bwd_data, 1e-7);
static void conv2d_bwd_filter_cases(dbk_op_checker *ck) { conv_cases(ck, DBK_OP_CONV2D_BWD_FILTER); }
OP_TEST(conv2d_bwd_filter, 1e-7);

/* ---------------------------------------------------------------------------------- */
/* GEMM                                                                                */

static void gemm_cases(dbk_op_checker *ck) {
    /* M, N, K; the last two are the ResNet9 classifier (batch 256, 512 -> 10, forward and
     * the data gradient). */
    static const int sizes[][3] = {{1, 1, 1},      {1, 17, 65},   {17, 1, 100},  {65, 100, 17},
                                   {100, 129, 65}, {129, 65, 129}, {256, 10, 512}, {256, 512, 10}};
    /* f16 operands (mixed precision) on sizes 0, 3, 6: one element, odd sizes, the classifier */
    for (int f16 = 0; f16 < 2; f16++)
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (int t = 0; t < 4; t++)
            for (int b = 0; b < 2; b++) {
                if (f16 && i % 3) continue;
                const int m = sizes[i][0], n = sizes[i][1], k = sizes[i][2];
                const bool ta = t & 1, tb = t & 2;
                const float alpha = b ? 0.5f : 1.0f, beta = b ? 0.75f : 0.0f;
                tcase *c = case_new(ck, DBK_OP_GEMM, "%sM%d N%d K%d %s %s alpha %.2g beta %.2g", f16 ? "f16 " : "", m, n,
                                    k, ta ? "A^T" : "A", tb ? "B^T" : "B", (double)alpha, (double)beta);
                c->desc.p.gemm = (dbk_gemm_params){ta, tb, alpha, beta};
                /* A (M,K) or (K,M), B (K,N) or (N,K), C (M,N): not read when beta = 0 */
                set_operand(c, SRC(0), f16, 2, ta ? k : m, ta ? m : k, 1, 1);
                set_operand(c, SRC(1), f16, 2, tb ? n : k, tb ? k : n, 1, 1);
                if (b)
                    set_uniform(c, DST(0), ROLE_INOUT, -1.0f, 1.0f, 2, m, n, 1, 1);
                else
                    set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, 2, m, n, 1, 1);
                dbk_op_check_case(c);
            }
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

/* The fused 2x2 max pool's ties: in every third window column the second element of the
 * window's first row repeats the first, so the pooled ops must pick the first of equal
 * maxima as maxpool_fwd does (the odd shapes also leave a last row and column in no window). */
static void tie_pool_windows(float *x, const int *d) {
    for (int64_t pl = 0; pl < (int64_t)d[0] * d[1]; pl++)
        for (int h = 0; h + 1 < d[2]; h += 2)
            for (int w = 0; w + 1 < d[3]; w += 6) x[(pl * d[2] + h) * d[3] + w + 1] = x[(pl * d[2] + h) * d[3] + w];
}

/* The training forward, plain or fused with ReLU (same slots), or with ReLU and the residual
 * add in either order (src3 skip), or with ReLU and the 2x2 max pool (dst0 pooled). */
static void bn_train_cases(dbk_op_checker *ck, dbk_op op) {
    for (size_t i = 0; i < BN_SHAPE_COUNT; i++) {
        const int *d = bn_shapes[i];
        tcase *c = case_new(ck, op, "N%d C%d %dx%d (N*H*W %d)", d[0], d[1], d[2], d[3],
                            d[0] * d[2] * d[3]);
        c->desc.p.bn = (dbk_bn_params){1e-5f, 0.1f};
        const bool pool = op == DBK_OP_BATCHNORM_RELU_POOL_FWD_TRAIN;
        float *x = set_bn_input(c, SRC(0), d);
        if (pool) tie_pool_windows(x, d);
        set_uniform(c, SRC(1), ROLE_IN, 0.5f, 1.5f, 1, d[1], 1, 1, 1);
        set_uniform(c, SRC(2), ROLE_IN, -0.5f, 0.5f, 1, d[1], 1, 1, 1);
        set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, 4, d[0], d[1], pool ? d[2] / 2 : d[2], pool ? d[3] / 2 : d[3]);
        set_slot(c, DST(1), ROLE_OUT, DBK_DTYPE_F32, 1, d[1], 1, 1, 1);
        set_slot(c, DST(2), ROLE_OUT, DBK_DTYPE_F32, 1, d[1], 1, 1, 1);
        set_uniform(c, DST(3), ROLE_INOUT, -0.5f, 0.5f, 1, d[1], 1, 1, 1);
        set_uniform(c, DST(4), ROLE_INOUT, 0.5f, 1.5f, 1, d[1], 1, 1, 1);
        if (op == DBK_OP_BATCHNORM_RELU_ADD_FWD_TRAIN || op == DBK_OP_BATCHNORM_ADD_RELU_FWD_TRAIN)
            set_uniform(c, SRC(3), ROLE_IN, -1.0f, 1.0f, 4, d[0], d[1], d[2], d[3]);
        dbk_op_check_case(c);
    }
}

static void batchnorm_fwd_train_cases(dbk_op_checker *ck) { bn_train_cases(ck, DBK_OP_BATCHNORM_FWD_TRAIN); }
OP_TEST(batchnorm_fwd_train, 1e-7);

static void batchnorm_relu_fwd_train_cases(dbk_op_checker *ck) { bn_train_cases(ck, DBK_OP_BATCHNORM_RELU_FWD_TRAIN); }
OP_TEST(batchnorm_relu_fwd_train, 1e-7);

static void batchnorm_relu_add_fwd_train_cases(dbk_op_checker *ck) {
    bn_train_cases(ck, DBK_OP_BATCHNORM_RELU_ADD_FWD_TRAIN);
}
OP_TEST(batchnorm_relu_add_fwd_train, 1e-7);

static void batchnorm_add_relu_fwd_train_cases(dbk_op_checker *ck) {
    bn_train_cases(ck, DBK_OP_BATCHNORM_ADD_RELU_FWD_TRAIN);
}
OP_TEST(batchnorm_add_relu_fwd_train, 1e-7);

static void batchnorm_relu_pool_fwd_train_cases(dbk_op_checker *ck) {
    bn_train_cases(ck, DBK_OP_BATCHNORM_RELU_POOL_FWD_TRAIN);
}
OP_TEST(batchnorm_relu_pool_fwd_train, 1e-7);

static void batchnorm_fwd_infer_cases(dbk_op_checker *ck) {
    for (size_t i = 0; i < BN_SHAPE_COUNT; i++) {
        const int *d = bn_shapes[i];
        tcase *c = case_new(ck, DBK_OP_BATCHNORM_FWD_INFER, "N%d C%d %dx%d", d[0], d[1], d[2], d[3]);
        c->desc.p.bn = (dbk_bn_params){1e-5f, 0.1f};
        set_bn_input(c, SRC(0), d);
        set_uniform(c, SRC(1), ROLE_IN, 0.5f, 1.5f, 1, d[1], 1, 1, 1);
        set_uniform(c, SRC(2), ROLE_IN, -0.5f, 0.5f, 1, d[1], 1, 1, 1);
        set_uniform(c, SRC(3), ROLE_IN, -1.0f, 2.0f, 1, d[1], 1, 1, 1);
        set_uniform(c, SRC(4), ROLE_IN, 0.2f, 1.5f, 1, d[1], 1, 1, 1);
        set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, 4, d[0], d[1], d[2], d[3]);
        dbk_op_check_case(c);
    }
}
OP_TEST(batchnorm_fwd_infer, 1e-9);

/* The backward, plain or fused with ReLU (src5 y: the fused forward's output, about half of
 * it exact zeros, where dy is masked) or with ReLU and the residual add (src5 beta: the mask
 * is recomputed from x; beta in [-0.5, 0.5] puts the pre-activation's sign change inside
 * every channel), or with ReLU and the 2x2 max pool (the same beta; dy pooled, x with tied
 * windows). f16 (the plain op): x is the f16 copy of the forward
 * input (mixed precision); mean and invstd stay those of the f32 input, as the forward pass
 * saved them. */
static void bn_bwd_cases(dbk_op_checker *ck, dbk_op op) {
    const int f16_variants = op == DBK_OP_BATCHNORM_BWD ? 2 : 1;
    for (int f16 = 0; f16 < f16_variants; f16++)
    for (size_t i = 0; i < BN_SHAPE_COUNT; i++) {
        const int *d = bn_shapes[i];
        tcase *c = case_new(ck, op, "%sN%d C%d %dx%d (N*H*W %d)", f16 ? "f16 x " : "", d[0], d[1], d[2], d[3],
                            d[0] * d[2] * d[3]);
        c->desc.p.bn = (dbk_bn_params){1e-5f, 0.1f};
        const bool pool = op == DBK_OP_BATCHNORM_RELU_POOL_BWD;
        float *x = set_bn_input(c, SRC(0), d);
        if (pool) tie_pool_windows(x, d);
        set_uniform(c, SRC(1), ROLE_IN, -1.0f, 1.0f, 4, d[0], d[1], pool ? d[2] / 2 : d[2], pool ? d[3] / 2 : d[3]);
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
        if (f16) narrow_to_f16(c, SRC(0));
        set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, 4, d[0], d[1], d[2], d[3]);
        set_slot(c, DST(1), ROLE_OUT, DBK_DTYPE_F32, 1, d[1], 1, 1, 1);
        set_slot(c, DST(2), ROLE_OUT, DBK_DTYPE_F32, 1, d[1], 1, 1, 1);
        if (op == DBK_OP_BATCHNORM_RELU_BWD) {
            float *y = set_uniform(c, SRC(5), ROLE_IN, -1.0f, 1.0f, 4, d[0], d[1], d[2], d[3]);
            for (int64_t e = 0; e < m * d[1]; e++) y[e] = y[e] < 0.0f ? 0.0f : y[e];
        }
        if (op == DBK_OP_BATCHNORM_RELU_ADD_BWD || pool) set_uniform(c, SRC(5), ROLE_IN, -0.5f, 0.5f, 1, d[1], 1, 1, 1);
        dbk_op_check_case(c);
    }
}

static void batchnorm_bwd_cases(dbk_op_checker *ck) { bn_bwd_cases(ck, DBK_OP_BATCHNORM_BWD); }
OP_TEST(batchnorm_bwd, 1e-6);

static void batchnorm_relu_bwd_cases(dbk_op_checker *ck) { bn_bwd_cases(ck, DBK_OP_BATCHNORM_RELU_BWD); }
OP_TEST(batchnorm_relu_bwd, 1e-6);

static void batchnorm_relu_add_bwd_cases(dbk_op_checker *ck) { bn_bwd_cases(ck, DBK_OP_BATCHNORM_RELU_ADD_BWD); }
OP_TEST(batchnorm_relu_add_bwd, 1e-6);

static void batchnorm_relu_pool_bwd_cases(dbk_op_checker *ck) { bn_bwd_cases(ck, DBK_OP_BATCHNORM_RELU_POOL_BWD); }
OP_TEST(batchnorm_relu_pool_bwd, 1e-6);

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

static void relu_fwd_cases(dbk_op_checker *ck) {
    char sh[64];
    for (int in_place = 0; in_place < 2; in_place++)
        for (int i = 0; i < (int)EW_SHAPE_COUNT; i++) {
            tcase *c = case_new(ck, DBK_OP_RELU_FWD, "%s%s", ew_summary(i, sh, sizeof sh), in_place ? " in place (y = x)" : "");
            set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, EW(i));
            set_ew_output(c, i, in_place ? SRC(0) : -1);
            dbk_op_check_case(c);
        }
}
OP_TEST(relu_fwd, 1e-10);

/* f16: y is the f16 copy of the forward output (mixed precision). */
static void relu_bwd_cases(dbk_op_checker *ck) {
    char sh[64];
    for (int f16 = 0; f16 < 2; f16++)
    for (int in_place = 0; in_place < 2; in_place++)
        for (int i = 0; i < (int)EW_SHAPE_COUNT; i++) {
            tcase *c = case_new(ck, DBK_OP_RELU_BWD, "%s%s%s", f16 ? "f16 y " : "", ew_summary(i, sh, sizeof sh),
                                in_place ? " in place (dx = dy)" : "");
            /* y is a forward output: half of it exactly zero; some of the f16 copy's positive
             * values are subnormal (the mask must follow them, not flush them) */
            float *y = set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, EW(i));
            for (int64_t k = 0; k < slot_numel(&c->slots[SRC(0)]); k++)
                y[k] = y[k] > 0.0f ? (k % 7 == 3 ? y[k] * 0x1p-16f : y[k]) : 0.0f;
            if (f16) narrow_to_f16(c, SRC(0));
            set_uniform(c, SRC(1), ROLE_IN, -1.0f, 1.0f, EW(i));
            set_ew_output(c, i, in_place ? SRC(1) : -1);
            dbk_op_check_case(c);
        }
}
OP_TEST(relu_bwd, 1e-10);

/* DarkNet's slope 0.1, and 0.01 (PyTorch's default). */
static void leaky_relu_fwd_cases(dbk_op_checker *ck) {
    char sh[64];
    for (int in_place = 0; in_place < 2; in_place++)
        for (int i = 0; i < (int)EW_SHAPE_COUNT; i++) {
            const float slope = in_place ? 0.01f : 0.1f;
            tcase *c = case_new(ck, DBK_OP_LEAKY_RELU_FWD, "%s slope %g%s", ew_summary(i, sh, sizeof sh), (double)slope,
                                in_place ? " in place (y = x)" : "");
            c->desc.p.leaky.slope = slope;
            set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, EW(i));
            set_ew_output(c, i, in_place ? SRC(0) : -1);
            dbk_op_check_case(c);
        }
}
OP_TEST(leaky_relu_fwd, 1e-10);

static void leaky_relu_bwd_cases(dbk_op_checker *ck) {
    char sh[64];
    for (int in_place = 0; in_place < 2; in_place++)
        for (int i = 0; i < (int)EW_SHAPE_COUNT; i++) {
            tcase *c = case_new(ck, DBK_OP_LEAKY_RELU_BWD, "%s slope 0.1%s", ew_summary(i, sh, sizeof sh),
                                in_place ? " in place (dx = dy)" : "");
            c->desc.p.leaky.slope = 0.1f;
            /* y is a forward output: negatives scaled by the slope, a few exact zeros */
            float *y = set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, EW(i));
            for (int64_t k = 0; k < slot_numel(&c->slots[SRC(0)]); k++) y[k] = k % 7 == 3 ? 0.0f : y[k] > 0.0f ? y[k] : 0.1f * y[k];
            set_uniform(c, SRC(1), ROLE_IN, -1.0f, 1.0f, EW(i));
            set_ew_output(c, i, in_place ? SRC(1) : -1);
            dbk_op_check_case(c);
        }
}
OP_TEST(leaky_relu_bwd, 1e-10);

static void add_cases(dbk_op_checker *ck) {
    char sh[64];
    static const char *modes[3] = {"", " y aliases a", " y aliases b"};
    for (int mode = 0; mode < 3; mode++)
        for (int i = 0; i < (int)EW_SHAPE_COUNT; i++) {
            tcase *c = case_new(ck, DBK_OP_ADD, "%s%s", ew_summary(i, sh, sizeof sh), modes[mode]);
            set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, EW(i));
            set_uniform(c, SRC(1), ROLE_IN, -1.0f, 1.0f, EW(i));
            set_ew_output(c, i, mode == 0 ? -1 : mode == 1 ? SRC(0) : SRC(1));
            dbk_op_check_case(c);
        }
}
OP_TEST(add, 1e-10);

static void scale_cases(dbk_op_checker *ck) {
    char sh[64];
    for (int in_place = 0; in_place < 2; in_place++)
        for (int i = 0; i < (int)EW_SHAPE_COUNT; i++) {
            const float alpha = in_place ? -3.0f : 0.125f;
            tcase *c = case_new(ck, DBK_OP_SCALE, "%s alpha %g%s", ew_summary(i, sh, sizeof sh), (double)alpha,
                                in_place ? " in place" : "");
            c->desc.p.scale.alpha = alpha;
            set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, EW(i));
            set_ew_output(c, i, in_place ? SRC(0) : -1);
            dbk_op_check_case(c);
        }
}
OP_TEST(scale, 1e-10);

static void fill_cases(dbk_op_checker *ck) {
    static const float values[] = {-2.5f, 0.0f, 3.0f, 1e-3f};
    char sh[64];
    for (int i = 0; i < (int)EW_SHAPE_COUNT; i++) {
        tcase *c = case_new(ck, DBK_OP_FILL, "%s value %g", ew_summary(i, sh, sizeof sh), (double)values[i % 4]);
        c->desc.p.fill.value = values[i % 4];
        set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, EW(i));
        dbk_op_check_case(c);
    }
}
OP_TEST(fill, 1e-10);

static void copy_cases(dbk_op_checker *ck) {
    char sh[64];
    for (int i = 0; i < (int)EW_SHAPE_COUNT; i++) {
        tcase *c = case_new(ck, DBK_OP_COPY, "f32 %s", ew_summary(i, sh, sizeof sh));
        set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, EW(i));
        set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, EW(i));
        dbk_op_check_case(c);
    }
    /* f32 (2,3,4,4) into a flat (96): only the element counts must agree */
    tcase *c = case_new(ck, DBK_OP_COPY, "f32 (2,3,4,4) -> (96)");
    set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, 4, 2, 3, 4, 4);
    set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, 1, 96, 1, 1, 1);
    dbk_op_check_case(c);
    /* i32 and u8 (odd byte counts: a kernel writing whole words past the end hits the guard) */
    static const int64_t counts[] = {1, 1001};
    for (int dt = 0; dt < 2; dt++)
        for (int i = 0; i < 2; i++) {
            const dbk_dtype type = dt ? DBK_DTYPE_U8 : DBK_DTYPE_I32;
            c = case_new(ck, DBK_OP_COPY, "%s (%lld)", dbk_dtype_name(type), (long long)counts[i]);
            unsigned char *h = set_slot(c, SRC(0), ROLE_IN, type, 1, counts[i], 1, 1, 1);
            for (size_t k = 0; k < (size_t)counts[i] * dbk_dtype_size(type); k++) h[k] = (unsigned char)dbk_rng_u32(&c->ck->rng);
            set_slot(c, DST(0), ROLE_OUT, type, 1, counts[i], 1, 1, 1);
            dbk_op_check_case(c);
        }
}
OP_TEST(copy, 1e-10);

/* ---------------------------------------------------------------------------------- */
/* max pool                                                                            */

typedef struct pool_shape {
    int n, c, h, w, r, s, sh, sw;
    int levels;          /* > 0: inputs are integers 0..levels-1, so maxima tie */
    const char *note;
    int ph, pw;          /* padding (-inf) */
    bool negative;       /* inputs in [-2, -1): a zero border would win */
} pool_shape;

static const pool_shape pool_shapes[] = {
    {2, 3, 8, 8, 2, 2, 2, 2, 0, "2x2 stride 2", 0, 0, false},
    {1, 5, 13, 13, 2, 2, 2, 2, 0, "2x2 stride 2, odd size", 0, 0, false},
    {2, 4, 13, 13, 3, 3, 2, 2, 0, "3x3 stride 2, overlapping", 0, 0, false},
    {2, 10, 4, 4, 4, 4, 1, 1, 0, "global 4x4", 0, 0, false},
    {3, 7, 7, 5, 7, 5, 1, 1, 0, "global 7x5", 0, 0, false},
    {2, 32, 32, 32, 2, 2, 2, 2, 0, "ResNet9-quarter layer1", 0, 0, false},
    {4, 128, 4, 4, 4, 4, 4, 4, 0, "ResNet9-quarter global", 0, 0, false},
    {2, 6, 8, 8, 2, 2, 2, 2, 3, "2x2 stride 2, ties", 0, 0, false},
    {1, 3, 9, 9, 3, 3, 2, 2, 2, "3x3 stride 2, overlapping, ties", 0, 0, false},
    {2, 5, 6, 6, 6, 6, 1, 1, 2, "global 6x6, ties", 0, 0, false},
    {2, 3, 12, 12, 3, 3, 2, 2, 0, "3x3 stride 2 pad 1 (ResNet stem)", 1, 1, false},
    {1, 4, 13, 11, 3, 3, 2, 2, 0, "3x3 stride 2 pad 1, odd sizes, negative inputs", 1, 1, true},
    {2, 3, 7, 7, 3, 3, 2, 2, 2, "3x3 stride 2 pad 1, ties", 1, 1, false},
    {1, 2, 6, 9, 2, 4, 1, 3, 0, "2x4 stride 1x3 pad 1x2, negative inputs", 1, 2, true},
    {2, 8, 56, 56, 3, 3, 2, 2, 0, "3x3 stride 2 pad 1, 56x56 (the ResNet stem at 112 px)", 1, 1, false},
    /* airbench94's odd planes: 31 -> 15 (a row's last group of 7 outputs reads past the row,
     * inside the plane), 15 -> 7, 7 -> 3 (one row per work-item: that read would leave the
     * plane), and 30x31 (even rows: it would too) */
    {2, 4, 31, 31, 2, 2, 2, 2, 0, "2x2 stride 2, 31x31 (airbench94 block1)", 0, 0, false},
    {2, 4, 31, 31, 2, 2, 2, 2, 3, "2x2 stride 2, 31x31, ties", 0, 0, false},
    {3, 5, 15, 15, 2, 2, 2, 2, 0, "2x2 stride 2, 15x15 (airbench94 block2)", 0, 0, true},
    {2, 4, 7, 7, 2, 2, 2, 2, 0, "2x2 stride 2, 7x7 (airbench94 block3)", 0, 0, false},
    {2, 3, 30, 31, 2, 2, 2, 2, 0, "2x2 stride 2, 30x31", 0, 0, false},
};

static void maxpool_cases(dbk_op_checker *ck, dbk_op op) {
    for (size_t i = 0; i < sizeof pool_shapes / sizeof pool_shapes[0]; i++) {
        const pool_shape *v = &pool_shapes[i];
        if (op == DBK_OP_MAXPOOL_BWD && v->levels) continue;   /* ties matter to the forward only */
        const int P = (v->h + 2 * v->ph - v->r) / v->sh + 1, Q = (v->w + 2 * v->pw - v->s) / v->sw + 1;
        tcase *c = case_new(ck, op, "N%d C%d %dx%d window %dx%d stride %dx%d pad %dx%d %s", v->n, v->c, v->h, v->w,
                            v->r, v->s, v->sh, v->sw, v->ph, v->pw, v->note);
        c->desc.p.pool = (dbk_pool_params){v->r, v->s, v->sh, v->sw, v->ph, v->pw};
        if (op == DBK_OP_MAXPOOL_FWD) {
            /* x (N,C,H,W) -> y, argmax (N,C,P,Q) */
            if (v->levels)
                set_levels(c, SRC(0), v->levels, 4, v->n, v->c, v->h, v->w);
            else
                set_uniform(c, SRC(0), ROLE_IN, v->negative ? -2.0f : -1.0f, v->negative ? -1.0f : 1.0f, 4, v->n,
                            v->c, v->h, v->w);
            set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, 4, v->n, v->c, P, Q);
            set_slot(c, DST(1), ROLE_OUT, DBK_DTYPE_I32, 4, v->n, v->c, P, Q);
        } else {
            /* dy, argmax (N,C,P,Q) -> dx (N,C,H,W); argmax a random cell of each window */
            set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, 4, v->n, v->c, P, Q);
            int32_t *arg = set_slot(c, SRC(1), ROLE_IN, DBK_DTYPE_I32, 4, v->n, v->c, P, Q);
            for (int64_t plane = 0; plane < (int64_t)v->n * v->c; plane++)
                for (int p = 0; p < P; p++)
                    for (int q = 0; q < Q; q++) {
                        /* a random cell of the window inside x (the padding never wins) */
                        const int y0 = p * v->sh - v->ph, x0 = q * v->sw - v->pw;
                        const int y_lo = y0 < 0 ? 0 : y0, y_hi = y0 + v->r > v->h ? v->h : y0 + v->r;
                        const int x_lo = x0 < 0 ? 0 : x0, x_hi = x0 + v->s > v->w ? v->w : x0 + v->s;
                        const int y = y_lo + (int)dbk_rng_below(&c->ck->rng, (uint32_t)(y_hi - y_lo));
                        const int x = x_lo + (int)dbk_rng_below(&c->ck->rng, (uint32_t)(x_hi - x_lo));
                        arg[(plane * P + p) * Q + q] = y * v->w + x;
                    }
            set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, 4, v->n, v->c, v->h, v->w);
        }
        dbk_op_check_case(c);
    }
}

static void maxpool_fwd_cases(dbk_op_checker *ck) { maxpool_cases(ck, DBK_OP_MAXPOOL_FWD); }
OP_TEST(maxpool_fwd, 1e-10);
static void maxpool_bwd_cases(dbk_op_checker *ck) { maxpool_cases(ck, DBK_OP_MAXPOOL_BWD); }
OP_TEST(maxpool_bwd, 1e-10);

/* Global average pool, (N,C,H,W) <-> (N,C,1,1): odd planes, batch 1, a 1x1 plane, 7x7 (ResNet
 * at 224), ResNet-18's last CIFAR layer (512 channels at 4x4), DarkNet's 1024 channels, and
 * a 32x32 plane (wider than a work-group of 256, so the tree gets several values per lane). */
static const int gap_shapes[][4] = {{2, 3, 7, 5}, {1, 5, 13, 13}, {3, 17, 1, 1}, {4, 64, 7, 7},
                                    {8, 512, 4, 4}, {2, 1024, 2, 2}, {2, 6, 32, 32}};

static void global_avgpool_cases(dbk_op_checker *ck, dbk_op op) {
    for (size_t i = 0; i < sizeof gap_shapes / sizeof gap_shapes[0]; i++) {
        const int *d = gap_shapes[i];
        tcase *c = case_new(ck, op, "N%d C%d %dx%d", d[0], d[1], d[2], d[3]);
        if (op == DBK_OP_GLOBAL_AVGPOOL_FWD) {
            /* x (N,C,H,W) -> y (N,C,1,1), x around a per-channel mean (sums far from zero) */
            set_bn_input(c, SRC(0), d);
            set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, 4, d[0], d[1], 1, 1);
        } else {
            /* dy (N,C,1,1) -> dx (N,C,H,W) */
            set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, 4, d[0], d[1], 1, 1);
            set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, 4, d[0], d[1], d[2], d[3]);
        }
        dbk_op_check_case(c);
    }
}

static void global_avgpool_fwd_cases(dbk_op_checker *ck) { global_avgpool_cases(ck, DBK_OP_GLOBAL_AVGPOOL_FWD); }
OP_TEST(global_avgpool_fwd, 1e-10);
static void global_avgpool_bwd_cases(dbk_op_checker *ck) { global_avgpool_cases(ck, DBK_OP_GLOBAL_AVGPOOL_BWD); }
OP_TEST(global_avgpool_bwd, 1e-10);

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

static void softmax_xent_fwd_cases(dbk_op_checker *ck) {
    for (size_t i = 0; i < XENT_SHAPE_COUNT; i++) {
        const xent_shape *v = &xent_shapes[i];
        tcase *c = case_new(ck, DBK_OP_SOFTMAX_XENT_FWD, "N%d K%d smoothing %.1f %s, loss_sum += from 3.5", v->n, v->k,
                            (double)v->smoothing, v->note);
        c->desc.p.xent = (dbk_xent_params){v->smoothing, 1.0f};
        /* logits (N,K), labels (N) -> probs (N,K), loss_sum (1) accumulated */
        set_uniform(c, SRC(0), ROLE_IN, -4.0f, 4.0f, 2, v->n, v->k, 1, 1);
        set_labels(c, SRC(1), v->n, v->k, v->out_of_range);
        set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, 2, v->n, v->k, 1, 1);
        set_scalar(c, DST(1), ROLE_INOUT, 3.5f);
        dbk_op_check_case(c);
    }
}
OP_TEST(softmax_xent_fwd, 1e-8);

static void softmax_xent_bwd_cases(dbk_op_checker *ck) {
    for (size_t i = 0; i < XENT_SHAPE_COUNT; i++) {
        const xent_shape *v = &xent_shapes[i];
        const float grad_scale = i % 2 ? 1.0f / (float)v->n : 1.0f;
        tcase *c = case_new(ck, DBK_OP_SOFTMAX_XENT_BWD, "N%d K%d smoothing %.1f grad_scale %.3g %s", v->n, v->k,
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
        dbk_op_check_case(c);
    }
}
OP_TEST(softmax_xent_bwd, 1e-9);

static void accuracy_cases(dbk_op_checker *ck) {
    /* k 0 (a zeroed descriptor: top-1), 1 and 5 (ImageNet's top-5), each with tied logits
     * (three levels: ties at the k-th place are decided by class index) and without */
    static const int32_t ks[] = {0, 1, 5};
    for (size_t t = 0; t < sizeof ks / sizeof ks[0]; t++)
        for (size_t i = 0; i < XENT_SHAPE_COUNT; i++) {
            const xent_shape *v = &xent_shapes[i];
            const bool ties = (i + t) % 2 == 0;
            tcase *c = case_new(ck, DBK_OP_ACCURACY, "N%d K%d k %d %s%s, correct += from 5", v->n, v->k, (int)ks[t],
                                v->note, ties ? ", tied logits" : "");
            c->desc.p.accuracy.k = ks[t];
            /* logits (N,K), labels (N) -> correct (1) accumulated */
            if (ties)
                set_levels(c, SRC(0), 3, 2, v->n, v->k, 1, 1);
            else
                set_uniform(c, SRC(0), ROLE_IN, -4.0f, 4.0f, 2, v->n, v->k, 1, 1);
            set_labels(c, SRC(1), v->n, v->k, v->out_of_range);
            set_scalar(c, DST(0), ROLE_INOUT, 5.0f);
            dbk_op_check_case(c);
        }
    /* Non-finite logits planted in most rows (a model whose logits overflow or turn NaN, e.g.
     * from NaN batch-norm statistics at evaluation): such a row is never correct, and every row
     * planted here would count as correct under a rank made of '>' alone. */
    for (size_t t = 1; t < sizeof ks / sizeof ks[0]; t++) {
        static const int planted_k[] = {10, 1000};
        for (size_t i = 0; i < sizeof planted_k / sizeof planted_k[0]; i++) {
            const int n = 64, k = planted_k[i];
            tcase *c = case_new(ck, DBK_OP_ACCURACY, "N%d K%d k %d, NaN and infinite logits planted, correct += from 5",
                                n, k, (int)ks[t]);
            c->desc.p.accuracy.k = ks[t];
            float *z = set_uniform(c, SRC(0), ROLE_IN, -4.0f, 4.0f, 2, n, k, 1, 1);
            set_labels(c, SRC(1), n, k, true);
            const int32_t *labels = (const int32_t *)(const void *)c->slots[SRC(1)].init;
            for (int r = 0; r < n; r++) {
                float *row = z + (int64_t)r * k;
                const int32_t y = labels[r];
                if (y < 0 || y >= k) continue;
                const int other = (y + 1) % k;
                switch (r % 6) {
                case 0: row[y] = NAN; break;                                   /* NaN at the label */
                case 1: row[y] = 100.0f; row[other] = NAN; break;              /* NaN elsewhere */
                case 2: row[y] = INFINITY; break;                              /* overflow at the label */
                case 3: row[y] = 100.0f; row[other] = -INFINITY; break;        /* -inf elsewhere */
                case 4: for (int j = 0; j < k; j++) row[j] = NAN; break;       /* all NaN */
                default: row[y] = 100.0f; break;                               /* finite: correct */
                }
            }
            set_scalar(c, DST(0), ROLE_INOUT, 5.0f);
            dbk_op_check_case(c);
        }
    }
}
OP_TEST(accuracy, 0.0);

/* ---------------------------------------------------------------------------------- */
/* optimizer                                                                           */

/* With a mask (sparse masks): half the elements 0, which must come back exactly as they went
 * in (an update that ignores the mask moves them by lr * step: NMSE ~1e-5). */
static void sgd_momentum_update_cases(dbk_op_checker *ck) {
    static const int64_t counts[] = {1, 17, 4099, 262147};
    for (int masked = 0; masked < 2; masked++)
    for (int nesterov = 0; nesterov < 2; nesterov++)
        for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
            /* weight decay 5e-4, and 5e-4 * 256 as a summed loss over batch 256 uses */
            const float wd = i % 2 ? 0.128f : 5e-4f;
            tcase *c = case_new(ck, DBK_OP_SGD_MOMENTUM_UPDATE, "n %lld momentum 0.9 wd %g nesterov %s%s",
                                (long long)counts[i], (double)wd, nesterov ? "true" : "false", masked ? " masked" : "");
            c->desc.p.sgd = (dbk_sgd_params){0.9f, wd, nesterov};
            /* grad (n), lr (1), mask (n) or absent -> params (n), momentum (n) in place */
            set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, 1, counts[i], 1, 1, 1);
            set_scalar(c, SRC(1), ROLE_IN, 0.4f / 256.0f);
            if (masked) set_levels(c, SRC(2), 2, 1, counts[i], 1, 1, 1);
            set_uniform(c, DST(0), ROLE_INOUT, -0.5f, 0.5f, 1, counts[i], 1, 1, 1);
            set_uniform(c, DST(1), ROLE_INOUT, -0.1f, 0.1f, 1, counts[i], 1, 1, 1);
            dbk_op_check_case(c);
        }
    /* mixed precision's skip flag: 0 updates as without it, 1 leaves params and momentum */
    for (int skip = 0; skip < 2; skip++) {
        tcase *c = case_new(ck, DBK_OP_SGD_MOMENTUM_UPDATE, "n 4099 nesterov true, skip %d", skip);
        c->desc.p.sgd = (dbk_sgd_params){0.9f, 5e-4f, true};
        set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, 1, 4099, 1, 1, 1);
        set_scalar(c, SRC(1), ROLE_IN, 0.4f / 256.0f);
        set_scalar(c, SRC(3), ROLE_IN, (float)skip);
        set_uniform(c, DST(0), ROLE_INOUT, -0.5f, 0.5f, 1, 4099, 1, 1, 1);
        set_uniform(c, DST(1), ROLE_INOUT, -0.1f, 0.1f, 1, 4099, 1, 1, 1);
        dbk_op_check_case(c);
    }
    /* {lr, momentum}: a scheduled momentum (fastai's 0.95 -> 0.85 cycle) replaces params' 0.9 */
    for (int nesterov = 0; nesterov < 2; nesterov++) {
        tcase *c = case_new(ck, DBK_OP_SGD_MOMENTUM_UPDATE, "n 4099 {lr, momentum 0.87} wd 2e-4 nesterov %s",
                            nesterov ? "true" : "false");
        c->desc.p.sgd = (dbk_sgd_params){0.9f, 2e-4f, nesterov};
        set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, 1, 4099, 1, 1, 1);
        float *step = set_slot(c, SRC(1), ROLE_IN, DBK_DTYPE_F32, 1, 2, 1, 1, 1);
        step[0] = 0.6f;
        step[1] = 0.87f;
        set_uniform(c, DST(0), ROLE_INOUT, -0.5f, 0.5f, 1, 4099, 1, 1, 1);
        set_uniform(c, DST(1), ROLE_INOUT, -0.1f, 0.1f, 1, 4099, 1, 1, 1);
        dbk_op_check_case(c);
    }
}
OP_TEST(sgd_momentum_update, 1e-10);

/* AdamW at the first step (t = 1: m, v zero, the largest bias corrections) and at t = 200 with
 * moments already built up, with and without weight decay (fast.ai's DAWNBench WRN uses
 * betas (0.9, 0.99), PyTorch's default is (0.9, 0.999)). */
static void adamw_update_cases(dbk_op_checker *ck) {
    static const int64_t counts[] = {1, 17, 4099, 262147};
    static const struct { int t; float beta2, wd; } runs[] = {{1, 0.999f, 0.01f}, {200, 0.99f, 0.0f}, {200, 0.999f, 0.1f}};
    for (int masked = 0; masked < 2; masked++)
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++)
        for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
            const int t = runs[r].t;
            const double lr = 3e-3, b1 = 0.9, b2 = runs[r].beta2;
            tcase *c = case_new(ck, DBK_OP_ADAMW_UPDATE, "n %lld t %d betas (0.9, %g) wd %g%s", (long long)counts[i], t,
                                (double)runs[r].beta2, (double)runs[r].wd, masked ? " masked" : "");
            c->desc.p.adamw = (dbk_adamw_params){0.9f, runs[r].beta2, 1e-8f, runs[r].wd};
            /* grad (n), step (3), mask (n) or absent -> params, exp_avg, exp_avg_sq (n) in place */
            if (masked) set_levels(c, SRC(2), 2, 1, counts[i], 1, 1, 1);
            set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, 1, counts[i], 1, 1, 1);
            float *step = set_slot(c, SRC(1), ROLE_IN, DBK_DTYPE_F32, 1, 3, 1, 1, 1);
            step[0] = (float)lr;
            step[1] = (float)(lr / (1.0 - pow(b1, t)));
            step[2] = (float)sqrt(1.0 - pow(b2, t));
            set_uniform(c, DST(0), ROLE_INOUT, -0.5f, 0.5f, 1, counts[i], 1, 1, 1);
            const float mag = t == 1 ? 0.0f : 0.3f;
            set_uniform(c, DST(1), ROLE_INOUT, -mag, mag, 1, counts[i], 1, 1, 1);
            set_uniform(c, DST(2), ROLE_INOUT, 0.0f, mag * mag, 1, counts[i], 1, 1, 1);
            dbk_op_check_case(c);
        }
    for (int skip = 0; skip < 2; skip++) {   /* the skip flag, as SGD's */
        tcase *c = case_new(ck, DBK_OP_ADAMW_UPDATE, "n 4099 t 200, skip %d", skip);
        c->desc.p.adamw = (dbk_adamw_params){0.9f, 0.999f, 1e-8f, 0.1f};
        set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, 1, 4099, 1, 1, 1);
        float *step = set_slot(c, SRC(1), ROLE_IN, DBK_DTYPE_F32, 1, 3, 1, 1, 1);
        step[0] = 3e-3f;
        step[1] = (float)(3e-3 / (1.0 - pow(0.9, 200)));
        step[2] = (float)sqrt(1.0 - pow(0.999, 200));
        set_scalar(c, SRC(3), ROLE_IN, (float)skip);
        set_uniform(c, DST(0), ROLE_INOUT, -0.5f, 0.5f, 1, 4099, 1, 1, 1);
        set_uniform(c, DST(1), ROLE_INOUT, -0.3f, 0.3f, 1, 4099, 1, 1, 1);
        set_uniform(c, DST(2), ROLE_INOUT, 0.0f, 0.09f, 1, 4099, 1, 1, 1);
        dbk_op_check_case(c);
    }
    /* {lr, step_size, bc2_sqrt, beta1}: a scheduled beta1 (fastai's cycled momentum) replaces 0.9 */
    tcase *c = case_new(ck, DBK_OP_ADAMW_UPDATE, "n 4099 t 50 beta1 0.88 in the step values wd 0.1");
    c->desc.p.adamw = (dbk_adamw_params){0.9f, 0.99f, 1e-8f, 0.1f};
    set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, 1, 4099, 1, 1, 1);
    float *step = set_slot(c, SRC(1), ROLE_IN, DBK_DTYPE_F32, 1, 4, 1, 1, 1);
    step[0] = 3e-3f;
    step[1] = (float)(3e-3 / (1.0 - pow(0.88, 50)));
    step[2] = (float)sqrt(1.0 - pow(0.99, 50));
    step[3] = 0.88f;
    set_uniform(c, DST(0), ROLE_INOUT, -0.5f, 0.5f, 1, 4099, 1, 1, 1);
    set_uniform(c, DST(1), ROLE_INOUT, -0.3f, 0.3f, 1, 4099, 1, 1, 1);
    set_uniform(c, DST(2), ROLE_INOUT, 0.0f, 0.09f, 1, 4099, 1, 1, 1);
    dbk_op_check_case(c);
}
OP_TEST(adamw_update, 1e-10);

/* One sample's gradient into the Fisher information, squared and absolute, over the
 * elementwise shapes, onto an accumulator that already holds earlier samples' sums. */
static void fisher_accumulate_cases(dbk_op_checker *ck) {
    char sh[64];
    for (int absolute = 0; absolute < 2; absolute++)
        for (int i = 0; i < (int)EW_SHAPE_COUNT; i++) {
            tcase *c = case_new(ck, DBK_OP_FISHER_ACCUMULATE, "%s %s", ew_summary(i, sh, sizeof sh),
                                absolute ? "absolute" : "square");
            c->desc.p.fisher.absolute = (float)absolute;
            /* g -> acc in place */
            set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, EW(i));
            set_uniform(c, DST(0), ROLE_INOUT, 0.0f, 3.0f, EW(i));
            dbk_op_check_case(c);
        }
}
OP_TEST(fisher_accumulate, 0.0);
/* Muon (airbench94_muon, cifar10-speedrun): momentum, renormalisation / Newton-Schulz scaling,
 * step. Sizes: 1, odd, and the largest filter 256 x 2304 (589,824: one work-group's
 * reduction over all of it). */
static void muon_momentum_cases(dbk_op_checker *ck) {
    static const int64_t counts[] = {1, 4099, 589824};
    for (int nesterov = 0; nesterov < 2; nesterov++)
        for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
            tcase *c = case_new(ck, DBK_OP_MUON_MOMENTUM, "n %lld momentum 0.6 nesterov %s", (long long)counts[i],
                                nesterov ? "true" : "false");
            c->desc.p.muon_momentum = (dbk_muon_momentum_params){0.6f, (float)nesterov};
            /* g (n) -> v (n) in place, u (n) */
            set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, 1, counts[i], 1, 1, 1);
            set_uniform(c, DST(0), ROLE_INOUT, -0.5f, 0.5f, 1, counts[i], 1, 1, 1);
            set_slot(c, DST(1), ROLE_OUT, DBK_DTYPE_F32, 1, counts[i], 1, 1, 1);
            dbk_op_check_case(c);
        }
}
OP_TEST(muon_momentum, 1e-10);

/* The renormalisation p *= sqrt(K) / ||p|| (g 1, eps 0), Newton-Schulz's X / (||X|| + 1e-7),
 * speedrun's X * target / (||X|| + 1e-5) with a target of 0.3, a step that skips (g 0: y = x),
 * in place and not. Tolerance: the devices' fp32 tree of partial sums against the reference's
 * double sum moves the scale by ~1e-7. */
static void norm_scale_cases(dbk_op_checker *ck) {
    static const struct { int64_t n; float alpha, eps, g; bool in_place; } runs[] = {
        {1, 1.0f, 1e-7f, 1.0f, false},        {4099, 8.0f, 0.0f, 1.0f, true},    {4099, 1.0f, 1e-5f, 0.3f, false},
        {4099, 16.0f, 1e-7f, 0.0f, true},     {589824, 16.0f, 0.0f, 1.0f, true}, {589824, 1.0f, 1e-7f, 1.0f, false},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        tcase *c = case_new(ck, DBK_OP_NORM_SCALE, "n %lld alpha %g eps %g g %g%s", (long long)runs[i].n,
                            (double)runs[i].alpha, (double)runs[i].eps, (double)runs[i].g,
                            runs[i].in_place ? " in place" : "");
        c->desc.p.norm_scale = (dbk_norm_scale_params){runs[i].alpha, runs[i].eps};
        /* x (n), g (1) -> y (n) */
        set_uniform(c, SRC(0), ROLE_IN, -0.05f, 0.05f, 1, runs[i].n, 1, 1, 1);
        set_scalar(c, SRC(1), ROLE_IN, runs[i].g);
        if (runs[i].in_place) set_alias(c, DST(0), SRC(0));
        else set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, 1, runs[i].n, 1, 1, 1);
        dbk_op_check_case(c);
    }
}
OP_TEST(norm_scale, 1e-10);

static void muon_update_cases(dbk_op_checker *ck) {
    static const int64_t counts[] = {1, 4099, 589824};
    for (int decay = 0; decay < 2; decay++)
        for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
            /* speedrun's decoupled decay 1.0418e-6 * 1536 */
            const float wd = decay ? 1.0418e-6f * 1536.0f : 0.0f;
            tcase *c = case_new(ck, DBK_OP_MUON_UPDATE, "n %lld lr 0.24 wd %g", (long long)counts[i], (double)wd);
            c->desc.p.muon_update.weight_decay = wd;
            /* x (n), lr (1) -> params (n) in place */
            set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, 1, counts[i], 1, 1, 1);
            set_scalar(c, SRC(1), ROLE_IN, 0.24f);
            set_uniform(c, DST(0), ROLE_INOUT, -0.5f, 0.5f, 1, counts[i], 1, 1, 1);
            dbk_op_check_case(c);
        }
}
OP_TEST(muon_update, 1e-10);

/* Selective TTA (cifar10-speedrun): a batch of logits into the test set's table at its first
 * row or through indices (the TTA'd rows), and the rows of least confidence. */
static void scatter_rows_cases(dbk_op_checker *ck) {
    static const struct { int64_t n, k, m, l; int32_t first; } runs[] = {
        {1, 10, 1, 0, 0}, {2000, 10, 10000, 0, 8000}, {37, 10, 100, 0, 63}, {250, 10, 10000, 2500, 2250},
        {7, 3, 50, 20, 13}};
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        tcase *c = case_new(ck, DBK_OP_SCATTER_ROWS, "N %lld K %lld into M %lld first %d%s", (long long)runs[r].n,
                            (long long)runs[r].k, (long long)runs[r].m, (int)runs[r].first,
                            runs[r].l ? " through indices" : "");
        /* rows (N,K), indices (L), state {first, ...} -> table (M,K) (rows not addressed kept) */
        set_uniform(c, SRC(0), ROLE_IN, -5.0f, 5.0f, 2, runs[r].n, runs[r].k, 1, 1);
        if (runs[r].l) {
            int32_t *idx = set_slot(c, SRC(1), ROLE_IN, DBK_DTYPE_I32, 1, runs[r].l, 1, 1, 1);
            for (int64_t i = 0; i < runs[r].l; i++) idx[i] = (int32_t)((i * 7919 + 13) % runs[r].m); /* distinct rows */
        }
        int32_t *state = set_slot(c, SRC(2), ROLE_IN, DBK_DTYPE_I32, 1, 4, 1, 1, 1);
        state[0] = runs[r].first;
        set_uniform(c, DST(0), ROLE_INOUT, -1.0f, 1.0f, 2, runs[r].m, runs[r].k, 1, 1);
        dbk_op_check_case(c);
    }
}
OP_TEST(scatter_rows, 0.0);

/* Logits with one dominant class of a random margin per row, so that confidences are well
 * apart (a backend's exp may round another way by an ulp); every 5th row copies the row before
 * it, so ties occur and must go to the lower row index. k of 1, a quarter (speedrun's) and all. */
static void confidence_select_cases(dbk_op_checker *ck) {
    static const struct { int64_t n, k; } runs[] = {{1, 1}, {40, 10}, {2000, 500}, {10000, 2500}, {97, 97}};
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        tcase *c = case_new(ck, DBK_OP_CONFIDENCE_SELECT, "N %lld K 10 k %lld", (long long)runs[r].n,
                            (long long)runs[r].k);
        float *z = set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, 2, runs[r].n, 10, 1, 1);
        for (int64_t i = 0; i < runs[r].n; i++) {
            if (i % 5 == 4) {
                for (int j = 0; j < 10; j++) z[i * 10 + j] = z[(i - 1) * 10 + j];
                continue;
            }
            z[i * 10 + (i % 10)] += 0.002f * (float)dbk_rng_below(&c->ck->rng, 4000);
        }
        /* logits (N,10) -> indices (k), work (N) */
        set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_I32, 1, runs[r].k, 1, 1, 1);
        set_slot(c, DST(1), ROLE_OUT, DBK_DTYPE_F32, 1, runs[r].n, 1, 1, 1);
        dbk_op_check_case(c);
    }
}
OP_TEST(confidence_select, 1e-10);

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
    float   brightness, contrast;       /* train: speedrun's jitter */
} aug_shape;

static const aug_shape aug_shapes[] = {
    {50, 32, 32, 64, 16, 5, 12345, true, true, 4, 8, 0, 0, false, 0, 0, false, 0.0f, 0.0f},
    {50, 32, 32, 0, 16, 7, -123456789, true, true, 4, 8, 0, 0, false, 0, 0, false, 0.0f, 0.0f},
    {50, 32, 32, 64, 16, 5, 99, false, true, 4, 8, 0, 0, false, 0, 0, false, 0.0f, 0.0f},
    {50, 32, 32, 0, 50, 0, 0, false, false, 4, 0, 0, 0, false, 0, 0, false, 0.0f, 0.0f},
    {50, 32, 32, 64, 16, 40, 7, true, false, 4, 0, 0, 0, false, 0, 0, false, 0.0f, 0.0f},
    {20, 13, 11, 40, 9, 30, 2024, true, true, 2, 5, 0, 0, false, 0, 0, false, 0.0f, 0.0f},
    {50, 32, 32, 64, 1, 63, 31337, true, true, 4, 8, 0, 0, false, 0, 0, false, 0.0f, 0.0f},
    {300, 32, 32, 300, 256, 44, 5, true, true, 4, 8, 0, 0, false, 0, 0, false, 0.0f, 0.0f},
    /* the old modes ignore epoch and run_seed */
    {50, 32, 32, 64, 16, 5, 12345, true, true, 4, 8, 3, 987654, false, 0, 0, false, 0.0f, 0.0f},
    /* airbench94's training augmentation: pad 2, alternating flip, no cutout, over epochs
     * 0..3 with a seed per epoch, with and without indices; one case keeps a cutout */
    {50, 32, 32, 64, 48, 5, 111, true, true, 2, 0, 0, 424242, true, 0, 0, false, 0.0f, 0.0f},
    {50, 32, 32, 64, 48, 5, 222, true, true, 2, 0, 1, 424242, true, 0, 0, false, 0.0f, 0.0f},
    {50, 32, 32, 64, 48, 5, 333, true, true, 2, 0, 2, 424242, true, 0, 0, false, 0.0f, 0.0f},
    {50, 32, 32, 64, 48, 5, 444, true, true, 2, 0, 3, 424242, true, 0, 0, false, 0.0f, 0.0f},
    {50, 32, 32, 0, 50, 0, 555, true, true, 2, 0, 0, -77, true, 0, 0, false, 0.0f, 0.0f},
    {50, 32, 32, 0, 50, 0, 666, true, true, 2, 0, 1, -77, true, 0, 0, false, 0.0f, 0.0f},
    {20, 13, 11, 40, 9, 30, 2024, true, true, 3, 4, 7, 31, true, 0, 0, false, 0.0f, 0.0f},
    /* test-time views: airbench94's six (pad 1) and larger shifts on an odd image */
    {50, 32, 32, 0, 50, 0, 0, false, false, 4, 0, 0, 0, false, 0, 0, true, 0.0f, 0.0f},
    {50, 32, 32, 0, 50, 0, 0, false, false, 4, 0, 0, 0, false, -1, -1, false, 0.0f, 0.0f},
    {50, 32, 32, 0, 50, 0, 0, false, false, 4, 0, 0, 0, false, -1, -1, true, 0.0f, 0.0f},
    {50, 32, 32, 0, 50, 0, 0, false, false, 4, 0, 0, 0, false, 1, 1, false, 0.0f, 0.0f},
    {50, 32, 32, 0, 50, 0, 0, false, false, 4, 0, 0, 0, false, 1, 1, true, 0.0f, 0.0f},
    {50, 32, 32, 64, 16, 5, 99, false, true, 4, 8, 1, 5, false, 1, -1, true, 0.0f, 0.0f},
    {20, 13, 11, 40, 9, 30, 0, false, false, 2, 0, 0, 0, false, -3, 4, true, 0.0f, 0.0f},
    {20, 13, 11, 0, 20, 0, 0, false, false, 2, 0, 0, 0, false, 12, -10, false, 0.0f, 0.0f},
    {20, 13, 11, 0, 20, 0, 0, false, false, 2, 0, 0, 0, false, -12, 10, true, 0.0f, 0.0f},
    /* cifar10-speedrun: airbench's flips and translation with its brightness and contrast
     * jitter, over two epochs, with and without indices; one with a cutout after the jitter */
    {50, 32, 32, 64, 48, 5, 777, true, true, 2, 0, 0, 424242, true, 0, 0, false, 0.1399f, 0.1308f},
    {50, 32, 32, 64, 48, 5, 888, true, true, 2, 0, 1, 424242, true, 0, 0, false, 0.1399f, 0.1308f},
    {50, 32, 32, 0, 50, 0, 999, true, true, 2, 0, 0, -77, true, 0, 0, false, 0.1399f, 0.1308f},
    {20, 13, 11, 40, 9, 30, 2025, true, true, 3, 4, 7, 31, true, 0, 0, false, 0.5f, 0.9f},
};

static void augment_cases(dbk_op_checker *ck) {
    static const dbk_augment_params base = {.train = true, .pad = 4, .flip = true, .cutout = 8,
                                            .mean = {125.31f / 255.0f, 122.95f / 255.0f, 113.87f / 255.0f},
                                            .std = {62.99f / 255.0f, 62.09f / 255.0f, 66.70f / 255.0f}};
    for (size_t i = 0; i < sizeof aug_shapes / sizeof aug_shapes[0]; i++) {
        const aug_shape *v = &aug_shapes[i];
        tcase *c = case_new(ck, DBK_OP_AUGMENT, "M%d %dx%d N%d first %d %s pad %d%s%s cutout %d %s epoch %d view %d,%d%s%s",
                            v->m, v->h, v->w, v->n, v->first, v->train ? "train" : "eval", v->pad,
                            v->flip ? " flip" : "", v->flip_alt ? " alternating" : "", v->cutout,
                            v->l ? "indices" : "no indices", v->epoch, v->view_dy, v->view_dx,
                            v->view_flip ? " flipped" : "", v->brightness > 0.0f ? " jitter" : "");
        c->desc.p.augment = base;
        c->desc.p.augment.train = v->train;
        c->desc.p.augment.flip = v->flip;
        c->desc.p.augment.pad = v->pad;
        c->desc.p.augment.cutout = v->cutout;
        c->desc.p.augment.flip_alternating = v->flip_alt;
        c->desc.p.augment.view_dy = v->view_dy;
        c->desc.p.augment.view_dx = v->view_dx;
        c->desc.p.augment.view_flip = v->view_flip;
        c->desc.p.augment.brightness = v->brightness;
        c->desc.p.augment.contrast = v->contrast;
        /* images u8 (M,3,H,W), labels u8 (M), indices i32 (L), state i32 {first, seed, epoch,
         * run_seed} -> x f32 (N,3,H,W), labels i32 (N) */
        uint8_t *img = set_slot(c, SRC(0), ROLE_IN, DBK_DTYPE_U8, 4, v->m, 3, v->h, v->w);
        for (int64_t k = 0; k < (int64_t)v->m * 3 * v->h * v->w; k++) img[k] = (uint8_t)dbk_rng_u32(&c->ck->rng);
        uint8_t *lab = set_slot(c, SRC(1), ROLE_IN, DBK_DTYPE_U8, 1, v->m, 1, 1, 1);
        for (int k = 0; k < v->m; k++) lab[k] = (uint8_t)dbk_rng_below(&c->ck->rng, 10);
        if (v->l) {
            int32_t *idx = set_slot(c, SRC(2), ROLE_IN, DBK_DTYPE_I32, 1, v->l, 1, 1, 1);
            for (int k = 0; k < v->l; k++) idx[k] = (int32_t)dbk_rng_below(&c->ck->rng, (uint32_t)v->m);
        }
        int32_t *state = set_slot(c, SRC(3), ROLE_IN, DBK_DTYPE_I32, 1, 4, 1, 1, 1);
        state[0] = v->first;
        state[1] = v->seed;
        state[2] = v->epoch;
        state[3] = v->run_seed;
        set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, 4, v->n, 3, v->h, v->w);
        set_slot(c, DST(1), ROLE_OUT, DBK_DTYPE_I32, 1, v->n, 1, 1, 1);
        dbk_op_check_case(c);
    }
}
OP_TEST(augment, 0.0);

/* ---------------------------------------------------------------------------------- */
/* GELU, bias, lookahead (airbench94's ops)                                            */

/* x spans [-5, 5): all three ranges of the Vulkan shaders' erf (common/erf.glsl) and the
 * tails where 1 + erf cancels. */
static void gelu_fwd_cases(dbk_op_checker *ck) {
    char sh[64];
    for (int in_place = 0; in_place < 2; in_place++)
        for (int i = 0; i < (int)EW_SHAPE_COUNT; i++) {
            tcase *c = case_new(ck, DBK_OP_GELU_FWD, "%s%s", ew_summary(i, sh, sizeof sh), in_place ? " in place (y = x)" : "");
            set_uniform(c, SRC(0), ROLE_IN, -5.0f, 5.0f, EW(i));
            set_ew_output(c, i, in_place ? SRC(0) : -1);
            dbk_op_check_case(c);
        }
}
OP_TEST(gelu_fwd, 1e-9);

static void gelu_bwd_cases(dbk_op_checker *ck) {
    char sh[64];
    for (int in_place = 0; in_place < 2; in_place++)
        for (int i = 0; i < (int)EW_SHAPE_COUNT; i++) {
            tcase *c = case_new(ck, DBK_OP_GELU_BWD, "%s%s", ew_summary(i, sh, sizeof sh), in_place ? " in place (dx = dy)" : "");
            set_uniform(c, SRC(0), ROLE_IN, -5.0f, 5.0f, EW(i));
            set_uniform(c, SRC(1), ROLE_IN, -1.0f, 1.0f, EW(i));
            set_ew_output(c, i, in_place ? SRC(1) : -1);
            dbk_op_check_case(c);
        }
}
OP_TEST(gelu_bwd, 1e-9);

/* SiLU over [-10, 10): sigmoid's saturated tails (exp overflow is not reached) and the dip
 * near x = -1.28 where its derivative changes sign. Tolerance: the devices' exp. */
static void silu_fwd_cases(dbk_op_checker *ck) {
    char sh[64];
    for (int in_place = 0; in_place < 2; in_place++)
        for (int i = 0; i < (int)EW_SHAPE_COUNT; i++) {
            tcase *c = case_new(ck, DBK_OP_SILU_FWD, "%s%s", ew_summary(i, sh, sizeof sh), in_place ? " in place (y = x)" : "");
            set_uniform(c, SRC(0), ROLE_IN, -10.0f, 10.0f, EW(i));
            set_ew_output(c, i, in_place ? SRC(0) : -1);
            dbk_op_check_case(c);
        }
}
OP_TEST(silu_fwd, 1e-9);

static void silu_bwd_cases(dbk_op_checker *ck) {
    char sh[64];
    for (int in_place = 0; in_place < 2; in_place++)
        for (int i = 0; i < (int)EW_SHAPE_COUNT; i++) {
            tcase *c = case_new(ck, DBK_OP_SILU_BWD, "%s%s", ew_summary(i, sh, sizeof sh), in_place ? " in place (dx = dy)" : "");
            set_uniform(c, SRC(0), ROLE_IN, -10.0f, 10.0f, EW(i));
            set_uniform(c, SRC(1), ROLE_IN, -1.0f, 1.0f, EW(i));
            set_ew_output(c, i, in_place ? SRC(1) : -1);
            dbk_op_check_case(c);
        }
}
OP_TEST(silu_bwd, 1e-9);

/* (N,C,H,W) of the bias ops: odd sizes, batch 1, 1x1 maps, airbench94's whitening output
 * (C 24, 31x31) at batch 1 and 16, C 512 as in ResNet9's last layers, and (channel_sum only)
 * airbench's batch 1024 at 31x31: ~1M values per channel, the longest reduction the op must
 * do, with C 2 so that the case stays at 8 MB. H*W of 49, 169, 961 and N*H*W of 98, 169,
 * 15376, 984064 are not multiples of any work-group size. */
static const int bias_shapes[][4] = {{2, 3, 7, 7}, {1, 5, 13, 13}, {3, 17, 1, 1}, {1, 24, 31, 31}, {16, 24, 31, 31},
                                     {8, 512, 4, 4}, {2, 512, 32, 32}, {1024, 2, 31, 31}};
#define BIAS_SHAPE_COUNT (sizeof bias_shapes / sizeof bias_shapes[0])

static void bias_add_cases(dbk_op_checker *ck) {
    for (int in_place = 0; in_place < 2; in_place++)
        for (size_t i = 0; i < BIAS_SHAPE_COUNT; i++) {
            const int *d = bias_shapes[i];
            if (d[0] == 1024) continue;   /* elementwise: the long reduction adds nothing */
            tcase *c = case_new(ck, DBK_OP_BIAS_ADD, "N%d C%d %dx%d%s", d[0], d[1], d[2], d[3], in_place ? " in place (y = x)" : "");
            /* x (N,C,H,W), b (C) -> y (N,C,H,W) */
            set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, 4, d[0], d[1], d[2], d[3]);
            set_uniform(c, SRC(1), ROLE_IN, -1.0f, 1.0f, 1, d[1], 1, 1, 1);
            if (in_place)
                set_alias(c, DST(0), SRC(0));
            else
                set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, 4, d[0], d[1], d[2], d[3]);
            dbk_op_check_case(c);
        }
}
OP_TEST(bias_add, 1e-10);

/* dy around a per-channel mean in [-1, 2) (as set_bn_input): sums far from zero, as a
 * bias gradient summed over a batch is, and cancellation in the channels around zero. */
static void channel_sum_cases(dbk_op_checker *ck) {
    for (size_t i = 0; i < BIAS_SHAPE_COUNT; i++) {
        const int *d = bias_shapes[i];
        tcase *c = case_new(ck, DBK_OP_CHANNEL_SUM, "N%d C%d %dx%d (N*H*W %d)", d[0], d[1], d[2], d[3], d[0] * d[2] * d[3]);
        /* dy (N,C,H,W) -> db (C) */
        set_bn_input(c, SRC(0), d);
        set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, 1, d[1], 1, 1, 1);
        dbk_op_check_case(c);
    }
}
OP_TEST(channel_sum, 1e-9);

static void lookahead_cases(dbk_op_checker *ck) {
    static const int64_t counts[] = {1, 17, 4099, 262147};
    /* decay 0.95^5 (w = 0.226, first branch), 0.3 (w = 0.7, second branch), 0.5 (w = 0.5,
     * the boundary: second branch), 1 (w = 0: params = ema, the final sync) and 0 (w = 1:
     * ema = params) */
    static const float decays[] = {0.77378094f, 0.3f, 0.5f, 1.0f, 0.0f};
    for (size_t k = 0; k < sizeof decays / sizeof decays[0]; k++)
        for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
            tcase *c = case_new(ck, DBK_OP_LOOKAHEAD, "n %lld decay %.8g", (long long)counts[i], (double)decays[k]);
            /* decay (1) -> ema (n), params (n) in place */
            set_scalar(c, SRC(0), ROLE_IN, decays[k]);
            set_uniform(c, DST(0), ROLE_INOUT, -0.5f, 0.5f, 1, counts[i], 1, 1, 1);
            set_uniform(c, DST(1), ROLE_INOUT, -0.5f, 0.5f, 1, counts[i], 1, 1, 1);
            dbk_op_check_case(c);
        }
}
OP_TEST(lookahead, 1e-10);


/* ---------------------------------------------------------------------------------- */
/* dropout                                                                             */

/* p 0.5 (AlexNet's), 0.1 and 0 (everything kept), with several batch positions and seeds,
 * on the elementwise shapes; the mask is a hash of (seed, first, salt, index), so a device
 * that draws another mask fails by NMSE ~1. */
static void dropout_cases(dbk_op_checker *ck, dbk_op op) {
    static const float ps[] = {0.5f, 0.1f, 0.0f};
    char sh[64];
    for (size_t k = 0; k < sizeof ps / sizeof ps[0]; k++)
        for (int i = 0; i < (int)EW_SHAPE_COUNT; i++) {
            const bool in_place = i % 2 == 1;
            tcase *c = case_new(ck, op, "%s p %g salt %u%s", ew_summary(i, sh, sizeof sh), (double)ps[k], 17u * (unsigned)k,
                                in_place ? " in place" : "");
            c->desc.p.dropout = (dbk_dropout_params){ps[k], 17u * (uint32_t)k};
            /* x or dy (any), state i32 (4) -> y or dx */
            set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, EW(i));
            int32_t *st = set_slot(c, SRC(1), ROLE_IN, DBK_DTYPE_I32, 1, 4, 1, 1, 1);
            st[0] = 256 * i;
            st[1] = (int32_t)(0x9e3779b9u * (uint32_t)(k + 1));
            st[2] = (int32_t)k;
            st[3] = 12345;
            set_ew_output(c, i, in_place ? SRC(0) : -1);
            dbk_op_check_case(c);
        }
}

static void dropout_fwd_cases(dbk_op_checker *ck) { dropout_cases(ck, DBK_OP_DROPOUT_FWD); }
OP_TEST(dropout_fwd, 1e-10);
static void dropout_bwd_cases(dbk_op_checker *ck) { dropout_cases(ck, DBK_OP_DROPOUT_BWD); }
OP_TEST(dropout_bwd, 1e-10);

/* ---------------------------------------------------------------------------------- */
/* gradient compression                                                                */

/* Segment layouts {counts}, each with a k per segment, chunk sizes that cut segments into
 * several chunks (and one chunk per segment), and values either continuous or on a coarse
 * grid of magnitudes (many ties at the k-th magnitude and at the threshold). Top-k and
 * threshold; the outputs (pairs, count, the work tensor's bookkeeping) are integers and
 * bits, compared exactly. */
static void sparse_select_cases(dbk_op_checker *ck) {
    static const struct {
        int     segments;
        int32_t count[4], k[4];
        int     chunk;
    } layouts[] = {
        {1, {1000}, {10}, 64},
        {3, {3, 200, 797}, {1, 20, 797}, 64},
        {4, {517, 1, 4099, 260}, {6, 1, 41, 3}, 1024},
        {2, {33, 70}, {33, 7}, 7},
    };
    for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++)
        for (int grid = 0; grid < 2; grid++)
            for (int topk = 0; topk < 2; topk++) {
                const int S = layouts[l].segments;
                int32_t seg[3 * 4], n = 0, kept = 0;
                for (int s = 0; s < S; s++) {
                    seg[3 * s] = n;
                    seg[3 * s + 1] = layouts[l].count[s];
                    seg[3 * s + 2] = layouts[l].k[s];
                    n += layouts[l].count[s];
                    kept += layouts[l].k[s];
                }
                const int C = dbk_select_chunks(seg, S, layouts[l].chunk, NULL);
                const int64_t cap = topk ? kept : n;
                tcase *c = case_new(ck, DBK_OP_SPARSE_SELECT, "n %d segments %d chunks %d %s%s", n, S, C,
                                    topk ? "topk" : "threshold 0.5", grid ? " ties" : "");
                c->desc.p.select = (dbk_select_params){topk == 1, 0.5f};
                /* x (n), segments (S,3), chunks (C,3) -> pairs (2 cap), count (1), work (258S + 2C) */
                float *x = set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, 1, n, 1, 1, 1);
                for (int i = 0; grid && i < n; i++) x[i] = roundf(x[i] * 8.0f) / 8.0f;
                memcpy(set_slot(c, SRC(1), ROLE_IN, DBK_DTYPE_I32, 2, S, 3, 1, 1), seg, (size_t)(3 * S) * sizeof *seg);
                dbk_select_chunks(seg, S, layouts[l].chunk, set_slot(c, SRC(2), ROLE_IN, DBK_DTYPE_I32, 2, C, 3, 1, 1));
                set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_I32, 1, 2 * cap, 1, 1, 1);
                set_slot(c, DST(1), ROLE_OUT, DBK_DTYPE_I32, 1, 1, 1, 1, 1);
                set_slot(c, DST(2), ROLE_OUT, DBK_DTYPE_I32, 1, 258 * S + 2 * C, 1, 1, 1);
                dbk_op_check_case(c);
            }
}
OP_TEST(sparse_select, 0.0);

/* A sparse payload (src0: k pairs of distinct indices below n in a random order, values in
 * [-1, 1); with outside one index n) and the vector dst0 (n) it goes into. */
static void set_payload(tcase *c, int64_t n, int64_t k, bool outside) {
    int32_t *pairs = set_slot(c, SRC(0), ROLE_IN, DBK_DTYPE_I32, 1, 2 * k, 1, 1, 1);
    int32_t *perm = dbk_op_check_alloc((size_t)n * sizeof *perm);
    dbk_rng_permutation(&c->ck->rng, perm, (int32_t)n);
    for (int64_t j = 0; j < k; j++) {
        const float v = 2.0f * dbk_rng_uniform(&c->ck->rng) - 1.0f;
        pairs[2 * j] = perm[j];
        memcpy(&pairs[2 * j + 1], &v, sizeof v);
    }
    free(perm);
    if (outside) pairs[2 * (k / 2)] = (int32_t)n;
    set_uniform(c, DST(0), ROLE_INOUT, -1.0f, 1.0f, 1, n, 1, 1, 1);
}

/* Payloads of k distinct indices in a random order (one index outside acc in one case),
 * alpha 1/2, 1/3 (not a power of two: an unfused multiply and add round as the CPU's) and -1
 * (error feedback's residual), into acc of n values. */
static void sparse_add_cases(dbk_op_checker *ck) {
    static const int64_t ns[] = {1, 1000, 70001};
    static const float alphas[] = {0.5f, 1.0f / 3.0f, -1.0f};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
        for (size_t a = 0; a < sizeof alphas / sizeof alphas[0]; a++) {
            const int64_t n = ns[i], k = n < 7 ? n : n / 7;
            const bool outside = i == 1 && a == 0;
            tcase *c = case_new(ck, DBK_OP_SPARSE_ADD, "n %lld k %lld alpha %.6g%s", (long long)n, (long long)k,
                                (double)alphas[a], outside ? " one index outside" : "");
            c->desc.p.scale.alpha = alphas[a];
            /* pairs (2k) -> acc (n) in place */
            set_payload(c, n, k, outside);
            dbk_op_check_case(c);
        }
}
OP_TEST(sparse_add, 0.0);

/* Payloads of k distinct indices in a random order (one index outside y in one case), the
 * pairs' own values and the constant 1 (a mask's ones), into y of n values. */
static void sparse_scatter_cases(dbk_op_checker *ck) {
    static const int64_t ns[] = {1, 1000, 70001};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
        for (int constant = 0; constant < 2; constant++) {
            const int64_t n = ns[i], k = n < 7 ? n : n / 7;
            const bool outside = i == 1 && !constant;
            tcase *c = case_new(ck, DBK_OP_SPARSE_SCATTER, "n %lld k %lld %s%s", (long long)n, (long long)k,
                                constant ? "constant 1" : "values", outside ? " one index outside" : "");
            c->desc.p.scatter = (dbk_scatter_params){constant == 1, 1.0f};
            /* pairs (2k) -> y (n) in place */
            set_payload(c, n, k, outside);
            dbk_op_check_case(c);
        }
}
OP_TEST(sparse_scatter, 0.0);

/* Random-k's packing over segment layouts of odd sizes: per segment k distinct indices in a
 * random order and the scale count/k, as the host draws them. */
static void sparse_gather_cases(dbk_op_checker *ck) {
    static const struct {
        int     segments;
        int32_t count[4], k[4];
    } layouts[] = {
        {1, {1000}, {10}},
        {3, {3, 200, 797}, {1, 20, 797}},
        {4, {517, 1, 4099, 260}, {52, 1, 410, 26}},
    };
    for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++) {
        const int S = layouts[l].segments;
        int32_t n = 0, k = 0;
        for (int s = 0; s < S; s++) {
            n += layouts[l].count[s];
            k += layouts[l].k[s];
        }
        tcase *c = case_new(ck, DBK_OP_SPARSE_GATHER, "n %d segments %d k %d", n, S, k);
        /* x (n), indices (k), scales (S,2) -> pairs (2k) */
        set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, 1, n, 1, 1, 1);
        int32_t *idx = set_slot(c, SRC(1), ROLE_IN, DBK_DTYPE_I32, 1, k, 1, 1, 1);
        int32_t *scales = set_slot(c, SRC(2), ROLE_IN, DBK_DTYPE_I32, 2, S, 2, 1, 1);
        int32_t off = 0, first = 0;
        for (int s = 0; s < S; s++) {
            const int32_t count = layouts[l].count[s], kk = layouts[l].k[s];
            int32_t *perm = dbk_op_check_alloc((size_t)count * sizeof *perm);
            dbk_rng_permutation(&ck->rng, perm, count);
            for (int32_t j = 0; j < kk; j++) idx[first + j] = off + perm[j];
            const float scale = (float)((double)count / (double)kk);
            scales[2 * s] = first;
            memcpy(&scales[2 * s + 1], &scale, sizeof scale);
            free(perm);
            off += count;
            first += kk;
        }
        set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_I32, 1, 2 * (int64_t)k, 1, 1, 1);
        dbk_op_check_case(c);
    }
}
OP_TEST(sparse_gather, 0.0);

/* TernGrad and QSGD: segment layouts of odd sizes (one of a single value, some over a chunk
 * of DBK_QUANT_CHUNK), levels 0 (TernGrad), 1, 4 (level values past q exist in 3 bits), 255
 * and 65535 (17-bit codes across words); the table {offset, count, payload byte} of a layout
 * into seg, returning the payload's words. */
static const struct {
    int     segments;
    int32_t count[4];
} quant_layouts[] = {
    {1, {1000}},
    {3, {3, 513, 1}},
    {4, {517, 1, 2049, 260}},
};
static const int quant_levels[] = {0, 1, 4, 255, 65535};

static int64_t quant_table(size_t l, int levels, int32_t *seg, int32_t *n) {
    const int bits = dbk_quant_code_bits(levels);
    int64_t byte = 0;
    *n = 0;
    for (int s = 0; s < quant_layouts[l].segments; s++) {
        const int32_t count = quant_layouts[l].count[s];
        seg[3 * s] = *n;
        seg[3 * s + 1] = count;
        seg[3 * s + 2] = (int32_t)byte;
        *n += count;
        byte += 4 + ((int64_t)count * bits + 7) / 8;
    }
    return (byte + 3) / 4;
}

/* Gradients in [-1, 1), a zero segment (scale 0) in one layout and a coarse grid in another
 * (values equal to the scale: QSGD's level q exactly). Payload and scales compared exactly. */
static void quant_encode_cases(dbk_op_checker *ck) {
    for (size_t l = 0; l < sizeof quant_layouts / sizeof quant_layouts[0]; l++)
        for (size_t q = 0; q < sizeof quant_levels / sizeof quant_levels[0]; q++) {
            const int S = quant_layouts[l].segments, levels = quant_levels[q];
            int32_t seg[3 * 4], n;
            const int64_t words = quant_table(l, levels, seg, &n);
            const int C = dbk_select_chunks(seg, S, DBK_QUANT_CHUNK, NULL);
            tcase *c = case_new(ck, DBK_OP_QUANT_ENCODE, "n %d segments %d chunks %d levels %d%s", n, S, C, levels,
                                l == 1 ? " zero segment" : l == 2 ? " grid" : "");
            c->desc.p.quant = (dbk_quant_params){.levels = levels, .seed_lo = 7u + (uint32_t)q, .seed_hi = 0x9u};
            /* x (n), segments (S,3), chunks (C,3) -> payload (W), work (C + S) */
            float *x = set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, 1, n, 1, 1, 1);
            if (l == 1) memset(x + seg[3], 0, (size_t)seg[4] * sizeof *x);
            for (int i = 0; l == 2 && i < n; i++) x[i] = roundf(x[i] * 4.0f) / 4.0f;
            memcpy(set_slot(c, SRC(1), ROLE_IN, DBK_DTYPE_I32, 2, S, 3, 1, 1), seg, (size_t)(3 * S) * sizeof *seg);
            dbk_select_chunks(seg, S, DBK_QUANT_CHUNK, set_slot(c, SRC(2), ROLE_IN, DBK_DTYPE_I32, 2, C, 3, 1, 1));
            set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_I32, 1, words, 1, 1, 1);
            set_slot(c, DST(1), ROLE_OUT, DBK_DTYPE_F32, 1, C + S, 1, 1, 1);
            dbk_op_check_case(c);
        }
}
OP_TEST(quant_encode, 0.0);

/* Payloads of random codes (some out of range: TernGrad's 3, QSGD's levels past q, which add
 * nothing) under scales in [0.5, 2), alpha 1/3 (an unfused multiply and add) and -1. */
static void quant_add_cases(dbk_op_checker *ck) {
    static const float alphas[] = {1.0f / 3.0f, -1.0f};
    for (size_t l = 0; l < sizeof quant_layouts / sizeof quant_layouts[0]; l++)
        for (size_t q = 0; q < sizeof quant_levels / sizeof quant_levels[0]; q++) {
            const int S = quant_layouts[l].segments, levels = quant_levels[q], bits = dbk_quant_code_bits(levels);
            const float alpha = alphas[(l + q) % 2];
            int32_t seg[3 * 4], n;
            const int64_t words = quant_table(l, levels, seg, &n);
            tcase *c = case_new(ck, DBK_OP_QUANT_ADD, "n %d segments %d levels %d alpha %.6g", n, S, levels,
                                (double)alpha);
            c->desc.p.quant = (dbk_quant_params){.levels = levels, .alpha = alpha};
            /* payload (W), segments (S,3) -> acc (n) in place */
            uint8_t *payload = set_slot(c, SRC(0), ROLE_IN, DBK_DTYPE_I32, 1, words, 1, 1, 1);
            memset(payload, 0, (size_t)words * 4);
            for (int s = 0; s < S; s++) {
                uint8_t *p = payload + seg[3 * s + 2];
                const float scale = 0.5f + 1.5f * dbk_rng_uniform(&ck->rng);
                memcpy(p, &scale, 4);
                size_t pos = 0;
                for (int32_t i = 0; i < seg[3 * s + 1]; i++)
                    dbk_quant_put_bits(p + 4, &pos, dbk_rng_below(&ck->rng, 1u << bits), bits);
            }
            memcpy(set_slot(c, SRC(1), ROLE_IN, DBK_DTYPE_I32, 2, S, 3, 1, 1), seg, (size_t)(3 * S) * sizeof *seg);
            set_uniform(c, DST(0), ROLE_INOUT, -1.0f, 1.0f, 1, n, 1, 1, 1);
            dbk_op_check_case(c);
        }
}
OP_TEST(quant_add, 0.0);

/* mixed precision: casts and dynamic loss scaling                                      */

/* f32 values that probe the rounding: ordinary ones, exact ties between two fp16 values
 * (1 + 2^-11 rounds down to even, 1 + 3*2^-11 up), the largest finite fp16 and values that
 * overflow to inf (65520 is the first), subnormals and values that underflow to 0, signed
 * zeros and infinities. NaN is left out: its payload after conversion is the device's choice. */
static void cast_f32_f16_cases(dbk_op_checker *ck) {
    static const float special[] = {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, -(1.0f + 0x1p-11f), 65504.0f, 65519.0f,
                                    65520.0f, -1e6f, 0x1p-24f, 0x1p-25f, 0x1.8p-25f, 3e-8f, 1e-6f, 6.1e-5f, 0.0f,
                                    -0.0f, INFINITY, -INFINITY, 0.1f, 1.0f / 3.0f, 2048.5f};
    static const int64_t counts[] = {1, 1001, 4099 * 3};
    for (int i = 0; i < 3; i++) {
        tcase *c = case_new(ck, DBK_OP_CAST_F32_F16, "(%lld)%s", (long long)counts[i], i ? " with special values" : "");
        float *x = set_uniform(c, SRC(0), ROLE_IN, -4.0f, 4.0f, 1, counts[i], 1, 1, 1);
        if (i)
            for (int64_t k = 0; k < counts[i]; k += 7) x[k] = special[(k / 7) % (int64_t)(sizeof special / sizeof special[0])];
        if (i == 2)   /* a wide range of magnitudes: 2^-30 .. 2^20 */
            for (int64_t k = 1; k < counts[i]; k += 7) x[k] = ldexpf(x[k], (int)(k % 51) - 30);
        set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F16, 1, counts[i], 1, 1, 1);
        dbk_op_check_case(c);
    }
}
OP_TEST(cast_f32_f16, 0.0);

/* Every fp16 bit pattern but the NaNs (their payload is the device's choice): 63490 values. */
static void cast_f16_f32_cases(dbk_op_checker *ck) {
    tcase *c = case_new(ck, DBK_OP_CAST_F16_F32, "every non-NaN f16 (63490)");
    uint16_t *x = set_slot(c, SRC(0), ROLE_IN, DBK_DTYPE_F16, 1, 63490, 1, 1, 1);
    int64_t n = 0;
    for (uint32_t h = 0; h < 65536u; h++)
        if ((h & 0x7c00u) != 0x7c00u || !(h & 0x3ffu)) x[n++] = (uint16_t)h;
    DBK_ASSERT(n == 63490);
    set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, 1, 63490, 1, 1, 1);
    dbk_op_check_case(c);
    c = case_new(ck, DBK_OP_CAST_F16_F32, "(2,3,5,7)");
    set_uniform_f16(c, SRC(0), -3.0f, 3.0f, 4, 2, 3, 5, 7);
    set_slot(c, DST(0), ROLE_OUT, DBK_DTYPE_F32, 4, 2, 3, 5, 7);
    dbk_op_check_case(c);
}
OP_TEST(cast_f16_f32, 0.0);

static void loss_scale_cases(dbk_op_checker *ck) {
    char sh[64];
    for (int in_place = 0; in_place < 2; in_place++)
        for (int i = 0; i < (int)EW_SHAPE_COUNT; i++) {
            const float s = in_place ? 0.5f : 65536.0f;
            tcase *c = case_new(ck, DBK_OP_LOSS_SCALE, "%s s %g%s", ew_summary(i, sh, sizeof sh), (double)s,
                                in_place ? " in place" : "");
            set_uniform(c, SRC(0), ROLE_IN, -1.0f, 1.0f, EW(i));
            set_scalar(c, SRC(1), ROLE_IN, s);
            set_ew_output(c, i, in_place ? SRC(0) : -1);
            dbk_op_check_case(c);
        }
}
OP_TEST(loss_scale, 0.0);

/* The loss scale's state machine from states on each of its branches: a clean step, the
 * growth at the interval (and none at the 2^64 ceiling), an overflow halving S (and none at
 * S = 1). Bit-exact: powers of two and small whole numbers. */
static void amp_update_scale_cases(dbk_op_checker *ck) {
    static const struct { const char *what; float s, found, clean, interval; } states[] = {
        {"clean step", 65536.0f, 0.0f, 5.0f, 2000.0f},
        {"growth at the interval", 65536.0f, 0.0f, 1999.0f, 2000.0f},
        {"no growth at 2^64", 0x1p64f, 0.0f, 1.0f, 2.0f},
        {"overflow halves", 65536.0f, 1.0f, 7.0f, 2000.0f},
        {"overflow at scale 1", 1.0f, 1.0f, 0.0f, 2000.0f},
    };
    for (size_t i = 0; i < sizeof states / sizeof states[0]; i++) {
        tcase *c = case_new(ck, DBK_OP_AMP_UPDATE_SCALE, "%s", states[i].what);
        c->desc.p.amp.growth_interval = states[i].interval;
        float *st = set_slot(c, DST(0), ROLE_INOUT, DBK_DTYPE_F32, 1, 6, 1, 1, 1);
        const float v[6] = {states[i].s, 1.0f / states[i].s, states[i].found, states[i].clean, 3.0f, 2.0f};
        memcpy(st, v, sizeof v);
        dbk_op_check_case(c);
    }
}
OP_TEST(amp_update_scale, 0.0);

/* found starts at 0 or 1 (it is never cleared by the op); g holds an inf in some cases. */
static void grad_unscale_cases(dbk_op_checker *ck) {
    static const int64_t counts[] = {1, 1001, 70001};
    for (int i = 0; i < 3; i++)
        for (int v = 0; v < 3; v++) {
            static const char *what[] = {"finite", "+inf and -inf", "finite, found already 1"};
            tcase *c = case_new(ck, DBK_OP_GRAD_UNSCALE, "(%lld) %s", (long long)counts[i], what[v]);
            set_scalar(c, SRC(0), ROLE_IN, 0x1p-16f);
            float *g = set_uniform(c, DST(0), ROLE_INOUT, -70000.0f, 70000.0f, 1, counts[i], 1, 1, 1);
            if (v == 1) {
                g[0] = INFINITY;   /* not the last element: the harness plants its fault there */
                g[counts[i] / 2] = -INFINITY;
            }
            set_scalar(c, DST(1), ROLE_INOUT, v == 2 ? 1.0f : 0.0f);
            dbk_op_check_case(c);
        }
}
OP_TEST(grad_unscale, 0.0);
