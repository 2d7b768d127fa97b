/*
 * conv_choice.h — which convolution algorithm a device backend gives each 3x3 stride-1 pad-1
 * layer: its GEMM path (im2col + GEMM on OpenCL, the implicit-GEMM shaders on Vulkan),
 * Winograd F(2x2, 3x3) or F(4x4, 3x3) (ocl_ops_conv_winograd.c, vk_ops_conv_winograd.c), or on
 * OpenCL only the "direct" kernels of narrow layers (ocl_ops_conv_direct.c: no col matrix). One
 * reading of the profile for both backends, so the keys mean the
 * same under "opencl" and "vulkan":
 *   <section>.conv_algorithm         "im2col" (the default) | "winograd" (F(2x2,3x3)) |
 *                                    "winograd4" (F(4x4,3x3), the tile of the width rule) |
 *                                    "direct" (OpenCL; the same rule as a Winograd value)
 *   <section>.winograd_min_channels  with "winograd": layers with min(C, K) below it stay
 *                                    on the GEMM path (default 16: narrower GEMMs do not pay for the
 *                                    transforms)
 *   <section>.conv_by_shape          {"CxKxHxW": "winograd" | "winograd4" | "direct" | "im2col"}
 *                                    (one algorithm for the layer's three ops) or
 *                                    {"CxKxHxW": {"fwd": A, "bwd_data": A, "bwd_filter": A}}
 *                                    (one per op; a key left out falls back to the width rule),
 *                                    written by `daybreak tune` from measurements; with
 *                                    "winograd"/"winograd4"/"direct" in conv_algorithm it decides
 *                                    the layers it lists, before the width rule
 *   <section>.winograd_workspace_mb  bytes of transformed planes per chunk of images (32)
 *   <section>.conv_chunking          "on" (the default) | "off": no workspace budget, the whole
 *                                    batch in one chunk (up to half the device's max allocation),
 *                                    for a GPU with the memory: one set of launches per
 *                                    convolution instead of one per chunk (OpenCL: im2col's
 *                                    conv_workspace_mb too)
 * DBK_FORCE_CONV=im2col|winograd|winograd4|direct (core/profile.h) overrides conv_algorithm;
 * with any but im2col every eligible layer, whatever its width, runs that algorithm (the ops
 * tests force each path). A backend without the direct kernels (Vulkan) refuses a choice that
 * names "direct" (dbk_conv_choice_names_direct).
 * Value data, no ownership.
 */
#ifndef DBK_BACKEND_CONV_CHOICE_H
#define DBK_BACKEND_CONV_CHOICE_H

#include <stdbool.h>
#include <stddef.h>

#include "backend/ops.h"
#include "core/profile.h"

#define DBK_CONV_SHAPES_MAX 64   /* entries of <section>.conv_by_shape read */
#define DBK_CONV_TILE_DIRECT 1   /* the tile code of "direct" (no Winograd tile is 1) */
#define DBK_CONV_TILE_UNSET (-1) /* a conv_by_shape entry that leaves this op to the width rule */
#define DBK_CONV_OPS 3           /* forward, backward-data, backward-filter */
/* The workspace budget of conv_chunking "off" before the max-allocation cap: 16 GiB keeps the
 * images per chunk (budget / bytes per image, at least 8) within an int. */
#define DBK_CONV_UNCHUNKED_BYTES ((size_t)1 << 34)

/* The conv_by_shape keys of the three conv ops, in dbk_conv_op_index order. */
extern const char *const dbk_conv_op_keys[DBK_CONV_OPS];

/* 0, 1, 2 for DBK_OP_CONV2D_FWD, _BWD_DATA, _BWD_FILTER; -1 for any other op. */
int dbk_conv_op_index(dbk_op kind);

typedef enum dbk_conv_algorithm {
    DBK_CONV_GEMM_PATH,       /* every layer on the GEMM path */
    DBK_CONV_WINOGRAD,        /* Winograd where min(C, K) >= min_channels or conv_by_shape says so */
    DBK_CONV_WINOGRAD_ALL,    /* Winograd on every eligible layer (DBK_FORCE_CONV=winograd|winograd4) */
} dbk_conv_algorithm;

typedef struct dbk_conv_choice {
    dbk_conv_algorithm algorithm;
    int                tile;              /* output tile of Winograd F(tile x tile, 3x3): 2 or 4;
                                             DBK_CONV_TILE_DIRECT for "direct" */
    int                min_channels;
    /* tile per op (index dbk_conv_op_index): 0 im2col, 2 or 4 Winograd, DBK_CONV_TILE_DIRECT,
     * DBK_CONV_TILE_UNSET (the width rule decides) */
    struct { int c, k, h, w, tile[DBK_CONV_OPS]; } by_shape[DBK_CONV_SHAPES_MAX];
    int                by_shape_count;
    size_t             winograd_budget;   /* bytes of transformed planes per chunk */
    bool               chunking;          /* conv_chunking: false = one chunk (the budget unbounded) */
} dbk_conv_choice;

/* Reads the keys above from `section` ("opencl" or "vulkan") of p (NULL: defaults), the budget capped at
 * max_alloc / 2 when max_alloc is non-zero. DBK_ERR_FORMAT names a malformed key,
 * DBK_ERR_INVALID_ARG a bad DBK_FORCE_CONV. */
dbk_status dbk_conv_choice_read(const dbk_profile *p, const char *section, size_t max_alloc, dbk_conv_choice *out);

/* The Winograd output tile chosen for op (a conv op): 2 (F(2x2,3x3)), 4 (F(4x4,3x3)) or 0 (the
 * GEMM path: not 3x3 stride-1 pad-1, empty, or not chosen for its shape). */
int dbk_conv_choice_winograd_tile(const dbk_conv_choice *c, const dbk_op_desc *op);

/* True when op (a conv op) is 3x3, stride 1, pad 1, non-empty, and the choice picks Winograd
 * (either tile) for its shape. Backend limits (f16 operands, GEMM path) are the caller's to add. */
bool dbk_conv_choice_winograd(const dbk_conv_choice *c, const dbk_op_desc *op);

/* True when op (a conv op) is 3x3, stride 1, pad 1, non-empty, and the choice picks "direct". */
bool dbk_conv_choice_direct(const dbk_conv_choice *c, const dbk_op_desc *op);

/* True when the choice can pick "direct" for some layer (conv_algorithm, DBK_FORCE_CONV or a
 * conv_by_shape entry in effect): for backends without the direct kernels to refuse. */
bool dbk_conv_choice_names_direct(const dbk_conv_choice *c);

/* "im2col", "winograd", "winograd4", "direct", or "<algorithm> on every 3x3 stride-1 layer", for logs. */
const char *dbk_conv_choice_name(const dbk_conv_choice *c);

#endif
