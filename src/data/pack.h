/*
 * pack.h — the dataset pack: a dataset folder in one compressed, checksummed file
 * (`daybreak pack-data`; docs/gpu.md "Dataset packs"), which --data accepts like a folder.
 *
 * File layout, version 2 (integers little-endian; version 1 is the same without encoding 2,
 * and is still read):
 *   offset  bytes
 *   0       8     magic "DBKPACK\0"
 *   8       4     u32 version (2)
 *   12      4     u32 entry count N (at most DBK_PACK_MAX_ENTRIES)
 *   16      8     u64 index offset (>= 40)
 *   24      8     u64 index bytes (at most DBK_PACK_MAX_INDEX_BYTES; the index ends the file)
 *   32      8     u64 FNV-1a-64 of the index bytes
 *   40      ...   entry data, one block per entry, each verified whenever the entry is read:
 *                 encodings 0 and 1: one zstd frame with its content size and zstd's content
 *                 checksum (XXH64); encoding 2: the file's bytes as they are, then the u64
 *                 FNV-1a-64 of them (so a random read of one JPEG is checked on its own)
 *   index   N entries, sorted by name (bytewise), no duplicates:
 *             u16 name bytes L (1..DBK_PACK_MAX_NAME), L name bytes,
 *             u8 encoding: 0 zstd; 1 zstd after a byte delta (stored byte i is
 *               raw[i] - raw[i-1] mod 256, raw[-1] = 0: pixel rows compress about 15% better);
 *               2 stored (files zstd does not shrink, such as JPEG: no decompression cost),
 *             u64 data offset, u64 stored bytes (encoding 2: raw + 8), u64 raw bytes (at most
 *             DBK_PACK_MAX_ENTRY_BYTES)
 * Names are relative paths with '/' separators, no empty, "." or ".." components and no
 * NUL: a pack holds a folder tree, such as the data root of DAYBREAK_DATA
 * ("cifar-10-batches-bin/data_batch_1.bin", ...; an image folder packs as
 * "imagenette2-224-mini/train/n01440764/x.JPEG", ...). Sorted names make a folder's entries
 * one contiguous run, found by binary search.
 *
 * Reading is hostile-input safe: magic and version first, every size bounded before
 * anything is allocated, the index checksum verified before it is parsed, every entry's
 * range inside the data area, an entry's zstd frame must declare exactly its raw size, and a
 * stored entry must be exactly its raw size plus its checksum. Entries are read with pread:
 * dbk_pack_read may be called from many threads at once (the image decode threads).
 *
 * Paths into a pack: a dataset path such as "/data/cifar10.dbkpack/cifar-10-batches-bin"
 * names a folder inside the pack file /data/cifar10.dbkpack (data/source.h).
 *
 * Ownership: dbk_pack_open returns a pack the caller closes with dbk_pack_close.
 */
#ifndef DBK_PACK_H
#define DBK_PACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

#define DBK_PACK_MAGIC            "DBKPACK"          /* 8 bytes with its NUL */
#define DBK_PACK_VERSION          2u
#define DBK_PACK_HEADER_BYTES     40
/* ILSVRC2012 in the ImageNet layout is 1,331,167 files and an index of about 100 MB; the
 * limits leave room for it three times over (the index is read whole, so its bound is a
 * bound on memory: at most the file's own size anyway). */
#define DBK_PACK_MAX_ENTRIES      4000000u
#define DBK_PACK_MAX_NAME         1023u
#define DBK_PACK_MAX_INDEX_BYTES  ((uint64_t)512 << 20)
#define DBK_PACK_MAX_ENTRY_BYTES  ((uint64_t)1 << 31)   /* 2 GiB; a CIFAR-10 batch is 30.7 MB */

/* How an entry's bytes are stored (the index's encoding byte). */
typedef enum dbk_pack_encoding {
    DBK_PACK_ZSTD = 0,
    DBK_PACK_ZSTD_DELTA = 1,
    DBK_PACK_STORED = 2,      /* version 2 */
} dbk_pack_encoding;

typedef struct dbk_pack dbk_pack;

/* True when path is a regular file that starts with the pack magic. */
bool dbk_pack_is_pack(const char *path);

/* Opens a pack file: checks header and index (errors name the file: DBK_ERR_NOT_FOUND,
 * DBK_ERR_IO for a non-regular file, DBK_ERR_FORMAT for anything malformed). */
dbk_status dbk_pack_open(const char *path, dbk_pack **out);
/* The same on bytes in memory (fuzz/, tests); data must outlive the pack. */
dbk_status dbk_pack_open_memory(const void *data, size_t n, const char *where, dbk_pack **out);
void       dbk_pack_close(dbk_pack *p);                                 /* accepts NULL */

int         dbk_pack_count(const dbk_pack *p);
const char *dbk_pack_name(const dbk_pack *p, int i);                   /* NUL-terminated */
uint64_t    dbk_pack_raw_bytes(const dbk_pack *p, int i);
/* Index of the entry with this name, or -1. */
int         dbk_pack_find(const dbk_pack *p, const char *name);
/* True when some entry's name starts with dir + "/" (dir "" is the root: any entry). */
bool        dbk_pack_has_dir(const dbk_pack *p, const char *dir);
/* The entries inside folder dir ("" the root): indices [*first, *end), one contiguous run
 * because names are sorted. */
void        dbk_pack_dir_range(const dbk_pack *p, const char *dir, int *first, int *end);

/* Reads entry i into buf (cap >= its raw bytes), decompressing it if need be, and verifies
 * its checksum. DBK_ERR_FORMAT names the pack and the entry on any mismatch. Thread-safe. */
dbk_status dbk_pack_read(const dbk_pack *p, int i, void *buf, size_t cap);

#endif
