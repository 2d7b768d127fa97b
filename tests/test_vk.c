/*
 * test_vk.c — what is particular to the Vulkan backend, beyond the op-by-op comparison of
 * test_ops_backend (which runs every op against the CPU reference on any backend):
 *  - device listing: every Vulkan device reports a name, Vulkan >= 1.2, its limits, and the
 *    right type (lavapipe is a CPU);
 *  - device limits: a dataset larger than one storage-buffer binding (maxStorageBufferRange,
 *    128 MiB on lavapipe) is augmented bit-exactly like the CPU does, through the windowed
 *    binding; an elementwise op and a convolution on tensors over that limit are split into
 *    several dispatches and still match, and so do batch norm, max pool and the filter
 *    gradient (reductions over windowed bindings), and the conv bias and its gradient
 *    (batch slices); a buffer over maxMemoryAllocationSize is
 *    refused with the size named;
 *  - record once, replay: a program replayed with new per-step scalars written in between
 *    (dbk_buffer_write ordered with the queued work) matches the CPU backend run op by op,
 *    and the timed replay gives a time for every op;
 *  - pipelines (JIT-compiled by lavapipe, 0.1-1 s each): created once per shader and
 *    specialization constants, never again by a repeated op or a program's replay.
 *
 * usage: test_vk [vulkan:N]          the tests (default vulkan:0)
 *        test_vk --validation-run <test_ops_backend> [vulkan:N]
 *                                    the whole op suite under VK_LAYER_KHRONOS_validation with
 *                                    synchronisation validation (DBK_VK_VALIDATION=1); any
 *                                    validation error fails it; skipped when the layer is
 *                                    not installed
 *        test_vk --bench [vulkan:N]  GFLOP/s of the GEMM and convolution shaders, GB/s of
 *                                    airbench94's elementwise and per-channel ops and the time
 *                                    per dispatch (prints figures; not a test)
 *        test_vk --bench-airbench [vulkan:N]  only the airbench94 part (fast on lavapipe)
 * Without a Vulkan device the tests skip (exit 77), or fail when CI=true.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <vulkan/vulkan.h>

#include "backend/backend.h"
#include "core/alloc.h"
#include "core/fileio.h"
#include "core/profile.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/timer.h"
#include "test_util.h"

static dbk_backend_kind kind = DBK_BACKEND_KIND_VULKAN;
static int device = 0;

static dbk_status make_pair(dbk_backend **vk, dbk_backend **cpu) {
    DBK_TRY(dbk_backend_create(kind, device, vk));
    return dbk_backend_create(DBK_BACKEND_KIND_CPU, 0, cpu);
}

/* Deterministic bytes for big host images (cheaper than the float RNG for 140 MB). */
static void fill_bytes(unsigned char *p, size_t n, uint32_t seed) {
    for (size_t i = 0; i < n; i += 4) {
        const uint32_t h = dbk_hash_u32(seed, (uint32_t)(i >> 2), 7, 0);
        for (size_t b = 0; b < 4 && i + b < n; b++) p[i + b] = (unsigned char)(h >> (8 * b));
    }
}

/* Max storageBufferRange of the device, parsed from the device details. */
static uint64_t max_range(const dbk_backend *be) {
    const char *at = strstr(dbk_backend_get_info(be)->details, "maxStorageBufferRange: ");
    return at ? strtoull(at + strlen("maxStorageBufferRange: "), NULL, 10) : 0;
}

/* ---------------------------------------------------------------------------------- */

static int devices_should_report_version_type_and_limits(void) {
    const int n = dbk_backend_device_count(kind);
    DBK_CHECK(n > 0);
    for (int i = 0; i < n; i++) {
        dbk_device_info info;
        DBK_CHECK_OK(dbk_backend_device_info(kind, i, &info));
        printf("  vulkan:%d %s, %s, %s\n", i, info.name, info.api_version, info.driver);
        DBK_CHECK(info.name[0] && info.vendor[0] && info.driver[0]);
        DBK_CHECK_MSG(!strncmp(info.api_version, "Vulkan 1.", 9), "%s", info.api_version);
        DBK_CHECK(strstr(info.details, "maxStorageBufferRange") && strstr(info.details, "subgroup size"));
        DBK_CHECK(info.max_alloc_bytes > 0 && info.local_mem_bytes > 0);
        if (strstr(info.name, "llvmpipe")) DBK_CHECK_MSG(info.type == DBK_DEVICE_TYPE_CPU, "lavapipe is a CPU device");
    }
    dbk_device_info info;
    DBK_CHECK(dbk_backend_device_info(kind, n, &info) == DBK_ERR_NOT_FOUND);
    return 0;
}

static int a_buffer_over_the_allocation_limit_should_be_refused_by_size(void) {
    dbk_backend *be;
    DBK_CHECK_OK(dbk_backend_create(kind, device, &be));
    const uint64_t limit = dbk_backend_get_info(be)->max_alloc_bytes;
    dbk_buffer *b = NULL;
    const dbk_status st = dbk_buffer_create(be, (size_t)limit + 16, &b);
    char want[64];
    snprintf(want, sizeof want, "%llu", (unsigned long long)limit + 16);
    const bool named = strstr(dbk_last_error(), want) != NULL;
    dbk_buffer_destroy(b);
    dbk_backend_destroy(be);
    DBK_CHECK(st == DBK_ERR_INVALID_ARG || st == DBK_ERR_OUT_OF_DEVICE_MEMORY);
    DBK_CHECK_MSG(named, "message does not name %s: %s", want, dbk_last_error());
    return 0;
}

/* Buffers live where `memory` says, and host copies reach them either way: mapped (lavapipe's
 * default) or through the 16 MiB staging buffer a discrete GPU needs (DBK_VK_MEMORY=staged, as
 * ctest's vulkan_staged runs this file). A 40 MiB round trip at an odd offset crosses the
 * staging buffer's chunks; a write into the middle must leave the rest as it was. */
static int host_copies_should_go_the_way_the_memory_line_says(void) {
    dbk_device_info listed;
    DBK_CHECK_OK(dbk_backend_device_info(kind, device, &listed));
    dbk_backend *be;
    DBK_CHECK_OK(dbk_backend_create(kind, device, &be));
    const char *memory = dbk_backend_get_info(be)->memory;
    const char *want = getenv("DBK_VK_MEMORY") && !strcmp(getenv("DBK_VK_MEMORY"), "staged") ? "staged" : NULL;
    printf("  buffers: %s\n", memory);
    DBK_CHECK_MSG(strstr(memory, "memory type ") && strstr(memory, "device-local"), "memory line: '%s'", memory);
    DBK_CHECK_MSG(!strcmp(listed.memory, memory), "devices says '%s', the backend '%s'", listed.memory, memory);
    if (want) DBK_CHECK_MSG(strstr(memory, "staged through"), "DBK_VK_MEMORY=staged, but: '%s'", memory);
    const size_t n = (size_t)40 << 20, off = 4099;
    unsigned char *src = malloc(n), *back = malloc(n);
    DBK_CHECK(src && back);
    for (size_t i = 0; i < n; i++) src[i] = (unsigned char)(i * 2654435761u >> 24);
    dbk_buffer *b;
    DBK_CHECK_OK(dbk_buffer_create(be, n + off + 64, &b));
    DBK_CHECK_OK(dbk_buffer_write(b, off, src, n));
    memset(back, 0, n);
    DBK_CHECK_OK(dbk_buffer_read(b, off, back, n));
    size_t first_bad = n;
    for (size_t i = 0; i < n && first_bad == n; i++) if (back[i] != src[i]) first_bad = i;
    DBK_CHECK_MSG(first_bad == n, "byte %zu of a 40 MiB round trip differs", first_bad);
    const unsigned char mark[3] = {1, 2, 3};
    DBK_CHECK_OK(dbk_buffer_write(b, off + ((size_t)17 << 20), mark, sizeof mark));
    DBK_CHECK_OK(dbk_buffer_read(b, off, back, n));
    for (size_t i = 0; i < n && first_bad == n; i++) {
        const size_t at = i - ((size_t)17 << 20);
        const unsigned char expect = at < sizeof mark ? mark[at] : src[i];
        if (back[i] != expect) first_bad = i;
    }
    DBK_CHECK_MSG(first_bad == n, "after a 3-byte write at 17 MiB, byte %zu differs", first_bad);
    dbk_buffer_destroy(b);
    dbk_backend_destroy(be);
    free(src);
    free(back);
    return 0;
}

/* relu_fwd of 1000 values on a new backend (the environment read at its creation); the status
 * of the run, and with DBK_OK whether every output is max(x, 0). */
static dbk_status relu_on_new_backend(bool *right) {
    dbk_backend *be;
    dbk_status st = dbk_backend_create(kind, device, &be);
    if (st != DBK_OK) return st;
    float x[1000], y[1000];
    for (int i = 0; i < 1000; i++) x[i] = (float)(i - 500) / 7.0f;
    dbk_buffer *bx = NULL, *by = NULL;
    st = dbk_buffer_create(be, sizeof x, &bx);
    if (st == DBK_OK) st = dbk_buffer_create(be, sizeof y, &by);
    if (st == DBK_OK) st = dbk_buffer_write(bx, 0, x, sizeof x);
    dbk_op_desc d = {.op = DBK_OP_RELU_FWD};
    d.src[0] = dbk_tensor_make(bx, 0, DBK_DTYPE_F32, 1, 1000, 0, 0, 0);
    d.dst[0] = dbk_tensor_make(by, 0, DBK_DTYPE_F32, 1, 1000, 0, 0, 0);
    if (st == DBK_OK) st = dbk_backend_run(be, &d);
    if (st == DBK_OK) st = dbk_buffer_read(by, 0, y, sizeof y);
    *right = true;
    for (int i = 0; i < 1000 && st == DBK_OK; i++) *right &= y[i] == (x[i] < 0.0f ? 0.0f : x[i]);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", dbk_last_error());
    dbk_buffer_destroy(bx);
    dbk_buffer_destroy(by);
    dbk_backend_destroy(be);
    if (st != DBK_OK) dbk_set_error(st, "%s", msg);
    return st;
}

/* DBK_SHADER_DIR: a valid <shader>.spv there is taken (the build's own relu_fwd.spv computes
 * relu), one that is not SPIR-V is refused naming the file (so the folder is read), and a shader
 * the folder lacks stays the embedded one. */
static int shader_dir_should_replace_embedded_shaders(void) {
    const char *dir = dbk_test_tmpdir("vk-shader-dir");
    DBK_CHECK(dir);
    char path[4200], built[600];
    snprintf(built, sizeof built, "%s/relu_fwd.spv", DBK_TEST_SHADER_DIR);
    snprintf(path, sizeof path, "%s/relu_fwd.spv", dir);
    void *spv = NULL;
    size_t n = 0;
    DBK_CHECK_OK(dbk_file_read_all(built, &spv, &n));
    DBK_CHECK_OK(dbk_file_write_atomic(path, spv, n));
    dbk_free(spv);
    setenv("DBK_SHADER_DIR", dir, 1);
    bool right = false;
    dbk_status st = relu_on_new_backend(&right);
    DBK_CHECK_MSG(st == DBK_OK && right, "the folder's relu_fwd.spv: status %d, right %d: %s", st, right, dbk_last_error());
    DBK_CHECK_OK(dbk_file_write_atomic(path, "not spirv", 9));
    st = relu_on_new_backend(&right);
    const bool named = strstr(dbk_last_error(), path) && strstr(dbk_last_error(), "SPIR-V");
    DBK_CHECK_MSG(st != DBK_OK && named, "a relu_fwd.spv that is not SPIR-V: status %d: %s", st, dbk_last_error());
    remove(path);
    st = relu_on_new_backend(&right);   /* the folder without relu_fwd.spv: the embedded one */
    unsetenv("DBK_SHADER_DIR");
    DBK_CHECK_MSG(st == DBK_OK && right, "the embedded relu_fwd: status %d: %s", st, dbk_last_error());
    return 0;
}

/* The resident dataset is bigger than one binding: images near its end must be read right. */
static int a_dataset_over_the_binding_limit_should_augment_like_the_cpu(void) {
    dbk_backend *vk, *cpu;
    DBK_CHECK_OK(make_pair(&vk, &cpu));
    const uint64_t range = max_range(vk);
    DBK_CHECK(range > 0);
    const int64_t M = (int64_t)(range / 3072) + 2000, N = 64;   /* just over one binding */
    const size_t img_bytes = (size_t)M * 3072;
    unsigned char *img = malloc(img_bytes), *lab = malloc((size_t)M);
    int32_t idx[64], state[4] = {0, 1234, 0, 0};
    DBK_CHECK(img && lab);
    fill_bytes(img, img_bytes, 1);
    for (int64_t j = 0; j < M; j++) lab[j] = (unsigned char)(j % 10);
    for (int i = 0; i < N; i++) idx[i] = i % 2 ? (int32_t)(M - 1 - i) : (int32_t)(i * 997 % M);

    dbk_backend *bes[2] = {vk, cpu};
    float *out[2] = {0};
    int32_t labels[2][64];
    for (int b = 0; b < 2; b++) {
        dbk_buffer *bi, *bl, *bx, *bs, *bo, *by;
        DBK_CHECK_OK(dbk_buffer_create(bes[b], img_bytes + 16, &bi));
        DBK_CHECK_OK(dbk_buffer_create(bes[b], (size_t)M, &bl));
        DBK_CHECK_OK(dbk_buffer_create(bes[b], sizeof idx, &bx));
        DBK_CHECK_OK(dbk_buffer_create(bes[b], sizeof state, &bs));
        DBK_CHECK_OK(dbk_buffer_create(bes[b], (size_t)N * 3072 * 4, &bo));
        DBK_CHECK_OK(dbk_buffer_create(bes[b], (size_t)N * 4, &by));
        /* 16 bytes in, so the window start and the tensor differ */
        DBK_CHECK_OK(dbk_buffer_write(bi, 16, img, img_bytes));
        DBK_CHECK_OK(dbk_buffer_write(bl, 0, lab, (size_t)M));
        DBK_CHECK_OK(dbk_buffer_write(bx, 0, idx, sizeof idx));
        DBK_CHECK_OK(dbk_buffer_write(bs, 0, state, sizeof state));
        dbk_op_desc d = {.op = DBK_OP_AUGMENT};
        d.src[0] = dbk_tensor_make(bi, 16, DBK_DTYPE_U8, 4, M, 3, 32, 32);
        d.src[1] = dbk_tensor_make(bl, 0, DBK_DTYPE_U8, 1, M, 0, 0, 0);
        d.src[2] = dbk_tensor_make(bx, 0, DBK_DTYPE_I32, 1, N, 0, 0, 0);
        d.src[3] = dbk_tensor_make(bs, 0, DBK_DTYPE_I32, 1, 4, 0, 0, 0);
        d.dst[0] = dbk_tensor_make(bo, 0, DBK_DTYPE_F32, 4, N, 3, 32, 32);
        d.dst[1] = dbk_tensor_make(by, 0, DBK_DTYPE_I32, 1, N, 0, 0, 0);
        d.p.augment = (dbk_augment_params){.train = true, .pad = 4, .flip = true, .cutout = 8,
                                           .mean = {0.49f, 0.48f, 0.45f}, .std = {0.25f, 0.24f, 0.26f}};
        DBK_CHECK_OK(dbk_backend_run(bes[b], &d));
        DBK_CHECK_OK(dbk_backend_sync(bes[b]));
        out[b] = dbk_test_read(&d.dst[0]);
        DBK_CHECK_OK(dbk_tensor_read(&d.dst[1], labels[b]));
        dbk_buffer *all[] = {bi, bl, bx, bs, bo, by};
        for (int k = 0; k < 6; k++) dbk_buffer_destroy(all[k]);
    }
    const bool same = !memcmp(out[0], out[1], (size_t)N * 3072 * 4) && !memcmp(labels[0], labels[1], sizeof labels[0]);
    printf("  %lld images (%.1f MiB, binding limit %.1f MiB): %s\n", (long long)M, (double)img_bytes / 1048576.0,
           (double)range / 1048576.0, same ? "bit-identical" : "DIFFERENT");
    free(out[0]);
    free(out[1]);
    free(img);
    free(lab);
    dbk_backend_destroy(vk);
    dbk_backend_destroy(cpu);
    DBK_CHECK(same);
    return 0;
}

/* ReLU in place on a tensor larger than one binding: split into several dispatches. */
static int an_elementwise_op_over_the_binding_limit_should_be_split(void) {
    dbk_backend *be;
    DBK_CHECK_OK(dbk_backend_create(kind, device, &be));
    const int64_t n = (int64_t)(max_range(be) / 4) + 4099;
    float *h = malloc((size_t)n * 4);
    DBK_CHECK(h);
    for (int64_t i = 0; i < n; i++) h[i] = (float)(i % 7) - 3.0f;
    dbk_buffer *b;
    DBK_CHECK_OK(dbk_buffer_create(be, (size_t)n * 4 + 64, &b));
    DBK_CHECK_OK(dbk_buffer_write(b, 64, h, (size_t)n * 4));
    dbk_op_desc d = {.op = DBK_OP_RELU_FWD};
    d.src[0] = d.dst[0] = dbk_tensor_make(b, 64, DBK_DTYPE_F32, 1, n, 0, 0, 0);
    DBK_CHECK_OK(dbk_backend_run(be, &d));
    DBK_CHECK_OK(dbk_buffer_read(b, 64, h, (size_t)n * 4));
    int64_t bad = -1;
    for (int64_t i = 0; i < n && bad < 0; i++) {
        const float want = (float)(i % 7) - 3.0f;
        if (h[i] != (want < 0.0f ? 0.0f : want)) bad = i;
    }
    free(h);
    dbk_buffer_destroy(b);
    dbk_backend_destroy(be);
    DBK_CHECK_MSG(bad < 0, "element %lld of %lld wrong", (long long)bad, (long long)n);
    return 0;
}

/* Dropout on a tensor larger than one binding: each dispatch is told its first element
 * (eltwise_head.glsl's first), so the mask is the whole tensor's, bit for bit the CPU's. */
static int dropout_over_the_binding_limit_should_keep_the_whole_tensors_mask(void) {
    dbk_backend *bes[2];
    DBK_CHECK_OK(make_pair(&bes[0], &bes[1]));
    const int64_t n = (int64_t)(max_range(bes[0]) / 4) + 4099;
    float *h = malloc((size_t)n * 4), *out[2] = {NULL, NULL};
    DBK_CHECK(h);
    for (int64_t i = 0; i < n; i++) h[i] = (float)(i % 5) + 1.0f;
    const int32_t state[4] = {7, 12345, 0, 0};
    for (int b = 0; b < 2; b++) {
        dbk_buffer *bx, *bs;
        DBK_CHECK_OK(dbk_buffer_create(bes[b], (size_t)n * 4, &bx));
        DBK_CHECK_OK(dbk_buffer_create(bes[b], sizeof state, &bs));
        DBK_CHECK_OK(dbk_buffer_write(bx, 0, h, (size_t)n * 4));
        DBK_CHECK_OK(dbk_buffer_write(bs, 0, state, sizeof state));
        dbk_op_desc d = {.op = DBK_OP_DROPOUT_FWD, .p.dropout = {0.25f, 3u}};
        d.src[0] = d.dst[0] = dbk_tensor_make(bx, 0, DBK_DTYPE_F32, 1, n, 0, 0, 0);
        d.src[1] = dbk_tensor_make(bs, 0, DBK_DTYPE_I32, 1, 4, 0, 0, 0);
        DBK_CHECK_OK(dbk_backend_run(bes[b], &d));
        DBK_CHECK_OK(dbk_backend_sync(bes[b]));
        out[b] = dbk_test_read(&d.dst[0]);
        dbk_buffer_destroy(bx);
        dbk_buffer_destroy(bs);
    }
    int64_t bad = -1;
    for (int64_t i = 0; i < n && bad < 0; i++)
        if (memcmp(&out[0][i], &out[1][i], 4)) bad = i;
    free(h);
    free(out[0]);
    free(out[1]);
    dbk_backend_destroy(bes[0]);
    dbk_backend_destroy(bes[1]);
    DBK_CHECK_MSG(bad < 0, "element %lld of %lld differs from the CPU's", (long long)bad, (long long)n);
    return 0;
}

/* A convolution whose input exceeds one binding: the batch is split into chunks. */
static int a_convolution_over_the_binding_limit_should_match_the_cpu(void) {
    dbk_backend *vk, *cpu;
    DBK_CHECK_OK(make_pair(&vk, &cpu));
    /* 1x1 and K = 2 keep the work small on lavapipe; only the size of x matters here */
    const int64_t C = 64, H = 32, K = 2;
    const int64_t N = (int64_t)(max_range(vk) / (uint64_t)(C * H * H * 4)) + 3;
    const int64_t nx = N * C * H * H, nw = K * C, ny = N * K * H * H;
    float *x = dbk_test_uniform(nx, -1.0f, 1.0f, 5), *w = dbk_test_uniform(nw, -1.0f, 1.0f, 6);
    float *y[2] = {0};
    dbk_backend *bes[2] = {vk, cpu};
    for (int b = 0; b < 2; b++) {
        dbk_buffer *bx, *bw, *by;
        DBK_CHECK_OK(dbk_buffer_create(bes[b], (size_t)nx * 4, &bx));
        DBK_CHECK_OK(dbk_buffer_create(bes[b], (size_t)nw * 4, &bw));
        DBK_CHECK_OK(dbk_buffer_create(bes[b], (size_t)ny * 4, &by));
        DBK_CHECK_OK(dbk_buffer_write(bx, 0, x, (size_t)nx * 4));
        DBK_CHECK_OK(dbk_buffer_write(bw, 0, w, (size_t)nw * 4));
        dbk_op_desc d = {.op = DBK_OP_CONV2D_FWD, .p.conv = {1, 1, 0, 0}};
        d.src[0] = dbk_tensor_make(bx, 0, DBK_DTYPE_F32, 4, N, C, H, H);
        d.src[1] = dbk_tensor_make(bw, 0, DBK_DTYPE_F32, 4, K, C, 1, 1);
        d.dst[0] = dbk_tensor_make(by, 0, DBK_DTYPE_F32, 4, N, K, H, H);
        DBK_CHECK_OK(dbk_backend_prepare(bes[b], &d));
        DBK_CHECK_OK(dbk_backend_run(bes[b], &d));
        DBK_CHECK_OK(dbk_backend_sync(bes[b]));
        y[b] = dbk_test_read(&d.dst[0]);
        dbk_buffer_destroy(bx);
        dbk_buffer_destroy(bw);
        dbk_buffer_destroy(by);
    }
    const double nmse = dbk_test_nmse(y[1], y[0], (size_t)ny);
    printf("  x (%lld,%lld,%lld,%lld) = %.1f MiB: nmse %.2e\n", (long long)N, (long long)C, (long long)H, (long long)H,
           (double)nx * 4 / 1048576.0, nmse);
    free(x);
    free(w);
    free(y[0]);
    free(y[1]);
    dbk_backend_destroy(vk);
    dbk_backend_destroy(cpu);
    DBK_CHECK(nmse < 1e-7);
    return 0;
}

/* A 3-op program (scale, relu, sgd with lr from a scalars buffer) replayed 3 times with new
 * learning rates written between runs, against the CPU backend running the same ops. */
/* llvmpipe JIT-compiles every pipeline (0.1-0.2 s each for the GEMM-shaped shaders on the
 * 2-core CI machine), so a pipeline must be created once per (shader, specialization
 * constants) and process: never again for a repeated op, never by a program's replay. Counted
 * from the backend's debug log line "Vulkan: pipeline <shader> ... created in <t> s". */
static int pipelines_created;

static void count_pipelines(dbk_log_level level, const char *msg, void *user) {
    (void)level;
    (void)user;
    if (!strncmp(msg, "Vulkan: pipeline ", 17) && strstr(msg, " created in ")) pipelines_created++;
}

static int pipelines_should_be_created_once_not_per_run(void) {
    const double t0 = dbk_time_now();
    dbk_backend *be;
    DBK_CHECK_OK(dbk_backend_create(kind, device, &be));
    const int64_t n = 64;
    dbk_buffer *a, *b, *c;
    DBK_CHECK_OK(dbk_buffer_create(be, (size_t)(n * n) * 4, &a));
    DBK_CHECK_OK(dbk_buffer_create(be, (size_t)(n * n) * 4, &b));
    DBK_CHECK_OK(dbk_buffer_create(be, (size_t)(n * n) * 4, &c));
    dbk_op_desc ops[2] = {{.op = DBK_OP_GEMM, .p.gemm = {false, false, 1.0f, 0.0f}}, {.op = DBK_OP_ADD}};
    ops[0].src[0] = dbk_tensor_make(a, 0, DBK_DTYPE_F32, 2, n, n, 0, 0);
    ops[0].src[1] = dbk_tensor_make(b, 0, DBK_DTYPE_F32, 2, n, n, 0, 0);
    ops[0].dst[0] = dbk_tensor_make(c, 0, DBK_DTYPE_F32, 2, n, n, 0, 0);
    ops[1].src[0] = ops[1].src[1] = dbk_tensor_make(c, 0, DBK_DTYPE_F32, 1, n * n, 0, 0, 0);
    ops[1].dst[0] = dbk_tensor_make(a, 0, DBK_DTYPE_F32, 1, n * n, 0, 0, 0);

    const dbk_log_level saved = dbk_log_get_level();
    dbk_log_set_level(DBK_LOG_LEVEL_DEBUG);
    dbk_log_set_callback(count_pipelines, NULL);
    pipelines_created = 0;
    dbk_status st = dbk_backend_run(be, &ops[0]);
    const int first = pipelines_created;
    if (st == DBK_OK) st = dbk_backend_run(be, &ops[0]);
    if (st == DBK_OK) st = dbk_backend_sync(be);
    const int repeated = pipelines_created - first;
    dbk_program *p = NULL;
    if (st == DBK_OK) st = dbk_program_create(be, ops, 2, &p);
    const int recorded = pipelines_created;
    for (int i = 0; i < 3 && st == DBK_OK; i++) st = dbk_program_run(p);
    if (st == DBK_OK) st = dbk_backend_sync(be);
    const int replayed = pipelines_created - recorded;
    dbk_log_set_callback(NULL, NULL);
    dbk_log_set_level(saved);
    dbk_program_destroy(p);
    dbk_buffer_destroy(a);
    dbk_buffer_destroy(b);
    dbk_buffer_destroy(c);
    dbk_backend_destroy(be);
    DBK_CHECK_OK(st);
    printf("  pipelines created: %d by the first GEMM, %d by the same GEMM again, %d by recording GEMM + add, "
           "%d by 3 replays (%.1f s)\n", first, repeated, recorded - first, replayed, dbk_time_now() - t0);
    DBK_CHECK_MSG(first >= 1, "the first GEMM logged no pipeline creation (is the debug line gone?)");
    DBK_CHECK_MSG(repeated == 0, "running the same GEMM again created %d pipelines", repeated);
    DBK_CHECK_MSG(recorded - first == 1, "recording GEMM + add created %d pipelines, expected 1 (add)", recorded - first);
    DBK_CHECK_MSG(replayed == 0, "replaying a program created %d pipelines", replayed);
    return 0;
}

static int a_replayed_program_should_match_op_by_op_runs(void) {
    dbk_backend *vk, *cpu;
    DBK_CHECK_OK(make_pair(&vk, &cpu));
    const int64_t n = 10007;
    float *p0 = dbk_test_uniform(n, -1.0f, 1.0f, 11), *g0 = dbk_test_uniform(n, -1.0f, 1.0f, 12);
    float *res[2] = {0};
    double seconds[3] = {0, 0, 0};
    dbk_backend *bes[2] = {vk, cpu};
    for (int b = 0; b < 2; b++) {
        dbk_buffer *bp, *bg, *bm, *bs;
        DBK_CHECK_OK(dbk_buffer_create(bes[b], (size_t)n * 4, &bp));
        DBK_CHECK_OK(dbk_buffer_create(bes[b], (size_t)n * 4, &bg));
        DBK_CHECK_OK(dbk_buffer_create(bes[b], (size_t)n * 4, &bm));
        DBK_CHECK_OK(dbk_buffer_create(bes[b], 64, &bs));
        DBK_CHECK_OK(dbk_buffer_write(bp, 0, p0, (size_t)n * 4));
        DBK_CHECK_OK(dbk_buffer_write(bg, 0, g0, (size_t)n * 4));
        const dbk_tensor tp = dbk_tensor_make(bp, 0, DBK_DTYPE_F32, 1, n, 0, 0, 0);
        const dbk_tensor tg = dbk_tensor_make(bg, 0, DBK_DTYPE_F32, 1, n, 0, 0, 0);
        const dbk_tensor tm = dbk_tensor_make(bm, 0, DBK_DTYPE_F32, 1, n, 0, 0, 0);
        dbk_op_desc ops[4] = {{.op = DBK_OP_FILL, .p.fill = {0.0f}},
                              {.op = DBK_OP_SCALE, .p.scale = {1.5f}},
                              {.op = DBK_OP_RELU_FWD},
                              {.op = DBK_OP_SGD_MOMENTUM_UPDATE, .p.sgd = {0.9f, 5e-4f, true}}};
        ops[0].dst[0] = tm;
        ops[1].src[0] = ops[1].dst[0] = tg;
        ops[2].src[0] = tg;
        ops[2].dst[0] = tg;
        ops[3].src[0] = tg;
        ops[3].src[1] = dbk_tensor_make(bs, 4, DBK_DTYPE_F32, 1, 1, 0, 0, 0);   /* unaligned scalar */
        ops[3].dst[0] = tp;
        ops[3].dst[1] = tm;
        dbk_program *prog;
        DBK_CHECK_OK(dbk_program_create(bes[b], ops, 1, &prog));   /* momentum = 0 once */
        DBK_CHECK_OK(dbk_program_run(prog));
        dbk_program_destroy(prog);
        DBK_CHECK_OK(dbk_program_create(bes[b], ops + 1, 3, &prog));
        for (int step = 0; step < 3; step++) {
            const float lr = 0.1f * (float)(step + 1);
            DBK_CHECK_OK(dbk_buffer_write(bs, 4, &lr, 4));
            if (b == 0 && step == 2) DBK_CHECK_OK(dbk_program_run_timed(prog, seconds));
            else DBK_CHECK_OK(dbk_program_run(prog));
        }
        DBK_CHECK_OK(dbk_backend_sync(bes[b]));
        res[b] = dbk_test_read(&tp);
        dbk_program_destroy(prog);
        dbk_buffer_destroy(bp);
        dbk_buffer_destroy(bg);
        dbk_buffer_destroy(bm);
        dbk_buffer_destroy(bs);
    }
    const double nmse = dbk_test_nmse(res[1], res[0], (size_t)n);
    printf("  replayed program: nmse %.2e; timed run %.1f / %.1f / %.1f us\n", nmse, seconds[0] * 1e6,
           seconds[1] * 1e6, seconds[2] * 1e6);
    free(p0);
    free(g0);
    free(res[0]);
    free(res[1]);
    dbk_backend_destroy(vk);
    dbk_backend_destroy(cpu);
    DBK_CHECK(nmse < 1e-10);
    for (int i = 0; i < 3; i++) DBK_CHECK(seconds[i] > 0.0 && seconds[i] < 10.0);
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* one op on both backends from host inputs                                            */

#define MAX_SLOTS 9   /* slots of one op in run_both (batchnorm_relu_bwd: 6 sources, 3 outputs) */

typedef struct slot {
    bool        dst;            /* an output (compared) or an input */
    int         idx;            /* src[idx] / dst[idx] */
    dbk_dtype   dtype;
    int64_t     shape[4];       /* 4-d, or fewer with trailing zeros treated as absent */
    const void *init;           /* host contents, or NULL for zeros */
} slot;

static int ndims(const slot *s) {
    int n = 0;
    while (n < 4 && s->shape[n] > 0) n++;
    return n;
}

/* Runs `proto` with the slots' tensors on the Vulkan and CPU backends; got[b][i] receive the
 * slots' contents afterwards (b = 0 Vulkan, 1 CPU; caller frees). */
static dbk_status run_both(const dbk_op_desc *proto, const slot *slots, int n, void *got[2][MAX_SLOTS]) {
    dbk_backend *bes[2];
    DBK_TRY(dbk_backend_create(kind, device, &bes[0]));
    DBK_TRY(dbk_backend_create(DBK_BACKEND_KIND_CPU, 0, &bes[1]));
    for (int b = 0; b < 2; b++) {
        dbk_op_desc d = *proto;
        dbk_buffer *bufs[MAX_SLOTS] = {0};
        for (int i = 0; i < n; i++) {
            const slot *sl = &slots[i];
            dbk_tensor t = dbk_tensor_make(NULL, 0, sl->dtype, ndims(sl), sl->shape[0], sl->shape[1], sl->shape[2],
                                           sl->shape[3]);
            const size_t nbytes = dbk_tensor_nbytes(&t);
            DBK_TRY(dbk_buffer_create(bes[b], nbytes, &bufs[i]));
            t.buf = bufs[i];
            if (sl->init) {
                DBK_TRY(dbk_buffer_write(bufs[i], 0, sl->init, nbytes));
            } else {
                void *zero = calloc(1, nbytes);
                DBK_TRY(dbk_buffer_write(bufs[i], 0, zero, nbytes));
                free(zero);
            }
            if (sl->dst) d.dst[sl->idx] = t;
            else d.src[sl->idx] = t;
        }
        DBK_TRY(dbk_backend_prepare(bes[b], &d));
        DBK_TRY(dbk_backend_run(bes[b], &d));
        DBK_TRY(dbk_backend_sync(bes[b]));
        for (int i = 0; i < n; i++) {
            got[b][i] = malloc(dbk_buffer_size(bufs[i]));
            DBK_TRY(dbk_buffer_read(bufs[i], 0, got[b][i], dbk_buffer_size(bufs[i])));
            dbk_buffer_destroy(bufs[i]);
        }
    }
    dbk_backend_destroy(bes[0]);
    dbk_backend_destroy(bes[1]);
    return DBK_OK;
}

/* The worst NMSE over the f32 outputs; integer outputs must match exactly (else 1). */
static double compare_outputs(const slot *slots, int n, void *got[2][MAX_SLOTS]) {
    double worst = 0.0;
    for (int i = 0; i < n; i++) {
        if (!slots[i].dst) continue;
        const int64_t cnt = slots[i].shape[0] * (slots[i].shape[1] ? slots[i].shape[1] : 1) *
                            (slots[i].shape[2] ? slots[i].shape[2] : 1) * (slots[i].shape[3] ? slots[i].shape[3] : 1);
        double e;
        if (slots[i].dtype == DBK_DTYPE_F32) e = dbk_test_nmse(got[1][i], got[0][i], (size_t)cnt);
        else e = memcmp(got[1][i], got[0][i], (size_t)cnt * 4) ? 1.0 : 0.0;
        if (e > worst || isnan(e)) worst = e;
    }
    return worst;
}

static void free_got(int n, void *got[2][MAX_SLOTS]) {
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < n; i++) free(got[b][i]);
}

/* Batch norm (training forward, backward, backward fused with ReLU) and max pool (forward,
 * backward) on a batch whose activations exceed one binding: reductions read windows,
 * elementwise passes split. */
static int batch_norm_and_pool_over_the_binding_limit_should_match_the_cpu(void) {
    dbk_backend *be;
    DBK_CHECK_OK(dbk_backend_create(kind, device, &be));
    const int64_t C = 8, H = 64;
    const int64_t N = (int64_t)(max_range(be) / (uint64_t)(C * H * H * 4)) + 3, nx = N * C * H * H;
    dbk_backend_destroy(be);
    float *x = dbk_test_uniform(nx, -2.0f, 2.0f, 21), *dy = dbk_test_uniform(nx, -1.0f, 1.0f, 22);
    float *g = dbk_test_uniform(C, 0.5f, 1.5f, 23), *bt = dbk_test_uniform(C, -0.5f, 0.5f, 24);
    float *dyp = dbk_test_uniform(nx / 4, -1.0f, 1.0f, 25);
    void *got[2][MAX_SLOTS] = {{0}};
    double worst = 0.0;

    dbk_op_desc bn = {.op = DBK_OP_BATCHNORM_FWD_TRAIN, .p.bn = {1e-5f, 0.1f}};
    const slot bs[] = {{false, 0, DBK_DTYPE_F32, {N, C, H, H}, x}, {false, 1, DBK_DTYPE_F32, {C}, g},
                       {false, 2, DBK_DTYPE_F32, {C}, bt},         {true, 0, DBK_DTYPE_F32, {N, C, H, H}, NULL},
                       {true, 1, DBK_DTYPE_F32, {C}, NULL},        {true, 2, DBK_DTYPE_F32, {C}, NULL},
                       {true, 3, DBK_DTYPE_F32, {C}, g},           {true, 4, DBK_DTYPE_F32, {C}, bt}};
    DBK_CHECK_OK(run_both(&bn, bs, 8, got));
    const double e_fwd = compare_outputs(bs, 8, got);
    float mean[8], invstd[8];
    memcpy(mean, got[1][4], sizeof mean);
    memcpy(invstd, got[1][5], sizeof invstd);
    free_got(8, got);

    dbk_op_desc bb = {.op = DBK_OP_BATCHNORM_BWD};
    const slot bbs[] = {{false, 0, DBK_DTYPE_F32, {N, C, H, H}, x}, {false, 1, DBK_DTYPE_F32, {N, C, H, H}, dy},
                        {false, 2, DBK_DTYPE_F32, {C}, g},          {false, 3, DBK_DTYPE_F32, {C}, mean},
                        {false, 4, DBK_DTYPE_F32, {C}, invstd},     {true, 0, DBK_DTYPE_F32, {N, C, H, H}, NULL},
                        {true, 1, DBK_DTYPE_F32, {C}, NULL},        {true, 2, DBK_DTYPE_F32, {C}, NULL}};
    DBK_CHECK_OK(run_both(&bb, bbs, 8, got));
    double e_bwd = compare_outputs(bbs, 8, got);
    free_got(8, got);
    /* fused with ReLU: y windowed too (x stands in for it: about half of it <= 0, masked) */
    dbk_op_desc bbr = {.op = DBK_OP_BATCHNORM_RELU_BWD};
    slot bbrs[9];
    memcpy(bbrs, bbs, sizeof bbs);
    bbrs[8] = (slot){false, 5, DBK_DTYPE_F32, {N, C, H, H}, x};
    DBK_CHECK_OK(run_both(&bbr, bbrs, 9, got));
    const double e_bwd_relu = compare_outputs(bbrs, 9, got);
    free_got(9, got);
    printf("  nmse bn+relu bwd %.2e\n", e_bwd_relu);
    e_bwd = fmax(e_bwd, e_bwd_relu);

    dbk_op_desc pf = {.op = DBK_OP_MAXPOOL_FWD, .p.pool = {2, 2, 2, 2}};
    const slot pfs[] = {{false, 0, DBK_DTYPE_F32, {N, C, H, H}, x},
                        {true, 0, DBK_DTYPE_F32, {N, C, H / 2, H / 2}, NULL},
                        {true, 1, DBK_DTYPE_I32, {N, C, H / 2, H / 2}, NULL}};
    DBK_CHECK_OK(run_both(&pf, pfs, 3, got));
    const double e_pool = compare_outputs(pfs, 3, got);
    int32_t *arg = got[1][2];
    got[1][2] = NULL;
    free_got(3, got);

    dbk_op_desc pb = {.op = DBK_OP_MAXPOOL_BWD, .p.pool = {2, 2, 2, 2}};
    const slot pbs[] = {{false, 0, DBK_DTYPE_F32, {N, C, H / 2, H / 2}, dyp},
                        {false, 1, DBK_DTYPE_I32, {N, C, H / 2, H / 2}, arg},
                        {true, 0, DBK_DTYPE_F32, {N, C, H, H}, NULL}};
    DBK_CHECK_OK(run_both(&pb, pbs, 3, got));
    const double e_pool_bwd = compare_outputs(pbs, 3, got);
    free_got(3, got);
    worst = fmax(fmax(e_fwd, e_bwd), fmax(e_pool, e_pool_bwd));
    printf("  x (%lld,%lld,%lld,%lld) = %.1f MiB: nmse bn fwd %.2e, bn bwd %.2e, pool fwd %.2e, pool bwd %.2e\n",
           (long long)N, (long long)C, (long long)H, (long long)H, (double)nx * 4 / 1048576.0, e_fwd, e_bwd, e_pool,
           e_pool_bwd);
    free(x), free(dy), free(g), free(bt), free(dyp), free(arg);
    DBK_CHECK(e_fwd < 1e-7 && e_bwd < 1e-6 && e_pool < 1e-10 && e_pool_bwd < 1e-10);
    DBK_CHECK(worst < 1e-6);
    return 0;
}

/* The filter gradient reduces over a batch whose input exceeds one binding (windows). */
static int a_filter_gradient_over_the_binding_limit_should_match_the_cpu(void) {
    dbk_backend *be;
    DBK_CHECK_OK(dbk_backend_create(kind, device, &be));
    const int64_t C = 512, H = 4, K = 2;
    const int64_t N = (int64_t)(max_range(be) / (uint64_t)(C * H * H * 4)) + 3, nx = N * C * H * H;
    dbk_backend_destroy(be);
    float *x = dbk_test_uniform(nx, -1.0f, 1.0f, 31), *dy = dbk_test_uniform(N * K * H * H, -1.0f, 1.0f, 32);
    void *got[2][MAX_SLOTS] = {{0}};
    dbk_op_desc d = {.op = DBK_OP_CONV2D_BWD_FILTER, .p.conv = {1, 1, 0, 0}};
    const slot ss[] = {{false, 0, DBK_DTYPE_F32, {N, C, H, H}, x},
                       {false, 1, DBK_DTYPE_F32, {N, K, H, H}, dy},
                       {true, 0, DBK_DTYPE_F32, {K, C, 1, 1}, NULL}};
    DBK_CHECK_OK(run_both(&d, ss, 3, got));
    const double e = compare_outputs(ss, 3, got);
    free_got(3, got);
    printf("  x (%lld,%lld,%lld,%lld) = %.1f MiB: nmse %.2e\n", (long long)N, (long long)C, (long long)H, (long long)H,
           (double)nx * 4 / 1048576.0, e);
    free(x);
    free(dy);
    DBK_CHECK(e < 1e-7);
    return 0;
}

/* airbench94's whitening output (C 24, 31x31) at a batch over one binding: bias_add splits
 * the batch; channel_sum overwrites db with the first slice's sums and adds the others'. */
static int bias_add_and_channel_sum_over_the_binding_limit_should_match_the_cpu(void) {
    dbk_backend *be;
    DBK_CHECK_OK(dbk_backend_create(kind, device, &be));
    const int64_t C = 24, H = 31;
    const int64_t N = (int64_t)(max_range(be) / (uint64_t)(C * H * H * 4)) + 3, nx = N * C * H * H;
    dbk_backend_destroy(be);
    float *x = dbk_test_uniform(nx, -1.0f, 1.0f, 41), *b = dbk_test_uniform(C, -1.0f, 1.0f, 42);
    void *got[2][MAX_SLOTS] = {{0}};
    dbk_op_desc add = {.op = DBK_OP_BIAS_ADD};
    const slot as[] = {{false, 0, DBK_DTYPE_F32, {N, C, H, H}, x}, {false, 1, DBK_DTYPE_F32, {C}, b},
                       {true, 0, DBK_DTYPE_F32, {N, C, H, H}, NULL}};
    DBK_CHECK_OK(run_both(&add, as, 3, got));
    const double e_add = compare_outputs(as, 3, got);
    free_got(3, got);
    dbk_op_desc sum = {.op = DBK_OP_CHANNEL_SUM};
    const slot ss[] = {{false, 0, DBK_DTYPE_F32, {N, C, H, H}, x}, {true, 0, DBK_DTYPE_F32, {C}, NULL}};
    DBK_CHECK_OK(run_both(&sum, ss, 2, got));
    const double e_sum = compare_outputs(ss, 2, got);
    free_got(2, got);
    printf("  x (%lld,%lld,%lld,%lld) = %.1f MiB: nmse bias_add %.2e, channel_sum %.2e\n", (long long)N, (long long)C,
           (long long)H, (long long)H, (double)nx * 4 / 1048576.0, e_add, e_sum);
    free(x);
    free(b);
    DBK_CHECK(e_add < 1e-10 && e_sum < 1e-9);
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* --validation-run and --bench                                                         */

static bool validation_layer_installed(void) {
    uint32_t n = 0;
    if (vkEnumerateInstanceLayerProperties(&n, NULL) != VK_SUCCESS || n == 0) return false;
    VkLayerProperties *l = calloc(n, sizeof *l);
    bool found = false;
    if (l && vkEnumerateInstanceLayerProperties(&n, l) == VK_SUCCESS)
        for (uint32_t i = 0; i < n; i++) found |= !strcmp(l[i].layerName, "VK_LAYER_KHRONOS_validation");
    free(l);
    return found;
}

static int validation_run(const char *ops_exe, const char *spec) {
    if (!validation_layer_installed())
        return dbk_test_skip_or_fail_in_ci(
            "VK_LAYER_KHRONOS_validation is not installed (Debian: vulkan-validationlayers)");
    setenv("DBK_VK_VALIDATION", "1", 1);
    static char out[1 << 20];
    char cmd[4600];
    snprintf(cmd, sizeof cmd, "'%s' %s", ops_exe, spec);
    const int code = dbk_test_run_command(cmd, out, sizeof out);
    fputs(out, stdout);
    const bool layer_errors = strstr(out, "Vulkan validation") != NULL;
    printf("validation run: op suite exit code %d, %s\n", code,
           layer_errors ? "validation errors reported" : "no validation errors");
    if (code == 77) return 77;
    return code == 0 && !layer_errors ? 0 : 1;
}

/* Seconds per replay of a program; *cpu gets the process CPU seconds per replay (lavapipe
 * runs shaders on this process's threads, so GFLOP per CPU-second is comparable across
 * machine loads when the machine is shared). */
static double time_program(dbk_backend *be, const dbk_op_desc *ops, int count, int reps, double *cpu) {
    dbk_program *p;
    if (dbk_program_create(be, ops, count, &p) != DBK_OK) {
        printf("error: %s\n", dbk_last_error());
        return -1.0;
    }
    dbk_program_run(p);
    dbk_backend_sync(be);
    const double t0 = dbk_time_now();
    const clock_t c0 = clock();
    for (int i = 0; i < reps; i++) dbk_program_run(p);
    dbk_backend_sync(be);
    const double t = (dbk_time_now() - t0) / reps;
    *cpu = (double)(clock() - c0) / CLOCKS_PER_SEC / reps;
    dbk_program_destroy(p);
    return t;
}

/* Times the three convolutions of a 3x3, stride-1, pad-1 layer (N,C,32,32) -> K on
 * buffers a, b, c and prints their GFLOP/s. */
static void bench_conv_hw(dbk_backend *be, dbk_buffer *a, dbk_buffer *b, dbk_buffer *c, int64_t n, int64_t ch,
                          int64_t k, int64_t hw) {
    dbk_op_desc ops[3] = {{.op = DBK_OP_CONV2D_FWD}, {.op = DBK_OP_CONV2D_BWD_DATA}, {.op = DBK_OP_CONV2D_BWD_FILTER}};
    const dbk_tensor x = dbk_tensor_make(a, 0, DBK_DTYPE_F32, 4, n, ch, hw, hw);
    const dbk_tensor w = dbk_tensor_make(b, 0, DBK_DTYPE_F32, 4, k, ch, 3, 3);
    for (int i = 0; i < 3; i++) ops[i].p.conv = (dbk_conv2d_params){1, 1, 1, 1};
    ops[0].src[0] = x, ops[0].src[1] = w, ops[0].dst[0] = dbk_tensor_make(c, 0, DBK_DTYPE_F32, 4, n, k, hw, hw);
    ops[1].src[0] = dbk_tensor_make(a, 0, DBK_DTYPE_F32, 4, n, k, hw, hw), ops[1].src[1] = w;
    ops[1].dst[0] = dbk_tensor_make(c, 0, DBK_DTYPE_F32, 4, n, ch, hw, hw);
    ops[2].src[0] = x, ops[2].src[1] = dbk_tensor_make(b, 0, DBK_DTYPE_F32, 4, n, k, hw, hw);
    ops[2].dst[0] = dbk_tensor_make(c, 0, DBK_DTYPE_F32, 4, k, ch, 3, 3);
    for (int i = 0; i < 3; i++) {
        double cpu = 0.0, t = time_program(be, &ops[i], 1, 1, &cpu);
        char shape[48];
        snprintf(shape, sizeof shape, "(%d,%d,%d,%d) 3x3 K%d:", (int)n, (int)ch, (int)hw, (int)hw, (int)k);
        printf("%-18s %-23s %9.2f ms %6.2f GFLOP/s  %6.2f GFLOP/CPU-s\n", dbk_op_name(ops[i].op), shape, t * 1e3,
               dbk_op_flops(&ops[i]) / t * 1e-9, dbk_op_flops(&ops[i]) / cpu * 1e-9);
    }
}

/* Times airbench94's per-channel and elementwise ops on its odd shapes at batch 64 (the
 * whitening output (64,24,31,31), and the last group's (64,256,7,7)), with `add` of the same
 * size beside them as the memory-bound yardstick, and prints ms and GB/s (all_bytes), by the
 * wall clock and by the process's CPU time (lavapipe's threads included; steadier than the
 * wall clock on a shared machine). */
static void bench_conv(dbk_backend *be, dbk_buffer *a, dbk_buffer *b, dbk_buffer *c, int64_t n, int64_t ch,
                       int64_t k) {
    bench_conv_hw(be, a, b, c, n, ch, k, 32);
}

static void bench_airbench(dbk_backend *be, dbk_buffer *a, dbk_buffer *b, dbk_buffer *c) {
    /* its three conv groups' first convolutions at batch 16 (odd planes, 24 -> 64 channels) */
    bench_conv_hw(be, a, b, c, 16, 24, 64, 31);
    bench_conv_hw(be, a, b, c, 16, 64, 256, 15);
    bench_conv_hw(be, a, b, c, 16, 256, 256, 7);
    static const int64_t shapes[2][4] = {{64, 24, 31, 31}, {64, 256, 7, 7}};
    for (int s = 0; s < 2; s++) {
        const int64_t n = shapes[s][0], ch = shapes[s][1], h = shapes[s][2], w = shapes[s][3];
        const size_t big = (size_t)(n * ch * h * w) * sizeof(float), vec = (size_t)ch * sizeof(float);
        const dbk_tensor x = dbk_tensor_make(a, 0, DBK_DTYPE_F32, 4, n, ch, h, w);
        const dbk_tensor dy = dbk_tensor_make(b, 0, DBK_DTYPE_F32, 4, n, ch, h, w);
        const dbk_tensor y = dbk_tensor_make(c, 0, DBK_DTYPE_F32, 4, n, ch, h, w);
        /* per-channel vectors after the big tensor in buffer c (gamma and friends in b) */
        dbk_tensor v[8];
        for (int i = 0; i < 8; i++) v[i] = dbk_tensor_make(i < 3 ? b : c, big + (size_t)i * vec, DBK_DTYPE_F32, 1, ch, 0, 0, 0);
        dbk_op_desc ops[7];
        memset(ops, 0, sizeof ops);
        ops[0].op = DBK_OP_ADD, ops[0].src[0] = x, ops[0].src[1] = dy, ops[0].dst[0] = y;
        ops[1].op = DBK_OP_BIAS_ADD, ops[1].src[0] = x, ops[1].src[1] = v[0], ops[1].dst[0] = y;
        ops[2].op = DBK_OP_CHANNEL_SUM, ops[2].src[0] = dy, ops[2].dst[0] = v[3];
        ops[3].op = DBK_OP_GELU_FWD, ops[3].src[0] = x, ops[3].dst[0] = y;
        ops[4].op = DBK_OP_GELU_BWD, ops[4].src[0] = x, ops[4].src[1] = dy, ops[4].dst[0] = y;
        ops[5].op = DBK_OP_BATCHNORM_FWD_TRAIN, ops[5].p.bn = (dbk_bn_params){1e-5f, 0.1f};
        ops[5].src[0] = x, ops[5].src[1] = v[0], ops[5].src[2] = v[1];
        ops[5].dst[0] = y, ops[5].dst[1] = v[3], ops[5].dst[2] = v[4], ops[5].dst[3] = v[5], ops[5].dst[4] = v[6];
        ops[6].op = DBK_OP_BATCHNORM_BWD, ops[6].p.bn = (dbk_bn_params){1e-5f, 0.1f};
        ops[6].src[0] = x, ops[6].src[1] = dy, ops[6].src[2] = v[0], ops[6].src[3] = v[1], ops[6].src[4] = v[2];
        ops[6].dst[0] = y, ops[6].dst[1] = v[3], ops[6].dst[2] = v[4];
        for (int i = 0; i < 7; i++) {
            double cpu = 0.0, t = time_program(be, &ops[i], 1, 3, &cpu);
            char shape[48];
            snprintf(shape, sizeof shape, "(%d,%d,%d,%d):", (int)n, (int)ch, (int)h, (int)w);
            printf("%-19s %-16s %9.2f ms %6.2f GB/s  %9.2f CPU-ms %6.2f GB/CPU-s\n", dbk_op_name(ops[i].op), shape,
                   t * 1e3, dbk_op_bytes(&ops[i]) / t * 1e-9, cpu * 1e3, dbk_op_bytes(&ops[i]) / cpu * 1e-9);
        }
    }
}

static int bench(bool airbench_only) {
    dbk_backend *be;
    if (dbk_backend_create(kind, device, &be) != DBK_OK) {
        printf("error: %s\n", dbk_last_error());
        return 1;
    }
    printf("device: %s\n", dbk_backend_get_info(be)->name);
    dbk_buffer *a, *b, *c;
    const size_t bytes = (size_t)64 << 20;
    float *h = dbk_test_uniform((int64_t)(bytes / 4), -1.0f, 1.0f, 1);
    dbk_buffer_create(be, bytes, &a);
    dbk_buffer_create(be, bytes, &b);
    dbk_buffer_create(be, bytes, &c);
    dbk_buffer_write(a, 0, h, bytes);
    dbk_buffer_write(b, 0, h, bytes);
    free(h);
    dbk_op_desc g = {.op = DBK_OP_GEMM, .p.gemm = {false, false, 1.0f, 0.0f}};
    g.src[0] = dbk_tensor_make(a, 0, DBK_DTYPE_F32, 2, 512, 512, 0, 0);
    g.src[1] = dbk_tensor_make(b, 0, DBK_DTYPE_F32, 2, 512, 512, 0, 0);
    g.dst[0] = dbk_tensor_make(c, 0, DBK_DTYPE_F32, 2, 512, 512, 0, 0);
    double cpu, t;
    if (airbench_only) {
        bench_airbench(be, a, b, c);
        goto done;
    }
    t = time_program(be, &g, 1, 3, &cpu);
    printf("gemm 512x512x512:                         %9.2f ms %6.2f GFLOP/s  %6.2f GFLOP/CPU-s\n", t * 1e3,
           dbk_op_flops(&g) / t * 1e-9, dbk_op_flops(&g) / cpu * 1e-9);
    /* ResNet9 layer1 shape at batch 32, then the quick recipe's narrow layers at batch 64
     * (resnet9-quarter prep, 3 -> 16 channels, and layer1, 16 -> 32), where a wide tile
     * would be mostly idle (vk_ops_conv.c tile_spec). */
    bench_conv(be, a, b, c, 32, 128, 128);
    bench_conv(be, a, b, c, 64, 3, 16);
    bench_conv(be, a, b, c, 64, 16, 32);
    bench_airbench(be, a, b, c);
    enum { NF = 200 };
    dbk_op_desc f[NF];
    for (int i = 0; i < NF; i++) {
        memset(&f[i], 0, sizeof f[i]);
        f[i].op = DBK_OP_FILL;
        f[i].dst[0] = dbk_tensor_make(c, (size_t)i * 256, DBK_DTYPE_F32, 1, 16, 0, 0, 0);
    }
    t = time_program(be, f, NF, 5, &cpu);
    printf("dispatch: %.1f us each (a program of %d independent 16-element fills)\n", t / NF * 1e6, NF);
    for (int i = 0; i < NF; i++) f[i].dst[0] = dbk_tensor_make(c, 0, DBK_DTYPE_F32, 1, 16, 0, 0, 0);
    t = time_program(be, f, NF, 5, &cpu);
    printf("dispatch: %.1f us each (%d fills of the same tensor, a barrier between each)\n", t / NF * 1e6, NF);
done:
    dbk_buffer_destroy(a);
    dbk_buffer_destroy(b);
    dbk_buffer_destroy(c);
    dbk_backend_destroy(be);
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* vulkan.conv_by_shape with one algorithm per op (backend/conv_choice.h)                  */

/* One conv op of x (2,16,8,8), w (16,16,3,3), y (2,16,8,8), pad 1, on be; the result read back. */
static float *run_conv_op(dbk_backend *be, dbk_op op, const float *in0, const float *in1, const char **algorithm) {
    static const int64_t act[4] = {2, 16, 8, 8}, wt[4] = {16, 16, 3, 3};
    const bool filter = op == DBK_OP_CONV2D_BWD_FILTER;
    const int64_t *s0 = act, *s1 = filter ? act : wt, *sd = filter ? wt : act;
    dbk_buffer *b[3] = {NULL, NULL, NULL};
    float *out = NULL;
    const int64_t *shapes[3] = {s0, s1, sd};
    dbk_op_desc d = {.op = op, .p.conv = {1, 1, 1, 1}};
    dbk_status st = DBK_OK;
    for (int i = 0; i < 3 && st == DBK_OK; i++) {
        const int64_t *sh = shapes[i];
        st = dbk_buffer_create(be, (size_t)(sh[0] * sh[1] * sh[2] * sh[3]) * 4, &b[i]);
        if (st == DBK_OK) {
            const dbk_tensor t = dbk_tensor_make(b[i], 0, DBK_DTYPE_F32, 4, sh[0], sh[1], sh[2], sh[3]);
            if (i < 2) d.src[i] = t;
            else d.dst[0] = t;
        }
    }
    if (st == DBK_OK) st = dbk_tensor_write(&d.src[0], in0);
    if (st == DBK_OK) st = dbk_tensor_write(&d.src[1], in1);
    if (st == DBK_OK) st = dbk_backend_prepare(be, &d);
    if (st == DBK_OK) st = dbk_backend_run(be, &d);
    if (st == DBK_OK) st = dbk_backend_sync(be);
    if (st == DBK_OK) out = dbk_test_read(&d.dst[0]);
    if (algorithm) *algorithm = dbk_backend_op_algorithm(be, &d);
    for (int i = 0; i < 3; i++) dbk_buffer_destroy(b[i]);
    return out;
}

static int per_op_conv_choice_should_run_each_op_as_named(void) {
    const char *text = "{\"id\": \"t\", \"vulkan\": {\"conv_algorithm\": \"winograd\", \"conv_by_shape\": "
                       "{\"16x16x8x8\": {\"fwd\": \"winograd4\", \"bwd_data\": \"im2col\", \"bwd_filter\": \"winograd\"}}}}";
    dbk_profile *p = NULL;
    dbk_backend *vk = NULL, *cpu = NULL;
    DBK_CHECK_OK(dbk_profile_parse(text, strlen(text), "inline", &p));
    DBK_CHECK_OK(dbk_backend_create_with_profile(kind, device, p, &vk));
    dbk_profile_destroy(p);
    DBK_CHECK_OK(dbk_backend_create(DBK_BACKEND_KIND_CPU, 0, &cpu));
    static const dbk_op ops[3] = {DBK_OP_CONV2D_FWD, DBK_OP_CONV2D_BWD_DATA, DBK_OP_CONV2D_BWD_FILTER};
    static const char *const want[3] = {"winograd F(4x4,3x3)", NULL, "winograd F(2x2,3x3)"};
    float *act = dbk_test_uniform(2 * 16 * 8 * 8, -1.0f, 1.0f, 11), *wt = dbk_test_uniform(16 * 16 * 9, -1.0f, 1.0f, 12);
    int rc = 0;
    for (int o = 0; o < 3 && rc == 0; o++) {
        const float *in1 = ops[o] == DBK_OP_CONV2D_BWD_FILTER ? act : wt;
        const char *got = NULL;
        float *y = run_conv_op(vk, ops[o], act, in1, &got), *ref = run_conv_op(cpu, ops[o], act, in1, NULL);
        const size_t n = ops[o] == DBK_OP_CONV2D_BWD_FILTER ? 16 * 16 * 9 : 2 * 16 * 8 * 8;
        const double nmse = y && ref ? dbk_test_nmse(ref, y, n) : 1.0;
        printf("  %s as %s: nmse %.2e\n", dbk_op_name(ops[o]), got ? got : "the implicit GEMM", nmse);
        if (want[o] ? !got || strcmp(got, want[o]) : got != NULL) rc = 1;
        if (!(nmse < 1e-6)) rc = 1;
        free(y);
        free(ref);
    }
    free(act);
    free(wt);
    dbk_backend_destroy(vk);
    dbk_backend_destroy(cpu);
    DBK_CHECK_MSG(rc == 0, "an op ran as another algorithm than its conv_by_shape entry, or off the CPU's result");
    /* "direct" for one op is still refused, in one line */
    const char *direct = "{\"id\": \"t\", \"vulkan\": {\"conv_algorithm\": \"winograd\", \"conv_by_shape\": "
                         "{\"16x16x8x8\": {\"bwd_filter\": \"direct\"}}}}";
    DBK_CHECK_OK(dbk_profile_parse(direct, strlen(direct), "inline", &p));
    const dbk_status st = dbk_backend_create_with_profile(kind, device, p, &vk);
    dbk_profile_destroy(p);
    DBK_CHECK(st != DBK_OK);
    DBK_CHECK_MSG(strstr(dbk_last_error(), "Vulkan has no \"direct\" convolution") && !strchr(dbk_last_error(), '\n'),
                  "'%s'", dbk_last_error());
    return 0;
}

int main(int argc, char **argv) {
    const char *spec = "vulkan:0";
    const char *mode = NULL, *ops_exe = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--bench")) mode = "bench";
        else if (!strcmp(argv[i], "--bench-airbench")) mode = "bench-airbench";
        else if (!strcmp(argv[i], "--validation-run") && i + 1 < argc) {
            mode = "validation";
            ops_exe = argv[++i];
        } else spec = argv[i];
    }
    if (mode && !strcmp(mode, "validation")) return validation_run(ops_exe, spec);
    const int resolved = dbk_test_resolve_backend(spec, &kind, &device);
    if (resolved != 0) return resolved;   /* skip without a device; fail in CI (CI=true) */
    if (kind != DBK_BACKEND_KIND_VULKAN) {
        printf("usage error: test_vk tests Vulkan devices, not '%s'\n", spec);
        return 2;
    }
    if (mode) return bench(!strcmp(mode, "bench-airbench"));
    DBK_RUN(devices_should_report_version_type_and_limits);
    DBK_RUN(a_buffer_over_the_allocation_limit_should_be_refused_by_size);
    DBK_RUN(host_copies_should_go_the_way_the_memory_line_says);
    DBK_RUN(shader_dir_should_replace_embedded_shaders);
    DBK_RUN(a_replayed_program_should_match_op_by_op_runs);
    DBK_RUN(pipelines_should_be_created_once_not_per_run);
    DBK_RUN(an_elementwise_op_over_the_binding_limit_should_be_split);
    DBK_RUN(dropout_over_the_binding_limit_should_keep_the_whole_tensors_mask);
    DBK_RUN(a_dataset_over_the_binding_limit_should_augment_like_the_cpu);
    DBK_RUN(a_convolution_over_the_binding_limit_should_match_the_cpu);
    DBK_RUN(batch_norm_and_pool_over_the_binding_limit_should_match_the_cpu);
    DBK_RUN(a_filter_gradient_over_the_binding_limit_should_match_the_cpu);
    DBK_RUN(bias_add_and_channel_sum_over_the_binding_limit_should_match_the_cpu);
    DBK_RUN(per_op_conv_choice_should_run_each_op_as_named);
    return dbk_test_finish();
}
