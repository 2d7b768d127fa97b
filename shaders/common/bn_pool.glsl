/*
 * bn_pool.glsl — the 2x2 max pool fused into batch norm + ReLU (DBK_OP_BATCHNORM_RELU_POOL_*):
 * max(bn(x), 0) recomputed from x and a window's winner found as maxpool_fwd.comp does (the
 * first maximum in row-major order, the first NaN over numbers). The pre-activation is
 * `precise`, as bn_apply.comp computes it, so every shader gets the forward's bits.
 * Define BN_POOL_X(e), x's element e as float, before including.
 */

/* max((x[e] - mu) * scale + shift, 0), NaN kept (relu_fwd) */
float bn_pool_relu(uint e, float mu, float scale, float shift) {
    precise const float v = (BN_POOL_X(e) - mu) * scale + shift;
    return v < 0.0 ? 0.0 : v;
}

/* The winner of the 2x2 window whose first element is first (rows w wide); its value in best. */
uint bn_pool_winner(uint first, uint w, float mu, float scale, float shift, out float best) {
    uint win = first;
    best = uintBitsToFloat(0xff800000u); /* -inf */
    for (uint r = 0u; r < 2u; r++) {
        for (uint s = 0u; s < 2u; s++) {
            const uint t = first + r * w + s;
            const float v = bn_pool_relu(t, mu, scale, shift);
            if (v > best || (isnan(v) && !isnan(best))) {
                best = v;
                win = t;
            }
        }
    }
    return win;
}
