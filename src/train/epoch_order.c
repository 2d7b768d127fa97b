/*
 * epoch_order.c — an epoch's visiting order over the training set (see epoch_order.h).
 */
#include "train/epoch_order.h"

#include <string.h>

#include "core/rng.h"

int dbk_epoch_steps(int32_t count, int passes, int global_batch) {
    if (passes < 1) passes = 1;
    return global_batch > 0 ? (int)((int64_t)count * passes / global_batch) : 0;
}

/* Pass 0 keeps the seeding the session always used, so one-pass runs draw the same orders. */
static void permutation(uint64_t seed, int epoch, int pass, int32_t *out, int32_t count) {
    dbk_rng rng;
    dbk_rng_init(&rng, seed ^ ((uint64_t)(epoch + 1) * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)pass * 0xd1b54a32d192ed03ULL));
    dbk_rng_permutation(&rng, out, count);
}

dbk_status dbk_epoch_order(int32_t count, int passes, int global_batch, uint64_t seed, int epoch, int32_t *scratch,
                           int32_t *out) {
    if (passes <= 1) {
        permutation(seed, epoch, 0, out, count);
        return DBK_OK;
    }
    if (global_batch % passes != 0)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "a batch of %d rows does not split into %d passes of equal rows",
                             global_batch, passes);
    const int b = global_batch / passes;
    const int steps = dbk_epoch_steps(count, passes, global_batch);
    for (int p = 0; p < passes; p++) {
        permutation(seed, epoch, p, scratch, count);
        for (int s = 0; s < steps; s++)
            memcpy(out + (size_t)s * global_batch + (size_t)p * b, scratch + (size_t)s * b, (size_t)b * sizeof *out);
        /* rows past the last full step: the pass's leftovers, in order (never read) */
        const int64_t used = (int64_t)steps * global_batch, left = (int64_t)count - (int64_t)steps * b;
        memcpy(out + used + (size_t)p * left, scratch + (size_t)steps * b, (size_t)left * sizeof *out);
    }
    return DBK_OK;
}
