/*
 * test_profile.c — hardware profiles (core/profile.h): matching device names to the
 * embedded platforms/ files, dotted-path lookups, unknown ids, and the DBK_PLATFORMS_DIR
 * override including a malformed file, duplicate ids, a device as a profile file, and
 * parsing from a buffer; the convolution choice read from a profile (backend/conv_choice.h):
 * Winograd's tile per key and section.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/conv_choice.h"
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

/* Two files with one id would let one device's numbers stand in for another's. */
static int duplicate_profile_ids_should_be_refused_naming_both_files(void) {
    const char *dir = dbk_test_tmpdir("profiles_duplicate");
    char a[4200], b[4200];
    snprintf(a, sizeof a, "%s/a100-old.json", dir);
    snprintf(b, sizeof b, "%s/a100-new.json", dir);
    const char *one = "{\"id\": \"nvidia-a100\", \"peak_fp32_gflops\": 19500}";
    const char *two = "{\"id\": \"nvidia-a100\", \"peak_fp32_gflops\": 1}";
    DBK_CHECK_OK(dbk_file_write_atomic(a, one, strlen(one)));
    DBK_CHECK_OK(dbk_file_write_atomic(b, two, strlen(two)));
    setenv("DBK_PLATFORMS_DIR", dir, 1);
    dbk_profile *p = NULL;
    dbk_status by_id = dbk_profile_by_id("nvidia-a100", &p);
    char message[8192];
    snprintf(message, sizeof message, "%s", dbk_last_error());
    dbk_status by_device = dbk_profile_for_device("opencl", "A100", &p);
    int count = dbk_profile_count();
    unsetenv("DBK_PLATFORMS_DIR");
    DBK_CHECK(by_id == DBK_ERR_FORMAT && by_device == DBK_ERR_FORMAT && p == NULL && count == 0);
    DBK_CHECK_MSG(strstr(message, "duplicate platform profile id 'nvidia-a100'") && strstr(message, a) &&
                      strstr(message, b),
                  "'%s'", message);
    return 0;
}

/* A profile file that is a device fails at once instead of being read forever. */
static int a_device_as_a_profile_file_should_be_refused(void) {
    const char *dir = dbk_test_tmpdir("profiles_device");
    char path[4200];
    snprintf(path, sizeof path, "%s/default.json", dir);
    DBK_CHECK(symlink("/dev/zero", path) == 0);
    setenv("DBK_PLATFORMS_DIR", dir, 1);
    alarm(20);   /* a hang ends the test (SIGALRM) */
    dbk_profile *p = NULL;
    dbk_status st = dbk_profile_by_id("default", &p);
    alarm(0);
    unsetenv("DBK_PLATFORMS_DIR");
    DBK_CHECK(st == DBK_ERR_IO && p == NULL);
    DBK_CHECK_MSG(strstr(dbk_last_error(), path) && strstr(dbk_last_error(), "a character device"), "'%s'",
                  dbk_last_error());
    return 0;
}

static int profile_parse_should_read_a_buffer(void) {
    const char *text = "{\"id\": \"mine\", \"cloud\": {\"price_per_hour\": 2.5}}";
    dbk_profile *p = NULL;
    DBK_CHECK_OK(dbk_profile_parse(text, strlen(text), "inline", &p));
    DBK_CHECK(!strcmp(dbk_profile_id(p), "mine") && dbk_profile_number(p, "cloud.price_per_hour", 0) == 2.5);
    dbk_profile_destroy(p);
    DBK_CHECK(dbk_profile_parse(text, 10, "inline", &p) == DBK_ERR_FORMAT && p == NULL);
    DBK_CHECK_MSG(strstr(dbk_last_error(), "inline: not a profile"), "'%s'", dbk_last_error());
    return 0;
}

/* A key daybreak reads, with another type than it expects, fails the load naming the key:
 * before, "opencl.gemm": 5 made the backend take its fallback (CLBlast) silently, and a string
 * peak or price read as 0. Every shipped profile passes. */
static int wrong_typed_keys_should_be_refused_naming_the_key(void) {
    static const struct { const char *json, *key; } bad[] = {
        {"{\"id\": \"x\", \"opencl\": {\"gemm\": 5}}", "\"opencl.gemm\" must be a string"},
        {"{\"id\": \"x\", \"peak_fp32_gflops\": \"fast\"}", "\"peak_fp32_gflops\" must be a number"},
        {"{\"id\": \"x\", \"peak_fp32_gflops\": -3}", "\"peak_fp32_gflops\" must be a number >= 0"},
        {"{\"id\": \"x\", \"cloud\": {\"price_per_hour\": \"3.06\"}}", "\"cloud.price_per_hour\" must be"},
        {"{\"id\": \"x\", \"match\": \"V100\"}", "\"match\" must be a list of strings"},
        {"{\"id\": \"x\", \"match\": [\"V100\", 7]}", "\"match\" must be a list of strings"},
        {"{\"id\": \"x\", \"opencl\": {\"gemm_tiled\": {\"TSM\": \"64\"}}}", "\"opencl.gemm_tiled.TSM\" must be"},
        {"{\"id\": \"x\", \"vulkan\": []}", "\"vulkan\" must be an object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        dbk_profile *p = NULL;
        dbk_status st = dbk_profile_parse(bad[i].json, strlen(bad[i].json), "test.json", &p);
        DBK_CHECK_MSG(st == DBK_ERR_FORMAT && p == NULL, "%s: accepted", bad[i].json);
        DBK_CHECK_MSG(strstr(dbk_last_error(), bad[i].key) && strstr(dbk_last_error(), "test.json"), "%s: '%s'",
                      bad[i].json, dbk_last_error());
    }
    int count = 0;
    DBK_CHECK_OK(dbk_profile_check_all(&count));
    DBK_CHECK(count >= 10);
    return 0;
}

/* "winograd4" in conv_algorithm, conv_by_shape or DBK_FORCE_CONV: F(4x4,3x3) on both device
 * backends (each reads its own section), per key; an unknown name fails naming the key. */
static int conv_choice_should_read_winograd4_per_section(void) {
    unsetenv("DBK_FORCE_CONV");
    const char *text = "{\"id\": \"t\", \"opencl\": {\"conv_algorithm\": \"winograd4\", \"conv_by_shape\": "
                       "{\"64x128x32x32\": \"winograd\", \"3x64x32x32\": \"im2col\", \"512x512x4x4\": \"winograd4\"}}, "
                       "\"vulkan\": {\"conv_algorithm\": \"winograd\", \"conv_by_shape\": {\"8x8x8x8\": \"winograd4\", "
                       "\"9x9x9x9\": \"winograd8\"}}}";
    dbk_profile *p = NULL;
    DBK_CHECK_OK(dbk_profile_parse(text, strlen(text), "inline", &p));
    dbk_conv_choice c;
    DBK_CHECK_OK(dbk_conv_choice_read(p, "opencl", 0, &c));
    DBK_CHECK(c.algorithm == DBK_CONV_WINOGRAD && c.tile == 4 && !strcmp(dbk_conv_choice_name(&c), "winograd4"));
    DBK_CHECK(c.by_shape_count == 3 && c.by_shape[0].tile[0] == 2 && c.by_shape[1].tile[1] == 0 && c.by_shape[2].tile[2] == 4);
    DBK_CHECK(dbk_conv_choice_read(p, "vulkan", 0, &c) == DBK_ERR_FORMAT);
    DBK_CHECK_MSG(strstr(dbk_last_error(), "vulkan.conv_by_shape entry \"9x9x9x9\": \"winograd8\""), "'%s'",
                  dbk_last_error());
    setenv("DBK_FORCE_CONV", "winograd4", 1);
    const dbk_status vk = dbk_conv_choice_read(NULL, "vulkan", 0, &c);
    const bool vk_all4 = c.algorithm == DBK_CONV_WINOGRAD_ALL && c.tile == 4;
    const dbk_status cl = dbk_conv_choice_read(NULL, "opencl", 0, &c);
    unsetenv("DBK_FORCE_CONV");
    dbk_profile_destroy(p);
    DBK_CHECK(vk == DBK_OK && vk_all4);
    DBK_CHECK(cl == DBK_OK && c.algorithm == DBK_CONV_WINOGRAD_ALL && c.tile == 4);
    return 0;
}

/* "direct" (OpenCL's narrow-layer kernels) in conv_by_shape or DBK_FORCE_CONV: read with its own
 * code, and reported by dbk_conv_choice_names_direct, which the Vulkan backend refuses. */
static int conv_choice_should_read_direct_and_name_it(void) {
    unsetenv("DBK_FORCE_CONV");
    const char *text = "{\"id\": \"t\", \"opencl\": {\"conv_algorithm\": \"winograd\", \"conv_by_shape\": "
                       "{\"16x32x32x32\": \"direct\", \"64x128x8x8\": \"winograd4\"}}, "
                       "\"vulkan\": {\"conv_algorithm\": \"im2col\", \"conv_by_shape\": {\"8x8x8x8\": \"direct\"}}}";
    dbk_profile *p = NULL;
    DBK_CHECK_OK(dbk_profile_parse(text, strlen(text), "inline", &p));
    dbk_conv_choice c;
    DBK_CHECK_OK(dbk_conv_choice_read(p, "opencl", 0, &c));
    DBK_CHECK(c.by_shape_count == 2 && c.by_shape[0].tile[2] == DBK_CONV_TILE_DIRECT && c.by_shape[1].tile[0] == 4);
    DBK_CHECK(dbk_conv_choice_names_direct(&c));
    /* conv_algorithm "im2col" leaves conv_by_shape unused: nothing runs as direct */
    DBK_CHECK_OK(dbk_conv_choice_read(p, "vulkan", 0, &c));
    DBK_CHECK(!dbk_conv_choice_names_direct(&c));
    setenv("DBK_FORCE_CONV", "direct", 1);
    const dbk_status forced = dbk_conv_choice_read(NULL, "vulkan", 0, &c);
    const bool forced_named = dbk_conv_choice_names_direct(&c) &&
                              !strcmp(dbk_conv_choice_name(&c), "direct on every 3x3 stride-1 layer");
    setenv("DBK_FORCE_CONV", "direkt", 1);
    const dbk_status typo = dbk_conv_choice_read(NULL, "opencl", 0, &c);
    unsetenv("DBK_FORCE_CONV");
    dbk_profile_destroy(p);
    DBK_CHECK(forced == DBK_OK && forced_named);
    DBK_CHECK(typo == DBK_ERR_INVALID_ARG);
    DBK_CHECK_MSG(strstr(dbk_last_error(), "expected im2col, winograd, winograd4 or direct"), "'%s'", dbk_last_error());
    DBK_CHECK_OK(dbk_conv_choice_read(NULL, "vulkan", 0, &c));
    DBK_CHECK(!dbk_conv_choice_names_direct(&c));
    return 0;
}

static dbk_tensor t4(int64_t a, int64_t b, int64_t c, int64_t d) {
    return dbk_tensor_make(NULL, 0, DBK_DTYPE_F32, 4, a, b, c, d);
}

/* A conv op of shape C x K x H x W (3x3, stride 1, pad 1, two images), for the choice's lookups. */
static dbk_op_desc conv_op(dbk_op kind, int64_t C, int64_t K, int64_t H, int64_t W) {
    dbk_op_desc d;
    memset(&d, 0, sizeof d);
    d.op = kind;
    const bool data = kind == DBK_OP_CONV2D_BWD_DATA, filter = kind == DBK_OP_CONV2D_BWD_FILTER;
    d.src[0] = data ? t4(2, K, H, W) : t4(2, C, H, W);
    d.src[1] = filter ? t4(2, K, H, W) : t4(K, C, 3, 3);
    d.dst[0] = data ? t4(2, C, H, W)
               : filter ? t4(K, C, 3, 3) : t4(2, K, H, W);
    d.p.conv = (dbk_conv2d_params){.stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 1};
    return d;
}

/* A conv_by_shape entry as an object names the algorithm per op; an op it leaves out follows the
 * width rule; an unknown op key or algorithm fails with one line naming the profile key. */
static int conv_choice_should_read_an_algorithm_per_op(void) {
    unsetenv("DBK_FORCE_CONV");
    const char *text = "{\"id\": \"t\", \"opencl\": {\"conv_algorithm\": \"winograd4\", \"conv_by_shape\": "
                       "{\"32x32x16x16\": {\"fwd\": \"direct\", \"bwd_data\": \"im2col\", \"bwd_filter\": \"winograd\"}, "
                       "\"32x64x16x16\": {\"bwd_filter\": \"im2col\"}}}, "
                       "\"vulkan\": {\"conv_algorithm\": \"winograd\", \"conv_by_shape\": "
                       "{\"8x8x8x8\": {\"fwd\": \"winograd4\", \"bwd_weights\": \"im2col\"}}}}";
    dbk_profile *p = NULL;
    DBK_CHECK_OK(dbk_profile_parse(text, strlen(text), "inline", &p));
    dbk_conv_choice c;
    DBK_CHECK_OK(dbk_conv_choice_read(p, "opencl", 0, &c));
    const dbk_op_desc fwd = conv_op(DBK_OP_CONV2D_FWD, 32, 32, 16, 16);
    const dbk_op_desc data = conv_op(DBK_OP_CONV2D_BWD_DATA, 32, 32, 16, 16);
    const dbk_op_desc filter = conv_op(DBK_OP_CONV2D_BWD_FILTER, 32, 32, 16, 16);
    DBK_CHECK(dbk_conv_choice_direct(&c, &fwd) && dbk_conv_choice_winograd_tile(&c, &fwd) == 0);
    DBK_CHECK(!dbk_conv_choice_direct(&c, &data) && dbk_conv_choice_winograd_tile(&c, &data) == 0);
    DBK_CHECK(!dbk_conv_choice_direct(&c, &filter) && dbk_conv_choice_winograd_tile(&c, &filter) == 2);
    DBK_CHECK(dbk_conv_choice_names_direct(&c));
    /* 32x64x16x16 names only bwd_filter: the other two ops take conv_algorithm (F(4x4)) */
    const dbk_op_desc wide_fwd = conv_op(DBK_OP_CONV2D_FWD, 32, 64, 16, 16);
    const dbk_op_desc wide_filter = conv_op(DBK_OP_CONV2D_BWD_FILTER, 32, 64, 16, 16);
    DBK_CHECK(dbk_conv_choice_winograd_tile(&c, &wide_fwd) == 4 && dbk_conv_choice_winograd_tile(&c, &wide_filter) == 0);
    DBK_CHECK(dbk_conv_choice_read(p, "vulkan", 0, &c) == DBK_ERR_FORMAT);
    DBK_CHECK_MSG(strstr(dbk_last_error(), "vulkan.conv_by_shape entry \"8x8x8x8\": \"bwd_weights\": \"im2col\""),
                  "'%s'", dbk_last_error());
    DBK_CHECK(!strchr(dbk_last_error(), '\n'));
    dbk_profile_destroy(p);
    const char *bad = "{\"id\": \"t\", \"opencl\": {\"conv_algorithm\": \"winograd\", \"conv_by_shape\": "
                      "{\"8x8x8x8\": {\"bwd_data\": \"winograd3\"}, \"9x9x9x9\": 4}}}";
    DBK_CHECK_OK(dbk_profile_parse(bad, strlen(bad), "inline", &p));
    DBK_CHECK(dbk_conv_choice_read(p, "opencl", 0, &c) == DBK_ERR_FORMAT);
    DBK_CHECK_MSG(strstr(dbk_last_error(), "opencl.conv_by_shape entry \"8x8x8x8\": \"bwd_data\": \"winograd3\""),
                  "'%s'", dbk_last_error());
    dbk_profile_destroy(p);
    return 0;
}

int main(void) {
    DBK_RUN(device_names_should_match_their_profiles);
    DBK_RUN(lookups_should_follow_dotted_paths);
    DBK_RUN(unknown_ids_should_list_the_known_ones);
    DBK_RUN(a_platforms_dir_should_replace_the_embedded_set);
    DBK_RUN(duplicate_profile_ids_should_be_refused_naming_both_files);
    DBK_RUN(a_device_as_a_profile_file_should_be_refused);
    DBK_RUN(profile_parse_should_read_a_buffer);
    DBK_RUN(wrong_typed_keys_should_be_refused_naming_the_key);
    DBK_RUN(conv_choice_should_read_winograd4_per_section);
    DBK_RUN(conv_choice_should_read_direct_and_name_it);
    DBK_RUN(conv_choice_should_read_an_algorithm_per_op);
    return dbk_test_finish();
}
