/*
 * fileio.h — whole-file reads, atomic whole-file writes, mkdir -p, a growable string builder,
 * and the FNV-1a-64 checksum used by on-disk formats.
 *
 * Every output file daybreak writes (logs.tsv, result.json, checkpoints, caches) is built in
 * memory and written with dbk_file_write_atomic: a temp file next to the target, fsync, then
 * rename. A reader (a plotting script, a second run, a crash) therefore sees either the old
 * file or the complete new one, never a prefix.
 *
 * Errors follow core/status.h: each function returns a dbk_status and leaves a one-line
 * message naming the path and strerror(errno). Memory comes from core/alloc.h.
 */
#ifndef DBK_FILEIO_H
#define DBK_FILEIO_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

/* Writes n bytes to path atomically: writes "<path>.tmp.<pid>" in the same directory,
 * flushes and fsyncs it, then renames it over path. On any failure the temp file is removed,
 * path is left as it was, and DBK_ERR_IO names the path and the cause. An existing path that
 * is not a regular file (a device such as /dev/zero, a FIFO, a directory) is refused, never
 * replaced. */
dbk_status dbk_file_write_atomic(const char *path, const void *data, size_t n);

/* The same, for a file written piece by piece (a dataset pack): open, write through fd
 * (write or pwrite), then commit, or abort on any error. While open, the temp file is
 * registered, so that dbk_file_remove_temps (called by the command line's signal handler)
 * removes it if the process is stopped by a signal: an interrupted write leaves neither a
 * half-written target nor a temp file. */
typedef struct dbk_atomic_file {
    int   fd;          /* the temp file, open for writing; -1 when closed */
    char *path;        /* the target (owned copy) */
    char *tmp;         /* "<path>.tmp.<pid>[.<k>]" (owned) */
    int   slot;        /* its place in the registry of temp files, -1 when none */
    bool  created;     /* the temp file exists (and is ours to remove) */
} dbk_atomic_file;

/* Creates the temp file beside path (O_EXCL: an existing file or link of that name is never
 * followed); refuses an existing path that is not a regular file, as dbk_file_write_atomic. */
dbk_status dbk_atomic_file_open(dbk_atomic_file *f, const char *path);
/* write() of n bytes at the file's position, retrying short writes; DBK_ERR_IO names the target. */
dbk_status dbk_atomic_file_write(dbk_atomic_file *f, const void *data, size_t n);
/* fsync, close and rename over the target; on failure the temp file is removed (as by abort). */
dbk_status dbk_atomic_file_commit(dbk_atomic_file *f);
/* Closes and removes the temp file; the target is untouched. Safe to call twice. */
void       dbk_atomic_file_abort(dbk_atomic_file *f);

/* Removes every temp file being written (async-signal-safe: unlink only). For a signal handler
 * that is about to end the process. */
void dbk_file_remove_temps(void);

/* What a file of st_mode `mode` is, for messages: "a regular file", "a folder", "a
 * character device", "a block device", "a FIFO", "a socket" or "a special file". */
const char *dbk_file_kind_name(unsigned mode);

/* Reading untrusted files. Every reader of a file daybreak did not just write (checkpoints,
 * profiles, kernel caches, datasets) goes through these, so that a path naming a device
 * (/dev/zero), a FIFO or a huge file fails at once with a one-line error instead of hanging or
 * exhausting memory: non-regular files are refused, the size is checked against the reader's
 * maximum before anything is allocated, and a format's magic/version header is checked before
 * the rest is read. */

/* Largest file dbk_file_read_all reads (text inputs: result.json, kernel sources, metadata). */
#define DBK_FILE_READ_ALL_MAX ((size_t)64 << 20)
/* Largest header a dbk_file_spec may ask to check first. */
#define DBK_FILE_MAX_HEAD 64

typedef struct dbk_file_spec {
    const char *what;         /* the kind of file, for errors: "checkpoint" ("checkpoint file X: ...") */
    size_t      max_bytes;    /* larger files are refused (DBK_ERR_FORMAT) before reading */
    size_t      head_bytes;   /* <= DBK_FILE_MAX_HEAD bytes handed to check_head first */
    /* Optional: validates the first n bytes (n < head_bytes when the file is shorter) of a file
     * of file_size bytes, e.g. magic and version; an error here stops the read. */
    dbk_status (*check_head)(const char *path, const unsigned char *head, size_t n, size_t file_size);
} dbk_file_spec;

/* Opens path for reading after checking that it is a regular file of at most max_bytes.
 * *fd (caller closes) and *size on success; DBK_ERR_NOT_FOUND if it does not exist,
 * DBK_ERR_IO for a directory/device/FIFO/socket ("cannot read checkpoint file /dev/zero: it is a
 * character device, not a regular file"), DBK_ERR_FORMAT
 * when too large. `what` names the kind of file in the messages. */
dbk_status dbk_file_open_regular(const char *path, const char *what, size_t max_bytes, int *fd, size_t *size);

/* Reads exactly n bytes from fd (retrying short reads); DBK_ERR_FORMAT if the file ends
 * first, DBK_ERR_IO on a read error. path is for the messages. */
dbk_status dbk_file_read_exact(int fd, const char *path, void *buf, size_t n);

/* Reads a whole regular file as spec allows into a new buffer (*data, caller frees with
 * dbk_free) of *n bytes plus one NUL byte after the end, so text can be used as a C string.
 * Errors as dbk_file_open_regular and spec->check_head; *data is NULL and *n is 0 on failure. */
dbk_status dbk_file_read_spec(const char *path, const dbk_file_spec *spec, void **data, size_t *n);

/* dbk_file_read_spec with what "input", DBK_FILE_READ_ALL_MAX bytes and no header check. */
dbk_status dbk_file_read_all(const char *path, void **data, size_t *n);

/* Creates a directory and any missing parents (mode 0755), like `mkdir -p`. Succeeds if it
 * already exists; DBK_ERR_IO names the component that could not be created (or that exists
 * and is not a directory). */
dbk_status dbk_mkdir_p(const char *path);

/* FNV-1a, 64-bit (offset basis 0xcbf29ce484222325, prime 0x100000001b3) of n bytes. */
uint64_t dbk_fnv1a64(const void *data, size_t n);
/* Continues an FNV-1a-64 hash h over n more bytes: the hash of a concatenation is
 * dbk_fnv1a64_update(dbk_fnv1a64(a, na), b, nb). */
uint64_t dbk_fnv1a64_update(uint64_t h, const void *data, size_t n);

/* ---------------------------------------------------------------------------------- */
/* dbk_strbuf: a growable NUL-terminated string for text outputs.
 *
 *     dbk_strbuf sb;
 *     dbk_strbuf_init(&sb);
 *     for (...) dbk_strbuf_appendf(&sb, "%d\t%.2f\n", epoch, acc);
 *     dbk_status st = dbk_strbuf_write_file(&sb, path);   // reports any earlier append failure
 *     dbk_strbuf_deinit(&sb);
 *
 * The first failed append is sticky: later appends do nothing and return the same status,
 * so a loop of appends may be checked once at the end (status field or write_file). */
typedef struct dbk_strbuf {
    char      *data;      /* NUL-terminated text; NULL until the first append (owned) */
    size_t     len;       /* bytes before the NUL */
    size_t     cap;       /* bytes allocated */
    dbk_status status;    /* DBK_OK, or the first append failure */
} dbk_strbuf;

void       dbk_strbuf_init(dbk_strbuf *sb);
void       dbk_strbuf_deinit(dbk_strbuf *sb);          /* frees data; sb is re-initialised */
void       dbk_strbuf_clear(dbk_strbuf *sb);           /* len = 0, keeps the allocation and status */
const char *dbk_strbuf_str(const dbk_strbuf *sb);      /* the text, "" before the first append */

/* Appends printf-style text. DBK_ERR_OUT_OF_HOST_MEMORY if it cannot grow (text unchanged). */
dbk_status dbk_strbuf_appendf(dbk_strbuf *sb, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
dbk_status dbk_strbuf_vappendf(dbk_strbuf *sb, const char *fmt, va_list ap)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 0)))
#endif
    ;

/* Writes the text (without the NUL) with dbk_file_write_atomic; returns sb->status instead
 * if an earlier append failed, so nothing partial is written. */
dbk_status dbk_strbuf_write_file(const dbk_strbuf *sb, const char *path);

#endif
