/*
 * energy_sysfs.c — the Linux sysfs energy readers (see energy.h): powercap RAPL package zones for
 * CPUs, and the hwmon folder of an AMD or Intel GPU's driver.
 *
 * RAPL (Documentation/power/powercap/powercap.rst): /sys/class/powercap/intel-rapl:N is package
 * N (its "name" is package-N; AMD's Zen packages appear the same way), with energy_uj, a
 * counter in microjoules that goes back to 0 after max_energy_range_uj. Its sub-zones
 * (intel-rapl:N:M: core, uncore, dram) are parts of the package or beside it, and
 * intel-rapl-mmio:N repeats the package through another interface: both are left out, so
 * nothing is counted twice. Since Linux 5.10 energy_uj is readable by root only.
 *
 * hwmon (Documentation/hwmon/sysfs-interface.rst): energyN_input in microjoules, powerN_average
 * and powerN_input in microwatts. amdgpu exposes power1_average (or power1_input); i915 and xe
 * energy1_input (xe's energy2_input is a second domain of the same card, so only channel 1 is
 * read).
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "energy/energy_impl.h"

dbk_status dbk_energy_read_sysfs(const char *path, uint64_t *out) {
    FILE *f = fopen(path, "r");
    if (!f) {
        int err = errno;
        return dbk_set_error(err == ENOENT ? DBK_ERR_NOT_FOUND : DBK_ERR_IO, "cannot read %s: %s%s", path,
                             strerror(err),
                             err == EACCES ? " (energy counters are readable by root only since Linux 5.10)" : "");
    }
    char text[64];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || end == text || text[0] == '-' || (*end && *end != '\n'))
        return dbk_set_error(DBK_ERR_FORMAT, "%s holds '%.*s', not an unsigned number", path,
                             (int)strcspn(text, "\n"), text);
    *out = v;
    return DBK_OK;
}

/* The first line of a small text file (a zone's or hwmon folder's "name"), "" if unreadable. */
static void read_name(const char *dir, char *out, size_t cap) {
    char path[700];
    snprintf(path, sizeof path, "%.600s/name", dir);
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) return;
    if (!fgets(out, (int)cap, f)) out[0] = '\0';
    fclose(f);
    out[strcspn(out, "\n")] = '\0';
}

static bool is_file(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* Whether text contains word, ignoring case. */
static bool contains_nocase(const char *text, const char *word) {
    for (size_t n = strlen(word); *text; text++)
        if (!strncasecmp(text, word, n)) return true;
    return false;
}

static int cmp_names(const void *a, const void *b) { return strcmp((const char *)a, (const char *)b); }

/* The entries of dir whose name starts with prefix, sorted (at most max, 64 bytes each). */
static int list_entries(const char *dir, const char *prefix, char (*names)[64], int max) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (!strncmp(e->d_name, prefix, strlen(prefix)) && n < max && strlen(e->d_name) < 64)
            snprintf(names[n++], 64, "%s", e->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], cmp_names);
    return n;
}

/* Appends a channel to the source: its first reading, and a counter's wrap range when given. */
static dbk_status add_counter(dbk_energy_source *s, const char *path, const char *range_path) {
    if (s->nchan == DBK_ENERGY_MAX_CHANNELS) return DBK_OK;
    dbk_energy_channel *c = &s->chan[s->nchan];
    if (strlen(path) >= sizeof c->path) return dbk_set_error(DBK_ERR_NOT_FOUND, "energy file path too long: %s", path);
    memcpy(c->path, path, strlen(path) + 1);
    c->wrap = 0;
    if (range_path) {
        uint64_t max;
        DBK_TRY(dbk_energy_read_sysfs(range_path, &max));
        c->wrap = max + 1;
    }
    DBK_TRY(dbk_energy_read_sysfs(path, &c->last));
    s->nchan++;
    return DBK_OK;
}

dbk_status dbk_energy_open_rapl(const char *root, dbk_energy_source *s) {
    char dir[520];
    snprintf(dir, sizeof dir, "%s/sys/class/powercap", root);
    char zones[64][64];
    int n = list_entries(dir, "intel-rapl:", zones, 64);
    if (n < 0)
        return dbk_set_error(DBK_ERR_NOT_FOUND, "no RAPL counters: %s does not exist (no powercap driver, or a "
                             "container or virtual machine that hides it)", dir);
    snprintf(s->name, sizeof s->name, "rapl");
    s->counter = true;
    s->unit_joules = 1e-6;
    char names[256] = "", zone_dir[600], path[640], range[660];   /* dir: at most 519 bytes, zones 63 */
    for (int i = 0; i < n; i++) {
        if (strchr(strchr(zones[i], ':') + 1, ':')) continue; /* a sub-zone intel-rapl:N:M */
        snprintf(zone_dir, sizeof zone_dir, "%.519s/%.63s", dir, zones[i]);
        char name[64];
        read_name(zone_dir, name, sizeof name);
        if (strncmp(name, "package", 7)) continue;   /* psys: the whole platform, packages included */
        snprintf(path, sizeof path, "%.599s/energy_uj", zone_dir);
        snprintf(range, sizeof range, "%.599s/max_energy_range_uj", zone_dir);
        DBK_TRY(add_counter(s, path, range));
        size_t used = strlen(names);
        snprintf(names + used, sizeof names - used, "%s%.63s (%.63s)", used ? ", " : "", name, zones[i]);
    }
    if (s->nchan == 0)
        return dbk_set_error(DBK_ERR_NOT_FOUND, "no RAPL counters: %s has no package zone (intel-rapl:N named "
                             "package-N)", dir);
    snprintf(s->scope, sizeof s->scope, "CPU package%s %s: RAPL energy_uj in %s; the whole package, other "
             "processes included", s->nchan == 1 ? "" : "s", names, dir);
    return DBK_OK;
}

/* The hwmon driver names of a GPU vendor, NULL when none is known. */
static const char *const *hwmon_drivers(const dbk_device_info *dev) {
    static const char *const amd[] = {"amdgpu", NULL}, *const intel[] = {"i915", "xe", NULL};
    if (dev->vendor_id == 0x1002 || contains_nocase(dev->vendor, "advanced micro devices") ||
        contains_nocase(dev->vendor, "amd"))
        return amd;
    if (dev->vendor_id == 0x8086 || contains_nocase(dev->vendor, "intel")) return intel;
    return NULL;
}

dbk_status dbk_energy_open_hwmon(const char *root, const dbk_device_info *dev, dbk_energy_source *s) {
    const char *const *drivers = hwmon_drivers(dev);
    if (!drivers)
        return dbk_set_error(DBK_ERR_NOT_FOUND, "no energy reader for GPU vendor '%s' (NVML reads NVIDIA, hwmon AMD "
                             "and Intel)", dev->vendor);
    char dir[520];
    snprintf(dir, sizeof dir, "%s/sys/class/hwmon", root);
    char entries[64][64], found[64] = "", list[256] = "", hw_dir[600], name[64] = "";
    int n = list_entries(dir, "hwmon", entries, 64), matches = 0;
    if (n < 0)
        return dbk_set_error(DBK_ERR_NOT_FOUND, "no hwmon readings for %s: %s does not exist", dev->name, dir);
    for (int i = 0; i < n; i++) {
        char this_name[64];
        snprintf(hw_dir, sizeof hw_dir, "%.519s/%.63s", dir, entries[i]);
        read_name(hw_dir, this_name, sizeof this_name);
        for (int d = 0; drivers[d]; d++)
            if (!strcmp(this_name, drivers[d])) {
                size_t used = strlen(list);
                snprintf(list + used, sizeof list - used, "%s%.63s", used ? ", " : "", entries[i]);
                if (matches++ == 0) {
                    memcpy(found, entries[i], sizeof found);
                    memcpy(name, this_name, sizeof name);
                }
            }
    }
    if (matches == 0)
        return dbk_set_error(DBK_ERR_NOT_FOUND, "no hwmon folder of the %s driver in %s", drivers[0], dir);
    if (matches > 1)
        return dbk_set_error(DBK_ERR_NOT_FOUND, "%d hwmon folders of GPU drivers in %s (%s): cannot tell which one is "
                             "%s", matches, dir, list, dev->name);
    snprintf(hw_dir, sizeof hw_dir, "%.519s/%.63s", dir, found);
    snprintf(s->name, sizeof s->name, "hwmon");
    s->unit_joules = 1e-6;
    const char *const files[] = {"energy1_input", "power1_average", "power1_input"};
    for (int f = 0; f < 3; f++) {
        char path[640];
        snprintf(path, sizeof path, "%.599s/%s", hw_dir, files[f]);
        if (!is_file(path)) continue;
        s->counter = f == 0;   /* else a power reading: one channel, read the same way */
        DBK_TRY(add_counter(s, path, NULL));
        snprintf(s->scope, sizeof s->scope, "GPU board of %.200s (%s driver): hwmon %s in %.300s%s", dev->name, name,
                 files[f], hw_dir, s->counter ? "" : ", sampled and integrated");
        return DBK_OK;
    }
    return dbk_set_error(DBK_ERR_NOT_FOUND, "%s (%s) has no energy1_input, power1_average or power1_input", hw_dir, name);
}
