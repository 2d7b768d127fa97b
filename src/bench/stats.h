/*
 * stats.h — statistics of many time-to-accuracy runs, and the threshold sweep of one run.
 *
 * A run that did not reach the target is passed as a non-finite value (INFINITY or NAN) and
 * is never dropped: it counts as slower than every converged run.
 *   median        middle value of all n runs, non-converged as +infinity (so the median is
 *                 infinite, printed "not reached", when half or more of the runs failed);
 *                 for even n the mean of the two middle values.
 *   olympic mean  drop the fastest and the slowest run, average the rest (MLPerf's rule);
 *                 with n < 3 nothing is dropped and it is the plain mean. Infinite if a
 *                 non-converged run remains after dropping.
 *   mean, stddev, cv   over converged runs only: sample standard deviation (n-1) and
 *                 coefficient of variation stddev / mean; NAN with fewer than 2 converged.
 *   fraction      converged / n.
 */
#ifndef DBK_STATS_H
#define DBK_STATS_H

#include <stdbool.h>

#include "core/status.h"

typedef struct dbk_stats {
    int    n;               /* runs */
    int    converged;       /* runs with a finite value */
    double fraction;        /* converged / n */
    double median;          /* INFINITY when not reached by the median run */
    double olympic_mean;    /* INFINITY when a non-converged run remains */
    double mean;            /* converged runs only; NAN with none */
    double stddev;          /* converged runs only; NAN with fewer than 2 */
    double cv;              /* stddev / mean; NAN with fewer than 2 */
    double min, max;        /* converged runs only; NAN with none */
} dbk_stats;

/* Statistics of n values (n >= 1); DBK_ERR_INVALID_ARG for n < 1. */
dbk_status dbk_stats_compute(const double *values, int n, dbk_stats *out);

/* One threshold of a sweep: the first epoch whose test accuracy reaches it. */
typedef struct dbk_threshold_hit {
    double threshold;       /* percent */
    bool   reached;
    int    epoch;           /* 1-based; 0 when not reached */
    double seconds;         /* clock seconds at the end of that epoch; INFINITY when not reached */
} dbk_threshold_hit;

/* Sweeps thresholds over a run's per-epoch log: accuracy[i] (percent) and clock[i]
 * (cumulative clock seconds) of epoch i+1. Writes nthresholds hits to out. */
void dbk_stats_sweep(const double *accuracy, const double *clock, int epochs, const double *thresholds,
                     int nthresholds, dbk_threshold_hit *out);

/* The thresholds daybreak reports by default: 90, 91, 92, 93, 94 and, if it is not one of
 * them, the recipe's target (sorted). Returns the count (at most 6). */
int dbk_stats_default_thresholds(double target, double out[6]);

#endif
