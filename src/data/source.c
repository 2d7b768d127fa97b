/*
 * source.c — files from disk or from inside a dataset pack (source.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "data/source.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "data/pack.h"

/* When path is a pack or lies inside one: the pack's path into pack and the rest ("" for the
 * pack itself) into inner. Walks up from path to the first component that exists. */
static bool split(const char *path, char *pack, size_t cap, const char **inner) {
    size_t len = strlen(path);
    if (len >= cap) return false;
    memcpy(pack, path, len + 1);
    for (;;) {
        struct stat st;
        if (stat(pack, &st) == 0) {
            if (!S_ISREG(st.st_mode) || !dbk_pack_is_pack(pack)) return false;
            *inner = path + strlen(pack) + (path[strlen(pack)] == '/');
            return true;
        }
        char *slash = strrchr(pack, '/');
        if (!slash || slash == pack) return false;
        *slash = '\0';
    }
}

/* Opens the pack holding path and finds the entry; DBK_ERR_NOT_FOUND when it is not there. */
static dbk_status open_entry(const char *pack_path, const char *inner, const char *path, dbk_pack **pack, int *index) {
    DBK_TRY(dbk_pack_open(pack_path, pack));
    *index = dbk_pack_find(*pack, inner);
    if (*index < 0) {
        dbk_pack_close(*pack);
        *pack = NULL;
        return dbk_set_error(DBK_ERR_NOT_FOUND, "%s not found: the pack %s has no entry '%s'", path, pack_path, inner);
    }
    return DBK_OK;
}

dbk_source_kind dbk_source_stat(const char *path, uint64_t *size) {
    *size = 0;
    char pack_path[4096];
    const char *inner = NULL;
    if (!split(path, pack_path, sizeof pack_path, &inner)) {
        struct stat st;
        if (stat(path, &st) != 0) return DBK_SOURCE_NONE;
        if (S_ISDIR(st.st_mode)) return DBK_SOURCE_DIR;
        if (!S_ISREG(st.st_mode)) return DBK_SOURCE_OTHER;
        *size = (uint64_t)st.st_size;
        return DBK_SOURCE_FILE;
    }
    dbk_pack *p = NULL;
    if (dbk_pack_open(pack_path, &p) != DBK_OK) return DBK_SOURCE_OTHER;
    dbk_source_kind kind = DBK_SOURCE_NONE;
    int i = inner[0] ? dbk_pack_find(p, inner) : -1;
    if (i >= 0) {
        kind = DBK_SOURCE_FILE;
        *size = dbk_pack_raw_bytes(p, i);
    } else if (dbk_pack_has_dir(p, inner)) {
        kind = DBK_SOURCE_DIR;
    }
    dbk_pack_close(p);
    return kind;
}

dbk_status dbk_source_check(const char *path) {
    char pack_path[4096];
    const char *inner = NULL;
    if (!split(path, pack_path, sizeof pack_path, &inner)) return DBK_OK;
    dbk_pack *p = NULL;
    DBK_TRY(dbk_pack_open(pack_path, &p));
    dbk_pack_close(p);
    return DBK_OK;
}

/* Entry `index` of p (raw bytes checked against max_bytes) into a new buffer plus a NUL. */
static dbk_status read_entry(dbk_pack *p, int index, const char *path, const char *what, size_t max_bytes,
                             unsigned char **data, size_t *n) {
    uint64_t raw = dbk_pack_raw_bytes(p, index);
    if (raw > max_bytes)
        return dbk_set_error(DBK_ERR_FORMAT, "%s %s: %llu bytes, at most %zu allowed", what, path,
                             (unsigned long long)raw, max_bytes);
    *data = dbk_malloc((size_t)raw + 1);
    if (!*data) return DBK_ERR_OUT_OF_HOST_MEMORY;
    dbk_status st = dbk_pack_read(p, index, *data, (size_t)raw);
    if (st != DBK_OK) {
        dbk_free(*data);
        *data = NULL;
        return st;
    }
    (*data)[raw] = '\0';
    *n = (size_t)raw;
    return DBK_OK;
}

dbk_status dbk_source_read(const char *path, const char *what, size_t max_bytes, void **data, size_t *n) {
    *data = NULL;
    *n = 0;
    char pack_path[4096];
    const char *inner = NULL;
    if (!split(path, pack_path, sizeof pack_path, &inner)) {
        const dbk_file_spec spec = {.what = what, .max_bytes = max_bytes};
        return dbk_file_read_spec(path, &spec, data, n);
    }
    dbk_pack *p = NULL;
    int i;
    DBK_TRY(open_entry(pack_path, inner, path, &p, &i));
    unsigned char *bytes = NULL;
    dbk_status st = read_entry(p, i, path, what, max_bytes, &bytes, n);
    dbk_pack_close(p);
    *data = bytes;
    return st;
}

dbk_status dbk_source_read_prefix(const char *path, const char *what, size_t max_bytes, void *buf, size_t nbytes) {
    char pack_path[4096];
    const char *inner = NULL;
    if (!split(path, pack_path, sizeof pack_path, &inner)) {
        int fd;
        size_t size;
        DBK_TRY(dbk_file_open_regular(path, what, max_bytes, &fd, &size));
        dbk_status st = dbk_file_read_exact(fd, path, buf, nbytes);
        close(fd);
        return st;
    }
    dbk_pack *p = NULL;
    int i;
    DBK_TRY(open_entry(pack_path, inner, path, &p, &i));
    unsigned char *bytes = NULL;
    size_t n = 0;
    dbk_status st = read_entry(p, i, path, what, max_bytes, &bytes, &n);
    dbk_pack_close(p);
    if (st == DBK_OK && n < nbytes)
        st = dbk_set_error(DBK_ERR_FORMAT, "%s %s: %zu bytes, expected at least %zu", what, path, n, nbytes);
    if (st == DBK_OK) memcpy(buf, bytes, nbytes);
    dbk_free(bytes);
    return st;
}
