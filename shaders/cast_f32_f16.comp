#version 450
/*
 * cast_f32_f16.comp — DBK_OP_CAST_F32_F16: y = fp16(x). The conversion is OpFConvert, which
 * lavapipe (LLVM fptrunc) and GPUs' conversion instructions round to nearest even, as the
 * CPU reference (core/half.h) does; the ops test compares the bits.
 * Needs shaderFloat16 and storageBuffer16BitAccess (enabled by vk_device.c when present).
 */
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "common/eltwise_head.glsl"

layout(binding = 0) readonly buffer BufX { float x[]; };        /* (n) */
layout(binding = 1) writeonly buffer BufY { float16_t y[]; };   /* (n) */

void main() {
    EW_FOR_EACH(i) {
        y[pc.r[1] + i] = float16_t(x[pc.r[0] + i]);
    }
}
