/*
 * dropout.c — inverted dropout (training mode) for the CPU reference backend.
 *
 * Semantics: torch.nn.Dropout(p) in train(), https://pytorch.org/docs/stable/generated/torch.nn.Dropout.html:
 * each element is zeroed with probability p and the others are scaled by 1/(1-p), so the
 * expectation is unchanged and evaluation is the identity (no op in evaluation graphs).
 *
 * The mask is not stored: element i is kept when
 *   (dbk_hash_u32(seed, first, salt, i) >> 8) >= threshold,  threshold = (uint32)(p * 2^24)
 * with seed = state[1] (the epoch's seed) and first = state[0] (the batch's first row), the
 * step's augmentation state: a fresh mask for every batch and layer (salt), recomputed
 * identically by the backward op and by every device backend (24 bits of the hash: an exact
 * integer comparison, p * 2^24 is exact in fp32). Scale 1/(1-p) is formed in fp32.
 */
#include "backends/cpu/cpu_internal.h"
#include "core/rng.h"

/* y = keep ? x * scale : 0 over n elements; both directions of the op. */
static dbk_status dropout_apply(const dbk_op_desc *op) {
    const int64_t n = dbk_tensor_numel(&op->src[0]);
    const float *x = dbk_cpu_f32(&op->src[0]);              /* (any): x or dy */
    const int32_t *state = dbk_cpu_i32(&op->src[1]);        /* (4) {first, seed, epoch, run_seed} */
    float *y = dbk_cpu_f32(&op->dst[0]);                    /* (same): y or dx, may alias */
    const float p = op->p.dropout.p, scale = 1.0f / (1.0f - p);
    const uint32_t threshold = (uint32_t)(p * 16777216.0f), salt = op->p.dropout.salt;
    const uint32_t first = (uint32_t)state[0], seed = (uint32_t)state[1];
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        const bool keep = (dbk_hash_u32(seed, first, salt, (uint32_t)i) >> 8) >= threshold;
        y[i] = keep ? x[i] * scale : 0.0f;
    }
    return DBK_OK;
}

dbk_status dbk_cpu_dropout_fwd(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    return dropout_apply(op);
}

dbk_status dbk_cpu_dropout_bwd(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    return dropout_apply(op);
}
