/* cmd_platforms.c — `daybreak platforms`: the hardware profiles known to this binary. */
#include <stdio.h>
#include <string.h>

#include "app/cli.h"
#include "core/profile.h"
#include "train/platform.h"

void dbk_help_platforms(void) {
    printf("usage: daybreak platforms\n\nLists the hardware profiles (platforms/*.json): id, name, peak FP32 GFLOP/s,\n"
           "memory bandwidth and on-demand price per hour where one applies. Pass an id to --platform.\n");
}

int dbk_cmd_platforms(dbk_cli_args *a) {
    for (a->i = 2; a->i < a->argc; a->i++) {
        if (!strcmp(a->argv[a->i], "--help") || !strcmp(a->argv[a->i], "-h")) {
            dbk_help_platforms();
            return DBK_EXIT_OK;
        }
        return dbk_cli_usage_error("platforms", "unknown option '%s'", a->argv[a->i]);
    }
    printf("%-20s %-60s %12s %10s %s\n", "id", "name", "FP32 GFLOP/s", "GB/s", "price");
    for (int i = 0; i < dbk_profile_count(); i++) {
        dbk_platform_info p;
        if (dbk_platform_resolve(dbk_profile_id_at(i), "", "", &p) != DBK_OK) return dbk_cli_fail(NULL);
        char price[256] = "-";
        if (p.price_per_hour > 0)
            snprintf(price, sizeof price, "USD %.4g/h (%s %s)", p.price_per_hour, p.provider, p.instance);
        printf("%-20s %-60.60s %12.0f %10.0f %s\n", p.id, p.name, p.peak_fp32_gflops, p.mem_bandwidth_gbs, price);
    }
    return DBK_EXIT_OK;
}
