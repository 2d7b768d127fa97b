/*
 * vk_ops_conv_winograd.c — 3x3 stride-1 pad-1 convolutions as Winograd F(m x m, 3x3) on the
 * Vulkan backend, m = 2 or 4: the same algorithm as the OpenCL path (ocl_ops_conv_winograd.c),
 * with the shaders shaders/conv2d_winograd_*.comp (F(2x2,3x3)) and conv2d_winograd4_*.comp
 * (F(4x4,3x3)) around E = (m+2)^2 products in one batched GEMM (conv2d_winograd_gemm.comp has
 * the whole scheme). F(2x2,3x3): 16 multiplies per 2x2 output tile instead of 36, 2.25x fewer
 * multiply-adds; F(4x4,3x3): 36 per 4x4 tile instead of 144, 4x fewer. Both pay the transforms'
 * memory traffic and a larger rounding error (docs/winograd.md).
 * vk_ops_conv.c asks dbk_vk_conv_winograd_chosen per op and runs its implicit-GEMM shaders
 * otherwise. Which layers: "vulkan.conv_algorithm", "vulkan.winograd_min_channels" and
 * "vulkan.conv_by_shape" of the profile, DBK_FORCE_CONV overriding them (backend/conv_choice.h).
 *
 * Per chunk of nb images (T = nb * TH * TW tiles, TH = ceil(H/m), TW = ceil(W/m)), in the
 * backend's workspace (vk->ws, shared with the split-K partial sums; laid out by plan_of):
 *   forward     U (E,K,C) = filter(w) once; V (E,C,T) = input(x chunk);
 *               M[e] (K,T) = U[e] . V[e], one batched dispatch; y chunk = output(M)
 *   bwd data    the forward on dy with U (E,C,K) = filter(w rotated 180 degrees, transposed)
 *   bwd filter  V (E,C,T) = input(x chunk); Z (E,K,T) = dy_transform(dy chunk);
 *               dU[e] (K,C) (+)= Z[e] . V[e]^T over the chunks; then dw = filter_grad(dU)
 * Device limits: every region is bound as one window, so a chunk's regions stay below
 * maxStorageBufferRange; the GEMM's tiles come from dbk_vk_tile_spec (shared memory, work-group
 * size and count limits); the transforms run at the backend's work-group size, grid-stride.
 * The filter gradient reduces over a chunk's T tiles in one GEMM, so T stays at most
 * DBK_VK_KCHUNK (lavapipe's loop limit, as the split-K of the implicit-GEMM shader).
 * f16 operands (mixed precision) keep the implicit-GEMM path: the transforms are fp32 only.
 */
#include <string.h>

#include "backends/vulkan/vk_internal.h"

typedef struct wino_plan {
    uint32_t N, ci, co;      /* images, input and output channels of the transformed conv */
    uint32_t m, E;           /* output tile m x m, E = (m+2)^2 transformed elements */
    uint32_t H, W, TH, TW;   /* input = output size, tiles per image */
    uint32_t nb;             /* images per chunk */
    size_t   r0, r1, r2;     /* region offsets in floats: U|V|M (forward, data) or V|Z|dU (filter) */
    size_t   floats;         /* the workspace needed */
} wino_plan;

/* The largest window a region may take (bytes). */
static size_t window_limit(const dbk_vk_state *vk) { return (size_t)(vk->max_range - vk->align); }

/* The output tile m the choice gives op: 2, 4, or 0 (not Winograd). */
static uint32_t tile_of(const dbk_vk_state *vk, const dbk_op_desc *op) {
    return (uint32_t)dbk_conv_choice_winograd_tile(&vk->conv, op);
}

bool dbk_vk_conv_winograd_chosen(const dbk_backend *be, const dbk_op_desc *op) {
    const dbk_vk_state *vk = dbk_vk(be);
    if (op->src[0].dtype != DBK_DTYPE_F32 || op->src[1].dtype != DBK_DTYPE_F32) return false;
    const uint32_t m = tile_of(vk, op);
    if (m == 0) return false;
    const dbk_conv2d_geom g = dbk_conv2d_geom_of(op);
    const size_t E = (size_t)(m + 2) * (m + 2);
    const size_t tiles = (size_t)((g.H + m - 1) / m) * (size_t)((g.W + m - 1) / m);
    const size_t wide = (size_t)(g.C > g.K ? g.C : g.K), limit = window_limit(vk);
    /* one image's regions and the transformed filter must fit a window */
    return tiles <= DBK_VK_KCHUNK && E * wide * tiles * sizeof(float) <= limit &&
           E * (size_t)g.C * (size_t)g.K * sizeof(float) <= limit;
}

const char *dbk_vk_op_algorithm(const dbk_backend *be, const dbk_op_desc *op) {
    const bool conv = op->op == DBK_OP_CONV2D_FWD || op->op == DBK_OP_CONV2D_BWD_DATA ||
                      op->op == DBK_OP_CONV2D_BWD_FILTER;
    if (!conv || !dbk_vk_conv_winograd_chosen(be, op)) return NULL;
    return tile_of(dbk_vk(be), op) == 4 ? "winograd F(4x4,3x3)" : "winograd F(2x2,3x3)";
}

/* The transform shaders, per tile (F(2x2,3x3), F(4x4,3x3)). */
enum { WINO_FILTER, WINO_INPUT, WINO_OUTPUT, WINO_DY, WINO_FILTER_GRAD };
static const char *shader_name(const wino_plan *p, int which) {
    static const char *const names[2][5] = {
        {"conv2d_winograd_filter", "conv2d_winograd_input", "conv2d_winograd_output", "conv2d_winograd_dy",
         "conv2d_winograd_filter_grad"},
        {"conv2d_winograd4_filter", "conv2d_winograd4_input", "conv2d_winograd4_output", "conv2d_winograd4_dy",
         "conv2d_winograd4_filter_grad"},
    };
    return names[p->m == 4][which];
}

static wino_plan plan_of(const dbk_backend *be, const dbk_op_desc *op) {
    const dbk_vk_state *vk = dbk_vk(be);
    const dbk_conv2d_geom g = dbk_conv2d_geom_of(op);
    const bool data = op->op == DBK_OP_CONV2D_BWD_DATA, filter = op->op == DBK_OP_CONV2D_BWD_FILTER;
    wino_plan p;
    p.N = (uint32_t)g.N;
    p.ci = (uint32_t)(data ? g.K : g.C);
    p.co = (uint32_t)(data ? g.C : g.K);
    p.H = (uint32_t)g.H;
    p.W = (uint32_t)g.W;
    p.m = tile_of(vk, op) == 4 ? 4 : 2;
    p.E = (p.m + 2) * (p.m + 2);
    p.TH = (p.H + p.m - 1) / p.m;
    p.TW = (p.W + p.m - 1) / p.m;
    /* Images per chunk: the budget for the transformed planes of input and output, every
     * region within a window, the images' own slices within a binding, and for the filter
     * gradient at most DBK_VK_KCHUNK tiles; evened out over the chunks. */
    const size_t tiles = (size_t)p.TH * p.TW, wide = p.ci > p.co ? p.ci : p.co, E = p.E;
    size_t nb = vk->conv.winograd_budget / (E * ((size_t)p.ci + p.co) * tiles * sizeof(float));
    const size_t fit = window_limit(vk) / (E * wide * tiles * sizeof(float));
    if (nb > fit) nb = fit;
    if (filter && nb > DBK_VK_KCHUNK / tiles) nb = DBK_VK_KCHUNK / tiles;
    const dbk_tensor *big[2] = {&op->src[0], filter ? &op->src[1] : &op->dst[0]};
    const size_t slices = (size_t)dbk_vk_batch_chunk(vk, big, 2);
    if (nb > slices) nb = slices;
    if (nb < 1) nb = 1;
    if (nb > p.N) nb = p.N;
    const size_t chunks = (p.N + nb - 1) / nb;
    p.nb = (uint32_t)((p.N + chunks - 1) / chunks);
    const size_t T = (size_t)p.nb * tiles, ci = p.ci, co = p.co;
    p.r0 = 0;
    if (filter) {   /* V | Z | dU */
        p.r1 = E * ci * T;
        p.r2 = p.r1 + E * co * T;
        p.floats = p.r2 + E * co * ci;
    } else {        /* U | V | M */
        p.r1 = E * co * ci;
        p.r2 = p.r1 + E * ci * T;
        p.floats = p.r2 + E * co * T;
    }
    return p;
}

size_t dbk_vk_conv_winograd_workspace_bytes(const dbk_backend *be, const dbk_op_desc *op) {
    return plan_of(be, op).floats * sizeof(float);
}

int dbk_vk_conv_winograd_dispatches(const dbk_backend *be, const dbk_op_desc *op) {
    if (dbk_conv_op_index(op->op) < 0 || !dbk_vk_conv_winograd_chosen(be, op)) return 0;
    const wino_plan p = plan_of(be, op);
    return 3 * (int)((p.N + p.nb - 1) / p.nb) + 1;   /* as transformed_conv and filter_gradient record */
}

/* ---------------------------------------------------------------------------------- */
/* dispatches of shaders/conv2d_winograd_*.comp                                        */

/* A region of the workspace as a tensor: floats [at, at + n). */
static dbk_tensor region(dbk_buffer *ws, size_t at, size_t n) {
    return dbk_tensor_make(ws, at * sizeof(float), DBK_DTYPE_F32, 1, (int64_t)n, 0, 0, 0);
}

/* A transform: `items` work items of shader reading `in` and writing `out`; push constants
 * are pc[0 .. npc) followed by the two window offsets. */
static dbk_status transform(dbk_backend *be, dbk_vk_rec *rec, const char *shader, const dbk_tensor *in,
                            const dbk_tensor *out, uint64_t items, const uint32_t *pc, int npc) {
    dbk_vk_state *vk = dbk_vk(be);
    dbk_vk_dispatch d = {.shader = shader, .nspec = 1, .spec = {vk->wg}, .nbind = 2};
    memcpy(d.push, pc, (size_t)npc * sizeof *pc);
    DBK_TRY(dbk_vk_window(vk, in, 0, -1, false, &d.bind[0], &d.push[npc]));
    DBK_TRY(dbk_vk_window(vk, out, 0, -1, true, &d.bind[1], &d.push[npc + 1]));
    d.groups[0] = dbk_vk_groups_1d(vk, (int64_t)items, vk->wg);
    d.groups[1] = d.groups[2] = 1;
    return dbk_vk_emit(be, rec, &d);
}

/* C[e] (m, n) = A[e] (m, k) . B[e] (+ beta C[e]) for e = 0 .. E-1, regions of the workspace at
 * the given float offsets; B[e] is (k, n), or (n, k) with trans_b. */
static dbk_status batched_gemm(dbk_backend *be, dbk_vk_rec *rec, dbk_buffer *ws, uint32_t E, uint32_t m, uint32_t n,
                               uint32_t k, bool trans_b, float beta, size_t at_a, size_t at_b, size_t at_c) {
    dbk_vk_state *vk = dbk_vk(be);
    const size_t sa = (size_t)m * k, sb = (size_t)k * n, sc = (size_t)m * n;
    const dbk_tensor a = region(ws, at_a, E * sa), b = region(ws, at_b, E * sb), c = region(ws, at_c, E * sc);
    dbk_vk_dispatch d = {.shader = "conv2d_winograd_gemm", .nbind = 3};
    dbk_vk_tile_spec(vk, &vk->conv_tiles, m, n, &d);
    uint32_t rem[3];
    DBK_TRY(dbk_vk_window(vk, &a, 0, -1, false, &d.bind[0], &rem[0]));
    DBK_TRY(dbk_vk_window(vk, &b, 0, -1, false, &d.bind[1], &rem[1]));
    DBK_TRY(dbk_vk_window(vk, &c, 0, -1, true, &d.bind[2], &rem[2]));
    const uint32_t pc[11] = {m, n, k, trans_b, dbk_vk_f32_bits(beta), rem[0], rem[1], rem[2], (uint32_t)sa,
                             (uint32_t)sb, (uint32_t)sc};
    memcpy(d.push, pc, sizeof pc);
    d.groups[2] = E;
    return dbk_vk_emit(be, rec, &d);
}

/* The tile geometry of a chunk of nb images: C or K, H, W, TH, TW, T (the push constants the
 * input, output and dy transforms share, after their channel count). */
static void tile_push(const wino_plan *p, uint32_t channels, uint32_t nb, uint32_t out[6]) {
    const uint32_t v[6] = {channels, p->H, p->W, p->TH, p->TW, nb * p->TH * p->TW};
    memcpy(out, v, sizeof v);
}

/* ---------------------------------------------------------------------------------- */
/* the three ops                                                                       */

/* Images in the chunk starting at image n0. */
static uint32_t chunk_images(const wino_plan *p, uint32_t n0) { return p->N - n0 < p->nb ? p->N - n0 : p->nb; }

/* Forward and backward-data: conv of src (ci channels) into dst (co channels). */
static dbk_status transformed_conv(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op, dbk_buffer *ws,
                                   const wino_plan *p) {
    const dbk_tensor *src = &op->src[0], *w = &op->src[1], *dst = &op->dst[0];
    const bool flip = op->op == DBK_OP_CONV2D_BWD_DATA;
    const dbk_tensor u = region(ws, p->r0, p->E * (size_t)p->co * p->ci);
    const uint32_t fpc[3] = {(uint32_t)w->shape[0], (uint32_t)w->shape[1], flip};
    DBK_TRY(transform(be, rec, shader_name(p, WINO_FILTER), w, &u, (uint64_t)p->co * p->ci, fpc, 3));
    for (uint32_t n0 = 0; n0 < p->N; n0 += p->nb) {
        const uint32_t nb = chunk_images(p, n0), T = nb * p->TH * p->TW;
        const dbk_tensor x = dbk_vk_batch_slice(src, n0, nb), y = dbk_vk_batch_slice(dst, n0, nb);
        const dbk_tensor v = region(ws, p->r1, p->E * (size_t)p->ci * T), m = region(ws, p->r2, p->E * (size_t)p->co * T);
        uint32_t pc[6];
        tile_push(p, p->ci, nb, pc);
        DBK_TRY(transform(be, rec, shader_name(p, WINO_INPUT), &x, &v, (uint64_t)p->ci * T, pc, 6));
        DBK_TRY(batched_gemm(be, rec, ws, p->E, p->co, T, p->ci, false, 0.0f, p->r0, p->r1, p->r2));
        tile_push(p, p->co, nb, pc);
        DBK_TRY(transform(be, rec, shader_name(p, WINO_OUTPUT), &m, &y, (uint64_t)p->co * T, pc, 6));
    }
    return DBK_OK;
}

static dbk_status filter_gradient(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op, dbk_buffer *ws,
                                  const wino_plan *p) {
    const dbk_tensor *x = &op->src[0], *dy = &op->src[1], *dw = &op->dst[0];
    for (uint32_t n0 = 0; n0 < p->N; n0 += p->nb) {
        const uint32_t nb = chunk_images(p, n0), T = nb * p->TH * p->TW;
        const dbk_tensor xs = dbk_vk_batch_slice(x, n0, nb), dys = dbk_vk_batch_slice(dy, n0, nb);
        const dbk_tensor v = region(ws, p->r0, p->E * (size_t)p->ci * T), z = region(ws, p->r1, p->E * (size_t)p->co * T);
        uint32_t pc[6];
        tile_push(p, p->ci, nb, pc);
        DBK_TRY(transform(be, rec, shader_name(p, WINO_INPUT), &xs, &v, (uint64_t)p->ci * T, pc, 6));
        tile_push(p, p->co, nb, pc);
        DBK_TRY(transform(be, rec, shader_name(p, WINO_DY), &dys, &z, (uint64_t)p->co * T, pc, 6));
        /* dU[e] (co, ci) (+)= Z[e] (co, T) . V[e]^T, V[e] stored (ci, T) */
        DBK_TRY(batched_gemm(be, rec, ws, p->E, p->co, p->ci, T, true, n0 == 0 ? 0.0f : 1.0f, p->r1, p->r0, p->r2));
    }
    const dbk_tensor du = region(ws, p->r2, p->E * (size_t)p->co * p->ci);
    const uint32_t pc[2] = {p->co, p->ci};
    return transform(be, rec, shader_name(p, WINO_FILTER_GRAD), &du, dw, (uint64_t)p->co * p->ci, pc, 2);
}

dbk_status dbk_vk_record_conv2d_winograd(dbk_backend *be, dbk_vk_rec *rec, const dbk_op_desc *op) {
    const wino_plan p = plan_of(be, op);
    dbk_buffer *ws = NULL;
    DBK_TRY(dbk_vk_workspace(be, p.floats * sizeof(float), &ws));
    return op->op == DBK_OP_CONV2D_BWD_FILTER ? filter_gradient(be, rec, op, ws, &p)
                                              : transformed_conv(be, rec, op, ws, &p);
}
