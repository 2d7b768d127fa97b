/*
 * icd.h — where the OpenCL and Vulkan loaders look for drivers, what they find there, and
 * whether each driver library can be loaded, for `daybreak devices` (docs/gpu.md).
 *
 * The loaders (ocl-icd, the Khronos Vulkan loader) read "ICD files": OpenCL's
 * /etc/OpenCL/vendors/NAME.icd holds one line, the driver library; Vulkan's icd.d/NAME.json
 * holds {"ICD": {"library_path": ...}}. When a device is missing, the loader says nothing;
 * this module repeats the loaders' search and dlopen()s every library named, so the user
 * sees which files exist and dlerror()'s reason for a driver that does not load.
 *
 * The loaders' own environment variables are read here (not in core/profile.c, which holds
 * daybreak's knobs): they decide where the loaders look, and the report must match them.
 *   OpenCL: OCL_ICD_VENDORS (a folder of .icd files, or one .icd file) instead of
 *           /etc/OpenCL/vendors.
 *   Vulkan: VK_DRIVER_FILES, else VK_ICD_FILENAMES (colon-separated .json files or folders)
 *           instead of the search path; VK_ADD_DRIVER_FILES adds to it. The search path is
 *           $XDG_CONFIG_HOME (~/.config), $XDG_CONFIG_DIRS (/etc/xdg), /etc, $XDG_DATA_HOME
 *           (~/.local/share), $XDG_DATA_DIRS (/usr/local/share:/usr/share), each + /vulkan/icd.d.
 *
 * Ownership: dbk_icd_scan fills a caller-allocated report and owns nothing else.
 */
#ifndef DBK_ICD_H
#define DBK_ICD_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

#define DBK_ICD_MAX_FILES 32

typedef struct dbk_icd_file {
    char path[512];      /* the ICD file */
    char library[512];   /* the library it names, as written ("" when the file is unusable) */
    bool loads;          /* dlopen(library) succeeded */
    bool no_instance;    /* Vulkan: it loads, but its vk_icdGetInstanceProcAddr gives no
                          * vkCreateInstance, so the loader skips it (NVIDIA's GLX library
                          * without a display does this) */
    char problem[512];   /* when !loads: the file's problem or dlerror()'s reason */
} dbk_icd_file;

typedef struct dbk_icd_report {
    char         searched[1024];   /* where the loader looks, and which variable said so */
    int          count;            /* files found (at most DBK_ICD_MAX_FILES are listed) */
    int          more;             /* files found beyond those listed */
    bool         parse_only;       /* the fixes below: files read, no library opened (a driver
                                    * opened and closed here may not load again: PoCL's LLVM
                                    * options register twice) */
    dbk_icd_file files[DBK_ICD_MAX_FILES];
} dbk_icd_report;

typedef enum dbk_icd_api { DBK_ICD_OPENCL, DBK_ICD_VULKAN } dbk_icd_api;

/* Finds the ICD files of an API and tries to load each library (dlopen RTLD_NOW, then
 * dlclose). Never fails: problems are reported per file. */
void dbk_icd_scan(dbk_icd_api api, dbk_icd_report *out);

/* Whether the NVIDIA driver fixes below may run for api: the NVIDIA kernel driver is there
 * (/dev/nvidiactl) and the user set none of the loader's variables (OpenCL: OCL_ICD_VENDORS;
 * Vulkan: VK_DRIVER_FILES, VK_ICD_FILENAMES, VK_ADD_DRIVER_FILES). One stat() on other machines. */
bool dbk_icd_nvidia_fix_allowed(dbk_icd_api api);

/* The NVIDIA fix of api (the two functions below with NVIDIA's library names), writing into
 * <cache dir>/opencl-icd or vulkan-icd (else $TMPDIR/daybreak-...), logged at info level when
 * applied. The caller checks dbk_icd_nvidia_fix_allowed first, and (Vulkan) that no NVIDIA
 * device is listed. */
void dbk_icd_nvidia_fix(dbk_icd_api api);

/* The headless NVIDIA fix, applied by the Vulkan backend before its first instance when the
 * loader finds no NVIDIA device, /dev/nvidiactl exists and none of VK_DRIVER_FILES,
 * VK_ICD_FILENAMES or VK_ADD_DRIVER_FILES is set. When an ICD file found names a library
 * containing `failing` (NVIDIA's "libGLX_nvidia") that loads but gives no vkCreateInstance
 * (no display), and the library `replacement` ("libEGL_nvidia.so.0", the same driver's EGL
 * entry) loads and gives one: writes an ICD file naming `replacement` into dir (atomically)
 * and sets VK_DRIVER_FILES and VK_ICD_FILENAMES (older loaders) to it and every other ICD file
 * found, so the loader's next scan starts the driver. Returns true when it did, with the path
 * of the file written in written (cap bytes). */
bool dbk_icd_vulkan_replace_failing(const char *failing, const char *replacement, const char *dir, char *written,
                                    size_t cap);

/* The missing-OpenCL-ICD fix, applied by the OpenCL backend before its first OpenCL call when
 * OCL_ICD_VENDORS is unset and /dev/nvidiactl exists: when no ICD file found names a library
 * containing `pattern` ("nvidia-opencl") but `library` ("libnvidia-opencl.so.1", which the
 * NVIDIA driver installs even where a container lacks /etc/OpenCL/vendors/nvidia.icd) loads,
 * writes into dir a copy of every ICD file found plus `name`.icd naming `library`, and
 * sets OCL_ICD_VENDORS to dir. Returns true when it did, with dir's ICD file for `library` in
 * written (cap bytes). */
bool dbk_icd_opencl_add_missing(const char *pattern, const char *library, const char *name, const char *dir,
                                char *written, size_t cap);

/* The library an ICD file's text names, into lib (cap bytes). OpenCL: the first line,
 * trimmed. Vulkan: ICD.library_path; a relative path with a '/' is made relative to the
 * folder of `path` (as the Vulkan loader does). DBK_ERR_FORMAT with the reason otherwise. */
dbk_status dbk_icd_parse(dbk_icd_api api, const char *path, const char *text, size_t n, char *lib, size_t cap);

#endif
