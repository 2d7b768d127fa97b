/*
 * conv_choice.c — the convolution algorithm per layer from a profile section (conv_choice.h).
 */
#include "backend/conv_choice.h"

#include <stdio.h>
#include <string.h>

#include "core/status.h"

/* Output tile of a Winograd algorithm name: 2 for "winograd" (F(2x2,3x3)), 4 for "winograd4"
 * (F(4x4,3x3)), 0 for "im2col", DBK_CONV_TILE_DIRECT for "direct", -1 for anything else. */
static int tile_of_name(const char *algo) {
    if (!strcmp(algo, "im2col")) return 0;
    if (!strcmp(algo, "direct")) return DBK_CONV_TILE_DIRECT;
    if (!strcmp(algo, "winograd")) return 2;
    if (!strcmp(algo, "winograd4")) return 4;
    return -1;
}

const char *const dbk_conv_op_keys[DBK_CONV_OPS] = {"fwd", "bwd_data", "bwd_filter"};

int dbk_conv_op_index(dbk_op kind) {
    if (kind == DBK_OP_CONV2D_FWD) return 0;
    if (kind == DBK_OP_CONV2D_BWD_DATA) return 1;
    return kind == DBK_OP_CONV2D_BWD_FILTER ? 2 : -1;
}

static dbk_status bad_entry(const dbk_profile *p, const char *path, const char *key, const char *value) {
    return dbk_set_error(DBK_ERR_FORMAT,
                         "profile %s: %s entry \"%s\": %s (expected \"CxKxHxW\": \"winograd\", \"winograd4\", "
                         "\"direct\", \"im2col\" or {\"fwd\", \"bwd_data\", \"bwd_filter\": one of those})",
                         dbk_profile_id(p), path, key, value);
}

/* One entry's value into tile[]: a string names the algorithm of all three ops; an object
 * {"fwd", "bwd_data", "bwd_filter"} one per op, the ops it leaves out DBK_CONV_TILE_UNSET. */
static dbk_status read_entry(const dbk_profile *p, const char *path, const char *key, const char *algo,
                             int tile[DBK_CONV_OPS]) {
    char quoted[80];
    if (*algo) {   /* a string */
        const int t = tile_of_name(algo);
        snprintf(quoted, sizeof quoted, "\"%s\"", algo);
        if (t < 0) return bad_entry(p, path, key, quoted);
        for (int op = 0; op < DBK_CONV_OPS; op++) tile[op] = t;
        return DBK_OK;
    }
    char entry[160];
    snprintf(entry, sizeof entry, "%s.%s", path, key);
    for (int op = 0; op < DBK_CONV_OPS; op++) tile[op] = DBK_CONV_TILE_UNSET;
    char op_key[64];
    const char *op_algo = dbk_profile_member(p, entry, 0, op_key, sizeof op_key);
    if (!op_algo) return bad_entry(p, path, key, "neither a string nor an object of ops");
    for (int i = 1; op_algo; op_algo = dbk_profile_member(p, entry, i++, op_key, sizeof op_key)) {
        int op = 0;
        while (op < DBK_CONV_OPS && strcmp(op_key, dbk_conv_op_keys[op])) op++;
        const int t = tile_of_name(op_algo);
        snprintf(quoted, sizeof quoted, "\"%s\": \"%s\"", op_key, op_algo);
        if (op == DBK_CONV_OPS || t < 0) return bad_entry(p, path, key, quoted);
        tile[op] = t;
    }
    return DBK_OK;
}

/* <section>.conv_by_shape: {"CxKxHxW": algorithm or {op: algorithm}, ...}; a malformed entry
 * fails with its name. */
static dbk_status read_by_shape(const dbk_profile *p, const char *section, dbk_conv_choice *c) {
    char path[64];
    snprintf(path, sizeof path, "%s.conv_by_shape", section);
    c->by_shape_count = 0;
    for (int i = 0;; i++) {
        char key[64];
        const char *algo = dbk_profile_member(p, path, i, key, sizeof key);
        if (!algo) return DBK_OK;
        int ch, k, h, w;
        char end;
        if (sscanf(key, "%dx%dx%dx%d%c", &ch, &k, &h, &w, &end) != 4 || ch < 1 || k < 1 || h < 1 || w < 1)
            return bad_entry(p, path, key, "not a \"CxKxHxW\" key");
        if (i >= DBK_CONV_SHAPES_MAX)
            return dbk_set_error(DBK_ERR_FORMAT, "profile %s: %s has more than %d entries", dbk_profile_id(p), path,
                                 DBK_CONV_SHAPES_MAX);
        DBK_TRY(read_entry(p, path, key, algo, c->by_shape[i].tile));
        c->by_shape[i].c = ch;
        c->by_shape[i].k = k;
        c->by_shape[i].h = h;
        c->by_shape[i].w = w;
        c->by_shape_count = i + 1;
    }
}

dbk_status dbk_conv_choice_read(const dbk_profile *p, const char *section, size_t max_alloc, dbk_conv_choice *out) {
    memset(out, 0, sizeof *out);
    char path[64];
    snprintf(path, sizeof path, "%s.conv_algorithm", section);
    const char *forced = dbk_env_force_conv();
    const char *algo = forced ? forced : p ? dbk_profile_string(p, path, "im2col") : "im2col";
    const int tile = tile_of_name(algo);
    if (tile < 0 && forced)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "DBK_FORCE_CONV is '%s', expected im2col, winograd, winograd4 or direct", algo);
    if (tile < 0)
        return dbk_set_error(DBK_ERR_FORMAT, "profile %s: %s is '%s', expected \"im2col\", \"winograd\", \"winograd4\" or \"direct\"",
                             dbk_profile_id(p), path, algo);
    out->tile = tile;
    out->algorithm = tile == 0 ? DBK_CONV_GEMM_PATH : forced ? DBK_CONV_WINOGRAD_ALL : DBK_CONV_WINOGRAD;
    snprintf(path, sizeof path, "%s.winograd_min_channels", section);
    const double ch = p ? dbk_profile_number(p, path, 16.0) : 16.0;
    out->min_channels = ch >= 1.0 && ch <= 65536.0 ? (int)ch : 16;
    if (p) DBK_TRY(read_by_shape(p, section, out));
    snprintf(path, sizeof path, "%s.winograd_workspace_mb", section);
    double mb = p ? dbk_profile_number(p, path, 32.0) : 32.0;
    if (!(mb >= 1.0 && mb <= 65536.0)) mb = 32.0;
    out->winograd_budget = (size_t)(mb * 1048576.0);
    snprintf(path, sizeof path, "%s.conv_chunking", section);
    const char *chunking = p && dbk_profile_has(p, path) ? dbk_profile_string(p, path, "(not a string)") : "on";
    if (strcmp(chunking, "on") && strcmp(chunking, "off"))
        return dbk_set_error(DBK_ERR_FORMAT, "profile %s: %s is %s, expected \"on\" or \"off\"", dbk_profile_id(p),
                             path, chunking);
    out->chunking = !strcmp(chunking, "on");
    if (!out->chunking) out->winograd_budget = DBK_CONV_UNCHUNKED_BYTES;
    if (max_alloc && out->winograd_budget > max_alloc / 2) out->winograd_budget = max_alloc / 2;
    return DBK_OK;
}

/* The choice's code for op: 0 (im2col), 2 or 4 (Winograd tile) or DBK_CONV_TILE_DIRECT. */
static int choice_of(const dbk_conv_choice *c, const dbk_op_desc *op) {
    if (c->algorithm == DBK_CONV_GEMM_PATH) return 0;
    const dbk_conv2d_geom g = dbk_conv2d_geom_of(op);
    if (g.R != 3 || g.S != 3 || g.stride_h != 1 || g.stride_w != 1 || g.pad_h != 1 || g.pad_w != 1) return 0;
    if (g.N == 0 || g.C == 0 || g.K == 0 || g.H == 0 || g.W == 0) return 0;
    if (c->algorithm == DBK_CONV_WINOGRAD_ALL) return c->tile;
    const int op_index = dbk_conv_op_index(op->op);
    for (int i = 0; op_index >= 0 && i < c->by_shape_count; i++)
        if (c->by_shape[i].c == g.C && c->by_shape[i].k == g.K && c->by_shape[i].h == g.H &&
            c->by_shape[i].w == g.W && c->by_shape[i].tile[op_index] != DBK_CONV_TILE_UNSET)
            return c->by_shape[i].tile[op_index];
    return g.C >= c->min_channels && g.K >= c->min_channels ? c->tile : 0;
}

int dbk_conv_choice_winograd_tile(const dbk_conv_choice *c, const dbk_op_desc *op) {
    const int t = choice_of(c, op);
    return t == DBK_CONV_TILE_DIRECT ? 0 : t;
}

bool dbk_conv_choice_direct(const dbk_conv_choice *c, const dbk_op_desc *op) {
    return choice_of(c, op) == DBK_CONV_TILE_DIRECT;
}

bool dbk_conv_choice_names_direct(const dbk_conv_choice *c) {
    if (c->algorithm != DBK_CONV_GEMM_PATH && c->tile == DBK_CONV_TILE_DIRECT) return true;
    for (int i = 0; c->algorithm == DBK_CONV_WINOGRAD && i < c->by_shape_count; i++)
        for (int op = 0; op < DBK_CONV_OPS; op++)
            if (c->by_shape[i].tile[op] == DBK_CONV_TILE_DIRECT) return true;
    return false;
}

bool dbk_conv_choice_winograd(const dbk_conv_choice *c, const dbk_op_desc *op) {
    return dbk_conv_choice_winograd_tile(c, op) != 0;
}

const char *dbk_conv_choice_name(const dbk_conv_choice *c) {
    if (c->algorithm == DBK_CONV_GEMM_PATH) return "im2col";
    if (c->tile == DBK_CONV_TILE_DIRECT)
        return c->algorithm == DBK_CONV_WINOGRAD ? "direct" : "direct on every 3x3 stride-1 layer";
    if (c->algorithm == DBK_CONV_WINOGRAD) return c->tile == 4 ? "winograd4" : "winograd";
    return c->tile == 4 ? "winograd4 on every 3x3 stride-1 layer" : "winograd on every 3x3 stride-1 layer";
}
