/*
 * profile.h — hardware profiles (platforms/<id>.json) and the environment knobs daybreak reads.
 *
 * A profile describes one device family: name, vendor, peak FP32/FP16 FLOP/s, memory
 * bandwidth, the cloud instance and on-demand price per hour where one applies, and the
 * kernel choices and tuned parameters of each backend ("opencl": {...}, "vulkan": {...}).
 * Profiles are built into the binary (tools/embed.cmake); DBK_PLATFORMS_DIR replaces them by
 * the *.json files of a folder while developing or tuning.
 *
 * A device is matched by name: each profile lists case-insensitive substrings of device names
 * ("match") and optionally the backends it applies to ("backends"); the longest matching
 * substring wins, and "default" serves devices nothing matches.
 *
 * Schema (every field but "id" optional; a key daybreak reads that has another type than this,
 * e.g. "opencl.gemm": 5, fails the load naming the key):
 *   { "id": "nvidia-v100", "name": "...", "vendor": "...", "match": ["V100"],
 *     "backends": ["opencl", "vulkan"], "peak_fp32_gflops": 15700, "peak_fp16_gflops": ...,
 *     "mem_bandwidth_gbs": 900, "cloud": {"provider": "AWS", "instance": "p3.2xlarge",
 *     "price_per_hour": 3.06}, "source": "...", "opencl": {...}, "vulkan": {...} }
 *
 * The engine's environment knobs (DBK_FORCE_CONV, DBK_CACHE_DIR, ...) are read here, each
 * logged at info level when set (STYLE.md 3.12: knobs are not read all over the place). The
 * command line reads its own defaults (DAYBREAK_DATA, DBK_BACKEND) and test hooks
 * (DBK_ENERGY_ROOT, DBK_NVML_LIBRARY) in src/app, and backend/icd.c repeats the driver
 * loaders' search (OCL_ICD_VENDORS, VK_DRIVER_FILES, VK_ICD_FILENAMES).
 */
#ifndef DBK_PROFILE_H
#define DBK_PROFILE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

typedef struct dbk_profile dbk_profile;   /* one parsed profile; owned by the caller */

/* The best profile for a device of a backend ("cpu", "opencl", "vulkan"); "default" when none
 * matches. Errors: a malformed profile file (named), out of memory. */
dbk_status dbk_profile_for_device(const char *backend, const char *device_name, dbk_profile **out);

/* dbk_profile_for_device first takes the profile `daybreak tune` wrote for exactly this device
 * and backend (dbk_profile_tuned_path; not while DBK_PLATFORMS_DIR is set); this is the lookup
 * among the built-in profiles (or DBK_PLATFORMS_DIR's) alone, the base a tuning run starts from. */
dbk_status dbk_profile_builtin_for_device(const char *backend, const char *device_name, dbk_profile **out);

/* Where `daybreak tune` writes a device's tuned profile by default and where the lookup above
 * finds it: <cache dir>/profiles/<backend>-<device name as a file name>.json; "" when caching
 * is off (DBK_CACHE_DIR=off). */
void dbk_profile_tuned_path(const char *backend, const char *device_name, char *out, size_t cap);

/* The profile with this id; DBK_ERR_NOT_FOUND lists the known ids. */
dbk_status dbk_profile_by_id(const char *id, dbk_profile **out);

/* Both lookups above parse every profile and fail (DBK_ERR_FORMAT) on a malformed file, a file
 * in DBK_PLATFORMS_DIR that is not a regular file of at most DBK_PROFILE_MAX_BYTES, or two
 * files with the same id (the message names both). */
#define DBK_PROFILE_MAX_BYTES ((size_t)1 << 20)

/* Parses one profile from n bytes of JSON text; `where` names the source in errors. */
dbk_status dbk_profile_parse(const char *text, size_t n, const char *where, dbk_profile **out);

/* Whether the file at path holds a profile (a regular file of at most DBK_PROFILE_MAX_BYTES
 * that parses): what `daybreak tune --out` may replace. */
bool dbk_profile_file_is_profile(const char *path);

void dbk_profile_destroy(dbk_profile *p);                     /* accepts NULL */

/* The profile as indented JSON text (caller frees with free()); NULL when out of memory. */
char *dbk_profile_print(const dbk_profile *p);

const char *dbk_profile_id(const dbk_profile *p);

/* A number or string at a dotted path ("peak_fp32_gflops", "cloud.price_per_hour",
 * "opencl.gemm.mwg"); `fallback` when absent or of another type. */
double      dbk_profile_number(const dbk_profile *p, const char *dotted_path, double fallback);
const char *dbk_profile_string(const dbk_profile *p, const char *dotted_path, const char *fallback);
bool        dbk_profile_has(const dbk_profile *p, const char *dotted_path);
/* The index-th member of the object at a dotted path: its name into key (cap bytes) and its
 * string value ("" when not a string); NULL past the last member or when no object is there. */
const char *dbk_profile_member(const dbk_profile *p, const char *dotted_path, int index, char *key, size_t cap);

/* Loads every available profile as the lookups do: *count of them, or the error that makes
 * them unusable (DBK_PLATFORMS_DIR missing or empty, a malformed file, a known key of the wrong
 * type, a duplicate id), named. For listings, which must not hide such an error. */
dbk_status dbk_profile_check_all(int *count);

/* Ids of every available profile, for listings (index 0 .. count-1). */
int         dbk_profile_count(void);
const char *dbk_profile_id_at(int index);                      /* NULL when out of range */

/* --- environment knobs ------------------------------------------------------------- */

/* DBK_PLATFORMS_DIR: the folder whose *.json files replace the built-in profiles; NULL when
 * unset or empty. */
const char *dbk_env_platforms_dir(void);

/* DBK_KERNEL_DIR: load cl/ and shaders/ sources from this folder instead of the embedded
 * copies (developing kernels without rebuilding). NULL when unset. */
const char *dbk_env_kernel_dir(void);

/* DBK_SHADER_DIR: SPIR-V files (<shader>.spv, as glslc makes them from shaders/<shader>.comp)
 * that the Vulkan backend takes instead of the embedded copies of the same name; shaders not
 * in the folder stay embedded. Trying a shader fix on a machine without a compiler or a
 * rebuild (docs/gpu.md). NULL when unset or empty. */
const char *dbk_env_shader_dir(void);

/* DBK_VK_MEMORY=staged: the Vulkan backend places buffers in device-local memory that the
 * host cannot map and copies through a staging buffer, as on a discrete GPU, even where a
 * mapped device-local type exists (lavapipe, integrated GPUs): so the discrete path runs in
 * CI. false when unset; anything but "staged" or "auto" is ignored with a warning. */
bool dbk_env_vk_staged(void);

/* The folder for compiled-kernel caches: $DBK_CACHE_DIR, else $XDG_CACHE_HOME/daybreak,
 * else $HOME/.cache/daybreak; "" when none can be formed (caching is then off).
 * DBK_CACHE_DIR=off turns caching off. */
void dbk_env_cache_dir(char *out, size_t cap);

/* DBK_VK_VALIDATION=1: the Vulkan backend enables VK_LAYER_KHRONOS_validation with
 * synchronisation validation, and any validation error fails the next sync or read. */
bool dbk_env_vk_validation(void);

/* DBK_FORCE_CONV=im2col|winograd|winograd4: the convolution algorithm of the OpenCL and Vulkan
 * backends' 3x3 stride-1 layers, overriding the profile's "opencl.conv_algorithm" /
 * "vulkan.conv_algorithm" (winograd, winograd4: every such layer, whatever its width, as
 * F(2x2,3x3) or F(4x4,3x3); backend/conv_choice.h). NULL when unset or empty. */
const char *dbk_env_force_conv(void);

/* DBK_FUSE=0: training graphs keep batch norm, ReLU and residual add as separate ops instead
 * of the fused DBK_OP_BATCHNORM_RELU_* and _RELU_ADD_* (docs/fusion.md). true (fusion on)
 * when unset or anything else. */
bool dbk_env_fusion(void);

/* DBK_TUNE_CORRUPT=N: `daybreak tune` perturbs the device results of its N-th candidate
 * (1-based, in the order it prints them), so a test can show that a wrong candidate is
 * rejected; 0 when unset or not a positive number. Never set outside tests. */
long dbk_env_tune_corrupt(void);

#endif
