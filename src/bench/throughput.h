/*
 * throughput.h — training throughput of a recipe on one device, in images per second.
 *
 * Builds the recipe's full training step (augment, forward, loss, backward, SGD, and the
 * recipe's lookahead every lookahead_every steps) on the device, runs every program once
 * (dbk_session_warm_up, timed apart as in training), runs warm-up steps, then times `steps`
 * steps between two device synchronisations.
 * Timings belong in benchmarks, not tests: this is what tools/bench_train prints.
 */
#ifndef DBK_THROUGHPUT_H
#define DBK_THROUGHPUT_H

#include "backend/backend.h"
#include "data/dataset.h"
#include "train/recipe.h"
#include "train/session.h"

typedef struct dbk_throughput {
    double images_per_second;
    double seconds_per_step;
    double cpu_seconds_per_step;   /* the process's CPU time (every thread) per timed step */
    int    steps;
    int    batch;
    dbk_step_costs costs;     /* launches, syncs, host time, bytes per timed step */
    double session_seconds;   /* creating the session (Vulkan pipelines, op preparation) */
    double warmup_seconds;    /* its programs run once (dbk_session_warm_up: lazy compilation) */
} dbk_throughput;

/* train must hold at least batch * (warmup + steps) images (or it wraps within one epoch).
 * The image shape and classes are train's. fp16: mixed precision (docs/precision.md), with
 * its per-step read-back of the loss scaler's flag; refused (DBK_ERR_UNSUPPORTED, naming the
 * missing feature) on a device without the fp16 path. */
dbk_status dbk_bench_throughput(dbk_backend *be, const dbk_recipe *recipe, int batch, bool fp16, int warmup, int steps,
                                const dbk_dataset *train, const dbk_dataset *test, dbk_throughput *out);

#endif
