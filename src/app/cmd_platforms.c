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
    int count = 0;
    if (dbk_profile_check_all(&count) != DBK_OK) return dbk_cli_fail(NULL); /* never an empty list instead */
    /* The name last and whole: a column width would cut it mid-word. */
    printf("%-20s %12s %10s  %-36s %s\n", "id", "FP32 GFLOP/s", "GB/s", "price", "name");
    for (int i = 0; i < count; i++) {
        dbk_platform_info p;
        const char *id = dbk_profile_id_at(i);
        if (!id || dbk_platform_resolve(id, "", "", &p) != DBK_OK) return dbk_cli_fail(NULL);
        char price[256] = "-";
        if (p.price_per_hour > 0)
            snprintf(price, sizeof price, "USD %.4g/h (%s %s)", p.price_per_hour, p.provider, p.instance);
        printf("%-20s %12.0f %10.0f  %-36s %s\n", p.id, p.peak_fp32_gflops, p.mem_bandwidth_gbs, price, p.name);
    }
    return DBK_EXIT_OK;
}
