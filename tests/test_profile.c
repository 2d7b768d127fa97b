/*
 * test_profile.c — hardware profiles (core/profile.h): matching device names to the
 * embedded platforms/ files, dotted-path lookups, unknown ids, and the DBK_PLATFORMS_DIR
 * override including a malformed file.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/profile.h"
#include "test_util.h"

static int device_names_should_match_their_profiles(void) {
    const struct {
        const char *backend, *device, *id;
    } cases[] = {
        {"opencl", "pthread-AMD EPYC", "pocl-cpu"},
        {"vulkan", "llvmpipe (LLVM 15.0.6, 256 bits)", "lavapipe-cpu"},
        {"cpu", "AMD EPYC", "cpu-epyc-zen5-2vcpu"},
        /* restricted to other backends: falls back to default */
        {"vulkan", "pthread-AMD EPYC", "default"},
        {"opencl", "Some Unknown Accelerator", "default"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dbk_profile *p;
        DBK_CHECK_OK(dbk_profile_for_device(cases[i].backend, cases[i].device, &p));
        DBK_CHECK_MSG(!strcmp(dbk_profile_id(p), cases[i].id), "%s '%s' matched %s, expected %s", cases[i].backend,
                      cases[i].device, dbk_profile_id(p), cases[i].id);
        dbk_profile_destroy(p);
    }
    return 0;
}

static int lookups_should_follow_dotted_paths(void) {
    dbk_profile *p;
    DBK_CHECK_OK(dbk_profile_by_id("pocl-cpu", &p));
    DBK_CHECK(dbk_profile_number(p, "peak_fp32_gflops", -1) > 0);
    DBK_CHECK(!strcmp(dbk_profile_string(p, "opencl.gemm", "?"), "tiled"));
    DBK_CHECK(dbk_profile_number(p, "opencl.no.such", 7.5) == 7.5);
    DBK_CHECK(!strcmp(dbk_profile_string(p, "peak_fp32_gflops", "not a string"), "not a string"));
    DBK_CHECK(dbk_profile_has(p, "opencl"));
    DBK_CHECK(!dbk_profile_has(p, "cloud.price_per_hour"));
    dbk_profile_destroy(p);
    return 0;
}

static int unknown_ids_should_list_the_known_ones(void) {
    dbk_profile *p;
    DBK_CHECK(dbk_profile_by_id("no-such-device", &p) == DBK_ERR_NOT_FOUND);
    DBK_CHECK(strstr(dbk_last_error(), "no-such-device") && strstr(dbk_last_error(), "default"));
    int n = dbk_profile_count();
    DBK_CHECK(n >= 4);
    bool found_default = false;
    for (int i = 0; i < n; i++) found_default |= !strcmp(dbk_profile_id_at(i), "default");
    DBK_CHECK(found_default);
    DBK_CHECK(dbk_profile_id_at(n) == NULL);
    return 0;
}

static int a_platforms_dir_should_replace_the_embedded_set(void) {
    const char *dir = dbk_test_tmpdir("profiles");
    char path[4200];
    snprintf(path, sizeof path, "%s/default.json", dir);
    const char *def = "{\"id\": \"default\"}";
    DBK_CHECK_OK(dbk_file_write_atomic(path, def, strlen(def)));
    snprintf(path, sizeof path, "%s/mine.json", dir);
    const char *mine = "{\"id\": \"mine\", \"match\": [\"Widget\"], \"peak_fp32_gflops\": 12}";
    DBK_CHECK_OK(dbk_file_write_atomic(path, mine, strlen(mine)));
    setenv("DBK_PLATFORMS_DIR", dir, 1);
    dbk_profile *p;
    DBK_CHECK_OK(dbk_profile_for_device("opencl", "ACME widget 9000", &p));
    DBK_CHECK(!strcmp(dbk_profile_id(p), "mine") && dbk_profile_number(p, "peak_fp32_gflops", 0) == 12);
    dbk_profile_destroy(p);
    DBK_CHECK(dbk_profile_by_id("pocl-cpu", &p) == DBK_ERR_NOT_FOUND);

    snprintf(path, sizeof path, "%s/broken.json", dir);
    DBK_CHECK_OK(dbk_file_write_atomic(path, "{\"id\": 3", 8));
    DBK_CHECK(dbk_profile_for_device("opencl", "anything", &p) == DBK_ERR_FORMAT);
    DBK_CHECK(strstr(dbk_last_error(), "broken.json"));
    unsetenv("DBK_PLATFORMS_DIR");
    return 0;
}

int main(void) {
    DBK_RUN(device_names_should_match_their_profiles);
    DBK_RUN(lookups_should_follow_dotted_paths);
    DBK_RUN(unknown_ids_should_list_the_known_ones);
    DBK_RUN(a_platforms_dir_should_replace_the_embedded_set);
    return dbk_test_finish();
}
