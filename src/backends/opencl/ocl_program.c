/*
 * ocl_program.c — the OpenCL backend's kernel program: source assembly, build, and the
 * on-disk binary cache (DESIGN.md decision 6, STYLE.md 3.7).
 *
 * Source: the .cl files of cl/ concatenated by ocl_source.c (embedded at build time, or read
 * from DBK_KERNEL_DIR), built as one program, once per backend.
 *
 * Cache: <dbk_env_cache_dir()>/opencl/<key>.bin in the format of core/kcache.h, key =
 * FNV-1a-64 of (cache format, source text, build options, device name, device version, driver
 * version, platform name and version). A file is handed to the driver only if it is a regular
 * file of at most DBK_KCACHE_MAX_BYTES whose magic, format, key, length, file checksum and
 * binary hash (of the key and the binary, recorded when the driver produced it) all match;
 * PoCL crashes rather than fails on some damaged binaries, so the binary hash keeps an altered
 * binary away from it. Anything else, or a binary the driver refuses or cannot build, counts
 * as rejected, is rebuilt from source and overwritten. Writes are atomic (temp file +
 * rename), so a crash never leaves half a file under the final name.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/opencl/ocl_internal.h"
#include "backends/opencl/ocl_source.h"
#include "core/alloc.h"
#include "core/fileio.h"
#include "core/kcache.h"
#include "core/log.h"
#include "core/profile.h"

/* ---------------------------------------------------------------------------------- */
/* the compiler's console output                                                      */

/* `text` as one line into out: line breaks and tabs become "; " and spaces, cut to fit. */
static void one_line(char *out, size_t size, const char *text) {
    size_t n = 0;
    for (const char *p = text; *p && n + 3 < size; p++) {
        if (*p == '\n') {
            if (p[1] && n > 0) { out[n++] = ';'; out[n++] = ' '; }
        } else {
            out[n++] = *p == '\t' || *p == '\r' ? ' ' : *p;
        }
    }
    out[n] = '\0';
}

/* The build log's first line that names an error (or its first line) into out. */
static void first_error_line(char *out, size_t size, const char *log) {
    const char *e = strstr(log, "error");
    if (!e) e = log;
    while (e > log && e[-1] != '\n') e--;
    const char *end = strchr(e, '\n');
    size_t len = end ? (size_t)(end - e) : strlen(e);
    snprintf(out, size, "%.*s", (int)(len < size ? len : size - 1), e);
}

/* clBuildProgram with file descriptor 2 pointed at a temp file: PoCL's compiler (clang, inside
 * this process) prints "78 warnings generated." or "3 errors generated." straight to fd 2,
 * not into the build log, and the console is daybreak's. What it printed is appended to
 * caught (the build log's companion): shown with the build log when the build fails, and at
 * info level (DBK_LOG=info) when it succeeds. fd 2 is process-wide, so another thread's stderr
 * output during the build lands there too; it is logged the same way, never dropped. */
static cl_int build_capturing_stderr(cl_program program, cl_device_id device, const char *options, dbk_strbuf *caught) {
    fflush(stderr);
    FILE *tmp = tmpfile();
    const int saved = tmp ? dup(STDERR_FILENO) : -1;
    const bool redirected = saved >= 0 && dup2(fileno(tmp), STDERR_FILENO) >= 0;
    const cl_int err = clBuildProgram(program, 1, &device, options, NULL, NULL);
    if (redirected) {
        fflush(stderr);
        dup2(saved, STDERR_FILENO);
        char chunk[1024];
        size_t n;
        rewind(tmp);
        while ((n = fread(chunk, 1, sizeof chunk, tmp)) > 0) dbk_strbuf_appendf(caught, "%.*s", (int)n, chunk);
        while (caught->len > 0 && caught->data[caught->len - 1] == '\n') caught->data[--caught->len] = '\0';
    }
    if (saved >= 0) close(saved);
    if (tmp) fclose(tmp);
    return err;
}

/* The compiler's console output of a build that succeeded, for DBK_LOG=info. */
static void log_caught(const dbk_strbuf *caught, const char *what) {
    if (caught->len == 0) return;
    dbk_log(DBK_LOG_LEVEL_INFO, "OpenCL compiler output while building %s:\n%s", what, dbk_strbuf_str(caught));
}

/* ---------------------------------------------------------------------------------- */
/* cache                                                                              */

static uint64_t cache_key(dbk_backend *be, const char *source, const char *options) {
    dbk_ocl_ctx *c = dbk_ocl(be);
    char pname[256] = "", pver[256] = "", dver[256] = "", devver[256] = "";
    clGetPlatformInfo(c->platform, CL_PLATFORM_NAME, sizeof pname - 1, pname, NULL);
    clGetPlatformInfo(c->platform, CL_PLATFORM_VERSION, sizeof pver - 1, pver, NULL);
    clGetDeviceInfo(c->device, CL_DRIVER_VERSION, sizeof dver - 1, dver, NULL);
    clGetDeviceInfo(c->device, CL_DEVICE_VERSION, sizeof devver - 1, devver, NULL);
    dbk_strbuf sb;
    dbk_strbuf_init(&sb);
    dbk_strbuf_appendf(&sb, "format %u\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n", DBK_KCACHE_FORMAT, options, be->info.name,
                       devver, dver, pname, pver, source);
    uint64_t key = sb.data ? dbk_fnv1a64(sb.data, sb.len) : 0;
    dbk_strbuf_deinit(&sb);
    return key;
}

/* Tries the cache file; true with c->program built from it, else false and no program. */
static bool load_cached(dbk_backend *be, const char *path, uint64_t key, const char *options) {
    dbk_ocl_ctx *c = dbk_ocl(be);
    const dbk_file_spec spec = {.what = "OpenCL kernel cache", .max_bytes = DBK_KCACHE_MAX_BYTES,
                                .head_bytes = DBK_KCACHE_HEAD_BYTES, .check_head = dbk_kcache_check_head};
    void *data = NULL;
    size_t size = 0;
    dbk_status st = dbk_file_read_spec(path, &spec, &data, &size);
    if (st == DBK_ERR_NOT_FOUND) {
        dbk_clear_error();
        return false;   /* no file yet: an ordinary miss */
    }
    char why_read[512] = "";
    const unsigned char *payload = NULL;
    size_t n = 0;
    const char *why = NULL;
    if (st != DBK_OK) {
        snprintf(why_read, sizeof why_read, "%s", dbk_last_error());
        dbk_clear_error();
        why = why_read;
    } else {
        why = dbk_kcache_check(data, size, key, &payload, &n);
    }
    bool ok = false;
    if (!why) {
        cl_int err, bin_status = CL_SUCCESS;
        c->program = clCreateProgramWithBinary(c->context, 1, &c->device, &n, &payload, &bin_status, &err);
        if (!c->program || err != CL_SUCCESS || bin_status != CL_SUCCESS) {
            why = "the driver refused the binary";
        } else {
            dbk_strbuf caught;
            dbk_strbuf_init(&caught);
            if ((err = build_capturing_stderr(c->program, c->device, options, &caught)) != CL_SUCCESS) {
                why = "the binary did not build";
            } else {
                ok = true;
                log_caught(&caught, "the cached kernels");
            }
            dbk_strbuf_deinit(&caught);
        }
        if (!ok && c->program) {
            clReleaseProgram(c->program);
            c->program = NULL;
        }
    }
    dbk_free(data);
    if (!ok) {
        c->stats.cache_rejected++;
        dbk_log(DBK_LOG_LEVEL_WARN, "OpenCL kernel cache %s not used (%s); rebuilding from source", path, why);
    }
    return ok;
}

static void store_cache(dbk_backend *be, const char *dir, const char *path, uint64_t key) {
    dbk_ocl_ctx *c = dbk_ocl(be);
    size_t n = 0;
    if (clGetProgramInfo(c->program, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, NULL) != CL_SUCCESS || n == 0) return;
    unsigned char *file = dbk_malloc(DBK_KCACHE_HEADER_BYTES + n);
    if (!file) return;
    unsigned char *payload = file + DBK_KCACHE_HEADER_BYTES;
    if (clGetProgramInfo(c->program, CL_PROGRAM_BINARIES, sizeof payload, &payload, NULL) != CL_SUCCESS) {
        dbk_free(file);
        return;
    }
    dbk_kcache_seal(file, key, n);
    if (dbk_mkdir_p(dir) == DBK_OK && dbk_file_write_atomic(path, file, DBK_KCACHE_HEADER_BYTES + n) == DBK_OK) {
        c->stats.cache_written++;
        dbk_log(DBK_LOG_LEVEL_INFO, "OpenCL kernels cached in %s", path);
    } else {
        dbk_log(DBK_LOG_LEVEL_WARN, "OpenCL kernel cache not written: %s", dbk_last_error());
        dbk_clear_error();
    }
    dbk_free(file);
}

/* ---------------------------------------------------------------------------------- */
/* build                                                                              */

static dbk_status build_from_source(dbk_backend *be, const char *source, const char *options) {
    dbk_ocl_ctx *c = dbk_ocl(be);
    cl_int err;
    size_t len = strlen(source);
    c->program = clCreateProgramWithSource(c->context, 1, &source, &len, &err);
    if (!c->program) return dbk_ocl_fail(be, err, "creating the kernel program");
    dbk_strbuf caught;
    dbk_strbuf_init(&caught);
    err = build_capturing_stderr(c->program, c->device, options, &caught);
    c->stats.from_source++;
    if (err == CL_SUCCESS) {
        log_caught(&caught, "the kernels");
        dbk_strbuf_deinit(&caught);
        return DBK_OK;
    }
    size_t log_len = 0;
    clGetProgramBuildInfo(c->program, c->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &log_len);
    char *log = dbk_malloc(log_len + 1);
    if (log) {
        log[0] = '\0';
        clGetProgramBuildInfo(c->program, c->device, CL_PROGRAM_BUILD_LOG, log_len, log, NULL);
        log[log_len] = '\0';
    }
    /* The error is one line: the compiler's summary ("3 errors generated.") and the log's first
     * error; the whole log goes to the info log (DBK_LOG=info). */
    dbk_log(DBK_LOG_LEVEL_INFO, "OpenCL build log (%zu bytes, options %s):\n%s", log_len, options,
            log ? log : "(unavailable)");
    char summary[256], first[512];
    one_line(summary, sizeof summary, caught.len ? dbk_strbuf_str(&caught) : "no compiler output");
    first_error_line(first, sizeof first, log ? log : "(build log unavailable)");
    dbk_status st = dbk_ocl_fail(be, err, "building the kernels (options %s): compiler output: %s; build log, first error: %s (DBK_LOG=info prints the whole log)",
                                 options, summary, first);
    dbk_strbuf_deinit(&caught);
    dbk_free(log);
    clReleaseProgram(c->program);
    c->program = NULL;
    return st;
}

dbk_status dbk_ocl_build_program(dbk_backend *be, const char *options) {
    dbk_ocl_ctx *c = dbk_ocl(be);
    dbk_strbuf src;
    dbk_strbuf_init(&src);
    dbk_status st = dbk_ocl_source_assemble(&src);
    if (st != DBK_OK) {
        dbk_strbuf_deinit(&src);
        return st;
    }
    char root[2048], dir[2100], path[2200];
    dbk_env_cache_dir(root, sizeof root);
    uint64_t key = cache_key(be, src.data, options);
    c->stats.cache_file[0] = '\0';
    if (root[0]) {
        snprintf(dir, sizeof dir, "%s/opencl", root);
        snprintf(path, sizeof path, "%s/%016llx.bin", dir, (unsigned long long)key);
        snprintf(c->stats.cache_file, sizeof c->stats.cache_file, "%s", path);
        if (load_cached(be, path, key, options)) {
            c->stats.from_cache++;
            dbk_log(DBK_LOG_LEVEL_INFO, "OpenCL kernels loaded from the cache %s", path);
            dbk_strbuf_deinit(&src);
            return DBK_OK;
        }
    }
    st = build_from_source(be, src.data, options);
    dbk_strbuf_deinit(&src);
    if (st == DBK_OK && root[0]) store_cache(be, dir, path, key);
    return st;
}
