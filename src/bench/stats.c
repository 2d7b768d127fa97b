/* stats.c — run statistics and the threshold sweep (see stats.h). */
#include "bench/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

/* HUGE_VAL is +infinity (IEEE 754), a double unlike INFINITY. */

/* Non-finite values (non-converged runs) sort after every finite one. */
static int cmp_run(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    bool fx = isfinite(x), fy = isfinite(y);
    if (!fx || !fy) return (int)!fx - (int)!fy;
    return (x > y) - (x < y);
}

dbk_status dbk_stats_compute(const double *values, int n, dbk_stats *out) {
    if (n < 1) return dbk_set_error(DBK_ERR_INVALID_ARG, "statistics need at least one run (got %d)", n);
    double *v = dbk_malloc(sizeof *v * (size_t)n);
    if (!v) return DBK_ERR_OUT_OF_HOST_MEMORY;
    for (int i = 0; i < n; i++) v[i] = isfinite(values[i]) ? values[i] : HUGE_VAL;
    qsort(v, (size_t)n, sizeof *v, cmp_run);

    memset(out, 0, sizeof *out);
    out->n = n;
    double sum = 0.0;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) {
            out->converged++;
            sum += v[i];
        }
    out->fraction = (double)out->converged / n;
    out->median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);

    int lo = n >= 3 ? 1 : 0, hi = n >= 3 ? n - 1 : n;
    double osum = 0.0;
    for (int i = lo; i < hi; i++) osum += v[i];
    out->olympic_mean = osum / (hi - lo);

    const int c = out->converged;
    out->mean = c ? sum / c : nan("");
    out->min = c ? v[0] : nan("");
    out->max = c ? v[c - 1] : nan("");
    if (c >= 2) {
        double ss = 0.0;
        for (int i = 0; i < c; i++) ss += (v[i] - out->mean) * (v[i] - out->mean);
        out->stddev = sqrt(ss / (c - 1));
        out->cv = out->stddev / out->mean;
    } else {
        out->stddev = nan("");
        out->cv = nan("");
    }
    dbk_free(v);
    return DBK_OK;
}

void dbk_stats_sweep(const double *accuracy, const double *clock, int epochs, const double *thresholds,
                     int nthresholds, dbk_threshold_hit *out) {
    for (int t = 0; t < nthresholds; t++) {
        dbk_threshold_hit h = {.threshold = thresholds[t], .reached = false, .epoch = 0, .seconds = HUGE_VAL};
        for (int e = 0; e < epochs; e++)
            if (accuracy[e] >= thresholds[t]) {
                h.reached = true;
                h.epoch = e + 1;
                h.seconds = clock[e];
                break;
            }
        out[t] = h;
    }
}

int dbk_stats_default_thresholds(double target, double out[6]) {
    int n = 0;
    bool have_target = false;
    for (int t = 90; t <= 94; t++) {
        if (!have_target && target < t) {
            out[n++] = target;
            have_target = true;
        }
        if (fabs(target - t) < 1e-9) have_target = true;
        out[n++] = t;
    }
    if (!have_target) out[n++] = target;
    return n;
}
