/*
 * source.h — where dataset readers get their files' bytes: a folder on disk, or a dataset
 * pack (data/pack.h) standing in for one.
 *
 * A path names a file or folder on disk as usual, or something inside a pack:
 * "/data/cifar10.dbkpack" is the pack's root folder, "/data/cifar10.dbkpack/cifar-10-batches-bin"
 * a folder in it and ".../cifar-10-batches-bin/test_batch.bin" an entry. Packs are recognised
 * by their magic, never by name. Readers (cifar10.c) use these calls instead of stat/open, so
 * one reader serves both. Each call opens the pack and reads its index (a few hundred bytes
 * for CIFAR-10); a reader of many small files (image folders and their decode threads) opens
 * a source root once instead (dbk_source_root below): the pack's index is then read once and
 * every file is one binary search and one pread.
 */
#ifndef DBK_SOURCE_H
#define DBK_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

typedef enum dbk_source_kind {
    DBK_SOURCE_NONE,    /* does not exist */
    DBK_SOURCE_DIR,     /* a folder, a pack file, or a folder inside a pack */
    DBK_SOURCE_FILE,    /* a regular file, or an entry of a pack */
    DBK_SOURCE_OTHER,   /* a device, FIFO, socket: never read */
} dbk_source_kind;

/* What path is; *size is a file's size (of an entry: its uncompressed size), else 0. A pack
 * that cannot be opened reads as DBK_SOURCE_OTHER. */
dbk_source_kind dbk_source_stat(const char *path, uint64_t *size);

/* When path is a pack or lies inside one, opens the pack and returns its error (a damaged or
 * truncated pack, named); DBK_OK otherwise. For a data root, before its contents are probed. */
dbk_status dbk_source_check(const char *path);

/* Reads a whole file of at most max_bytes into a new buffer (caller frees with dbk_free) of
 * *n bytes plus a NUL. Errors as dbk_file_read_spec (core/fileio.h); `what` names the kind
 * of file. A pack entry is checksum-verified. */
dbk_status dbk_source_read(const char *path, const char *what, size_t max_bytes, void **data, size_t *n);

/* Reads the first nbytes of a file of at most max_bytes into buf. */
dbk_status dbk_source_read_prefix(const char *path, const char *what, size_t max_bytes, void *buf, size_t nbytes);

/* ---------------------------------------------------------------------------------- */
/* a source opened once                                                               */

/* The files under one path, on disk or in the pack holding that path; opened once, read by
 * many threads. Paths given to its calls are full paths, as for the calls above (paths outside
 * the pack, or of a root on disk, are read from disk). */
typedef struct dbk_source_root dbk_source_root;

/* Opens the source holding path (a folder on disk, a pack, or a folder in a pack; for a pack
 * its index is read and checked: errors as dbk_pack_open). The caller closes it. */
dbk_status      dbk_source_root_open(const char *path, dbk_source_root **out);
void            dbk_source_root_close(dbk_source_root *r);                     /* accepts NULL */

/* As dbk_source_stat, within the opened source. */
dbk_source_kind dbk_source_root_stat(const dbk_source_root *r, const char *path, uint64_t *size);

/* Calls fn(ctx, name) for each entry of folder dir (names without the folder, in no set
 * order, never "." or ".."): its folders when want_dirs, else its other names (on disk those
 * are not stat'ed: a class folder of ImageNet holds 1,300 files, each opened as a regular file
 * when read). Stops at and returns fn's first error; DBK_ERR_NOT_FOUND naming dir when it is
 * not a folder. */
typedef dbk_status (*dbk_source_list_fn)(void *ctx, const char *name);
dbk_status dbk_source_root_list(const dbk_source_root *r, const char *dir, bool want_dirs, dbk_source_list_fn fn,
                                void *ctx);

/* As dbk_source_read, within the opened source; thread-safe. */
dbk_status dbk_source_root_read(const dbk_source_root *r, const char *path, const char *what, size_t max_bytes,
                                void **data, size_t *n);

#endif
