/*
 * energy_impl.h — internal to src/energy: the source object the sysfs and NVML readers fill.
 *
 * A source is up to DBK_ENERGY_MAX_CHANNELS raw readings of one kind, summed: energy counters
 * (RAPL packages, an hwmon energy file, NVML's total energy) or power readings (hwmon power,
 * NVML power usage). Raw values are integers in the reader's unit (uJ/uW for sysfs, mJ/mW for
 * NVML); unit_joules converts one raw unit to joules (or watts).
 */
#ifndef DBK_ENERGY_IMPL_H
#define DBK_ENERGY_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "energy/energy.h"

#define DBK_ENERGY_MAX_CHANNELS 16

typedef struct dbk_energy_channel {
    char     path[512];       /* the sysfs file read ("" for NVML) */
    uint64_t wrap;            /* a counter's range: it goes back to 0 after wrap - 1 (0 = never wraps) */
    uint64_t last;            /* the previous raw reading */
} dbk_energy_channel;

typedef struct dbk_nvml dbk_nvml;   /* energy_nvml.c */

struct dbk_energy_source {
    char               name[8];     /* "nvml", "hwmon", "rapl" */
    char               scope[640];
    bool               counter;     /* raw values are energy counters; else power readings */
    double             unit_joules; /* joules (counters) or watts (power) per raw unit */
    int                nchan;
    dbk_energy_channel chan[DBK_ENERGY_MAX_CHANNELS];
    dbk_nvml          *nvml;        /* the NVML device, for source "nvml" */
    double             joules;      /* since open */
    double             last_time;   /* power: the previous sample's time and power */
    double             last_watts;
};

/* energy_sysfs.c: the RAPL packages under root, or DBK_ERR_NOT_FOUND and why. */
dbk_status dbk_energy_open_rapl(const char *root, dbk_energy_source *s);
/* energy_sysfs.c: the one hwmon folder of the GPU's driver (names: "amdgpu", or "i915" and "xe"). */
dbk_status dbk_energy_open_hwmon(const char *root, const dbk_device_info *dev, dbk_energy_source *s);
/* energy_sysfs.c: reads an unsigned decimal from a sysfs file (what failed named). */
dbk_status dbk_energy_read_sysfs(const char *path, uint64_t *out);

/* energy_nvml.c: the NVML device that is dev (by UUID, else by a name no other GPU has). */
dbk_status dbk_energy_open_nvml(const char *library, const dbk_device_info *dev, dbk_energy_source *s);
dbk_status dbk_energy_nvml_read(dbk_energy_source *s, uint64_t *raw);
void       dbk_energy_nvml_close(dbk_nvml *n);

#endif
