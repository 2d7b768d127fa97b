/*
 * epoch_order.h — the order in which an epoch visits the training set, as the resident
 * dataset's index list (DBK_OP_AUGMENT's indices).
 *
 * One pass (the usual case): a random permutation of the N images; global step s takes rows
 * s*B .. s*B + B - 1 of it (B the global batch, every rank's rows together).
 * P passes (recipe passes_per_epoch, e.g. the compressed-gradient study's two workers, each of
 * which shuffles and reads the whole set every epoch): P independent permutations, and every
 * step's B rows are P blocks of b = B/P rows side by side, block p from permutation p:
 *   order[s*B + p*b + i] = perm_p[s*b + i],   i < b,  s < floor(N / b).
 * So each image appears P times per epoch (once per pass), a step holds b rows of each pass,
 * and in a distributed run with P ranks of b rows each, rank p reads exactly pass p.
 */
#ifndef DBK_EPOCH_ORDER_H
#define DBK_EPOCH_ORDER_H

#include <stdint.h>

#include "core/status.h"

/* Steps of an epoch: floor(count * passes / global_batch) (full batches only, drop_last). */
int dbk_epoch_steps(int32_t count, int passes, int global_batch);

/* Writes the order of epoch `epoch` (as dbk_session_begin_epoch numbers it) of a run seeded by
 * seed: count * passes indices into out (the tail beyond steps * global_batch filled with the
 * passes' leftovers, never read). scratch holds count int32. DBK_ERR_INVALID_ARG when global_batch is not a
 * multiple of passes. Permutation p is a Fisher-Yates shuffle from a generator seeded by
 * (seed, epoch, p); with one pass it is the session's historical permutation. */
dbk_status dbk_epoch_order(int32_t count, int passes, int global_batch, uint64_t seed, int epoch, int32_t *scratch,
                           int32_t *out);

#endif
