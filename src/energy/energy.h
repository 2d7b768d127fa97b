/*
 * energy.h — the energy a device draws, read-only, from what its driver exposes:
 *
 *   nvml    NVIDIA GPUs: libnvidia-ml.so.1 loaded at run time (dlopen; no build dependency):
 *           nvmlDeviceGetTotalEnergyConsumption (mJ since the driver loaded; Volta and later),
 *           else nvmlDeviceGetPowerUsage (mW) sampled and integrated
 *   hwmon   AMD and Intel GPUs: the driver's hwmon folder (/sys/class/hwmon/hwmonN, name amdgpu,
 *           i915 or xe): energy1_input (uJ counter), else power1_average, else power1_input (uW)
 *           sampled and integrated
 *   rapl    CPUs (the CPU backend, PoCL, lavapipe): powercap's RAPL package zones
 *           (/sys/class/powercap/intel-rapl:N, name package-N: AMD's too), energy_uj counters
 *           summed over the packages, each unwrapped through its max_energy_range_uj
 *
 * A counter gives the energy between two reads exactly; a power reading is integrated over the
 * time between samples (trapezoids), so its accuracy depends on the sampling interval. The
 * meter samples in a helper thread (often enough to see every counter wrap), and every
 * dbk_energy_meter_joules call takes a fresh sample, so the energy between two calls is the
 * energy of that interval.
 *
 * The sysfs readers take a root folder ("/" on a real machine) under which they look for
 * sys/class/powercap and sys/class/hwmon, so tests run them on recorded trees. What a reading
 * covers is said in the scope: RAPL counts the whole package (other processes included), a GPU
 * its board.
 *
 * Errors are values: when no source covers the device, dbk_energy_meter_create returns
 * DBK_ERR_NOT_FOUND with a one-line reason naming what was looked for and why it was not
 * usable; a source that fails mid-run marks the meter failed with its reason (never a number).
 */
#ifndef DBK_ENERGY_H
#define DBK_ENERGY_H

#include <stdbool.h>

#include "backend/backend.h"
#include "core/status.h"

typedef struct dbk_energy_meter dbk_energy_meter;

/* Where to look: the device a run trains on, and the folders and library to read. */
typedef struct dbk_energy_config {
    const dbk_device_info *device;    /* borrowed during create */
    dbk_backend_kind       backend;
    const char            *root;      /* sysfs readers look under ROOT/sys/class/...; NULL = "/" */
    const char            *nvml_library; /* NULL = "libnvidia-ml.so.1" */
    double                 interval;  /* seconds between samples; <= 0: 0.1 s for power, 1 s for counters */
} dbk_energy_config;

/* Opens the source for the device and starts its sampling thread. DBK_ERR_NOT_FOUND with the
 * reason when none covers it (no counter, no permission, several candidates for one device). */
dbk_status dbk_energy_meter_create(const dbk_energy_config *cfg, dbk_energy_meter **out);
/* Stops the thread and closes the source; accepts NULL. */
void       dbk_energy_meter_destroy(dbk_energy_meter *m);

/* Joules drawn since the meter was created, sampled now. Returns false (and leaves *joules) once
 * a read has failed; dbk_energy_meter_failure says why. Thread-safe. */
bool        dbk_energy_meter_joules(dbk_energy_meter *m, double *joules);
const char *dbk_energy_meter_failure(dbk_energy_meter *m);         /* "" while it works */

const char *dbk_energy_meter_source(const dbk_energy_meter *m);    /* "nvml", "hwmon", "rapl" */
/* What the reading covers and from where, e.g. "CPU packages package-0 (RAPL energy_uj of
 * /sys/class/powercap/intel-rapl:0): the whole package, other processes included". */
const char *dbk_energy_meter_scope(const dbk_energy_meter *m);
bool        dbk_energy_meter_is_counter(const dbk_energy_meter *m); /* false: integrated power */
double      dbk_energy_meter_interval(const dbk_energy_meter *m);   /* seconds between samples */
long        dbk_energy_meter_samples(dbk_energy_meter *m);          /* samples taken so far */

/* ---------------------------------------------------------------------------------- */
/* The sources, for the meter and the tests (energy_sysfs.c, energy_nvml.c).            */

typedef struct dbk_energy_source dbk_energy_source;

/* Opens the source that covers cfg->device (the meter's choice above), or DBK_ERR_NOT_FOUND
 * with the reason. */
dbk_status dbk_energy_source_open(const dbk_energy_config *cfg, dbk_energy_source **out);
void       dbk_energy_source_close(dbk_energy_source *s);
/* One sample at monotonic time `now` (seconds): returns the joules since open (counters:
 * the unwrapped sum of the differences; power: the integral up to now). Not thread-safe. */
dbk_status dbk_energy_source_sample(dbk_energy_source *s, double now, double *joules);
const char *dbk_energy_source_name(const dbk_energy_source *s);
const char *dbk_energy_source_scope(const dbk_energy_source *s);
bool        dbk_energy_source_is_counter(const dbk_energy_source *s);

#endif
