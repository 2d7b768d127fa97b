/* timer.c — monotonic clock (see timer.h). */
#define _POSIX_C_SOURCE 200809L
#include "core/timer.h"

#include <time.h>

double dbk_time_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
