#version 450
/*
 * div_rn.comp — test only (test_vk_rounding): y = dbk_div_rn(a, b) of common/ieee_rn.glsl on
 * the bits, built as add.spv so that DBK_SHADER_DIR puts it in DBK_OP_ADD's place (the same
 * bindings and push constants: common/eltwise_head.glsl). The buffers are read and written
 * as uint so no float load or store touches a subnormal or a NaN.
 */
#include "common/eltwise_head.glsl"
#include "common/ieee_rn.glsl"

layout(binding = 0) readonly buffer BufA { uint a[]; };   /* (n) fp32 bits */
layout(binding = 1) readonly buffer BufB { uint b[]; };   /* (n) fp32 bits */
layout(binding = 2) writeonly buffer BufY { uint y[]; };  /* (n) fp32 bits of a / b */

void main() {
    EW_FOR_EACH(i) {
        y[pc.r[2] + i] = dbk_div_rn_bits(a[pc.r[0] + i], b[pc.r[1] + i]);
    }
}
