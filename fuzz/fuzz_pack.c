/* fuzz_pack.c — libFuzzer target: the dataset pack reader (data/pack.h) on arbitrary bytes:
 * header, index, lookups, and decompression of every entry it accepts. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "data/pack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    dbk_pack *p = NULL;
    if (dbk_pack_open_memory(data, size, "fuzz", &p) != DBK_OK) return 0;
    for (int i = 0; i < dbk_pack_count(p); i++) {
        const char *name = dbk_pack_name(p, i);
        if (dbk_pack_find(p, name) != i) __builtin_trap();   /* every accepted name is found again */
        dbk_pack_has_dir(p, name);
        uint64_t raw = dbk_pack_raw_bytes(p, i);
        if (raw > ((uint64_t)1 << 24)) continue;              /* the fuzzer's memory limit */
        void *buf = malloc((size_t)raw + 1);
        if (buf) dbk_pack_read(p, i, buf, (size_t)raw);
        free(buf);
    }
    dbk_pack_close(p);
    return 0;
}
