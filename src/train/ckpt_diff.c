/*
 * ckpt_diff.c — the small-checkpoint difference file (see ckpt_diff.h): made, written, read
 * (every length checked against the bytes left before anything is allocated from it), and
 * applied to a base.
 */
#include "train/ckpt_diff.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/bytes.h"
#include "core/fileio.h"

#define MAGIC_BYTES 8
#define SUM_BYTES   8
/* Magic, version, the two lengths, hash, P, S, K, checksum: the file without its strings and arrays. */
#define FIXED_BYTES (MAGIC_BYTES + 4 + 4 + 4 + 8 + 8 + 8 + 8 + SUM_BYTES)

static float get_f32(const unsigned char *p) {
    const uint32_t v = dbk_get_le32(p);
    float f;
    memcpy(&f, &v, sizeof f);
    return f;
}

static uint32_t bits(float f) {
    uint32_t v;
    memcpy(&v, &f, sizeof v);
    return v;
}

/* FNV-1a-64 over the values' little-endian bytes, whatever the host's byte order. */
static uint64_t hash_values(uint64_t h, const float *v, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char b[4];
        dbk_put_le32(b, bits(v[i]));
        h = dbk_fnv1a64_update(h, b, 4);
    }
    return h;
}

uint64_t dbk_ckpt_diff_hash(const float *params, size_t p, const float *stats, size_t s) {
    return hash_values(hash_values(dbk_fnv1a64(NULL, 0), params, p), stats, s);
}

void dbk_ckpt_diff_deinit(dbk_ckpt_diff *d) {
    dbk_free(d->model);
    dbk_free(d->meta);
    dbk_free(d->indices);
    dbk_free(d->values);
    dbk_free(d->stats);
    memset(d, 0, sizeof *d);
}

static char *copy_string(const char *s, size_t n) {
    char *c = dbk_malloc(n + 1);
    if (!c) return NULL;
    if (n) memcpy(c, s, n);
    c[n] = '\0';
    return c;
}

/* out's arrays for k changed parameters and s statistics, and its strings. */
static dbk_status alloc_diff(dbk_ckpt_diff *out, const char *model, size_t lm, const char *meta, size_t lj, size_t k,
                             size_t s) {
    out->model = copy_string(model, lm);
    out->meta = copy_string(meta, lj);
    out->indices = dbk_malloc(k * sizeof *out->indices + 4);
    out->values = dbk_malloc(k * sizeof *out->values + 4);
    out->stats = dbk_malloc(s * sizeof *out->stats + 4);
    if (out->model && out->meta && out->indices && out->values && out->stats) return DBK_OK;
    dbk_ckpt_diff_deinit(out);
    return DBK_ERR_OUT_OF_HOST_MEMORY;
}

dbk_status dbk_ckpt_diff_make(const char *model, const char *meta, const float *base_params, const float *base_stats,
                              const float *params, const float *stats, size_t p, size_t s, dbk_ckpt_diff *out) {
    memset(out, 0, sizeof *out);
    if (p > UINT32_MAX)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "checkpoint difference: %zu parameters are more than its u32 "
                             "indices reach", p);
    size_t k = 0;
    for (size_t i = 0; i < p; i++) k += bits(params[i]) != bits(base_params[i]);
    if (!meta) meta = "";
    if (!model) model = "";
    DBK_TRY(alloc_diff(out, model, strlen(model), meta, strlen(meta), k, s));
    out->base_hash = dbk_ckpt_diff_hash(base_params, p, base_stats, s);
    out->param_count = p;
    out->stat_count = s;
    out->changed = k;
    size_t j = 0;
    for (size_t i = 0; i < p; i++)
        if (bits(params[i]) != bits(base_params[i])) {
            out->indices[j] = (uint32_t)i;
            out->values[j++] = params[i];
        }
    if (s) memcpy(out->stats, stats, s * sizeof *stats);
    return DBK_OK;
}

size_t dbk_ckpt_diff_bytes(const dbk_ckpt_diff *d) {
    return FIXED_BYTES + strlen(d->model) + strlen(d->meta) + 8 * (size_t)d->changed + 4 * (size_t)d->stat_count;
}

dbk_status dbk_ckpt_diff_save(const char *path, const dbk_ckpt_diff *d) {
    const size_t n = dbk_ckpt_diff_bytes(d), lm = strlen(d->model), lj = strlen(d->meta);
    if (lm > UINT32_MAX || lj > UINT32_MAX)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "%s: model name or metadata too long", path);
    unsigned char *buf = dbk_malloc(n), *p = buf;
    if (!buf) return DBK_ERR_OUT_OF_HOST_MEMORY;
    p = dbk_append_bytes(p, DBK_DIFF_MAGIC, MAGIC_BYTES);
    p = dbk_append_le32(p, DBK_DIFF_VERSION);
    p = dbk_append_le32(p, (uint32_t)lm);
    p = dbk_append_bytes(p, d->model, lm);
    p = dbk_append_le32(p, (uint32_t)lj);
    p = dbk_append_bytes(p, d->meta, lj);
    p = dbk_append_le64(p, d->base_hash);
    p = dbk_append_le64(p, d->param_count);
    p = dbk_append_le64(p, d->stat_count);
    p = dbk_append_le64(p, d->changed);
    for (uint64_t j = 0; j < d->changed; j++) p = dbk_append_le32(p, d->indices[j]);
    for (uint64_t j = 0; j < d->changed; j++) p = dbk_append_le32(p, bits(d->values[j]));
    for (uint64_t j = 0; j < d->stat_count; j++) p = dbk_append_le32(p, bits(d->stats[j]));
    p = dbk_append_le64(p, dbk_fnv1a64(buf, n - SUM_BYTES));
    DBK_ASSERT((size_t)(p - buf) == n);
    dbk_status st = dbk_file_write_atomic(path, buf, n);
    dbk_free(buf);
    return st;
}

/* ---------------------------------------------------------------------------------- */
/* reading                                                                             */

/* A count of `each`-byte items that must fit the bytes left (checked before multiplying). */
static dbk_status take_count(dbk_byte_reader *r, size_t each, const char *what, uint64_t *out) {
    const unsigned char *p;
    DBK_TAKE(p, r, 8, what);
    *out = dbk_get_le64(p);
    if (*out > (r->end - r->pos) / each)
        return dbk_set_error(DBK_ERR_FORMAT, "%s: %s %llu needs more than the %zu bytes left; corrupted?", r->where, what,
                             (unsigned long long)*out, r->end - r->pos);
    return DBK_OK;
}

static dbk_status parse_body(dbk_byte_reader *r, dbk_ckpt_diff *out) {
    const unsigned char *p, *model, *meta;
    DBK_TAKE(p, r, 4, "version");
    const uint32_t version = dbk_get_le32(p);
    if (version != DBK_DIFF_VERSION)
        return dbk_set_error(DBK_ERR_FORMAT, "%s: checkpoint difference version %u, this build reads version %u",
                             r->where, (unsigned)version, (unsigned)DBK_DIFF_VERSION);
    DBK_TAKE(p, r, 4, "model name");
    const uint32_t lm = dbk_get_le32(p);
    DBK_TAKE(model, r, lm, "model name");
    DBK_TAKE(p, r, 4, "metadata");
    const uint32_t lj = dbk_get_le32(p);
    DBK_TAKE(meta, r, lj, "metadata");
    DBK_TAKE(p, r, 8, "base hash");
    const uint64_t hash = dbk_get_le64(p);
    DBK_TAKE(p, r, 8, "parameter count");
    const uint64_t pc = dbk_get_le64(p);
    uint64_t sc, k;
    DBK_TAKE(p, r, 8, "statistics count");
    sc = dbk_get_le64(p);
    DBK_TRY(take_count(r, 8, "changed parameters", &k));
    if (k > pc)
        return dbk_set_error(DBK_ERR_FORMAT, "%s: %llu changed parameters of %llu", r->where, (unsigned long long)k,
                             (unsigned long long)pc);
    const unsigned char *idx, *val, *st;
    DBK_TAKE(idx, r, 4 * (size_t)k, "indices");
    DBK_TAKE(val, r, 4 * (size_t)k, "values");
    if (sc > (r->end - r->pos) / 4)
        return dbk_set_error(DBK_ERR_FORMAT, "%s: statistics count %llu needs more than the %zu bytes left; corrupted?",
                             r->where, (unsigned long long)sc, r->end - r->pos);
    DBK_TAKE(st, r, 4 * (size_t)sc, "statistics");
    if (r->pos != r->end)
        return dbk_set_error(DBK_ERR_FORMAT, "%s: %zu bytes after the statistics, before the checksum", r->where,
                             r->end - r->pos);
    for (uint64_t j = 0; j < k; j++) {
        const uint32_t i = dbk_get_le32(idx + 4 * j);
        if (i >= pc || (j > 0 && i <= dbk_get_le32(idx + 4 * (j - 1))))
            return dbk_set_error(DBK_ERR_FORMAT, "%s: index %llu (%u) is %s", r->where, (unsigned long long)j,
                                 (unsigned)i, i >= pc ? "past the parameters" : "not above the one before it");
    }
    DBK_TRY(alloc_diff(out, (const char *)model, lm, (const char *)meta, lj, (size_t)k, (size_t)sc));
    out->base_hash = hash;
    out->param_count = pc;
    out->stat_count = sc;
    out->changed = k;
    for (uint64_t j = 0; j < k; j++) {
        out->indices[j] = dbk_get_le32(idx + 4 * j);
        out->values[j] = get_f32(val + 4 * j);
    }
    for (uint64_t j = 0; j < sc; j++) out->stats[j] = get_f32(st + 4 * j);
    return DBK_OK;
}

dbk_status dbk_ckpt_diff_parse(const void *data, size_t n, const char *where, dbk_ckpt_diff *out) {
    memset(out, 0, sizeof *out);
    const unsigned char *b = data;
    if (n < MAGIC_BYTES || memcmp(b, DBK_DIFF_MAGIC, MAGIC_BYTES) != 0)
        return dbk_set_error(DBK_ERR_FORMAT, "%s: not a daybreak checkpoint difference (magic %s missing)", where,
                             DBK_DIFF_MAGIC);
    if (n < FIXED_BYTES)
        return dbk_set_error(DBK_ERR_FORMAT, "%s: truncated checkpoint difference: %zu bytes, at least %d needed", where,
                             n, FIXED_BYTES);
    if (dbk_get_le64(b + n - SUM_BYTES) != dbk_fnv1a64(b, n - SUM_BYTES))
        return dbk_set_error(DBK_ERR_FORMAT, "%s: checkpoint difference checksum mismatch (corrupted or truncated)",
                             where);
    dbk_byte_reader r = {
        .where = where, .kind = "checkpoint difference", .data = b, .pos = MAGIC_BYTES, .end = n - SUM_BYTES};
    dbk_status st = parse_body(&r, out);
    if (st != DBK_OK) dbk_ckpt_diff_deinit(out);
    return st;
}

static dbk_status check_head(const char *path, const unsigned char *head, size_t n, size_t file_size) {
    (void)file_size;
    if (n < MAGIC_BYTES || memcmp(head, DBK_DIFF_MAGIC, MAGIC_BYTES) != 0)
        return dbk_set_error(DBK_ERR_FORMAT, "%s: not a daybreak checkpoint difference (magic %s missing)", path,
                             DBK_DIFF_MAGIC);
    if (n >= MAGIC_BYTES + 4 && dbk_get_le32(head + MAGIC_BYTES) != DBK_DIFF_VERSION)
        return dbk_set_error(DBK_ERR_FORMAT, "%s: checkpoint difference version %u, this build reads version %u", path,
                             (unsigned)dbk_get_le32(head + MAGIC_BYTES), (unsigned)DBK_DIFF_VERSION);
    return DBK_OK;
}

dbk_status dbk_ckpt_diff_load(const char *path, dbk_ckpt_diff *out) {
    memset(out, 0, sizeof *out);
    const dbk_file_spec spec = {.what = "checkpoint difference", .max_bytes = DBK_DIFF_MAX_BYTES,
                                .head_bytes = MAGIC_BYTES + 4, .check_head = check_head};
    void *data;
    size_t n;
    DBK_TRY(dbk_file_read_spec(path, &spec, &data, &n));
    dbk_status st = dbk_ckpt_diff_parse(data, n, path, out);
    dbk_free(data);
    return st;
}

dbk_status dbk_ckpt_diff_apply(const dbk_ckpt_diff *d, const char *path, const char *model, const char *base_path,
                               float *params, size_t p, float *stats, size_t s) {
    if (strcmp(d->model, model) != 0)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "%s is a difference of model '%s'; %s holds model '%s'", path, d->model,
                             base_path, model);
    if (d->param_count != p || d->stat_count != s)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "%s has %llu parameters and %llu statistics; the model of %s has %zu "
                             "and %zu", path, (unsigned long long)d->param_count, (unsigned long long)d->stat_count,
                             base_path, p, s);
    const uint64_t h = dbk_ckpt_diff_hash(params, p, stats, s);
    if (h != d->base_hash)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "%s was made against a base with hash %016llx; %s has hash %016llx: "
                             "it is not that base (give the checkpoint the difference was made from, e.g. the run's "
                             "base.ckpt)", path, (unsigned long long)d->base_hash, base_path, (unsigned long long)h);
    for (uint64_t j = 0; j < d->changed; j++) params[d->indices[j]] = d->values[j];
    if (s) memcpy(stats, d->stats, s * sizeof *stats);
    return DBK_OK;
}
