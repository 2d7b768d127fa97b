#version 450
/*
 * cast_f16_f32.comp — DBK_OP_CAST_F16_F32: y = float(x), exact.
 * Needs shaderFloat16 and storageBuffer16BitAccess (enabled by vk_device.c when present).
 */
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "common/eltwise_head.glsl"

layout(binding = 0) readonly buffer BufX { float16_t x[]; };   /* (n) */
layout(binding = 1) writeonly buffer BufY { float y[]; };      /* (n) */

void main() {
    EW_FOR_EACH(i) {
        y[pc.r[1] + i] = float(x[pc.r[0] + i]);
    }
}
