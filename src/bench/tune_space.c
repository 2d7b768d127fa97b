/*
 * tune_space.c — the searches of `daybreak tune` per backend (tune_space.h): which profile
 * keys each one tries, with which values, on which cases. docs/tuning.md explains the choices.
 *
 * A candidate is a JSON merge patch (RFC 7386: objects merge member by member, null removes a
 * member) applied to the device's profile as the searches before it left it. Candidate 0 of a
 * search is the profile as it stands (the empty patch), so a search can only keep or improve
 * on it.
 */
#include <stdio.h>
#include <string.h>

#include "backend/conv_choice.h"
#include "bench/tune_space.h"
#include "core/profile.h"

/* --- OpenCL ----------------------------------------------------------------------- */

/* gemm_rb (cl/gemm_tiled.cl), the GEMM of every im2col and Winograd convolution: rows and
 * panel width per work-item (RB_M x RB_W accumulators), work-group shape, and gemm_rb2 (two
 * panels per work-item, RB_V 2). */
static const int kRb[][5] = {
    /* RB_M RB_W WG0 WG1 RB_V */
    {8, 16, 4, 8, 1}, {4, 16, 4, 8, 1}, {6, 16, 4, 8, 1}, {8, 8, 4, 8, 1}, {8, 16, 8, 8, 1},
    {8, 16, 2, 8, 1}, {8, 16, 4, 4, 1}, {4, 8, 4, 8, 1},  {8, 16, 4, 8, 2}, {12, 16, 4, 8, 1},
};

static bool conv_case(const dbk_tune_case *c) { return c->desc.op != DBK_OP_GEMM; }
static bool winograd_case(const dbk_tune_case *c) { return conv_case(c) && c->winograd; }
static bool gemm_case(const dbk_tune_case *c) { return c->desc.op == DBK_OP_GEMM; }

static void add(dbk_tune_search *s, const char *label, const char *patch) {
    if (s->count >= DBK_TUNE_MAX_CANDIDATES) return;
    snprintf(s->labels[s->count], sizeof s->labels[0], "%s", label);
    snprintf(s->patches[s->count], sizeof s->patches[0], "%s", patch);
    s->count++;
}

static void opencl_gemm_rb(dbk_tune_search *s, const dbk_profile *base) {
    s->name = "opencl.gemm_rb";
    s->applies = conv_case;
    if (strcmp(dbk_profile_string(base, "opencl.gemm", "clblast"), "tiled")) {
        s->skip = "the profile's GEMM is CLBlast (opencl.gemm), not gemm_rb";
        return;
    }
    add(s, "profile as is", "{}");
    const int now[5] = {(int)dbk_profile_number(base, "opencl.gemm_tiled.RB_M", 8),
                        (int)dbk_profile_number(base, "opencl.gemm_tiled.RB_W", 16),
                        (int)dbk_profile_number(base, "opencl.gemm_tiled.RB_WG0", 4),
                        (int)dbk_profile_number(base, "opencl.gemm_tiled.RB_WG1", 8),
                        (int)dbk_profile_number(base, "opencl.gemm_tiled.RB_V", 1)};
    for (size_t i = 0; i < sizeof kRb / sizeof kRb[0]; i++) {
        if (!memcmp(kRb[i], now, sizeof now)) continue;   /* candidate 0 already */
        char label[96], patch[256];
        snprintf(label, sizeof label, "RB_M %d RB_W %d work-group %dx%d%s", kRb[i][0], kRb[i][1], kRb[i][2], kRb[i][3],
                 kRb[i][4] == 2 ? " gemm_rb2" : "");
        snprintf(patch, sizeof patch,
                 "{\"opencl\": {\"gemm_tiled\": {\"RB_M\": %d, \"RB_W\": %d, \"RB_WG0\": %d, \"RB_WG1\": %d, \"RB_V\": %d}}}",
                 kRb[i][0], kRb[i][1], kRb[i][2], kRb[i][3], kRb[i][4]);
        add(s, label, patch);
    }
}

/* Winograd or the GEMM path per layer shape, on either backend (section "opencl" or
 * "vulkan"): every eligible layer measured each way (Winograd as F(2x2,3x3) and F(4x4,3x3),
 * and with `direct` OpenCL's "direct" kernels); the choice is made per shape
 * (dbk_tune_search.per_shape) and written as <section>.conv_by_shape. The labels are the
 * conv_by_shape values. */
static void winograd_by_shape(dbk_tune_search *s, const char *section, bool direct) {
    snprintf(s->name_buf, sizeof s->name_buf, "%s.conv_by_shape", section);
    s->name = s->name_buf;
    s->applies = winograd_case;
    s->per_shape = true;
    char patch[256];
    snprintf(patch, sizeof patch, "{\"%s\": {\"conv_algorithm\": \"im2col\", \"conv_by_shape\": null}}", section);
    add(s, "im2col", patch);
    static const char *const winograds[] = {"winograd", "winograd4"};
    for (int i = 0; i < 2; i++) {
        snprintf(patch, sizeof patch,
                 "{\"%s\": {\"conv_algorithm\": \"%s\", \"winograd_min_channels\": 1, \"conv_by_shape\": null}}",
                 section, winograds[i]);
        add(s, winograds[i], patch);
    }
    if (direct) {
        snprintf(patch, sizeof patch,
                 "{\"%s\": {\"conv_algorithm\": \"direct\", \"winograd_min_channels\": 1, \"conv_by_shape\": null}}",
                 section);
        add(s, "direct", patch);
    }
}

bool dbk_tune_fastest_per_op(const double t[][DBK_TUNE_MAX_CANDIDATES], const bool measured[], int count, int best[]) {
    int first = -1;
    bool one = true;
    for (int op = 0; op < DBK_CONV_OPS; op++) {
        best[op] = -1;
        if (!measured[op]) continue;
        best[op] = 0;
        for (int k = 1; k < count; k++)
            if (t[op][k] < t[op][best[op]]) best[op] = k;
        if (first < 0) first = op;
        one = one && best[op] == best[first];
    }
    return one;
}

static void opencl_winograd(dbk_tune_search *s, const dbk_profile *base) {
    if (strcmp(dbk_profile_string(base, "opencl.gemm", "clblast"), "tiled")) {
        s->name = "opencl.conv_by_shape";
        s->applies = winograd_case;
        s->skip = "Winograd needs the tiled GEMM (opencl.gemm \"tiled\")";
        return;
    }
    winograd_by_shape(s, "opencl", true);
}

/* CLBlast's Xgemm through CLBlastOverrideParameters, where the profile's GEMM is CLBlast:
 * CLBlast's own database first (no override; CLBlast keeps an override for the rest of the
 * process, so it must come before any), the profile's, then sets around the one the shipped
 * PoCL profile carries. Each set is a CLBlast kernel compile (6-50 s on PoCL). */
static void opencl_clblast(dbk_tune_search *s, const dbk_profile *base) {
    s->name = "opencl.clblast_xgemm";
    s->applies = conv_case;
    if (strcmp(dbk_profile_string(base, "opencl.gemm", "clblast"), "clblast")) {
        s->skip = "the profile's GEMM is gemm_rb (opencl.gemm \"tiled\"), not CLBlast";
        return;
    }
    add(s, "CLBlast's database", "{\"opencl\": {\"clblast_xgemm\": null}}");
    if (dbk_profile_has(base, "opencl.clblast_xgemm")) add(s, "profile as is", "{}");
    static const int sets[][6] = {
        /* MWG NWG KWG MDIMC NDIMC VWM */
        {64, 64, 16, 2, 8, 8}, {64, 64, 32, 8, 8, 4}, {32, 32, 16, 8, 8, 4}, {128, 64, 16, 8, 8, 8},
    };
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
        char label[96], patch[512];
        const int *v = sets[i];
        snprintf(label, sizeof label, "MWG %d NWG %d KWG %d MDIMC %d NDIMC %d VWM %d", v[0], v[1], v[2], v[3], v[4],
                 v[5]);
        snprintf(patch, sizeof patch,
                 "{\"opencl\": {\"clblast_xgemm\": {\"GEMMK\": 0, \"MWG\": %d, \"NWG\": %d, \"KWG\": %d, \"MDIMC\": %d, "
                 "\"NDIMC\": %d, \"MDIMA\": %d, \"NDIMB\": %d, \"KWI\": 2, \"VWM\": %d, \"VWN\": 4, \"STRM\": 1, "
                 "\"STRN\": 1, \"SA\": 0, \"SB\": 0, \"KREG\": 1}}}",
                 v[0], v[1], v[2], v[3], v[4], v[3], v[4], v[5]);
        add(s, label, patch);
    }
}

/* --- Vulkan ----------------------------------------------------------------------- */

/* Tiles of the convolution and GEMM shaders (specialization constants, tiles.h): BM x BN
 * outputs per work-group, BK deep, TM x TN per invocation. vk_pipeline.c falls back to its
 * defaults for a set the device cannot hold, so every candidate runs. */
static const int kVkTiles[][5] = {
    {64, 64, 16, 4, 4}, {64, 64, 16, 8, 8}, {64, 64, 32, 4, 4}, {128, 128, 16, 8, 8},
    {128, 128, 32, 8, 8}, {128, 64, 32, 8, 8}, {64, 128, 32, 8, 8},
};

static void vulkan_tiles(dbk_tune_search *s, const dbk_profile *base, const char *key) {
    snprintf(s->name_buf, sizeof s->name_buf, "vulkan.%s", key);
    s->name = s->name_buf;
    s->applies = strcmp(key, "gemm") ? conv_case : gemm_case;
    add(s, "profile as is", "{}");
    char path[64];
    int now[5];
    static const char *const names[5] = {"bm", "bn", "bk", "tm", "tn"};
    for (int f = 0; f < 5; f++) {
        snprintf(path, sizeof path, "vulkan.%s.%s", key, names[f]);
        now[f] = (int)dbk_profile_number(base, path, 0);
    }
    for (size_t i = 0; i < sizeof kVkTiles / sizeof kVkTiles[0]; i++) {
        const int *t = kVkTiles[i];
        if (!memcmp(t, now, sizeof now)) continue;   /* candidate 0 already */
        char label[96], patch[256];
        snprintf(label, sizeof label, "%dx%dx%d, %dx%d per invocation", t[0], t[1], t[2], t[3], t[4]);
        snprintf(patch, sizeof patch, "{\"vulkan\": {\"%s\": {\"bm\": %d, \"bn\": %d, \"bk\": %d, \"tm\": %d, \"tn\": %d}}}",
                 key, t[0], t[1], t[2], t[3], t[4]);
        add(s, label, patch);
    }
}

/* --- the list --------------------------------------------------------------------- */

int dbk_tune_search_count(dbk_backend_kind kind) {
    return kind == DBK_BACKEND_KIND_OPENCL || kind == DBK_BACKEND_KIND_VULKAN ? 3 : 0;
}

void dbk_tune_search_make(dbk_backend_kind kind, int i, const dbk_profile *base, dbk_tune_search *s) {
    memset(s, 0, sizeof *s);
    if (kind == DBK_BACKEND_KIND_OPENCL) {
        if (i == 0) opencl_gemm_rb(s, base);
        else if (i == 1) opencl_winograd(s, base);
        else opencl_clblast(s, base);
    } else if (i == 1) {
        winograd_by_shape(s, "vulkan", false);   /* after the tiles its GEMMs share with the implicit-GEMM convolutions */
    } else {
        vulkan_tiles(s, base, i == 0 ? "conv" : "gemm");
    }
}
