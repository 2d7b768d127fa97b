/* kcache.c — the compiled-kernel cache file format (see kcache.h). */
#include "core/kcache.h"

#include <string.h>

#include "core/fileio.h"

#define MAGIC_BYTES 8
#define OFF_FORMAT   8
#define OFF_RESERVED 12
#define OFF_KEY      16
#define OFF_LENGTH   24
#define OFF_BINHASH  32
#define OFF_CHECKSUM 40

static void put_u32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put_u64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get_u32(const unsigned char *p) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}
static uint64_t get_u64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

uint64_t dbk_kcache_binary_hash(uint64_t key, const unsigned char *binary, size_t n) {
    unsigned char k[8];
    put_u64(k, key);
    return dbk_fnv1a64_update(dbk_fnv1a64(k, sizeof k), binary, n);
}

uint64_t dbk_kcache_file_checksum(const unsigned char *file, size_t size) {
    uint64_t h = dbk_fnv1a64(file, OFF_CHECKSUM);
    return dbk_fnv1a64_update(h, file + DBK_KCACHE_HEADER_BYTES, size - DBK_KCACHE_HEADER_BYTES);
}

void dbk_kcache_seal(unsigned char *file, uint64_t key, size_t n) {
    memcpy(file, DBK_KCACHE_MAGIC, MAGIC_BYTES);
    put_u32(file + OFF_FORMAT, DBK_KCACHE_FORMAT);
    put_u32(file + OFF_RESERVED, 0);
    put_u64(file + OFF_KEY, key);
    put_u64(file + OFF_LENGTH, (uint64_t)n);
    put_u64(file + OFF_BINHASH, dbk_kcache_binary_hash(key, file + DBK_KCACHE_HEADER_BYTES, n));
    put_u64(file + OFF_CHECKSUM, dbk_kcache_file_checksum(file, DBK_KCACHE_HEADER_BYTES + n));
}

/* Magic and format only: what can be checked from the first bytes. */
static const char *check_head(const unsigned char *head, size_t n) {
    if (n < MAGIC_BYTES || memcmp(head, DBK_KCACHE_MAGIC, MAGIC_BYTES)) return "not a daybreak kernel cache file";
    if (n < OFF_RESERVED || get_u32(head + OFF_FORMAT) != DBK_KCACHE_FORMAT) return "another cache format version";
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
    if (get_u32(file + OFF_RESERVED) != 0) return "reserved field not zero";
    if (get_u64(file + OFF_KEY) != key) return "key mismatch";
    uint64_t len = get_u64(file + OFF_LENGTH);
    if (len != size - DBK_KCACHE_HEADER_BYTES) return "truncated or padded";
    if (get_u64(file + OFF_CHECKSUM) != dbk_kcache_file_checksum(file, size)) return "file checksum mismatch";
    const unsigned char *bin = file + DBK_KCACHE_HEADER_BYTES;
    if (get_u64(file + OFF_BINHASH) != dbk_kcache_binary_hash(key, bin, (size_t)len)) return "binary hash mismatch";
    if (len == 0) return "empty binary";
    *binary = bin;
    *n = (size_t)len;
    return NULL;
}
