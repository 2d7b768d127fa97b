/*
 * pack_write.c — writing dataset packs (pack_write.h; the format is in pack.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "data/pack_write.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "core/alloc.h"
#include "core/bytes.h"
#include "core/fileio.h"
#include "data/image.h"
#include "data/pack.h"

typedef struct name_list {
    char **names;   /* relative paths under the packed folder */
    int    count, cap;
} name_list;

static void names_free(name_list *l) {
    for (int i = 0; i < l->count; i++) dbk_free(l->names[i]);
    dbk_free(l->names);
}

static dbk_status names_add(name_list *l, const char *name) {
    if (l->count == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        char **grown = dbk_malloc((size_t)cap * sizeof *grown);
        if (!grown) return DBK_ERR_OUT_OF_HOST_MEMORY;
        if (l->count) memcpy(grown, l->names, (size_t)l->count * sizeof *grown);
        dbk_free(l->names);
        l->names = grown;
        l->cap = cap;
    }
    size_t len = strlen(name);
    if (!(l->names[l->count] = dbk_malloc(len + 1))) return DBK_ERR_OUT_OF_HOST_MEMORY;
    memcpy(l->names[l->count++], name, len + 1);
    return DBK_OK;
}

/* Every regular file under root/rel into l (rel "" for root itself). */
static dbk_status collect(const char *root, const char *rel, name_list *l, int depth) {
    char path[4096];
    snprintf(path, sizeof path, "%s%s%s", root, rel[0] ? "/" : "", rel);
    if (depth > 32) return dbk_set_error(DBK_ERR_FORMAT, "%s: folders nested more than 32 deep", path);
    DIR *d = opendir(path);
    if (!d) return dbk_set_error(errno == ENOENT ? DBK_ERR_NOT_FOUND : DBK_ERR_IO, "cannot open folder %s: %s", path,
                                 strerror(errno));
    dbk_status st = DBK_OK;
    struct dirent *e;
    while (st == DBK_OK && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char child[4096], full[4096];
        int n = snprintf(child, sizeof child, "%s%s%s", rel, rel[0] ? "/" : "", e->d_name);
        int m = snprintf(full, sizeof full, "%s/%s", root, child);
        if (n < 0 || (size_t)n > DBK_PACK_MAX_NAME || m < 0 || (size_t)m >= sizeof full) {
            st = dbk_set_error(DBK_ERR_INVALID_ARG, "path too long to pack: %s/%s", path, e->d_name);
            break;
        }
        struct stat sb;
        if (stat(full, &sb) != 0) st = dbk_set_error(DBK_ERR_IO, "cannot stat %s: %s", full, strerror(errno));
        else if (S_ISDIR(sb.st_mode)) st = collect(root, child, l, depth + 1);
        else if (S_ISREG(sb.st_mode)) st = names_add(l, child);
        else st = dbk_set_error(DBK_ERR_IO, "%s is not a regular file or folder; refusing to pack it", full);
    }
    closedir(d);
    return st;
}

static int compare_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The index, built in memory while the entries are written. */
typedef struct byte_buf {
    unsigned char *data;
    size_t         len, cap;
} byte_buf;

static dbk_status buf_append(byte_buf *b, const void *data, size_t n) {
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n) cap *= 2;
        unsigned char *grown = dbk_malloc(cap);
        if (!grown) return DBK_ERR_OUT_OF_HOST_MEMORY;
        if (b->len) memcpy(grown, b->data, b->len);
        dbk_free(b->data);
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, n);
    b->len += n;
    return DBK_OK;
}

static dbk_status write_all(int fd, const char *path, const void *data, size_t n) {
    const unsigned char *p = data;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return dbk_set_error(DBK_ERR_IO, "cannot write %s: %s", path, strerror(errno));
        p += w;
        n -= (size_t)w;
    }
    return DBK_OK;
}

/* Byte delta in place (pack.h, filter 1). */
static void delta_encode(unsigned char *b, size_t n) {
    for (size_t k = n; k-- > 1;) b[k] = (unsigned char)(b[k] - b[k - 1]);
}

/* The encoding that suits the file. Images (by name, as image folders find them) are stored:
 * JPEG and PNG are compressed already (zstd saves 0.5% on Imagenette), and a decode thread's
 * random read then costs no decompression. Other files are judged by zstd level 3 on their
 * first 1 MiB with and without the byte delta: the delta when it compresses better (raw pixels
 * gain about 15%), stored when neither saves 1/32 of the sample, else plain zstd. */
static dbk_pack_encoding choose_encoding(const char *name, const unsigned char *raw, size_t n) {
    if (dbk_image_is_image_name(name)) return DBK_PACK_STORED;
    size_t m = n < ((size_t)1 << 20) ? n : ((size_t)1 << 20);
    if (m < 64) return DBK_PACK_ZSTD;
    size_t cap = ZSTD_compressBound(m);
    unsigned char *sample = dbk_malloc(m), *out = dbk_malloc(cap);
    dbk_pack_encoding e = DBK_PACK_ZSTD;
    if (sample && out) {
        memcpy(sample, raw, m);
        size_t plain = ZSTD_compress(out, cap, sample, m, 3);
        delta_encode(sample, m);
        size_t delta = ZSTD_compress(out, cap, sample, m, 3);
        if (!ZSTD_isError(plain) && !ZSTD_isError(delta)) {
            size_t best = delta < plain ? delta : plain;
            e = best > m - m / 32 ? DBK_PACK_STORED : delta < plain ? DBK_PACK_ZSTD_DELTA : DBK_PACK_ZSTD;
        }
    }
    dbk_free(sample);
    dbk_free(out);
    return e;
}

/* The entry's block as pack.h lays it out: a zstd frame, or the bytes and their checksum.
 * *block is raw itself (stored, with the checksum in sum) or a new buffer the caller frees. */
static dbk_status encode(ZSTD_CCtx *cctx, const char *full, dbk_pack_encoding encoding, unsigned char *raw, size_t n,
                         void **block, size_t *block_bytes, unsigned char sum[8]) {
    if (encoding == DBK_PACK_STORED) {
        dbk_put_le64(sum, dbk_fnv1a64(raw, n));
        *block = raw;
        *block_bytes = n;
        return DBK_OK;
    }
    if (encoding == DBK_PACK_ZSTD_DELTA) delta_encode(raw, n);
    size_t cap = ZSTD_compressBound(n);
    if (!(*block = dbk_malloc(cap))) return DBK_ERR_OUT_OF_HOST_MEMORY;
    *block_bytes = ZSTD_compress2(cctx, *block, cap, raw, n);
    if (ZSTD_isError(*block_bytes)) return dbk_set_error(DBK_ERR_IO, "zstd: %s: %s", full, ZSTD_getErrorName(*block_bytes));
    return DBK_OK;
}

/* Encodes one file into fd at *offset; appends its index entry to ix. */
static dbk_status pack_one(ZSTD_CCtx *cctx, const char *full, const char *name, int fd, const char *tmp,
                           uint64_t *offset, byte_buf *ix, dbk_pack_write_stats *stats) {
    const dbk_file_spec spec = {.what = "file to pack", .max_bytes = (size_t)DBK_PACK_MAX_ENTRY_BYTES};
    void *raw = NULL, *block = NULL;
    size_t n = 0, block_bytes = 0;
    DBK_TRY(dbk_file_read_spec(full, &spec, &raw, &n));
    const dbk_pack_encoding encoding = choose_encoding(name, raw, n);
    unsigned char sum[8];
    dbk_status st = encode(cctx, full, encoding, raw, n, &block, &block_bytes, sum);
    if (st == DBK_OK) st = write_all(fd, tmp, block, block_bytes);
    if (st == DBK_OK && encoding == DBK_PACK_STORED) {
        st = write_all(fd, tmp, sum, sizeof sum);
        block_bytes += sizeof sum;
    }
    if (st == DBK_OK) {
        size_t len = strlen(name);
        unsigned char len_bytes[2] = {(unsigned char)len, (unsigned char)(len >> 8)}, ranges[24];
        dbk_put_le64(ranges, *offset);
        dbk_put_le64(ranges + 8, block_bytes);
        dbk_put_le64(ranges + 16, n);
        const unsigned char encoding_byte = (unsigned char)encoding;
        st = buf_append(ix, len_bytes, 2);
        if (st == DBK_OK) st = buf_append(ix, name, len);
        if (st == DBK_OK) st = buf_append(ix, &encoding_byte, 1);
        if (st == DBK_OK) st = buf_append(ix, ranges, sizeof ranges);
        *offset += block_bytes;
        stats->entries++;
        stats->stored_entries += encoding == DBK_PACK_STORED;
        stats->raw_bytes += n;
    }
    if (block != raw) dbk_free(block);
    dbk_free(raw);
    return st;
}

dbk_status dbk_pack_write_dir(const char *dir, const char *prefix, const char *out_path, int level,
                              dbk_pack_write_stats *stats) {
    memset(stats, 0, sizeof *stats);
    if (level < 1 || level > 19) return dbk_set_error(DBK_ERR_INVALID_ARG, "zstd level %d: use 1..19", level);
    name_list l = {0};
    dbk_status st = collect(dir, "", &l, 0);
    if (st == DBK_OK && l.count == 0) st = dbk_set_error(DBK_ERR_NOT_FOUND, "%s holds no files to pack", dir);
    if (st == DBK_OK && (uint32_t)l.count > DBK_PACK_MAX_ENTRIES)
        st = dbk_set_error(DBK_ERR_FORMAT, "%s holds %d files, a pack holds at most %u", dir, l.count,
                           DBK_PACK_MAX_ENTRIES);
    if (st != DBK_OK) {
        names_free(&l);
        return st;
    }
    qsort(l.names, (size_t)l.count, sizeof l.names[0], compare_names);

    dbk_atomic_file f;
    st = dbk_atomic_file_open(&f, out_path);
    if (st != DBK_OK) {
        names_free(&l);
        return st;
    }
    const int fd = f.fd;
    const char *tmp = f.tmp;
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    byte_buf ix = {0};
    if (!cctx) st = DBK_ERR_OUT_OF_HOST_MEMORY;
    if (st == DBK_OK) {
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1);
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_nbWorkers, cores > 1 ? (int)cores : 0);   /* ignored without MT */
    }
    unsigned char header[DBK_PACK_HEADER_BYTES] = {0};
    uint64_t offset = DBK_PACK_HEADER_BYTES;
    if (st == DBK_OK) st = write_all(fd, tmp, header, sizeof header);
    for (int i = 0; st == DBK_OK && i < l.count; i++) {
        char full[4200], name[DBK_PACK_MAX_NAME + 2];
        snprintf(full, sizeof full, "%s/%s", dir, l.names[i]);
        int n = snprintf(name, sizeof name, "%s%s%s", prefix, prefix[0] ? "/" : "", l.names[i]);
        if (n < 0 || (size_t)n > DBK_PACK_MAX_NAME) st = dbk_set_error(DBK_ERR_INVALID_ARG, "name too long: %s", full);
        else st = pack_one(cctx, full, name, fd, tmp, &offset, &ix, stats);
    }
    if (st == DBK_OK && ix.len > DBK_PACK_MAX_INDEX_BYTES)
        st = dbk_set_error(DBK_ERR_FORMAT, "index of %zu bytes exceeds the format's limit", ix.len);
    if (st == DBK_OK) st = write_all(fd, tmp, ix.data, ix.len);
    if (st == DBK_OK) {
        memcpy(header, DBK_PACK_MAGIC, 8);
        dbk_put_le32(header + 8, DBK_PACK_VERSION);
        dbk_put_le32(header + 12, (uint32_t)l.count);
        dbk_put_le64(header + 16, offset);
        dbk_put_le64(header + 24, ix.len);
        dbk_put_le64(header + 32, dbk_fnv1a64(ix.data, ix.len));
        if (pwrite(fd, header, sizeof header, 0) != (ssize_t)sizeof header)
            st = dbk_set_error(DBK_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
    }
    /* The temp file is removed on any failure, and by the command line's signal handler if the
     * process is stopped meanwhile (dbk_atomic_file). */
    if (st == DBK_OK) st = dbk_atomic_file_commit(&f);
    else dbk_atomic_file_abort(&f);
    if (st == DBK_OK) stats->pack_bytes = offset + ix.len;
    ZSTD_freeCCtx(cctx);
    dbk_free(ix.data);
    names_free(&l);
    return st;
}
