/*
 * ocl_conv_plan.h — the GEMMs an OpenCL convolution issues, from the backend's own chunk rules
 * (conv_geometry in ocl_ops_conv.c, plan_of in ocl_ops_conv_winograd.c), for tools and tests
 * that need the list without running the op (tools/bench_gemm.c times exactly these GEMMs;
 * tests/test_ocl.c checks the list against the launches the backend records).
 *
 * A configuration is what those rules read from a backend: the GEMM path, gemm_rb's panel
 * width, the im2col workspace budget and the Winograd choice. The backend makes one from its
 * context; dbk_ocl_conv_config_read makes one from a device profile, as the backend does.
 * Letters as ops.h: x (N,C,H,W), w (K,C,R,S), y (N,K,P,Q). Value data, no ownership (the
 * configuration points at a dbk_conv_choice the caller keeps).
 */
#ifndef DBK_OCL_CONV_PLAN_H
#define DBK_OCL_CONV_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/conv_choice.h"
#include "core/profile.h"

typedef struct dbk_ocl_conv_config {
    bool                   packed;        /* gemm_rb ("opencl.gemm": "tiled"); false: CLBlast */
    int                    rb_w;          /* gemm_rb panel width (RB_W) */
    size_t                 conv_budget;   /* bytes of im2col workspace per chunk of images */
    const dbk_conv_choice *choice;        /* Winograd per layer and its workspace budget */
    int                    compute_units; /* split-K: a CLBlast backward-filter GEMM in one chunk
                                             whose output has fewer 64x64 tiles than this is
                                             split along K into slices summed by splitk_sum;
                                             0 never splits */
} dbk_ocl_conv_config;

/* One GEMM shape of a conv op: C (m, n) = op(A) (m, k) . op(B) (k, n), issued `count` times. */
typedef struct dbk_ocl_conv_gemm {
    int  m, n, k;
    bool ta, tb;      /* A stored (k, m) / B stored (n, k) */
    int  cpq;         /* how C is stored (gemm_rb's c_plane): 0 row-major, > 0 (n/cpq, m, cpq), -1 transposed (n, m) */
    int  count;       /* GEMMs of this shape the op issues */
    int  batch;       /* of them per launch (gemm_rb's dimension 2): Winograd's E planes; 0 or 1:
                         one GEMM per launch (im2col) */
} dbk_ocl_conv_gemm;

/* Full chunks and a last, smaller chunk: at most two shapes per op. */
#define DBK_OCL_CONV_MAX_GEMMS 2

/* The im2col workspace budget of a profile ("opencl.conv_workspace_mb", default 64 MiB, at most
 * half of max_alloc when it is non-zero). */
size_t dbk_ocl_conv_im2col_budget(const dbk_profile *p, uint64_t max_alloc);

/* The configuration a backend on a device with max_alloc would read from profile p; the
 * Winograd choice is read into *choice, which the configuration points at. compute_units is
 * the profile's "opencl.split_k_compute_units" (0 without it: the backend uses its device's). */
dbk_status dbk_ocl_conv_config_read(const dbk_profile *p, uint64_t max_alloc, dbk_conv_choice *choice,
                                    dbk_ocl_conv_config *out);

/* The GEMMs the conv op (CONV2D_FWD, _BWD_DATA or _BWD_FILTER) issues under cfg, in the order
 * the backend issues them (shapes listed once with their counts); returns how many shapes
 * (0 for an empty op, another op, or a layer the choice runs on the direct kernels). */
int dbk_ocl_conv_gemm_plan(const dbk_ocl_conv_config *cfg, const dbk_op_desc *op,
                           dbk_ocl_conv_gemm out[DBK_OCL_CONV_MAX_GEMMS]);

#endif
