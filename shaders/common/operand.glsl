/*
 * operand.glsl — the element type of the GEMM-shaped shaders' two operands (A and B of
 * gemm_tiled.comp; x/dy and w of the conv2d_*.comp), for mixed precision.
 *
 * A shader that mentions DBK_F16 in its text gets a second SPIR-V build, <name>_f16, compiled
 * with -DDBK_F16 (src/backends/vulkan/vulkan.cmake derives the variant list from the
 * sources); the host picks it when the op's operands are f16 (vk_ops_conv.c). Operands are
 * then read as float16_t and widened: the products of two fp16 values are exact in fp32 and
 * accumulate in fp32, as in the CPU reference (backends/cpu/amp.c). Results stay f32.
 * Needs the device features shaderFloat16 and storageBuffer16BitAccess (vk_device.c enables
 * them when present; ops with f16 tensors are refused otherwise).
 */
#ifdef DBK_F16
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define OPERAND float16_t
#define OPERAND_BYTES_LOG2 1u
#else
#define OPERAND float
#define OPERAND_BYTES_LOG2 2u
#endif
