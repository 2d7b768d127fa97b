/*
 * checkpoint.c — write and read the checkpoint format documented in checkpoint.h.
 *
 * Both directions go through explicit little-endian byte encoding, so files move between
 * hosts unchanged and no field is ever read through a misaligned pointer (names have odd
 * lengths, so the f32 data is generally unaligned in the file).
 *
 * Loading parses the file twice with the same routine: a first pass that only checks every
 * length against the bytes that remain and sums the sizes, then, after the checksum, a pass
 * that copies into allocations sized by that sum. A corrupted count therefore fails as a
 * format error instead of requesting gigabytes.
 */
#include "train/checkpoint.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/bytes.h"
#include "core/fileio.h"

#define MAGIC_BYTES 8
#define SUM_BYTES   8
/* Smallest possible tensor record: name length, a 1-byte name, ndim, one dim, element count. */
#define MIN_TENSOR_BYTES (4 + 1 + 4 + 8 + 8)

struct dbk_checkpoint {
    const char      *model;      /* points into strings */
    const char      *meta;       /* points into strings */
    int              count;
    dbk_ckpt_tensor *tensors;    /* (count), names and data point into strings / values */
    char            *strings;    /* model, meta and tensor names, each NUL-terminated */
    float           *values;     /* all tensor data, in file order */
};

/* ---------------------------------------------------------------------------------- */
/* save                                                                               */

/* Checks one tensor to be saved and returns its element count in *numel. */
static dbk_status check_save_tensor(const char *path, const dbk_ckpt_tensor *t, int i, int64_t *numel) {
    if (!t->name || !*t->name)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "checkpoint %s: tensor %d has no name", path, i);
    if (strlen(t->name) > UINT32_MAX)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "checkpoint %s: tensor %d name too long", path, i);
    if (t->ndim < 1 || t->ndim > 4)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "checkpoint %s: tensor '%s' has ndim %d, expected 1..4", path,
                             t->name, t->ndim);
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) {
        if (t->shape[d] < 0 || (t->shape[d] > 0 && n > INT64_MAX / 4 / t->shape[d]))
            return dbk_set_error(DBK_ERR_INVALID_ARG, "checkpoint %s: tensor '%s' has a bad dimension %lld", path,
                                 t->name, (long long)t->shape[d]);
        n *= t->shape[d];
    }
    if (n > 0 && !t->data)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "checkpoint %s: tensor '%s' has no data", path, t->name);
    *numel = n;
    return DBK_OK;
}

dbk_status dbk_checkpoint_save(const char *path, const char *model, const char *meta_json,
                               const dbk_ckpt_tensor *t, int count) {
    if (!model) model = "";
    if (!meta_json) meta_json = "";
    size_t lm = strlen(model), lj = strlen(meta_json);
    if (count < 0 || (count > 0 && !t))
        return dbk_set_error(DBK_ERR_INVALID_ARG, "checkpoint %s: bad tensor list (count %d)", path, count);
    if (lm > UINT32_MAX || lj > UINT32_MAX)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "checkpoint %s: model name or metadata too long", path);

    /* Plan: validate every tensor and size the file. */
    size_t total = MAGIC_BYTES + 4 + 4 + 4 + lm + 4 + lj + SUM_BYTES;
    for (int i = 0; i < count; i++) {
        int64_t n = 0;
        DBK_TRY(check_save_tensor(path, &t[i], i, &n));
        for (int j = 0; j < i; j++)
            if (strcmp(t[i].name, t[j].name) == 0)
                return dbk_set_error(DBK_ERR_INVALID_ARG, "checkpoint %s: duplicate tensor name '%s'", path,
                                     t[i].name);
        total += 4 + strlen(t[i].name) + 4 + 8 * (size_t)t[i].ndim + 8 + 4 * (size_t)n;
    }

    unsigned char *buf = dbk_malloc(total);
    if (!buf) return DBK_ERR_OUT_OF_HOST_MEMORY;
    unsigned char *p = buf;
    p = dbk_append_bytes(p, DBK_CHECKPOINT_MAGIC, MAGIC_BYTES);
    p = dbk_append_le32(p, DBK_CHECKPOINT_VERSION);
    p = dbk_append_le32(p, (uint32_t)count);
    p = dbk_append_le32(p, (uint32_t)lm);
    p = dbk_append_bytes(p, model, lm);
    p = dbk_append_le32(p, (uint32_t)lj);
    p = dbk_append_bytes(p, meta_json, lj);
    for (int i = 0; i < count; i++) {
        size_t ln = strlen(t[i].name);
        int64_t n = 1;
        p = dbk_append_le32(p, (uint32_t)ln);
        p = dbk_append_bytes(p, t[i].name, ln);
        p = dbk_append_le32(p, (uint32_t)t[i].ndim);
        for (int d = 0; d < t[i].ndim; d++) {
            p = dbk_append_le64(p, (uint64_t)t[i].shape[d]);
            n *= t[i].shape[d];
        }
        p = dbk_append_le64(p, (uint64_t)n);
        for (int64_t k = 0; k < n; k++) {
            uint32_t bits;
            memcpy(&bits, &t[i].data[k], 4);
            p = dbk_append_le32(p, bits);
        }
    }
    p = dbk_append_le64(p, dbk_fnv1a64(buf, (size_t)(p - buf)));
    DBK_ASSERT((size_t)(p - buf) == total);

    dbk_status st = dbk_file_write_atomic(path, buf, total);
    dbk_free(buf);
    return st;
}

/* ---------------------------------------------------------------------------------- */
/* load                                                                               */

/* Sizes the second pass needs. */
typedef struct layout {
    uint32_t count;
    size_t   string_bytes;   /* including one NUL per string */
    size_t   values;         /* f32 elements over all tensors */
} layout;

/* Walks the body after the magic. With c == NULL it only validates and fills *lay; with c it
 * copies into c's arrays, which were sized from *lay by an earlier validating pass. */
static dbk_status parse(dbk_byte_reader *r, layout *lay, dbk_checkpoint *c) {
    const unsigned char *p;
    DBK_TAKE(p, r, 4, "version");
    uint32_t version = dbk_get_le32(p);
    if (version != DBK_CHECKPOINT_VERSION)
        return dbk_set_error(DBK_ERR_FORMAT, "%s: checkpoint version %u, this build reads version %u", r->where,
                             (unsigned)version, (unsigned)DBK_CHECKPOINT_VERSION);
    DBK_TAKE(p, r, 4, "tensor count");
    uint32_t count = dbk_get_le32(p);
    if (count > INT_MAX || count > (r->end - r->pos) / MIN_TENSOR_BYTES)
        return dbk_set_error(DBK_ERR_FORMAT, "%s: header claims %u tensors but only %zu bytes follow; corrupted?",
                             r->where, (unsigned)count, r->end - r->pos);
    char *strings = c ? c->strings : NULL;
    float *values = c ? c->values : NULL;
    size_t string_bytes = 0, nvalues = 0;

    /* model name, then metadata: u32 length + bytes each */
    for (int s = 0; s < 2; s++) {
        const char *what = s == 0 ? "model name" : "metadata";
        DBK_TAKE(p, r, 4, what);
        uint32_t len = dbk_get_le32(p);
        DBK_TAKE(p, r, len, what);
        if (c) {
            memcpy(strings, p, len);
            strings[len] = '\0';
            if (s == 0) c->model = strings; else c->meta = strings;
            strings += len + 1;
        }
        string_bytes += (size_t)len + 1;
    }

    for (uint32_t i = 0; i < count; i++) {
        char what[64];
        snprintf(what, sizeof what, "tensor %u", (unsigned)i);
        DBK_TAKE(p, r, 4, what);
        uint32_t ln = dbk_get_le32(p);
        if (ln == 0) return dbk_set_error(DBK_ERR_FORMAT, "%s: %s has an empty name", r->where, what);
        const unsigned char *name;
        DBK_TAKE(name, r, ln, what);
        DBK_TAKE(p, r, 4, what);
        uint32_t ndim = dbk_get_le32(p);
        if (ndim < 1 || ndim > 4)
            return dbk_set_error(DBK_ERR_FORMAT, "%s: %s has ndim %u, expected 1..4", r->where, what, (unsigned)ndim);
        int64_t shape[4] = {0, 0, 0, 0};
        DBK_TAKE(p, r, 8 * (size_t)ndim, what);
        bool has_zero = false;
        for (uint32_t d = 0; d < ndim; d++) {
            shape[d] = (int64_t)dbk_get_le64(p + 8 * d);
            if (shape[d] < 0)
                return dbk_set_error(DBK_ERR_FORMAT, "%s: %s has a negative dimension", r->where, what);
            if (shape[d] == 0) has_zero = true;
        }
        DBK_TAKE(p, r, 8, what);
        uint64_t numel = dbk_get_le64(p);
        /* The data must fit in what is left, so no valid product exceeds max_numel. */
        uint64_t max_numel = (r->end - r->pos) / 4, prod = has_zero ? 0 : 1;
        for (uint32_t d = 0; d < ndim && prod; d++) {
            if (prod > max_numel / (uint64_t)shape[d]) {
                prod = UINT64_MAX;
                break;
            }
            prod *= (uint64_t)shape[d];
        }
        if (prod == UINT64_MAX)
            return dbk_set_error(DBK_ERR_FORMAT, "%s: truncated checkpoint: %s's shape needs more data than the "
                                 "%zu bytes left", r->where, what, r->end - r->pos);
        if (numel != prod)
            return dbk_set_error(DBK_ERR_FORMAT, "%s: %s has %llu elements but its shape holds %llu", r->where, what,
                                 (unsigned long long)numel, (unsigned long long)prod);
        DBK_TAKE(p, r, 4 * (size_t)numel, what);
        if (c) {
            dbk_ckpt_tensor *t = &c->tensors[i];
            memcpy(strings, name, ln);
            strings[ln] = '\0';
            t->name = strings;
            strings += ln + 1;
            t->ndim = (int)ndim;
            memcpy(t->shape, shape, sizeof shape);
            for (uint64_t k = 0; k < numel; k++) {
                uint32_t bits = dbk_get_le32(p + 4 * k);
                memcpy(&values[k], &bits, 4);
            }
            t->data = values;
            values += numel;
        }
        string_bytes += (size_t)ln + 1;
        nvalues += (size_t)numel;
    }
    if (r->pos != r->end)
        return dbk_set_error(DBK_ERR_FORMAT, "%s: %zu unexpected bytes after the last tensor; corrupted?", r->where,
                             r->end - r->pos);
    lay->count = count;
    lay->string_bytes = string_bytes;
    lay->values = nvalues;
    return DBK_OK;
}

/* Magic and version, checked before the rest of a file is read. */
static dbk_status check_header(const char *path, const unsigned char *head, size_t n, size_t file_size) {
    if (n < MAGIC_BYTES || memcmp(head, DBK_CHECKPOINT_MAGIC, MAGIC_BYTES) != 0)
        return dbk_set_error(DBK_ERR_FORMAT, "%s: not a daybreak checkpoint (no \"%s\" magic at the start)", path,
                             DBK_CHECKPOINT_MAGIC);
    if (n < MAGIC_BYTES + 4 || file_size < MAGIC_BYTES + 4 + 4 + 4 + 4 + SUM_BYTES)
        return dbk_set_error(DBK_ERR_FORMAT, "%s: truncated checkpoint: %zu bytes, smaller than any header", path,
                             file_size);
    uint32_t version = dbk_get_le32(head + MAGIC_BYTES);
    if (version != DBK_CHECKPOINT_VERSION)
        return dbk_set_error(DBK_ERR_FORMAT, "%s: checkpoint version %u, this build reads version %u", path,
                             (unsigned)version, (unsigned)DBK_CHECKPOINT_VERSION);
    return DBK_OK;
}

dbk_status dbk_checkpoint_parse(const void *data, size_t n, const char *where, dbk_checkpoint **out) {
    *out = NULL;
    const unsigned char *bytes = data;
    DBK_TRY(check_header(where, bytes, n < MAGIC_BYTES + 4 ? n : MAGIC_BYTES + 4, n));
    dbk_byte_reader r = {.where = where, .kind = "checkpoint", .data = bytes, .pos = MAGIC_BYTES, .end = n - SUM_BYTES};
    layout lay;
    DBK_TRY(parse(&r, &lay, NULL));

    uint64_t stored = dbk_get_le64(bytes + n - SUM_BYTES), computed = dbk_fnv1a64(bytes, n - SUM_BYTES);
    if (stored != computed)
        return dbk_set_error(DBK_ERR_FORMAT, "%s: checksum mismatch (stored %016llx, computed %016llx); the file "
                             "is corrupted", where, (unsigned long long)stored, (unsigned long long)computed);

    dbk_checkpoint *c = dbk_calloc(1, sizeof *c);
    if (!c) return DBK_ERR_OUT_OF_HOST_MEMORY;
    c->tensors = dbk_calloc(lay.count ? lay.count : 1, sizeof *c->tensors);
    c->strings = dbk_malloc(lay.string_bytes);
    c->values = dbk_malloc(lay.values ? lay.values * sizeof(float) : 1);
    if (!c->tensors || !c->strings || !c->values) {
        dbk_checkpoint_destroy(c);
        return DBK_ERR_OUT_OF_HOST_MEMORY;
    }
    c->count = (int)lay.count;
    r.pos = MAGIC_BYTES;
    dbk_status st = parse(&r, &lay, c);
    DBK_ASSERT(st == DBK_OK);   /* the same bytes passed the validating pass */
    *out = c;
    return DBK_OK;
}

dbk_status dbk_checkpoint_load(const char *path, dbk_checkpoint **out) {
    *out = NULL;
    const dbk_file_spec spec = {.what = "checkpoint", .max_bytes = DBK_CHECKPOINT_MAX_BYTES,
                                .head_bytes = MAGIC_BYTES + 4, .check_head = check_header};
    void *data = NULL;
    size_t n = 0;
    DBK_TRY(dbk_file_read_spec(path, &spec, &data, &n));
    dbk_status st = dbk_checkpoint_parse(data, n, path, out);
    dbk_free(data);
    return st;
}

const char *dbk_checkpoint_model(const dbk_checkpoint *c) { return c->model ? c->model : ""; }
const char *dbk_checkpoint_meta(const dbk_checkpoint *c) { return c->meta ? c->meta : ""; }
int dbk_checkpoint_count(const dbk_checkpoint *c) { return c->count; }

const dbk_ckpt_tensor *dbk_checkpoint_tensor(const dbk_checkpoint *c, int i) {
    DBK_ASSERT(i >= 0 && i < c->count);
    return &c->tensors[i];
}

const dbk_ckpt_tensor *dbk_checkpoint_find(const dbk_checkpoint *c, const char *name) {
    for (int i = 0; i < c->count; i++)
        if (strcmp(c->tensors[i].name, name) == 0) return &c->tensors[i];
    return NULL;
}

void dbk_checkpoint_destroy(dbk_checkpoint *c) {
    if (!c) return;
    dbk_free(c->tensors);
    dbk_free(c->strings);
    dbk_free(c->values);
    dbk_free(c);
}
