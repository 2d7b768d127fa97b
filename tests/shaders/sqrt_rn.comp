#version 450
/*
 * sqrt_rn.comp — test only (test_vk_rounding): y = dbk_sqrt_rn(x) of common/ieee_rn.glsl on
 * the bits, built as relu_fwd.spv so that DBK_SHADER_DIR puts it in DBK_OP_RELU_FWD's place
 * (the same bindings and push constants: common/eltwise_head.glsl). The buffers are read and
 * written as uint so no float load or store touches a subnormal or a NaN.
 */
#include "common/eltwise_head.glsl"
#include "common/ieee_rn.glsl"

layout(binding = 0) readonly buffer BufX { uint x[]; };   /* (n) fp32 bits */
layout(binding = 1) writeonly buffer BufY { uint y[]; };  /* (n) fp32 bits of sqrt(x) */

void main() {
    EW_FOR_EACH(i) {
        y[pc.r[1] + i] = dbk_sqrt_rn_bits(x[pc.r[0] + i]);
    }
}
