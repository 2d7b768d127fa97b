#version 450
/*
 * lookahead.comp — DBK_OP_LOOKAHEAD, airbench94's lookahead (EMA) sync over flat buffers:
 *   w = 1 - decay;  ema = torch.lerp(ema, params, w)  in ATen's two-branch form
 *   (|w| < 0.5 ? ema + w (params - ema) : params - (params - ema)(1 - w));  params = ema
 * decay is read from device memory (the host rewrites it before each update). Grid-stride
 * over n.
 */
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    uint n;
    uint rd, re, rp;   /* element offsets of bindings 0..2 */
} pc;

layout(binding = 0) readonly buffer BufD { float decay[]; };   /* (1) */
layout(binding = 1) buffer BufE { float ema[]; };              /* (n) in place */
layout(binding = 2) buffer BufP { float param[]; };            /* (n) in place */

void main() {
    const float w = 1.0 - decay[pc.rd];
    const bool small = abs(w) < 0.5;
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += stride) {
        const float e = ema[pc.re + i], p = param[pc.rp + i];
        const float v = small ? e + w * (p - e) : p - (p - e) * (1.0 - w);
        ema[pc.re + i] = v;
        param[pc.rp + i] = v;
    }
}
