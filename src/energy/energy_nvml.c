/*
 * energy_nvml.c — NVIDIA GPUs through NVML, loaded at run time (see energy.h).
 *
 * libnvidia-ml.so.1 comes with the NVIDIA driver; daybreak neither links it nor needs its
 * headers: the few entry points are declared here as NVML's documentation gives them
 * (https://docs.nvidia.com/deploy/nvml-api/). nvmlDeviceGetTotalEnergyConsumption returns the
 * millijoules the board drew since the driver was loaded (Volta and later: the H100 has it);
 * older boards get nvmlDeviceGetPowerUsage (milliwatts) sampled by the meter.
 *
 * The run's device is found among NVML's by UUID (Vulkan's deviceUUID and OpenCL's
 * cl_khr_device_uuid are the bytes NVML spells "GPU-xxxxxxxx-xxxx-..."), else by its name when
 * no other NVIDIA GPU has that name.
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/alloc.h"
#include "energy/energy_impl.h"

typedef int nvml_return;                       /* nvmlReturn_t: 0 = NVML_SUCCESS */
typedef struct nvml_device_st *nvml_device;    /* nvmlDevice_t */
#define NVML_NAME_BUFFER 96                    /* NVML_DEVICE_NAME_V2_BUFFER_SIZE, ..._UUID_V2_... */

struct dbk_nvml {
    void       *lib;
    nvml_device device;
    bool        initialised;
    bool        total_energy;                  /* nvmlDeviceGetTotalEnergyConsumption works */
    nvml_return (*shutdown)(void);
    const char *(*error_string)(nvml_return);
    nvml_return (*total_energy_mj)(nvml_device, unsigned long long *);
    nvml_return (*power_mw)(nvml_device, unsigned int *);
};

static const char *nvml_error(const dbk_nvml *n, nvml_return r) {
    const char *s = n->error_string ? n->error_string(r) : NULL;
    return s ? s : "unknown NVML error";
}

/* The 16 bytes of an NVML UUID ("GPU-" or "MIG-" then 32 hex digits and dashes). */
static bool parse_uuid(const char *text, uint8_t out[16]) {
    const char *p = strchr(text, '-');
    if (!p) return false;
    int nibbles = 0;
    for (p++; *p && nibbles < 32; p++) {
        if (*p == '-') continue;
        if (!isxdigit((unsigned char)*p)) return false;
        int v = isdigit((unsigned char)*p) ? *p - '0' : tolower((unsigned char)*p) - 'a' + 10;
        if (nibbles % 2 == 0) out[nibbles / 2] = (uint8_t)(v << 4);
        else out[nibbles / 2] |= (uint8_t)v;
        nibbles++;
    }
    return nibbles == 32;
}

void dbk_energy_nvml_close(dbk_nvml *n) {
    if (!n) return;
    if (n->initialised && n->shutdown) n->shutdown();
    if (n->lib) dlclose(n->lib);
    dbk_free(n);
}

#define NVML_SYMBOL(n, var, name) (*(void **)&(var) = dlsym((n)->lib, name))

/* Finds the device among NVML's: by UUID, else by a name no other board has. */
static dbk_status find_device(dbk_nvml *n, const dbk_device_info *dev, char *how, size_t cap) {
    nvml_return (*count_fn)(unsigned int *) = NULL;
    nvml_return (*by_index)(unsigned int, nvml_device *) = NULL;
    nvml_return (*name_fn)(nvml_device, char *, unsigned int) = NULL;
    nvml_return (*uuid_fn)(nvml_device, char *, unsigned int) = NULL;
    if (!NVML_SYMBOL(n, count_fn, "nvmlDeviceGetCount_v2") || !NVML_SYMBOL(n, by_index, "nvmlDeviceGetHandleByIndex_v2") ||
        !NVML_SYMBOL(n, name_fn, "nvmlDeviceGetName"))
        return dbk_set_error(DBK_ERR_NOT_FOUND, "NVML lacks nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2 or "
                             "nvmlDeviceGetName (driver too old)");
    NVML_SYMBOL(n, uuid_fn, "nvmlDeviceGetUUID");
    unsigned int count = 0;
    nvml_return r = count_fn(&count);
    if (r != 0) return dbk_set_error(DBK_ERR_NOT_FOUND, "nvmlDeviceGetCount_v2 failed: %s", nvml_error(n, r));
    int by_name = 0;
    char names[256] = "";
    for (unsigned int i = 0; i < count; i++) {
        nvml_device d;
        char name[NVML_NAME_BUFFER] = "", uuid_text[NVML_NAME_BUFFER] = "";
        if (by_index(i, &d) != 0 || name_fn(d, name, sizeof name) != 0) continue;
        uint8_t uuid[16];
        if (dev->has_uuid && uuid_fn && uuid_fn(d, uuid_text, sizeof uuid_text) == 0 && parse_uuid(uuid_text, uuid) &&
            !memcmp(uuid, dev->uuid, 16)) {
            n->device = d;
            snprintf(how, cap, "NVML device %u, %s, matched by UUID %s", i, name, uuid_text);
            return DBK_OK;
        }
        size_t used = strlen(names);
        snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "", name);
        if (!strcasecmp(name, dev->name)) {
            if (by_name++ == 0) n->device = d;
            snprintf(how, cap, "NVML device %u, %s, matched by name", i, name);
        }
    }
    if (by_name == 1) return DBK_OK;
    if (by_name > 1)
        return dbk_set_error(DBK_ERR_NOT_FOUND, "%d NVIDIA GPUs are named %s and the driver gives the device no UUID: "
                             "cannot tell which one the run used", by_name, dev->name);
    return dbk_set_error(DBK_ERR_NOT_FOUND, "no NVML device is %s (NVML lists %u: %s)", dev->name, count,
                         count ? names : "none");
}

dbk_status dbk_energy_open_nvml(const char *library, const dbk_device_info *dev, dbk_energy_source *s) {
    dbk_nvml *n = dbk_calloc(1, sizeof *n);
    if (!n) return DBK_ERR_OUT_OF_HOST_MEMORY;
    s->nvml = n;   /* closed by dbk_energy_source_close, also after a failure here */
    n->lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!n->lib) {
        const char *why = dlerror();
        return dbk_set_error(DBK_ERR_NOT_FOUND, "no NVML: %s does not load (%s): the NVIDIA driver is not installed",
                             library, why ? why : "not found");
    }
    nvml_return (*init)(void) = NULL;
    NVML_SYMBOL(n, n->error_string, "nvmlErrorString");
    if (!NVML_SYMBOL(n, init, "nvmlInit_v2") || !NVML_SYMBOL(n, n->shutdown, "nvmlShutdown"))
        return dbk_set_error(DBK_ERR_NOT_FOUND, "no NVML: %s lacks nvmlInit_v2 or nvmlShutdown", library);
    nvml_return r = init();
    if (r != 0) return dbk_set_error(DBK_ERR_NOT_FOUND, "no NVML: nvmlInit_v2 failed: %s", nvml_error(n, r));
    n->initialised = true;
    char how[256];
    DBK_TRY(find_device(n, dev, how, sizeof how));
    NVML_SYMBOL(n, n->total_energy_mj, "nvmlDeviceGetTotalEnergyConsumption");
    NVML_SYMBOL(n, n->power_mw, "nvmlDeviceGetPowerUsage");
    unsigned long long mj = 0;
    unsigned int mw = 0;
    snprintf(s->name, sizeof s->name, "nvml");
    s->unit_joules = 1e-3;
    s->nchan = 1;
    if (n->total_energy_mj && n->total_energy_mj(n->device, &mj) == 0) {
        n->total_energy = true;
        s->counter = true;
        s->chan[0].last = mj;
        snprintf(s->scope, sizeof s->scope, "GPU board of %s: NVML nvmlDeviceGetTotalEnergyConsumption (%s)", dev->name,
                 how);
        return DBK_OK;
    }
    if (n->power_mw && (r = n->power_mw(n->device, &mw)) == 0) {
        s->counter = false;
        s->chan[0].last = mw;
        snprintf(s->scope, sizeof s->scope, "GPU board of %s: NVML nvmlDeviceGetPowerUsage sampled and integrated (%s; "
                 "no total energy counter on this board)", dev->name, how);
        return DBK_OK;
    }
    return dbk_set_error(DBK_ERR_NOT_FOUND, "NVML gives %s neither total energy nor power usage%s%s", dev->name,
                         n->power_mw ? ": " : "", n->power_mw ? nvml_error(n, r) : "");
}

dbk_status dbk_energy_nvml_read(dbk_energy_source *s, uint64_t *raw) {
    dbk_nvml *n = s->nvml;
    nvml_return r;
    if (n->total_energy) {
        unsigned long long mj = 0;
        if ((r = n->total_energy_mj(n->device, &mj)) != 0)
            return dbk_set_error(DBK_ERR_DEVICE, "nvmlDeviceGetTotalEnergyConsumption failed: %s", nvml_error(n, r));
        *raw = mj;
        return DBK_OK;
    }
    unsigned int mw = 0;
    if ((r = n->power_mw(n->device, &mw)) != 0)
        return dbk_set_error(DBK_ERR_DEVICE, "nvmlDeviceGetPowerUsage failed: %s", nvml_error(n, r));
    *raw = mw;
    return DBK_OK;
}
