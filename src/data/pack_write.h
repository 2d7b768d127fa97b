/*
 * pack_write.h — writing a dataset pack (format in data/pack.h) from a folder on disk.
 */
#ifndef DBK_PACK_WRITE_H
#define DBK_PACK_WRITE_H

#include <stdint.h>

#include "core/status.h"

#define DBK_PACK_DEFAULT_LEVEL 3    /* zstd level: docs/gpu.md has the size/time figures */

typedef struct dbk_pack_write_stats {
    int      entries;
    int      stored_entries;  /* of them, stored as they are (zstd did not shrink them) */
    uint64_t raw_bytes;       /* the files' bytes */
    uint64_t pack_bytes;      /* the pack file's size */
} dbk_pack_write_stats;

/* Packs every regular file under dir (recursively, in name order) as entries named
 * prefix + "/" + path relative to dir, compressed with zstd at `level` (1..19; all CPU
 * cores) or stored as it is (images by their name, other files that zstd does not shrink),
 * into out_path through dbk_atomic_file (core/fileio.h): a temp file beside it, fsynced, then
 * renamed, so out_path is either complete or untouched and no temp file is left behind, even
 * when a signal stops the process. Symbolic links to regular files are followed; any other
 * kind of file (device, FIFO, socket, a link to one) is refused, as is a file larger than
 * DBK_PACK_MAX_ENTRY_BYTES. Errors name the file: DBK_ERR_NOT_FOUND, DBK_ERR_IO,
 * DBK_ERR_FORMAT, DBK_ERR_OUT_OF_HOST_MEMORY. */
dbk_status dbk_pack_write_dir(const char *dir, const char *prefix, const char *out_path, int level,
                              dbk_pack_write_stats *stats);

#endif
