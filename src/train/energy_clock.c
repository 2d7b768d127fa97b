/* energy_clock.c — the energy on a run's clock (see energy_clock.h). */
#include "train/energy_clock.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/log.h"

/* Not measured from now on: the reason, and no epoch keeps a figure. */
static void give_up(dbk_energy_clock *c, const char *reason) {
    dbk_train_report *rep = c->rep;
    dbk_energy_record *e = &rep->energy;
    if (e->measured) dbk_log(DBK_LOG_LEVEL_WARN, "energy not measured: %s", reason);
    e->measured = false;
    snprintf(e->reason, sizeof e->reason, "%.511s", reason);
    for (int i = 0; i < rep->epochs_run; i++) rep->epochs[i].clock_joules = NAN;
    dbk_energy_meter_destroy(c->meter);
    c->meter = NULL;
    c->running = false;
}

void dbk_energy_clock_open(dbk_energy_clock *c, const dbk_train_options *opt, dbk_train_report *rep) {
    memset(c, 0, sizeof *c);
    c->rep = rep;
    dbk_energy_record *e = &rep->energy, saved = *e;
    const bool resumed = opt->resume;
    memset(e, 0, sizeof *e);
    if (opt->peers) {
        snprintf(e->reason, sizeof e->reason, "a distributed run: one machine's counters do not cover the other ranks");
        return;
    }
    const dbk_energy_config cfg = {.device = &rep->device, .backend = opt->backend, .root = opt->energy_root,
                                   .nvml_library = opt->nvml_library};
    if (dbk_energy_meter_create(&cfg, &c->meter) != DBK_OK) {
        snprintf(e->reason, sizeof e->reason, "%s", dbk_last_error());
        dbk_log(DBK_LOG_LEVEL_INFO, "energy not measured: %s", e->reason);
        return;
    }
    e->measured = true;
    snprintf(e->source, sizeof e->source, "%s", dbk_energy_meter_source(c->meter));
    snprintf(e->scope, sizeof e->scope, "%s", dbk_energy_meter_scope(c->meter));
    e->counter = dbk_energy_meter_is_counter(c->meter);
    e->interval = dbk_energy_meter_interval(c->meter);
    dbk_log(DBK_LOG_LEVEL_INFO, "energy: %s, every %.2g s", e->scope, e->interval);
    if (!resumed) return;
    if (!saved.measured) {
        char why[600];
        snprintf(why, sizeof why, "resumed: the epochs before the interruption were not measured (%.500s)",
                 saved.reason[0] ? saved.reason : "no reading");
        give_up(c, why);
    } else if (strcmp(saved.scope, e->scope)) {
        char why[1400];
        snprintf(why, sizeof why, "resumed with another energy source (%.600s) than before the interruption (%.600s)",
                 e->scope, saved.scope);
        give_up(c, why);
    } else {
        e->joules = saved.joules;
        e->samples = saved.samples;
    }
}

void dbk_energy_clock_close(dbk_energy_clock *c) {
    dbk_energy_meter_destroy(c->meter);
    c->meter = NULL;
}

void dbk_energy_clock_start(dbk_energy_clock *c) {
    if (!c->meter) return;
    if (!dbk_energy_meter_joules(c->meter, &c->mark)) {
        give_up(c, dbk_energy_meter_failure(c->meter));
        return;
    }
    c->running = true;
}

void dbk_energy_clock_stop(dbk_energy_clock *c) {
    dbk_train_report *rep = c->rep;
    if (!c->meter || !c->running) return;
    double now;
    if (!dbk_energy_meter_joules(c->meter, &now)) {
        give_up(c, dbk_energy_meter_failure(c->meter));
        return;
    }
    rep->energy.joules += now - c->mark;
    rep->energy.samples = dbk_energy_meter_samples(c->meter);
    c->running = false;
}

void dbk_energy_clock_record(const dbk_energy_clock *c, dbk_epoch_record *e) {
    e->clock_joules = c->rep->energy.measured ? c->rep->energy.joules : (double)NAN;
}
