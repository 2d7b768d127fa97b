/*
 * fake_nvml.c — a stand-in libnvidia-ml.so.1 for test_energy: the NVML entry points daybreak's
 * reader calls (src/energy/energy_nvml.c), with the signatures of NVML's documentation, over
 * boards described by the environment, so the dlopen path, the device matching and both
 * reading modes run on a machine without an NVIDIA driver.
 *
 *   FAKE_NVML_NAMES    comma-separated board names (default "NVIDIA H100 80GB HBM3")
 *   FAKE_NVML_POWER    set: no total energy counter (NVML_ERROR_NOT_SUPPORTED), only power
 *   FAKE_NVML_INIT_FAIL set: nvmlInit_v2 fails (NVML_ERROR_DRIVER_NOT_LOADED)
 *
 * Board i's UUID is GPU-000000ii-0000-4000-8000-0000000000ii (its index in hex); its energy
 * counter starts at 1,000,000 mJ and grows by 250 mJ per read; its power is 250,000 mW.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
#define NVML_SUCCESS 0
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_DRIVER_NOT_LOADED 9

#define MAX_BOARDS 8
static char names[MAX_BOARDS][96];
static unsigned long long energy[MAX_BOARDS];
static unsigned int count;

/* Exported: the stand-in's own declarations (the real ones are in nvml.h). */
nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlShutdown(void);
const char *nvmlErrorString(nvmlReturn_t r);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d);
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int len);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int len);
nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long *mj);
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw);

/* Handles are index + 1 (never NULL). */
static long board(nvmlDevice_t d) {
    long i = (long)(size_t)d - 1;
    return i >= 0 && i < (long)count ? i : -1;
}

nvmlReturn_t nvmlInit_v2(void) {
    if (getenv("FAKE_NVML_INIT_FAIL")) return NVML_ERROR_DRIVER_NOT_LOADED;
    const char *list = getenv("FAKE_NVML_NAMES");
    if (!list) list = "NVIDIA H100 80GB HBM3";
    count = 0;
    while (*list && count < MAX_BOARDS) {
        size_t n = strcspn(list, ",");
        snprintf(names[count], sizeof names[count], "%.*s", (int)n, list);
        energy[count++] = 1000000ull;
        list += n + (list[n] == ',');
    }
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) { return NVML_SUCCESS; }

const char *nvmlErrorString(nvmlReturn_t r) {
    return r == NVML_ERROR_NOT_SUPPORTED ? "Not Supported"
         : r == NVML_ERROR_DRIVER_NOT_LOADED ? "Driver Not Loaded" : "Invalid Argument";
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n) {
    *n = count;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d) {
    if (i >= count) return NVML_ERROR_INVALID_ARGUMENT;
    *d = (nvmlDevice_t)(size_t)(i + 1);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int len) {
    long i = board(d);
    if (i < 0) return NVML_ERROR_INVALID_ARGUMENT;
    snprintf(name, len, "%s", names[i]);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int len) {
    long i = board(d);
    if (i < 0) return NVML_ERROR_INVALID_ARGUMENT;
    snprintf(uuid, len, "GPU-000000%02lx-0000-4000-8000-0000000000%02lx", i, i);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long *mj) {
    long i = board(d);
    if (i < 0) return NVML_ERROR_INVALID_ARGUMENT;
    if (getenv("FAKE_NVML_POWER")) return NVML_ERROR_NOT_SUPPORTED;
    *mj = energy[i];
    energy[i] += 250;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw) {
    if (board(d) < 0) return NVML_ERROR_INVALID_ARGUMENT;
    *mw = 250000;
    return NVML_SUCCESS;
}
