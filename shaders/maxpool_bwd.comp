#version 450
/*
 * maxpool_bwd.comp — max pool backward (DBK_OP_MAXPOOL_BWD): dx is zero except at window
 * winners, which receive the sum of their windows' dy. One invocation per input element
 * gathers from the windows that contain it, in row-major output order — the order in which
 * the CPU reference adds, so overlapping windows sum bit-identically and nothing needs
 * atomics. Grid-stride over N*C*H*W.
 */
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    uint planes, H, W, P, Q, R, S, sh, sw, ph, pw;
    uint r0, r1, r2;   /* element offsets of bindings 0..2 */
} pc;

layout(binding = 0) readonly buffer BufDY { float dy[]; };   /* (N,C,P,Q) */
layout(binding = 1) readonly buffer BufA { int arg[]; };     /* (N,C,P,Q) */
layout(binding = 2) writeonly buffer BufDX { float dx[]; };  /* (N,C,H,W) */

void main() {
    const uint hw = pc.H * pc.W, pq = pc.P * pc.Q;
    const uint total = pc.planes * hw;
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < total; i += stride) {
        const uint pl = i / hw, at = i % hw;
        /* h, w in padded coordinates: windows p with p*sh <= h < p*sh + R */
        const int h = int(at / pc.W) + int(pc.ph), w = int(at % pc.W) + int(pc.pw);
        const int p_lo = max(0, (h - int(pc.R) + int(pc.sh)) / int(pc.sh));
        const int p_hi = min(int(pc.P) - 1, h / int(pc.sh));
        const int q_lo = max(0, (w - int(pc.S) + int(pc.sw)) / int(pc.sw));
        const int q_hi = min(int(pc.Q) - 1, w / int(pc.sw));
        float acc = 0.0;
        for (int p = p_lo; p <= p_hi; p++)
            for (int q = q_lo; q <= q_hi; q++) {
                const uint o = pl * pq + uint(p) * pc.Q + uint(q);
                if (arg[pc.r1 + o] == int(at)) acc += dy[pc.r0 + o];
            }
        dx[pc.r2 + i] = acc;
    }
}
