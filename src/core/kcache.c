/* kcache.c — the compiled-kernel cache file format (see kcache.h). */
#include "core/kcache.h"

#include <string.h>

#include "core/bytes.h"
#include "core/fileio.h"

#define MAGIC_BYTES 8
#define OFF_FORMAT   8
#define OFF_RESERVED 12
#define OFF_KEY      16
#define OFF_LENGTH   24
#define OFF_BINHASH  32
#define OFF_CHECKSUM 40

uint64_t dbk_kcache_binary_hash(uint64_t key, const unsigned char *binary, size_t n) {
    unsigned char k[8];
    dbk_put_le64(k, key);
    return dbk_fnv1a64_update(dbk_fnv1a64(k, sizeof k), binary, n);
}

uint64_t dbk_kcache_file_checksum(const unsigned char *file, size_t size) {
    uint64_t h = dbk_fnv1a64(file, OFF_CHECKSUM);
    return dbk_fnv1a64_update(h, file + DBK_KCACHE_HEADER_BYTES, size - DBK_KCACHE_HEADER_BYTES);
}

void dbk_kcache_seal(unsigned char *file, uint64_t key, size_t n) {
    memcpy(file, DBK_KCACHE_MAGIC, MAGIC_BYTES);
    dbk_put_le32(file + OFF_FORMAT, DBK_KCACHE_FORMAT);
    dbk_put_le32(file + OFF_RESERVED, 0);
    dbk_put_le64(file + OFF_KEY, key);
    dbk_put_le64(file + OFF_LENGTH, (uint64_t)n);
    dbk_put_le64(file + OFF_BINHASH, dbk_kcache_binary_hash(key, file + DBK_KCACHE_HEADER_BYTES, n));
    dbk_put_le64(file + OFF_CHECKSUM, dbk_kcache_file_checksum(file, DBK_KCACHE_HEADER_BYTES + n));
}

/* Magic and format only: what can be checked from the first bytes. */
static const char *check_head(const unsigned char *head, size_t n) {
    if (n < MAGIC_BYTES || memcmp(head, DBK_KCACHE_MAGIC, MAGIC_BYTES)) return "not a daybreak kernel cache file";
    if (n < OFF_RESERVED || dbk_get_le32(head + OFF_FORMAT) != DBK_KCACHE_FORMAT) return "another cache format version";
    return NULL;
}

dbk_status dbk_kcache_check_head(const char *path, const unsigned char *head, size_t n, size_t file_size) {
    (void)file_size;
    const char *why = check_head(head, n);
    return why ? dbk_set_error(DBK_ERR_FORMAT, "%s: %s", path, why) : DBK_OK;
}

const char *dbk_kcache_check(const unsigned char *file, size_t size, uint64_t key, const unsigned char **binary,
                             size_t *n) {
    *binary = NULL;
    *n = 0;
    const char *why = check_head(file, size);
    if (why) return why;
    if (size < DBK_KCACHE_HEADER_BYTES) return "truncated header";
    if (dbk_get_le32(file + OFF_RESERVED) != 0) return "reserved field not zero";
    if (dbk_get_le64(file + OFF_KEY) != key) return "key mismatch";
    uint64_t len = dbk_get_le64(file + OFF_LENGTH);
    if (len != size - DBK_KCACHE_HEADER_BYTES) return "truncated or padded";
    if (dbk_get_le64(file + OFF_CHECKSUM) != dbk_kcache_file_checksum(file, size)) return "file checksum mismatch";
    const unsigned char *bin = file + DBK_KCACHE_HEADER_BYTES;
    if (dbk_get_le64(file + OFF_BINHASH) != dbk_kcache_binary_hash(key, bin, (size_t)len)) return "binary hash mismatch";
    if (len == 0) return "empty binary";
    *binary = bin;
    *n = (size_t)len;
    return NULL;
}
