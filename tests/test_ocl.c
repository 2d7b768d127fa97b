/*
 * test_ocl.c — the OpenCL backend's own machinery (the ops themselves are checked against the
 * CPU reference by test_ops_backend):
 *   - the on-disk binary cache: the first build compiles and writes the cache, the second
 *     reads it (asserted through the backend's build counters, not assumed), a corrupted
 *     cache file is rejected and rebuilt; planted files (a driver binary altered under a
 *     recomputed file checksum, a file sealed for another key, the old format, /dev/zero)
 *     never reach the driver, and the rebuilt program computes correctly;
 *   - both GEMM paths, our tiled kernels and CLBlast, selected through a profile folder
 *     (DBK_PLATFORMS_DIR), against the CPU reference on GEMM and the three convolutions;
 *   - the GEMM plan of a convolution (ocl_conv_plan.h, which tools/bench_gemm.c times) is the
 *     GEMMs the recorders issue: as many gemm_rb launches, each with the planned M x N, for
 *     im2col, F(2x2,3x3) and F(4x4,3x3), several chunks, 1x1 and strided layers;
 *   - programs: replay accumulates, timed runs report device time for every op;
 *   - small writes, staged and not waiting for the queue, land in queue order between ops;
 *   - the vectorised 2x2 max pool keeps the CPU's tie and NaN rules and argmax exactly;
 *   - errors: a kernel that fails to build reports the build log and the compiler output that
 *     PoCL prints to fd 2 (the console stays clean; a warning goes to the info log), a missing
 *     DBK_KERNEL_DIR file is named in an exact message, OpenCL errors are reported by name with
 *     the right status.
 * Skips (77) when the OpenCL backend is not compiled in or finds no device.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <clblast_c.h>

#include "backends/opencl/ocl_internal.h"
#include "core/embedded.h"
#include "core/alloc.h"
#include "core/fileio.h"
#include "core/kcache.h"
#include "core/log.h"
#include "test_util.h"

#ifndef DBK_TEST_SOURCE_TREE
#error "DBK_TEST_SOURCE_TREE must name the source tree (tests/CMakeLists.txt)"
#endif

static dbk_status create(dbk_backend **be) { return dbk_backend_create(DBK_BACKEND_KIND_OPENCL, 0, be); }

/* ---------------------------------------------------------------------------------- */
/* binary cache                                                                       */

static int second_build_should_read_the_cache_and_reject_a_corrupted_file(void) {
    const char *dir = dbk_test_tmpdir("ocl_cache");
    setenv("DBK_CACHE_DIR", dir, 1);
    dbk_backend *be;

    DBK_CHECK_OK(create(&be));
    dbk_ocl_build_stats first = dbk_ocl(be)->stats;
    dbk_backend_destroy(be);
    DBK_CHECK_MSG(first.from_source == 1 && first.from_cache == 0 && first.cache_written == 1,
                  "first build: %d from source, %d from cache, %d written", first.from_source, first.from_cache,
                  first.cache_written);

    DBK_CHECK_OK(create(&be));
    dbk_ocl_build_stats second = dbk_ocl(be)->stats;
    dbk_backend_destroy(be);
    DBK_CHECK_MSG(second.from_cache == 1 && second.from_source == 0 && second.cache_rejected == 0,
                  "second build: %d from source, %d from cache, %d rejected", second.from_source, second.from_cache,
                  second.cache_rejected);
    DBK_CHECK(!strcmp(first.cache_file, second.cache_file));

    /* Flip one byte in the middle of the binary: the checksum must catch it. */
    void *data;
    size_t n;
    DBK_CHECK_OK(dbk_file_read_all(second.cache_file, &data, &n));
    DBK_CHECK(n > 64);
    ((unsigned char *)data)[40 + (n - 40) / 2] ^= 0x5a;
    DBK_CHECK_OK(dbk_file_write_atomic(second.cache_file, data, n));
    free(data);
    DBK_CHECK_OK(create(&be));
    dbk_ocl_build_stats third = dbk_ocl(be)->stats;
    dbk_backend_destroy(be);
    DBK_CHECK_MSG(third.cache_rejected == 1 && third.from_source == 1 && third.cache_written == 1,
                  "corrupted cache: %d rejected, %d from source, %d written", third.cache_rejected, third.from_source,
                  third.cache_written);

    /* A truncated file is rejected too, and the rewritten cache is good again. */
    DBK_CHECK_OK(dbk_file_write_atomic(second.cache_file, "DBKCLBIN", 8));
    DBK_CHECK_OK(create(&be));
    DBK_CHECK(dbk_ocl(be)->stats.cache_rejected == 1 && dbk_ocl(be)->stats.from_source == 1);
    dbk_backend_destroy(be);
    DBK_CHECK_OK(create(&be));
    DBK_CHECK(dbk_ocl(be)->stats.from_cache == 1);
    dbk_backend_destroy(be);
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* both GEMM paths against the CPU reference                                          */

/* Runs op on both backends with the same random inputs and compares dst[0]. */
typedef struct pair {
    dbk_backend *dev, *cpu;
} pair;

static int compare_op(pair *pr, const dbk_op_desc *op, const char *what, double tol) {
    dbk_backend *bes[2] = {pr->cpu, pr->dev};
    float *out[2] = {NULL, NULL};
    size_t out_n = (size_t)dbk_tensor_numel(&op->dst[0]);
    for (int b = 0; b < 2; b++) {
        dbk_op_desc d = *op;
        dbk_buffer *bufs[DBK_OP_MAX_SRC + 1] = {0};
        for (int i = 0; i < DBK_OP_MAX_SRC && op->src[i].ndim; i++) {
            size_t n = (size_t)dbk_tensor_numel(&op->src[i]);
            DBK_CHECK_OK(dbk_buffer_create(bes[b], n * 4 + 64, &bufs[i]));
            float *h = dbk_test_uniform((int64_t)n, -1.0f, 1.0f, 100u + (uint64_t)i);
            d.src[i].buf = bufs[i];
            d.src[i].offset = 64;   /* a view at an offset, as activations are */
            DBK_CHECK_OK(dbk_tensor_write(&d.src[i], h));
            free(h);
        }
        DBK_CHECK_OK(dbk_buffer_create(bes[b], out_n * 4 + 8, &bufs[DBK_OP_MAX_SRC]));
        d.dst[0].buf = bufs[DBK_OP_MAX_SRC];
        d.dst[0].offset = 4;
        float *init = dbk_test_uniform((int64_t)out_n, -1.0f, 1.0f, 7);
        DBK_CHECK_OK(dbk_tensor_write(&d.dst[0], init));
        free(init);
        DBK_CHECK_OK(dbk_backend_prepare(bes[b], &d));
        DBK_CHECK_OK(dbk_backend_run(bes[b], &d));
        DBK_CHECK_OK(dbk_backend_sync(bes[b]));
        out[b] = dbk_test_read(&d.dst[0]);
        for (int i = 0; i <= DBK_OP_MAX_SRC; i++) dbk_buffer_destroy(bufs[i]);
    }
    double e = dbk_test_nmse(out[0], out[1], out_n);
    printf("    %-48s nmse %.2e (tol %.0e)\n", what, e, tol);
    free(out[0]);
    free(out[1]);
    DBK_CHECK_MSG(e <= tol, "%s: nmse %.3e above %.0e", what, e, tol);
    return 0;
}

static dbk_tensor t4(int64_t a, int64_t b, int64_t c, int64_t d) { return dbk_tensor_make(NULL, 0, DBK_DTYPE_F32, 4, a, b, c, d); }
static dbk_tensor t2(int64_t a, int64_t b) { return dbk_tensor_make(NULL, 0, DBK_DTYPE_F32, 2, a, b, 1, 1); }

static int gemm_and_conv_cases(pair *pr) {
    /* GEMM: every transpose combination, sizes off every tile, beta 0 and 1 */
    const int shapes[][3] = {{37, 29, 53}, {512, 10, 512}, {64, 300, 9}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        for (int t = 0; t < 4; t++) {
            const int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
            const bool ta = t & 1, tb = t & 2;
            dbk_op_desc op = {.op = DBK_OP_GEMM, .p.gemm = {ta, tb, 1.5f, t == 3 ? 1.0f : 0.0f}};
            op.src[0] = ta ? t2(k, m) : t2(m, k);
            op.src[1] = tb ? t2(n, k) : t2(k, n);
            op.dst[0] = t2(m, n);
            char what[96];
            snprintf(what, sizeof what, "gemm %dx%dx%d ta %d tb %d beta %g", m, n, k, ta, tb, (double)op.p.gemm.beta);
            if (compare_op(pr, &op, what, 1e-10)) return 1;
        }
    }
    /* convolutions: 3x3 pad 1, stride 2, 1x1, 7x7 stride 2, batch 1, odd sizes */
    const struct { int n, c, h, w, k, r, s, stride, pad; } convs[] = {
        {3, 5, 11, 9, 7, 3, 3, 1, 1}, {2, 8, 12, 12, 6, 3, 3, 2, 1}, {1, 6, 7, 5, 10, 1, 1, 1, 0},
        {2, 3, 19, 17, 4, 7, 7, 2, 3}, {9, 16, 8, 8, 24, 3, 3, 1, 1},
    };
    for (size_t i = 0; i < sizeof convs / sizeof convs[0]; i++) {
        const int p = (convs[i].h + 2 * convs[i].pad - convs[i].r) / convs[i].stride + 1;
        const int q = (convs[i].w + 2 * convs[i].pad - convs[i].s) / convs[i].stride + 1;
        dbk_tensor x = t4(convs[i].n, convs[i].c, convs[i].h, convs[i].w);
        dbk_tensor w = t4(convs[i].k, convs[i].c, convs[i].r, convs[i].s);
        dbk_tensor y = t4(convs[i].n, convs[i].k, p, q);
        dbk_conv2d_params cp = {convs[i].stride, convs[i].stride, convs[i].pad, convs[i].pad};
        dbk_op_desc f = {.op = DBK_OP_CONV2D_FWD, .p.conv = cp, .src = {x, w}, .dst = {y}};
        dbk_op_desc bd = {.op = DBK_OP_CONV2D_BWD_DATA, .p.conv = cp, .src = {y, w}, .dst = {x}};
        dbk_op_desc bf = {.op = DBK_OP_CONV2D_BWD_FILTER, .p.conv = cp, .src = {x, y}, .dst = {w}};
        char what[96];
        snprintf(what, sizeof what, "conv N%d C%d %dx%d K%d %dx%d s%d p%d", convs[i].n, convs[i].c, convs[i].h,
                 convs[i].w, convs[i].k, convs[i].r, convs[i].s, convs[i].stride, convs[i].pad);
        char name[128];
        snprintf(name, sizeof name, "%s fwd", what);
        if (compare_op(pr, &f, name, 1e-10)) return 1;
        snprintf(name, sizeof name, "%s bwd_data", what);
        if (compare_op(pr, &bd, name, 1e-10)) return 1;
        snprintf(name, sizeof name, "%s bwd_filter", what);
        if (compare_op(pr, &bf, name, 1e-10)) return 1;
    }
    return 0;
}

/* The cache file of this device's program, read whole (caller frees with dbk_free). */
static int read_cache_file(const char *path, unsigned char **data, size_t *n) {
    void *d;
    DBK_CHECK_OK(dbk_file_read_all(path, &d, n));
    *data = d;
    DBK_CHECK(*n > DBK_KCACHE_HEADER_BYTES + 64);
    return 0;
}

/* The key field of a cache file (offset 16, core/kcache.h). */
static uint64_t file_key(const unsigned char *file) {
    uint64_t key = 0;
    for (int i = 7; i >= 0; i--) key = key << 8 | file[16 + i];
    return key;
}

/* Builds the backend with the planted cache file: the file must be rejected (not handed to the
 * driver, which may crash on it), the program rebuilt from source and the cache rewritten, and
 * a GEMM must then match the CPU. */
static int planted_cache_should_be_rebuilt(const char *path, const unsigned char *file, size_t n, const char *why) {
    DBK_CHECK_OK(dbk_file_write_atomic(path, file, n));
    pair pr;
    DBK_CHECK_OK(create(&pr.dev));
    dbk_ocl_build_stats st = dbk_ocl(pr.dev)->stats;
    DBK_CHECK_OK(dbk_backend_create(DBK_BACKEND_KIND_CPU, 0, &pr.cpu));
    dbk_op_desc op = {.op = DBK_OP_GEMM, .p.gemm = {false, true, 1.0f, 0.0f}};
    op.src[0] = t2(33, 70);
    op.src[1] = t2(45, 70);
    op.dst[0] = t2(33, 45);
    int rc = compare_op(&pr, &op, why, 1e-10);
    dbk_backend_destroy(pr.dev);
    dbk_backend_destroy(pr.cpu);
    DBK_CHECK(rc == 0);
    DBK_CHECK_MSG(st.cache_rejected == 1 && st.from_source == 1 && st.from_cache == 0 && st.cache_written == 1,
                  "%s: %d rejected, %d from source, %d from cache, %d written", why, st.cache_rejected,
                  st.from_source, st.from_cache, st.cache_written);
    unsigned char *rewritten;
    size_t rn;
    if (read_cache_file(path, &rewritten, &rn)) return 1;
    const unsigned char *binary;
    size_t bn;
    const char *bad = dbk_kcache_check(rewritten, rn, file_key(rewritten), &binary, &bn);
    dbk_free(rewritten);
    DBK_CHECK_MSG(bad == NULL, "%s: the rewritten cache is not valid: %s", why, bad);
    return 0;
}

/* PoCL crashes (SIGSEGV, assertion abort) on some damaged binaries, so a damaged binary must
 * never reach it, even inside a file whose own checksum was made to match. */
static int a_cache_file_with_an_altered_binary_should_be_rebuilt(void) {
    const char *dir = dbk_test_tmpdir("ocl_cache_altered");
    setenv("DBK_CACHE_DIR", dir, 1);
    dbk_backend *be;
    DBK_CHECK_OK(create(&be));
    char path[4400];
    snprintf(path, sizeof path, "%s", dbk_ocl(be)->stats.cache_file);
    dbk_backend_destroy(be);
    unsigned char *good;
    size_t n;
    if (read_cache_file(path, &good, &n)) return 1;
    unsigned char *file = dbk_malloc(n);
    DBK_CHECK(file);
    int rc = 0;

    /* 1. Bytes of the driver binary overwritten, the file checksum recomputed to match. */
    memcpy(file, good, n);
    memset(file + DBK_KCACHE_HEADER_BYTES + (n - DBK_KCACHE_HEADER_BYTES) / 3, 0xff, 256);
    uint64_t sum = dbk_kcache_file_checksum(file, n);
    for (int i = 0; i < 8; i++) file[40 + i] = (unsigned char)(sum >> (8 * i));
    rc |= planted_cache_should_be_rebuilt(path, file, n, "altered binary, file checksum valid");

    /* 2. A valid file for another key (another device, driver, source or options) moved here. */
    memcpy(file, good, n);
    dbk_kcache_seal(file, file_key(good) ^ 0x5a5a, n - DBK_KCACHE_HEADER_BYTES);
    rc |= planted_cache_should_be_rebuilt(path, file, n, "binary sealed for another key");

    /* 3. The previous format's header (format 1, 40 bytes) over the same binary. */
    memcpy(file, good, n);
    file[8] = 1;
    rc |= planted_cache_should_be_rebuilt(path, file, n, "format 1 file");

    /* 4. A device as the cache file: refused without reading it, and never replaced. */
    DBK_CHECK(unlink(path) == 0 && symlink("/dev/zero", path) == 0);
    alarm(60);   /* reading /dev/zero whole once hung; SIGALRM ends the test instead */
    dbk_status st = create(&be);
    alarm(0);
    DBK_CHECK_OK(st);
    dbk_ocl_build_stats stats = dbk_ocl(be)->stats;
    dbk_backend_destroy(be);
    DBK_CHECK_MSG(stats.cache_rejected == 1 && stats.from_source == 1 && stats.cache_written == 0,
                  "device as cache: %d rejected, %d from source, %d written", stats.cache_rejected, stats.from_source,
                  stats.cache_written);
    struct stat lst;
    DBK_CHECK(lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode));
    DBK_CHECK(unlink(path) == 0);

    dbk_free(file);
    dbk_free(good);
    unsetenv("DBK_CACHE_DIR");
    DBK_CHECK(rc == 0);
    return 0;
}

/* A profile folder holding a default and a profile for this device with the given GEMM. */
static int use_gemm_profile(const char *device, const char *gemm, const char *tiles) {
    char dir[1024], path[1200], text[1024];
    snprintf(dir, sizeof dir, "%s", dbk_test_tmpdir(tiles[0] ? "tiled_rb2" : gemm));
    snprintf(path, sizeof path, "%s/default.json", dir);
    snprintf(text, sizeof text, "{\"id\": \"default\", \"opencl\": {\"gemm\": \"clblast\"}}\n");
    DBK_CHECK_OK(dbk_file_write_atomic(path, text, strlen(text)));
    snprintf(path, sizeof path, "%s/device.json", dir);
    snprintf(text, sizeof text,
             "{\"id\": \"test-%s\", \"match\": [\"%s\"], \"backends\": [\"opencl\"], "
             "\"opencl\": {\"gemm\": \"%s\"%s}}\n",
             gemm, device, gemm, tiles);
    DBK_CHECK_OK(dbk_file_write_atomic(path, text, strlen(text)));
    setenv("DBK_PLATFORMS_DIR", dir, 1);
    return 0;
}

static int gemm_path(const char *gemm, dbk_ocl_gemm_path want, const char *tiles) {
    dbk_device_info info;
    DBK_CHECK_OK(dbk_backend_device_info(DBK_BACKEND_KIND_OPENCL, 0, &info));
    if (use_gemm_profile(info.name, gemm, tiles)) return 1;
    pair pr;
    dbk_status st = create(&pr.dev);
    unsetenv("DBK_PLATFORMS_DIR");
    DBK_CHECK_OK(st);
    DBK_CHECK_OK(dbk_backend_create(DBK_BACKEND_KIND_CPU, 0, &pr.cpu));
    int rc = 1;
    if (dbk_ocl(pr.dev)->gemm != want) {
        fprintf(stderr, "  FAIL: profile did not select the %s GEMM\n", gemm);
        dbk_test_failed_checks++;
    } else {
        rc = gemm_and_conv_cases(&pr);
    }
    dbk_backend_destroy(pr.dev);
    dbk_backend_destroy(pr.cpu);
    return rc;
}

static int tiled_gemm_path_should_match_the_cpu(void) { return gemm_path("tiled", DBK_OCL_GEMM_TILED, ""); }
/* gemm_rb2 (two B panels per work-item) and 12-row blocks with ragged edges */
static int tiled_gemm_rb2_should_match_the_cpu(void) {
    return gemm_path("tiled", DBK_OCL_GEMM_TILED, ", \"gemm_tiled\": {\"RB_V\": 2, \"RB_M\": 12}");
}
static int clblast_gemm_path_should_match_the_cpu(void) { return gemm_path("clblast", DBK_OCL_GEMM_CLBLAST, ""); }

/* Split-K of a CLBlast backward-filter GEMM (ocl_ops_conv.c split_k_slices), forced on PoCL by
 * "split_k_compute_units": 64: a 16 x 72 output of 2 tiles over K = 16 x 16 x 16 = 4096 runs as
 * 8 slices of 512 in one strided batched call plus splitk_sum, and matches the CPU; with the
 * device's own 2 compute units the same layer stays one GEMM. */
static int split_k_bwd_filter_should_match_the_cpu(void) {
    dbk_device_info info;
    DBK_CHECK_OK(dbk_backend_device_info(DBK_BACKEND_KIND_OPENCL, 0, &info));
    const dbk_conv2d_params cp = {1, 1, 1, 1};
    const dbk_op_desc bf = {.op = DBK_OP_CONV2D_BWD_FILTER, .p.conv = cp, .src = {t4(16, 8, 16, 16), t4(16, 16, 16, 16)},
                            .dst = {t4(16, 8, 3, 3)}};
    const char *extra[] = {", \"split_k_compute_units\": 64", ""};
    const int want_slices[] = {8, 1};
    for (int v = 0; v < 2; v++) {
        if (use_gemm_profile(info.name, "clblast", extra[v])) return 1;
        pair pr;
        dbk_status st = create(&pr.dev);
        unsetenv("DBK_PLATFORMS_DIR");
        DBK_CHECK_OK(st);
        DBK_CHECK_OK(dbk_backend_create(DBK_BACKEND_KIND_CPU, 0, &pr.cpu));
        const dbk_ocl_conv_config cfg = dbk_ocl_conv_config_of(pr.dev);
        dbk_ocl_conv_gemm plan[DBK_OCL_CONV_MAX_GEMMS];
        const int shapes = dbk_ocl_conv_gemm_plan(&cfg, &bf, plan);
        const int slices = shapes == 1 && plan[0].batch > 1 ? plan[0].batch : 1;
        printf("  %d compute units: %d slice(s) of K %d\n", cfg.compute_units, slices, shapes ? plan[0].k : 0);
        DBK_CHECK_MSG(shapes == 1 && slices == want_slices[v] && plan[0].k * slices == 16 * 16 * 16,
                      "%d GEMM shapes, %d slices (want 1 shape, %d slices)", shapes, slices, want_slices[v]);
        dbk_backend_counters c0, c1;
        dbk_backend_get_counters(pr.dev, &c0);
        const int rc = compare_op(&pr, &bf, slices > 1 ? "conv bwd_filter split-K" : "conv bwd_filter one GEMM", 1e-10);
        dbk_backend_get_counters(pr.dev, &c1);
        /* im2col, gather_nk, fill, GEMM (one call), and splitk_sum when split */
        DBK_CHECK_MSG(rc != 0 || c1.launches - c0.launches == (slices > 1 ? 5u : 4u), "%llu launches",
                      (unsigned long long)(c1.launches - c0.launches));
        dbk_backend_destroy(pr.dev);
        dbk_backend_destroy(pr.cpu);
        if (rc) return rc;
    }
    return 0;
}

/* CLBlast's indirect GEMM, which pads or transposes into temporary matrices, on every case
 * above (XGEMM_MIN_INDIRECT_SIZE overridden to 1; the tests' sizes would all take the direct
 * kernel): the calls share the one temporary buffer sized while recording (ocl_blas.c) and
 * match the CPU. The override stays for the process: this case runs last. */
static int clblast_indirect_gemm_should_match_the_cpu_with_one_temp_buffer(void) {
    dbk_device_info info;
    DBK_CHECK_OK(dbk_backend_device_info(DBK_BACKEND_KIND_OPENCL, 0, &info));
    if (use_gemm_profile(info.name, "clblast", "")) return 1;
    pair pr;
    dbk_status st = create(&pr.dev);
    unsetenv("DBK_PLATFORMS_DIR");
    DBK_CHECK_OK(st);
    const char *names[] = {"XGEMM_MIN_INDIRECT_SIZE"};
    const size_t values[] = {1};
    const CLBlastStatusCode s =
        CLBlastOverrideParameters(dbk_ocl(pr.dev)->device, "GemmRoutine", CLBlastPrecisionSingle, 1, names, values);
    DBK_CHECK_MSG(s == CLBlastSuccess, "CLBlastOverrideParameters(GemmRoutine): status %d", (int)s);
    DBK_CHECK_OK(dbk_backend_create(DBK_BACKEND_KIND_CPU, 0, &pr.cpu));
    const int rc = gemm_and_conv_cases(&pr);
    const size_t temp = dbk_ocl(pr.dev)->blas_temp_bytes;
    printf("  CLBlast temporary buffer: %zu bytes\n", temp);
    DBK_CHECK(rc != 0 || temp > 0);
    dbk_backend_destroy(pr.dev);
    dbk_backend_destroy(pr.cpu);
    return rc;
}

/* ---------------------------------------------------------------------------------- */
/* the GEMM plan of a convolution (ocl_conv_plan.h) against the launches recorded          */

/* A profile folder whose device profile has 1 MiB workspaces, so that the test's small
 * convolutions run in several chunks, the last one smaller; `extra` adds opencl members. */
static int use_small_workspace_profile(const char *device, const char *extra) {
    char path[1200], text[1024];
    const char *dir = dbk_test_tmpdir("conv_plan");
    DBK_CHECK(dir != NULL);
    snprintf(path, sizeof path, "%s/default.json", dir);
    snprintf(text, sizeof text, "{\"id\": \"default\", \"opencl\": {\"gemm\": \"clblast\"}}\n");
    DBK_CHECK_OK(dbk_file_write_atomic(path, text, strlen(text)));
    snprintf(path, sizeof path, "%s/device.json", dir);
    snprintf(text, sizeof text,
             "{\"id\": \"test-plan\", \"match\": [\"%s\"], \"backends\": [\"opencl\"], \"opencl\": {\"gemm\": "
             "\"tiled\", \"conv_workspace_mb\": 1, \"winograd_workspace_mb\": 1%s}}\n",
             device, extra);
    DBK_CHECK_OK(dbk_file_write_atomic(path, text, strlen(text)));
    setenv("DBK_PLATFORMS_DIR", dir, 1);
    return 0;
}

static bool is_gemm_rb(const dbk_ocl_launch *l) {
    char name[64] = "";
    if (l->kind != DBK_OCL_LAUNCH_KERNEL ||
        clGetKernelInfo(l->kernel, CL_KERNEL_FUNCTION_NAME, sizeof name, name, NULL) != CL_SUCCESS)
        return false;
    return !strcmp(name, "gemm_rb") || !strcmp(name, "gemm_rb2");
}

/* Records op and compares its gemm_rb launches, in order, with the plan: as many, and each
 * launch's range the one gemm_rb needs for the planned M x N (RB_M x RB_W blocks, rounded up
 * to the work-group). */
static int plan_should_match_launches(dbk_backend *be, const dbk_op_desc *op, const char *what) {
    const dbk_ocl_conv_config cfg = dbk_ocl_conv_config_of(be);
    dbk_ocl_conv_gemm plan[DBK_OCL_CONV_MAX_GEMMS];
    const int shapes = dbk_ocl_conv_gemm_plan(&cfg, op, plan);
    DBK_CHECK_OK(dbk_backend_prepare(be, op));
    dbk_ocl_launches l = {0};
    const dbk_ocl_record_fn record = op->op == DBK_OP_CONV2D_FWD         ? dbk_ocl_record_conv2d_fwd
                                     : op->op == DBK_OP_CONV2D_BWD_DATA ? dbk_ocl_record_conv2d_bwd_data
                                                                        : dbk_ocl_record_conv2d_bwd_filter;
    DBK_CHECK_OK(record(be, op, &l));
    const dbk_ocl_gemm_tiles *t = &dbk_ocl(be)->tiles;
    int planned = 0, issued = 0, shape = 0, of_shape = 0, wrong = -1;
    for (int i = 0; i < shapes; i++) planned += plan[i].count;
    for (int i = 0; i < l.count; i++) {
        if (!is_gemm_rb(&l.items[i])) continue;
        /* a launch of a batch of GEMMs (Winograd's E planes) issues them all */
        const int batch = l.items[i].dims == 3 ? (int)l.items[i].global[2] : 1;
        issued += batch;
        if (shape >= shapes || wrong >= 0) continue;
        if (batch != (plan[shape].batch > 1 ? plan[shape].batch : 1)) wrong = issued;
        const size_t panels = ((size_t)plan[shape].n + (size_t)t->rb_w - 1) / (size_t)t->rb_w;
        const size_t blocks[2] = {t->rb_v == 2 ? (panels + 1) / 2 : panels,
                                  ((size_t)plan[shape].m + (size_t)t->rb_m - 1) / (size_t)t->rb_m};
        for (int d = 0; d < 2; d++) {
            const size_t local = l.items[i].local[d];
            if (!local || l.items[i].global[d] != (blocks[d] + local - 1) / local * local) wrong = issued;
        }
        of_shape += batch;
        if (of_shape >= plan[shape].count) shape++, of_shape = 0;
    }
    dbk_ocl_launches_free(&l);
    DBK_CHECK_MSG(issued == planned && issued > 0, "%s: %d gemm_rb launches recorded, the plan says %d", what, issued,
                  planned);
    DBK_CHECK_MSG(wrong < 0, "%s: gemm_rb launch of GEMM %d has another M x N or batch than the plan's", what, wrong);
    return 0;
}

static int conv_gemm_plan_should_match_the_launches(void) {
    dbk_device_info info;
    DBK_CHECK_OK(dbk_backend_device_info(DBK_BACKEND_KIND_OPENCL, 0, &info));
    /* N C K H W R stride pad: chunks with a smaller last one; a 1x1 layer (gather_packed,
     * P*Q = 196 not a multiple of the panel); a strided layer; one image */
    static const int shapes[][8] = {
        {7, 32, 32, 16, 16, 3, 1, 1}, {5, 32, 64, 14, 14, 1, 1, 0}, {3, 16, 32, 16, 16, 3, 2, 1}, {1, 8, 8, 8, 8, 3, 1, 1},
    };
    /* the last: an algorithm per op from conv_by_shape (the first shape's three ops each
     * another; 8x8x8x8 leaves bwd_data to the width rule, im2col below 16 channels) */
    static const char *const algorithms[] = {"im2col", "winograd", "winograd4", "per op"};
    static const char *const per_op = ", \"conv_algorithm\": \"winograd\", \"conv_by_shape\": {\"32x32x16x16\": "
                                      "{\"fwd\": \"winograd4\", \"bwd_data\": \"im2col\", \"bwd_filter\": \"winograd\"}, "
                                      "\"8x8x8x8\": {\"fwd\": \"im2col\", \"bwd_filter\": \"winograd4\"}}";
    static const char *const first_shape[] = {"winograd F(4x4,3x3)", NULL, "winograd F(2x2,3x3)"};
    static const dbk_op ops[] = {DBK_OP_CONV2D_FWD, DBK_OP_CONV2D_BWD_DATA, DBK_OP_CONV2D_BWD_FILTER};
    int rc = 0;
    for (int a = 0; a < 4 && rc == 0; a++) {
        if (use_small_workspace_profile(info.name, a == 3 ? per_op : "")) return 1;
        if (a < 3) setenv("DBK_FORCE_CONV", algorithms[a], 1);
        dbk_backend *be;
        dbk_status st = create(&be);
        unsetenv("DBK_FORCE_CONV");
        DBK_CHECK_OK(st);
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0] && rc == 0; s++) {
            const int *v = shapes[s];
            const int p = (v[3] + 2 * v[7] - v[5]) / v[6] + 1;
            dbk_buffer *bx = NULL, *bw = NULL, *by = NULL;
            DBK_CHECK_OK(dbk_buffer_create(be, (size_t)v[0] * v[1] * v[3] * v[4] * 4, &bx));
            DBK_CHECK_OK(dbk_buffer_create(be, (size_t)v[2] * v[1] * v[5] * v[5] * 4, &bw));
            DBK_CHECK_OK(dbk_buffer_create(be, (size_t)v[0] * v[2] * p * p * 4, &by));
            const dbk_tensor x = dbk_tensor_make(bx, 0, DBK_DTYPE_F32, 4, v[0], v[1], v[3], v[4]);
            const dbk_tensor w = dbk_tensor_make(bw, 0, DBK_DTYPE_F32, 4, v[2], v[1], v[5], v[5]);
            const dbk_tensor y = dbk_tensor_make(by, 0, DBK_DTYPE_F32, 4, v[0], v[2], p, p);
            for (int o = 0; o < 3 && rc == 0; o++) {
                dbk_op_desc d = {.op = ops[o]};
                d.p.conv = (dbk_conv2d_params){.stride_h = v[6], .stride_w = v[6], .pad_h = v[7], .pad_w = v[7]};
                const dbk_tensor *in0 = ops[o] == DBK_OP_CONV2D_BWD_DATA ? &y : &x;
                const dbk_tensor *in1 = ops[o] == DBK_OP_CONV2D_BWD_FILTER ? &y : &w;
                const dbk_tensor *dst = ops[o] == DBK_OP_CONV2D_FWD ? &y : ops[o] == DBK_OP_CONV2D_BWD_DATA ? &x : &w;
                d.src[0] = *in0, d.src[1] = *in1, d.dst[0] = *dst;
                char what[160];
                snprintf(what, sizeof what, "%s %s N%d C%d K%d %dx%d %dx%d/%d", algorithms[a], dbk_op_name(ops[o]),
                         v[0], v[1], v[2], v[3], v[4], v[5], v[5], v[6]);
                if (a == 3 && s == 0) {
                    const char *got = dbk_ocl_op_algorithm(be, &d), *want = first_shape[o];
                    DBK_CHECK_MSG(want ? got && !strcmp(got, want) : !got, "%s: runs as %s, the profile says %s", what,
                                  got ? got : "im2col", want ? want : "im2col");
                }
                rc = plan_should_match_launches(be, &d, what);
            }
            dbk_buffer_destroy(bx), dbk_buffer_destroy(bw), dbk_buffer_destroy(by);
        }
        dbk_backend_destroy(be);
    }
    unsetenv("DBK_PLATFORMS_DIR");
    return rc;
}

/* A GPU profile may give the im2col path a workspace budget far past what the kernels' 32-bit
 * indices reach: the chunks must still stay below 2^31 elements per region. 128 images of a
 * 64-channel 3x3 stride-2 layer to 224x224 make a 3.7G-float col in one chunk. */
static int im2col_chunks_should_stay_within_32bit_indices(void) {
    dbk_conv_choice choice;
    DBK_CHECK_OK(dbk_conv_choice_read(NULL, "opencl", 0, &choice));
    const int n = 128, c = 64, k = 64, h = 448, p = 224;
    const dbk_tensor x = dbk_tensor_make(NULL, 0, DBK_DTYPE_F32, 4, n, c, h, h);
    const dbk_tensor w = dbk_tensor_make(NULL, 0, DBK_DTYPE_F32, 4, k, c, 3, 3);
    const dbk_tensor y = dbk_tensor_make(NULL, 0, DBK_DTYPE_F32, 4, n, k, p, p);
    static const dbk_op ops[] = {DBK_OP_CONV2D_FWD, DBK_OP_CONV2D_BWD_DATA, DBK_OP_CONV2D_BWD_FILTER};
    for (int packed = 0; packed < 2; packed++) {
        const dbk_ocl_conv_config cfg = {.packed = packed, .rb_w = 16, .conv_budget = (size_t)1 << 40,
                                         .choice = &choice};
        for (int o = 0; o < 3; o++) {
            dbk_op_desc d = {.op = ops[o]};
            d.p.conv = (dbk_conv2d_params){.stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1};
            d.src[0] = ops[o] == DBK_OP_CONV2D_BWD_DATA ? y : x;
            d.src[1] = ops[o] == DBK_OP_CONV2D_BWD_FILTER ? y : w;
            d.dst[0] = ops[o] == DBK_OP_CONV2D_FWD ? y : ops[o] == DBK_OP_CONV2D_BWD_DATA ? x : w;
            dbk_ocl_conv_gemm plan[DBK_OCL_CONV_MAX_GEMMS];
            const int shapes = dbk_ocl_conv_gemm_plan(&cfg, &d, plan);
            DBK_CHECK_MSG(shapes > 0, "%s: no GEMMs planned", dbk_op_name(ops[o]));
            long long images = 0;
            int gemms = 0;
            for (int i = 0; i < shapes; i++) {
                /* the chunk's col (C*R*S, nb*P*Q): the GEMM's k x n (forward, filter) or m x n */
                const long long cols = ops[o] == DBK_OP_CONV2D_BWD_FILTER ? plan[i].k : plan[i].n;
                DBK_CHECK_MSG((long long)c * 9 * cols <= 0x7fffffffLL, "%s (%s): a chunk's col holds %lld floats, past "
                              "2^31", dbk_op_name(ops[o]), packed ? "gemm_rb" : "CLBlast", (long long)c * 9 * cols);
                images += (cols / ((long long)p * p)) * plan[i].count;
                gemms += plan[i].count;
            }
            DBK_CHECK_MSG(images == n && gemms >= 2, "%s (%s): %d chunks cover %lld of %d images",
                          dbk_op_name(ops[o]), packed ? "gemm_rb" : "CLBlast", gemms, images, n);
        }
    }
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* the vectorised 2x2 max pool: ties to the first tap, NaN wins, exact argmax          */

static int vector_max_pool_should_keep_tie_and_nan_rules(void) {
    dbk_backend *be[2];
    DBK_CHECK_OK(dbk_backend_create(DBK_BACKEND_KIND_CPU, 0, &be[0]));
    DBK_CHECK_OK(create(&be[1]));
    const int n = 2, c = 3, h = 32, w = 32, p = 16, q = 16;
    float *x = dbk_test_uniform((int64_t)n * c * h * w, 0.0f, 3.0f, 5);
    for (int i = 0; i < n * c * h * w; i++) x[i] = (float)(int)x[i];   /* 0, 1 or 2: many ties */
    x[5 * w + 7] = NAN;
    x[40 * w + 2] = NAN;
    x[40 * w + 3] = NAN;
    float *y[2];
    int32_t *arg[2];
    for (int b = 0; b < 2; b++) {
        dbk_buffer *bx, *by, *ba;
        DBK_CHECK_OK(dbk_buffer_create(be[b], (size_t)n * c * h * w * 4, &bx));
        DBK_CHECK_OK(dbk_buffer_create(be[b], (size_t)n * c * p * q * 4, &by));
        DBK_CHECK_OK(dbk_buffer_create(be[b], (size_t)n * c * p * q * 4, &ba));
        dbk_op_desc op = {.op = DBK_OP_MAXPOOL_FWD, .p.pool = {2, 2, 2, 2}};
        op.src[0] = dbk_tensor_make(bx, 0, DBK_DTYPE_F32, 4, n, c, h, w);
        op.dst[0] = dbk_tensor_make(by, 0, DBK_DTYPE_F32, 4, n, c, p, q);
        op.dst[1] = dbk_tensor_make(ba, 0, DBK_DTYPE_I32, 4, n, c, p, q);
        DBK_CHECK_OK(dbk_tensor_write(&op.src[0], x));
        DBK_CHECK_OK(dbk_backend_run(be[b], &op));
        DBK_CHECK_OK(dbk_backend_sync(be[b]));
        y[b] = dbk_test_read(&op.dst[0]);
        arg[b] = dbk_test_read(&op.dst[1]);
        dbk_buffer_destroy(bx);
        dbk_buffer_destroy(by);
        dbk_buffer_destroy(ba);
    }
    int bad = 0;
    for (int i = 0; i < n * c * p * q; i++) {
        const bool same = arg[0][i] == arg[1][i] && (y[0][i] == y[1][i] || (isnan(y[0][i]) && isnan(y[1][i])));
        if (!same && bad++ < 3)
            fprintf(stderr, "  output %d: cpu %g at %d, opencl %g at %d\n", i, (double)y[0][i], arg[0][i],
                    (double)y[1][i], arg[1][i]);
    }
    free(x);
    for (int b = 0; b < 2; b++) {
        free(y[b]);
        free(arg[b]);
        dbk_backend_destroy(be[b]);
    }
    DBK_CHECK_MSG(bad == 0, "%d outputs differ", bad);
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* programs                                                                           */

static int programs_should_replay_and_time_every_op(void) {
    dbk_backend *be;
    DBK_CHECK_OK(create(&be));
    dbk_buffer *buf;
    DBK_CHECK_OK(dbk_buffer_create(be, 4096, &buf));
    const float logits[6] = {1, 3, 2, 5, 4, 0};   /* rows' argmax: 1, 0 */
    const int32_t labels[2] = {1, 0};
    const float zero = 0.0f;
    dbk_tensor z = dbk_tensor_make(buf, 0, DBK_DTYPE_F32, 2, 2, 3, 1, 1);
    dbk_tensor l = dbk_tensor_make(buf, 64, DBK_DTYPE_I32, 1, 2, 1, 1, 1);
    dbk_tensor c = dbk_tensor_make(buf, 128, DBK_DTYPE_F32, 1, 1, 1, 1, 1);
    dbk_tensor y = dbk_tensor_make(buf, 256, DBK_DTYPE_F32, 2, 2, 3, 1, 1);
    DBK_CHECK_OK(dbk_tensor_write(&z, logits));
    DBK_CHECK_OK(dbk_tensor_write(&l, labels));
    DBK_CHECK_OK(dbk_tensor_write(&c, &zero));
    dbk_op_desc ops[2] = {
        {.op = DBK_OP_ACCURACY, .src = {z, l}, .dst = {c}, .label = "acc"},
        {.op = DBK_OP_SCALE, .p.scale = {2.0f}, .src = {z}, .dst = {y}, .label = "scale"},
    };
    dbk_program *p;
    DBK_CHECK_OK(dbk_program_create(be, ops, 2, &p));
    DBK_CHECK(p->impl != NULL);   /* recorded, not the generic path */
    DBK_CHECK_OK(dbk_program_run(p));
    DBK_CHECK_OK(dbk_program_run(p));
    double secs[2] = {0, 0};
    DBK_CHECK_OK(dbk_program_run_timed(p, secs));
    DBK_CHECK_OK(dbk_backend_sync(be));
    float count;
    DBK_CHECK_OK(dbk_tensor_read(&c, &count));
    DBK_CHECK_MSG(count == 6.0f, "3 replays of 2 correct rows counted %g", (double)count);
    DBK_CHECK_MSG(secs[0] > 0 && secs[1] > 0, "op times %g %g", secs[0], secs[1]);
    dbk_program_destroy(p);
    dbk_buffer_destroy(buf);
    dbk_backend_destroy(be);
    return 0;
}

/* Small writes are staged and do not wait for the queue (ocl_buffer.c): each must still land
 * between the ops enqueued around it, and a staging slot must not be reused before its write
 * ran. 200 writes go through the 64 slots three times over, and the host copy is clobbered
 * at once after each write. */
static int small_writes_should_stay_in_queue_order(void) {
    dbk_backend *be;
    DBK_CHECK_OK(create(&be));
    dbk_buffer *buf;
    DBK_CHECK_OK(dbk_buffer_create(be, 4096, &buf));
    dbk_tensor acc = dbk_tensor_make(buf, 0, DBK_DTYPE_F32, 1, 1, 1, 1, 1);
    dbk_tensor v = dbk_tensor_make(buf, 256, DBK_DTYPE_F32, 1, 1, 1, 1, 1);
    const float zero = 0.0f;
    DBK_CHECK_OK(dbk_tensor_write(&acc, &zero));
    dbk_op_desc add = {.op = DBK_OP_ADD, .src = {acc, v}, .dst = {acc}, .label = "acc += v"};
    dbk_program *p;
    DBK_CHECK_OK(dbk_program_create(be, &add, 1, &p));
    const int n = 3 * DBK_OCL_STAGING_SLOTS + 8;
    for (int i = 0; i < n; i++) {
        float value = (float)i;
        DBK_CHECK_OK(dbk_buffer_write(buf, 256, &value, sizeof value));
        value = -1e6f;
        DBK_CHECK_OK(dbk_program_run(p));
    }
    DBK_CHECK_OK(dbk_backend_sync(be));
    float sum;
    DBK_CHECK_OK(dbk_tensor_read(&acc, &sum));
    const float want = (float)(n * (n - 1) / 2);
    DBK_CHECK_MSG(sum == want, "sum of %d written values: %g, expected %g", n, (double)sum, (double)want);
    dbk_program_destroy(p);
    dbk_buffer_destroy(buf);
    dbk_backend_destroy(be);
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* errors                                                                             */

/* The files the backend builds: every embedded .cl file of cl/ (ocl_program.c). */
extern const dbk_embedded_file dbk_ocl_kernels[];
extern const int               dbk_ocl_kernels_count;

/* Runs create() with file descriptor 2 pointed at a temp file; what landed there into
 * console (cap bytes). */
static dbk_status create_watching_stderr(dbk_backend **be, char *console, size_t cap) {
    fflush(stderr);
    FILE *tmp = tmpfile();
    const int saved = dup(STDERR_FILENO);
    dup2(fileno(tmp), STDERR_FILENO);
    dbk_status st = create(be);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    rewind(tmp);
    size_t n = fread(console, 1, cap - 1, tmp);
    console[n] = '\0';
    fclose(tmp);
    return st;
}

static char caught_log[4096];
static void catch_log(dbk_log_level level, const char *msg, void *user) {
    (void)level, (void)user;
    if (strstr(msg, "compiler output") || strstr(msg, "OpenCL build log")) snprintf(caught_log, sizeof caught_log, "%s", msg);
}

/* cl/ into dir; broken "error" adds a kernel that does not compile to eltwise.cl, "warning" a
 * #warning only, NULL nothing. */
static int copy_kernels(const char *dir, const char *broken) {
    for (int i = 0; i < dbk_ocl_kernels_count; i++) {
        const char *const name = dbk_ocl_kernels[i].name;
        char src[1024], dst[1024];
        snprintf(src, sizeof src, "%s/cl/%s", DBK_TEST_SOURCE_TREE, name);
        snprintf(dst, sizeof dst, "%s/%s", dir, name);
        void *data;
        size_t n;
        DBK_CHECK_OK(dbk_file_read_all(src, &data, &n));
        if (broken && !strcmp(name, "eltwise.cl")) {
            /* A unique warning (PoCL caches builds by source), or an error as well. */
            char bad[256];
            snprintf(bad, sizeof bad, "\n#warning \"daybreak test %ld %ld\"\n%s", (long)getpid(), (long)time(NULL),
                     strcmp(broken, "warning") ? "__kernel void broken_on_purpose(__global float *y) { y[0] = "
                                                 "undeclared_symbol; }\n" : "");
            char *text = malloc(n + strlen(bad) + 1);
            memcpy(text, data, n);
            memcpy(text + n, bad, strlen(bad) + 1);
            DBK_CHECK_OK(dbk_file_write_atomic(dst, text, strlen(text)));
            free(text);
        } else {
            DBK_CHECK_OK(dbk_file_write_atomic(dst, data, n));
        }
        free(data);
    }
    return 0;
}

/* A kernel that fails to build: the error, one line, names the build log's first error and the
 * compiler's own summary, which PoCL's compiler prints straight to file descriptor 2; the whole
 * build log goes to the info log; the console stays daybreak's
 * (nothing on fd 2). The same folder with a warning only builds, and the compiler's "1 warning
 * generated." goes to the info log, not the console. */
static int a_kernel_that_fails_to_build_should_show_its_build_log(void) {
    const char *dir = dbk_test_tmpdir("ocl_broken_kernels");
    if (copy_kernels(dir, "error")) return 1;
    setenv("DBK_KERNEL_DIR", dir, 1);
    setenv("DBK_CACHE_DIR", "off", 1);
    dbk_backend *be = NULL;
    char console[4096];
    dbk_log_level level = dbk_log_get_level();
    dbk_log_set_level(DBK_LOG_LEVEL_INFO);
    dbk_log_set_callback(catch_log, NULL);
    caught_log[0] = '\0';
    dbk_status st = create_watching_stderr(&be, console, sizeof console);
    dbk_log_set_callback(NULL, NULL);
    dbk_log_set_level(level);
    unsetenv("DBK_KERNEL_DIR");
    DBK_CHECK(be == NULL);
    DBK_CHECK_MSG(strstr(caught_log, "OpenCL build log") && strstr(caught_log, "undeclared_symbol"),
                  "the whole build log is not in the info log: %s", caught_log);
    DBK_CHECK_MSG(st == DBK_ERR_COMPILE, "got %s: %s", dbk_status_str(st), dbk_last_error());
    const char *msg = dbk_last_error();
    DBK_CHECK_MSG(strstr(msg, "CL_BUILD_PROGRAM_FAILURE") && strstr(msg, "build log") && strstr(msg, "undeclared_symbol") &&
                      !strchr(msg, '\n'),
                  "message: %s", msg);
    DBK_CHECK_MSG(strstr(msg, "compiler output: ") && strstr(msg, " generated."), "no compiler summary: %s", msg);
    DBK_CHECK_MSG(console[0] == '\0', "the compiler wrote to the console:\n%s", console);

    /* The same folder with a warning only builds: DBK_KERNEL_DIR really is the source. */
    if (copy_kernels(dir, "warning")) return 1;
    setenv("DBK_KERNEL_DIR", dir, 1);
    level = dbk_log_get_level();
    dbk_log_set_level(DBK_LOG_LEVEL_INFO);
    dbk_log_set_callback(catch_log, NULL);
    caught_log[0] = '\0';
    st = create_watching_stderr(&be, console, sizeof console);
    dbk_log_set_callback(NULL, NULL);
    dbk_log_set_level(level);
    unsetenv("DBK_KERNEL_DIR");
    DBK_CHECK_OK(st);
    dbk_backend_destroy(be);
    DBK_CHECK_MSG(console[0] == '\0', "the compiler wrote to the console:\n%s", console);
    DBK_CHECK_MSG(strstr(caught_log, "warning generated."), "the warning is not in the info log: '%s'", caught_log);
    return 0;
}

static int a_missing_kernel_file_should_be_named(void) {
    const char *dir = dbk_test_tmpdir("ocl_empty_kernels");
    setenv("DBK_KERNEL_DIR", dir, 1);
    dbk_backend *be = NULL;
    dbk_status st = create(&be);
    unsetenv("DBK_KERNEL_DIR");
    DBK_CHECK(st != DBK_OK && be == NULL);
    /* The first file the backend reads (file-name order), word for word: the cause was once
     * formatted from the very buffer being written, garbling the message. */
    char expected[8192];
    snprintf(expected, sizeof expected,
             "DBK_KERNEL_DIR=%s: cannot read %s: cannot open %s/%s: No such file or directory", dir,
             dbk_ocl_kernels[0].name, dir, dbk_ocl_kernels[0].name);
    DBK_CHECK_MSG(!strcmp(dbk_last_error(), expected), "message: '%s', expected '%s'", dbk_last_error(), expected);
    return 0;
}

static int opencl_errors_should_be_reported_by_name(void) {
    DBK_CHECK(!strcmp(dbk_ocl_error_name(CL_MEM_OBJECT_ALLOCATION_FAILURE), "CL_MEM_OBJECT_ALLOCATION_FAILURE"));
    DBK_CHECK(!strcmp(dbk_ocl_error_name(CL_INVALID_KERNEL_ARGS), "CL_INVALID_KERNEL_ARGS"));
    DBK_CHECK(!strcmp(dbk_ocl_error_name(-12345), "CL_UNKNOWN_ERROR"));
    dbk_status st = dbk_ocl_fail(NULL, CL_MEM_OBJECT_ALLOCATION_FAILURE, "allocating a buffer of %d bytes", 42);
    DBK_CHECK(st == DBK_ERR_OUT_OF_DEVICE_MEMORY);
    DBK_CHECK_MSG(strstr(dbk_last_error(), "CL_MEM_OBJECT_ALLOCATION_FAILURE") &&
                      strstr(dbk_last_error(), "allocating a buffer of 42 bytes"),
                  "message: %s", dbk_last_error());
    DBK_CHECK(dbk_ocl_fail(NULL, CL_BUILD_PROGRAM_FAILURE, "x") == DBK_ERR_COMPILE);
    DBK_CHECK(dbk_ocl_fail(NULL, CL_INVALID_VALUE, "x") == DBK_ERR_DEVICE);

    /* A buffer beyond the device's max allocation is refused before the driver sees it. */
    dbk_backend *be;
    DBK_CHECK_OK(create(&be));
    dbk_buffer *b = NULL;
    st = dbk_buffer_create(be, (size_t)dbk_backend_get_info(be)->max_alloc_bytes + 1, &b);
    DBK_CHECK(st != DBK_OK && b == NULL);
    dbk_backend_destroy(be);
    return 0;
}

int main(void) {
    if (dbk_backend_device_count(DBK_BACKEND_KIND_OPENCL) == 0)
        return dbk_test_skip_or_fail_in_ci(dbk_backend_kind_compiled(DBK_BACKEND_KIND_OPENCL)
                                 ? "no OpenCL device found (is an ICD such as pocl-opencl-icd installed?)"
                                 : "the OpenCL backend is not compiled in");
    DBK_RUN(second_build_should_read_the_cache_and_reject_a_corrupted_file);
    DBK_RUN(a_cache_file_with_an_altered_binary_should_be_rebuilt);
    DBK_RUN(programs_should_replay_and_time_every_op);
    DBK_RUN(small_writes_should_stay_in_queue_order);
    DBK_RUN(vector_max_pool_should_keep_tie_and_nan_rules);
    DBK_RUN(opencl_errors_should_be_reported_by_name);
    DBK_RUN(a_missing_kernel_file_should_be_named);
    DBK_RUN(a_kernel_that_fails_to_build_should_show_its_build_log);
    DBK_RUN(tiled_gemm_path_should_match_the_cpu);
    DBK_RUN(tiled_gemm_rb2_should_match_the_cpu);
    DBK_RUN(clblast_gemm_path_should_match_the_cpu);
    DBK_RUN(conv_gemm_plan_should_match_the_launches);
    DBK_RUN(im2col_chunks_should_stay_within_32bit_indices);
    DBK_RUN(split_k_bwd_filter_should_match_the_cpu);
    DBK_RUN(clblast_indirect_gemm_should_match_the_cpu_with_one_temp_buffer);
    return dbk_test_finish();
}
