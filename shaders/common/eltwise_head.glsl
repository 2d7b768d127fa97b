/*
 * eltwise_head.glsl — what every elementwise shader (an op declared launch EW in
 * src/backend/op_list.h, shaders/<op>.comp) shares with the generic host launcher
 * (vk_ops_eltwise.c dbk_vk_record_eltwise):
 *  - bindings: the op's src slots, then its dst slots, at 0, 1, ... (declared by the shader);
 *  - push constants: n elements in this dispatch, the element offset of each binding inside
 *    its window (r[binding]), and the op's params struct as floats (p[0] is its first field);
 *  - work-group size as specialization constant 0, grid-stride over n (EW_FOR_EACH).
 * Outputs may alias inputs (in place) as long as each invocation reads its element before
 * writing it.
 */
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    uint  n;
    uint  r[8];    /* element offsets of bindings 0..7 */
    float p[8];    /* the params struct's floats */
} pc;

#define EW_FOR_EACH(i) \
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x)
