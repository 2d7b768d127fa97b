#version 450
/*
 * eltwise.comp — the elementwise ops of DBK_OP_RELU_FWD/BWD, ADD, SCALE and FILL, chosen by
 * `mode` (vk_ops_eltwise.c):
 *   0 relu_fwd  y = a < 0 ? 0 : a   (NaN stays NaN, as the CPU reference)
 *   1 relu_bwd  y = a > 0 ? b : 0   (a = forward output, b = dy)
 *   2 add       y = a + b
 *   3 scale     y = alpha * a
 *   4 fill      y = alpha
 * y may alias a or b (in place): each invocation reads its element before writing it.
 * Grid-stride over n elements.
 */
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    uint n, mode;
    uint ra, rb, ry;   /* element offsets of bindings 0..2 */
    float alpha;
} pc;

layout(binding = 0) readonly buffer BufA { float a[]; };   /* (n) */
layout(binding = 1) readonly buffer BufB { float b[]; };   /* (n) */
layout(binding = 2) writeonly buffer BufY { float y[]; };  /* (n) */

void main() {
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += stride) {
        float v;
        if (pc.mode == 0) {
            const float x = a[pc.ra + i];
            v = x < 0.0 ? 0.0 : x;
        } else if (pc.mode == 1) {
            const float g = b[pc.rb + i];
            v = a[pc.ra + i] > 0.0 ? g : 0.0;
        } else if (pc.mode == 2) {
            v = a[pc.ra + i] + b[pc.rb + i];
        } else if (pc.mode == 3) {
            v = pc.alpha * a[pc.ra + i];
        } else {
            v = pc.alpha;
        }
        y[pc.ry + i] = v;
    }
}
