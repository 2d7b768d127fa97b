/* timer.h — monotonic wall-clock time in seconds (CLOCK_MONOTONIC). */
#ifndef DBK_TIMER_H
#define DBK_TIMER_H

double dbk_time_now(void);

#endif
