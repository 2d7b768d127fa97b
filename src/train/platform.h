/*
 * platform.h — the hardware profile (platforms/<id>.json, core/profile.h) a run is costed and
 * rated against, reduced to the numbers results need.
 *
 * A device is matched to its profile by name (core/profile.h: longest case-insensitive
 * substring of the device name among the profiles for its backend; "default" otherwise), or
 * the user names one with --platform ID (a rented V100 whose driver reports another name).
 * Unknown numbers are 0: cost is only computed where price_per_hour > 0, utilisation only
 * where peak_fp32_gflops > 0.
 */
#ifndef DBK_PLATFORM_H
#define DBK_PLATFORM_H

#include <stdbool.h>

#include "core/status.h"

typedef struct dbk_platform_info {
    char   id[64];                 /* profile id, e.g. "nvidia-v100" */
    char   name[160];              /* the profile's "name" */
    char   provider[64];           /* cloud.provider, "" when none */
    char   instance[64];           /* cloud.instance, "" when none */
    double price_per_hour;         /* cloud.price_per_hour in USD, 0 = unknown */
    double peak_fp32_gflops;       /* 0 = unknown */
    double peak_fp16_gflops;       /* 0 = unknown */
    double mem_bandwidth_gbs;      /* 0 = unknown */
    /* Where mem_bandwidth_gbs comes from: the profile's "mem_bandwidth_source" (daybreak tune
     * writes "measured by daybreak tune on <date>: ..."), else "estimate" (a figure from a
     * datasheet or a guess, written by hand). "" when there is no bandwidth. */
    char   mem_bandwidth_source[256];
    bool   chosen;                 /* named with --platform (not matched by device name) */
    char   price_source[96];       /* where price_per_hour comes from: "--price" or "profile ID" ("" when none) */
    double energy_price_per_kwh;   /* USD per kWh: --energy-price, else the profile's energy.price_per_kwh; 0 = unknown */
    char   energy_price_source[96];/* "--energy-price" or "profile ID" ("" when none) */
} dbk_platform_info;

/* platform_id non-NULL: that profile (DBK_ERR_NOT_FOUND lists the known ids); otherwise the
 * best match for the device name on this backend. */
dbk_status dbk_platform_resolve(const char *platform_id, const char *backend, const char *device_name,
                                dbk_platform_info *out);
/* The user's prices over the profile's (--price, --energy-price; 0 = keep the profile's), and
 * where each price comes from. */
void       dbk_platform_set_prices(dbk_platform_info *p, double price_per_hour, double energy_price_per_kwh);

#endif
