/* fuzz_kcache.c — libFuzzer target: the compiled-kernel cache header parser (core/kcache.h).
 * The key is taken from the input's own key field, so inputs get past the key check and
 * reach the length, checksum and binary-hash checks. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/kcache.h"
#include "core/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint64_t key = 0;
    for (int i = 7; size >= 24 && i >= 0; i--) key = key << 8 | data[16 + i];
    (void)dbk_kcache_check_head("fuzz", data, size < DBK_KCACHE_HEAD_BYTES ? size : DBK_KCACHE_HEAD_BYTES, size);
    const unsigned char *binary;
    size_t n;
    if (dbk_kcache_check(data, size, key, &binary, &n)) return 0;
    /* An accepted file's binary is its tail, and sealing that binary again with the same key
     * reproduces the file byte for byte (the checks and the writer agree). */
    if (binary != data + DBK_KCACHE_HEADER_BYTES || n != size - DBK_KCACHE_HEADER_BYTES) __builtin_trap();
    unsigned char *copy = malloc(size);
    if (!copy) return 0;
    memcpy(copy + DBK_KCACHE_HEADER_BYTES, binary, n);
    dbk_kcache_seal(copy, key, n);
    if (memcmp(copy, data, size)) __builtin_trap();
    free(copy);
    return 0;
}
