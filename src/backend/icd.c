/*
 * icd.c — the loaders' driver search, repeated for the report of `daybreak devices` (icd.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "backend/icd.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "core/log.h"
#include "core/profile.h"

#define ICD_MAX_BYTES ((size_t)64 << 10)   /* real ICD files are under 1 KiB */

static void copy(char *dst, size_t cap, const char *src) { snprintf(dst, cap, "%s", src ? src : ""); }

static bool ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

dbk_status dbk_icd_parse(dbk_icd_api api, const char *path, const char *text, size_t n, char *lib, size_t cap) {
    lib[0] = '\0';
    if (api == DBK_ICD_OPENCL) {
        const char *a = text, *end = text + n;
        while (a < end && (*a == ' ' || *a == '\t' || *a == '\r' || *a == '\n')) a++;
        const char *b = a;
        while (b < end && *b != '\n' && *b != '\r' && *b != '\0') b++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t')) b--;
        if (a == b) return dbk_set_error(DBK_ERR_FORMAT, "empty: it should name the driver library on its first line");
        if ((size_t)(b - a) >= cap) return dbk_set_error(DBK_ERR_FORMAT, "library name of %zu bytes is too long", (size_t)(b - a));
        memcpy(lib, a, (size_t)(b - a));
        lib[b - a] = '\0';
        return DBK_OK;
    }
    cJSON *root = cJSON_ParseWithLength(text, n);
    if (!root) return dbk_set_error(DBK_ERR_FORMAT, "not valid JSON");
    const cJSON *icd = cJSON_GetObjectItemCaseSensitive(root, "ICD");
    const cJSON *lp = cJSON_GetObjectItemCaseSensitive(icd, "library_path");
    dbk_status st = DBK_OK;
    if (!cJSON_IsString(lp) || !lp->valuestring[0]) {
        st = dbk_set_error(DBK_ERR_FORMAT, "no ICD.library_path string");
    } else if (lp->valuestring[0] != '/' && strchr(lp->valuestring, '/')) {
        /* Relative to the JSON file's folder. */
        const char *slash = strrchr(path, '/');
        int dlen = slash ? (int)(slash - path) : 1;
        int w = snprintf(lib, cap, "%.*s/%s", dlen, slash ? path : ".", lp->valuestring);
        if (w < 0 || (size_t)w >= cap) st = dbk_set_error(DBK_ERR_FORMAT, "library path too long");
    } else if (strlen(lp->valuestring) >= cap) {
        st = dbk_set_error(DBK_ERR_FORMAT, "library path too long");
    } else {
        copy(lib, cap, lp->valuestring);
    }
    cJSON_Delete(root);
    if (st != DBK_OK) lib[0] = '\0';
    return st;
}

/* What the Vulkan loader asks of a driver before it lists its devices: after negotiating the
 * interface version, vk_icdGetInstanceProcAddr(NULL, "vkCreateInstance") must not be NULL (the
 * loader's "Could not get 'vkCreateInstance' via 'vk_icdGetInstanceProcAddr'"). A library
 * without vk_icdGetInstanceProcAddr is an old-style driver the loader handles otherwise: true. */
typedef void (*icd_fn)(void);
typedef icd_fn (*icd_gipa_fn)(void *instance, const char *name);
typedef int32_t (*icd_negotiate_fn)(uint32_t *version);
static bool vulkan_icd_gives_create_instance(void *h) {
    icd_gipa_fn gipa;
    icd_negotiate_fn negotiate;
    /* dlsym returns an object pointer; copying it is the POSIX way to a function pointer */
    void *sym = dlsym(h, "vk_icdGetInstanceProcAddr");
    if (!sym) return true;
    memcpy(&gipa, &sym, sizeof gipa);
    sym = dlsym(h, "vk_icdNegotiateLoaderICDInterfaceVersion");
    if (sym) {
        memcpy(&negotiate, &sym, sizeof negotiate);
        uint32_t version = 5;   /* the loader's current interface version */
        negotiate(&version);
    }
    return gipa(NULL, "vkCreateInstance") != NULL;
}

/* Reads, parses and test-loads one ICD file into the report. */
static void add_file(dbk_icd_api api, const char *path, dbk_icd_report *r) {
    if (r->count >= DBK_ICD_MAX_FILES) {
        r->more++;
        return;
    }
    dbk_icd_file *f = &r->files[r->count++];
    memset(f, 0, sizeof *f);
    copy(f->path, sizeof f->path, path);
    void *text = NULL;
    size_t n = 0;
    const dbk_file_spec spec = {.what = api == DBK_ICD_OPENCL ? "OpenCL ICD file" : "Vulkan ICD file",
                                .max_bytes = ICD_MAX_BYTES};
    dbk_status st = dbk_file_read_spec(path, &spec, &text, &n);
    if (st == DBK_OK) st = dbk_icd_parse(api, path, text, n, f->library, sizeof f->library);
    dbk_free(text);
    if (st != DBK_OK) {
        copy(f->problem, sizeof f->problem, dbk_last_error());
        return;
    }
    if (r->parse_only) return;
    void *h = dlopen(f->library, RTLD_NOW | RTLD_LOCAL);
    if (h) {
        f->loads = true;
        if (api == DBK_ICD_VULKAN) f->no_instance = !vulkan_icd_gives_create_instance(h);
        dlclose(h);
    } else {
        const char *why = dlerror();
        copy(f->problem, sizeof f->problem, why ? why : "dlopen failed without a reason");
    }
}

static int compare_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Every file of dir ending in suffix, in name order (as the loaders sort them). */
static void add_dir(dbk_icd_api api, const char *dir, const char *suffix, dbk_icd_report *r) {
    DIR *d = opendir(dir);
    if (!d) return;
    char *names[256];
    int k = 0;
    struct dirent *e;
    while ((e = readdir(d)) && k < 256) {
        if (e->d_name[0] == '.' || !ends_with(e->d_name, suffix)) continue;
        size_t len = strlen(e->d_name);
        names[k] = dbk_malloc(len + 1);
        if (!names[k]) break;
        memcpy(names[k++], e->d_name, len + 1);
    }
    closedir(d);
    qsort(names, (size_t)k, sizeof names[0], compare_names);
    for (int i = 0; i < k; i++) {
        char path[1024];
        if (snprintf(path, sizeof path, "%s/%s", dir, names[i]) < (int)sizeof path) add_file(api, path, r);
        dbk_free(names[i]);
    }
}

static bool is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* A file or a folder of files, as the variables allow both. */
static void add_path(dbk_icd_api api, const char *p, const char *suffix, dbk_icd_report *r) {
    if (is_dir(p)) add_dir(api, p, suffix, r);
    else add_file(api, p, r);
}

/* Each colon-separated entry of list, with `tail` appended, through add_path or add_dir. */
static void add_list(dbk_icd_api api, const char *list, const char *tail, bool dirs_only, dbk_icd_report *r) {
    const char *s = list;
    while (s && *s) {
        const char *colon = strchr(s, ':');
        int len = colon ? (int)(colon - s) : (int)strlen(s);
        if (len > 0) {
            char p[1024];
            if (snprintf(p, sizeof p, "%.*s%s", len, s, tail) < (int)sizeof p) {
                if (dirs_only) add_dir(api, p, ".json", r);
                else add_path(api, p, ".json", r);
            }
        }
        s = colon ? colon + 1 : NULL;
    }
}

/* Appends the strings to r->searched (cut at its size). */
static void note(dbk_icd_report *r, const char *a, const char *b, const char *c) {
    const char *parts[3] = {a, b, c};
    for (int i = 0; i < 3; i++) {
        size_t len = strlen(r->searched);
        snprintf(r->searched + len, sizeof r->searched - len, "%s", parts[i] ? parts[i] : "");
    }
}

static void scan_opencl(dbk_icd_report *r) {
    const char *env = getenv("OCL_ICD_VENDORS");
    if (env && *env) {
        note(r, env, " (from OCL_ICD_VENDORS)", NULL);
        add_path(DBK_ICD_OPENCL, env, ".icd", r);
    } else {
        note(r, "/etc/OpenCL/vendors/*.icd", NULL, NULL);
        add_dir(DBK_ICD_OPENCL, "/etc/OpenCL/vendors", ".icd", r);
    }
}

static void scan_vulkan(dbk_icd_report *r) {
    const char *files = getenv("VK_DRIVER_FILES"), *from = "VK_DRIVER_FILES";
    if (!files || !*files) files = getenv("VK_ICD_FILENAMES"), from = "VK_ICD_FILENAMES";
    if (files && *files) {
        note(r, files, " (from ", from);
        note(r, ")", NULL, NULL);
        add_list(DBK_ICD_VULKAN, files, "", false, r);
    } else {
        const char *home = getenv("HOME");
        const char *cfg = getenv("XDG_CONFIG_DIRS"), *data = getenv("XDG_DATA_DIRS");
        const char *cfg_home = getenv("XDG_CONFIG_HOME"), *data_home = getenv("XDG_DATA_HOME");
        char buf[512];
        if (cfg_home && *cfg_home) add_list(DBK_ICD_VULKAN, cfg_home, "/vulkan/icd.d", true, r);
        else if (home && *home && snprintf(buf, sizeof buf, "%s/.config/vulkan/icd.d", home) < (int)sizeof buf)
            add_dir(DBK_ICD_VULKAN, buf, ".json", r);
        add_list(DBK_ICD_VULKAN, cfg && *cfg ? cfg : "/etc/xdg", "/vulkan/icd.d", true, r);
        add_dir(DBK_ICD_VULKAN, "/etc/vulkan/icd.d", ".json", r);
        if (data_home && *data_home) add_list(DBK_ICD_VULKAN, data_home, "/vulkan/icd.d", true, r);
        else if (home && *home && snprintf(buf, sizeof buf, "%s/.local/share/vulkan/icd.d", home) < (int)sizeof buf)
            add_dir(DBK_ICD_VULKAN, buf, ".json", r);
        add_list(DBK_ICD_VULKAN, data && *data ? data : "/usr/local/share:/usr/share", "/vulkan/icd.d", true, r);
        note(r, "the vulkan/icd.d folders of ~/.config, $XDG_CONFIG_DIRS (/etc/xdg), /etc, ~/.local/share, "
             "$XDG_DATA_DIRS (/usr/local/share:/usr/share)", NULL, NULL);
    }
    const char *add = getenv("VK_ADD_DRIVER_FILES");
    if (add && *add) {
        note(r, "; plus ", add, " (from VK_ADD_DRIVER_FILES)");
        add_list(DBK_ICD_VULKAN, add, "", false, r);
    }
}

static void scan(dbk_icd_api api, dbk_icd_report *out, bool parse_only) {
    memset(out, 0, sizeof *out);
    out->parse_only = parse_only;
    if (api == DBK_ICD_OPENCL) scan_opencl(out);
    else scan_vulkan(out);
}

void dbk_icd_scan(dbk_icd_api api, dbk_icd_report *out) { scan(api, out, false); }

/* Whether library loads and (Vulkan) gives an instance. Left open when it loads: the loader opens
 * it next, and closing it here could make that second load fail (see parse_only). */
static bool opens(dbk_icd_api api, const char *library) {
    void *h = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!h) return false;
    return api == DBK_ICD_OPENCL || (dlsym(h, "vk_icdGetInstanceProcAddr") && vulkan_icd_gives_create_instance(h));
}

bool dbk_icd_vulkan_replace_failing(const char *failing, const char *replacement, const char *dir, char *written,
                                    size_t cap) {
    dbk_icd_report *r = dbk_malloc(sizeof *r);   /* ~33 KiB: not on the stack */
    if (!r) return false;
    scan(DBK_ICD_VULKAN, r, true);
    /* only the failing-named libraries are opened (the loader skips them anyway) */
    for (int i = 0; i < r->count; i++) {
        dbk_icd_file *f = &r->files[i];
        if (!f->library[0] || !strstr(f->library, failing)) continue;
        void *h = dlopen(f->library, RTLD_NOW | RTLD_LOCAL);
        f->loads = h != NULL;
        f->no_instance = h && !vulkan_icd_gives_create_instance(h);
        if (h) dlclose(h);
    }
    bool found = false;
    for (int i = 0; i < r->count; i++) found |= r->files[i].no_instance && strstr(r->files[i].library, failing);
    const bool works = found && opens(DBK_ICD_VULKAN, replacement);
    char path[1024], text[1200];
    bool done = false;
    if (works && dbk_mkdir_p(dir) == DBK_OK && snprintf(path, sizeof path, "%s/nvidia_egl_icd.json", dir) < (int)sizeof path) {
        const int n = snprintf(text, sizeof text,
                               "{\"file_format_version\": \"1.0.1\", \"ICD\": {\"library_path\": \"%s\", "
                               "\"api_version\": \"1.3.0\"}}\n",
                               replacement);
        done = n > 0 && n < (int)sizeof text && dbk_file_write_atomic(path, text, (size_t)n) == DBK_OK;
    }
    if (done) {
        /* the new file first, then every other one found, the failing ones left out */
        dbk_strbuf list;
        dbk_strbuf_init(&list);
        dbk_strbuf_appendf(&list, "%s", path);
        for (int i = 0; i < r->count; i++)
            if (!(r->files[i].no_instance && strstr(r->files[i].library, failing)))
                dbk_strbuf_appendf(&list, ":%s", r->files[i].path);
        done = list.status == DBK_OK && setenv("VK_DRIVER_FILES", list.data, 1) == 0 &&
               setenv("VK_ICD_FILENAMES", list.data, 1) == 0;
        dbk_strbuf_deinit(&list);
        copy(written, cap, path);
    }
    dbk_free(r);
    return done;
}

bool dbk_icd_opencl_add_missing(const char *pattern, const char *library, const char *name, const char *dir,
                                char *written, size_t cap) {
    dbk_icd_report *r = dbk_malloc(sizeof *r);   /* ~33 KiB: not on the stack */
    if (!r) return false;
    scan(DBK_ICD_OPENCL, r, true);
    bool named = false;
    for (int i = 0; i < r->count; i++) named |= strstr(r->files[i].library, pattern) != NULL;
    bool done = !named && opens(DBK_ICD_OPENCL, library) && dbk_mkdir_p(dir) == DBK_OK;
    char path[1100], line[600];
    /* the files found (the loader skips any that does not load), then the missing one */
    for (int i = 0; done && i <= r->count; i++) {
        const bool missing = i == r->count;
        if (!missing && !r->files[i].library[0]) continue;
        const char *base = missing ? NULL : strrchr(r->files[i].path, '/');
        const int np = missing ? snprintf(path, sizeof path, "%s/%s.icd", dir, name)
                               : snprintf(path, sizeof path, "%s/%s", dir, base ? base + 1 : r->files[i].path);
        const int nl = snprintf(line, sizeof line, "%s\n", missing ? library : r->files[i].library);
        done = np > 0 && np < (int)sizeof path && nl > 0 && nl < (int)sizeof line &&
               dbk_file_write_atomic(path, line, (size_t)nl) == DBK_OK;
    }
    if (done) {
        done = setenv("OCL_ICD_VENDORS", dir, 1) == 0;
        copy(written, cap, path);
    }
    dbk_free(r);
    return done;
}

bool dbk_icd_nvidia_fix_allowed(dbk_icd_api api) {
    static const char *const ocl_vars[] = {"OCL_ICD_VENDORS", NULL};
    static const char *const vk_vars[] = {"VK_DRIVER_FILES", "VK_ICD_FILENAMES", "VK_ADD_DRIVER_FILES", NULL};
    for (const char *const *v = api == DBK_ICD_OPENCL ? ocl_vars : vk_vars; *v; v++) {
        const char *set = getenv(*v);
        if (set && *set) return false;
    }
    return access("/dev/nvidiactl", F_OK) == 0;
}

void dbk_icd_nvidia_fix(dbk_icd_api api) {
    const char *name = api == DBK_ICD_OPENCL ? "opencl-icd" : "vulkan-icd";
    char cache[1024], dir[1100], written[1200];
    dbk_env_cache_dir(cache, sizeof cache);
    const char *tmp = getenv("TMPDIR");
    if (cache[0]) snprintf(dir, sizeof dir, "%s/%s", cache, name);
    else snprintf(dir, sizeof dir, "%s/daybreak-%s", tmp && *tmp ? tmp : "/tmp", name);
    if (api == DBK_ICD_OPENCL) {
        if (dbk_icd_opencl_add_missing("nvidia-opencl", "libnvidia-opencl.so.1", "nvidia", dir, written, sizeof written))
            dbk_log(DBK_LOG_LEVEL_INFO,
                    "OpenCL: no ICD file names the NVIDIA driver's libnvidia-opencl.so.1; using %s (OCL_ICD_VENDORS)",
                    written);
    } else if (dbk_icd_vulkan_replace_failing("libGLX_nvidia", "libEGL_nvidia.so.0", dir, written, sizeof written)) {
        dbk_log(DBK_LOG_LEVEL_INFO,
                "Vulkan: NVIDIA's libGLX_nvidia.so.0 starts no instance without a display; using libEGL_nvidia.so.0 "
                "through %s (VK_DRIVER_FILES)",
                written);
    }
}
