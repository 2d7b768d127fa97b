/*
 * tune_space.h — the searches of `daybreak tune` (tune_space.c): per backend, a fixed order of
 * searches, each a list of candidate patches of the device profile and the cases it measures.
 * Internal to src/bench/tune*.c.
 */
#ifndef DBK_TUNE_SPACE_H
#define DBK_TUNE_SPACE_H

#include <stdbool.h>

#include "bench/tune.h"
#include "core/profile.h"

#define DBK_TUNE_MAX_CANDIDATES 16

typedef struct dbk_tune_search {
    const char *name;                     /* the profile key it sets: "opencl.gemm_rb" */
    char        name_buf[48];
    const char *skip;                     /* non-NULL: why this search does not apply */
    bool      (*applies)(const dbk_tune_case *c);   /* the cases it measures */
    bool        per_shape;                /* choose per convolution shape (opencl.conv_by_shape) */
    int         count;
    char        labels[DBK_TUNE_MAX_CANDIDATES][96];
    char        patches[DBK_TUNE_MAX_CANDIDATES][512];   /* JSON merge patches of the profile */
} dbk_tune_search;

/* One layer of a per-shape search: the fastest of `count` candidates per conv op into best[op]
 * (-1 where !measured[op]) from t[op][k], op in dbk_conv_op_index order; true when one candidate
 * wins every measured op (conv_by_shape then names it alone, else one per op). */
bool dbk_tune_fastest_per_op(const double t[][DBK_TUNE_MAX_CANDIDATES], const bool measured[], int count, int best[]);

/* Number of searches for a backend (0: nothing to tune, e.g. the CPU reference). */
int  dbk_tune_search_count(dbk_backend_kind kind);
/* The i-th search, given the profile as the searches before it left it. */
void dbk_tune_search_make(dbk_backend_kind kind, int i, const dbk_profile *base, dbk_tune_search *s);

#endif
