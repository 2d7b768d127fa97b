/*
 * registry.c — which backends this binary has, and device selection.
 *
 * This is the ONLY file that tests DBK_WITH_OPENCL / DBK_WITH_VULKAN (STYLE.md 3.12): a
 * backend that is compiled out simply has no entry and reports 0 devices.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_impl.h"

#if DBK_WITH_OPENCL
extern const dbk_backend_entry dbk_ocl_backend_entry;
#endif
#if DBK_WITH_VULKAN
extern const dbk_backend_entry dbk_vk_backend_entry;
#endif

static const dbk_backend_entry *entry_for(dbk_backend_kind kind) {
    switch (kind) {
    case DBK_BACKEND_KIND_CPU: return &dbk_cpu_backend_entry;
#if DBK_WITH_OPENCL
    case DBK_BACKEND_KIND_OPENCL: return &dbk_ocl_backend_entry;
#else
    case DBK_BACKEND_KIND_OPENCL: return NULL;
#endif
#if DBK_WITH_VULKAN
    case DBK_BACKEND_KIND_VULKAN: return &dbk_vk_backend_entry;
#else
    case DBK_BACKEND_KIND_VULKAN: return NULL;
#endif
    case DBK_BACKEND_KIND_COUNT: break;
    }
    return NULL;
}

const char *dbk_backend_kind_name(dbk_backend_kind kind) {
    switch (kind) {
    case DBK_BACKEND_KIND_CPU:    return "cpu";
    case DBK_BACKEND_KIND_OPENCL: return "opencl";
    case DBK_BACKEND_KIND_VULKAN: return "vulkan";
    case DBK_BACKEND_KIND_COUNT:  break;
    }
    return "?";
}

bool dbk_backend_kind_compiled(dbk_backend_kind kind) { return entry_for(kind) != NULL; }

int dbk_backend_device_count(dbk_backend_kind kind) {
    const dbk_backend_entry *e = entry_for(kind);
    return e ? e->device_count() : 0;
}

dbk_status dbk_backend_device_info(dbk_backend_kind kind, int index, dbk_device_info *out) {
    const dbk_backend_entry *e = entry_for(kind);
    if (!e)
        return dbk_set_error(DBK_ERR_NOT_FOUND, "backend '%s' is not compiled into this daybreak",
                             dbk_backend_kind_name(kind));
    int n = e->device_count();
    if (index < 0 || index >= n)
        return dbk_set_error(DBK_ERR_NOT_FOUND, "%s device %d does not exist (%d device%s found)",
                             dbk_backend_kind_name(kind), index, n, n == 1 ? "" : "s");
    memset(out, 0, sizeof *out);
    return e->device_info(index, out);
}

dbk_status dbk_backend_resolve(const char *spec, int device, dbk_backend_kind *kind, int *index) {
    char name[32];
    const char *colon = strchr(spec, ':');
    size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
    if (len == 0 || len >= sizeof name)
        return dbk_set_error(DBK_ERR_NOT_FOUND, "unknown backend '%s' (known: cpu, opencl, vulkan)", spec);
    memcpy(name, spec, len);
    name[len] = '\0';

    int k;
    for (k = 0; k < DBK_BACKEND_KIND_COUNT; k++)
        if (!strcmp(name, dbk_backend_kind_name((dbk_backend_kind)k))) break;
    if (k == DBK_BACKEND_KIND_COUNT)
        return dbk_set_error(DBK_ERR_NOT_FOUND, "unknown backend '%s' (known: cpu, opencl, vulkan)", name);
    int idx = 0;
    if (colon) {
        char *end;
        errno = 0;
        long v = strtol(colon + 1, &end, 10);
        if (*end != '\0' || end == colon + 1 || v < 0 || v > 1000 || errno || colon[1] == '-' || colon[1] == '+')
            return dbk_set_error(DBK_ERR_INVALID_ARG, "bad device index in '%s' (%s:N, N a device index 0..1000)", spec,
                                 name);
        idx = (int)v;
    }
    if (!dbk_backend_kind_compiled((dbk_backend_kind)k))
        return dbk_set_error(DBK_ERR_NOT_FOUND,
                             "backend '%s' is not compiled into this daybreak (its packages were "
                             "missing at build time; see README)", name);

    if (device >= 0) idx = device;

    int n = dbk_backend_device_count((dbk_backend_kind)k);
    if (idx >= n)
        return dbk_set_error(DBK_ERR_NOT_FOUND,
                             "%s device %d does not exist (%d device%s found; `daybreak devices` lists them)",
                             name, idx, n, n == 1 ? "" : "s");
    *kind = (dbk_backend_kind)k;
    *index = idx;
    return DBK_OK;
}

/* PoCL, the OpenCL CPU device this project measures: its driver string names it. */
static bool is_pocl(const dbk_device_info *info) {
    return info->type == DBK_DEVICE_TYPE_CPU &&
           (strstr(info->driver, "Portable Computing Language") || strstr(info->api_version, "PoCL"));
}

void dbk_backend_default(dbk_backend_kind *kind, int *index) {
    const dbk_backend_kind order[] = {DBK_BACKEND_KIND_OPENCL, DBK_BACKEND_KIND_VULKAN};
    int pocl = -1;
    for (size_t o = 0; o < sizeof order / sizeof order[0]; o++) {
        int n = dbk_backend_device_count(order[o]);
        for (int i = 0; i < n; i++) {
            dbk_device_info info;
            if (dbk_backend_device_info(order[o], i, &info) != DBK_OK) continue;
            if (info.type == DBK_DEVICE_TYPE_GPU) {
                *kind = order[o];
                *index = i;
                return;
            }
            if (order[o] == DBK_BACKEND_KIND_OPENCL && pocl < 0 && is_pocl(&info)) pocl = i;
        }
    }
    *kind = pocl >= 0 ? DBK_BACKEND_KIND_OPENCL : DBK_BACKEND_KIND_CPU;
    *index = pocl >= 0 ? pocl : 0;
}

dbk_status dbk_backend_create(dbk_backend_kind kind, int index, dbk_backend **out) {
    return dbk_backend_create_with_profile(kind, index, NULL, out);
}

dbk_status dbk_backend_create_with_profile(dbk_backend_kind kind, int index, const struct dbk_profile *profile,
                                       dbk_backend **out) {
    *out = NULL;
    const dbk_backend_entry *e = entry_for(kind);
    if (!e)
        return dbk_set_error(DBK_ERR_NOT_FOUND, "backend '%s' is not compiled into this daybreak",
                             dbk_backend_kind_name(kind));
    int n = e->device_count();
    if (index < 0 || index >= n)
        return dbk_set_error(DBK_ERR_NOT_FOUND, "%s device %d does not exist (%d found)",
                             dbk_backend_kind_name(kind), index, n);
    dbk_backend *be = calloc(1, sizeof *be);
    if (!be) return dbk_set_error(DBK_ERR_OUT_OF_HOST_MEMORY, "out of host memory creating a backend");
    be->kind = kind;
    be->profile = profile;
    dbk_status s = e->create(index, be);
    be->profile = NULL;
    if (s != DBK_OK) {
        free(be);
        return s;
    }
    *out = be;
    return DBK_OK;
}
