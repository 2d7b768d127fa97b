/*
 * ocl_device.c — the OpenCL backend's devices and lifetime: every platform and device the ICD
 * loader reports, their description for `daybreak devices`, backend creation (context,
 * in-order profiling queue, the device's profile, the kernel program, GEMM setup) and
 * destruction, and the vtable (OpenCL error names: ocl_error.c).
 *
 * Device indices run over platforms in the loader's order, then devices in each platform's
 * order (CL_DEVICE_TYPE_ALL). Nothing is cached between calls: the registry asks for counts
 * and info rarely, and enumerating is cheap, so no global holds a device handle (STYLE.md);
 * only the missing-NVIDIA-ICD fix below, once per process, sets the loader's OCL_ICD_VENDORS.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/icd.h"
#include "backend/tiles.h"
#include "backends/opencl/ocl_internal.h"
#include "core/alloc.h"
#include "core/log.h"
#include "core/profile.h"

/* ---------------------------------------------------------------------------------- */
/* enumeration                                                                        */

#define MAX_PLATFORMS 16
#define MAX_DEVICES   64

/* A container with the NVIDIA driver but without /etc/OpenCL/vendors/nvidia.icd (the lent H200,
 * docs/gpu.md): the loader lists no GPU. Once per process, before the first OpenCL call (the
 * ICD loader reads its vendors once), when /dev/nvidiactl exists and OCL_ICD_VENDORS is unset:
 * the ICD files found and one naming libnvidia-opencl.so.1 go to the cache folder, and
 * OCL_ICD_VENDORS points there (backend/icd.h). Costs one stat() on other machines. */
static void add_missing_nvidia_icd(void) {
    if (dbk_icd_nvidia_fix_allowed(DBK_ICD_OPENCL)) dbk_icd_nvidia_fix(DBK_ICD_OPENCL);
}

static int list_platforms(cl_platform_id *out) {
    static pthread_once_t icd_once = PTHREAD_ONCE_INIT;
    pthread_once(&icd_once, add_missing_nvidia_icd);
    cl_uint n = 0;
    if (clGetPlatformIDs(MAX_PLATFORMS, out, &n) != CL_SUCCESS) return 0;
    return n > MAX_PLATFORMS ? MAX_PLATFORMS : (int)n;
}

static int list_devices(cl_platform_id p, cl_device_id *out) {
    cl_uint n = 0;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, MAX_DEVICES, out, &n) != CL_SUCCESS) return 0;
    return n > MAX_DEVICES ? MAX_DEVICES : (int)n;
}

static int ocl_device_count(void) {
    cl_platform_id plats[MAX_PLATFORMS];
    cl_device_id devs[MAX_DEVICES];
    int total = 0, np = list_platforms(plats);
    for (int i = 0; i < np; i++) total += list_devices(plats[i], devs);
    return total;
}

dbk_status dbk_ocl_find_device(int index, cl_platform_id *platform, cl_device_id *device) {
    cl_platform_id plats[MAX_PLATFORMS];
    cl_device_id devs[MAX_DEVICES];
    int np = list_platforms(plats), seen = 0;
    for (int i = 0; i < np; i++) {
        int nd = list_devices(plats[i], devs);
        if (index < seen + nd) {
            *platform = plats[i];
            *device = devs[index - seen];
            return DBK_OK;
        }
        seen += nd;
    }
    return dbk_set_error(DBK_ERR_NOT_FOUND, "opencl device %d does not exist (%d found)", index, seen);
}

static void dev_str(cl_device_id d, cl_device_info what, char *out, size_t cap) {
    out[0] = '\0';
    if (clGetDeviceInfo(d, what, cap, out, NULL) != CL_SUCCESS) out[0] = '\0';
    out[cap - 1] = '\0';
}

static void plat_str(cl_platform_id p, cl_platform_info what, char *out, size_t cap) {
    out[0] = '\0';
    if (clGetPlatformInfo(p, what, cap, out, NULL) != CL_SUCCESS) out[0] = '\0';
    out[cap - 1] = '\0';
}

static cl_ulong dev_ulong(cl_device_id d, cl_device_info what) {
    cl_ulong v = 0;
    if (clGetDeviceInfo(d, what, sizeof v, &v, NULL) != CL_SUCCESS) return 0;
    return v;
}

static cl_uint dev_uint(cl_device_id d, cl_device_info what) {
    cl_uint v = 0;
    if (clGetDeviceInfo(d, what, sizeof v, &v, NULL) != CL_SUCCESS) return 0;
    return v;
}

static void describe(cl_platform_id p, cl_device_id d, dbk_device_info *out) {
    char pname[128], pver[128], dver[128], cver[128], ext[8192];
    memset(out, 0, sizeof *out);
    dev_str(d, CL_DEVICE_NAME, out->name, sizeof out->name);
    dev_str(d, CL_DEVICE_VENDOR, out->vendor, sizeof out->vendor);
    plat_str(p, CL_PLATFORM_NAME, pname, sizeof pname);
    plat_str(p, CL_PLATFORM_VERSION, pver, sizeof pver);
    dev_str(d, CL_DRIVER_VERSION, dver, sizeof dver);
    dev_str(d, CL_DEVICE_OPENCL_C_VERSION, cver, sizeof cver);
    dev_str(d, CL_DEVICE_EXTENSIONS, ext, sizeof ext);
    snprintf(out->driver, sizeof out->driver, "%s %s", pname, dver);
    char dev_version[96];
    dev_str(d, CL_DEVICE_VERSION, dev_version, sizeof dev_version);
    snprintf(out->api_version, sizeof out->api_version, "%s, %s", dev_version, cver);
    cl_device_type type = 0;
    clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    out->type = (type & CL_DEVICE_TYPE_GPU) ? DBK_DEVICE_TYPE_GPU
              : (type & CL_DEVICE_TYPE_CPU) ? DBK_DEVICE_TYPE_CPU : DBK_DEVICE_TYPE_OTHER;
    out->compute_units = (int)dev_uint(d, CL_DEVICE_MAX_COMPUTE_UNITS);
    out->global_mem_bytes = dev_ulong(d, CL_DEVICE_GLOBAL_MEM_SIZE);
    out->max_alloc_bytes = dev_ulong(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
    out->local_mem_bytes = dev_ulong(d, CL_DEVICE_LOCAL_MEM_SIZE);
    out->vendor_id = dev_uint(d, CL_DEVICE_VENDOR_ID);
    /* CL_DEVICE_UUID_KHR of cl_khr_device_uuid (0x106A; older headers lack the name). */
    out->has_uuid = strstr(ext, "cl_khr_device_uuid") &&
                    clGetDeviceInfo(d, 0x106A, sizeof out->uuid, out->uuid, NULL) == CL_SUCCESS;
    out->fp16 = strstr(ext, "cl_khr_fp16") != NULL;
    snprintf(out->fp16_missing, sizeof out->fp16_missing, "%s",
             out->fp16 ? "fp16 kernels, which daybreak's OpenCL backend does not have yet (the device has cl_khr_fp16)"
                       : "the OpenCL extension cl_khr_fp16");
    cl_bool unified = CL_FALSE;
    clGetDeviceInfo(d, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, NULL);
    snprintf(out->memory, sizeof out->memory, "%s; buffers written and read by clEnqueueWrite/ReadBuffer",
             unified ? "memory unified with the host's" : "device memory apart from the host's");
    size_t max_wg = 0;
    clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof max_wg, &max_wg, NULL);
    snprintf(out->details, sizeof out->details,
             "platform %s (%s); %s; max work-group %zu, local memory %llu KiB, base alignment %u bits; "
             "fp64 %s, fp16 %s",
             pname, pver, cver, max_wg, (unsigned long long)(out->local_mem_bytes / 1024),
             dev_uint(d, CL_DEVICE_MEM_BASE_ADDR_ALIGN), strstr(ext, "cl_khr_fp64") ? "yes" : "no",
             out->fp16 ? "yes" : "no");
}

static dbk_status ocl_device_info(int index, dbk_device_info *out) {
    cl_platform_id p;
    cl_device_id d;
    DBK_TRY(dbk_ocl_find_device(index, &p, &d));
    describe(p, d, out);
    return DBK_OK;
}

/* ---------------------------------------------------------------------------------- */
/* create / destroy                                                                   */

static void ocl_destroy(dbk_backend *be) {
    dbk_ocl_ctx *c = be->impl;
    if (!c) return;
    if (c->queue) clFinish(c->queue);
    dbk_ocl_staging_release(c);
    if (c->workspace) clReleaseMemObject(c->workspace);
    if (c->blas_temp) clReleaseMemObject(c->blas_temp);
    if (c->program) clReleaseProgram(c->program);
    if (c->queue) clReleaseCommandQueue(c->queue);
    if (c->context) clReleaseContext(c->context);
    dbk_free(c);
    be->impl = NULL;
}

static const dbk_backend_vtable ocl_vtable = {
    .name         = "opencl",
    .destroy      = ocl_destroy,
    .buffer_alloc = dbk_ocl_buffer_alloc,
    .buffer_free  = dbk_ocl_buffer_free,
    .buffer_write = dbk_ocl_buffer_write,
    .buffer_read  = dbk_ocl_buffer_read,
    .sync         = dbk_ocl_sync,
    .run_op            = dbk_ocl_run_op,
    .op_supported      = dbk_ocl_op_supported,
    .op_algorithm      = dbk_ocl_conv_op_algorithm,
    .prepare           = dbk_ocl_prepare,
    .program_record    = dbk_ocl_program_record,
    .program_release   = dbk_ocl_program_release,
    .program_run       = dbk_ocl_program_run,
    .program_run_timed = dbk_ocl_program_run_timed,
    .program_op_launches = dbk_ocl_program_op_launches,
};

/* A whole number from the profile, bounded to [lo, hi]. */
static int profile_int(const dbk_profile *p, const char *path, int fallback, int lo, int hi) {
    double v = dbk_profile_number(p, path, (double)fallback);
    if (!(v >= lo && v <= hi)) {
        dbk_log(DBK_LOG_LEVEL_WARN, "profile %s: %s = %g is outside [%d, %d]; using %d", dbk_profile_id(p), path, v,
                lo, hi, fallback);
        return fallback;
    }
    return (int)v;
}

/* The local-memory GEMM tiles backend/tiles.h derives from the device's vendor and limits
 * (OpenCL reports no subgroup size portably: the vendor's, NVIDIA 32 and AMD 64, is used). */
static dbk_tile_choice derived_tiles(const dbk_ocl_ctx *c) {
    cl_uint vendor = 0;
    clGetDeviceInfo(c->device, CL_DEVICE_VENDOR_ID, sizeof vendor, &vendor, NULL);
    const dbk_device_limits lim = {
        .vendor_id = vendor,
        .subgroup_size = vendor == DBK_VENDOR_NVIDIA ? 32u : vendor == DBK_VENDOR_AMD ? 64u : 0u,
        .max_invocations = c->max_wg > 0xffffffffu ? 0xffffffffu : (uint32_t)c->max_wg,
        .shared_bytes = c->local_mem,
    };
    return dbk_tiles_from_limits(&lim);
}

/* Tile parameters of the tiled GEMM from the profile ("opencl.gemm_tiled.TSM", ...), where it
 * has none from the device's limits (derived_tiles), checked against the device: the
 * work-group and local-memory limits and divisibility. */
static dbk_status choose_tiles(dbk_backend *be, const dbk_profile *p) {
    dbk_ocl_ctx *c = be->impl;
    const dbk_tile_choice d = derived_tiles(c);
    dbk_ocl_gemm_tiles t = {
        .tsm = profile_int(p, "opencl.gemm_tiled.TSM", (int)d.bm, 1, 256),
        .tsn = profile_int(p, "opencl.gemm_tiled.TSN", (int)d.bn, 1, 256),
        .tsk = profile_int(p, "opencl.gemm_tiled.TSK", (int)d.bk, 1, 128),
        .wptm = profile_int(p, "opencl.gemm_tiled.WPTM", (int)d.tm, 1, 32),
        .wptn = profile_int(p, "opencl.gemm_tiled.WPTN", (int)d.tn, 1, 32),
        .rb_m = profile_int(p, "opencl.gemm_tiled.RB_M", 8, 1, 12),
        .rb_w = profile_int(p, "opencl.gemm_tiled.RB_W", 16, 4, 16),
        .rb_wg0 = profile_int(p, "opencl.gemm_tiled.RB_WG0", 4, 1, 1024),
        .rb_wg1 = profile_int(p, "opencl.gemm_tiled.RB_WG1", 8, 1, 1024),
        .rb_v = profile_int(p, "opencl.gemm_tiled.RB_V", 1, 1, 2),
    };
    if (t.rb_w != 4 && t.rb_w != 8 && t.rb_w != 16) t.rb_w = 16;
    if ((size_t)t.rb_wg0 * (size_t)t.rb_wg1 > c->max_wg) t.rb_wg0 = t.rb_wg1 = 1;
    const dbk_ocl_gemm_tiles safe = {32, 32, 8, 2, 2, t.rb_m, t.rb_w, t.rb_wg0, t.rb_wg1, t.rb_v};
    bool ok = t.tsm % t.wptm == 0 && t.tsn % t.wptn == 0;
    size_t wg = ok ? (size_t)(t.tsm / t.wptm) * (size_t)(t.tsn / t.wptn) : 0;
    size_t local = (size_t)t.tsk * (size_t)(t.tsm + t.tsn) * sizeof(float);
    if (!ok || wg > c->max_wg || local > c->local_mem) {
        dbk_log(DBK_LOG_LEVEL_WARN,
                "profile %s: gemm_tiled tiles %dx%dx%d / %dx%d do not fit %s (work-group %zu of %zu, local %zu of "
                "%llu bytes); using 32x32x8 / 2x2",
                dbk_profile_id(p), t.tsm, t.tsn, t.tsk, t.wptm, t.wptn, be->info.name, wg, c->max_wg, local,
                (unsigned long long)c->local_mem);
        t = safe;
        if ((size_t)(t.tsm / t.wptm) * (size_t)(t.tsn / t.wptn) > c->max_wg)
            return dbk_set_error(DBK_ERR_UNSUPPORTED, "%s: max work-group size %zu is below 256", be->info.name,
                                 c->max_wg);
    }
    c->tiles = t;
    return DBK_OK;
}

static dbk_status setup(dbk_backend *be, int index) {
    dbk_ocl_ctx *c = be->impl;
    DBK_TRY(dbk_ocl_find_device(index, &c->platform, &c->device));
    describe(c->platform, c->device, &be->info);
    cl_int err;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)c->platform, 0};
    c->context = clCreateContext(props, 1, &c->device, NULL, NULL, &err);
    if (!c->context) return dbk_ocl_fail(be, err, "creating a context");
    c->queue = clCreateCommandQueue(c->context, c->device, CL_QUEUE_PROFILING_ENABLE, &err);
    if (!c->queue) return dbk_ocl_fail(be, err, "creating a command queue");
    clGetDeviceInfo(c->device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof c->max_wg, &c->max_wg, NULL);
    c->local_mem = dev_ulong(c->device, CL_DEVICE_LOCAL_MEM_SIZE);
    c->max_alloc = dev_ulong(c->device, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
    if (c->max_wg < 1) c->max_wg = 1;

    dbk_profile *owned = NULL;
    if (!be->profile) DBK_TRY(dbk_profile_for_device("opencl", be->info.name, &owned));
    const dbk_profile *p = be->profile ? be->profile : owned;
    snprintf(c->profile_id, sizeof c->profile_id, "%s", dbk_profile_id(p));
    const char *gemm = dbk_profile_string(p, "opencl.gemm", "clblast");
    dbk_status st = DBK_OK;
    if (!strcmp(gemm, "tiled")) c->gemm = DBK_OCL_GEMM_TILED;
    else if (!strcmp(gemm, "clblast")) c->gemm = DBK_OCL_GEMM_CLBLAST;
    else st = dbk_set_error(DBK_ERR_FORMAT, "profile %s: opencl.gemm is '%s', expected \"tiled\" or \"clblast\"",
                            dbk_profile_id(p), gemm);
    if (st == DBK_OK) st = choose_tiles(be, p);
    c->conv_budget = dbk_ocl_conv_im2col_budget(p, c->max_alloc);
    c->split_k_units = (int)dbk_profile_number(p, "opencl.split_k_compute_units", (double)be->info.compute_units);
    if (st == DBK_OK) st = dbk_conv_choice_read(p, "opencl", (size_t)c->max_alloc, &c->conv);
    if (st == DBK_OK) st = dbk_ocl_blas_setup(be, p);
    dbk_profile_destroy(owned);
    DBK_TRY(st);

    /* Tunables are -D options; IEEE division and sqrt keep augmentation bit-exact with the CPU.
     * A CPU device's Winograd input and dy transforms write their planes with non-temporal
     * stores (wino4_line in cl/conv2d_winograd.cl). */
    char options[512];
    snprintf(options, sizeof options,
             "-cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt -DTSM=%d -DTSN=%d -DTSK=%d -DWPTM=%d -DWPTN=%d "
             "-DRB_M=%d -DRB_W=%d -DWINO_PLANE_PAD=%d -DNARROW_ROWS=%d%s",
             c->tiles.tsm, c->tiles.tsn, c->tiles.tsk, c->tiles.wptm, c->tiles.wptn, c->tiles.rb_m, c->tiles.rb_w,
             DBK_OCL_WINO_PLANE_PAD, DBK_OCL_NARROW_ROWS,
             be->info.type == DBK_DEVICE_TYPE_CPU ? " -DWINO_NT_STORES" : "");
    DBK_TRY(dbk_ocl_build_program(be, options));
    dbk_log(DBK_LOG_LEVEL_INFO, "opencl:%d %s: profile %s, gemm %s (tiles %dx%dx%d, %dx%d per work-item), conv %s",
            index, be->info.name, c->profile_id, c->gemm == DBK_OCL_GEMM_TILED ? "tiled" : "clblast", c->tiles.tsm,
            c->tiles.tsn, c->tiles.tsk, c->tiles.wptm, c->tiles.wptn, dbk_conv_choice_name(&c->conv));
    return DBK_OK;
}

static dbk_status ocl_create(int index, dbk_backend *be) {
    dbk_ocl_ctx *c = dbk_calloc(1, sizeof *c);
    if (!c) return dbk_set_error(DBK_ERR_OUT_OF_HOST_MEMORY, "out of host memory creating the OpenCL backend");
    be->vt = &ocl_vtable;
    be->impl = c;
    dbk_status st = setup(be, index);
    if (st != DBK_OK) ocl_destroy(be);
    return st;
}

const dbk_backend_entry dbk_ocl_backend_entry = {
    .kind         = DBK_BACKEND_KIND_OPENCL,
    .device_count = ocl_device_count,
    .device_info  = ocl_device_info,
    .create       = ocl_create,
};
