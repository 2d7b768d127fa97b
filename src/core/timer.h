/* timer.h — monotonic wall-clock time in seconds (CLOCK_MONOTONIC), and the process's CPU time. */
#ifndef DBK_TIMER_H
#define DBK_TIMER_H

double dbk_time_now(void);

/* CPU seconds of every thread of the process so far (CLOCK_PROCESS_CPUTIME_ID): on a CPU
 * device (the CPU backend, PoCL, lavapipe) the work a step costs, comparable when other jobs
 * share the cores and wall time is not. */
double dbk_process_cpu_seconds(void);

#endif
