/*
 * test_stats.c — run statistics (bench/stats.h) on fixed inputs: median, olympic mean,
 * coefficient of variation, fraction converged, non-converged runs (never dropped), n < 3,
 * and the threshold sweep.
 */
#include <math.h>
#include <stdio.h>

#include "bench/stats.h"
#include "test_util.h"

#define NEAR(a, b) (fabs((a) - (b)) < 1e-9)

static int five_converged_runs_should_give_textbook_values(void) {
    const double v[] = {30, 10, 50, 20, 40};
    dbk_stats s;
    DBK_CHECK_OK(dbk_stats_compute(v, 5, &s));
    DBK_CHECK(s.n == 5 && s.converged == 5 && NEAR(s.fraction, 1.0));
    DBK_CHECK(NEAR(s.median, 30.0));
    DBK_CHECK(NEAR(s.olympic_mean, 30.0)); /* mean of 20, 30, 40 */
    DBK_CHECK(NEAR(s.mean, 30.0));
    DBK_CHECK(NEAR(s.stddev, sqrt(250.0)));
    DBK_CHECK(NEAR(s.cv, sqrt(250.0) / 30.0));
    DBK_CHECK(NEAR(s.min, 10.0) && NEAR(s.max, 50.0));
    return 0;
}

static int olympic_mean_should_drop_only_the_extremes(void) {
    const double v[] = {100, 1, 2, 3, 4};
    dbk_stats s;
    DBK_CHECK_OK(dbk_stats_compute(v, 5, &s));
    DBK_CHECK(NEAR(s.olympic_mean, 3.0)); /* 2, 3, 4 */
    DBK_CHECK(NEAR(s.median, 3.0));
    DBK_CHECK(NEAR(s.mean, 22.0));
    return 0;
}

static int a_non_converged_run_should_count_as_the_slowest(void) {
    const double v[] = {12, 10, HUGE_VAL, 11};
    dbk_stats s;
    DBK_CHECK_OK(dbk_stats_compute(v, 4, &s));
    DBK_CHECK(s.n == 4 && s.converged == 3 && NEAR(s.fraction, 0.75));
    DBK_CHECK(NEAR(s.median, 11.5));       /* 10 11 | 12 inf */
    DBK_CHECK(NEAR(s.olympic_mean, 11.5)); /* drops 10 and the failed run */
    DBK_CHECK(NEAR(s.mean, 11.0) && NEAR(s.stddev, 1.0) && NEAR(s.cv, 1.0 / 11.0));
    return 0;
}

static int nan_should_also_mean_not_converged(void) {
    const double v[] = {5, nan(""), 7};
    dbk_stats s;
    DBK_CHECK_OK(dbk_stats_compute(v, 3, &s));
    DBK_CHECK(s.converged == 2);
    DBK_CHECK(NEAR(s.median, 7.0));        /* 5 7 inf */
    DBK_CHECK(NEAR(s.olympic_mean, 7.0));
    return 0;
}

static int mostly_failed_runs_should_have_an_infinite_median(void) {
    const double v[] = {5, HUGE_VAL, HUGE_VAL};
    dbk_stats s;
    DBK_CHECK_OK(dbk_stats_compute(v, 3, &s));
    DBK_CHECK(s.converged == 1 && NEAR(s.fraction, 1.0 / 3.0));
    DBK_CHECK(isinf(s.median) && isinf(s.olympic_mean));
    DBK_CHECK(NEAR(s.mean, 5.0) && isnan(s.stddev) && isnan(s.cv));
    const double none[] = {HUGE_VAL, HUGE_VAL};
    DBK_CHECK_OK(dbk_stats_compute(none, 2, &s));
    DBK_CHECK(s.converged == 0 && s.fraction == 0.0 && isinf(s.median) && isnan(s.mean) && isnan(s.min));
    return 0;
}

static int fewer_than_three_runs_should_drop_nothing(void) {
    const double one[] = {7};
    dbk_stats s;
    DBK_CHECK_OK(dbk_stats_compute(one, 1, &s));
    DBK_CHECK(NEAR(s.median, 7.0) && NEAR(s.olympic_mean, 7.0) && isnan(s.cv));
    const double two[] = {6, 4};
    DBK_CHECK_OK(dbk_stats_compute(two, 2, &s));
    DBK_CHECK(NEAR(s.median, 5.0) && NEAR(s.olympic_mean, 5.0));
    DBK_CHECK(NEAR(s.stddev, sqrt(2.0)) && NEAR(s.cv, sqrt(2.0) / 5.0));
    const double two_failed[] = {4, HUGE_VAL};
    DBK_CHECK_OK(dbk_stats_compute(two_failed, 2, &s));
    DBK_CHECK(isinf(s.median) && isinf(s.olympic_mean) && s.converged == 1);
    return 0;
}

static int zero_runs_should_be_an_error(void) {
    dbk_stats s;
    DBK_CHECK(dbk_stats_compute(NULL, 0, &s) == DBK_ERR_INVALID_ARG);
    return 0;
}

static int sweep_should_find_the_first_epoch_at_or_above_each_threshold(void) {
    const double acc[] = {50.0, 89.99, 90.5, 93.2, 94.0, 93.0};
    const double clock[] = {10, 20, 30, 40, 50, 60};
    const double thr[] = {90, 93, 94, 95};
    dbk_threshold_hit h[4];
    dbk_stats_sweep(acc, clock, 6, thr, 4, h);
    DBK_CHECK(h[0].reached && h[0].epoch == 3 && NEAR(h[0].seconds, 30.0));
    DBK_CHECK(h[1].reached && h[1].epoch == 4 && NEAR(h[1].seconds, 40.0));
    DBK_CHECK(h[2].reached && h[2].epoch == 5 && NEAR(h[2].seconds, 50.0)); /* >= is inclusive */
    DBK_CHECK(!h[3].reached && h[3].epoch == 0 && isinf(h[3].seconds));
    return 0;
}

static int default_thresholds_should_add_the_target_in_order(void) {
    double t[6];
    int n = dbk_stats_default_thresholds(94.0, t);
    DBK_CHECK(n == 5 && NEAR(t[0], 90) && NEAR(t[4], 94));
    n = dbk_stats_default_thresholds(80.0, t);
    DBK_CHECK(n == 6 && NEAR(t[0], 80) && NEAR(t[1], 90) && NEAR(t[5], 94));
    n = dbk_stats_default_thresholds(92.5, t);
    DBK_CHECK(n == 6 && NEAR(t[2], 92) && NEAR(t[3], 92.5) && NEAR(t[4], 93));
    n = dbk_stats_default_thresholds(96.0, t);
    DBK_CHECK(n == 6 && NEAR(t[4], 94) && NEAR(t[5], 96));
    return 0;
}

int main(void) {
    DBK_RUN(five_converged_runs_should_give_textbook_values);
    DBK_RUN(olympic_mean_should_drop_only_the_extremes);
    DBK_RUN(a_non_converged_run_should_count_as_the_slowest);
    DBK_RUN(nan_should_also_mean_not_converged);
    DBK_RUN(mostly_failed_runs_should_have_an_infinite_median);
    DBK_RUN(fewer_than_three_runs_should_drop_nothing);
    DBK_RUN(zero_runs_should_be_an_error);
    DBK_RUN(sweep_should_find_the_first_epoch_at_or_above_each_threshold);
    DBK_RUN(default_thresholds_should_add_the_target_in_order);
    return dbk_test_finish();
}
