/*
 * sparse_mask.c — the sparse-mask spec and the host side of choosing a mask (see
 * sparse_mask.h).
 */
#include "train/sparse_mask.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/parse.h"
#include "core/rng.h"

void dbk_mask_spec_init(dbk_mask_spec *s) {
    memset(s, 0, sizeof *s);
    s->method = DBK_MASK_ALL;
    s->keep = 1.0;
    s->samples = DBK_MASK_DEFAULT_SAMPLES;
}

const char *dbk_mask_method_name(dbk_mask_method m) {
    return m == DBK_MASK_FISHER ? "fisher" : m == DBK_MASK_RANDOM ? "random" : "all";
}

dbk_status dbk_mask_spec_parse(const char *text, dbk_mask_spec *s) {
    const char *colon = strchr(text, ':');
    const size_t len = colon ? (size_t)(colon - text) : strlen(text);
#define IS(name) (len == strlen(name) && !strncmp(text, name, len))
    if (IS("all") && !colon) {
        s->method = DBK_MASK_ALL;
        s->keep = 1.0;
        return DBK_OK;
    }
    if (!IS("fisher") && !IS("random"))
        return dbk_set_error(DBK_ERR_INVALID_ARG, "unknown sparse mask '%s' (fisher:K, random:K or all; K the kept "
                             "fraction, e.g. 0.005 or 0.5%%)", text);
    double keep;
    if (!colon || !dbk_parse_fraction(colon + 1, &keep))
        return dbk_set_error(DBK_ERR_INVALID_ARG, "sparse mask '%s' needs the kept fraction of the parameters in (0, 1] "
                             "or a percentage, e.g. %.*s:0.005 or %.*s:0.5%%", text, (int)len, text, (int)len, text);
    s->method = IS("fisher") ? DBK_MASK_FISHER : DBK_MASK_RANDOM;
#undef IS
    s->keep = keep;
    return DBK_OK;
}

dbk_status dbk_mask_grad_parse(const char *text, dbk_mask_spec *s) {
    if (!strcmp(text, "square")) s->absolute = false;
    else if (!strcmp(text, "absolute")) s->absolute = true;
    else return dbk_set_error(DBK_ERR_INVALID_ARG, "unknown mask gradient '%s' (square or absolute)", text);
    return DBK_OK;
}

dbk_status dbk_mask_split_parse(const char *text, dbk_mask_spec *s) {
    if (!strcmp(text, "interleave")) s->same_for_ranks = false;
    else if (!strcmp(text, "same")) s->same_for_ranks = true;
    else return dbk_set_error(DBK_ERR_INVALID_ARG, "unknown mask split '%s' (interleave or same)", text);
    return DBK_OK;
}

void dbk_mask_spec_format(const dbk_mask_spec *s, char *out, size_t cap) {
    if (s->method == DBK_MASK_ALL) snprintf(out, cap, "all");
    else snprintf(out, cap, "%s:%.9g", dbk_mask_method_name(s->method), s->keep);
}

/* ---------------------------------------------------------------------------------- */
/* layout                                                                              */

/* The first component of a parameter name ("layer1" of "layer1.conv.weight"). */
static size_t first_component(const char *name) { return strcspn(name, "."); }

bool dbk_mask_is_classifier(const dbk_mask_layout *l, const dbk_param_info *pi) {
    const size_t n = strlen(l->classifier);
    return n > 0 && first_component(pi->name) == n && !strncmp(pi->name, l->classifier, n);
}

static int by_offset(const void *a, const void *b) {
    const dbk_mask_range *x = a, *y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

dbk_status dbk_mask_layout_init(const dbk_graph *g, const dbk_mask_spec *s, int ranks, dbk_mask_layout *out) {
    memset(out, 0, sizeof *out);
    const int n = dbk_graph_param_info_count(g);
    if (n == 0) return dbk_set_error(DBK_ERR_INVALID_ARG, "sparse mask: the model has no parameters");
    const dbk_param_info *last = dbk_graph_param_info(g, n - 1);
    snprintf(out->classifier, sizeof out->classifier, "%.*s", (int)first_component(last->name), last->name);
    out->ranges = dbk_calloc((size_t)n, sizeof *out->ranges);
    out->classifier_ranges = dbk_calloc((size_t)n, sizeof *out->classifier_ranges);
    if (!out->ranges || !out->classifier_ranges) {
        dbk_mask_layout_deinit(out);
        return DBK_ERR_OUT_OF_HOST_MEMORY;
    }
    for (int i = 0; i < n; i++) {
        const dbk_param_info *pi = dbk_graph_param_info(g, i);
        size_t count = 1;
        for (int d = 0; d < pi->ndim; d++) count *= (size_t)pi->shape[d];
        out->param_count += count;
        if (dbk_mask_is_classifier(out, pi)) {
            out->classifier_count += count;
            out->classifier_ranges[out->classifier_range_count++] = (dbk_mask_range){pi->offset, count};
        } else if (dbk_graph_group_frozen(g, pi->group)) out->frozen_count += count;
        else out->ranges[out->range_count++] = (dbk_mask_range){pi->offset, count};
    }
    /* Packed order is flat-buffer order; adjacent tensors become one range (one copy each way). */
    qsort(out->ranges, (size_t)out->range_count, sizeof *out->ranges, by_offset);
    int merged = 0;
    for (int i = 0; i < out->range_count; i++) {
        out->selectable_count += out->ranges[i].count;
        if (merged && out->ranges[merged - 1].offset + out->ranges[merged - 1].count == out->ranges[i].offset)
            out->ranges[merged - 1].count += out->ranges[i].count;
        else out->ranges[merged++] = out->ranges[i];
    }
    out->range_count = merged;
    if (s->method == DBK_MASK_ALL) return DBK_OK;
    /* fisher.py: keep_num = int(all_params_size * keep_ratio) - classifier_size */
    const double budget = floor((double)out->param_count * s->keep);
    if (budget <= (double)out->classifier_count) {
        dbk_status st = dbk_set_error(DBK_ERR_INVALID_ARG, "sparse mask %s:%g keeps %.0f of the model's %zu parameters, "
                                      "no more than its classifier '%s' alone (%zu, which always trains); keep more than "
                                      "%.4g%%", dbk_mask_method_name(s->method), s->keep, budget, out->param_count,
                                      out->classifier, out->classifier_count,
                                      100.0 * (double)out->classifier_count / (double)out->param_count);
        dbk_mask_layout_deinit(out);
        return st;
    }
    out->keep_count = (size_t)budget - out->classifier_count;
    out->select_count = s->same_for_ranks ? out->keep_count : out->keep_count * (size_t)(ranks > 1 ? ranks : 1);
    if (out->select_count > out->selectable_count) {
        dbk_status st = dbk_set_error(DBK_ERR_INVALID_ARG, "sparse mask %s:%g: %d rank%s x %zu kept parameters are more "
                                      "than the %zu the mask chooses from (every trainable parameter but the "
                                      "classifier's); keep less", dbk_mask_method_name(s->method), s->keep, ranks,
                                      ranks == 1 ? "" : "s", out->keep_count, out->selectable_count);
        dbk_mask_layout_deinit(out);
        return st;
    }
    return DBK_OK;
}

void dbk_mask_layout_deinit(dbk_mask_layout *l) {
    dbk_free(l->ranges);
    dbk_free(l->classifier_ranges);
    memset(l, 0, sizeof *l);
}

/* ---------------------------------------------------------------------------------- */
/* sharing a selection between ranks                                                   */

static int by_importance(const void *a, const void *b) {
    const dbk_mask_pick *x = a, *y = b;
    if (x->importance != y->importance) return x->importance > y->importance ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static int by_index(const void *a, const void *b) {
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return x < y ? -1 : x > y;
}

size_t dbk_mask_share(dbk_mask_pick *picks, size_t n, int ranks, int rank, bool same, int32_t *out) {
    if (ranks < 1) ranks = 1;
    qsort(picks, n, sizeof *picks, by_importance);
    size_t m = 0;
    for (size_t j = same ? 0 : (size_t)rank; j < n; j += same ? 1 : (size_t)ranks) out[m++] = picks[j].index;
    qsort(out, m, sizeof *out, by_index);
    return m;
}

bool dbk_mask_draw_random(size_t selectable, size_t count, uint64_t seed, dbk_mask_pick *out) {
    DBK_ASSERT(count <= selectable && selectable <= (size_t)INT32_MAX);
    int32_t *perm = dbk_malloc(selectable * sizeof *perm + 4);
    if (!perm) return false;
    dbk_rng rng;
    dbk_rng_init(&rng, seed);
    dbk_rng_permutation(&rng, perm, (int32_t)selectable);
    for (size_t j = 0; j < count; j++) out[j] = (dbk_mask_pick){perm[j], (float)(count - j)};
    dbk_free(perm);
    return true;
}
