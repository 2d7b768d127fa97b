/*
 * dropout.glsl — DBK_OP_DROPOUT_FWD (dropout_fwd.comp) and DBK_OP_DROPOUT_BWD
 * (dropout_bwd.comp: the same mask on dy), launch EW, as src/backends/cpu/dropout.c: element
 * e of the tensor is kept when
 *   (dbk_hash_u32(seed, first, salt, e) >> 8) >= threshold,  threshold = uint(p * 2^24),
 * and scaled by 1/(1-p); dropped elements are 0. y may alias x. e = pc.first + i: the host
 * splits tensors larger than one binding into dispatches, and the mask is the whole tensor's.
 */
#include "common/eltwise_head.glsl"
#include "common/hash.glsl"

layout(binding = 0) readonly buffer BufX { float x[]; };      /* (n): x or dy */
layout(binding = 1) readonly buffer BufS { int state[]; };    /* (4) {first, seed, epoch, run_seed} */
layout(binding = 2) writeonly buffer BufY { float y[]; };     /* (n): y or dx */

/* p[]: p, salt (uint) */
void main() {
    const uint first = uint(state[pc.r[1]]), seed = uint(state[pc.r[1] + 1]);
    const float p = pc.p[0];
    const uint salt = EW_UINT(1);
    const uint threshold = uint(p * 16777216.0);
    const float scale = 1.0 / (1.0 - p);
    EW_FOR_EACH(i) {
        const bool keep = (dbk_hash_u32(seed, first, salt, pc.first + i) >> 8) >= threshold;
        y[pc.r[2] + i] = keep ? x[pc.r[0] + i] * scale : 0.0;
    }
}
