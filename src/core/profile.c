/*
 * profile.c — hardware profiles and environment knobs (see profile.h).
 *
 * Profiles are parsed on demand with cJSON: the set is a few kilobytes, read when a backend
 * is created or a report is made, never inside a training step.
 */
#define _POSIX_C_SOURCE 200809L
#include "core/profile.h"

#include <ctype.h>
#include <math.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/embedded.h"
#include "core/alloc.h"
#include "core/fileio.h"
#include "core/log.h"

struct dbk_profile {
    cJSON *root;
    char   id[64];
};

/* --- the profile sources: embedded table or DBK_PLATFORMS_DIR ----------------------- */

static const char *platforms_dir(void) {
    const char *d = getenv("DBK_PLATFORMS_DIR");
    return d && *d ? d : NULL;
}

typedef struct source_list {
    char  **names;   /* file names */
    int     count;
} source_list;

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void source_list_free(source_list *l) {
    for (int i = 0; i < l->count; i++) free(l->names[i]);
    free(l->names);
    l->names = NULL;
    l->count = 0;
}

/* Lists the profile files, sorted by name so matching ties resolve the same way everywhere. */
static dbk_status list_sources(source_list *out) {
    memset(out, 0, sizeof *out);
    const char *dir = platforms_dir();
    if (!dir) {
        out->names = calloc((size_t)dbk_platform_files_count + 1, sizeof *out->names);
        if (!out->names) return DBK_ERR_OUT_OF_HOST_MEMORY;
        for (int i = 0; i < dbk_platform_files_count; i++) {
            out->names[out->count] = strdup(dbk_platform_files[i].name);
            if (!out->names[out->count]) return DBK_ERR_OUT_OF_HOST_MEMORY;
            out->count++;
        }
    } else {
        DIR *d = opendir(dir);
        if (!d) return dbk_set_error(DBK_ERR_IO, "DBK_PLATFORMS_DIR=%s: cannot open the folder: %s", dir, strerror(errno));
        struct dirent *e;
        while ((e = readdir(d))) {
            size_t n = strlen(e->d_name);
            if (n < 6 || strcmp(e->d_name + n - 5, ".json")) continue;
            char **grown = realloc(out->names, sizeof *grown * (size_t)(out->count + 1));
            if (!grown) {
                closedir(d);
                return DBK_ERR_OUT_OF_HOST_MEMORY;
            }
            out->names = grown;
            if (!(out->names[out->count] = strdup(e->d_name))) {
                closedir(d);
                return DBK_ERR_OUT_OF_HOST_MEMORY;
            }
            out->count++;
        }
        closedir(d);
    }
    if (out->count > 1) qsort(out->names, (size_t)out->count, sizeof *out->names, cmp_str); /* names NULL when none */
    return DBK_OK;
}

/* --- the keys daybreak reads, and their types ------------------------------------------ */

typedef enum key_type { KEY_STRING, KEY_NUMBER, KEY_OBJECT, KEY_STRINGS } key_type;

/* Every key some part of daybreak reads (profile.h's schema and the backends'): a profile whose
 * key has another type fails to load, naming the key, instead of the reader silently taking
 * its fallback ("opencl.gemm": 5 would have meant CLBlast). "a.*" types every member of object
 * a. Other keys (comments, the "tuned" record, conv_by_shape's layers) are not checked here; a
 * new key a reader takes from profiles belongs in this table. Numbers must be finite and >= 0. */
static const struct {
    const char *path;
    key_type    type;
} known_keys[] = {
    {"id", KEY_STRING}, {"name", KEY_STRING}, {"vendor", KEY_STRING}, {"match", KEY_STRINGS},
    {"backends", KEY_STRINGS}, {"source", KEY_STRING}, {"generated", KEY_STRING},
    {"peak_fp32_gflops", KEY_NUMBER}, {"peak_fp16_gflops", KEY_NUMBER}, {"mem_bandwidth_gbs", KEY_NUMBER},
    {"mem_bandwidth_source", KEY_STRING}, {"cloud", KEY_OBJECT}, {"cloud.provider", KEY_STRING},
    {"cloud.instance", KEY_STRING}, {"cloud.price_per_hour", KEY_NUMBER}, {"tuned", KEY_OBJECT},
    {"opencl", KEY_OBJECT}, {"opencl.gemm", KEY_STRING}, {"opencl.gemm_tiled", KEY_OBJECT},
    {"opencl.gemm_tiled.*", KEY_NUMBER}, {"opencl.clblast_xgemm", KEY_OBJECT}, {"opencl.clblast_xgemm.*", KEY_NUMBER},
    {"opencl.conv_algorithm", KEY_STRING}, {"opencl.conv_by_shape", KEY_OBJECT},
    {"opencl.conv_workspace_mb", KEY_NUMBER}, {"opencl.winograd_min_channels", KEY_NUMBER},
    {"opencl.winograd_workspace_mb", KEY_NUMBER}, {"vulkan", KEY_OBJECT}, {"vulkan.block_mib", KEY_NUMBER},
    {"vulkan.wg", KEY_NUMBER}, {"vulkan.conv", KEY_OBJECT}, {"vulkan.conv.*", KEY_NUMBER}, {"vulkan.gemm", KEY_OBJECT},
    {"vulkan.gemm.*", KEY_NUMBER}, {"vulkan.conv_algorithm", KEY_STRING}, {"vulkan.conv_by_shape", KEY_OBJECT},
    {"vulkan.winograd_min_channels", KEY_NUMBER}, {"vulkan.winograd_workspace_mb", KEY_NUMBER},
};

static const char *type_name(key_type t) {
    return t == KEY_STRING ? "a string" : t == KEY_NUMBER ? "a number >= 0" : t == KEY_OBJECT ? "an object" : "a list of strings";
}

static bool has_type(const cJSON *v, key_type t) {
    if (t == KEY_STRING) return cJSON_IsString(v);
    if (t == KEY_NUMBER) return cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble >= 0.0;
    if (t == KEY_OBJECT) return cJSON_IsObject(v);
    if (!cJSON_IsArray(v)) return false;
    const cJSON *e;
    cJSON_ArrayForEach(e, v) if (!cJSON_IsString(e)) return false;
    return true;
}

/* The value at a dotted path ("a.b"), NULL when absent. */
static const cJSON *at_path(const cJSON *root, const char *path) {
    char key[96];
    const cJSON *node = root;
    while (node && *path) {
        const size_t len = strcspn(path, ".");
        if (len >= sizeof key) return NULL;
        memcpy(key, path, len);
        key[len] = '\0';
        node = cJSON_IsObject(node) ? cJSON_GetObjectItemCaseSensitive(node, key) : NULL;
        path += len + (path[len] == '.');
    }
    return node;
}

static dbk_status check_types(const cJSON *root, const char *where) {
    for (size_t i = 0; i < sizeof known_keys / sizeof known_keys[0]; i++) {
        const char *path = known_keys[i].path;
        const size_t len = strlen(path);
        const bool members = len > 2 && !strcmp(path + len - 2, ".*");
        char parent[96];
        snprintf(parent, sizeof parent, "%.*s", (int)(members ? len - 2 : len), path);
        const cJSON *v = at_path(root, parent);
        if (!v) continue;
        if (!members) {
            if (!has_type(v, known_keys[i].type))
                return dbk_set_error(DBK_ERR_FORMAT, "%s: \"%s\" must be %s", where, path, type_name(known_keys[i].type));
            continue;
        }
        const cJSON *m;
        cJSON_ArrayForEach(m, v) if (!has_type(m, known_keys[i].type))
            return dbk_set_error(DBK_ERR_FORMAT, "%s: \"%s.%s\" must be %s", where, parent, m->string,
                                 type_name(known_keys[i].type));
    }
    return DBK_OK;
}

dbk_status dbk_profile_parse(const char *text, size_t n, const char *where, dbk_profile **out) {
    *out = NULL;
    cJSON *root = cJSON_ParseWithLength(text, n);
    const cJSON *id = root ? cJSON_GetObjectItemCaseSensitive(root, "id") : NULL;
    if (!cJSON_IsObject(root) || !cJSON_IsString(id) || strlen(id->valuestring) >= sizeof(((dbk_profile *)0)->id)) {
        cJSON_Delete(root);
        return dbk_set_error(DBK_ERR_FORMAT, "%s: not a profile (a JSON object with a string \"id\" is expected)",
                             where);
    }
    dbk_status st = check_types(root, where);
    if (st != DBK_OK) {
        cJSON_Delete(root);
        return st;
    }
    dbk_profile *p = calloc(1, sizeof *p);
    if (!p) {
        cJSON_Delete(root);
        return DBK_ERR_OUT_OF_HOST_MEMORY;
    }
    p->root = root;
    snprintf(p->id, sizeof p->id, "%s", id->valuestring);
    *out = p;
    return DBK_OK;
}

bool dbk_profile_file_is_profile(const char *path) {
    const dbk_file_spec spec = {.what = "platform profile", .max_bytes = DBK_PROFILE_MAX_BYTES};
    void *text;
    size_t n;
    if (dbk_file_read_spec(path, &spec, &text, &n) != DBK_OK) return false;
    dbk_profile *p = NULL;
    const bool ok = dbk_profile_parse(text, n, path, &p) == DBK_OK;
    dbk_profile_destroy(p);
    dbk_free(text);
    return ok;
}

/* Where a profile file comes from, for messages: "<dir>/<name>" or "platforms/<name> (embedded)". */
static void source_where(const char *name, char *where, size_t cap) {
    const char *dir = platforms_dir();
    if (dir) snprintf(where, cap, "%s/%s", dir, name);
    else snprintf(where, cap, "platforms/%s (embedded)", name);
}

/* Parses one profile file by name. */
static dbk_status parse_source(const char *name, dbk_profile **out) {
    *out = NULL;
    char where[4200];
    source_where(name, where, sizeof where);
    if (!platforms_dir()) {
        const dbk_embedded_file *f = dbk_embedded_find(dbk_platform_files, dbk_platform_files_count, name);
        if (!f) return dbk_set_error(DBK_ERR_NOT_FOUND, "no embedded profile %s", name);
        return dbk_profile_parse((const char *)f->data, f->size, where, out);
    }
    const dbk_file_spec spec = {.what = "platform profile", .max_bytes = DBK_PROFILE_MAX_BYTES};
    void *text;
    size_t n;
    DBK_TRY(dbk_file_read_spec(where, &spec, &text, &n));
    dbk_status st = dbk_profile_parse(text, n, where, out);
    dbk_free(text);
    return st;
}

/* Every profile of the source set, parsed, in file-name order. */
typedef struct profile_set {
    source_list   files;
    dbk_profile **items;   /* (files.count); an entry may be taken (set to NULL) by the caller */
} profile_set;

static void profile_set_free(profile_set *set) {
    for (int i = 0; set->items && i < set->files.count; i++) dbk_profile_destroy(set->items[i]);
    free(set->items);
    set->items = NULL;
    source_list_free(&set->files);
}

/* Parses every profile and refuses two files with the same id (one device family's numbers
 * must never be silently replaced by another's). */
static dbk_status load_profiles(profile_set *set) {
    set->items = NULL;
    DBK_TRY(list_sources(&set->files));
    set->items = calloc((size_t)set->files.count + 1, sizeof *set->items);
    dbk_status st = set->items ? DBK_OK : DBK_ERR_OUT_OF_HOST_MEMORY;
    for (int i = 0; st == DBK_OK && i < set->files.count; i++) {
        st = parse_source(set->files.names[i], &set->items[i]);
        for (int j = 0; st == DBK_OK && j < i; j++) {
            if (strcmp(set->items[i]->id, set->items[j]->id)) continue;
            char first[4200], second[4200];
            source_where(set->files.names[j], first, sizeof first);
            source_where(set->files.names[i], second, sizeof second);
            st = dbk_set_error(DBK_ERR_FORMAT, "duplicate platform profile id '%s' in %s and %s; ids must be unique",
                               set->items[i]->id, first, second);
        }
    }
    if (st != DBK_OK) profile_set_free(set);
    return st;
}

/* --- matching ------------------------------------------------------------------------ */

static bool contains_nocase(const char *hay, const char *needle) {
    size_t n = strlen(needle);
    if (n == 0) return false;
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i])) i++;
        if (i == n) return true;
    }
    return false;
}

/* Length of the longest "match" entry found in the device name (0 = no match), or -1 when the
 * profile is restricted to other backends. */
static int match_score(const dbk_profile *p, const char *backend, const char *device_name) {
    const cJSON *backends = cJSON_GetObjectItemCaseSensitive(p->root, "backends");
    if (cJSON_IsArray(backends)) {
        bool listed = false;
        const cJSON *b;
        cJSON_ArrayForEach(b, backends) if (cJSON_IsString(b) && !strcmp(b->valuestring, backend)) listed = true;
        if (!listed) return -1;
    }
    int best = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(p->root, "match")) {
        if (cJSON_IsString(m) && contains_nocase(device_name, m->valuestring)) {
            int len = (int)strlen(m->valuestring);
            if (len > best) best = len;
        }
    }
    return best;
}

void dbk_profile_tuned_path(const char *backend, const char *device_name, char *out, size_t cap) {
    char dir[4096];
    dbk_env_cache_dir(dir, sizeof dir);
    if (!*dir) {
        snprintf(out, cap, "%s", "");
        return;
    }
    /* The device name as a file name: letters and digits kept, runs of anything else one '-'. */
    char slug[128];
    size_t n = 0;
    for (const char *c = device_name; *c && n + 1 < sizeof slug; c++) {
        if (isalnum((unsigned char)*c)) slug[n++] = (char)tolower((unsigned char)*c);
        else if (n && slug[n - 1] != '-') slug[n++] = '-';
    }
    while (n && slug[n - 1] == '-') n--;
    slug[n] = '\0';
    snprintf(out, cap, "%s/profiles/%s-%s.json", dir, backend, n ? slug : "device");
}

/* The profile `daybreak tune` wrote for exactly this device and backend, if there is one: its
 * "tuned" block names both, so a file copied or renamed for another device is not taken. */
static dbk_status tuned_profile(const char *backend, const char *device_name, dbk_profile **out) {
    *out = NULL;
    if (platforms_dir()) return DBK_OK;   /* DBK_PLATFORMS_DIR replaces every profile source */
    char path[4400];
    dbk_profile_tuned_path(backend, device_name, path, sizeof path);
    if (!*path) return DBK_OK;
    const dbk_file_spec spec = {.what = "tuned profile", .max_bytes = DBK_PROFILE_MAX_BYTES};
    void *text;
    size_t n;
    dbk_status st = dbk_file_read_spec(path, &spec, &text, &n);
    if (st == DBK_ERR_NOT_FOUND) return DBK_OK;
    DBK_TRY(st);
    st = dbk_profile_parse(text, n, path, out);
    dbk_free(text);
    DBK_TRY(st);
    if (strcmp(dbk_profile_string(*out, "tuned.device", ""), device_name) ||
        strcmp(dbk_profile_string(*out, "tuned.backend", ""), backend)) {
        dbk_log(DBK_LOG_LEVEL_WARN, "%s: tuned for another device or backend; not used", path);
        dbk_profile_destroy(*out);
        *out = NULL;
    }
    return DBK_OK;
}

dbk_status dbk_profile_for_device(const char *backend, const char *device_name, dbk_profile **out) {
    *out = NULL;
    DBK_TRY(tuned_profile(backend, device_name, out));
    if (*out) {
        dbk_log(DBK_LOG_LEVEL_INFO, "profile %s for %s device '%s', tuned by daybreak tune", (*out)->id, backend,
                device_name);
        return DBK_OK;
    }
    return dbk_profile_builtin_for_device(backend, device_name, out);
}

dbk_status dbk_profile_builtin_for_device(const char *backend, const char *device_name, dbk_profile **out) {
    *out = NULL;
    profile_set set;
    DBK_TRY(load_profiles(&set));
    int best = -1, best_score = 0;
    for (int i = 0; i < set.files.count; i++) {
        int score = match_score(set.items[i], backend, device_name);
        if (score > best_score) {
            best = i;
            best_score = score;
        }
    }
    if (best >= 0) {
        *out = set.items[best];
        set.items[best] = NULL;
    }
    profile_set_free(&set);
    if (!*out) return dbk_profile_by_id("default", out);
    dbk_log(DBK_LOG_LEVEL_INFO, "profile %s for %s device '%s'", (*out)->id, backend, device_name);
    return DBK_OK;
}

dbk_status dbk_profile_by_id(const char *id, dbk_profile **out) {
    *out = NULL;
    profile_set set;
    DBK_TRY(load_profiles(&set));
    char known[2048] = "";
    for (int i = 0; i < set.files.count && !*out; i++) {
        if (!strcmp(set.items[i]->id, id)) {
            *out = set.items[i];
            set.items[i] = NULL;
            break;
        }
        size_t used = strlen(known);
        snprintf(known + used, sizeof known - used, "%s%s", used ? ", " : "", set.items[i]->id);
    }
    profile_set_free(&set);
    if (!*out) return dbk_set_error(DBK_ERR_NOT_FOUND, "unknown platform profile '%s' (known: %s)", id, known);
    return DBK_OK;
}

void dbk_profile_destroy(dbk_profile *p) {
    if (!p) return;
    cJSON_Delete(p->root);
    free(p);
}

const char *dbk_profile_id(const dbk_profile *p) { return p->id; }

char *dbk_profile_print(const dbk_profile *p) { return cJSON_Print(p->root); }

/* The item at a dotted path, or NULL. */
static const cJSON *lookup(const dbk_profile *p, const char *path) {
    const cJSON *node = p->root;
    char key[128];
    while (node && *path) {
        size_t len = strcspn(path, ".");
        if (len >= sizeof key) return NULL;
        memcpy(key, path, len);
        key[len] = '\0';
        node = cJSON_GetObjectItemCaseSensitive(node, key);
        path += len;
        if (*path == '.') path++;
    }
    return node;
}

double dbk_profile_number(const dbk_profile *p, const char *dotted_path, double fallback) {
    const cJSON *n = lookup(p, dotted_path);
    return cJSON_IsNumber(n) ? n->valuedouble : fallback;
}

const char *dbk_profile_string(const dbk_profile *p, const char *dotted_path, const char *fallback) {
    const cJSON *n = lookup(p, dotted_path);
    return cJSON_IsString(n) ? n->valuestring : fallback;
}

bool dbk_profile_has(const dbk_profile *p, const char *dotted_path) { return lookup(p, dotted_path) != NULL; }

const char *dbk_profile_member(const dbk_profile *p, const char *dotted_path, int index, char *key, size_t cap) {
    const cJSON *obj = lookup(p, dotted_path);
    if (!cJSON_IsObject(obj)) return NULL;
    const cJSON *m = obj->child;
    for (int i = 0; m && i < index; i++) m = m->next;
    if (!m) return NULL;
    snprintf(key, cap, "%s", m->string ? m->string : "");
    return cJSON_IsString(m) ? m->valuestring : "";
}

dbk_status dbk_profile_check_all(int *count) {
    profile_set set;
    DBK_TRY(load_profiles(&set));
    *count = set.files.count;
    profile_set_free(&set);
    if (*count == 0)
        return dbk_set_error(DBK_ERR_NOT_FOUND, "DBK_PLATFORMS_DIR=%s holds no *.json profile", platforms_dir());
    return DBK_OK;
}

int dbk_profile_count(void) {
    profile_set set;
    if (load_profiles(&set) != DBK_OK) return 0;
    int n = set.files.count;
    profile_set_free(&set);
    return n;
}

const char *dbk_profile_id_at(int index) {
    /* Ids are read from the files (the id, not the file name, is what users type). The
     * returned string lives in a thread-local buffer until the next call. */
    static _Thread_local char id[64];
    profile_set set;
    if (load_profiles(&set) != DBK_OK) return NULL;
    const char *result = NULL;
    if (index >= 0 && index < set.files.count) {
        snprintf(id, sizeof id, "%s", set.items[index]->id);
        result = id;
    }
    profile_set_free(&set);
    return result;
}

/* --- environment knobs ------------------------------------------------------------------ */

const char *dbk_env_platforms_dir(void) { return platforms_dir(); }

const char *dbk_env_kernel_dir(void) {
    const char *d = getenv("DBK_KERNEL_DIR");
    if (!d || !*d) return NULL;
    dbk_log(DBK_LOG_LEVEL_INFO, "DBK_KERNEL_DIR=%s: kernels are loaded from there, not the embedded copies", d);
    return d;
}

void dbk_env_cache_dir(char *out, size_t cap) {
    const char *d = getenv("DBK_CACHE_DIR");
    if (d && !strcmp(d, "off")) {
        snprintf(out, cap, "%s", "");
        dbk_log(DBK_LOG_LEVEL_INFO, "DBK_CACHE_DIR=off: compiled kernels are not cached");
        return;
    }
    if (d && *d) {
        snprintf(out, cap, "%s", d);
        return;
    }
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && *xdg) snprintf(out, cap, "%s/daybreak", xdg);
    else if (home && *home) snprintf(out, cap, "%s/.cache/daybreak", home);
    else snprintf(out, cap, "%s", "");
}

const char *dbk_env_shader_dir(void) {
    const char *d = getenv("DBK_SHADER_DIR");
    if (!d || !*d) return NULL;
    dbk_log(DBK_LOG_LEVEL_INFO, "DBK_SHADER_DIR=%s: Vulkan shaders found there replace the embedded copies", d);
    return d;
}

bool dbk_env_vk_staged(void) {
    const char *v = getenv("DBK_VK_MEMORY");
    if (!v || !*v || !strcmp(v, "auto")) return false;
    if (strcmp(v, "staged")) {
        dbk_log(DBK_LOG_LEVEL_WARN, "DBK_VK_MEMORY=%s is neither staged nor auto; ignored", v);
        return false;
    }
    dbk_log(DBK_LOG_LEVEL_INFO, "DBK_VK_MEMORY=staged: Vulkan buffers in device-local memory the host does not map, "
            "copied through a staging buffer");
    return true;
}

bool dbk_env_vk_validation(void) {
    const char *v = getenv("DBK_VK_VALIDATION");
    if (!v || !*v || !strcmp(v, "0")) return false;
    dbk_log(DBK_LOG_LEVEL_INFO, "DBK_VK_VALIDATION=%s: Vulkan validation layer with synchronisation validation", v);
    return true;
}

const char *dbk_env_force_conv(void) {
    const char *v = getenv("DBK_FORCE_CONV");
    if (!v || !*v) return NULL;
    dbk_log(DBK_LOG_LEVEL_INFO, "DBK_FORCE_CONV=%s: overrides the profile's convolution algorithm", v);
    return v;
}

bool dbk_env_fusion(void) {
    const char *v = getenv("DBK_FUSE");
    if (!v || strcmp(v, "0")) return true;
    dbk_log(DBK_LOG_LEVEL_INFO, "DBK_FUSE=0: batch norm, ReLU and residual add run as separate ops (no fusion)");
    return false;
}

long dbk_env_tune_corrupt(void) {
    const char *v = getenv("DBK_TUNE_CORRUPT");
    if (!v || !*v) return 0;
    char *end;
    long n = strtol(v, &end, 10);
    if (*end || n < 1) {
        dbk_log(DBK_LOG_LEVEL_WARN, "DBK_TUNE_CORRUPT=%s is not a candidate number (1, 2, ...); ignored", v);
        return 0;
    }
    dbk_log(DBK_LOG_LEVEL_INFO, "DBK_TUNE_CORRUPT=%ld: tune corrupts that candidate's results (a test hook)", n);
    return n;
}
