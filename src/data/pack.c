/*
 * pack.c — reading dataset packs (pack.h). The writer is pack_write.c.
 */
#define _POSIX_C_SOURCE 200809L
#include "data/pack.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "core/alloc.h"
#include "core/bytes.h"
#include "core/fileio.h"

typedef struct pack_entry {
    const char *name;
    int         encoding;   /* dbk_pack_encoding */
    uint64_t    offset, stored, raw;
} pack_entry;

struct dbk_pack {
    int                  fd;        /* -1 for a pack in memory */
    const unsigned char *mem;
    uint64_t             size;
    uint32_t             version;
    char                 where[512];
    int                  count;
    pack_entry          *entries;
    char                *names;     /* every name, NUL-terminated */
};

/* n bytes at offset (already checked to lie inside the file). */
static dbk_status read_at(const dbk_pack *p, uint64_t offset, void *buf, size_t n) {
    if (p->fd < 0) {
        memcpy(buf, p->mem + offset, n);
        return DBK_OK;
    }
    unsigned char *dst = buf;
    while (n > 0) {
        ssize_t got = pread(p->fd, dst, n, (off_t)offset);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return dbk_set_error(DBK_ERR_IO, "%s: read failed: %s", p->where, strerror(errno));
        if (got == 0) return dbk_set_error(DBK_ERR_FORMAT, "%s: file ends early (truncated?)", p->where);
        dst += got;
        offset += (uint64_t)got;
        n -= (size_t)got;
    }
    return DBK_OK;
}

/* A relative path: no leading or trailing '/', no empty, "." or ".." component, no NUL. */
static bool name_ok(const char *s, size_t n) {
    if (n == 0 || memchr(s, '\0', n)) return false;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] != '/') continue;
        size_t len = i - start;
        if (len == 0 || (len == 1 && s[start] == '.') || (len == 2 && s[start] == '.' && s[start + 1] == '.'))
            return false;
        start = i + 1;
    }
    return true;
}

/* Parses and checks the index (n bytes, already checksummed) of a pack whose data area ends
 * at data_end. */
static dbk_status parse_index(dbk_pack *p, const unsigned char *ix, size_t n, uint64_t data_end) {
    const size_t min_entry = 2 + 1 + 1 + 24;
    if ((uint64_t)p->count * min_entry > n)
        return dbk_set_error(DBK_ERR_FORMAT, "%s: index of %zu bytes cannot hold %d entries", p->where, n, p->count);
    p->entries = dbk_malloc((size_t)p->count * sizeof *p->entries + 1);
    p->names = dbk_malloc(n + 1);
    if (!p->entries || !p->names) return DBK_ERR_OUT_OF_HOST_MEMORY;
    size_t at = 0, names_at = 0;
    for (int i = 0; i < p->count; i++) {
        if (n - at < 2) return dbk_set_error(DBK_ERR_FORMAT, "%s: index ends inside entry %d", p->where, i);
        size_t len = (size_t)ix[at] | (size_t)ix[at + 1] << 8;
        at += 2;
        if (len == 0 || len > DBK_PACK_MAX_NAME || n - at < len + 1 + 24)
            return dbk_set_error(DBK_ERR_FORMAT, "%s: entry %d: bad name length %zu or index ends inside it", p->where,
                                 i, len);
        const char *name = (const char *)ix + at;
        if (!name_ok(name, len))
            return dbk_set_error(DBK_ERR_FORMAT, "%s: entry %d: name is not a relative path of non-empty parts",
                                 p->where, i);
        char *copy = p->names + names_at;   /* len + 1 <= 2 + len bytes of index consumed */
        memcpy(copy, name, len);
        copy[len] = '\0';
        names_at += len + 1;
        at += len;
        pack_entry *e = &p->entries[i];
        e->name = copy;
        e->encoding = ix[at++];
        const int last_encoding = p->version >= 2 ? DBK_PACK_STORED : DBK_PACK_ZSTD_DELTA;
        if (e->encoding > last_encoding)
            return dbk_set_error(DBK_ERR_FORMAT, "%s: entry '%s': unknown encoding %d in a version %u pack", p->where,
                                 copy, e->encoding, p->version);
        e->offset = dbk_get_le64(ix + at);
        e->stored = dbk_get_le64(ix + at + 8);
        e->raw = dbk_get_le64(ix + at + 16);
        at += 24;
        if (e->offset < DBK_PACK_HEADER_BYTES || e->offset > data_end || e->stored == 0 ||
            e->stored > data_end - e->offset)
            return dbk_set_error(DBK_ERR_FORMAT, "%s: entry '%s': data range outside the file", p->where, copy);
        if (e->raw > DBK_PACK_MAX_ENTRY_BYTES)
            return dbk_set_error(DBK_ERR_FORMAT, "%s: entry '%s': %llu bytes, at most %llu allowed", p->where, copy,
                                 (unsigned long long)e->raw, (unsigned long long)DBK_PACK_MAX_ENTRY_BYTES);
        if (e->encoding == DBK_PACK_STORED && e->stored != e->raw + 8)
            return dbk_set_error(DBK_ERR_FORMAT, "%s: entry '%s': stored entry of %llu bytes holds %llu", p->where,
                                 copy, (unsigned long long)e->raw, (unsigned long long)e->stored);
        if (i > 0 && strcmp(p->entries[i - 1].name, copy) >= 0)
            return dbk_set_error(DBK_ERR_FORMAT, "%s: entry '%s': names are not sorted and unique", p->where, copy);
    }
    if (at != n) return dbk_set_error(DBK_ERR_FORMAT, "%s: %zu bytes after the last index entry", p->where, n - at);
    return DBK_OK;
}

/* Header and index of p (fd or mem and size set). */
static dbk_status load(dbk_pack *p) {
    unsigned char h[DBK_PACK_HEADER_BYTES];
    if (p->size < DBK_PACK_HEADER_BYTES)
        return dbk_set_error(DBK_ERR_FORMAT, "%s: %llu bytes, too short for a dataset pack", p->where,
                             (unsigned long long)p->size);
    DBK_TRY(read_at(p, 0, h, sizeof h));
    if (memcmp(h, DBK_PACK_MAGIC, 8))
        return dbk_set_error(DBK_ERR_FORMAT, "%s: not a dataset pack (no DBKPACK magic)", p->where);
    uint32_t version = dbk_get_le32(h + 8), count = dbk_get_le32(h + 12);
    uint64_t ix_off = dbk_get_le64(h + 16), ix_bytes = dbk_get_le64(h + 24), ix_hash = dbk_get_le64(h + 32);
    if (version < 1 || version > DBK_PACK_VERSION)
        return dbk_set_error(DBK_ERR_FORMAT, "%s: pack version %u, this daybreak reads versions 1 to %u", p->where,
                             version, DBK_PACK_VERSION);
    p->version = version;
    if (count > DBK_PACK_MAX_ENTRIES)
        return dbk_set_error(DBK_ERR_FORMAT, "%s: %u entries, at most %u allowed", p->where, count,
                             DBK_PACK_MAX_ENTRIES);
    if (ix_bytes > DBK_PACK_MAX_INDEX_BYTES || ix_off < DBK_PACK_HEADER_BYTES || ix_off > p->size ||
        ix_bytes != p->size - ix_off)
        return dbk_set_error(DBK_ERR_FORMAT, "%s: index (offset %llu, %llu bytes) does not end the %llu-byte file "
                             "(truncated?)", p->where, (unsigned long long)ix_off, (unsigned long long)ix_bytes,
                             (unsigned long long)p->size);
    p->count = (int)count;
    unsigned char *ix = dbk_malloc((size_t)ix_bytes + 1);
    if (!ix) return DBK_ERR_OUT_OF_HOST_MEMORY;
    dbk_status st = read_at(p, ix_off, ix, (size_t)ix_bytes);
    if (st == DBK_OK && dbk_fnv1a64(ix, (size_t)ix_bytes) != ix_hash)
        st = dbk_set_error(DBK_ERR_FORMAT, "%s: index checksum mismatch (damaged file)", p->where);
    if (st == DBK_OK) st = parse_index(p, ix, (size_t)ix_bytes, ix_off);
    dbk_free(ix);
    return st;
}

static dbk_pack *new_pack(const char *where) {
    dbk_pack *p = dbk_malloc(sizeof *p);
    if (!p) return NULL;
    memset(p, 0, sizeof *p);
    p->fd = -1;
    snprintf(p->where, sizeof p->where, "%s", where);
    return p;
}

dbk_status dbk_pack_open(const char *path, dbk_pack **out) {
    *out = NULL;
    dbk_pack *p = new_pack(path);
    if (!p) return DBK_ERR_OUT_OF_HOST_MEMORY;
    size_t size = 0;
    dbk_status st = dbk_file_open_regular(path, "dataset pack", SIZE_MAX, &p->fd, &size);
    if (st != DBK_OK) p->fd = -1;
    p->size = size;
    if (st == DBK_OK) st = load(p);
    if (st != DBK_OK) {
        dbk_pack_close(p);
        return st;
    }
    *out = p;
    return DBK_OK;
}

dbk_status dbk_pack_open_memory(const void *data, size_t n, const char *where, dbk_pack **out) {
    *out = NULL;
    dbk_pack *p = new_pack(where);
    if (!p) return DBK_ERR_OUT_OF_HOST_MEMORY;
    p->mem = data;
    p->size = n;
    dbk_status st = load(p);
    if (st != DBK_OK) {
        dbk_pack_close(p);
        return st;
    }
    *out = p;
    return DBK_OK;
}

void dbk_pack_close(dbk_pack *p) {
    if (!p) return;
    if (p->fd >= 0) close(p->fd);
    dbk_free(p->entries);
    dbk_free(p->names);
    dbk_free(p);
}

bool dbk_pack_is_pack(const char *path) {
    int fd;
    size_t size;
    if (dbk_file_open_regular(path, "dataset pack", SIZE_MAX, &fd, &size) != DBK_OK) return false;
    unsigned char magic[8];
    bool yes = size >= sizeof magic && read(fd, magic, sizeof magic) == (ssize_t)sizeof magic &&
               !memcmp(magic, DBK_PACK_MAGIC, sizeof magic);
    close(fd);
    return yes;
}

int dbk_pack_count(const dbk_pack *p) { return p->count; }
const char *dbk_pack_name(const dbk_pack *p, int i) { return p->entries[i].name; }
uint64_t dbk_pack_raw_bytes(const dbk_pack *p, int i) { return p->entries[i].raw; }

/* First entry whose name is >= key. */
static int lower_bound(const dbk_pack *p, const char *key) {
    int lo = 0, hi = p->count;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (strcmp(p->entries[mid].name, key) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

int dbk_pack_find(const dbk_pack *p, const char *name) {
    int i = lower_bound(p, name);
    return i < p->count && !strcmp(p->entries[i].name, name) ? i : -1;
}

void dbk_pack_dir_range(const dbk_pack *p, const char *dir, int *first, int *end) {
    *first = *end = 0;
    if (!dir[0]) {
        *end = p->count;
        return;
    }
    char key[DBK_PACK_MAX_NAME + 2];
    int n = snprintf(key, sizeof key, "%s/", dir);
    if (n < 0 || (size_t)n >= sizeof key) return;
    int i = *first = lower_bound(p, key);
    while (i < p->count && !strncmp(p->entries[i].name, key, (size_t)n)) i++;
    *end = i;
}

bool dbk_pack_has_dir(const dbk_pack *p, const char *dir) {
    int first, end;
    dbk_pack_dir_range(p, dir, &first, &end);
    return first < end;
}

/* A zstd frame (not a skippable one) whose header sets Content_Checksum_flag (RFC 8878,
 * 3.1.1.1.1: bit 2 of the Frame_Header_Descriptor after the 4-byte magic 0xFD2FB528). */
static bool checksummed_frame(const unsigned char *f, size_t n) {
    return n >= 5 && dbk_get_le32(f) == 0xFD2FB528u && (f[4] & 0x04);
}

/* Encoding 2: the bytes straight into buf, then the checksum that follows them. */
static dbk_status read_stored(const dbk_pack *p, const pack_entry *e, void *buf) {
    unsigned char sum[8];
    DBK_TRY(read_at(p, e->offset, buf, (size_t)e->raw));
    DBK_TRY(read_at(p, e->offset + e->raw, sum, sizeof sum));
    if (dbk_fnv1a64(buf, (size_t)e->raw) != dbk_get_le64(sum))
        return dbk_set_error(DBK_ERR_FORMAT, "%s: entry '%s': checksum mismatch (damaged file)", p->where, e->name);
    return DBK_OK;
}

dbk_status dbk_pack_read(const dbk_pack *p, int i, void *buf, size_t cap) {
    DBK_ASSERT(i >= 0 && i < p->count);
    const pack_entry *e = &p->entries[i];
    if (e->raw > cap) return dbk_set_error(DBK_ERR_INVALID_ARG, "%s: entry '%s' has %llu bytes, buffer %zu", p->where,
                                           e->name, (unsigned long long)e->raw, cap);
    if (e->encoding == DBK_PACK_STORED) return read_stored(p, e, buf);
    unsigned char *src = dbk_malloc((size_t)e->stored);
    if (!src) return DBK_ERR_OUT_OF_HOST_MEMORY;
    dbk_status st = read_at(p, e->offset, src, (size_t)e->stored);
    if (st == DBK_OK && (!checksummed_frame(src, (size_t)e->stored) ||
                         ZSTD_getFrameContentSize(src, (size_t)e->stored) != e->raw ||
                         ZSTD_findFrameCompressedSize(src, (size_t)e->stored) != e->stored))
        st = dbk_set_error(DBK_ERR_FORMAT, "%s: entry '%s': not one checksummed zstd frame of %llu bytes", p->where,
                           e->name, (unsigned long long)e->raw);
    if (st == DBK_OK) {
        size_t got = ZSTD_decompress(buf, (size_t)e->raw, src, (size_t)e->stored);
        if (ZSTD_isError(got) || got != e->raw)
            st = dbk_set_error(DBK_ERR_FORMAT, "%s: entry '%s': %s", p->where, e->name,
                               ZSTD_isError(got) ? ZSTD_getErrorName(got) : "decoded size differs");
    }
    if (st == DBK_OK && e->encoding == DBK_PACK_ZSTD_DELTA) {
        unsigned char *b = buf;
        for (uint64_t k = 1; k < e->raw; k++) b[k] = (unsigned char)(b[k] + b[k - 1]);
    }
    dbk_free(src);
    return st;
}
