/*
 * test_precision.c — `daybreak train --precision` through the command line.
 *
 * usage: test_precision <path to daybreak> opencl|vulkan
 *
 *   opencl (PoCL, no cl_khr_fp16): --precision fp16 exits non-zero with one message naming
 *          cl_khr_fp16 before loading anything; --precision auto trains in fp32, says so on
 *          the console and in result.json; a bad value is a usage error (exit 2).
 *   vulkan (lavapipe, which has shaderFloat16 and 16-bit storage): a short real-data run in
 *          fp16 learns like fp32: its training loss stays within FP16_LOSS_GAP of the same run
 *          in fp32 on the CPU reference, and result.json records the precision, the loss scale
 *          and the skipped steps.
 * A backend that is not compiled in or has no device is skipped (a failure under CI=true).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "train/results.h"
#include "test_util.h"

/* The run: the e2e smoke size (test_e2e.c: 160 real training images at batch 16, 10 steps,
 * 200 test images), seed 1. The bar on the epoch's training loss: measured on 2026-11-23 on
 * the CPU reference, fp16 against fp32 at this size, seeds 1-3 (docs/precision.md); lavapipe's
 * fp16 against the CPU's fp16 adds only summation order (e2e_vulkan: 0.012-0.02 for fp32). */
#define RUN_ARGS "train --recipe quick --batch 16 --train-subset 160 --test-subset 200 --epochs 1 --target 5 " \
                 "--all-epochs --seed 1 --no-progress"
#define FP16_LOSS_GAP 0.05

static const char *exe;
static char out[65536];

static const cJSON *get(const cJSON *o, const char *key) { return cJSON_GetObjectItemCaseSensitive(o, key); }

/* result.json of dir, parsed (caller deletes), or NULL. */
static cJSON *result_of(const char *dir) {
    cJSON *j;
    return dbk_results_read_json(dir, &j) == DBK_OK ? j : NULL;
}

static double first_train_loss(const cJSON *j) {
    const cJSON *e = cJSON_GetArrayItem(get(j, "epochs"), 0);
    const cJSON *l = get(e, "train_loss");
    return cJSON_IsNumber(l) ? l->valuedouble : (double)NAN;
}

/* ---------------------------------------------------------------------------------- */
/* opencl: the refusal and the fallback                                                 */

static int fp16_should_be_refused_naming_cl_khr_fp16(void) {
    const char *dir = dbk_test_tmpdir("precision-fp16-opencl");
    DBK_CHECK(dir != NULL);
    char args[4400];
    snprintf(args, sizeof args, RUN_ARGS " --backend opencl --precision fp16 --out '%s/run'", dir);
    const int rc = dbk_test_run_daybreak(exe, args, out, sizeof out);
    printf("%s", out);
    DBK_CHECK_MSG(rc != 0 && rc != 2, "exit %d, expected a run error (not 0, not a usage error)", rc);
    DBK_CHECK_MSG(strstr(out, "cl_khr_fp16") != NULL, "the message does not name cl_khr_fp16");
    DBK_CHECK_MSG(strstr(out, "epoch   1/1") == NULL, "it trained before refusing");
    return 0;
}

static int auto_should_train_in_fp32_and_say_why(void) {
    const char *dir = dbk_test_tmpdir("precision-auto-opencl");
    DBK_CHECK(dir != NULL);
    char args[4400], run_dir[4200];
    snprintf(run_dir, sizeof run_dir, "%s/run", dir);
    snprintf(args, sizeof args, RUN_ARGS " --backend opencl --precision auto --out '%s'", run_dir);
    const int rc = dbk_test_run_daybreak(exe, args, out, sizeof out);
    printf("%s", out);
    DBK_CHECK_MSG(rc == 0, "exit %d", rc);
    DBK_CHECK_MSG(strstr(out, "training in fp32") && strstr(out, "cl_khr_fp16"), "the console does not say why");
    cJSON *j = result_of(run_dir);
    DBK_CHECK_MSG(j != NULL, "no result.json in %s", run_dir);
    const cJSON *p = get(j, "precision");
    const cJSON *req = get(p, "requested"), *used = get(p, "used"), *note = get(p, "note");
    const bool ok = cJSON_IsString(req) && !strcmp(req->valuestring, "auto") && cJSON_IsString(used) &&
                    !strcmp(used->valuestring, "fp32") && cJSON_IsString(note) && strstr(note->valuestring, "cl_khr_fp16");
    cJSON_Delete(j);
    DBK_CHECK_MSG(ok, "result.json precision is not {requested auto, used fp32, note naming cl_khr_fp16}");
    return 0;
}

static int a_bad_precision_should_be_a_usage_error(void) {
    const int rc = dbk_test_run_daybreak(exe, "train --precision fp8 --backend cpu", out, sizeof out);
    DBK_CHECK_MSG(rc == 2, "exit %d, expected 2", rc);
    DBK_CHECK_MSG(strstr(out, "fp32, fp16 or auto") != NULL, "the message does not list the values:\n%s", out);
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* vulkan: fp16 learns like fp32                                                        */

static int fp16_should_learn_like_fp32(void) {
    const char *dir = dbk_test_tmpdir("precision-fp16-vulkan");
    DBK_CHECK(dir != NULL);
    char args[4400], d16[4200], d32[4200];
    snprintf(d16, sizeof d16, "%s/fp16", dir);
    snprintf(d32, sizeof d32, "%s/fp32-cpu", dir);
    snprintf(args, sizeof args, RUN_ARGS " --backend vulkan --precision fp16 --out '%s'", d16);
    int rc = dbk_test_run_daybreak(exe, args, out, sizeof out);
    printf("%s", out);
    DBK_CHECK_MSG(rc == 0, "fp16 run: exit %d", rc);
    snprintf(args, sizeof args, RUN_ARGS " --backend cpu --precision fp32 --out '%s'", d32);
    rc = dbk_test_run_daybreak(exe, args, out, sizeof out);
    DBK_CHECK_MSG(rc == 0, "fp32 run on the CPU: exit %d\n%s", rc, out);
    cJSON *j16 = result_of(d16), *j32 = result_of(d32);
    DBK_CHECK(j16 && j32);
    const double l16 = first_train_loss(j16), l32 = first_train_loss(j32);
    const cJSON *p = get(j16, "precision");
    const cJSON *used = get(p, "used"), *skipped = get(p, "skipped_steps"), *scale = get(p, "loss_scale");
    const bool recorded = cJSON_IsString(used) && !strcmp(used->valuestring, "fp16") && cJSON_IsNumber(skipped) &&
                          skipped->valuedouble >= 0 && skipped->valuedouble <= 10 && cJSON_IsNumber(scale) &&
                          scale->valuedouble >= 1.0;
    const double act16 = cJSON_GetNumberValue(get(j16, "activation_bytes"));
    cJSON_Delete(j16);
    cJSON_Delete(j32);
    printf("  training loss: fp16 on lavapipe %.4f, fp32 on the CPU %.4f (gap %.4f, bar %.2f); activations %.1f MiB\n",
           l16, l32, fabs(l16 - l32), FP16_LOSS_GAP, act16 / 1048576.0);
    DBK_CHECK_MSG(recorded, "result.json does not record precision used fp16, skipped_steps and loss_scale");
    DBK_CHECK_MSG(isfinite(l16) && fabs(l16 - l32) <= FP16_LOSS_GAP, "fp16 loss %.4f is not within %.2f of fp32's %.4f",
                  l16, FP16_LOSS_GAP, l32);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 3 || (strcmp(argv[2], "opencl") && strcmp(argv[2], "vulkan"))) {
        fprintf(stderr, "usage: test_precision <path to daybreak> opencl|vulkan\n");
        return 2;
    }
    exe = argv[1];
    dbk_backend_kind kind;
    int index;
    const int rc = dbk_test_resolve_backend(argv[2], &kind, &index);
    if (rc) return rc;
    if (!dbk_test_cifar_dir()) return dbk_test_skip_or_fail_in_ci(DBK_TEST_NO_CIFAR);
    if (kind == DBK_BACKEND_KIND_OPENCL) {
        DBK_RUN(fp16_should_be_refused_naming_cl_khr_fp16);
        DBK_RUN(auto_should_train_in_fp32_and_say_why);
        DBK_RUN(a_bad_precision_should_be_a_usage_error);
    } else {
        DBK_RUN(fp16_should_learn_like_fp32);
    }
    return dbk_test_finish();
}
