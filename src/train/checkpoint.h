/*
 * checkpoint.h — the daybreak checkpoint file: named f32 tensors (trained weights and
 * batch-norm running statistics) plus the model name and free-form JSON metadata.
 *
 * File format, version 1. All integers and floats are little-endian, whatever the host;
 * there is no padding or alignment anywhere.
 *
 *   offset  bytes      field
 *   0       8          magic "DBKCKPT1" (ASCII, no NUL)
 *   8       4          u32 version = 1
 *   12      4          u32 T, the number of tensors
 *   16      4          u32 Lm, the model-name length
 *   20      Lm         model name, UTF-8, no NUL (e.g. "resnet9")
 *   ..      4          u32 Lj, the metadata length
 *   ..      Lj         metadata, a JSON object as UTF-8 text, no NUL (may be empty, Lj = 0)
 *   then T tensor records, each:
 *           4          u32 Ln, the name length (>= 1)
 *           Ln         tensor name, no NUL, unique in the file (e.g. "layer1.conv.w")
 *           4          u32 ndim, 1..4
 *           8*ndim     i64 shape[ndim], each >= 0, outermost first (row-major data)
 *           8          u64 E, the element count = product of shape
 *           4*E        f32 data, IEEE-754 binary32
 *   end     8          u64 FNV-1a-64 checksum of every byte before it (offset basis
 *                      0xcbf29ce484222325, prime 0x100000001b3; core/fileio.h dbk_fnv1a64)
 *
 * The file ends right after the checksum; trailing bytes are a format error. A reader in
 * another language needs only struct.unpack('<...') and this table.
 *
 * Ownership: dbk_checkpoint_save only reads its arguments. dbk_checkpoint_load returns an
 * object that owns copies of all strings and data; every pointer obtained from it is valid
 * until dbk_checkpoint_destroy.
 */
#ifndef DBK_CHECKPOINT_H
#define DBK_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

#define DBK_CHECKPOINT_MAGIC   "DBKCKPT1"
#define DBK_CHECKPOINT_VERSION 1u
/* Largest checkpoint file dbk_checkpoint_load reads (resnet9's is about 26 MB). */
#define DBK_CHECKPOINT_MAX_BYTES ((size_t)1 << 30)

typedef struct dbk_ckpt_tensor {
    const char *name;
    int         ndim;         /* 1..4 */
    int64_t     shape[4];     /* shape[0..ndim) used */
    const float *data;        /* (product of shape) values, row-major */
} dbk_ckpt_tensor;

typedef struct dbk_checkpoint dbk_checkpoint;   /* opaque, owns loaded data */

/* Writes count tensors with the model name and metadata JSON (either may be NULL, stored as
 * "") to path through dbk_file_write_atomic, so a failed save leaves any previous file
 * intact and no temp file behind. DBK_ERR_INVALID_ARG for a bad tensor (no name, duplicate
 * name, ndim outside 1..4, negative dim, NULL data); DBK_ERR_IO names the path. */
dbk_status dbk_checkpoint_save(const char *path, const char *model, const char *meta_json,
                               const dbk_ckpt_tensor *t, int count);

/* Reads and validates a checkpoint before allocating from its counts: the path must be a
 * regular file of at most DBK_CHECKPOINT_MAX_BYTES; magic and version are checked before the
 * rest is read; then dbk_checkpoint_parse. DBK_ERR_FORMAT names the path and the problem ("not
 * a daybreak checkpoint", "truncated", "checksum mismatch"); DBK_ERR_NOT_FOUND / DBK_ERR_IO for
 * the file (a device or FIFO is refused). *out is NULL on failure. */
dbk_status dbk_checkpoint_load(const char *path, dbk_checkpoint **out);

/* Validates and copies a checkpoint held in memory (n bytes; magic, version, every length
 * against n, the shape/count agreement, the checksum). `where` names the source in errors. */
dbk_status dbk_checkpoint_parse(const void *data, size_t n, const char *where, dbk_checkpoint **out);

const char            *dbk_checkpoint_model(const dbk_checkpoint *c);   /* "" if none */
const char            *dbk_checkpoint_meta(const dbk_checkpoint *c);    /* "" if none */
int                    dbk_checkpoint_count(const dbk_checkpoint *c);
const dbk_ckpt_tensor *dbk_checkpoint_tensor(const dbk_checkpoint *c, int i);   /* 0 <= i < count */
/* The tensor with this name, or NULL. */
const dbk_ckpt_tensor *dbk_checkpoint_find(const dbk_checkpoint *c, const char *name);
void                   dbk_checkpoint_destroy(dbk_checkpoint *c);       /* accepts NULL */

#endif
