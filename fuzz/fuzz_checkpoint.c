/* fuzz_checkpoint.c — libFuzzer target: the checkpoint parser (train/checkpoint.h) and the
 * small-checkpoint difference parser (train/ckpt_diff.h) on arbitrary bytes. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "train/checkpoint.h"
#include "train/ckpt_diff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An accepted difference: indices strictly increasing below P, every value and statistic
 * readable, the strings terminated. */
static void check_diff(const uint8_t *data, size_t size) {
    dbk_ckpt_diff d;
    if (dbk_ckpt_diff_parse(data, size, "fuzz", &d) != DBK_OK) return;
    volatile size_t sink = strlen(d.model) + strlen(d.meta);
    if (d.changed > d.param_count) __builtin_trap();
    for (uint64_t j = 0; j < d.changed; j++) {
        if (d.indices[j] >= d.param_count || (j && d.indices[j] <= d.indices[j - 1])) __builtin_trap();
        sink += d.values[j] != 0.0f;
    }
    for (uint64_t j = 0; j < d.stat_count; j++) sink += d.stats[j] != 0.0f;
    if (dbk_ckpt_diff_bytes(&d) != size) __builtin_trap();   /* the format's size, exactly */
    (void)sink;
    dbk_ckpt_diff_deinit(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    check_diff(data, size);
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
