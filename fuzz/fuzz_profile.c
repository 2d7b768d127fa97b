/* fuzz_profile.c — libFuzzer target: the platform profile parser (core/profile.h) and its lookups. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    dbk_profile *p = NULL;
    if (dbk_profile_parse((const char *)data, size, "fuzz", &p) != DBK_OK) return 0;
    /* The lookups platform.c makes for a run, plus nested and over-long paths. */
    static const char *const paths[] = {"name", "cloud.provider", "cloud.instance", "cloud.price_per_hour",
                                        "peak_fp32_gflops", "peak_fp16_gflops", "mem_bandwidth_gbs",
                                        "opencl.gemm", "opencl.gemm.mwg", "vulkan", "a.b.c.d.e.f.g.h", ""};
    volatile size_t sink = strlen(dbk_profile_id(p));
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        sink += strlen(dbk_profile_string(p, paths[i], ""));
        sink += dbk_profile_number(p, paths[i], 0.0) != 0.0;
        sink += dbk_profile_has(p, paths[i]);
    }
    (void)sink;
    dbk_profile_destroy(p);
    return 0;
}
