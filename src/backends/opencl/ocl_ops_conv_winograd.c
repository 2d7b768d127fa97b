/*
 * ocl_ops_conv_winograd.c — 3x3 stride-1 pad-1 convolutions as Winograd F(m x m, 3x3) on the
 * OpenCL backend, m = 2 or 4: the transforms of cl/conv2d_winograd.cl around E = (m+2)^2 GEMMs
 * (gemm_rb, so only with "opencl.gemm": "tiled"). F(2x2,3x3): 16 multiplies per 2x2 output tile
 * instead of 36, 2.25x fewer multiply-adds; F(4x4,3x3): 36 per 4x4 tile instead of 144, 4x
 * fewer, and 2.25 instead of 4 transformed input values per output. Both pay the transforms'
 * memory traffic and a larger rounding error (docs/winograd.md; measured in
 * docs/measurements/winograd.md).
 * ocl_ops_conv.c asks dbk_ocl_conv_winograd_chosen per op and falls back to im2col otherwise.
 *
 * Which layers: the profile's "opencl.conv_algorithm", "opencl.winograd_min_channels" and
 * "opencl.conv_by_shape", DBK_FORCE_CONV overriding them (backend/conv_choice.h, shared with
 * the Vulkan backend's Winograd path).
 *
 * Per chunk of nb images (T = nb * ceil(P/m) * ceil(Q/m) tiles, tpad = T rounded up to RB_W),
 * with the workspace in regions laid out by wino_plan (the E GEMMs of a chunk are one launch,
 * gemm_rb's dimension 2):
 *   forward     U (E,K,C) = filter(w) once; V (E,C,tpad) = input(x chunk), packed;
 *               M[e] (K,T) = U[e] . V[e]; y chunk = output(M)
 *   bwd data    the forward on dy with U (E,C,K) = filter(w rotated 180 degrees, transposed)
 *   bwd filter  V (E,C,tpad) = input(x chunk), row-major; Z (E,T,kpad) = dy_transform(dy chunk),
 *               packed; dU^T[e] (C,K) (+)= V[e] . Z[e] over the chunks (stored transposed into
 *               dU (E,K,C)); after the last chunk dw = filter_grad(dU)
 * The kernels of F(4x4,3x3) are those of F(2x2,3x3) with the prefix "winograd4_"; F(4x4,3x3)
 * launches two independent transforms at once where it can (paired below): 2n + 1 launches
 * for an op of n chunks instead of 3n + 1.
 */
#include "backends/opencl/ocl_internal.h"

typedef struct wino_plan {
    int N, ci, co;           /* images, input channels, output channels of the transformed conv */
    int m, E;                /* output tile m x m, E = (m+2)^2 transformed elements and GEMMs */
    int H, W, TH, TW;        /* input = output size, tiles per image */
    int nb;                  /* images per chunk */
    int rb_w;                /* gemm_rb panel width */
    size_t r0, r1, r2;       /* region offsets in floats: U|V|M (forward, data) or V|Z|dU (filter) */
    size_t floats;           /* the workspace needed */
} wino_plan;

static size_t round_up(size_t v, size_t m) { return (v + m - 1) / m * m; }

/* The distance in floats between consecutive planes of a (rows, cols) matrix, a multiple of 16
 * (whole 64-byte lines): WINO_PLANE of cl/conv2d_winograd.cl. */
static size_t plane_floats(size_t rows, size_t cols) { return round_up(rows * cols, 16) + DBK_OCL_WINO_PLANE_PAD; }

bool dbk_ocl_conv_winograd_chosen(const dbk_backend *be, const dbk_op_desc *op) {
    const dbk_ocl_ctx *c = dbk_ocl(be);
    return c->gemm == DBK_OCL_GEMM_TILED && dbk_conv_choice_winograd(&c->conv, op);
}

const char *dbk_ocl_op_algorithm(const dbk_backend *be, const dbk_op_desc *op) {
    const bool conv = op->op == DBK_OP_CONV2D_FWD || op->op == DBK_OP_CONV2D_BWD_DATA ||
                      op->op == DBK_OP_CONV2D_BWD_FILTER;
    if (!conv || !dbk_ocl_conv_winograd_chosen(be, op)) return NULL;
    return dbk_conv_choice_winograd_tile(&dbk_ocl(be)->conv, op) == 4 ? "winograd F(4x4,3x3)" : "winograd F(2x2,3x3)";
}

/* The kernels of cl/conv2d_winograd.cl, per tile (F(2x2,3x3), F(4x4,3x3)). */
enum { WINO_FILTER, WINO_INPUT, WINO_OUTPUT, WINO_DY, WINO_FILTER_GRAD };
static const char *kernel_name(const wino_plan *p, int which) {
    static const char *const names[2][5] = {
        {"conv2d_winograd_filter", "conv2d_winograd_input", "conv2d_winograd_output", "conv2d_winograd_dy",
         "conv2d_winograd_filter_grad"},
        {"conv2d_winograd4_filter", "conv2d_winograd4_input", "conv2d_winograd4_output", "conv2d_winograd4_dy",
         "conv2d_winograd4_filter_grad"},
    };
    return names[p->m == 4][which];
}

static wino_plan plan_for(const dbk_ocl_conv_config *cfg, const dbk_op_desc *op) {
    const dbk_conv2d_geom g = dbk_conv2d_geom_of(op);
    wino_plan p;
    const bool data = op->op == DBK_OP_CONV2D_BWD_DATA;
    p.N = (int)g.N;
    p.ci = (int)(data ? g.K : g.C);
    p.co = (int)(data ? g.C : g.K);
    p.m = dbk_conv_choice_winograd_tile(cfg->choice, op) == 4 ? 4 : 2;
    p.E = (p.m + 2) * (p.m + 2);
    p.H = (int)g.H;
    p.W = (int)g.W;
    p.TH = (p.H + p.m - 1) / p.m;
    p.TW = (p.W + p.m - 1) / p.m;
    p.rb_w = cfg->rb_w;
    /* Images per chunk within the budget (the E transformed planes of input and output),
     * evened out over the chunks. */
    const size_t tiles = (size_t)p.TH * (size_t)p.TW, E = (size_t)p.E;
    const size_t per_image = E * ((size_t)p.ci + round_up((size_t)p.co, (size_t)p.rb_w)) * tiles * sizeof(float);
    int nb = (int)(cfg->choice->winograd_budget / per_image);
    if (nb < 1) nb = 1;
    if (nb > p.N) nb = p.N;
    const int chunks = (p.N + nb - 1) / nb;
    p.nb = (p.N + chunks - 1) / chunks;
    const size_t T = (size_t)p.nb * tiles, tpad = round_up(T, (size_t)p.rb_w);
    const size_t ci = (size_t)p.ci, co = (size_t)p.co;
    p.r0 = 0;
    if (op->op == DBK_OP_CONV2D_BWD_FILTER) {   /* V | Z | dU */
        p.r1 = E * plane_floats(ci, tpad);
        p.r2 = p.r1 + E * plane_floats(T, round_up(co, (size_t)p.rb_w));
        p.floats = p.r2 + E * plane_floats(co, ci);
    } else {                                    /* U | V | M */
        p.r1 = E * plane_floats(co, ci);
        p.r2 = p.r1 + E * plane_floats(ci, tpad);
        p.floats = p.r2 + E * plane_floats(co, T);
    }
    return p;
}

static wino_plan plan_of(const dbk_backend *be, const dbk_op_desc *op) {
    const dbk_ocl_conv_config cfg = dbk_ocl_conv_config_of(be);
    return plan_for(&cfg, op);
}

/* The E GEMMs per chunk of the recorders below: (co, T, ci) for forward and backward-data,
 * dU^T (ci, co, T) stored transposed for backward-filter. */
static dbk_ocl_conv_gemm chunk_gemm(const wino_plan *p, dbk_op op, int nb, int chunks) {
    const int T = nb * p->TH * p->TW;
    if (op == DBK_OP_CONV2D_BWD_FILTER)
        return (dbk_ocl_conv_gemm){.m = p->ci, .n = p->co, .k = T, .cpq = -1, .count = p->E * chunks, .batch = p->E};
    return (dbk_ocl_conv_gemm){.m = p->co, .n = T, .k = p->ci, .count = p->E * chunks, .batch = p->E};
}

int dbk_ocl_conv_winograd_gemm_plan(const dbk_ocl_conv_config *cfg, const dbk_op_desc *op,
                                    dbk_ocl_conv_gemm out[DBK_OCL_CONV_MAX_GEMMS]) {
    const wino_plan p = plan_for(cfg, op);
    const int full = p.N / p.nb, last = p.N % p.nb;
    int count = 0;
    if (full) out[count++] = chunk_gemm(&p, op->op, p.nb, full);
    if (last) out[count++] = chunk_gemm(&p, op->op, last, 1);
    return count;
}

size_t dbk_ocl_conv_winograd_workspace_bytes(const dbk_backend *be, const dbk_op_desc *op) {
    return plan_of(be, op).floats * sizeof(float);
}

/* Tiles, channels or filter columns per work-item: the winograd4_ kernels work on four at once
 * (tpad and kpad, the padded tile and channel counts, are multiples of RB_W: 4, 8 or 16). */
static size_t lanes(const wino_plan *p) { return p->m == 4 ? 4 : 1; }
/* ... except the F(4x4) input and dy transforms, on 16 tiles or channels at once: a whole line
 * of each plane (winograd4_input16_at, winograd4_dy16_at). */
static size_t line_lanes(const wino_plan *p) { return p->m == 4 ? 16 : 1; }

static dbk_status check_prepared(dbk_backend *be, const dbk_op_desc *op, const wino_plan *p) {
    const dbk_ocl_ctx *c = dbk_ocl(be);
    if (!c->workspace || p->floats * sizeof(float) > c->workspace_bytes)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "%s%s%s was not prepared (Winograd workspace %zu bytes needed)",
                             dbk_op_name(op->op), op->label ? " for " : "", op->label ? op->label : "",
                             p->floats * sizeof(float));
    return DBK_OK;
}

/* ---------------------------------------------------------------------------------- */
/* launches of cl/conv2d_winograd.cl                                                   */

/* A transform's grid of work-items (dbk_ocl_range2's n0, n1). */
typedef struct wino_grid { size_t n0, n1; } wino_grid;

/* The F(4x4,3x3) path launches two independent transforms at once (conv2d_winograd4_filter_input,
 * conv2d_winograd4_output_input, conv2d_winograd4_input_dy): the filter transform with the first chunk's
 * input transform, a chunk's output transform with the next chunk's input transform, a chunk's
 * input and dy transforms. An op of n chunks is then 2n + 1 launches instead of 3n + 1, the
 * same arithmetic on the same workspace regions (a GPU pays a few microseconds per launch).
 * F(2x2,3x3) launches each transform alone. */
static bool paired(const wino_plan *p) { return p->m == 4; }

/* Ends a launch of one transform's kernel, its arguments set. */
static dbk_status single_range(dbk_ocl_args *a, wino_grid g) { return dbk_ocl_range2(a, g.n0, g.n1); }

/* Block widths for the second transform of a pair kernel (wino4_pair_at in
 * cl/conv2d_winograd.cl). A packed plane (V of forward and backward-data, Z of backward-filter)
 * holds a panel of pw tiles of one channel, then the next channel's panel: a block 16 work-items
 * (16 panels of 16 tiles, winograd4_input16_at) wide and 16 channels tall writes each of its 36
 * planes in 16 runs of 1 KiB, and a dy block 64 tiles wide and 4 work-items (16 channels) tall
 * fills whole lines.
 * Work-groups 256 work-items wide along the tiles, one channel tall, wrote 36 x 16 separate
 * lines, pw * C floats apart (and, for Z, a quarter of each line): on PoCL 2x the time of the
 * input and dy transforms (docs/measurements/opencl.md). The first transform keeps the long
 * runs along dimension 0 its reads want (the output transform reads M row-major). */
enum { PACKED_INPUT_BLOCK = 16, PACKED_DY_BLOCK = 64 };

/* Ends a launch of a pair kernel, both transforms' arguments set: the first transform's grid in
 * the rows below a1 (rounded up to the work-group's height), then enough rows of work-groups
 * for the second's grid in blocks bw wide (wino4_pair_at). */
static dbk_status pair_range(dbk_ocl_args *a, wino_grid first, wino_grid second, size_t bw) {
    const size_t lim = dbk_ocl_wg_limit(a->be, a->launch->kernel, 256);
    const size_t n0 = first.n0 > second.n0 ? first.n0 : second.n0;
    size_t l0 = 1;
    while (l0 < n0 && l0 < lim) l0 *= 2;
    const size_t l1 = lim / l0, groups0 = (n0 + l0 - 1) / l0;
    if (bw > lim) bw = lim;
    const size_t a1 = round_up(first.n1, l1);
    const size_t blocks = (second.n0 + bw - 1) / bw * ((second.n1 + lim / bw - 1) / (lim / bw));
    const size_t rows2 = (blocks + groups0 - 1) / groups0 * l1;
    dbk_ocl_arg_int(a, (int)a1);
    dbk_ocl_arg_int(a, (int)second.n0);
    dbk_ocl_arg_int(a, (int)bw);
    const size_t global[2] = {groups0 * l0, a1 + rows2}, local[2] = {l0, l1};
    return dbk_ocl_args_done(a, 2, global, local);
}

/* The arguments of the filter transform U = filter(w) into region r0. */
static wino_grid filter_args(dbk_ocl_args *a, const dbk_tensor *w, bool flip, const wino_plan *p) {
    dbk_ocl_arg_tensor(a, w);
    dbk_ocl_arg_int(a, (int)w->shape[0]);
    dbk_ocl_arg_int(a, (int)w->shape[1]);
    dbk_ocl_arg_int(a, flip ? 1 : 0);
    dbk_ocl_arg_mem(a, dbk_ocl(a->be)->workspace);
    dbk_ocl_arg_uint(a, (cl_uint)p->r0);
    dbk_ocl_args_floats(a, (double)p->E * p->co * p->ci);   /* U */
    return (wino_grid){((size_t)p->ci + lanes(p) - 1) / lanes(p), (size_t)p->co};
}

/* The arguments of the input transform V = input(images n0 .. n0+nb-1 of t, ci channels) into
 * region `at`, pw columns a panel (0: row-major, tpad columns). */
static wino_grid input_args(dbk_ocl_args *a, const wino_plan *p, const dbk_tensor *t, int n0, int nb, size_t at,
                            int pw) {
    const int T = nb * p->TH * p->TW, tpad = (int)round_up((size_t)T, (size_t)p->rb_w);
    const size_t plane = (size_t)p->ci * p->H * p->W;
    dbk_ocl_arg_mem(a, dbk_ocl_mem(t));
    dbk_ocl_arg_uint(a, dbk_ocl_off(t) + (cl_uint)((size_t)n0 * plane));
    const int v[] = {p->ci, p->H, p->W, p->TH, p->TW, nb, tpad, pw ? pw : tpad};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) dbk_ocl_arg_int(a, v[i]);
    dbk_ocl_arg_mem(a, dbk_ocl(a->be)->workspace);
    dbk_ocl_arg_uint(a, (cl_uint)at);
    dbk_ocl_args_floats(a, (double)nb * plane + (double)p->E * p->ci * tpad);   /* x chunk, V */
    return (wino_grid){((size_t)tpad + line_lanes(p) - 1) / line_lanes(p), (size_t)p->ci};
}

/* The leading arguments of conv2d_winograd_output and conv2d_winograd_dy: a buffer and element offset, then
 * K, P, Q, TH, TW, nb. */
static void tile_args(dbk_ocl_args *a, cl_mem t, cl_uint t_off, int k, const wino_plan *p, int nb) {
    dbk_ocl_arg_mem(a, t);
    dbk_ocl_arg_uint(a, t_off);
    const int v[] = {k, p->H, p->W, p->TH, p->TW, nb};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) dbk_ocl_arg_int(a, v[i]);
}

/* The arguments of the output transform of M (region r2) into images n0 .. n0+nb-1 of dst. */
static wino_grid output_args(dbk_ocl_args *a, const wino_plan *p, int n0, int nb, const dbk_tensor *dst) {
    const int T = nb * p->TH * p->TW;
    const size_t plane = (size_t)p->co * p->H * p->W;
    tile_args(a, dbk_ocl(a->be)->workspace, (cl_uint)p->r2, p->co, p, nb);
    dbk_ocl_arg_int(a, T);
    dbk_ocl_arg_mem(a, dbk_ocl_mem(dst));
    dbk_ocl_arg_uint(a, dbk_ocl_off(dst) + (cl_uint)((size_t)n0 * plane));
    dbk_ocl_args_floats(a, (double)p->E * p->co * T + (double)nb * plane);   /* M, y chunk */
    return (wino_grid){((size_t)T + lanes(p) - 1) / lanes(p), (size_t)p->co};
}

/* The arguments of the dy transform Z = dy_transform(images n0 .. n0+nb-1 of dy) into region
 * r1, packed. */
static wino_grid dy_args(dbk_ocl_args *a, const wino_plan *p, const dbk_tensor *dy, int n0, int nb) {
    const int T = nb * p->TH * p->TW, kpad = (int)round_up((size_t)p->co, (size_t)p->rb_w);
    const size_t plane = (size_t)p->co * p->H * p->W;
    tile_args(a, dbk_ocl_mem(dy), dbk_ocl_off(dy) + (cl_uint)((size_t)n0 * plane), p->co, p, nb);
    dbk_ocl_arg_int(a, kpad);
    dbk_ocl_arg_int(a, p->rb_w);
    dbk_ocl_arg_mem(a, dbk_ocl(a->be)->workspace);
    dbk_ocl_arg_uint(a, (cl_uint)p->r1);
    dbk_ocl_args_floats(a, (double)nb * plane + (double)p->E * T * kpad);   /* dy chunk, Z */
    return (wino_grid){(size_t)T, ((size_t)kpad + line_lanes(p) - 1) / line_lanes(p)};
}

/* Images in the chunk starting at image n0. */
static int chunk_images(const wino_plan *p, int n0) { return p->N - n0 < p->nb ? p->N - n0 : p->nb; }

/* ---------------------------------------------------------------------------------- */
/* the three ops                                                                       */

/* Forward and backward-data: conv of src (ci channels) into dst (co channels). */
static dbk_status record_transformed_conv(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out,
                                          const dbk_tensor *src, const dbk_tensor *w, bool flip, const dbk_tensor *dst) {
    const wino_plan p = plan_of(be, op);
    DBK_TRY(check_prepared(be, op, &p));
    cl_mem ws = dbk_ocl(be)->workspace;
    dbk_ocl_args a;
    /* the filter transform (with the first chunk's input transform when paired) */
    DBK_TRY(dbk_ocl_kernel(be, out, paired(&p) ? "conv2d_winograd4_filter_input" : kernel_name(&p, WINO_FILTER), &a));
    const wino_grid filter = filter_args(&a, w, flip, &p);
    if (paired(&p))
        DBK_TRY(pair_range(&a, filter, input_args(&a, &p, src, 0, chunk_images(&p, 0), p.r1, p.rb_w),
                           PACKED_INPUT_BLOCK));
    else
        DBK_TRY(single_range(&a, filter));
    for (int n0 = 0; n0 < p.N; n0 += p.nb) {
        const int nb = chunk_images(&p, n0), next = n0 + nb;
        const int T = nb * p.TH * p.TW, tpad = (int)round_up((size_t)T, (size_t)p.rb_w);
        if (!paired(&p)) {
            DBK_TRY(dbk_ocl_kernel(be, out, kernel_name(&p, WINO_INPUT), &a));
            DBK_TRY(single_range(&a, input_args(&a, &p, src, n0, nb, p.r1, p.rb_w)));
        }
        /* M[e] (co, T) = U[e] (co, ci) . V[e] (ci, T) for the E planes, in one launch */
        const dbk_ocl_matrix U = {ws, (cl_uint)p.r0, p.ci}, M = {ws, (cl_uint)p.r2, T};
        const dbk_ocl_batch planes = {p.E, (cl_uint)plane_floats(p.co, p.ci), (cl_uint)plane_floats(p.ci, tpad),
                                      (cl_uint)plane_floats(p.co, T)};
        DBK_TRY(dbk_ocl_gemm_batch_record(be, out, false, p.co, T, p.ci, 1.0f, U, ws, (cl_uint)p.r1, 0.0f, M, 0, planes));
        /* the output transform (with the next chunk's input transform when paired) */
        const bool pair = paired(&p) && next < p.N;
        DBK_TRY(dbk_ocl_kernel(be, out, pair ? "conv2d_winograd4_output_input" : kernel_name(&p, WINO_OUTPUT), &a));
        const wino_grid output = output_args(&a, &p, n0, nb, dst);
        if (pair)
            DBK_TRY(pair_range(&a, output, input_args(&a, &p, src, next, chunk_images(&p, next), p.r1, p.rb_w),
                               PACKED_INPUT_BLOCK));
        else
            DBK_TRY(single_range(&a, output));
    }
    return DBK_OK;
}

dbk_status dbk_ocl_record_conv2d_winograd_fwd(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    return record_transformed_conv(be, op, out, &op->src[0], &op->src[1], false, &op->dst[0]);
}

dbk_status dbk_ocl_record_conv2d_winograd_bwd_data(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    return record_transformed_conv(be, op, out, &op->src[0], &op->src[1], true, &op->dst[0]);
}

dbk_status dbk_ocl_record_conv2d_winograd_bwd_filter(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const dbk_tensor *x = &op->src[0], *dy = &op->src[1], *dw = &op->dst[0];
    const wino_plan p = plan_of(be, op);
    DBK_TRY(check_prepared(be, op, &p));
    cl_mem ws = dbk_ocl(be)->workspace;
    const int kpad = (int)round_up((size_t)p.co, (size_t)p.rb_w);
    dbk_ocl_args a;
    for (int n0 = 0; n0 < p.N; n0 += p.nb) {
        const int nb = chunk_images(&p, n0);
        const int T = nb * p.TH * p.TW, tpad = (int)round_up((size_t)T, (size_t)p.rb_w);
        /* the input and dy transforms, one launch when paired */
        DBK_TRY(dbk_ocl_kernel(be, out, paired(&p) ? "conv2d_winograd4_input_dy" : kernel_name(&p, WINO_INPUT), &a));
        const wino_grid input = input_args(&a, &p, x, n0, nb, p.r0, 0);
        if (paired(&p)) {
            DBK_TRY(pair_range(&a, input, dy_args(&a, &p, dy, n0, nb), PACKED_DY_BLOCK));
        } else {
            DBK_TRY(single_range(&a, input));
            DBK_TRY(dbk_ocl_kernel(be, out, kernel_name(&p, WINO_DY), &a));
            DBK_TRY(single_range(&a, dy_args(&a, &p, dy, n0, nb)));
        }
        /* dU^T[e] (ci, co) (+)= V[e] (ci, T) . Z[e] (T, co), stored as dU[e], the E planes in one launch */
        const dbk_ocl_matrix V = {ws, (cl_uint)p.r0, tpad}, dU = {ws, (cl_uint)p.r2, p.ci};
        const dbk_ocl_batch planes = {p.E, (cl_uint)plane_floats(p.ci, tpad), (cl_uint)plane_floats(T, kpad),
                                      (cl_uint)plane_floats(p.co, p.ci)};
        DBK_TRY(dbk_ocl_gemm_batch_record(be, out, false, p.ci, p.co, T, 1.0f, V, ws, (cl_uint)p.r1,
                                          n0 == 0 ? 0.0f : 1.0f, dU, -1, planes));
    }
    DBK_TRY(dbk_ocl_kernel(be, out, kernel_name(&p, WINO_FILTER_GRAD), &a));
    dbk_ocl_arg_mem(&a, ws);
    dbk_ocl_arg_uint(&a, (cl_uint)p.r2);
    dbk_ocl_arg_int(&a, p.co);
    dbk_ocl_arg_int(&a, p.ci);
    dbk_ocl_arg_tensor(&a, dw);
    dbk_ocl_args_floats(&a, (double)p.E * p.co * p.ci);   /* dU */
    return dbk_ocl_range2(&a, ((size_t)p.ci + lanes(&p) - 1) / lanes(&p), (size_t)p.co);
}
