/*
 * test_ocl_source.c — the OpenCL program's source keeps each file's floating-point pragmas to
 * that file (ocl_source.h), and so gemm_rb contracts its multiply-adds into FMAs on a CPU
 * device that has them:
 *   - every cl/ file is preceded by "#pragma OPENCL FP_CONTRACT ON" in the assembled source,
 *     also when DBK_KERNEL_DIR supplies a file that switches contraction off at its end;
 *   - a 1x1 convolution y = w0*x0 + w1*x1 (im2col + gemm_rb with K = 2, its second step a
 *     multiply-add) on inputs where one rounding and two roundings differ: 2^-24 with an FMA,
 *     0 without. Asserted on CPU devices that report CL_FP_FMA (PoCL on x86 with FMA), where
 *     compress.cl's "FP_CONTRACT OFF" once made it 0; printed elsewhere (a GPU compiler may
 *     or may not contract).
 *   - the assembled program compiles as strict OpenCL C 1.2 (clang -cl-std=CL1.2
 *     -pedantic-errors, with the tile options of a CPU and of a GPU profile): NVIDIA's compiler
 *     refused the variadic macros that PoCL's clang accepts, and failed the whole program.
 * Skips (77) without the OpenCL backend, a device or clang; under CI=true that is a failure.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/opencl/ocl_internal.h"
#include "backends/opencl/ocl_source.h"
#include "core/embedded.h"
#include "test_util.h"

extern const dbk_embedded_file dbk_ocl_kernels[];
extern const int               dbk_ocl_kernels_count;

#define RESET "#pragma OPENCL FP_CONTRACT ON\n"

/* Each file's header line in the source is directly followed by the reset pragma. */
static int check_resets(const char *src) {
    for (int i = 0; i < dbk_ocl_kernels_count; i++) {
        char header[160];
        snprintf(header, sizeof header, "/* ---- %s ---- */\n" RESET, dbk_ocl_kernels[i].name);
        DBK_CHECK_MSG(strstr(src, header) != NULL, "%s is not preceded by %s", dbk_ocl_kernels[i].name, RESET);
    }
    return 0;
}

static int each_kernel_file_should_start_with_contraction_on(void) {
    dbk_strbuf src;
    dbk_strbuf_init(&src);
    DBK_CHECK_OK(dbk_ocl_source_assemble(&src));
    const int rc = check_resets(src.data);
    dbk_strbuf_deinit(&src);
    return rc;
}

/* DBK_KERNEL_DIR with every file ending in "FP_CONTRACT OFF": the next one still starts on. */
static int a_file_switching_contraction_off_should_not_reach_the_next(void) {
    char dir[] = "/tmp/dbk_ocl_source_XXXXXX";
    DBK_CHECK(mkdtemp(dir) != NULL);
    for (int i = 0; i < dbk_ocl_kernels_count; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s", dir, dbk_ocl_kernels[i].name);
        FILE *f = fopen(path, "wb");
        DBK_CHECK(f != NULL);
        fwrite(dbk_ocl_kernels[i].data, 1, dbk_ocl_kernels[i].size, f);
        fputs("\n#pragma OPENCL FP_CONTRACT OFF\n", f);
        fclose(f);
    }
    const char *was = getenv("DBK_KERNEL_DIR");
    char *saved = was ? strdup(was) : NULL;
    setenv("DBK_KERNEL_DIR", dir, 1);
    dbk_strbuf src;
    dbk_strbuf_init(&src);
    const dbk_status st = dbk_ocl_source_assemble(&src);
    if (saved) setenv("DBK_KERNEL_DIR", saved, 1);
    else unsetenv("DBK_KERNEL_DIR");
    free(saved);
    int rc = st == DBK_OK ? check_resets(src.data) : 1;
    dbk_strbuf_deinit(&src);
    for (int i = 0; i < dbk_ocl_kernels_count; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s", dir, dbk_ocl_kernels[i].name);
        unlink(path);
    }
    rmdir(dir);
    DBK_CHECK_OK(st);
    return rc;
}

static int gemm_rb_should_contract_multiply_adds_on_a_cpu_with_fma(void) {
    setenv("DBK_FORCE_CONV", "im2col", 1);   /* a 1x1 layer is never Winograd; said anyway */
    dbk_backend *be;
    DBK_CHECK_OK(dbk_backend_create(DBK_BACKEND_KIND_OPENCL, 0, &be));
    cl_device_type type = 0;
    cl_device_fp_config fp = 0;
    clGetDeviceInfo(dbk_ocl(be)->device, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    clGetDeviceInfo(dbk_ocl(be)->device, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL);
    const bool asserted = (type & CL_DEVICE_TYPE_CPU) && (fp & CL_FP_FMA) && dbk_ocl(be)->gemm == DBK_OCL_GEMM_TILED;

    /* w1*x1 = 1 + 2^-11 + 2^-24 exactly; rounded to fp32 it loses the 2^-24 (a tie to even),
     * which w0*x0 = -(1 + 2^-11) then leaves alone. */
    const float w[2] = {1.0f, 1.0f + 0x1p-12f}, x[2] = {-(1.0f + 0x1p-11f), 1.0f + 0x1p-12f};
    dbk_buffer *bw, *bx, *by;
    DBK_CHECK_OK(dbk_buffer_create(be, sizeof w, &bw));
    DBK_CHECK_OK(dbk_buffer_create(be, sizeof x, &bx));
    DBK_CHECK_OK(dbk_buffer_create(be, sizeof(float), &by));
    dbk_op_desc op = {.op = DBK_OP_CONV2D_FWD, .p.conv = {1, 1, 0, 0}};
    op.src[0] = dbk_tensor_make(bx, 0, DBK_DTYPE_F32, 4, 1, 2, 1, 1);   /* x (N,C,H,W) */
    op.src[1] = dbk_tensor_make(bw, 0, DBK_DTYPE_F32, 4, 1, 2, 1, 1);   /* w (K,C,R,S) */
    op.dst[0] = dbk_tensor_make(by, 0, DBK_DTYPE_F32, 4, 1, 1, 1, 1);   /* y (N,K,P,Q) */
    DBK_CHECK_OK(dbk_tensor_write(&op.src[0], x));
    DBK_CHECK_OK(dbk_tensor_write(&op.src[1], w));
    DBK_CHECK_OK(dbk_backend_prepare(be, &op));
    DBK_CHECK_OK(dbk_backend_run(be, &op));
    DBK_CHECK_OK(dbk_backend_sync(be));
    float y = -1.0f;
    DBK_CHECK_OK(dbk_tensor_read(&op.dst[0], &y));
    printf("    %s: y = %a (%s)\n", dbk_backend_get_info(be)->name, (double)y,
           y == 0x1p-24f ? "one rounding: contracted" : y == 0.0f ? "two roundings" : "neither");
    dbk_buffer_destroy(bw);
    dbk_buffer_destroy(bx);
    dbk_buffer_destroy(by);
    dbk_backend_destroy(be);
    unsetenv("DBK_FORCE_CONV");
    if (asserted) DBK_CHECK_MSG(y == 0x1p-24f, "y = %a, expected 0x1p-24 from an FMA", (double)y);
    else printf("    not asserted: not a CPU device with CL_FP_FMA and gemm_rb\n");
    return 0;
}

/* 1 when clang takes the program as OpenCL C 1.2 without extensions, 0 when not (its messages
 * printed), -1 when clang cannot be run. */
static int clang_accepts(const char *path, const char *defines) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "clang -x cl -cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt -fsyntax-only "
             "-Xclang -finclude-default-header -pedantic-errors %s %s 2>&1",
             defines, path);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    char line[512];
    int printed = 0;
    while (fgets(line, sizeof line, p))
        if (printed++ < 20) printf("    %s", line);
    const int status = pclose(p);
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) == 127) return -1;
    return WEXITSTATUS(status) == 0;
}

static int the_program_should_compile_as_strict_opencl_c_1_2(void) {
    dbk_strbuf src;
    dbk_strbuf_init(&src);
    DBK_CHECK_OK(dbk_ocl_source_assemble(&src));
    char path[] = "/tmp/dbk_ocl_strict_XXXXXX";
    const int fd = mkstemp(path);
    DBK_CHECK(fd >= 0);
    FILE *f = fdopen(fd, "wb");
    DBK_CHECK(f != NULL);
    fwrite(src.data, 1, src.len, f);
    fclose(f);
    dbk_strbuf_deinit(&src);
    /* PoCL's profile (register blocks of 4) and the tiles derived for an NVIDIA GPU (8). */
    const char *tiles[] = {
        "-DTSM=64 -DTSN=64 -DTSK=16 -DWPTM=4 -DWPTN=4 -DRB_M=4 -DRB_W=16 -DWINO_PLANE_PAD=16 -DNARROW_ROWS=16 "
        "-DWINO_NT_STORES",
        "-DTSM=128 -DTSN=128 -DTSK=16 -DWPTM=8 -DWPTN=8 -DRB_M=8 -DRB_W=16 -DWINO_PLANE_PAD=16 -DNARROW_ROWS=16",
    };
    int accepted[2];
    for (size_t i = 0; i < 2; i++) accepted[i] = clang_accepts(path, tiles[i]);
    unlink(path);
    for (size_t i = 0; i < 2; i++) {
        DBK_CHECK_MSG(accepted[i] >= 0, "clang could not be run");
        DBK_CHECK_MSG(accepted[i] != 0, "clang -cl-std=CL1.2 -pedantic-errors %s refused the program (above)", tiles[i]);
    }
    return 0;
}

int main(void) {
    DBK_RUN(each_kernel_file_should_start_with_contraction_on);
    DBK_RUN(a_file_switching_contraction_off_should_not_reach_the_next);
    const bool have_clang = system("clang --version >/dev/null 2>&1") == 0;
    if (have_clang) DBK_RUN(the_program_should_compile_as_strict_opencl_c_1_2);
    if (dbk_backend_device_count(DBK_BACKEND_KIND_OPENCL) == 0) {
        const int rc = dbk_test_finish();
        return rc ? rc : dbk_test_skip_or_fail_in_ci("no OpenCL device found (is an ICD such as pocl-opencl-icd installed?)");
    }
    DBK_RUN(gemm_rb_should_contract_multiply_adds_on_a_cpu_with_fma);
    const int rc = dbk_test_finish();
    return rc ? rc : have_clang ? 0 : dbk_test_skip_or_fail_in_ci("clang not found (tools/install-deps.sh installs it)");
}
