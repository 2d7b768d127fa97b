/*
 * fileio.c — whole-file I/O, mkdir -p, FNV-1a and the string builder (see fileio.h).
 *
 * POSIX file descriptors rather than stdio for writes: the atomic write needs fsync on the
 * descriptor anyway, and write() reports short writes and ENOSPC where they happen instead
 * of at fclose.
 */
#define _POSIX_C_SOURCE 200809L
#include "core/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "core/alloc.h"

const char *dbk_file_kind_name(unsigned mode) {
    if (S_ISREG(mode)) return "a regular file";
    if (S_ISDIR(mode)) return "a folder";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISSOCK(mode)) return "a socket";
    return "a special file";
}

/* ---------------------------------------------------------------------------------- */
/* writes                                                                             */

/* write() until done, retrying on EINTR and short writes. Returns 0 or an errno value. */
static int write_fully(int fd, const unsigned char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* fsync of the directory holding path, so the rename itself survives a power cut. Best
 * effort: some file systems refuse fsync on directories, and the data is already safe. */
static void sync_parent_dir(const char *path) {
    const char *slash = strrchr(path, '/');
    char dir[4096];
    if (!slash) {
        snprintf(dir, sizeof dir, ".");
    } else if (slash == path) {
        snprintf(dir, sizeof dir, "/");
    } else {
        size_t len = (size_t)(slash - path);
        if (len >= sizeof dir) return;
        memcpy(dir, path, len);
        dir[len] = '\0';
    }
    int fd = open(dir, O_RDONLY);
    if (fd < 0) return;
    (void)fsync(fd);
    close(fd);
}

/* The temp files being written, for dbk_file_remove_temps. A signal handler cannot take a
 * lock or walk a heap list, so this is a fixed table of path copies with an atomic state per
 * slot (free, being filled, registered); it is process-wide by necessity (a handler has no
 * context argument), the one such table of the program. More files written at once than it
 * has slots are still written, only not removed on a signal. */
#define TEMP_SLOTS 8
#define TEMP_PATH_BYTES 4224
enum { SLOT_FREE, SLOT_FILLING, SLOT_REGISTERED };
static _Atomic int temp_state[TEMP_SLOTS];
static char temp_path[TEMP_SLOTS][TEMP_PATH_BYTES];

static int temp_register(const char *tmp) {
    if (strlen(tmp) >= TEMP_PATH_BYTES) return -1;
    for (int i = 0; i < TEMP_SLOTS; i++) {
        int expected = SLOT_FREE;
        if (!atomic_compare_exchange_strong(&temp_state[i], &expected, SLOT_FILLING)) continue;
        memcpy(temp_path[i], tmp, strlen(tmp) + 1);
        atomic_store(&temp_state[i], SLOT_REGISTERED);
        return i;
    }
    return -1;
}

static void temp_unregister(int slot) {
    if (slot >= 0) atomic_store(&temp_state[slot], SLOT_FREE);
}

void dbk_file_remove_temps(void) {
    for (int i = 0; i < TEMP_SLOTS; i++)
        if (atomic_load(&temp_state[i]) == SLOT_REGISTERED) unlink(temp_path[i]);
}

dbk_status dbk_atomic_file_open(dbk_atomic_file *f, const char *path) {
    f->fd = -1;
    f->path = f->tmp = NULL;
    f->slot = -1;
    f->created = false;
    if (!path || !*path) return dbk_set_error(DBK_ERR_INVALID_ARG, "cannot write a file of no name (an empty path)");
    /* rename() would replace a device node or FIFO given as an output path. */
    struct stat target;
    if (stat(path, &target) == 0 && !S_ISREG(target.st_mode))
        return dbk_set_error(DBK_ERR_IO, "cannot write %s: it is %s, not a regular file", path,
                             dbk_file_kind_name(target.st_mode));
    const size_t len = strlen(path);
    f->path = dbk_malloc(len + 1);
    f->tmp = dbk_malloc(len + 48);
    if (!f->path || !f->tmp) {
        dbk_atomic_file_abort(f);
        return DBK_ERR_OUT_OF_HOST_MEMORY;
    }
    memcpy(f->path, path, len + 1);
    /* O_EXCL|O_NOFOLLOW: a leftover or planted file (or link) of the temp name is never
     * written through; the next name is tried instead. */
    int e = 0;
    for (int k = 0; k < 16 && f->fd < 0; k++) {
        if (k == 0) snprintf(f->tmp, len + 48, "%s.tmp.%ld", path, (long)getpid());
        else snprintf(f->tmp, len + 48, "%s.tmp.%ld.%d", path, (long)getpid(), k);
        f->fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        e = errno;
        if (f->fd < 0 && e != EEXIST) break;
    }
    if (f->fd < 0) {
        /* Nothing was created, so there is nothing to remove; name the target, which is what
         * the user asked for (ENOENT here means its folder does not exist). */
        dbk_status st = dbk_set_error(DBK_ERR_IO, "cannot write %s: %s (creating %s)", path, strerror(e), f->tmp);
        dbk_atomic_file_abort(f);
        return st;
    }
    f->created = true;
    f->slot = temp_register(f->tmp);
    return DBK_OK;
}

dbk_status dbk_atomic_file_write(dbk_atomic_file *f, const void *data, size_t n) {
    int err = write_fully(f->fd, data, n);
    if (err) return dbk_set_error(DBK_ERR_IO, "cannot write %s: %s", f->path, strerror(err));
    return DBK_OK;
}

dbk_status dbk_atomic_file_commit(dbk_atomic_file *f) {
    int err = 0;
    const char *step = "fsync";
    if (fsync(f->fd) != 0) err = errno;
    if (close(f->fd) != 0 && !err) {
        err = errno;
        step = "close";
    }
    f->fd = -1;
    if (!err && rename(f->tmp, f->path) != 0) {
        err = errno;
        step = "rename";
    }
    if (err) {
        dbk_status st = dbk_set_error(DBK_ERR_IO, "cannot write %s: %s failed: %s", f->path, step, strerror(err));
        dbk_atomic_file_abort(f);
        return st;
    }
    temp_unregister(f->slot);
    f->slot = -1;
    f->created = false;
    sync_parent_dir(f->path);
    dbk_free(f->path);
    dbk_free(f->tmp);
    f->path = f->tmp = NULL;
    return DBK_OK;
}

void dbk_atomic_file_abort(dbk_atomic_file *f) {
    if (f->fd >= 0) close(f->fd);
    if (f->created) unlink(f->tmp);
    f->fd = -1;
    f->created = false;
    temp_unregister(f->slot);
    f->slot = -1;
    dbk_free(f->path);
    dbk_free(f->tmp);
    f->path = f->tmp = NULL;
}

dbk_status dbk_file_write_atomic(const char *path, const void *data, size_t n) {
    dbk_atomic_file f;
    DBK_TRY(dbk_atomic_file_open(&f, path));
    dbk_status st = dbk_atomic_file_write(&f, data, n);
    if (st != DBK_OK) {
        dbk_atomic_file_abort(&f);
        return st;
    }
    return dbk_atomic_file_commit(&f);
}

/* ---------------------------------------------------------------------------------- */
/* reads                                                                              */

dbk_status dbk_file_open_regular(const char *path, const char *what, size_t max_bytes, int *fd, size_t *size) {
    *fd = -1;
    *size = 0;
    /* O_NONBLOCK so that opening a FIFO cannot wait for a writer; fstat then refuses it. */
    int f = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (f < 0) {
        int e = errno;
        return dbk_set_error(e == ENOENT ? DBK_ERR_NOT_FOUND : DBK_ERR_IO, "cannot open %s: %s", path, strerror(e));
    }
    struct stat st;
    if (fstat(f, &st) != 0) {
        int e = errno;
        close(f);
        return dbk_set_error(DBK_ERR_IO, "cannot stat %s: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(f);
        return dbk_set_error(DBK_ERR_IO, "cannot read %s file %s: it is %s, not a regular file", what, path,
                             dbk_file_kind_name(st.st_mode));
    }
    if (st.st_size < 0 || (unsigned long long)st.st_size > max_bytes) {
        close(f);
        return dbk_set_error(DBK_ERR_FORMAT, "%s file %s: %lld bytes, over the limit of %zu", what, path,
                             (long long)st.st_size, max_bytes);
    }
    int flags = fcntl(f, F_GETFL);
    if (flags >= 0) (void)fcntl(f, F_SETFL, flags & ~O_NONBLOCK);
    *fd = f;
    *size = (size_t)st.st_size;
    return DBK_OK;
}

dbk_status dbk_file_read_exact(int fd, const char *path, void *buf, size_t n) {
    unsigned char *p = buf;
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, p + got, n - got);
        if (r < 0) {
            if (errno == EINTR) continue;
            return dbk_set_error(DBK_ERR_IO, "cannot read %s: %s", path, strerror(errno));
        }
        if (r == 0)
            return dbk_set_error(DBK_ERR_FORMAT, "%s: ended after %zu bytes while reading %zu; truncated while "
                                 "being read?", path, got, n);
        got += (size_t)r;
    }
    return DBK_OK;
}

dbk_status dbk_file_read_spec(const char *path, const dbk_file_spec *spec, void **data, size_t *n) {
    *data = NULL;
    *n = 0;
    int fd;
    size_t size;
    DBK_TRY(dbk_file_open_regular(path, spec->what, spec->max_bytes, &fd, &size));
    unsigned char head[DBK_FILE_MAX_HEAD];
    size_t head_n = spec->check_head ? (spec->head_bytes < size ? spec->head_bytes : size) : 0;
    DBK_ASSERT(head_n <= sizeof head);
    dbk_status st = dbk_file_read_exact(fd, path, head, head_n);
    if (st == DBK_OK && spec->check_head) st = spec->check_head(path, head, head_n, size);
    unsigned char *buf = NULL;
    if (st == DBK_OK) {
        buf = dbk_malloc(size + 1);
        if (!buf) st = DBK_ERR_OUT_OF_HOST_MEMORY;
    }
    if (st == DBK_OK) {
        memcpy(buf, head, head_n);
        st = dbk_file_read_exact(fd, path, buf + head_n, size - head_n);
    }
    close(fd);
    if (st != DBK_OK) {
        dbk_free(buf);
        return st;
    }
    buf[size] = '\0';
    *data = buf;
    *n = size;
    return DBK_OK;
}

dbk_status dbk_file_read_all(const char *path, void **data, size_t *n) {
    const dbk_file_spec spec = {.what = "input", .max_bytes = DBK_FILE_READ_ALL_MAX};
    return dbk_file_read_spec(path, &spec, data, n);
}

/* ---------------------------------------------------------------------------------- */
/* directories                                                                        */

/* mkdir of one prefix; an existing directory is success, an existing file is not. */
static dbk_status mkdir_one(const char *dir) {
    if (mkdir(dir, 0755) == 0) return DBK_OK;
    int e = errno;
    struct stat st;
    if (e == EEXIST) {
        if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) return DBK_OK;
        return dbk_set_error(DBK_ERR_IO, "cannot create directory %s: a file of that name exists", dir);
    }
    return dbk_set_error(DBK_ERR_IO, "cannot create directory %s: %s", dir, strerror(e));
}

dbk_status dbk_mkdir_p(const char *path) {
    if (!path || !*path) return dbk_set_error(DBK_ERR_INVALID_ARG, "cannot create a folder of no name (an empty path)");
    size_t len = strlen(path);
    char *buf = dbk_malloc(len + 1);
    if (!buf) return DBK_ERR_OUT_OF_HOST_MEMORY;
    memcpy(buf, path, len + 1);
    dbk_status st = DBK_OK;
    /* Create each prefix ending before a '/', skipping the root and repeated slashes. */
    for (size_t i = 1; i < len && st == DBK_OK; i++) {
        if (buf[i] != '/' || buf[i - 1] == '/') continue;
        buf[i] = '\0';
        st = mkdir_one(buf);
        buf[i] = '/';
    }
    if (st == DBK_OK) st = mkdir_one(buf);
    dbk_free(buf);
    return st;
}

/* ---------------------------------------------------------------------------------- */
/* checksum                                                                           */

uint64_t dbk_fnv1a64(const void *data, size_t n) { return dbk_fnv1a64_update(0xcbf29ce484222325ULL, data, n); }

uint64_t dbk_fnv1a64_update(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* ---------------------------------------------------------------------------------- */
/* string builder                                                                     */

void dbk_strbuf_init(dbk_strbuf *sb) {
    sb->data = NULL;
    sb->len = 0;
    sb->cap = 0;
    sb->status = DBK_OK;
}

void dbk_strbuf_deinit(dbk_strbuf *sb) {
    dbk_free(sb->data);
    dbk_strbuf_init(sb);
}

void dbk_strbuf_clear(dbk_strbuf *sb) {
    sb->len = 0;
    if (sb->data) sb->data[0] = '\0';
}

const char *dbk_strbuf_str(const dbk_strbuf *sb) { return sb->data ? sb->data : ""; }

dbk_status dbk_strbuf_vappendf(dbk_strbuf *sb, const char *fmt, va_list ap) {
    if (sb->status != DBK_OK) return sb->status;
    va_list ap2;
    va_copy(ap2, ap);
    size_t room = sb->cap > sb->len ? sb->cap - sb->len : 0;
    int need = vsnprintf(room ? sb->data + sb->len : NULL, room, fmt, ap);
    if (need < 0) {
        va_end(ap2);
        sb->status = dbk_set_error(DBK_ERR_INVALID_ARG, "cannot format text with \"%s\" (an internal error)", fmt);
        if (sb->data) sb->data[sb->len] = '\0';
        return sb->status;
    }
    if ((size_t)need >= room) {
        /* Did not fit (the partial text past len is ignored): grow geometrically, redo. */
        size_t cap = sb->cap ? sb->cap : 256;
        while (cap < sb->len + (size_t)need + 1) cap *= 2;
        char *bigger = dbk_malloc(cap);
        if (!bigger) {
            va_end(ap2);
            sb->status = DBK_ERR_OUT_OF_HOST_MEMORY;
            if (sb->data) sb->data[sb->len] = '\0';
            return sb->status;
        }
        if (sb->data) memcpy(bigger, sb->data, sb->len);
        dbk_free(sb->data);
        sb->data = bigger;
        sb->cap = cap;
        vsnprintf(sb->data + sb->len, sb->cap - sb->len, fmt, ap2);
    }
    va_end(ap2);
    sb->len += (size_t)need;
    return DBK_OK;
}

dbk_status dbk_strbuf_appendf(dbk_strbuf *sb, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    dbk_status st = dbk_strbuf_vappendf(sb, fmt, ap);
    va_end(ap);
    return st;
}

dbk_status dbk_strbuf_write_file(const dbk_strbuf *sb, const char *path) {
    if (sb->status != DBK_OK) return sb->status;
    return dbk_file_write_atomic(path, dbk_strbuf_str(sb), sb->len);
}
