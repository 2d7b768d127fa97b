/*
 * test_vk_rounding.c — the Vulkan ops that must match the CPU bit for bit (quant_encode,
 * quant_add: src/core/quant.h's coding) divide and take square roots with
 * shaders/common/ieee_rn.glsl, on integers, because Vulkan lets `/` be off by 2.5 ULP and
 * `sqrt` be inexact (an NVIDIA H200 failed both ops in `daybreak check`; lavapipe rounds
 * correctly, so the op tests here could not see it). Two halves:
 *  - the SPIR-V (no device needed): quant_encode.spv and quant_add.spv, and the two test
 *    shaders below, contain no float division, remainder, square root or inverse square root
 *    (OpFDiv, OpFRem, OpFMod, GLSL.std.450 Sqrt, InverseSqrt), so an edit that brings one
 *    back fails here, not on a GPU;
 *  - the routines against the host's IEEE `a / b` and `sqrtf` bit for bit (a NaN for a NaN,
 *    any payload): tests/shaders/div_rn.comp and sqrt_rn.comp, built as add.spv and
 *    relu_fwd.spv, run in place of DBK_OP_ADD and DBK_OP_RELU_FWD through DBK_SHADER_DIR, on
 *    random bit patterns over the whole float range and on the edge cases (zeros, subnormal
 *    inputs and results, ties to even, overflow, inf, NaN, perfect squares). The routines use
 *    no float operation at all (the first half checks that), so what passes on lavapipe
 *    passes on every driver.
 * usage: test_vk_rounding [vulkan:N]. Without a Vulkan device the second half skips (exit 77),
 * or fails when CI=true.
 */
#define _POSIX_C_SOURCE 200809L
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/alloc.h"
#include "core/fileio.h"
#include "core/rng.h"
#include "test_util.h"

static dbk_backend_kind kind = DBK_BACKEND_KIND_VULKAN;
static int device = 0;

enum { RANDOM = 1 << 20 };   /* random cases per routine (~0.5 s each on lavapipe) */

static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint32_t to_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* ---------------------------------------------------------------------------------- */
/* SPIR-V: no inexact float operation */

enum { SPV_OP_EXT_INST_IMPORT = 11, SPV_OP_EXT_INST = 12, SPV_OP_FDIV = 136, SPV_OP_FREM = 140,
       SPV_OP_FMOD = 141, GLSL_STD_450_SQRT = 31, GLSL_STD_450_INVERSE_SQRT = 32 };

/* The first inexact instruction of the SPIR-V file's words as its name, "" when there is none,
 * or NULL with *why set when the file is not SPIR-V. */
static const char *inexact_instruction(const uint32_t *w, size_t words, const char **why) {
    if (words < 5 || w[0] != 0x07230203u) {
        *why = "no SPIR-V header";
        return NULL;
    }
    uint32_t glsl = 0;   /* the id of the GLSL.std.450 instruction set */
    for (size_t i = 5; i < words;) {
        const uint32_t count = w[i] >> 16, op = w[i] & 0xffffu;
        if (count == 0 || i + count > words) {
            *why = "an instruction runs past the end";
            return NULL;
        }
        if (op == SPV_OP_EXT_INST_IMPORT && count >= 3 &&
            !strncmp((const char *)&w[i + 2], "GLSL.std.450", 4 * (count - 2)))
            glsl = w[i + 1];
        if (op == SPV_OP_FDIV) return "OpFDiv";
        if (op == SPV_OP_FREM) return "OpFRem";
        if (op == SPV_OP_FMOD) return "OpFMod";
        if (op == SPV_OP_EXT_INST && count >= 5 && w[i + 3] == glsl) {
            if (w[i + 4] == GLSL_STD_450_SQRT) return "GLSL.std.450 Sqrt";
            if (w[i + 4] == GLSL_STD_450_INVERSE_SQRT) return "GLSL.std.450 InverseSqrt";
        }
        i += count;
    }
    return "";
}

/* inexact_instruction of the SPIR-V file dir/name.spv into path (NULL with *why when it cannot
 * be read or parsed). */
static const char *inexact_instruction_of(const char *dir, const char *name, char *path, size_t cap,
                                          const char **why) {
    snprintf(path, cap, "%s/%s.spv", dir, name);
    void *data = NULL;
    size_t n = 0;
    if (dbk_file_read_all(path, &data, &n) != DBK_OK) {
        *why = dbk_last_error();
        return NULL;
    }
    const char *found = inexact_instruction(data, n / 4, why);
    dbk_free(data);
    return found;
}

static int check_spirv_file(const char *dir, const char *name) {
    char path[1024];
    const char *why = NULL;
    const char *found = inexact_instruction_of(dir, name, path, sizeof path, &why);
    DBK_CHECK_MSG(found, "%s: %s", path, why);
    DBK_CHECK_MSG(!found[0], "%s has %s: divide and take roots with common/ieee_rn.glsl", path, found);
    return 0;
}

static int quant_shaders_should_have_no_float_division_or_root(void) {
    if (check_spirv_file(DBK_TEST_SHADER_DIR, "quant_encode")) return 1;
    return check_spirv_file(DBK_TEST_SHADER_DIR, "quant_add");
}

/* The routines themselves: so the driver's precision never enters their results. */
static int rounding_test_shaders_should_have_no_float_division_or_root(void) {
    if (check_spirv_file(DBK_TEST_ROUNDING_SHADER_DIR, "add")) return 1;
    return check_spirv_file(DBK_TEST_ROUNDING_SHADER_DIR, "relu_fwd");
}

/* The checker itself: a shader that divides and takes a root is caught (norm_scale divides). */
static int the_spirv_check_should_find_a_division(void) {
    char path[1024];
    const char *why = NULL;
    const char *found = inexact_instruction_of(DBK_TEST_SHADER_DIR, "norm_scale", path, sizeof path, &why);
    DBK_CHECK_MSG(found && found[0], "%s: nothing found (%s)", path, found ? "" : why);
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* The routines on the device against the host */

/* Runs op (ADD: y = a op b, RELU_FWD: y = op x) on n fp32 bit patterns on a new backend that
 * takes its shaders from DBK_TEST_ROUNDING_SHADER_DIR. */
static dbk_status run_replaced(dbk_op op, const uint32_t *a, const uint32_t *b, uint32_t *y, int64_t n) {
    setenv("DBK_SHADER_DIR", DBK_TEST_ROUNDING_SHADER_DIR, 1);
    dbk_backend *be = NULL;
    dbk_status st = dbk_backend_create(kind, device, &be);
    unsetenv("DBK_SHADER_DIR");
    if (st != DBK_OK) return st;
    const size_t bytes = (size_t)n * 4;
    dbk_buffer *ba = NULL, *bb = NULL, *by = NULL;
    st = dbk_buffer_create(be, bytes, &ba);
    if (st == DBK_OK && b) st = dbk_buffer_create(be, bytes, &bb);
    if (st == DBK_OK) st = dbk_buffer_create(be, bytes, &by);
    if (st == DBK_OK) st = dbk_buffer_write(ba, 0, a, bytes);
    if (st == DBK_OK && b) st = dbk_buffer_write(bb, 0, b, bytes);
    dbk_op_desc d = {.op = op};
    int slot = 0;
    d.src[slot++] = dbk_tensor_make(ba, 0, DBK_DTYPE_F32, 1, n, 0, 0, 0);
    if (b) d.src[slot++] = dbk_tensor_make(bb, 0, DBK_DTYPE_F32, 1, n, 0, 0, 0);
    d.dst[0] = dbk_tensor_make(by, 0, DBK_DTYPE_F32, 1, n, 0, 0, 0);
    if (st == DBK_OK) st = dbk_backend_run(be, &d);
    if (st == DBK_OK) st = dbk_buffer_read(by, 0, y, bytes);
    dbk_buffer_destroy(ba);
    dbk_buffer_destroy(bb);
    dbk_buffer_destroy(by);
    dbk_backend_destroy(be);
    return st;
}

/* Equal bits, or both NaN (IEEE leaves a NaN's sign and payload open). */
static bool same(uint32_t got, uint32_t want) {
    return got == want || (isnan(from_bits(got)) && isnan(from_bits(want)));
}

/* x86's SSE rounds as IEEE unless told to flush subnormals; check that nothing told it. */
static int host_should_keep_subnormals(void) {
    volatile float tiny = 3e-45f, two = 2.0f, four = 4.0f;   /* tiny = 2 * 2^-149 */
    DBK_CHECK(to_bits(tiny) == 2u && to_bits(tiny / two) == 1u && to_bits(tiny / four) == 0u);
    volatile float three = from_bits(3u);
    DBK_CHECK_MSG(to_bits(three / two) == 2u, "3 * 2^-149 / 2 rounds to even, 2 * 2^-149");
    return 0;
}

/* Hand-picked a / b, as {a, b} bits. */
static const uint32_t div_edges[][2] = {
    {0x00000000u, 0x3f800000u}, {0x80000000u, 0x3f800000u}, {0x00000000u, 0x80000000u}, /* 0/1, -0/1, 0/-0 */
    {0x3f800000u, 0x00000000u}, {0xbf800000u, 0x00000000u}, {0x3f800000u, 0x80000000u}, /* x/0 = +-inf */
    {0x7f800000u, 0x7f800000u}, {0x7f800000u, 0x3f800000u}, {0xff800000u, 0x3f800000u}, /* inf */
    {0x3f800000u, 0x7f800000u}, {0xbf800000u, 0x7f800000u}, {0x7f800000u, 0x00000000u},
    {0x7fc00000u, 0x3f800000u}, {0x3f800000u, 0x7fc00001u}, {0x7f800001u, 0x3f800000u}, /* NaN in */
    {0xffc12345u, 0x7f800000u}, {0x00000000u, 0x7fa00000u},
    {0x3f800000u, 0x40400000u}, {0x40000000u, 0x40400000u}, {0x3f800000u, 0x41200000u}, /* 1/3 2/3 1/10 */
    {0x3f800000u, 0x40e00000u}, {0x41200000u, 0x40400000u}, {0x3f800000u, 0x3f7fffffu}, /* 1/7, 10/3 */
    {0x7f7fffffu, 0x3f7fffffu}, {0x7f7fffffu, 0x3f800000u}, {0x7f7fffffu, 0x3f000000u}, /* overflow */
    {0x7f7fffffu, 0x3f7ffffeu}, {0x7f000000u, 0x3f000001u}, {0x7effffffu, 0x3effffffu},
    {0x00800000u, 0x40000000u}, {0x00800000u, 0x3f800001u}, {0x00ffffffu, 0x40000000u}, /* to subnormal */
    {0x00000001u, 0x40000000u}, {0x00000003u, 0x40000000u}, {0x00000005u, 0x40800000u}, /* ties to even */
    {0x00000007u, 0x41000000u}, {0x00000001u, 0x3f800000u}, {0x00000001u, 0x3f7fffffu},
    {0x00000001u, 0x7f7fffffu}, {0x3f800000u, 0x7f7fffffu}, {0x00400000u, 0x00000001u}, /* tiny, huge */
    {0x007fffffu, 0x007fffffu}, {0x00000001u, 0x00000003u}, {0x00000001u, 0x00800000u},
    {0x7f7fffffu, 0x00000001u}, {0x3f800000u, 0x00000001u}, {0x34000000u, 0x7e800000u},
    {0x0c000000u, 0x4c000000u}, {0x0c000001u, 0x4c000000u}, {0x0c000003u, 0x4c800000u}, /* 2^-103 / 2^25 */
};

static int division_should_round_as_ieee(void) {
    const int64_t edges = sizeof div_edges / sizeof div_edges[0], extra = 6 * 4096;
    const int64_t n = edges + extra + RANDOM;
    uint32_t *a = dbk_malloc((size_t)n * 4), *b = dbk_malloc((size_t)n * 4), *y = dbk_malloc((size_t)n * 4);
    DBK_CHECK(a && b && y);
    int64_t k = 0;
    for (int64_t i = 0; i < edges; i++, k++) {
        a[k] = div_edges[i][0];
        b[k] = div_edges[i][1];
    }
    for (uint32_t i = 0; i < 4096; i++) {
        const uint32_t h = dbk_hash_u32(11u, i, 0, 0), g = dbk_hash_u32(12u, i, 0, 0);
        /* quotients across the subnormal range: a random significand over a power of two */
        a[k] = (h & 0x807fffffu) | (1u + i % 40u) << 23;
        b[k++] = (uint32_t)(127 + (int)(g % 64u)) << 23;
        /* subnormal results of random significands and odd subnormals over 2^k (ties) */
        a[k] = h & 0x807fffffu;
        b[k++] = (g & 0x007fffffu) | (uint32_t)(127 + (int)(i % 30u)) << 23;
        a[k] = (h & 0x1ffu) | 1u;
        b[k++] = (uint32_t)(128 + (int)(g % 9u)) << 23;
        /* near overflow: the largest exponents over values near 1 */
        a[k] = (h & 0x807fffffu) | 0x7f000000u;
        b[k++] = 0x3f000000u | (g & 0x00ffffffu);
        /* 1/3-like: small integers over small integers, and 1 over a random divisor */
        a[k] = to_bits((float)(1u + h % 1000u));
        b[k++] = to_bits((float)(1u + g % 999u));
        a[k] = 0x3f800000u;
        b[k++] = g;
    }
    for (uint32_t i = 0; i < RANDOM; i++, k++) {   /* random bit patterns: the whole range */
        a[k] = dbk_hash_u32(21u, i, 0, 0);
        b[k] = dbk_hash_u32(22u, i, 0, 0);
    }
    DBK_CHECK(k == n);
    uint32_t *want = dbk_malloc((size_t)n * 4);
    DBK_CHECK(want);
    for (int64_t i = 0; i < n; i++) want[i] = to_bits(from_bits(a[i]) / from_bits(b[i]));
    const dbk_status st = run_replaced(DBK_OP_ADD, a, b, y, n);
    int64_t bad = 0, first = -1, subnormal = 0;
    for (int64_t i = 0; st == DBK_OK && i < n; i++) {
        if (!same(y[i], want[i]) && bad++ == 0) first = i;
        subnormal += (want[i] & 0x7f800000u) == 0 && (want[i] & 0x7fffffu) != 0;
    }
    const uint32_t fa = first >= 0 ? a[first] : 0, fb = first >= 0 ? b[first] : 0;
    const uint32_t fy = first >= 0 ? y[first] : 0, fw = first >= 0 ? want[first] : 0;
    dbk_free(a);
    dbk_free(b);
    dbk_free(y);
    dbk_free(want);
    DBK_CHECK_OK(st);
    printf("  %lld quotients, %lld of them subnormal\n", (long long)n, (long long)subnormal);
    DBK_CHECK_MSG(bad == 0, "%lld of %lld quotients differ; first: %08x / %08x gave %08x, IEEE %08x (%.9g / %.9g = %.9g)",
                  (long long)bad, (long long)n, (unsigned)fa, (unsigned)fb, (unsigned)fy, (unsigned)fw,
                  (double)from_bits(fa), (double)from_bits(fb), (double)from_bits(fw));
    return 0;
}

static const uint32_t sqrt_edges[] = {
    0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u, 0x7f800001u, /* 0 -0 inf NaN */
    0xbf800000u, 0x80000001u, 0x807fffffu,                                                     /* negative */
    0x00000001u, 0x00000002u, 0x00000003u, 0x00000004u, 0x007fffffu, 0x00400000u, 0x00800000u, /* subnormal */
    0x3f800000u, 0x40000000u, 0x40400000u, 0x40800000u, 0x3f7fffffu, 0x3f800001u, 0x7f7fffffu,
    0x7f000000u, 0x00800001u, 0x41a00000u, 0x4b7fffffu, 0x4b800000u, 0x3e800000u, 0x3eaaaaabu,
};

static int square_root_should_round_as_ieee(void) {
    const int64_t edges = sizeof sqrt_edges / sizeof sqrt_edges[0], extra = 3 * 4096;
    const int64_t n = edges + extra + RANDOM;
    uint32_t *x = dbk_malloc((size_t)n * 4), *y = dbk_malloc((size_t)n * 4), *want = dbk_malloc((size_t)n * 4);
    DBK_CHECK(x && y && want);
    int64_t k = 0;
    for (int64_t i = 0; i < edges; i++) x[k++] = sqrt_edges[i];
    for (uint32_t i = 0; i < 4096; i++) {
        const uint32_t h = dbk_hash_u32(31u, i, 0, 0);
        x[k++] = to_bits((float)(i + 1) * (float)(i + 1));   /* perfect squares */
        x[k++] = h & 0x007fffffu;                             /* subnormals */
        const float v = from_bits((h & 0x807fffffu) | (uint32_t)(64 + (int)(i % 128u)) << 23);
        x[k++] = to_bits(v * v);   /* a sum of one square, as quant_encode's scale */
    }
    for (uint32_t i = 0; i < RANDOM; i++) {   /* random bits, sign cleared half the time */
        const uint32_t h = dbk_hash_u32(41u, i, 0, 0);
        x[k++] = i % 2 ? h : h & 0x7fffffffu;
    }
    DBK_CHECK(k == n);
    for (int64_t i = 0; i < n; i++) want[i] = to_bits(sqrtf(from_bits(x[i])));
    const dbk_status st = run_replaced(DBK_OP_RELU_FWD, x, NULL, y, n);
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; st == DBK_OK && i < n; i++)
        if (!same(y[i], want[i]) && bad++ == 0) first = i;
    const uint32_t fx = first >= 0 ? x[first] : 0, fy = first >= 0 ? y[first] : 0, fw = first >= 0 ? want[first] : 0;
    dbk_free(x);
    dbk_free(y);
    dbk_free(want);
    DBK_CHECK_OK(st);
    printf("  %lld square roots\n", (long long)n);
    DBK_CHECK_MSG(bad == 0, "%lld of %lld roots differ; first: sqrt(%08x) gave %08x, IEEE %08x (sqrt(%.9g) = %.9g)",
                  (long long)bad, (long long)n, (unsigned)fx, (unsigned)fy, (unsigned)fw, (double)from_bits(fx),
                  (double)from_bits(fw));
    return 0;
}

int main(int argc, char **argv) {
    const char *spec = argc > 1 ? argv[1] : "vulkan:0";
    DBK_RUN(quant_shaders_should_have_no_float_division_or_root);
    DBK_RUN(rounding_test_shaders_should_have_no_float_division_or_root);
    DBK_RUN(the_spirv_check_should_find_a_division);
    DBK_RUN(host_should_keep_subnormals);
    const int resolved = dbk_test_resolve_backend(spec, &kind, &device);
    if (resolved != 0) return dbk_test_failed_checks ? 1 : resolved;   /* skip the device half; CI fails */
    if (kind != DBK_BACKEND_KIND_VULKAN) {
        printf("usage error: test_vk_rounding tests Vulkan devices, not '%s'\n", spec);
        return 2;
    }
    DBK_RUN(division_should_round_as_ieee);
    DBK_RUN(square_root_should_round_as_ieee);
    return dbk_test_finish();
}
