/*
 * cmd_tune.c — `daybreak tune`: the tunables of our kernels on one device, searched within a
 * time budget and written as a device profile (bench/tune.h; docs/tuning.md).
 */
#define _XOPEN_SOURCE 700
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/cli.h"
#include "bench/tune.h"
#include "core/alloc.h"
#include "core/fileio.h"
#include "core/profile.h"

void dbk_help_tune(void) {
    printf("usage: daybreak tune --backend B [options]\n\n"
           "Searches the tunables of daybreak's kernels on one OpenCL or Vulkan device within a time\n"
           "budget: the OpenCL GEMM tiles and work-groups, Winograd, direct or im2col per convolution\n"
           "shape (OpenCL and Vulkan), CLBlast's Xgemm parameters where the profile uses CLBlast, the Vulkan\n"
           "GEMM and convolution tiles. Every candidate's results are checked against the CPU reference\n"
           "(a wrong candidate is rejected); the memory bandwidth is measured (copy and add kernels).\n"
           "Writes a device profile that later runs on this device use; measurements are cached, so\n"
           "running it again measures nothing new.\n\n"
           "options:\n"
           "  --backend B     opencl[:N] or vulkan[:N] (required)\n"
           "  --device N      device index within the backend (overrides :N)\n"
           "  --budget S      seconds to spend on the searches (default 600; > 0)\n"
           "  --out FILE      profile to write (default: the tuned-profile cache that train, bench,\n"
           "                  eval and check read: <cache dir>/profiles/<backend>-<device>.json); an\n"
           "                  existing file is replaced only when it is a profile, never in DBK_PLATFORMS_DIR\n"
           "  --recipe NAME   tune on the layers of this recipe's model (default: every CIFAR-10 recipe)\n"
           "  --batch N       images per tuning convolution (default: each recipe's own batch, at most\n"
           "                  128, or less where the device's max allocation needs it)\n"
           "  --only SEARCH   run only this search: opencl.gemm_rb, opencl.conv_by_shape,\n"
           "                  opencl.clblast_xgemm, vulkan.conv, vulkan.conv_by_shape or vulkan.gemm\n");
}

/* FNV-1a-64 of this executable's bytes: the cache is tied to the build that measured it. */
static uint64_t build_id(void) {
    void *data;
    size_t n;
    if (dbk_file_read_spec("/proc/self/exe", &(dbk_file_spec){.what = "daybreak executable", .max_bytes = (size_t)1 << 30},
                           &data, &n) != DBK_OK)
        return 0;
    uint64_t h = dbk_fnv1a64(data, n);
    dbk_free(data);
    return h;
}

int dbk_cmd_tune(dbk_cli_args *a) {
    const char *backend = NULL, *out = NULL, *recipe = NULL, *only = NULL, *v;
    long device = -1, batch = 0;   /* 0: each recipe's batch (bench/tune.h) */
    double budget = 600.0;
    for (a->i = 2; a->i < a->argc; a->i++) {
        int m;
        if (!strcmp(a->argv[a->i], "--help") || !strcmp(a->argv[a->i], "-h")) {
            dbk_help_tune();
            return DBK_EXIT_OK;
        }
        if ((m = dbk_cli_match(a, "--backend", true, &v))) {
            if (m < 0) return dbk_cli_usage_error("tune", "--backend needs opencl[:N] or vulkan[:N]");
            backend = v;
        } else if ((m = dbk_cli_match(a, "--device", true, &v))) {
            if (m < 0 || !dbk_cli_parse_long(v, 0, 1000, &device))
                return dbk_cli_usage_error("tune", "--device needs an index 0..1000");
        } else if ((m = dbk_cli_match(a, "--budget", true, &v))) {
            if (m < 0 || !dbk_cli_parse_double(v, 1e-3, 1e7, &budget))
                return dbk_cli_usage_error("tune", "--budget needs seconds > 0 (e.g. 600), got '%s'", m < 0 ? "" : v);
        } else if ((m = dbk_cli_match(a, "--out", true, &v))) {
            if (m < 0 || !*v) return dbk_cli_usage_error("tune", "--out needs a file name, not an empty one");
            out = v;
        } else if ((m = dbk_cli_match(a, "--recipe", true, &v))) {
            if (m < 0) return dbk_cli_usage_error("tune", "--recipe needs a name ('daybreak recipes' lists them)");
            recipe = v;
        } else if ((m = dbk_cli_match(a, "--only", true, &v))) {
            if (m < 0) return dbk_cli_usage_error("tune", "--only needs a search name (e.g. opencl.gemm_rb)");
            only = v;
        } else if ((m = dbk_cli_match(a, "--batch", true, &v))) {
            if (m < 0 || !dbk_cli_parse_long(v, 1, 4096, &batch))
                return dbk_cli_usage_error("tune", "--batch needs a number of images 1..4096");
        } else {
            return dbk_cli_usage_error("tune", "unknown option '%s'", a->argv[a->i]);
        }
    }
    if (!backend) return dbk_cli_usage_error("tune", "--backend is required (opencl[:N] or vulkan[:N])");
    dbk_tune_options o = {.budget_s = budget, .out = out, .recipe = recipe, .batch = (int)batch, .only = only,
                         .print = stdout};
    dbk_status st = dbk_backend_resolve(backend, (int)device, &o.kind, &o.index);
    if (st != DBK_OK) return dbk_cli_backend_error(st);
    if (only && o.kind != DBK_BACKEND_KIND_CPU && dbk_tune_check_only(o.kind, only) != DBK_OK)
        return dbk_cli_usage_error("tune", "%s", dbk_last_error());
    if (o.kind == DBK_BACKEND_KIND_CPU)
        return dbk_cli_usage_error("tune", "--backend cpu: the CPU reference has nothing to tune (opencl or vulkan)");
    if (out) { /* checked before any measuring, so a long run never ends in an unwritable file */
        dbk_output_spec spec = {.flag = "--out", .what = "hardware profile", .kind = DBK_OUTPUT_FILE,
                                .is_earlier_output = dbk_profile_file_is_profile};
        int rc = dbk_cli_check_output(&spec, out);
        if (rc != DBK_EXIT_OK) return rc;
    }
    o.command = dbk_cli_join(a->argc, a->argv);
    o.build_id = build_id();
    dbk_tune_summary s;
    if (dbk_tune_run(&o, &s) != DBK_OK) return dbk_cli_fail("tune");
    printf("tuned in %.1f s: %d candidates (%d measured now, %d rejected, %d not tried for lack of budget)\n",
           s.seconds, s.candidates, s.measured, s.rejected, s.untried);
    printf("profile written to %s\n", s.out);
    return DBK_EXIT_OK;
}
