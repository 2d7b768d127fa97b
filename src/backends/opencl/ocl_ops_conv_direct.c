/*
 * ocl_ops_conv_direct.c — 3x3 stride-1 pad-1 convolutions as the "direct" kernels of
 * cl/conv2d_direct.cl: computed from x, w and dy in place, without the col matrix, the
 * gathers and the chunking of the im2col path (ocl_ops_conv.c). Made for the narrow layers of
 * the quick model (16-64 channels), where im2col's passes over a col 9x the size of x and
 * gemm_rb's few rows cost more than the multiply-adds (docs/measurements/opencl.md has the profile).
 *
 * Which layers: "direct" in the profile's "opencl.conv_algorithm" / "opencl.conv_by_shape" or
 * DBK_FORCE_CONV=direct (backend/conv_choice.h); layers that are not 3x3 stride-1 pad-1 stay
 * on im2col. Any GEMM path ("tiled" or "clblast"): no GEMM is involved.
 *   forward      y = conv_direct(x, w)
 *   bwd data     dx = conv_direct(dy, w transposed and turned 180 degrees, by strides)
 *   bwd filter   part (G, K, C, 3, 3) = per group of images, conv_direct_filter;
 *                dw = the sum over the G groups, conv_direct_filter_sum (overwrites dw)
 * Only backward-filter uses the workspace (part).
 */
#include "backends/opencl/ocl_internal.h"

/* Work-items of the backward-filter's first pass to aim for: enough for both cores and their
 * vector lanes' latency, few enough that the partial sums stay small. */
#define DIRECT_FILTER_ITEMS 4096
#define DIRECT_KB 4     /* output channels per work-item: DC_KB of the .cl file */
#define DIRECT_ROWS 2   /* output rows per work-item of conv_direct: DC_ROWS */

bool dbk_ocl_conv_direct_chosen(const dbk_backend *be, const dbk_op_desc *op) {
    return dbk_conv_choice_direct(&dbk_ocl(be)->conv, op);
}

const char *dbk_ocl_conv_op_algorithm(const dbk_backend *be, const dbk_op_desc *op) {
    const bool conv = op->op == DBK_OP_CONV2D_FWD || op->op == DBK_OP_CONV2D_BWD_DATA ||
                      op->op == DBK_OP_CONV2D_BWD_FILTER;
    if (conv && dbk_ocl_conv_direct_chosen(be, op)) return "direct";
    return dbk_ocl_op_algorithm(be, op);
}

/* Groups of images the backward-filter's first pass splits the batch into. */
static int filter_groups(const dbk_conv2d_geom *g) {
    const size_t items = (size_t)g->C * 3 * (size_t)((g->K + DIRECT_KB - 1) / DIRECT_KB);
    size_t groups = items ? (DIRECT_FILTER_ITEMS + items - 1) / items : 1;
    if (groups > (size_t)g->N) groups = (size_t)g->N;
    return groups < 1 ? 1 : (int)groups;
}

static size_t part_floats(const dbk_conv2d_geom *g) {
    return (size_t)filter_groups(g) * (size_t)g->K * (size_t)g->C * 9;
}

size_t dbk_ocl_conv_direct_workspace_bytes(const dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    if (op->op != DBK_OP_CONV2D_BWD_FILTER) return 0;
    const dbk_conv2d_geom g = dbk_conv2d_geom_of(op);
    return part_floats(&g) * sizeof(float);
}

/* out (N, co, H, W) = conv_direct(in (N, ci, H, W)) with the weight strides of the forward or
 * of backward-data (cl/conv2d_direct.cl). */
static dbk_status conv_direct(dbk_backend *be, dbk_ocl_launches *out, const dbk_conv2d_geom *g, const dbk_tensor *in,
                              const dbk_tensor *w, const dbk_tensor *o, bool data) {
    const int ci = (int)(data ? g->K : g->C), co = (int)(data ? g->C : g->K);
    const int H = (int)g->H, W = (int)g->W;
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "conv_direct", &a));
    dbk_ocl_arg_tensor(&a, in);
    dbk_ocl_arg_int(&a, (int)g->N);
    dbk_ocl_arg_int(&a, ci);
    dbk_ocl_arg_int(&a, H);
    dbk_ocl_arg_int(&a, W);
    dbk_ocl_arg_int(&a, co);
    dbk_ocl_arg_mem(&a, dbk_ocl_mem(w));
    dbk_ocl_arg_uint(&a, dbk_ocl_off(w) + (data ? 8u : 0u));
    dbk_ocl_arg_int(&a, data ? 9 : 9 * ci);    /* per output channel */
    dbk_ocl_arg_int(&a, data ? 9 * co : 9);    /* per input channel */
    dbk_ocl_arg_int(&a, data ? -3 : 3);        /* per tap row */
    dbk_ocl_arg_int(&a, data ? -1 : 1);        /* per tap column */
    dbk_ocl_arg_tensor(&a, o);
    dbk_ocl_args_floats(&a, (double)dbk_tensor_numel(w));
    const size_t segs = ((size_t)W + 7) / 8, rows = ((size_t)H + DIRECT_ROWS - 1) / DIRECT_ROWS;
    return dbk_ocl_range2(&a, segs * rows, (size_t)g->N * (((size_t)co + DIRECT_KB - 1) / DIRECT_KB));
}

dbk_status dbk_ocl_record_conv2d_direct_fwd(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const dbk_conv2d_geom g = dbk_conv2d_geom_of(op);
    return conv_direct(be, out, &g, &op->src[0], &op->src[1], &op->dst[0], false);
}

dbk_status dbk_ocl_record_conv2d_direct_bwd_data(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const dbk_conv2d_geom g = dbk_conv2d_geom_of(op);
    return conv_direct(be, out, &g, &op->src[0], &op->src[1], &op->dst[0], true);
}

dbk_status dbk_ocl_record_conv2d_direct_bwd_filter(dbk_backend *be, const dbk_op_desc *op, dbk_ocl_launches *out) {
    const dbk_conv2d_geom g = dbk_conv2d_geom_of(op);
    const dbk_tensor *x = &op->src[0], *dy = &op->src[1], *dw = &op->dst[0];
    const size_t need = part_floats(&g) * sizeof(float);
    cl_mem ws = dbk_ocl(be)->workspace;
    if (need > dbk_ocl(be)->workspace_bytes || !ws)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "%s%s%s was not prepared (workspace %zu bytes needed)",
                             dbk_op_name(op->op), op->label ? " for " : "", op->label ? op->label : "", need);
    const int G = filter_groups(&g), C = (int)g.C, K = (int)g.K;
    dbk_ocl_args a;
    DBK_TRY(dbk_ocl_kernel(be, out, "conv_direct_filter", &a));
    dbk_ocl_arg_tensor(&a, x);
    dbk_ocl_arg_tensor(&a, dy);
    dbk_ocl_arg_int(&a, (int)g.N);
    dbk_ocl_arg_int(&a, C);
    dbk_ocl_arg_int(&a, (int)g.H);
    dbk_ocl_arg_int(&a, (int)g.W);
    dbk_ocl_arg_int(&a, K);
    dbk_ocl_arg_int(&a, G);
    dbk_ocl_arg_mem(&a, ws);
    dbk_ocl_arg_uint(&a, 0);
    dbk_ocl_args_floats(&a, (double)part_floats(&g));   /* the groups' partial sums */
    DBK_TRY(dbk_ocl_range2(&a, (size_t)C * 3, (size_t)((K + DIRECT_KB - 1) / DIRECT_KB) * (size_t)G));
    DBK_TRY(dbk_ocl_kernel(be, out, "conv_direct_filter_sum", &a));
    dbk_ocl_arg_mem(&a, ws);
    dbk_ocl_arg_uint(&a, 0);
    dbk_ocl_arg_int(&a, K * C * 9);
    dbk_ocl_arg_int(&a, G);
    dbk_ocl_arg_tensor(&a, dw);
    dbk_ocl_args_floats(&a, (double)part_floats(&g));
    return dbk_ocl_range1(&a, (size_t)K * (size_t)C * 9);
}
