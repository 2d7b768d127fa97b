/*
 * source.c — files from disk or from inside a dataset pack (source.h). The one-shot calls
 * open a source root for the path, use it and close it.
 */
#define _POSIX_C_SOURCE 200809L
#include "data/source.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "data/pack.h"

struct dbk_source_root {
    dbk_pack *pack;              /* NULL: everything is on disk */
    char      pack_path[4096];   /* the pack file's path as given */
    size_t    pack_len;
};

/* When path is a pack or lies inside one: the pack's path into pack. Walks up from path to the
 * first component that exists. */
static bool split(const char *path, char *pack, size_t cap) {
    size_t len = strlen(path);
    if (len >= cap) return false;
    memcpy(pack, path, len + 1);
    for (;;) {
        struct stat st;
        if (stat(pack, &st) == 0) return S_ISREG(st.st_mode) && dbk_pack_is_pack(pack);
        char *slash = strrchr(pack, '/');
        if (!slash || slash == pack) return false;
        *slash = '\0';
    }
}

/* The name inside r's pack that path stands for ("" for the pack itself), or NULL when path
 * is on disk. */
static const char *inner_of(const dbk_source_root *r, const char *path) {
    if (!r->pack || strncmp(path, r->pack_path, r->pack_len)) return NULL;
    const char c = path[r->pack_len];
    return c == '\0' ? path + r->pack_len : c == '/' ? path + r->pack_len + 1 : NULL;
}

dbk_status dbk_source_root_open(const char *path, dbk_source_root **out) {
    *out = NULL;
    dbk_source_root *r = dbk_calloc(1, sizeof *r);
    if (!r) return DBK_ERR_OUT_OF_HOST_MEMORY;
    if (split(path, r->pack_path, sizeof r->pack_path)) {
        dbk_status st = dbk_pack_open(r->pack_path, &r->pack);
        if (st != DBK_OK) {
            dbk_free(r);
            return st;
        }
        r->pack_len = strlen(r->pack_path);
    }
    *out = r;
    return DBK_OK;
}

void dbk_source_root_close(dbk_source_root *r) {
    if (!r) return;
    dbk_pack_close(r->pack);
    dbk_free(r);
}

dbk_source_kind dbk_source_root_stat(const dbk_source_root *r, const char *path, uint64_t *size) {
    *size = 0;
    const char *inner = inner_of(r, path);
    if (!inner) {
        struct stat st;
        if (stat(path, &st) != 0) return DBK_SOURCE_NONE;
        if (S_ISDIR(st.st_mode)) return DBK_SOURCE_DIR;
        if (!S_ISREG(st.st_mode)) return DBK_SOURCE_OTHER;
        *size = (uint64_t)st.st_size;
        return DBK_SOURCE_FILE;
    }
    int i = inner[0] ? dbk_pack_find(r->pack, inner) : -1;
    if (i >= 0) {
        *size = dbk_pack_raw_bytes(r->pack, i);
        return DBK_SOURCE_FILE;
    }
    return dbk_pack_has_dir(r->pack, inner) ? DBK_SOURCE_DIR : DBK_SOURCE_NONE;
}

static dbk_status list_disk(const char *dir, bool want_dirs, dbk_source_list_fn fn, void *ctx) {
    DIR *d = opendir(dir);
    if (!d) {
        int e = errno;
        return dbk_set_error(e == ENOENT ? DBK_ERR_NOT_FOUND : DBK_ERR_IO, "cannot open folder %s: %s", dir,
                             strerror(e));
    }
    dbk_status st = DBK_OK;
    struct dirent *ent;
    char path[4096];
    while (st == DBK_OK && (ent = readdir(d)) != NULL) {
        if (!strcmp(ent->d_name, ".") || !strcmp(ent->d_name, "..")) continue;
        if (!want_dirs) {
            st = fn(ctx, ent->d_name);
            continue;
        }
        struct stat sb;
        int n = snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
        if (n < 0 || (size_t)n >= sizeof path) st = dbk_set_error(DBK_ERR_INVALID_ARG, "path too long: %s/%s", dir, ent->d_name);
        else if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) st = fn(ctx, ent->d_name);
    }
    closedir(d);
    return st;
}

/* The entries of a folder of the pack are one run of sorted names; a sub-folder's entries
 * are a contiguous run inside it, so each sub-folder is met once. */
static dbk_status list_pack(const dbk_source_root *r, const char *dir, const char *inner, bool want_dirs,
                            dbk_source_list_fn fn, void *ctx) {
    int first, end;
    dbk_pack_dir_range(r->pack, inner, &first, &end);
    if (first == end && inner[0])
        return dbk_set_error(DBK_ERR_NOT_FOUND, "cannot open folder %s: the pack %s has no such folder", dir,
                             r->pack_path);
    const size_t skip = inner[0] ? strlen(inner) + 1 : 0;
    char last[DBK_PACK_MAX_NAME + 1] = "";
    dbk_status st = DBK_OK;
    for (int i = first; st == DBK_OK && i < end; i++) {
        const char *rest = dbk_pack_name(r->pack, i) + skip;
        const char *slash = strchr(rest, '/');
        if (!want_dirs) {
            if (!slash) st = fn(ctx, rest);
            continue;
        }
        if (!slash) continue;
        const size_t len = (size_t)(slash - rest);   /* < DBK_PACK_MAX_NAME: names are bounded */
        if (!strncmp(last, rest, len) && last[len] == '\0') continue;
        memcpy(last, rest, len);
        last[len] = '\0';
        st = fn(ctx, last);
    }
    return st;
}

dbk_status dbk_source_root_list(const dbk_source_root *r, const char *dir, bool want_dirs, dbk_source_list_fn fn,
                                void *ctx) {
    const char *inner = inner_of(r, dir);
    return inner ? list_pack(r, dir, inner, want_dirs, fn, ctx) : list_disk(dir, want_dirs, fn, ctx);
}

dbk_status dbk_source_root_read(const dbk_source_root *r, const char *path, const char *what, size_t max_bytes,
                                void **data, size_t *n) {
    *data = NULL;
    *n = 0;
    const char *inner = inner_of(r, path);
    if (!inner) {
        const dbk_file_spec spec = {.what = what, .max_bytes = max_bytes};
        return dbk_file_read_spec(path, &spec, data, n);
    }
    const int i = inner[0] ? dbk_pack_find(r->pack, inner) : -1;
    if (i < 0)
        return dbk_set_error(DBK_ERR_NOT_FOUND, "%s not found: the pack %s has no entry '%s'", path, r->pack_path,
                             inner);
    const uint64_t raw = dbk_pack_raw_bytes(r->pack, i);
    if (raw > max_bytes)
        return dbk_set_error(DBK_ERR_FORMAT, "%s %s: %llu bytes, at most %zu allowed", what, path,
                             (unsigned long long)raw, max_bytes);
    unsigned char *bytes = dbk_malloc((size_t)raw + 1);
    if (!bytes) return DBK_ERR_OUT_OF_HOST_MEMORY;
    dbk_status st = dbk_pack_read(r->pack, i, bytes, (size_t)raw);
    if (st != DBK_OK) {
        dbk_free(bytes);
        return st;
    }
    bytes[raw] = '\0';
    *data = bytes;
    *n = (size_t)raw;
    return DBK_OK;
}

/* ---------------------------------------------------------------------------------- */
/* one-shot calls                                                                     */

dbk_source_kind dbk_source_stat(const char *path, uint64_t *size) {
    *size = 0;
    dbk_source_root *r = NULL;
    if (dbk_source_root_open(path, &r) != DBK_OK) return DBK_SOURCE_OTHER;
    dbk_source_kind kind = dbk_source_root_stat(r, path, size);
    dbk_source_root_close(r);
    return kind;
}

dbk_status dbk_source_check(const char *path) {
    dbk_source_root *r = NULL;
    DBK_TRY(dbk_source_root_open(path, &r));
    dbk_source_root_close(r);
    return DBK_OK;
}

dbk_status dbk_source_read(const char *path, const char *what, size_t max_bytes, void **data, size_t *n) {
    *data = NULL;
    *n = 0;
    dbk_source_root *r = NULL;
    DBK_TRY(dbk_source_root_open(path, &r));
    dbk_status st = dbk_source_root_read(r, path, what, max_bytes, data, n);
    dbk_source_root_close(r);
    return st;
}

dbk_status dbk_source_read_prefix(const char *path, const char *what, size_t max_bytes, void *buf, size_t nbytes) {
    dbk_source_root *r = NULL;
    DBK_TRY(dbk_source_root_open(path, &r));
    dbk_status st = DBK_OK;
    if (!inner_of(r, path)) {
        int fd;
        size_t size;
        st = dbk_file_open_regular(path, what, max_bytes, &fd, &size);
        if (st == DBK_OK) {
            st = dbk_file_read_exact(fd, path, buf, nbytes);
            close(fd);
        }
    } else {
        void *bytes = NULL;
        size_t n = 0;
        st = dbk_source_root_read(r, path, what, max_bytes, &bytes, &n);
        if (st == DBK_OK && n < nbytes)
            st = dbk_set_error(DBK_ERR_FORMAT, "%s %s: %zu bytes, expected at least %zu", what, path, n, nbytes);
        if (st == DBK_OK) memcpy(buf, bytes, nbytes);
        dbk_free(bytes);
    }
    dbk_source_root_close(r);
    return st;
}
