/*
 * test_icd.c — backend/icd.h, the driver report of `daybreak devices`: ICD file parsing
 * (OpenCL's one line, Vulkan's JSON with relative library paths) and the scan of folders
 * named by OCL_ICD_VENDORS and VK_DRIVER_FILES, with a library that loads (the C library's
 * libm.so.6) and one that does not (its dlerror reason reported); and a Vulkan driver that
 * loads but gives the loader no vkCreateInstance (argv[1], tests/fake_vk_icd.c: what NVIDIA's
 * GLX library does without a display), reported as such, and replaced by a working driver's
 * ICD file (the headless-NVIDIA fix, lavapipe standing in for libEGL_nvidia.so.0); and an
 * OpenCL ICD file added for a driver library no file names (PoCL standing in for NVIDIA's).
 *
 * usage: test_icd FAKE_VK_ICD
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/icd.h"
#include "core/fileio.h"
#include "test_util.h"

static int opencl_icd_should_name_its_first_line(void) {
    char lib[512];
    const char text[] = "  libnvidia-opencl.so.1  \r\nignored\n";
    DBK_CHECK_OK(dbk_icd_parse(DBK_ICD_OPENCL, "/etc/OpenCL/vendors/nvidia.icd", text, sizeof text - 1, lib, sizeof lib));
    DBK_CHECK(!strcmp(lib, "libnvidia-opencl.so.1"));
    DBK_CHECK(dbk_icd_parse(DBK_ICD_OPENCL, "x.icd", "\n \n", 3, lib, sizeof lib) == DBK_ERR_FORMAT);
    return 0;
}

static int vulkan_icd_should_resolve_relative_paths(void) {
    char lib[512];
    const char *rel = "{\"file_format_version\": \"1.0.0\", \"ICD\": {\"library_path\": \"../lib/libvk.so\"}}";
    DBK_CHECK_OK(dbk_icd_parse(DBK_ICD_VULKAN, "/opt/v/icd.d/a.json", rel, strlen(rel), lib, sizeof lib));
    DBK_CHECK_MSG(!strcmp(lib, "/opt/v/icd.d/../lib/libvk.so"), "%s", lib);
    const char *bare = "{\"ICD\": {\"library_path\": \"libGLX_nvidia.so.0\"}}";   /* searched by dlopen */
    DBK_CHECK_OK(dbk_icd_parse(DBK_ICD_VULKAN, "/opt/v/icd.d/a.json", bare, strlen(bare), lib, sizeof lib));
    DBK_CHECK(!strcmp(lib, "libGLX_nvidia.so.0"));
    DBK_CHECK(dbk_icd_parse(DBK_ICD_VULKAN, "a.json", "{\"ICD\": {}}", 11, lib, sizeof lib) == DBK_ERR_FORMAT);
    DBK_CHECK(dbk_icd_parse(DBK_ICD_VULKAN, "a.json", "not json", 8, lib, sizeof lib) == DBK_ERR_FORMAT);
    return 0;
}

static int scan_should_report_which_libraries_load_and_why_not(void) {
    const char *dir = dbk_test_tmpdir("icd");
    DBK_CHECK(dir != NULL);
    char path[4200];
    snprintf(path, sizeof path, "%s/a-good.icd", dir);
    DBK_CHECK_OK(dbk_file_write_atomic(path, "libm.so.6\n", 10));
    snprintf(path, sizeof path, "%s/b-missing.icd", dir);
    DBK_CHECK_OK(dbk_file_write_atomic(path, "libdbk-no-such-driver.so\n", 25));
    snprintf(path, sizeof path, "%s/ignored.txt", dir);
    DBK_CHECK_OK(dbk_file_write_atomic(path, "x", 1));
    DBK_CHECK(setenv("OCL_ICD_VENDORS", dir, 1) == 0);
    dbk_icd_report *r = malloc(sizeof *r);
    DBK_CHECK(r != NULL);
    dbk_icd_scan(DBK_ICD_OPENCL, r);
    int ok = r->count == 2 && r->files[0].loads && !r->files[1].loads &&
             strstr(r->files[1].problem, "libdbk-no-such-driver.so") && strstr(r->searched, "OCL_ICD_VENDORS");
    if (!ok) printf("  count %d, searched %s, problem '%s'\n", r->count, r->searched, r->count > 1 ? r->files[1].problem : "");
    snprintf(path, sizeof path, "%s/v.json", dir);
    DBK_CHECK_OK(dbk_file_write_atomic(path, "{\"ICD\": {\"library_path\": \"libm.so.6\"}}", 38));
    char list[8600];
    snprintf(list, sizeof list, "%s:%s/absent.json", path, dir);
    DBK_CHECK(setenv("VK_DRIVER_FILES", list, 1) == 0);
    dbk_icd_scan(DBK_ICD_VULKAN, r);
    ok = ok && r->count == 2 && r->files[0].loads && !r->files[1].loads && !r->files[1].library[0] &&
         strstr(r->files[1].problem, "absent.json") && strstr(r->searched, "VK_DRIVER_FILES");
    free(r);
    DBK_CHECK(ok);
    return 0;
}

static const char *fake_vk_icd;

static int a_vulkan_driver_without_vkcreateinstance_should_be_reported(void) {
    const char *dir = dbk_test_tmpdir("icd_no_instance");
    DBK_CHECK(dir != NULL);
    char path[4200], json[4400];
    snprintf(path, sizeof path, "%s/fake.json", dir);
    const int n = snprintf(json, sizeof json, "{\"ICD\": {\"library_path\": \"%s\"}}", fake_vk_icd);
    DBK_CHECK_OK(dbk_file_write_atomic(path, json, (size_t)n));
    snprintf(json, sizeof json, "%s/v.json", dir);
    DBK_CHECK_OK(dbk_file_write_atomic(json, "{\"ICD\": {\"library_path\": \"libm.so.6\"}}", 38));
    char list[8600];
    snprintf(list, sizeof list, "%s:%s", path, json);
    DBK_CHECK(setenv("VK_DRIVER_FILES", list, 1) == 0);
    dbk_icd_report *r = malloc(sizeof *r);
    DBK_CHECK(r != NULL);
    dbk_icd_scan(DBK_ICD_VULKAN, r);
    const bool ok = r->count == 2 && r->files[0].loads && r->files[0].no_instance && r->files[1].loads &&
                    !r->files[1].no_instance;
    if (!ok && r->count == 2)
        printf("  fake: loads %d no_instance %d (%s); libm: loads %d no_instance %d\n", r->files[0].loads,
               r->files[0].no_instance, r->files[0].problem, r->files[1].loads, r->files[1].no_instance);
    free(r);
    unsetenv("VK_DRIVER_FILES");
    DBK_CHECK(ok);
    return 0;
}

/* The headless-NVIDIA fix (dbk_icd_vulkan_replace_failing), with the fake driver standing in
 * for libGLX_nvidia.so.0 and lavapipe for libEGL_nvidia.so.0: the failing file is replaced by
 * one naming the working library, VK_DRIVER_FILES lists it and the other files, and the Vulkan
 * backend then finds a device through it. A replacement that gives no instance changes nothing. */
static int a_failing_vulkan_driver_should_be_replaced_by_a_working_one(void) {
    const char *lvp_json = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json";
    void *text = NULL;
    size_t n = 0;
    if (dbk_file_read_all(lvp_json, &text, &n) != DBK_OK) return dbk_test_skip_or_fail_in_ci("no lavapipe ICD file");
    char lvp[512];
    const dbk_status parsed = dbk_icd_parse(DBK_ICD_VULKAN, lvp_json, text, n, lvp, sizeof lvp);
    free(text);
    DBK_CHECK_OK(parsed);
    const char *dir = dbk_test_tmpdir("icd_replace");
    DBK_CHECK(dir != NULL);
    char fake_json[4200], json[4400], list[8600], out_dir[4300], written[1200];
    snprintf(fake_json, sizeof fake_json, "%s/fake.json", dir);
    const int len = snprintf(json, sizeof json, "{\"ICD\": {\"library_path\": \"%s\"}}", fake_vk_icd);
    DBK_CHECK_OK(dbk_file_write_atomic(fake_json, json, (size_t)len));
    snprintf(list, sizeof list, "%s:%s", fake_json, lvp_json);
    snprintf(out_dir, sizeof out_dir, "%s/written", dir);

    /* a replacement without an instance (the fake itself): nothing written, nothing set */
    DBK_CHECK(setenv("VK_DRIVER_FILES", list, 1) == 0);
    DBK_CHECK(!dbk_icd_nvidia_fix_allowed(DBK_ICD_VULKAN));   /* the user's variable wins */
    DBK_CHECK(!dbk_icd_vulkan_replace_failing("libfake_vk_icd", fake_vk_icd, out_dir, written, sizeof written));
    DBK_CHECK(!strcmp(getenv("VK_DRIVER_FILES"), list));

    DBK_CHECK(dbk_icd_vulkan_replace_failing("libfake_vk_icd", lvp, out_dir, written, sizeof written));
    const char *now = getenv("VK_DRIVER_FILES");
    DBK_CHECK_MSG(now && !strncmp(now, written, strlen(written)) && strstr(now, lvp_json) && !strstr(now, fake_json),
                  "VK_DRIVER_FILES=%s", now ? now : "(unset)");
    DBK_CHECK(!strcmp(getenv("VK_ICD_FILENAMES"), now));
    DBK_CHECK_OK(dbk_file_read_all(written, &text, &n));
    char named[512];
    const dbk_status named_st = dbk_icd_parse(DBK_ICD_VULKAN, written, text, n, named, sizeof named);
    free(text);
    DBK_CHECK_OK(named_st);
    DBK_CHECK_MSG(!strcmp(named, lvp), "the new ICD file names %s", named);
    /* only the written file: the loader starts the replacement */
    DBK_CHECK(setenv("VK_DRIVER_FILES", written, 1) == 0);
    const bool built = dbk_backend_kind_compiled(DBK_BACKEND_KIND_VULKAN);   /* not in the sanitizer build */
    const int devices = built ? dbk_backend_device_count(DBK_BACKEND_KIND_VULKAN) : 0;
    unsetenv("VK_DRIVER_FILES");
    unsetenv("VK_ICD_FILENAMES");
    DBK_CHECK_MSG(!built || devices >= 1, "no Vulkan device through the written ICD file");
    return 0;
}

/* The missing-OpenCL-ICD fix (dbk_icd_opencl_add_missing), PoCL standing in for the NVIDIA
 * driver's libnvidia-opencl.so.1: an ICD file naming it is added beside copies of the files
 * found, OCL_ICD_VENDORS points there, and the OpenCL backend finds a device through it. When
 * a file already names the library, nothing changes. Must be the process's first OpenCL use
 * (the ICD loader reads its vendors once). */
static int a_missing_opencl_icd_should_be_added(void) {
    void *text = NULL;
    size_t n = 0;
    if (dbk_file_read_all("/etc/OpenCL/vendors/pocl.icd", &text, &n) != DBK_OK)
        return dbk_test_skip_or_fail_in_ci("no /etc/OpenCL/vendors/pocl.icd");
    char pocl[512];
    const dbk_status parsed = dbk_icd_parse(DBK_ICD_OPENCL, "pocl.icd", text, n, pocl, sizeof pocl);
    free(text);
    DBK_CHECK_OK(parsed);
    const char *dir = dbk_test_tmpdir("icd_add_missing");
    DBK_CHECK(dir != NULL);
    char found[4200], path[4300], out_dir[4300], written[1200];
    snprintf(found, sizeof found, "%s/found", dir);
    DBK_CHECK_OK(dbk_mkdir_p(found));
    snprintf(path, sizeof path, "%s/a-libm.icd", found);
    DBK_CHECK_OK(dbk_file_write_atomic(path, "libm.so.6\n", 10));
    snprintf(out_dir, sizeof out_dir, "%s/written", dir);
    DBK_CHECK(setenv("OCL_ICD_VENDORS", found, 1) == 0);
    DBK_CHECK(!dbk_icd_nvidia_fix_allowed(DBK_ICD_OPENCL));   /* the user's variable wins */
    DBK_CHECK(!dbk_icd_opencl_add_missing("libm", "libm.so.6", "again", out_dir, written, sizeof written));
    DBK_CHECK(!strcmp(getenv("OCL_ICD_VENDORS"), found));

    DBK_CHECK(dbk_icd_opencl_add_missing("pocl", pocl, "stand-in", out_dir, written, sizeof written));
    DBK_CHECK(!strcmp(getenv("OCL_ICD_VENDORS"), out_dir));
    dbk_icd_report *r = malloc(sizeof *r);
    DBK_CHECK(r != NULL);
    dbk_icd_scan(DBK_ICD_OPENCL, r);
    const bool ok = r->count == 2 && !strcmp(r->files[0].library, "libm.so.6") && !strcmp(r->files[1].library, pocl) &&
                    strstr(r->files[1].path, "stand-in.icd") && !strcmp(r->files[1].path, written);
    free(r);
    DBK_CHECK(ok);
    /* the device through it, where the backend is built in (the sanitizer build has none) */
    const bool built = dbk_backend_kind_compiled(DBK_BACKEND_KIND_OPENCL);
    const int devices = built ? dbk_backend_device_count(DBK_BACKEND_KIND_OPENCL) : 0;
    unsetenv("OCL_ICD_VENDORS");
    DBK_CHECK_MSG(!built || devices >= 1, "no OpenCL device through the added ICD file");
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_icd FAKE_VK_ICD\n");
        return 2;
    }
    fake_vk_icd = argv[1];
    DBK_RUN(opencl_icd_should_name_its_first_line);
    DBK_RUN(vulkan_icd_should_resolve_relative_paths);
    DBK_RUN(scan_should_report_which_libraries_load_and_why_not);
    DBK_RUN(a_vulkan_driver_without_vkcreateinstance_should_be_reported);
    DBK_RUN(a_missing_opencl_icd_should_be_added);
    DBK_RUN(a_failing_vulkan_driver_should_be_replaced_by_a_working_one);
    return dbk_test_finish();
}
