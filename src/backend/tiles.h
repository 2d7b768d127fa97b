/*
 * tiles.h — tile parameters of our GEMM and convolution kernels derived from a device's
 * reported limits, for devices that platforms/ has no measured values for (docs/gpu.md
 * "Tile parameters from the device").
 *
 * The kernels (shaders/gemm_tiled.comp and conv2d_*.comp through gemm_core.glsl;
 * cl/gemm_tiled.cl's local-memory kernel) compute a BM x BN block of the output per
 * work-group, stepping through K by BK with both operand panels staged in shared memory
 * ((BM + BN) * BK floats), each invocation computing TM x TN outputs; a work-group therefore
 * has (BM/TM) * (BN/TN) invocations.
 *
 * The rule, a pure function of the limits:
 *  1. Start from the vendor's shape (PCI vendor id):
 *       NVIDIA (0x10de)  128x128x16, 8x8: 256 invocations = 8 warps, 16 KiB shared (of 48+),
 *                        the classic SGEMM blocking of CUTLASS/MAGMA-style kernels
 *       AMD (0x1002)     128x128x16, 8x8: 256 invocations = 4 wave64 (8 wave32), 16 KiB of 64 KiB LDS
 *       Intel (0x8086)   64x64x32, 4x4: 256 invocations, 16 KiB of 64 KiB SLM; 16 accumulators
 *                        per invocation keep SIMD16/SIMD32 threads within the register file
 *       other            64x64x16, 4x4 (the portable default)
 *  2. Shrink until it fits: shared memory at most half the device's (two work-groups resident
 *     per compute unit) and invocations at most the device's limit: halve BK down to 8, then
 *     the larger of BM and BN while at least 64 invocations remain (two warps, one wave64),
 *     then TM and TN to 4 (more invocations of fewer outputs) and go on halving. The floor
 *     is 32x32x8, 4x4 (64 invocations, 2 KiB shared memory).
 *  3. Every shape above and every step of 2 keeps BM, BN, TM, TN powers of two, so the
 *     invocations are a power of two of at least 64: a whole number of warps (32), wave64
 *     wavefronts and Intel SIMD8/16/32 threads. A subgroup size that does not divide them
 *     (none known) is reported by dbk_tiles_from_limits's caller as a warning.
 * The elementwise/reduction work-group size is 256 (a power of two, at least the subgroup
 * size), capped by the device's limit.
 */
#ifndef DBK_TILES_H
#define DBK_TILES_H

#include <stdint.h>

#define DBK_VENDOR_NVIDIA 0x10deu
#define DBK_VENDOR_AMD    0x1002u
#define DBK_VENDOR_INTEL  0x8086u

typedef struct dbk_device_limits {
    uint32_t vendor_id;            /* PCI vendor id; 0 or another value: unknown vendor */
    uint32_t subgroup_size;        /* warp / wavefront / SIMD width; 0 when not reported */
    uint32_t max_invocations;      /* work-group size limit */
    uint64_t shared_bytes;         /* shared (local) memory per work-group */
} dbk_device_limits;

typedef struct dbk_tile_choice {
    uint32_t bm, bn, bk, tm, tn;   /* GEMM/conv tiles, as above */
    uint32_t wg;                   /* elementwise and reduction work-group size */
} dbk_tile_choice;

/* The tiles for a device with these limits (rule above). Always returns a choice; it fits
 * the limits unless they are below the floor (64 invocations, 2 KiB shared). */
dbk_tile_choice dbk_tiles_from_limits(const dbk_device_limits *limits);

#endif
