/*
 * ocl_ops_conv.c — 2-D convolution on the OpenCL backend: forward, backward-data and
 * backward-filter as im2col/col2im (cl/conv2d_im2col.cl) around one GEMM per chunk of images
 * (ocl_blas.c: tiled kernel or CLBlast, per the profile). Semantics and letters as the CPU
 * reference (src/backends/cpu/conv.c): x (N,C,H,W), w (K,C,R,S), y (N,K,P,Q).
 *
 * The batch is cut into chunks of nb images so that the workspace — col (C*R*S, nb*P*Q) plus,
 * when nb > 1, tmp (K, nb*P*Q) — stays within the profile's "opencl.conv_workspace_mb"
 * (default 64 MiB, at most half the device's max allocation) and every region below 2^31
 * elements (the kernels' 32-bit indices: a GPU profile's large budget cannot overflow them);
 * big chunks keep the GEMMs wide
 * (the 4x4 layers would otherwise give 16-column GEMMs). Per chunk starting at image n0:
 *   forward     col = im2col(x chunk); tmp (K, cols) = w (K, CRS) . col; y chunk = scatter(tmp)
 *   bwd data    tmp = gather(dy chunk); dcol (CRS, cols) = w^T . tmp; dx chunk = col2im(dcol)
 *   bwd filter  col = im2col(x chunk); tmp = gather(dy chunk); dw (+)= tmp . col^T
 * (with nb == 1 the chunk of y/dy already is a (K, P*Q) matrix: no gather/scatter).
 *
 * With the tiled GEMM ("opencl.gemm": "tiled") the B operand of each GEMM is produced packed
 * in panels of RB_W columns (gemm_rb in cl/gemm_tiled.cl): im2col_packed for the forward,
 * gather_packed for backward-data, whose A operand w^T is transposed once per op into
 * workspace region 2 (gemm_rb reading a transposed A strides by C*R*S floats per step);
 * backward-filter computes dw^T (CRS, K) = col . dy^T with a row-major col, dy^T packed
 * (gather_t_packed) and dw stored transposed by the GEMM.
 * CLBlast takes the plain row-major matrices above.
 *
 * A 1x1 stride-1 unpadded convolution (ResNet-50's bottlenecks) needs no im2col: with gemm_rb
 * its col is the chunk of x packed by gather_packed (vector copies where P*Q is a multiple
 * of the panel width, which im2col_packed at ResNet's 56/28/14/7 widths is not), its
 * backward-data GEMM stores into dx directly (no col2im) and its backward-filter GEMM reads x
 * in place (one image) or after a gather_nk.
 *
 * A forward convolution whose col has fewer than DBK_OCL_NARROW_ROWS rows (airbench94's 2x2
 * whitening layer on 3 channels: 12) is one conv_narrow_fwd launch from x and w, without col, GEMM,
 * scatter or chunks: 18 chunks of 3 launches each at batch 1024 under PoCL's 8 MiB budget
 * before (docs/measurements/opencl.md). Its backward ops stay on the path above.
 *
 * 3x3 stride-1 pad-1 layers may run as Winograd F(2x2,3x3) or F(4x4,3x3) instead, per the profile
 * (ocl_ops_conv_winograd.c) or as the "direct" kernels (ocl_ops_conv_direct.c: no col matrix, for
 * narrow layers); this file stays the fallback for every other layer and device.
 *
 * A CLBlast backward-filter GEMM with a small output on a device with many compute units is
 * split along its K dimension (split_k_slices below).
 *
 * The workspace is the backend's, sized at prepare time, in up to four regions: r0 (col or
 * dcol), r1 (tmp, or the packed dy / dy^T), r2 (w^T), r3 (split-K's partial products); chunks
 * run in order on the in-order queue, so they share it.
 */
#include <string.h>

#include "backends/opencl/ocl_internal.h"

typedef struct conv_geom {
    int N, C, H, W, K, R, S, P, Q;
    int sh, sw, ph, pw;
    int crs, pq;
    int nb;                 /* images per chunk */
    bool packed;            /* B operands packed for gemm_rb */
    int panel;              /* RB_W when packed, else 1 */
    size_t r0_floats;       /* workspace region 0 (col, col^T or dcol) */
    size_t r1_floats;       /* workspace region 1 (tmp or packed dy) */
    size_t r2_floats;       /* workspace region 2 (w^T for a packed backward-data) */
    int split;              /* split-K slices of a CLBlast backward-filter GEMM (1: none) */
    size_t r3_floats;       /* workspace region 3: the slices' partial dw (split, K, CRS) */
} conv_geom;

static size_t round_up(size_t v, size_t m) { return (v + m - 1) / m * m; }

static bool narrow_forward(const dbk_op_desc *op) {
    if (op->op != DBK_OP_CONV2D_FWD) return false;
    const dbk_conv2d_geom g = dbk_conv2d_geom_of(op);
    return g.C * g.R * g.S < DBK_OCL_NARROW_ROWS;
}

/* A 1x1 stride-1 unpadded convolution: col is x itself (C rows, P*Q = H*W), so im2col
 * becomes a plain (or packing) copy of x, and col2im a copy back, or nothing. */
static bool pointwise(const conv_geom *g) {
    return g->R == 1 && g->S == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0;
}

/* Forward with gemm_rb: when a panel never straddles two images (P*Q a multiple of the
 * panel width), the GEMM stores straight into the (nb, K, P, Q) output: no tmp, no scatter. */
static bool direct_store(const conv_geom *g) { return g->packed && g->nb > 1 && g->pq % g->panel == 0; }

/* Workspace regions of a chunk of g->nb images (the file comment lists them). */
static void set_regions(conv_geom *g, dbk_op op) {
    const size_t cols = (size_t)g->nb * (size_t)g->pq, pn = (size_t)g->panel;
    const size_t crs = (size_t)g->crs, k = (size_t)g->K;
    g->r2_floats = 0;
    if (op == DBK_OP_CONV2D_BWD_DATA) {
        g->r0_floats = crs * cols;
        g->r1_floats = g->packed ? k * round_up(cols, pn) : (g->nb > 1 ? k * cols : 0);
        g->r2_floats = g->packed ? k * crs : 0;
    } else if (op == DBK_OP_CONV2D_BWD_FILTER) {
        g->r0_floats = crs * cols;
        g->r1_floats = g->packed ? cols * round_up(k, pn) : (g->nb > 1 ? k * cols : 0);
    } else {
        g->r0_floats = g->packed ? crs * round_up(cols, pn) : crs * cols;
        g->r1_floats = g->nb > 1 && !direct_store(g) ? k * cols : 0;
    }
}

/* Whether a chunk's indices fit the kernels' 32-bit arithmetic: each region and the chunk's
 * slices of x and y index with int (below 2^31 elements), the regions' offsets in the
 * workspace are uint (their sum below 2^32). */
static bool chunk_fits_32bit(const conv_geom *g) {
    const size_t limit = (size_t)DBK_OCL_MAX_INDEX;
    const size_t x_chunk = (size_t)g->nb * (size_t)g->C * (size_t)g->H * (size_t)g->W;
    const size_t y_chunk = (size_t)g->nb * (size_t)g->K * (size_t)g->pq;
    return g->r0_floats <= limit && g->r1_floats <= limit && g->r2_floats <= limit && g->r3_floats <= limit &&
           x_chunk <= limit && y_chunk <= limit &&
           g->r0_floats + g->r1_floats + g->r2_floats + g->r3_floats <= 2 * limit;
}

/* Split-K of a CLBlast backward-filter GEMM, dw (K, CRS) = dy (K, cols) . col^T with cols =
 * N*P*Q: its output is small (airbench94's first block, 64 x 216) and its K huge (1024 x 961),
 * so on a GPU one GEMM runs on a few work-groups (CLBlast's 64x64-ish tiles: 4 of them) while
 * most compute units idle. Below `units` tiles the cols are cut into S equal slices (S divides
 * cols, each at least SPLITK_MIN_SLICE long, S up to SPLITK_MAX and units / tiles): one strided
 * batched GEMM writes S partial products, splitk_sum adds them into dw; fewer than SPLITK_MIN
 * slices: no split. Only the one-chunk case (the whole batch in the workspace, what a GPU
 * profile's conv_chunking "off" gives); PoCL's 2 compute units never split (and its own
 * profile's gemm_rb never takes this path). */
#define SPLITK_TILE 64
#define SPLITK_MIN_SLICE 512
#define SPLITK_MAX 32
#define SPLITK_MIN 4      /* fewer slices do not pay for the fill and the sum */
static int split_k_slices(const conv_geom *g, int units) {
    const long tiles = (long)((g->K + SPLITK_TILE - 1) / SPLITK_TILE) * (long)((g->crs + SPLITK_TILE - 1) / SPLITK_TILE);
    if (units <= 0 || g->packed || g->nb != g->N || tiles >= units) return 1;
    const long cols = (long)g->nb * g->pq;
    long s = units / tiles;
    if (s > SPLITK_MAX) s = SPLITK_MAX;
    if (s > cols / SPLITK_MIN_SLICE) s = cols / SPLITK_MIN_SLICE;
    while (s > 1 && cols % s) s--;
    return s >= SPLITK_MIN ? (int)s : 1;
}

static conv_geom geometry_for(const dbk_ocl_conv_config *cfg, const dbk_op_desc *op) {
    const dbk_conv2d_geom cg = dbk_conv2d_geom_of(op);   /* 31-bit sizes: checked in prepare */
    conv_geom g;
    memset(&g, 0, sizeof g);
    g.split = 1;
    g.N = (int)cg.N; g.C = (int)cg.C; g.H = (int)cg.H; g.W = (int)cg.W;
    g.K = (int)cg.K; g.R = (int)cg.R; g.S = (int)cg.S;
    g.P = (int)cg.P; g.Q = (int)cg.Q;
    g.sh = cg.stride_h; g.sw = cg.stride_w;
    g.ph = cg.pad_h;    g.pw = cg.pad_w;
    g.crs = g.C * g.R * g.S;
    g.pq = g.P * g.Q;
    g.packed = cfg->packed;
    g.panel = g.packed ? cfg->rb_w : 1;
    /* Images per chunk within the budget, then evened out over the chunks. */
    const size_t per_image = ((size_t)g.crs + (size_t)g.K) * (size_t)g.pq * sizeof(float);
    int nb = per_image ? (int)(cfg->conv_budget / per_image) : g.N;
    if (nb < 1) nb = 1;
    if (nb > g.N) nb = g.N > 0 ? g.N : 1;
    /* A GPU profile's budget may allow more than 32-bit indices reach: fewer images then. */
    for (;;) {
        const int chunks = (g.N + nb - 1) / nb;
        g.nb = chunks > 0 ? (g.N + chunks - 1) / chunks : nb;
        set_regions(&g, op->op);
        if (g.nb == 1 || chunk_fits_32bit(&g)) break;
        nb = g.nb - 1;
    }
    g.split = op->op == DBK_OP_CONV2D_BWD_FILTER ? split_k_slices(&g, cfg->compute_units) : 1;
    g.r3_floats = g.split > 1 ? (size_t)g.split * (size_t)g.K * (size_t)g.crs : 0;
    if (g.split > 1 && !chunk_fits_32bit(&g)) {
        g.split = 1;
        g.r3_floats = 0;
    }
    return g;
}

dbk_ocl_conv_config dbk_ocl_conv_config_of(const dbk_backend *be) {
    const dbk_ocl_ctx *ctx = dbk_ocl(be);
    return (dbk_ocl_conv_config){.packed = ctx->gemm == DBK_OCL_GEMM_TILED, .rb_w = ctx->tiles.rb_w,
                                 .conv_budget = ctx->conv_budget, .choice = &ctx->conv,
                                 .compute_units = ctx->split_k_units};
}

static conv_geom conv_geometry(const dbk_backend *be, const dbk_op_desc *op) {
    const dbk_ocl_conv_config cfg = dbk_ocl_conv_config_of(be);
    return geometry_for(&cfg, op);
}

size_t dbk_ocl_conv_workspace_bytes(const dbk_backend *be, const dbk_op_desc *op) {
    if (op->op != DBK_OP_CONV2D_FWD && op->op != DBK_OP_CONV2D_BWD_DATA && op->op != DBK_OP_CONV2D_BWD_FILTER)
        return 0;
    if (dbk_ocl_conv_winograd_chosen(be, op)) return dbk_ocl_conv_winograd_workspace_bytes(be, op);
    if (dbk_ocl_conv_direct_chosen(be, op)) return dbk_ocl_conv_direct_workspace_bytes(be, op);
    if (narrow_forward(op)) return 0;
    const conv_geom g = conv_geometry(be, op);
    return (g.r0_floats + g.r1_floats + g.r2_floats + g.r3_floats) * sizeof(float);
}

/* ---------------------------------------------------------------------------------- */
/* data movement kernels                                                               */

static void geom_args(dbk_ocl_args *a, const conv_geom *g) {
    const int v[] = {g->C, g->H, g->W, g->R, g->S, g->P, g->Q, g->sh, g->sw, g->ph, g->pw};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) dbk_ocl_arg_int(a, v[i]);
}

/* im2col into workspace region 0 from nb images at element offset x_off of x: kind "im2col"
 * (row-major col, GPU-shaped), "im2col_packed" (col in panels for gemm_rb) or "im2col_plain"
 * (row-major col written panel by panel by the same kernel). */
static dbk_status im2col(dbk_backend *be, dbk_ocl_launches *out, const conv_geom *g, const char *kind, cl_mem x,
                         cl_uint x_off, int nb) {
    dbk_ocl_args a;
    const bool plain = !strcmp(kind, "im2col_plain");
    DBK_TRY(dbk_ocl_kernel(be, out, plain ? "im2col_packed" : kind, &a));
    dbk_ocl_arg_mem(&a, x);
    dbk_ocl_arg_uint(&a, x_off);
    geom_args(&a, g);
    dbk_ocl_arg_int(&a, nb);
    dbk_ocl_arg_mem(&a, dbk_ocl(be)->workspace);
    dbk_ocl_arg_uint(&a, 0);
    const size_t cols = (size_t)nb * (size_t)g->pq, crs = (size_t)g->crs, pn = (size_t)g->panel;
    dbk_ocl_args_floats(&a, (double)nb * g->C * g->H * g->W + (double)crs * (double)cols);   /* x chunk, col */
    if (!strcmp(kind, "im2col")) return dbk_ocl_range2(&a, (size_t)g->Q, crs * (size_t)nb * (size_t)g->P);
    dbk_ocl_arg_int(&a, plain ? 1 : 0);
    return dbk_ocl_range1(&a, (cols + pn - 1) / pn * crs);
}

static dbk_status col2im(dbk_backend *be, dbk_ocl_launches *out, const conv_geom *g, cl_mem dx, cl_uint dx_off, int nb) {
    dbk_ocl_args a;
    const bool v16 = g->packed && g->sh == 1 && g->sw == 1 && g->W % 16 == 0;   /* vector rows (CPU devices) */
    DBK_TRY(dbk_ocl_kernel(be, out, v16 ? "col2im_v16" : "col2im", &a));
    dbk_ocl_arg_mem(&a, dbk_ocl(be)->workspace);
    dbk_ocl_arg_uint(&a, 0);
    geom_args(&a, g);
    dbk_ocl_arg_int(&a, nb);
    dbk_ocl_arg_mem(&a, dx);
    dbk_ocl_arg_uint(&a, dx_off);
    dbk_ocl_args_floats(&a, (double)g->crs * nb * g->pq + (double)nb * g->C * g->H * g->W);   /* dcol, dx chunk */
    return dbk_ocl_range2(&a, (size_t)g->W / (v16 ? 16 : 1), (size_t)nb * (size_t)g->C * (size_t)g->H);
}

/* The workspace at float offset ws_off <-> a (nb,rows,PQ) chunk of t: "gather_nk" (to a
 * (rows, nb*PQ) matrix), "scatter_nk" (back), "gather_packed" (to the matrix in panels) or
 * "gather_t_packed" (its transpose in panels). */
static dbk_status reshuffle_rows(dbk_backend *be, dbk_ocl_launches *out, const conv_geom *g, const char *kind,
                                 cl_mem t, cl_uint t_off, int rows, cl_uint ws_off, int nb) {
    dbk_ocl_args a;
    cl_mem ws = dbk_ocl(be)->workspace;
    const bool to_ws = strcmp(kind, "scatter_nk") != 0;
    DBK_TRY(dbk_ocl_kernel(be, out, kind, &a));
    dbk_ocl_arg_mem(&a, to_ws ? t : ws);
    dbk_ocl_arg_uint(&a, to_ws ? t_off : ws_off);
    dbk_ocl_arg_int(&a, rows);
    dbk_ocl_arg_int(&a, g->pq);
    dbk_ocl_arg_int(&a, nb);
    dbk_ocl_arg_mem(&a, to_ws ? ws : t);
    dbk_ocl_arg_uint(&a, to_ws ? ws_off : t_off);
    const size_t cols = (size_t)nb * (size_t)g->pq, pn = (size_t)g->panel;
    dbk_ocl_args_floats(&a, 2.0 * (double)rows * (double)cols);   /* the chunk in, the matrix out */
    if (!strcmp(kind, "gather_packed")) return dbk_ocl_range1(&a, (cols + pn - 1) / pn * (size_t)rows);
    if (!strcmp(kind, "gather_t_packed")) return dbk_ocl_range1(&a, ((size_t)rows + pn - 1) / pn * cols);
    return dbk_ocl_range2(&a, (size_t)g->pq, (size_t)nb * (size_t)rows);
}

/* Workspace region 1 <-> a (nb,K,PQ) chunk of t (y or dy). */
static dbk_status reshuffle(dbk_backend *be, dbk_ocl_launches *out, const conv_geom *g, const char *kind, cl_mem t,
                            cl_uint t_off, int nb) {
    return reshuffle_rows(be, out, g, kind, t, t_off, g->K, (cl_uint)g->r0_floats, nb);
}

/* Workspace at float offset wt_off = the (cols, rows) transpose of the (rows, cols) tensor w. */
static dbk_status transpose(dbk_backend *be, dbk_ocl_launches *out, const dbk_tensor *w, int rows, int cols,
                            cl_uint wt_off) {
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "transpose", &a));
    dbk_ocl_arg_tensor(&a, w);
    dbk_ocl_arg_int(&a, rows);
    dbk_ocl_arg_int(&a, cols);
    dbk_ocl_arg_mem(&a, dbk_ocl(be)->workspace);
    dbk_ocl_arg_uint(&a, wt_off);
    dbk_ocl_args_floats(&a, (double)rows * cols);
    return dbk_ocl_range2(&a, (size_t)cols, (size_t)rows);
}

static dbk_status check_workspace(dbk_backend *be, const dbk_op_desc *op, const conv_geom *g) {
    if (!chunk_fits_32bit(g))   /* even one image's col is past what 32-bit indices reach */
        return dbk_set_error(DBK_ERR_UNSUPPORTED, "%s%s%s: one image's im2col matrix (%zu floats) is too large for "
                             "32-bit kernel indexing", dbk_op_name(op->op), op->label ? " for " : "",
                             op->label ? op->label : "", g->r0_floats);
    const size_t need = (g->r0_floats + g->r1_floats + g->r2_floats + g->r3_floats) * sizeof(float);
    if (need > dbk_ocl(be)->workspace_bytes || !dbk_ocl(be)->workspace)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "%s%s%s was not prepared (workspace %zu bytes needed)",
                             dbk_op_name(op->op), op->label ? " for " : "", op->label ? op->label : "", need);
    return DBK_OK;
}

/* C = alpha op(A) B + beta C with B in workspace region `b_off`: packed for gemm_rb, or a
 * plain row-major (K, n) matrix for the other GEMM paths. */
static dbk_status gemm_ws_b(dbk_backend *be, dbk_ocl_launches *out, const conv_geom *g, bool ta, int m, int n, int k,
                            dbk_ocl_matrix a, cl_uint b_off, float beta, dbk_ocl_matrix c) {
    cl_mem ws = dbk_ocl(be)->workspace;
    if (g->packed) return dbk_ocl_gemm_packed_record(be, out, ta, m, n, k, 1.0f, a, ws, b_off, beta, c, 0);
    dbk_ocl_matrix b = {ws, b_off, n};
    return dbk_ocl_gemm_record(be, out, ta, false, m, n, k, 1.0f, a, b, beta, c);
}

/* The whole forward of a narrow layer (narrow_forward) in one launch. */
static dbk_status conv_narrow_fwd(dbk_backend *be, dbk_ocl_launches *out, const conv_geom *g, const dbk_tensor *x,
                                  const dbk_tensor *w, const dbk_tensor *y) {
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "conv_narrow_fwd", &a));
    dbk_ocl_arg_tensor(&a, x);
    geom_args(&a, g);
    dbk_ocl_arg_int(&a, g->N);
    dbk_ocl_arg_int(&a, g->K);
    dbk_ocl_arg_tensor(&a, w);
    dbk_ocl_arg_tensor(&a, y);
    return dbk_ocl_range2(&a, (size_t)g->Q, (size_t)g->N * (size_t)g->P);
}

/* ---------------------------------------------------------------------------------- */
/* the three ops                                                                       */

dbk_status dbk_ocl_record_conv2d_fwd(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    if (dbk_ocl_conv_winograd_chosen(be, op)) return dbk_ocl_record_conv2d_winograd_fwd(be, op, out);
    if (dbk_ocl_conv_direct_chosen(be, op)) return dbk_ocl_record_conv2d_direct_fwd(be, op, out);
    const conv_geom g = conv_geometry(be, op);
    const dbk_tensor *x = &op->src[0], *w = &op->src[1], *y = &op->dst[0];
    if (g.N == 0 || g.K == 0 || g.pq == 0) return DBK_OK;
    if (g.crs == 0) return dbk_ocl_fill_record(be, out, dbk_ocl_mem(y), dbk_ocl_off(y), (cl_uint)dbk_tensor_numel(y), 0.0f);
    if (narrow_forward(op)) return conv_narrow_fwd(be, out, &g, x, w, y);
    DBK_TRY(check_workspace(be, op, &g));
    cl_mem ws = dbk_ocl(be)->workspace;
    for (int n0 = 0; n0 < g.N; n0 += g.nb) {
        const int nb = g.N - n0 < g.nb ? g.N - n0 : g.nb, cols = nb * g.pq;
        const cl_uint x_off = dbk_ocl_off(x) + (cl_uint)(n0 * g.C * g.H * g.W);
        if (g.packed && pointwise(&g))   /* col = the chunk of x as a (C, cols) matrix, packed */
            DBK_TRY(reshuffle_rows(be, out, &g, "gather_packed", dbk_ocl_mem(x), x_off, g.C, 0, nb));
        else
            DBK_TRY(im2col(be, out, &g, g.packed ? "im2col_packed" : "im2col", dbk_ocl_mem(x), x_off, nb));
        const cl_uint y_off = dbk_ocl_off(y) + (cl_uint)(n0 * g.K * g.pq);
        dbk_ocl_matrix A = {dbk_ocl_mem(w), dbk_ocl_off(w), g.crs};           /* w (K, CRS) */
        if (direct_store(&g)) {   /* gemm_rb writes the (nb, K, P, Q) chunk itself */
            dbk_ocl_matrix Y = {dbk_ocl_mem(y), y_off, cols};
            DBK_TRY(dbk_ocl_gemm_packed_record(be, out, false, g.K, cols, g.crs, 1.0f, A, ws, 0, 0.0f, Y, g.pq));
            continue;
        }
        dbk_ocl_matrix Cm = g.nb == 1 ? (dbk_ocl_matrix){dbk_ocl_mem(y), y_off, cols}
                                      : (dbk_ocl_matrix){ws, (cl_uint)g.r0_floats, cols};   /* (K, cols) */
        DBK_TRY(gemm_ws_b(be, out, &g, false, g.K, cols, g.crs, A, 0, 0.0f, Cm));
        if (g.nb > 1) DBK_TRY(reshuffle(be, out, &g, "scatter_nk", dbk_ocl_mem(y), y_off, nb));
    }
    return DBK_OK;
}

dbk_status dbk_ocl_record_conv2d_bwd_data(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    if (dbk_ocl_conv_winograd_chosen(be, op)) return dbk_ocl_record_conv2d_winograd_bwd_data(be, op, out);
    if (dbk_ocl_conv_direct_chosen(be, op)) return dbk_ocl_record_conv2d_direct_bwd_data(be, op, out);
    const conv_geom g = conv_geometry(be, op);
    const dbk_tensor *dy = &op->src[0], *w = &op->src[1], *dx = &op->dst[0];
    if (g.N == 0 || g.C == 0 || g.H * g.W == 0) return DBK_OK;
    if (g.K == 0 || g.pq == 0)
        return dbk_ocl_fill_record(be, out, dbk_ocl_mem(dx), dbk_ocl_off(dx), (cl_uint)dbk_tensor_numel(dx), 0.0f);
    DBK_TRY(check_workspace(be, op, &g));
    cl_mem ws = dbk_ocl(be)->workspace;
    const dbk_ocl_matrix Wt = {ws, (cl_uint)(g.r0_floats + g.r1_floats), g.K};   /* w^T (CRS, K), region 2 */
    if (g.packed) DBK_TRY(transpose(be, out, w, g.K, g.crs, Wt.off));
    for (int n0 = 0; n0 < g.N; n0 += g.nb) {
        const int nb = g.N - n0 < g.nb ? g.N - n0 : g.nb, cols = nb * g.pq;
        const cl_uint dy_off = dbk_ocl_off(dy) + (cl_uint)(n0 * g.K * g.pq);
        dbk_ocl_matrix A = {dbk_ocl_mem(w), dbk_ocl_off(w), g.crs};   /* w (K, CRS), used transposed */
        dbk_ocl_matrix Cm = {ws, 0, cols};                            /* dcol (CRS, cols) */
        const cl_uint dx_off = dbk_ocl_off(dx) + (cl_uint)(n0 * g.C * g.H * g.W);
        if (g.packed && pointwise(&g)) {
            /* dx chunk = w^T . dy: stored straight into dx (one image, or whole panels per
             * image as the forward's direct store), else through dcol and a scatter. */
            DBK_TRY(reshuffle(be, out, &g, "gather_packed", dbk_ocl_mem(dy), dy_off, nb));
            const bool direct = nb == 1 || g.pq % g.panel == 0;
            if (direct) Cm = (dbk_ocl_matrix){dbk_ocl_mem(dx), dx_off, cols};
            DBK_TRY(dbk_ocl_gemm_packed_record(be, out, false, g.crs, cols, g.K, 1.0f, Wt, ws, (cl_uint)g.r0_floats,
                                               0.0f, Cm, nb > 1 && direct ? g.pq : 0));
            if (!direct) DBK_TRY(reshuffle_rows(be, out, &g, "scatter_nk", dbk_ocl_mem(dx), dx_off, g.C, 0, nb));
            continue;
        }
        if (g.packed) {
            DBK_TRY(reshuffle(be, out, &g, "gather_packed", dbk_ocl_mem(dy), dy_off, nb));
            DBK_TRY(dbk_ocl_gemm_packed_record(be, out, false, g.crs, cols, g.K, 1.0f, Wt, ws, (cl_uint)g.r0_floats,
                                               0.0f, Cm, 0));
        } else {
            dbk_ocl_matrix B = {dbk_ocl_mem(dy), dy_off, cols};
            if (g.nb > 1) {
                DBK_TRY(reshuffle(be, out, &g, "gather_nk", dbk_ocl_mem(dy), dy_off, nb));
                B = (dbk_ocl_matrix){ws, (cl_uint)g.r0_floats, cols};
            }
            DBK_TRY(dbk_ocl_gemm_record(be, out, true, false, g.crs, cols, g.K, 1.0f, A, B, 0.0f, Cm));
        }
        DBK_TRY(col2im(be, out, &g, dbk_ocl_mem(dx), dx_off, nb));
    }
    return DBK_OK;
}

/* dw (+)= dy . col^T in g->split slices of the cols (split_k_slices): partial products into
 * workspace region 3 (zeroed first: CLBlast's beta 0 still multiplies C), then their sum. */
static dbk_status split_k_bwd_filter(dbk_backend *be, dbk_ocl_launches *out, const conv_geom *g, dbk_ocl_matrix dy,
                                     dbk_ocl_matrix col, float beta, const dbk_tensor *dw) {
    cl_mem ws = dbk_ocl(be)->workspace;
    const cl_uint part_off = (cl_uint)(g->r0_floats + g->r1_floats + g->r2_floats);
    const int cols = g->nb * g->pq, slice = cols / g->split, mn = g->K * g->crs;
    DBK_TRY(dbk_ocl_fill_record(be, out, ws, part_off, (cl_uint)g->r3_floats, 0.0f));
    const dbk_ocl_matrix P = {ws, part_off, g->crs};   /* (split, K, CRS) */
    DBK_TRY(dbk_ocl_gemm_strided_record(be, out, false, true, g->K, g->crs, slice, 1.0f, dy, col, 0.0f, P, g->split,
                                        (size_t)slice, (size_t)slice, (size_t)mn));
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "splitk_sum", &a));
    dbk_ocl_arg_mem(&a, ws);
    dbk_ocl_arg_uint(&a, part_off);
    dbk_ocl_arg_int(&a, g->split);
    dbk_ocl_arg_int(&a, mn);
    dbk_ocl_arg_float(&a, beta);
    dbk_ocl_arg_tensor(&a, dw);
    dbk_ocl_args_floats(&a, (double)g->r3_floats);
    return dbk_ocl_range1(&a, (size_t)mn);
}

dbk_status dbk_ocl_record_conv2d_bwd_filter(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    if (dbk_ocl_conv_winograd_chosen(be, op)) return dbk_ocl_record_conv2d_winograd_bwd_filter(be, op, out);
    if (dbk_ocl_conv_direct_chosen(be, op)) return dbk_ocl_record_conv2d_direct_bwd_filter(be, op, out);
    const conv_geom g = conv_geometry(be, op);
    const dbk_tensor *x = &op->src[0], *dy = &op->src[1], *dw = &op->dst[0];
    if (g.K == 0 || g.crs == 0) return DBK_OK;
    if (g.N == 0 || g.pq == 0)
        return dbk_ocl_fill_record(be, out, dbk_ocl_mem(dw), dbk_ocl_off(dw), (cl_uint)dbk_tensor_numel(dw), 0.0f);
    DBK_TRY(check_workspace(be, op, &g));
    cl_mem ws = dbk_ocl(be)->workspace;
    for (int n0 = 0; n0 < g.N; n0 += g.nb) {
        const int nb = g.N - n0 < g.nb ? g.N - n0 : g.nb, cols = nb * g.pq;
        const cl_uint x_off = dbk_ocl_off(x) + (cl_uint)(n0 * g.C * g.H * g.W);
        const cl_uint dy_off = dbk_ocl_off(dy) + (cl_uint)(n0 * g.K * g.pq);
        dbk_ocl_matrix A = {dbk_ocl_mem(dy), dy_off, cols};           /* dy chunk (K, cols) */
        if (!g.packed && g.nb > 1) {
            DBK_TRY(reshuffle(be, out, &g, "gather_nk", dbk_ocl_mem(dy), dy_off, nb));
            A = (dbk_ocl_matrix){ws, (cl_uint)g.r0_floats, cols};
        }
        dbk_ocl_matrix Cm = {dbk_ocl_mem(dw), dbk_ocl_off(dw), g.crs}; /* dw (K, CRS) */
        const float beta = n0 == 0 ? 0.0f : 1.0f;
        if (g.packed) {
            /* dw^T (CRS, K) = col (CRS, cols) . dy^T (cols, K), stored transposed into dw */
            dbk_ocl_matrix col = {ws, 0, cols};
            if (!pointwise(&g))
                DBK_TRY(im2col(be, out, &g, "im2col_plain", dbk_ocl_mem(x), x_off, nb));
            else if (nb > 1)   /* col = the chunk of x as a (C, cols) matrix */
                DBK_TRY(reshuffle_rows(be, out, &g, "gather_nk", dbk_ocl_mem(x), x_off, g.C, 0, nb));
            else               /* one image: col is x itself */
                col = (dbk_ocl_matrix){dbk_ocl_mem(x), x_off, cols};
            DBK_TRY(reshuffle(be, out, &g, "gather_t_packed", dbk_ocl_mem(dy), dy_off, nb));
            DBK_TRY(dbk_ocl_gemm_packed_record(be, out, false, g.crs, g.K, cols, 1.0f, col, ws, (cl_uint)g.r0_floats,
                                               beta, Cm, -1));
        } else if (g.split > 1) {
            DBK_TRY(im2col(be, out, &g, "im2col", dbk_ocl_mem(x), x_off, nb));
            DBK_TRY(split_k_bwd_filter(be, out, &g, A, (dbk_ocl_matrix){ws, 0, cols}, beta, dw));
        } else {
            DBK_TRY(im2col(be, out, &g, "im2col", dbk_ocl_mem(x), x_off, nb));
            dbk_ocl_matrix B = {ws, 0, cols};                          /* col (CRS, cols), used transposed */
            DBK_TRY(dbk_ocl_gemm_record(be, out, false, true, g.K, g.crs, cols, 1.0f, A, B, beta, Cm));
        }
    }
    return DBK_OK;
}

/* ---------------------------------------------------------------------------------- */
/* the GEMMs of a conv op (ocl_conv_plan.h)                                            */

size_t dbk_ocl_conv_im2col_budget(const dbk_profile *p, uint64_t max_alloc) {
    double mb = dbk_profile_number(p, "opencl.conv_workspace_mb", 64.0);
    if (!(mb >= 1.0 && mb <= 65536.0)) mb = 64.0;
    size_t budget = (size_t)(mb * 1048576.0);
    if (!strcmp(dbk_profile_string(p, "opencl.conv_chunking", "on"), "off")) budget = DBK_CONV_UNCHUNKED_BYTES;
    if (max_alloc && budget > max_alloc / 2) budget = (size_t)(max_alloc / 2);
    return budget;
}

dbk_status dbk_ocl_conv_config_read(const dbk_profile *p, uint64_t max_alloc, dbk_conv_choice *choice,
                                    dbk_ocl_conv_config *out) {
    const char *gemm = dbk_profile_string(p, "opencl.gemm", "clblast");
    out->packed = !strcmp(gemm, "tiled");
    out->rb_w = (int)dbk_profile_number(p, "opencl.gemm_tiled.RB_W", 16);
    out->conv_budget = dbk_ocl_conv_im2col_budget(p, max_alloc);
    out->choice = choice;
    out->compute_units = (int)dbk_profile_number(p, "opencl.split_k_compute_units", 0.0);
    return dbk_conv_choice_read(p, "opencl", (size_t)max_alloc, choice);
}

/* The GEMM of each of `chunks` chunks of nb images on the im2col path, as the three recorders
 * above issue it. */
static dbk_ocl_conv_gemm im2col_chunk_gemm(const conv_geom *g, dbk_op op, int nb, int chunks) {
    const int cols = nb * g->pq;
    if (op == DBK_OP_CONV2D_FWD)
        return (dbk_ocl_conv_gemm){.m = g->K, .n = cols, .k = g->crs, .cpq = direct_store(g) ? g->pq : 0,
                                   .count = chunks};
    if (op == DBK_OP_CONV2D_BWD_DATA) {
        /* packed: w^T transposed once into the workspace; pointwise: stored into dx directly */
        const bool direct = g->packed && pointwise(g) && (nb == 1 || g->pq % g->panel == 0);
        return (dbk_ocl_conv_gemm){.m = g->crs, .n = cols, .k = g->K, .ta = !g->packed,
                                   .cpq = direct && nb > 1 ? g->pq : 0, .count = chunks};
    }
    if (g->packed) return (dbk_ocl_conv_gemm){.m = g->crs, .n = g->K, .k = cols, .cpq = -1, .count = chunks};   /* dw^T */
    if (g->split > 1)   /* one chunk: split-K's slices in one strided batched call */
        return (dbk_ocl_conv_gemm){.m = g->K, .n = g->crs, .k = cols / g->split, .tb = true, .count = g->split,
                                   .batch = g->split};
    return (dbk_ocl_conv_gemm){.m = g->K, .n = g->crs, .k = cols, .tb = true, .count = chunks};
}

static int im2col_gemm_plan(const dbk_ocl_conv_config *cfg, const dbk_op_desc *op,
                            dbk_ocl_conv_gemm out[DBK_OCL_CONV_MAX_GEMMS]) {
    const conv_geom g = geometry_for(cfg, op);
    /* the empty cases of the recorders: nothing, or a fill */
    if (g.N == 0 || g.K == 0 || g.pq == 0 || g.crs == 0) return 0;
    if (op->op == DBK_OP_CONV2D_BWD_DATA && g.H * g.W == 0) return 0;
    /* chunks of g.nb images, the last one smaller when g.nb does not divide N */
    const int full = g.N / g.nb, last = g.N % g.nb;
    int count = 0;
    if (full) out[count++] = im2col_chunk_gemm(&g, op->op, g.nb, full);
    if (last) out[count++] = im2col_chunk_gemm(&g, op->op, last, 1);
    return count;
}

int dbk_ocl_conv_gemm_plan(const dbk_ocl_conv_config *cfg, const dbk_op_desc *op,
                           dbk_ocl_conv_gemm out[DBK_OCL_CONV_MAX_GEMMS]) {
    if (op->op != DBK_OP_CONV2D_FWD && op->op != DBK_OP_CONV2D_BWD_DATA && op->op != DBK_OP_CONV2D_BWD_FILTER) return 0;
    if (cfg->packed && dbk_conv_choice_winograd(cfg->choice, op)) return dbk_ocl_conv_winograd_gemm_plan(cfg, op, out);
    if (dbk_conv_choice_direct(cfg->choice, op) || narrow_forward(op)) return 0; /* no GEMM: the direct kernels */
    return im2col_gemm_plan(cfg, op, out);
}
