#version 450
/*
 * maxpool_fwd.comp — max pool with argmax (DBK_OP_MAXPOOL_FWD), window R x S, stride sh x sw,
 * no padding; global pooling is R = H, S = W. One invocation per output element, taps in
 * row-major window order with a strict '>' so ties go to the first, and the first NaN wins
 * (as the CPU reference). argmax = h*W + w inside the (n, c) plane. Grid-stride.
 */
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    uint planes, H, W, P, Q, R, S, sh, sw;   /* planes = N*C */
    uint r0, r1, r2;                          /* element offsets of bindings 0..2 */
} pc;

layout(binding = 0) readonly buffer BufX { float x[]; };     /* (N,C,H,W) */
layout(binding = 1) writeonly buffer BufY { float y[]; };    /* (N,C,P,Q) */
layout(binding = 2) writeonly buffer BufA { int arg[]; };    /* (N,C,P,Q) */

void main() {
    const uint total = pc.planes * pc.P * pc.Q;
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < total; i += stride) {
        const uint pl = i / (pc.P * pc.Q), pq = i % (pc.P * pc.Q);
        const uint p = pq / pc.Q, q = pq % pc.Q;
        const uint plane = pc.r0 + pl * pc.H * pc.W;
        uint best_at = (p * pc.sh) * pc.W + q * pc.sw;
        float best = x[plane + best_at];
        for (uint r = 0; r < pc.R; r++) {
            for (uint s = 0; s < pc.S; s++) {
                const uint at = (p * pc.sh + r) * pc.W + q * pc.sw + s;
                const float v = x[plane + at];
                if (v > best || (isnan(v) && !isnan(best))) {
                    best = v;
                    best_at = at;
                }
            }
        }
        y[pc.r1 + i] = best;
        arg[pc.r2 + i] = int(best_at);
    }
}
