/*
 * test_ops_backend.c — every op of op_list.h (all DBK_OP_COUNT of them, forward and backward) on
 * one backend against the CPU reference backend (DESIGN.md decision 1, STYLE.md 3.9).
 *
 * usage: test_ops_backend <backend-spec> [--only-algorithm NAME] [op...]  e.g. cpu, opencl:0,
 * vulkan:0 conv2d_fwd (--only-algorithm winograd: only the cases the device runs as Winograd,
 * which keeps ops_vulkan_winograd short on lavapipe; ops_vulkan runs the rest)
 * (with op names, only those ops' cases run: ops_opencl_im2col, ops_opencl_winograd,
 * ops_opencl_winograd4, ops_opencl_direct and ops_vulkan_winograd run the three convolution ops
 * with DBK_FORCE_CONV set, so every algorithm meets every shape; with it set, the run also checks
 * that the backend honoured it: some case ran as F(2x2,3x3) with "winograd" (as F(4x4,3x3) with
 * "winograd4", as "direct" with "direct") and none as anything else, none as another algorithm
 * than the plain one with "im2col". A case that ran as another algorithm
 * than the op's plain one shows it after PASS/FAIL.)
 *
 * The cases, their tolerances and the harness (guard bytes, NaN-filled outputs, planted
 * faults, the one-op program rerun) live in the library, src/check/ (op_check.h, op_cases.c),
 * shared with `daybreak check`. This file runs them and prints one line per case: op, shape
 * summary, the largest NMSE of its f32 outputs, the tolerance, PASS/FAIL (details follow a
 * FAIL).
 *
 *  - Run against `cpu` (ops_cpu_vs_cpu) the results are bit-identical, so that run tests
 *    the harness: case construction, guards, comparisons and planted faults.
 *  - Coverage comes from op_list.h: every declared op must have cases (else the run fails,
 *    "op X has no test cases"). An op the backend lacks by its declaration (op_list.h where
 *    column) is printed as "not supported by <backend>" and listed at the end; a case the
 *    backend refuses for an op it has is a failure.
 *  - No such backend or device: "skipped" (exit 77), or exit 1 when CI=true.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "check/op_check.h"
#include "test_util.h"

static dbk_op_check_config cfg;
static dbk_op current_op;
static int other_cases;      /* cases the device ran as another algorithm than the op's plain one */
static int forced_cases;     /* of those, the cases that ran as DBK_FORCE_CONV's algorithm */

/* The op_algorithm string of DBK_FORCE_CONV's algorithm, NULL for im2col. */
static const char *forced_algorithm(void) {
    const char *forced = getenv("DBK_FORCE_CONV");
    if (!forced) return NULL;
    if (!strcmp(forced, "winograd")) return "winograd F(2x2,3x3)";
    if (!strcmp(forced, "winograd4")) return "winograd F(4x4,3x3)";
    if (!strcmp(forced, "direct")) return "direct";
    return NULL;
}

static void print_case(const dbk_op_case_result *r, void *user) {
    (void)user;
    printf("%-20s %-64s nmse %9.2e  tol %-7.1g %s%s%s\n", dbk_op_name(r->op), r->shape, r->nmse, r->tolerance,
           r->pass ? "PASS" : "FAIL", r->algorithm ? "  as " : "", r->algorithm ? r->algorithm : "");
    if (r->algorithm) other_cases++;
    if (r->algorithm && forced_algorithm() && !strcmp(r->algorithm, forced_algorithm())) forced_cases++;
    printf("%s", r->details);
    fflush(stdout);
}

/* A test case per op: 0 when every case of current_op passed. */
static int op_cases_should_pass(void) { return dbk_op_check_run(&cfg, current_op) != 0; }

/* With DBK_FORCE_CONV set: the backend ran some case as another algorithm exactly when it names
 * one, and every such case as that algorithm. */
static int forced_conv_honoured(void) {
    const char *forced = getenv("DBK_FORCE_CONV"), *algo = forced_algorithm();
    printf("DBK_FORCE_CONV=%s: %d cases ran as another algorithm, %d of them as %s\n", forced, other_cases,
           forced_cases, algo ? algo : "(none expected)");
    return algo ? other_cases == 0 || forced_cases != other_cases : other_cases != 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_ops_backend <backend-spec> [op...]   (cpu, opencl[:N], vulkan[:N]; ops as in "
                        "src/backend/op_list.h)\n");
        return 2;
    }
    const char *only_algorithm = NULL;
    int first_op = 2;
    if (argc >= 4 && !strcmp(argv[2], "--only-algorithm")) {
        only_algorithm = argv[3];
        first_op = 4;
    }
    bool selected[DBK_OP_COUNT];
    for (int op = 0; op < DBK_OP_COUNT; op++) selected[op] = argc == first_op;
    for (int i = first_op; i < argc; i++) {
        dbk_op op;
        if (dbk_op_from_name(argv[i], &op) != DBK_OK) {
            fprintf(stderr, "test_ops_backend: %s\n", dbk_last_error());
            return 2;
        }
        selected[op] = true;
    }
    const char *dev_name = argv[1];
    dbk_backend_kind kind;
    int index;
    const int unavailable = dbk_test_resolve_backend(dev_name, &kind, &index);
    if (unavailable) return unavailable;
    dbk_backend *ref_be = NULL, *dev_be = NULL;
    dbk_status s = dbk_backend_create(DBK_BACKEND_KIND_CPU, 0, &ref_be);
    if (s == DBK_OK) s = dbk_backend_create(kind, index, &dev_be);
    if (s != DBK_OK) {
        printf("cannot create the backends: %s: %s\n", dbk_status_str(s), dbk_last_error());
        dbk_backend_destroy(ref_be);
        return 1;
    }
    cfg = (dbk_op_check_config){.ref = ref_be, .dev = dev_be, .dev_name = dev_name, .report = print_case,
                                .only_algorithm = only_algorithm};
    const dbk_device_info *info = dbk_backend_get_info(dev_be);
    printf("%s: %s (%s, %s) against the CPU reference\n", dev_name, info->name, info->driver, info->api_version);
    char lacking[1024] = "";
    for (int op = 0; op < DBK_OP_COUNT; op++) {
        if (!selected[op]) continue;
        const char *const opname = dbk_op_name((dbk_op)op);
        char name[80];
        snprintf(name, sizeof name, "%s matches the CPU reference", opname);
        if (!dbk_op_check_has_cases((dbk_op)op)) {
            printf("op %s has no test cases: define %s_cases and OP_TEST in src/check/op_cases.c\n", opname, opname);
        } else if (!dbk_backend_has_op(dev_be, (dbk_op)op)) {
            /* the declaration says so (op_list.h where column): reported, not failed */
            printf("%-20s not supported by %s\n", opname, dev_name);
            size_t len = strlen(lacking);
            snprintf(lacking + len, sizeof lacking - len, "%s%s", len ? ", " : "", opname);
            continue;
        }
        current_op = (dbk_op)op;
        dbk_test_run(name, op_cases_should_pass);
    }
    if (lacking[0]) printf("not supported by %s: %s\n", dev_name, lacking);
    if (getenv("DBK_FORCE_CONV") && (selected[DBK_OP_CONV2D_FWD] || selected[DBK_OP_CONV2D_BWD_DATA] ||
                                     selected[DBK_OP_CONV2D_BWD_FILTER]))
        dbk_test_run("the backend honours DBK_FORCE_CONV", forced_conv_honoured);
    dbk_backend_destroy(dev_be);
    dbk_backend_destroy(ref_be);
    return dbk_test_finish();
}
