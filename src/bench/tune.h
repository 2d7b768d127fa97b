/*
 * tune.h — `daybreak tune`: searches the tunables of our kernels on one device within a time
 * budget, checks every candidate's results against the CPU reference, measures the device's
 * memory bandwidth, and writes a device profile (platforms/ format) that later runs pick up by
 * the device's name (core/profile.h, dbk_profile_tuned_path). docs/tuning.md has the searches,
 * the budget rule, the cache and the output.
 *
 * The workload is the set of distinct convolutions (forward, backward-data, backward-filter)
 * and linear-layer GEMMs of the chosen recipes' models, each recipe's at its training batch
 * (capped; --batch overrides); each candidate is a
 * patch of the device's current profile, tried on a backend created with the patched profile
 * (dbk_backend_create_with_profile). Measurements are cached per device, driver and daybreak
 * binary, so a second run with the same searches measures nothing.
 */
#ifndef DBK_TUNE_H
#define DBK_TUNE_H

#include <stdint.h>
#include <stdio.h>

#include "backend/backend.h"

typedef struct dbk_tune_options {
    dbk_backend_kind kind;       /* opencl or vulkan */
    int              index;      /* device index within the backend */
    double           budget_s;   /* wall-clock seconds for the searches (> 0) */
    const char      *out;        /* profile to write; NULL: dbk_profile_tuned_path */
    const char      *recipe;     /* shapes of this recipe's model; NULL: every CIFAR-10 recipe */
    int              batch;      /* images per tuning convolution; 0: each recipe's (dbk_tune_recipe_batch) */
    const char      *only;       /* run only the search of this name ("opencl.gemm_rb"); NULL: all */
    uint64_t         build_id;   /* fingerprint of this daybreak binary, part of the cache key */
    const char      *command;    /* the command line, recorded in the profile */
    FILE            *print;      /* progress and result lines */
} dbk_tune_options;

typedef struct dbk_tune_summary {
    int    candidates;           /* tried from the cache or measured */
    int    measured;             /* of which measured in this run */
    int    rejected;             /* results differing from the CPU reference, or failing */
    int    untried;              /* left out for lack of budget */
    double copy_gbs, add_gbs;    /* measured memory bandwidth (0: not measured) */
    double seconds;              /* wall time of the whole run */
    char   out[4096];            /* the profile written */
} dbk_tune_summary;

/* Runs the searches of o->kind and writes the profile (atomically; nothing on failure).
 * Errors: no such device, an unknown o->only (the message lists the searches), no CPU
 * reference, an unwritable output, out of memory. */
dbk_status dbk_tune_run(const dbk_tune_options *o, dbk_tune_summary *sum);

/* DBK_ERR_INVALID_ARG listing the searches when `only` names none of kind's (--only). */
dbk_status dbk_tune_check_only(dbk_backend_kind kind, const char *only);

/* ---------------------------------------------------------------------------------- */
/* the workload (tune_workload.c)                                                      */

typedef struct dbk_tune_case {
    dbk_op_desc desc;            /* shapes only: tensors without buffers */
    char        label[112];      /* "conv2d_fwd C64 K128 32x32 3x3/1 N16" */
    char        shape_key[48];   /* convolutions: "CxKxHxW" (opencl.conv_by_shape); else "" */
    int         winograd;        /* 1 when the layer is 3x3, stride 1, pad 1 */
    int         layers;          /* how many of the models' layers have this shape (cases[0]: the first layer) */
    float      *in[DBK_OP_MAX_SRC];   /* inputs, same for every backend */
    float      *ref;             /* dst0 as the CPU reference computes it */
} dbk_tune_case;

/* The default batch is the recipe's own, at most this: from 128 to 512 the per-image times and
 * the per-shape ranking of the convolution algorithms showed no systematic change on PoCL
 * (docs/tuning.md, "The batch"), while the CPU reference and every candidate cost in
 * proportion to the batch. */
#define DBK_TUNE_BATCH_CAP 128
#define DBK_TUNE_MAX_RECIPES 32

/* The batch one recipe's layers are tuned at, and why. */
typedef struct dbk_tune_recipe_batch {
    const char *recipe;          /* the recipe table's name */
    int         trains_at;       /* the recipe's batch */
    int         batch;           /* the batch its cases have */
    char        why[160];        /* "the recipe's batch", "capped at 128", "--batch", "... max allocation ..." */
} dbk_tune_recipe_batch;

typedef struct dbk_tune_workload {
    dbk_tune_case *cases;
    int            count;
    uint64_t       hash;         /* of the cases' labels (batch included): part of the cache key */
    dbk_tune_recipe_batch recipes[DBK_TUNE_MAX_RECIPES];
    int            recipe_count;
} dbk_tune_workload;

/* The distinct convolutions and linear-layer GEMMs of `recipe`'s model (NULL: every recipe on
 * CIFAR-10) with random inputs and the CPU reference's outputs. batch > 0: every recipe at
 * that batch; 0: each at its own batch, at most DBK_TUNE_BATCH_CAP. Either is lowered to the
 * largest batch whose tensors each fit in max_alloc bytes (0: no limit), and the recipe's
 * entry in w->recipes says so. */
dbk_status dbk_tune_workload_build(const char *recipe, int batch, uint64_t max_alloc, dbk_tune_workload *w);
/* The same cases without inputs or reference results (in, ref NULL; hash 0): the shapes only,
 * cheap at any batch (tools/bench_gemm.c). */
dbk_status dbk_tune_workload_shapes(const char *recipe, int batch, uint64_t max_alloc, dbk_tune_workload *w);
void       dbk_tune_workload_deinit(dbk_tune_workload *w);

/* Runs one case on be: the result is compared with the reference (NMSE against the op's
 * tolerance of src/check/op_cases.c; `corrupt` perturbs it first, the test hook), then timed.
 * *seconds is the fastest of a few runs; a wrong or failing result returns DBK_ERR_DEVICE with
 * the reason in dbk_last_error(). */
dbk_status dbk_tune_case_measure(dbk_backend *be, const dbk_tune_case *c, int corrupt, double *seconds);

/* Memory bandwidth of be in GB/s: a copy (y = x: one read, one write per element) and an add
 * (y = a + b: STREAM's Add, two reads and one write) over buffers far larger than caches. */
dbk_status dbk_tune_bandwidth(dbk_backend *be, double *copy_gbs, double *add_gbs);

#endif
