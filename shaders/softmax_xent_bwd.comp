#version 450
/*
 * softmax_xent_bwd.comp — dlogits = grad_scale * (probs - target) (DBK_OP_SOFTMAX_XENT_BWD),
 * target = (1-eps) onehot + eps/K; rows with a label outside [0,K) get zero. Grid-stride
 * over N*K.
 */
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    uint N, K;
    uint r0, r1, r2;   /* element offsets of bindings 0..2 */
    float eps, scale;
} pc;

layout(binding = 0) readonly buffer BufP { float probs[]; };    /* (N,K) */
layout(binding = 1) readonly buffer BufL { int labels[]; };     /* (N) */
layout(binding = 2) writeonly buffer BufD { float dz[]; };      /* (N,K) */

void main() {
    const uint total = pc.N * pc.K;
    const float off = pc.K > 0 ? pc.eps / float(pc.K) : 0.0;
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint e = gl_GlobalInvocationID.x; e < total; e += stride) {
        const uint i = e / pc.K, k = e % pc.K;
        const int label = labels[pc.r1 + i];
        const bool ok = label >= 0 && uint(label) < pc.K;
        const float target = int(k) == label ? 1.0 - pc.eps + off : off;
        dz[pc.r2 + e] = ok ? pc.scale * (probs[pc.r0 + e] - target) : 0.0;
    }
}
