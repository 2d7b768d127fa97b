#version 450
/*
 * maxpool_fwd.comp — max pool with argmax (DBK_OP_MAXPOOL_FWD), window R x S, stride sh x sw,
 * padding ph x pw (-inf: taps outside x are skipped, the maximum starts at -inf on the first
 * tap inside); global pooling is R = H, S = W. One invocation per output element, taps in
 * row-major window order with a strict '>' so ties go to the first, and the first NaN wins
 * (as the CPU reference). argmax = h*W + w inside the (n, c) plane. Grid-stride.
 */
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    uint planes, H, W, P, Q, R, S, sh, sw, ph, pw;   /* planes = N*C */
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
        const int h0 = int(p * pc.sh) - int(pc.ph), w0 = int(q * pc.sw) - int(pc.pw);
        const int r_lo = max(0, -h0), r_hi = min(int(pc.R), int(pc.H) - h0);
        const int s_lo = max(0, -w0), s_hi = min(int(pc.S), int(pc.W) - w0);
        uint best_at = uint((h0 + r_lo) * int(pc.W) + w0 + s_lo);
        float best = uintBitsToFloat(0xff800000u); /* -inf */
        for (int r = r_lo; r < r_hi; r++) {
            for (int s = s_lo; s < s_hi; s++) {
                const uint at = uint((h0 + r) * int(pc.W) + w0 + s);
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
