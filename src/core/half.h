/*
 * half.h — IEEE 754 binary16 (fp16) <-> binary32 conversions in plain C, the reference the
 * device kernels are tested against (DBK_OP_CAST_F32_F16 / DBK_OP_CAST_F16_F32, and the
 * widening of f16 operands in the CPU backend's convolutions and GEMM).
 *
 * f32 -> f16 rounds to nearest, ties to even (IEEE's default, what GPUs' conversion
 * instructions and SPIR-V's OpFConvert do by default); values beyond the f16 range become
 * +-inf, values below its smallest subnormal (2^-24) round to +-0 or to it; NaN stays a
 * (quiet) NaN. f16 -> f32 is exact.
 */
#ifndef DBK_HALF_H
#define DBK_HALF_H

#include <stdint.h>

uint16_t dbk_f32_to_f16(float f);
float    dbk_f16_to_f32(uint16_t h);

#endif
