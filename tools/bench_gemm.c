/*
 * bench_gemm.c — the GEMMs daybreak's OpenCL convolutions issue for one recipe, timed on an
 * OpenCL device with gemm_rb (cl/gemm_tiled.cl) and on the host with OpenBLAS (cblas_sgemm, 1
 * thread and all threads), side by side with the CPU's measured FMA peak.
 *
 * usage: bench_gemm [--recipe NAME] [--batch N] [--device I] [--rb-m M] [--rb-w W] [--wg A,B] [--reps N]
 *
 * Shapes: the model's layers come from its graph (dbk_tune_workload_shapes, as `daybreak tune`
 * finds them); each convolution's forward, backward-data and backward-filter becomes the GEMMs
 * the OpenCL backend issues for it, as the backend itself lists them (dbk_ocl_conv_gemm_plan,
 * ocl_conv_plan.h, from the chunk rules its recorders use): im2col (ocl_ops_conv.c: one GEMM per
 * chunk of images, the chunk sized by "opencl.conv_workspace_mb") or Winograd F(2x2,3x3) /
 * F(4x4,3x3) (ocl_ops_conv_winograd.c: 16 / 36 GEMMs per chunk, by
 * "opencl.winograd_workspace_mb"), as the device profile chooses per layer, on the gemm_rb path
 * whatever the profile's "opencl.gemm". B is packed in panels of RB_W columns, C stored as the
 * backend stores it (row-major, the (nb, K, P, Q) output chunk, or transposed for the filter
 * gradients).
 *
 * Kernel: the backend's program (every .cl file of cl/, ocl_source.h) with its build options, so
 * gemm_rb is the machine code training runs; DBK_KERNEL_DIR reads cl/ from a folder instead of
 * the embedded copies (to compare kernel versions with one binary). Tunables: the device
 * profile's "opencl.gemm_tiled" (RB_M, RB_W, RB_WG0 x RB_WG1), each replaceable on the
 * command line.
 *
 * Peak: 10 independent chains of 256-bit FMAs per thread (AVX2 + FMA: 16 FLOP per instruction),
 * on 1 thread and on every online CPU, measured in the same run before and after the GEMMs (the
 * higher of the two is the peak: on a shared machine either may be slowed). Each GEMM's GFLOP/s (2MNK /
 * best wall time of --reps runs, enqueue to finish for OpenCL) is printed with its % of that
 * peak (gemm_rb and OpenBLAS on all threads against the all-thread peak, OpenBLAS on 1 thread
 * against the 1-thread one). gemm_rb's result is checked against OpenBLAS's (NMSE < 1e-8, fp32
 * summation order only); a mismatch is an error line and exit status 1.
 */
#define _POSIX_C_SOURCE 200809L
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <cblas.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "backend/conv_choice.h"
#include "backends/opencl/ocl_conv_plan.h"
#include "backends/opencl/ocl_source.h"
#include "bench/tune.h"
#include "core/profile.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static size_t round_up(size_t v, size_t m) { return (v + m - 1) / m * m; }

/* ---------------------------------------------------------------------------------- */
/* the FMA peak                                                                        */

#define PEAK_ITERS 40000000L
#define PEAK_THREADS_MAX 64

#if defined(__x86_64__) || defined(__i386__)
/* 10 independent accumulator chains hide the FMA latency (4-5 cycles) behind 2 FMA units. */
__attribute__((target("avx2,fma"))) static void *fma_chains(void *arg) {
    float *sink = arg;
    /* Distinct starting values: with equal ones the compiler merges the ten chains into one. */
    __m256 a0 = _mm256_set1_ps(0.0f), a1 = _mm256_set1_ps(0.1f), a2 = _mm256_set1_ps(0.2f),
           a3 = _mm256_set1_ps(0.3f), a4 = _mm256_set1_ps(0.4f), a5 = _mm256_set1_ps(0.5f),
           a6 = _mm256_set1_ps(0.6f), a7 = _mm256_set1_ps(0.7f), a8 = _mm256_set1_ps(0.8f),
           a9 = _mm256_set1_ps(0.9f);
    const __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
    for (long i = 0; i < PEAK_ITERS; i++) {
        a0 = _mm256_fmadd_ps(a0, x, y); a1 = _mm256_fmadd_ps(a1, x, y);
        a2 = _mm256_fmadd_ps(a2, x, y); a3 = _mm256_fmadd_ps(a3, x, y);
        a4 = _mm256_fmadd_ps(a4, x, y); a5 = _mm256_fmadd_ps(a5, x, y);
        a6 = _mm256_fmadd_ps(a6, x, y); a7 = _mm256_fmadd_ps(a7, x, y);
        a8 = _mm256_fmadd_ps(a8, x, y); a9 = _mm256_fmadd_ps(a9, x, y);
    }
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                             _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(_mm256_add_ps(a6, a7), _mm256_add_ps(a8, a9))));
    float out[8];
    _mm256_storeu_ps(out, s);
    *sink = out[0];
    return NULL;
}

/* GFLOP/s of `threads` threads running fma_chains at once; 0 without AVX2 + FMA. */
static double fma_peak(int threads) {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return 0.0;
    pthread_t t[PEAK_THREADS_MAX];
    float sink[PEAK_THREADS_MAX];
    double best = 0.0;
    for (int run = 0; run < 3; run++) {   /* the best of 3: other processes only slow it down */
        const double t0 = now_s();
        int started = 0;
        for (; started < threads; started++)
            if (pthread_create(&t[started], NULL, fma_chains, &sink[started]) != 0) break;
        for (int i = 0; i < started; i++) pthread_join(t[i], NULL);
        const double g = started ? (double)started * PEAK_ITERS * 10.0 * 16.0 / (now_s() - t0) * 1e-9 : 0.0;
        if (g > best) best = g;
    }
    return best;
}
#else
static double fma_peak(int threads) {
    (void)threads;
    return 0.0;
}
#endif

/* ---------------------------------------------------------------------------------- */
/* the GEMMs of the convolutions                                                       */

typedef struct gemm_shape {
    int  m, n, k;
    bool ta;                 /* A stored (K,M) */
    int  cpq;                /* how C is stored (gemm_rb's c_plane): 0 row-major, > 0 (n/cpq, m, cpq), -1 (n, m) */
    int  calls;              /* per training step */
    char what[64];           /* "fwd C128 K128 16x16 im2col" */
} gemm_shape;

#define MAX_SHAPES 256

typedef struct shape_list {
    gemm_shape s[MAX_SHAPES];
    int        count;
} shape_list;

static void add_shape(shape_list *l, gemm_shape g) {
    for (int i = 0; i < l->count; i++) {
        gemm_shape *o = &l->s[i];
        if (o->m == g.m && o->n == g.n && o->k == g.k && o->ta == g.ta && o->cpq == g.cpq) {
            o->calls += g.calls;
            if (!strstr(o->what, " (+)")) snprintf(o->what + strlen(o->what), sizeof o->what - strlen(o->what), " (+)");
            return;
        }
    }
    if (l->count < MAX_SHAPES) l->s[l->count++] = g;
}

/* The backend's own list of the GEMMs of op (ocl_conv_plan.h), each `layers` times. */
static void conv_gemms(const dbk_ocl_conv_config *cfg, const dbk_op_desc *d, int layers, const char *label,
                       shape_list *out) {
    dbk_ocl_conv_gemm plan[DBK_OCL_CONV_MAX_GEMMS];
    const int n = dbk_ocl_conv_gemm_plan(cfg, d, plan); /* none on the direct kernels */
    const int tile = dbk_conv_choice_winograd(cfg->choice, d) ? dbk_conv_choice_winograd_tile(cfg->choice, d) : 0;
    for (int i = 0; i < n; i++) {
        gemm_shape s = {.m = plan[i].m, .n = plan[i].n, .k = plan[i].k, .ta = plan[i].ta, .cpq = plan[i].cpq,
                        .calls = layers * plan[i].count};
        snprintf(s.what, sizeof s.what, "%s %s", label, tile == 4 ? "winograd4" : tile ? "winograd" : "im2col");
        add_shape(out, s);
    }
}

static dbk_status list_gemms(const char *recipe, int batch, const dbk_ocl_conv_config *cfg, shape_list *out) {
    dbk_tune_workload w;
    DBK_TRY(dbk_tune_workload_shapes(recipe, batch, 0, &w));
    for (int i = 0; i < w.count; i++) {
        const dbk_op_desc *d = &w.cases[i].desc;
        if (d->op != DBK_OP_CONV2D_FWD && d->op != DBK_OP_CONV2D_BWD_DATA && d->op != DBK_OP_CONV2D_BWD_FILTER) continue;
        const dbk_conv2d_geom g = dbk_conv2d_geom_of(d);
        char label[48];
        snprintf(label, sizeof label, "%s C%lld K%lld %lldx%lld",
                 d->op == DBK_OP_CONV2D_FWD ? "fwd" : d->op == DBK_OP_CONV2D_BWD_DATA ? "bwd-data" : "bwd-filter",
                 (long long)g.C, (long long)g.K, (long long)g.H, (long long)g.W);
        /* The first layer's input, the images, gets no gradient: no backward-data there. */
        const int layers = w.cases[i].layers - (i < 3 && d->op == DBK_OP_CONV2D_BWD_DATA ? 1 : 0);
        if (layers < 1) continue;
        conv_gemms(cfg, d, layers, label, out);
    }
    dbk_tune_workload_deinit(&w);
    return DBK_OK;
}

/* ---------------------------------------------------------------------------------- */
/* OpenCL                                                                               */

typedef struct ocl {
    cl_device_id     device;
    cl_context       context;
    cl_command_queue queue;
    cl_kernel        kernel;
    char             name[256];
    int              rb_m, rb_w, wg[2];
} ocl;

static int fail(const char *what, cl_int err) {
    fprintf(stderr, "bench_gemm: %s failed (OpenCL error %d)\n", what, (int)err);
    return 1;
}

static int find_device(int index, cl_device_id *out) {
    cl_platform_id plats[16];
    cl_uint np = 0;
    if (clGetPlatformIDs(16, plats, &np) != CL_SUCCESS) np = 0;
    int seen = 0;
    for (cl_uint p = 0; p < np && p < 16; p++) {
        cl_device_id devs[64];
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 64, devs, &nd) != CL_SUCCESS) continue;
        if (nd > 64) nd = 64;
        if (index < seen + (int)nd) {
            *out = devs[index - seen];
            return 0;
        }
        seen += (int)nd;
    }
    fprintf(stderr, "bench_gemm: opencl device %d does not exist (%d found)\n", index, seen);
    return 1;
}

static int ocl_setup(ocl *o) {
    cl_int err;
    o->context = clCreateContext(NULL, 1, &o->device, NULL, NULL, &err);
    if (!o->context) return fail("clCreateContext", err);
    o->queue = clCreateCommandQueue(o->context, o->device, 0, &err);
    if (!o->queue) return fail("clCreateCommandQueue", err);
    /* The backend's whole program, so that gemm_rb compiles as it does in training (a
     * pragma in another file once changed its machine code: ocl_source.h). */
    dbk_strbuf src;
    dbk_strbuf_init(&src);
    if (dbk_ocl_source_assemble(&src) != DBK_OK) {
        fprintf(stderr, "bench_gemm: %s\n", dbk_last_error());
        dbk_strbuf_deinit(&src);
        return 1;
    }
    const char *text = src.data;
    cl_program prog = clCreateProgramWithSource(o->context, 1, &text, NULL, &err);
    dbk_strbuf_deinit(&src);
    if (!prog) return fail("clCreateProgramWithSource", err);
    char options[128];
    /* The options of dbk_ocl_build_program (ocl_device.c) that can change the generated code. */
    snprintf(options, sizeof options, "-cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt -DRB_M=%d -DRB_W=%d", o->rb_m,
             o->rb_w);
    err = clBuildProgram(prog, 1, &o->device, options, NULL, NULL);
    if (err != CL_SUCCESS) {
        char log[8192] = "";
        clGetProgramBuildInfo(prog, o->device, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
        fprintf(stderr, "bench_gemm: building gemm_tiled.cl (%s) failed: %s\n", options, log);
        return 1;
    }
    o->kernel = clCreateKernel(prog, "gemm_rb", &err);
    clReleaseProgram(prog);
    if (!o->kernel) return fail("clCreateKernel(gemm_rb)", err);
    return 0;
}

static void ocl_teardown(ocl *o) {
    if (o->kernel) clReleaseKernel(o->kernel);
    if (o->queue) clReleaseCommandQueue(o->queue);
    if (o->context) clReleaseContext(o->context);
}

/* ---------------------------------------------------------------------------------- */
/* one shape                                                                            */

typedef struct result {
    double rb_s, blas1_s, blasn_s;   /* best wall times */
    double nmse;
} result;

/* B (k, n) row-major into panels of w columns, zero beyond n: Bp[(panel*k + kk)*w + j]. */
static void pack_b(const float *b, int k, int n, int w, float *bp) {
    const int panels = (n + w - 1) / w;
    for (int p = 0; p < panels; p++)
        for (int kk = 0; kk < k; kk++)
            for (int j = 0; j < w; j++) {
                const int col = p * w + j;
                bp[((size_t)p * (size_t)k + (size_t)kk) * (size_t)w + (size_t)j] = col < n ? b[(size_t)kk * (size_t)n + (size_t)col] : 0.0f;
            }
}

/* Index of element (m, n) of C in the shape's layout. */
static size_t c_index(const gemm_shape *s, int m, int n) {
    if (s->cpq < 0) return (size_t)n * (size_t)s->m + (size_t)m;
    if (s->cpq > 0)
        return (size_t)(n / s->cpq) * (size_t)s->m * (size_t)s->cpq + (size_t)m * (size_t)s->cpq + (size_t)(n % s->cpq);
    return (size_t)m * (size_t)s->n + (size_t)n;
}

static double best_blas(const gemm_shape *s, const float *a, const float *b, float *c, int threads, int reps) {
    openblas_set_num_threads(threads);
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        const double t0 = now_s();
        cblas_sgemm(CblasRowMajor, s->ta ? CblasTrans : CblasNoTrans, CblasNoTrans, s->m, s->n, s->k, 1.0f, a,
                    s->ta ? s->m : s->k, b, s->n, 0.0f, c, s->n);
        const double t = now_s() - t0;
        if (t < best) best = t;
    }
    return best;
}

static int run_rb(ocl *o, const gemm_shape *s, const float *a, const float *bp, size_t bp_n, float *c_out, int reps,
                  double *best) {
    const size_t a_n = (size_t)s->m * (size_t)s->k, c_n = (size_t)s->m * (size_t)s->n;
    cl_int err;
    cl_mem da = clCreateBuffer(o->context, CL_MEM_READ_ONLY, a_n * 4, NULL, &err);
    cl_mem db = da ? clCreateBuffer(o->context, CL_MEM_READ_ONLY, bp_n * 4, NULL, &err) : NULL;
    cl_mem dc = db ? clCreateBuffer(o->context, CL_MEM_READ_WRITE, c_n * 4, NULL, &err) : NULL;
    int rc = 0;
    if (!dc) rc = fail("clCreateBuffer", err);
    if (rc == 0 && ((err = clEnqueueWriteBuffer(o->queue, da, CL_TRUE, 0, a_n * 4, a, 0, NULL, NULL)) != CL_SUCCESS ||
                    (err = clEnqueueWriteBuffer(o->queue, db, CL_TRUE, 0, bp_n * 4, bp, 0, NULL, NULL)) != CL_SUCCESS))
        rc = fail("clEnqueueWriteBuffer", err);
    const int M = s->m, N = s->n, K = s->k, lda = s->ta ? s->m : s->k, ta = s->ta ? 1 : 0;
    const int ldc = s->cpq < 0 ? s->m : s->n, cpq = s->cpq;
    const float alpha = 1.0f, beta = 0.0f;
    const cl_uint zero = 0;   /* offsets, and the batch strides of a launch of one GEMM */
    const void *args[] = {&M, &N, &K, &alpha, &beta, &da, &zero, &lda, &ta, &db, &zero, &dc, &zero, &ldc, &cpq,
                          &zero, &zero, &zero};
    const size_t sizes[] = {4, 4, 4, 4, 4, sizeof da, 4, 4, 4, sizeof db, 4, sizeof dc, 4, 4, 4, 4, 4, 4};
    for (cl_uint i = 0; rc == 0 && i < sizeof sizes / sizeof sizes[0]; i++)
        if ((err = clSetKernelArg(o->kernel, i, sizes[i], args[i])) != CL_SUCCESS) rc = fail("clSetKernelArg", err);
    /* The launch of dbk_ocl_gemm_packed_record: one work-item per RB_M x RB_W block, the
     * profile's work-group shrunk to the range, the range rounded up to it. */
    size_t local[2] = {(size_t)o->wg[0], (size_t)o->wg[1]};
    const size_t blocks[2] = {((size_t)N + (size_t)o->rb_w - 1) / (size_t)o->rb_w,
                              ((size_t)M + (size_t)o->rb_m - 1) / (size_t)o->rb_m};
    for (int d = 0; d < 2; d++)
        while (local[d] > 1 && local[d] / 2 >= blocks[d]) local[d] /= 2;
    const size_t global[2] = {round_up(blocks[0], local[0]), round_up(blocks[1], local[1])};
    *best = 1e30;
    for (int r = 0; rc == 0 && r <= reps; r++) {   /* run 0 warms up (and compiles, on PoCL) */
        const double t0 = now_s();
        err = clEnqueueNDRangeKernel(o->queue, o->kernel, 2, NULL, global, local, 0, NULL, NULL);
        if (err == CL_SUCCESS) err = clFinish(o->queue);
        if (err != CL_SUCCESS) rc = fail("gemm_rb", err);
        const double t = now_s() - t0;
        if (r > 0 && t < *best) *best = t;
    }
    if (rc == 0 && (err = clEnqueueReadBuffer(o->queue, dc, CL_TRUE, 0, c_n * 4, c_out, 0, NULL, NULL)) != CL_SUCCESS)
        rc = fail("clEnqueueReadBuffer", err);
    if (dc) clReleaseMemObject(dc);
    if (db) clReleaseMemObject(db);
    if (da) clReleaseMemObject(da);
    return rc;
}

static int measure(ocl *o, const gemm_shape *s, int threads, int reps, result *r) {
    const size_t a_n = (size_t)s->m * (size_t)s->k, b_n = (size_t)s->k * (size_t)s->n, c_n = (size_t)s->m * (size_t)s->n;
    const size_t bp_n = (size_t)s->k * round_up((size_t)s->n, (size_t)o->rb_w);
    float *a = malloc(a_n * 4), *b = malloc(b_n * 4), *bp = malloc(bp_n * 4), *c = malloc(c_n * 4), *c_rb = malloc(c_n * 4);
    int rc = a && b && bp && c && c_rb ? 0 : 1;
    if (rc) fprintf(stderr, "bench_gemm: out of host memory for a %dx%dx%d GEMM\n", s->m, s->n, s->k);
    unsigned x = 12345u;
    for (size_t i = 0; rc == 0 && i < a_n; i++) a[i] = (float)((x = x * 1664525u + 1013904223u) >> 8) * 0x1p-23f - 1.0f;
    for (size_t i = 0; rc == 0 && i < b_n; i++) b[i] = (float)((x = x * 1664525u + 1013904223u) >> 8) * 0x1p-23f - 1.0f;
    if (rc == 0) {
        pack_b(b, s->k, s->n, o->rb_w, bp);
        rc = run_rb(o, s, a, bp, bp_n, c_rb, reps, &r->rb_s);
    }
    if (rc == 0) {
        r->blas1_s = best_blas(s, a, b, c, 1, reps);
        r->blasn_s = best_blas(s, a, b, c, threads, reps);
        double num = 0.0, den = 0.0;
        for (int m = 0; m < s->m; m++)
            for (int n = 0; n < s->n; n++) {
                const double ref = c[(size_t)m * (size_t)s->n + (size_t)n], d = (double)c_rb[c_index(s, m, n)] - ref;
                num += d * d;
                den += ref * ref;
            }
        r->nmse = den > 0 ? num / den : num;
    }
    free(a), free(b), free(bp), free(c), free(c_rb);
    return rc;
}

/* ---------------------------------------------------------------------------------- */

static int usage(const char *why) {
    fprintf(stderr,
            "bench_gemm: %s\n"
            "usage: bench_gemm [--recipe NAME] [--batch N] [--device I] [--rb-m M] [--rb-w W] [--wg A,B] [--reps N]\n",
            why);
    return 2;
}

static bool int_arg(const char *s, int lo, int hi, int *out) {
    char *end;
    const long v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > hi) return false;
    *out = (int)v;
    return true;
}

int main(int argc, char **argv) {
    const char *recipe = "cifar10-resnet9";
    int batch = 128, device = 0, reps = 3, rb_m = 0, rb_w = 0, wg0 = 0, wg1 = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("usage: bench_gemm [--recipe NAME] [--batch N] [--device I] [--rb-m M] [--rb-w W] [--wg A,B] "
                   "[--reps N]\n(defaults: cifar10-resnet9, 128, 0, the device profile's tunables, 3; "
                   "docs/benchmarking.md)\n");
            return 0;
        }
        if (!v) return usage("every option takes a value");
        bool ok = true;
        if (!strcmp(a, "--recipe")) recipe = v;
        else if (!strcmp(a, "--batch")) ok = int_arg(v, 1, 65536, &batch);
        else if (!strcmp(a, "--device")) ok = int_arg(v, 0, 1023, &device);
        else if (!strcmp(a, "--reps")) ok = int_arg(v, 1, 1000, &reps);
        else if (!strcmp(a, "--rb-m")) ok = int_arg(v, 1, 12, &rb_m);
        else if (!strcmp(a, "--rb-w")) ok = int_arg(v, 4, 16, &rb_w) && (rb_w == 4 || rb_w == 8 || rb_w == 16);
        else if (!strcmp(a, "--wg")) ok = sscanf(v, "%d,%d", &wg0, &wg1) == 2 && wg0 >= 1 && wg1 >= 1 && wg0 * wg1 <= 4096;
        else {
            fprintf(stderr, "bench_gemm: unknown option '%s'\n", a);
            return usage("see the options below");
        }
        if (!ok) {
            fprintf(stderr, "bench_gemm: bad value '%s' for %s (--rb-w: 4, 8 or 16; --rb-m: 1..12; --wg: A,B)\n", v, a);
            return 2;
        }
        i++;
    }

    ocl o = {0};
    if (find_device(device, &o.device)) return 1;
    clGetDeviceInfo(o.device, CL_DEVICE_NAME, sizeof o.name, o.name, NULL);
    dbk_profile *prof;
    if (dbk_profile_for_device("opencl", o.name, &prof) != DBK_OK) {
        fprintf(stderr, "bench_gemm: %s\n", dbk_last_error());
        return 1;
    }
    o.rb_m = rb_m ? rb_m : (int)dbk_profile_number(prof, "opencl.gemm_tiled.RB_M", 8);
    o.rb_w = rb_w ? rb_w : (int)dbk_profile_number(prof, "opencl.gemm_tiled.RB_W", 16);
    o.wg[0] = wg0 ? wg0 : (int)dbk_profile_number(prof, "opencl.gemm_tiled.RB_WG0", 4);
    o.wg[1] = wg1 ? wg1 : (int)dbk_profile_number(prof, "opencl.gemm_tiled.RB_WG1", 8);
    cl_ulong max_alloc = 0;
    clGetDeviceInfo(o.device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, NULL);
    /* The backend's chunk rules with this profile, on the gemm_rb path whatever its opencl.gemm
     * says (gemm_rb is what this tool times), and the panel width of this run. */
    static dbk_conv_choice choice;
    dbk_ocl_conv_config cfg;
    dbk_status st = dbk_ocl_conv_config_read(prof, max_alloc, &choice, &cfg);
    cfg.packed = true;
    cfg.rb_w = o.rb_w;
    char profile_id[64];
    snprintf(profile_id, sizeof profile_id, "%s", dbk_profile_id(prof));
    dbk_profile_destroy(prof);
    static shape_list shapes;
    if (st == DBK_OK) st = list_gemms(recipe, batch, &cfg, &shapes);
    if (st != DBK_OK) {
        fprintf(stderr, "bench_gemm: %s\n", dbk_last_error());
        return 1;
    }
    if (ocl_setup(&o)) return 1;

    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    const int threads = cpus < 1 ? 1 : cpus > PEAK_THREADS_MAX ? PEAK_THREADS_MAX : (int)cpus;
    double peak1 = fma_peak(1), peakn = fma_peak(threads);
    static result res[MAX_SHAPES];
    int rc = 0, done = 0;
    for (; done < shapes.count && rc == 0; done++) rc = measure(&o, &shapes.s[done], threads, reps, &res[done]);
    /* The peak again after the GEMMs, keeping the higher: on a shared machine either may have
     * run while another process held a core. */
    const double again1 = fma_peak(1), againn = fma_peak(threads);
    if (again1 > peak1) peak1 = again1;
    if (againn > peakn) peakn = againn;

    printf("device: %s (opencl:%d), profile %s: gemm_rb RB_M %d RB_W %d work-group %dx%d%s\n", o.name, device,
           profile_id, o.rb_m, o.rb_w, o.wg[0], o.wg[1], dbk_env_kernel_dir() ? " (kernels from DBK_KERNEL_DIR)" : "");
    if (peakn > 0)
        printf("FMA peak (measured before and after the GEMMs, the higher: 10 chains of 256-bit FMAs per thread): "
               "%.1f GFLOP/s on 1 thread, %.1f on %d\n",
               peak1, peakn, threads);
    else
        printf("FMA peak: not measured (needs an x86 CPU with AVX2 and FMA); %% columns are 0\n");
    printf("%s at batch %d: %d distinct GEMMs, calls per training step, best of %d runs each; GFLOP/s (%% of peak)\n",
           recipe, batch, shapes.count, reps);
    printf("%-36s %5s %6s %6s %2s %5s | %14s | %14s | %14s | %8s\n", "GEMM of", "M", "N", "K", "tA", "calls", "gemm_rb",
           "OpenBLAS 1t", "OpenBLAS all", "NMSE");
    double step_rb = 0, step_b1 = 0, step_bn = 0, step_flop = 0;
    for (int i = 0; i < done && rc == 0; i++) {
        const gemm_shape *s = &shapes.s[i];
        const result *r = &res[i];
        const double flop = 2.0 * s->m * s->n * s->k, g_rb = flop / r->rb_s * 1e-9, g_1 = flop / r->blas1_s * 1e-9,
                     g_n = flop / r->blasn_s * 1e-9;
        printf("%-36.36s %5d %6d %6d %2s %5d | %6.1f (%4.0f%%) | %6.1f (%4.0f%%) | %6.1f (%4.0f%%) | %8.1e%s\n", s->what,
               s->m, s->n, s->k, s->ta ? "T" : "", s->calls, g_rb, peakn > 0 ? 100 * g_rb / peakn : 0, g_1,
               peak1 > 0 ? 100 * g_1 / peak1 : 0, g_n, peakn > 0 ? 100 * g_n / peakn : 0, r->nmse,
               r->nmse < 1e-8 ? "" : "  MISMATCH");
        if (!(r->nmse < 1e-8)) rc = 1;
        step_rb += s->calls * r->rb_s, step_b1 += s->calls * r->blas1_s, step_bn += s->calls * r->blasn_s;
        step_flop += s->calls * flop;
    }
    if (rc == 0)
        printf("%-36s %5s %6s %6s %2s %5s | %6.1f (%4.0f%%) | %6.1f (%4.0f%%) | %6.1f (%4.0f%%) | per step: %.0f / %.0f / "
               "%.0f ms\n",
               "all, weighted by calls per step", "", "", "", "", "", step_flop / step_rb * 1e-9,
               peakn > 0 ? 100 * step_flop / step_rb * 1e-9 / peakn : 0, step_flop / step_b1 * 1e-9,
               peak1 > 0 ? 100 * step_flop / step_b1 * 1e-9 / peak1 : 0, step_flop / step_bn * 1e-9,
               peakn > 0 ? 100 * step_flop / step_bn * 1e-9 / peakn : 0, 1e3 * step_rb, 1e3 * step_b1, 1e3 * step_bn);
    else
        fprintf(stderr, "bench_gemm: gemm_rb disagrees with OpenBLAS or failed (see above)\n");
    ocl_teardown(&o);
    return rc;
}
