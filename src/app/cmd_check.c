/*
 * cmd_check.c — `daybreak check`: a conformance check of a device for a user's CI. Every op
 * against the CPU reference with the cases and tolerances of tests/test_ops_backend
 * (src/check/op_cases.c), the first steps of a real-data training curve against the CPU's
 * (src/check/curve.c, as tests/test_curve), and an fp16 line (not a check of its own: the
 * ops' f16 cases run with the ops; said so, never passed). A table on stdout, or --json (schema: docs/check.md). Exit 0 when every
 * check passes, 1 when one fails, 2 for a usage error or no device.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "app/cli.h"
#include "check/curve.h"
#include "check/op_check.h"

#define CHECK_CURVE_RECIPE "quick"
#define FP16_NOTE "not a separate check: the f16 cases of conv2d_*, gemm and the casts run with the ops above"

void dbk_help_check(void) {
    printf("usage: daybreak check [options]\n\n"
           "Checks a device against the CPU reference: every op with the cases and tolerances of the\n"
           "test suite (NMSE per output, guard bytes, one-op programs), then the first %d steps of a\n"
           "real-data training curve (recipe %s) against the CPU's (fp16: the ops' f16 cases, which\n"
           "a device without fp16 must refuse). Prints one line per check with its error and tolerance.\n\n"
           "options:\n"
           "  --backend SPEC   cpu, opencl[:N], vulkan[:N], or all: every OpenCL and Vulkan device\n"
           "                   found (default: $DBK_BACKEND, else the default device)\n"
           "  --data DIR       data folder holding cifar-10-batches-bin/ (default: $DAYBREAK_DATA);\n"
           "                   without it the curve check fails\n"
           "  --no-curve       skip the training curve (reported as skipped)\n"
           "  --ops LIST       only these ops (comma-separated names, as the table prints them)\n"
           "  --json           one JSON document on stdout instead of the table\n\n"
           "exit codes: 0 every check passed, 1 a check failed, 2 usage error or no device\n",
           DBK_CURVE_MAX_STEPS, CHECK_CURVE_RECIPE);
}

/* ---------------------------------------------------------------------------------- */
/* one device                                                                          */

typedef struct check_run {
    bool                  json;
    bool                  only[DBK_OP_COUNT];   /* --ops: the ops to check */
    bool                  some_ops;             /* --ops given */
    dbk_backend          *ref;
    const dbk_curve_spec *spec;
    const char           *curve_skip;   /* non-NULL: why the curve is not run (--no-curve) */
    char                  curve_error[1024];   /* the data could not be loaded: the curve fails */
    dbk_dataset           train, test;
    bool                  have_ref_curve;
    dbk_curve             ref_curve;
} check_run;

/* Aggregates the cases of one op; failed cases go to the table and the JSON. */
typedef struct op_tally {
    const check_run *run;
    int              cases, failed;
    double           worst;
    cJSON           *failures;
} op_tally;

static void tally_case(const dbk_op_case_result *r, void *user) {
    op_tally *t = user;
    t->cases++;
    if (r->nmse > t->worst || isnan(r->nmse)) t->worst = r->nmse;
    if (r->pass) return;
    t->failed++;
    if (t->run->json) {
        cJSON *f = cJSON_CreateObject();
        cJSON_AddStringToObject(f, "case", r->shape);
        cJSON_AddNumberToObject(f, "error", r->nmse);
        cJSON_AddStringToObject(f, "details", r->details);
        cJSON_AddItemToArray(t->failures, f);
    } else {
        printf("    FAIL case %s: nmse %.2e, tolerance %.1g\n%s", r->shape, r->nmse, r->tolerance, r->details);
        fflush(stdout);
    }
}

static cJSON *check_object(cJSON *checks, const char *kind, const char *name, const char *status) {
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "check", kind);
    cJSON_AddStringToObject(c, "name", name);
    cJSON_AddStringToObject(c, "status", status);
    cJSON_AddItemToArray(checks, c);
    return c;
}

/* Every op on dev; returns the number of ops that failed. */
static int check_ops(const check_run *run, dbk_backend *dev, const char *dev_name, cJSON *checks) {
    int failed_ops = 0;
    for (int i = 0; i < DBK_OP_COUNT; i++) {
        const dbk_op op = (dbk_op)i;
        const char *name = dbk_op_name(op);
        if (run->some_ops && !run->only[i]) continue;
        if (!dbk_op_check_has_cases(op)) {
            failed_ops++;
            if (run->json) cJSON_AddStringToObject(check_object(checks, "op", name, "fail"), "message", "no cases");
            else printf("  %-22s FAIL  no cases defined (src/check/op_cases.c)\n", name);
            continue;
        }
        if (!dbk_backend_has_op(dev, op)) {
            /* the op's declaration says this backend lacks it (op_list.h where column) */
            if (run->json) check_object(checks, "op", name, "not_supported");
            else printf("  %-22s n/a   not supported by %s (by its declaration in op_list.h)\n", name, dev_name);
            continue;
        }
        op_tally t = {.run = run, .failures = cJSON_CreateArray()};
        const dbk_op_check_config cfg = {.ref = run->ref, .dev = dev, .dev_name = dev_name, .report = tally_case,
                                         .user = &t};
        dbk_op_check_run(&cfg, op);
        const double tol = dbk_op_check_tolerance(op);
        failed_ops += t.failed > 0;
        if (run->json) {
            cJSON *c = check_object(checks, "op", name, t.failed ? "fail" : "pass");
            cJSON_AddNumberToObject(c, "cases", t.cases);
            cJSON_AddNumberToObject(c, "failed", t.failed);
            cJSON_AddStringToObject(c, "metric", "nmse");
            cJSON_AddNumberToObject(c, "error", t.worst);
            cJSON_AddNumberToObject(c, "tolerance", tol);
            cJSON_AddItemToObject(c, "failures", t.failures);
        } else {
            cJSON_Delete(t.failures);
            char tol_text[32] = "bit-exact";
            if (tol > 0.0) snprintf(tol_text, sizeof tol_text, "%.1g", tol);
            printf("  %-22s %s  %3d/%-3d cases  nmse %9.2e  tolerance %s\n", name, t.failed ? "FAIL" : "PASS",
                   t.cases - t.failed, t.cases, t.worst, tol_text);
            fflush(stdout);
        }
    }
    return failed_ops;
}

/* The curve check as a JSON object or a table line with its step table. */
static void report_curve(const check_run *run, const char *dev_name, const dbk_curve *dev, const dbk_curve_verdict *v,
                         cJSON *checks) {
    const dbk_curve_spec *sp = run->spec;
    int worst = 0;   /* the step closest to (or furthest past) its tolerance */
    for (int k = 1; k < sp->steps; k++)
        if (v->step_diff[k] / dbk_curve_tolerance(k) > v->step_diff[worst] / dbk_curve_tolerance(worst)) worst = k;
    if (run->json) {
        cJSON *c = check_object(checks, "curve", sp->recipe, v->pass ? "pass" : "fail");
        cJSON_AddStringToObject(c, "metric", "relative loss difference");
        cJSON_AddNumberToObject(c, "error", v->step_diff[worst]);
        cJSON_AddNumberToObject(c, "tolerance", dbk_curve_tolerance(worst));
        cJSON_AddNumberToObject(c, "worst_step", worst);
        cJSON *init = cJSON_AddObjectToObject(c, "initial_test_loss");
        cJSON_AddNumberToObject(init, "cpu", run->ref_curve.init_test_loss);
        cJSON_AddNumberToObject(init, "device", dev->init_test_loss);
        cJSON_AddNumberToObject(init, "error", v->init_diff);
        cJSON_AddNumberToObject(init, "tolerance", dbk_curve_tolerance(0));
        cJSON *steps = cJSON_AddArrayToObject(c, "steps");
        for (int k = 0; k < sp->steps; k++) {
            cJSON *s = cJSON_CreateObject();
            cJSON_AddNumberToObject(s, "step", k);
            cJSON_AddNumberToObject(s, "lr", (double)dbk_curve_step_lr(sp, k));
            cJSON_AddNumberToObject(s, "cpu_loss", run->ref_curve.step_loss[k]);
            cJSON_AddNumberToObject(s, "loss", dev->step_loss[k]);
            cJSON_AddNumberToObject(s, "error", v->step_diff[k]);
            cJSON_AddNumberToObject(s, "tolerance", dbk_curve_tolerance(k));
            cJSON_AddBoolToObject(s, "pass", v->step_ok[k]);
            cJSON_AddItemToArray(steps, s);
        }
        cJSON_AddBoolToObject(c, "cpu_learned", v->learned);
        return;
    }
    printf("  %-22s %s  %d steps        worst step %d: rel diff %.2e, tolerance %.1e; initial test loss %.2e "
           "(tolerance %.1e)\n", "curve " CHECK_CURVE_RECIPE, v->pass ? "PASS" : "FAIL", sp->steps, worst,
           v->step_diff[worst], dbk_curve_tolerance(worst), v->init_diff, dbk_curve_tolerance(0));
    if (!v->pass) {
        printf("    step  cpu loss  %s loss  rel diff  tolerance\n", dev_name);
        for (int k = 0; k < sp->steps; k++)
            printf("    %4d  %8.5f  %8.5f  %9.2e  %9.1e %s\n", k, run->ref_curve.step_loss[k], dev->step_loss[k],
                   v->step_diff[k], dbk_curve_tolerance(k), v->step_ok[k] ? "" : "FAIL");
        if (!v->learned)
            printf("    the CPU run did not learn (%.4f -> %.4f): the comparison proves nothing\n", v->first3, v->last3);
    }
}

/* A curve check that could not run: skipped (why) or failed (message). */
static void report_curve_not_run(const check_run *run, const char *status, const char *message, cJSON *checks) {
    if (run->json) cJSON_AddStringToObject(check_object(checks, "curve", run->spec->recipe, status), "message", message);
    else printf("  %-22s %s  %s\n", "curve " CHECK_CURVE_RECIPE, strcmp(status, "fail") ? "skip" : "FAIL", message);
}

/* The curve of device (kind, index) against the CPU's; returns 1 when it failed. */
static int check_curve(check_run *run, dbk_backend_kind kind, int index, const char *dev_name, cJSON *checks) {
    if (run->curve_skip) {
        report_curve_not_run(run, "skipped", run->curve_skip, checks);
        return 0;
    }
    char msg[1400];
    if (run->curve_error[0]) {
        report_curve_not_run(run, "fail", run->curve_error, checks);
        return 1;
    }
    if (!run->have_ref_curve) {
        if (dbk_curve_train(run->spec, DBK_BACKEND_KIND_CPU, 0, &run->train, &run->test, &run->ref_curve) != DBK_OK) {
            snprintf(msg, sizeof msg, "the CPU reference run failed: %s", dbk_last_error());
            report_curve_not_run(run, "fail", msg, checks);
            return 1;
        }
        run->have_ref_curve = true;
    }
    dbk_curve dev;
    if (dbk_curve_train(run->spec, kind, index, &run->train, &run->test, &dev) != DBK_OK) {
        snprintf(msg, sizeof msg, "training on %s failed: %s", dev_name, dbk_last_error());
        report_curve_not_run(run, "fail", msg, checks);
        return 1;
    }
    dbk_curve_verdict v;
    dbk_curve_compare(run->spec, &run->ref_curve, &dev, &v);
    report_curve(run, dev_name, &dev, &v, checks);
    return !v.pass;
}

/* Every check on device (kind, index); adds its object to devices; returns 1 on any failure. */
static int check_device(check_run *run, dbk_backend_kind kind, int index, cJSON *devices) {
    char dev_name[64];
    snprintf(dev_name, sizeof dev_name, "%s:%d", dbk_backend_kind_name(kind), index);
    cJSON *d = cJSON_CreateObject();
    cJSON_AddItemToArray(devices, d);
    cJSON_AddStringToObject(d, "device", dev_name);
    cJSON_AddStringToObject(d, "backend", dbk_backend_kind_name(kind));
    cJSON_AddNumberToObject(d, "index", index);
    dbk_backend *dev;
    if (dbk_backend_create(kind, index, &dev) != DBK_OK) {
        if (run->json) cJSON_AddStringToObject(d, "error", dbk_last_error());
        else printf("%s: FAIL: cannot create the backend: %s\n", dev_name, dbk_last_error());
        cJSON_AddBoolToObject(d, "pass", false);
        return 1;
    }
    const dbk_device_info *info = dbk_backend_get_info(dev);
    cJSON_AddStringToObject(d, "name", info->name);
    cJSON_AddStringToObject(d, "driver", info->driver);
    cJSON_AddStringToObject(d, "api_version", info->api_version);
    if (!run->json) {
        printf("%s: %s (%s, %s) against the CPU reference\n", dev_name, info->name, info->driver, info->api_version);
        fflush(stdout);
    }
    cJSON *checks = cJSON_AddArrayToObject(d, "checks");
    const int failed_ops = check_ops(run, dev, dev_name, checks);
    dbk_backend_destroy(dev);   /* the curve creates its own backend */
    const int curve_failed = check_curve(run, kind, index, dev_name, checks);
    if (run->json) cJSON_AddStringToObject(check_object(checks, "fp16", "fp16", "not_available"), "message", FP16_NOTE);
    else printf("  %-22s n/a   %s\n", "fp16", FP16_NOTE);
    const bool pass = failed_ops == 0 && !curve_failed;
    cJSON_AddBoolToObject(d, "pass", pass);
    if (!run->json)
        printf("%s: %s (%d op%s failed, curve %s)\n\n", dev_name, pass ? "PASS" : "FAIL", failed_ops,
               failed_ops == 1 ? "" : "s", run->curve_skip ? "skipped" : curve_failed ? "failed" : "passed");
    return !pass;
}

/* ---------------------------------------------------------------------------------- */
/* the command                                                                         */

enum { MAX_CHECK_DEVICES = 64 };

typedef struct device_list {
    int              count;
    dbk_backend_kind kind[MAX_CHECK_DEVICES];
    int              index[MAX_CHECK_DEVICES];
} device_list;

/* The devices --backend names; an exit code (usage errors and "no device" are 2). */
static int resolve_devices(const char *backend, device_list *out) {
    out->count = 0;
    if (backend && !strcmp(backend, "all")) {
        for (int k = 0; k < DBK_BACKEND_KIND_COUNT; k++) {
            if (k == DBK_BACKEND_KIND_CPU) continue;   /* the reference itself */
            const int n = dbk_backend_device_count((dbk_backend_kind)k);
            for (int i = 0; i < n && out->count < MAX_CHECK_DEVICES; i++) {
                out->kind[out->count] = (dbk_backend_kind)k;
                out->index[out->count++] = i;
            }
        }
        if (out->count == 0) {
            fprintf(stderr, "daybreak: error: check: --backend all: no OpenCL or Vulkan device found (see 'daybreak "
                            "devices')\n");
            return DBK_EXIT_USAGE;
        }
        return DBK_EXIT_OK;
    }
    if (!backend || !*backend) backend = getenv("DBK_BACKEND");
    if (backend && *backend) {
        if (dbk_backend_resolve(backend, -1, &out->kind[0], &out->index[0]) != DBK_OK) {
            fprintf(stderr, "daybreak: error: check: %s\n", dbk_last_error());
            return DBK_EXIT_USAGE;
        }
    } else {
        dbk_backend_default(&out->kind[0], &out->index[0]);
    }
    out->count = 1;
    return DBK_EXIT_OK;
}

/* --ops: a comma-separated list of op names into run->only; an exit code (2: an unknown name). */
static int select_ops(const char *list, check_run *run) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", list);
    run->some_ops = true;
    for (char *save = NULL, *name = strtok_r(buf, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        dbk_op op;
        if (dbk_op_from_name(name, &op) != DBK_OK)
            return dbk_cli_usage_error("check", "--ops: unknown op '%s' (the names 'daybreak check' prints, e.g. "
                                       "conv2d_fwd,gemm)", name);
        run->only[op] = true;
    }
    for (int i = 0; i < DBK_OP_COUNT; i++)
        if (run->only[i]) return DBK_EXIT_OK;
    return dbk_cli_usage_error("check", "--ops: no op named");
}

int dbk_cmd_check(dbk_cli_args *a) {
    const char *backend = NULL, *data = NULL, *ops = NULL;
    bool json = false, no_curve = false;
    for (a->i = 2; a->i < a->argc; a->i++) {
        const char *v = NULL, *arg = a->argv[a->i];
        int m = 0;
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            dbk_help_check();
            return DBK_EXIT_OK;
        }
        if ((m = dbk_cli_match(a, "--backend", true, &v)) != 0) backend = v;
        else if ((m = dbk_cli_match(a, "--data", true, &v)) != 0) data = v;
        else if (!strcmp(arg, "--json")) json = true;
        else if (!strcmp(arg, "--no-curve")) no_curve = true;
        else if ((m = dbk_cli_match(a, "--ops", true, &v)) != 0) ops = v;
        else return dbk_cli_usage_error("check", "unknown option '%s'", arg);
        if (m < 0) return dbk_cli_usage_error("check", "option '%s' needs a value", arg);
    }
    device_list devs;
    int rc = resolve_devices(backend, &devs);
    if (rc != DBK_EXIT_OK) return rc;

    check_run *run = calloc(1, sizeof *run);
    if (!run) {
        fprintf(stderr, "daybreak: error: out of host memory\n");
        return DBK_EXIT_ERROR;
    }
    run->json = json;
    if (ops && (rc = select_ops(ops, run)) != DBK_EXIT_OK) {
        free(run);
        return rc;
    }
    run->spec = dbk_curve_spec_find(CHECK_CURVE_RECIPE);
    if (no_curve) run->curve_skip = "skipped (--no-curve)";
    else if (dbk_curve_load_data(run->spec, data, &run->train, &run->test) != DBK_OK)
        snprintf(run->curve_error, sizeof run->curve_error, "cannot load the training data: %s", dbk_last_error());
    if (dbk_backend_create(DBK_BACKEND_KIND_CPU, 0, &run->ref) != DBK_OK) {
        rc = dbk_cli_fail("cannot create the CPU reference backend");
    } else {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "daybreak", DBK_VERSION);
        if (run->some_ops) {   /* a partial check says which ops it covered */
            cJSON *sel = cJSON_AddArrayToObject(root, "selected_ops");
            if (!json) printf("only the ops --ops names:");
            for (int i = 0; i < DBK_OP_COUNT; i++)
                if (run->only[i]) {
                    cJSON_AddItemToArray(sel, cJSON_CreateString(dbk_op_name((dbk_op)i)));
                    if (!json) printf(" %s", dbk_op_name((dbk_op)i));
                }
            if (!json) printf("\n");
        }
        cJSON *devices = cJSON_AddArrayToObject(root, "devices");
        int failed = 0;
        for (int i = 0; i < devs.count; i++) failed += check_device(run, devs.kind[i], devs.index[i], devices);
        cJSON_AddBoolToObject(root, "pass", failed == 0);
        if (json) {
            char *text = cJSON_Print(root);
            if (text) printf("%s\n", text);
            cJSON_free(text);
        } else if (devs.count > 1) {
            printf("%d of %d devices passed\n", devs.count - failed, devs.count);
        }
        cJSON_Delete(root);
        rc = failed ? DBK_EXIT_ERROR : DBK_EXIT_OK;
    }
    dbk_backend_destroy(run->ref);
    dbk_dataset_deinit(&run->train);
    dbk_dataset_deinit(&run->test);
    free(run);
    return rc;
}
