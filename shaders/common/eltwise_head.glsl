/*
 * eltwise_head.glsl — what every elementwise shader (an op declared launch EW in
 * src/backend/op_list.h, shaders/<op>.comp) shares with the generic host launcher
 * (vk_ops_eltwise.c dbk_vk_record_eltwise):
 *  - bindings: the op's src slots, then its dst slots, at 0, 1, ... (declared by the shader);
 *  - push constants: n elements in this dispatch, the element offset of each binding inside
 *    its window (r[binding]; DBK_EW_ABSENT for an absent optional slot: EW_PRESENT), the op's
 *    params struct's 32-bit words (p[0] is its first field; an int32_t/uint32_t field is read
 *    with EW_INT/EW_UINT) followed by the element counts of its "#" slots (EW_INT), and the
 *    dispatch's first element of the whole tensor (the host splits tensors larger than one
 *    binding into dispatches: an op whose result depends on the element's index adds it);
 *  - work-group size as specialization constant 0, grid-stride over n (EW_FOR_EACH).
 * Outputs may alias inputs (in place) as long as each invocation reads its element before
 * writing it.
 */
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    uint  n;
    uint  r[8];    /* element offsets of bindings 0..7 */
    float p[8];    /* the params struct's words, then the "#" slots' counts */
    uint  first;   /* the dispatch's first element */
} pc;

#define EW_PRESENT(b) (pc.r[b] != 0xffffffffu)
#define EW_INT(k)     floatBitsToInt(pc.p[k])
#define EW_UINT(k)    floatBitsToUint(pc.p[k])

#define EW_FOR_EACH(i) \
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += gl_NumWorkGroups.x * gl_WorkGroupSize.x)
