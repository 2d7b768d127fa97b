#version 450
/*
 * lookahead.comp — DBK_OP_LOOKAHEAD (launch EW), airbench94's lookahead (EMA) sync over flat
 * buffers:
 *   w = 1 - decay;  ema = torch.lerp(ema, params, w)  in ATen's two-branch form
 *   (|w| < 0.5 ? ema + w (params - ema) : params - (params - ema)(1 - w));  params = ema
 * decay is read from device memory (the host rewrites it before each update).
 */
#include "common/eltwise_head.glsl"

layout(binding = 0) readonly buffer BufD { float decay[]; };   /* (1) */
layout(binding = 1) buffer BufE { float ema[]; };              /* (n) in place */
layout(binding = 2) buffer BufP { float param[]; };            /* (n) in place */

void main() {
    const float w = 1.0 - decay[pc.r[0]];
    const bool small = abs(w) < 0.5;
    EW_FOR_EACH(i) {
        const float e = ema[pc.r[1] + i], p = param[pc.r[2] + i];
        const float v = small ? e + w * (p - e) : p - (p - e) * (1.0 - w);
        ema[pc.r[1] + i] = v;
        param[pc.r[2] + i] = v;
    }
}
