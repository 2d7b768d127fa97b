/*
 * energy_clock.h — the energy a run draws while its clock runs (train/trainer.h runs the clock): the trainer
 * marks each interval it puts on the clock (preprocessing, training steps, an evaluation on the
 * MLPerf clock, a size phase's rebuild, restoring a resumed state) and the meter's joules over
 * those intervals are summed into the report's energy record. Evaluation off the clock is off
 * the energy too, so joules to the target compare as time to the target does.
 *
 * Not measured, with the reason, when no source covers the device (energy/energy.h), in a
 * distributed run (one machine's counters do not cover the other ranks), when a resumed run's
 * energy before the interruption was not measured the same way, or when a reading fails.
 */
#ifndef DBK_ENERGY_CLOCK_H
#define DBK_ENERGY_CLOCK_H

#include "energy/energy.h"
#include "train/run_report.h"

typedef struct dbk_energy_clock {
    dbk_energy_meter *meter;    /* NULL when not measured */
    dbk_train_report *rep;      /* the run's report, whose energy record this fills (borrowed) */
    double            mark;     /* the meter's joules when the current interval began */
    bool              running;
} dbk_energy_clock;

/* Opens the meter for the run's device (rep->device) into rep->energy: measured, or the reason.
 * A resumed run (rep->energy already loaded from resume.ckpt) goes on only with the same source
 * and scope. Never fails the run: a missing counter is a reason, not an error. */
void dbk_energy_clock_open(dbk_energy_clock *c, const dbk_train_options *opt, dbk_train_report *rep);
void dbk_energy_clock_close(dbk_energy_clock *c);

/* The clock starts / stops: the interval's joules are added to rep->energy.joules at stop. A
 * start without a stop (an epoch dropped at a signal) adds nothing. */
void dbk_energy_clock_start(dbk_energy_clock *c);
void dbk_energy_clock_stop(dbk_energy_clock *c);
/* e->clock_joules: the energy on the clock so far, NAN when not measured. */
void dbk_energy_clock_record(const dbk_energy_clock *c, dbk_epoch_record *e);

#endif
