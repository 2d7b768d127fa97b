/* fuzz_checkpoint.c — libFuzzer target: the checkpoint parser (train/checkpoint.h) on arbitrary bytes. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "train/checkpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    dbk_checkpoint *c = NULL;
    if (dbk_checkpoint_parse(data, size, "fuzz", &c) != DBK_OK) return 0;
    /* An accepted file must be fully readable: touch every string and every value. */
    volatile size_t sink = strlen(dbk_checkpoint_model(c)) + strlen(dbk_checkpoint_meta(c));
    for (int i = 0; i < dbk_checkpoint_count(c); i++) {
        const dbk_ckpt_tensor *t = dbk_checkpoint_tensor(c, i);
        int64_t n = 1;
        for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
        for (int64_t k = 0; k < n; k++) sink += t->data[k] != 0.0f;
        if (dbk_checkpoint_find(c, t->name) != t) __builtin_trap();   /* names are unique */
    }
    (void)sink;
    dbk_checkpoint_destroy(c);
    return 0;
}
