/* platform.c — hardware profile numbers for a run (see platform.h). */
#include "train/platform.h"

#include <stdio.h>
#include <string.h>

#include "core/profile.h"

dbk_status dbk_platform_resolve(const char *platform_id, const char *backend, const char *device_name,
                                dbk_platform_info *out) {
    memset(out, 0, sizeof *out);
    dbk_profile *p = NULL;
    if (platform_id && *platform_id) {
        DBK_TRY(dbk_profile_by_id(platform_id, &p));
        out->chosen = true;
    } else {
        DBK_TRY(dbk_profile_for_device(backend, device_name, &p));
    }
    snprintf(out->id, sizeof out->id, "%s", dbk_profile_id(p));
    snprintf(out->name, sizeof out->name, "%s", dbk_profile_string(p, "name", out->id));
    snprintf(out->provider, sizeof out->provider, "%s", dbk_profile_string(p, "cloud.provider", ""));
    snprintf(out->instance, sizeof out->instance, "%s", dbk_profile_string(p, "cloud.instance", ""));
    out->price_per_hour = dbk_profile_number(p, "cloud.price_per_hour", 0.0);
    out->energy_price_per_kwh = dbk_profile_number(p, "energy.price_per_kwh", 0.0);
    dbk_platform_set_prices(out, 0.0, 0.0);
    out->peak_fp32_gflops = dbk_profile_number(p, "peak_fp32_gflops", 0.0);
    out->peak_fp16_gflops = dbk_profile_number(p, "peak_fp16_gflops", 0.0);
    out->mem_bandwidth_gbs = dbk_profile_number(p, "mem_bandwidth_gbs", 0.0);
    snprintf(out->mem_bandwidth_source, sizeof out->mem_bandwidth_source, "%s",
             out->mem_bandwidth_gbs > 0 ? dbk_profile_string(p, "mem_bandwidth_source", "estimate") : "");
    dbk_profile_destroy(p);
    return DBK_OK;
}

void dbk_platform_set_prices(dbk_platform_info *p, double price_per_hour, double energy_price_per_kwh) {
    if (price_per_hour > 0) p->price_per_hour = price_per_hour;
    if (energy_price_per_kwh > 0) p->energy_price_per_kwh = energy_price_per_kwh;
    if (price_per_hour > 0) snprintf(p->price_source, sizeof p->price_source, "--price");
    else if (p->price_per_hour > 0) snprintf(p->price_source, sizeof p->price_source, "profile %.80s", p->id);
    else p->price_source[0] = '\0';
    if (energy_price_per_kwh > 0) snprintf(p->energy_price_source, sizeof p->energy_price_source, "--energy-price");
    else if (p->energy_price_per_kwh > 0)
        snprintf(p->energy_price_source, sizeof p->energy_price_source, "profile %.80s", p->id);
    else p->energy_price_source[0] = '\0';
}
