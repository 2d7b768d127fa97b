/*
 * op_check.h — every op of op_list.h on a device backend against the CPU reference backend
 * (DESIGN.md decision 1, STYLE.md 3.9): one definition of the op cases and their tolerances,
 * shared by tests/test_ops_backend.c and `daybreak check`.
 *
 * Each case builds one op descriptor, gives both backends the same random inputs, runs it on
 * both and compares every output; a passing case runs once more on the device as a one-op
 * program (dbk_program_create/run, the path of training steps) and is judged again.
 *
 * Conventions:
 *  - Every tensor has a buffer of its own: [front guard | tensor | back guard]. The guards
 *    are the NaN word 0x7fc0dead repeated; the front guard (the tensor's offset) differs per
 *    slot, 64-byte aligned as the graph aligns parameters (scalar tensors at 4 bytes past
 *    that, as the session's counters are), so a kernel that ignores or mixes up offsets
 *    reads NaN. The back guard is 1 KiB plus half the tensor, so a kernel writing whole
 *    tiles past the end is caught. After the op every buffer is read back whole: guards
 *    must be untouched, inputs unchanged.
 *  - Outputs that the op overwrites start as 0xff bytes (NaN in f32, -1 in i32), so an
 *    element the kernel never writes, or an output read before it is written (GEMM with
 *    beta = 0), shows up. In-place outputs (running statistics, SGD state, aliased
 *    relu/add/scale) and accumulating counters (loss_sum, correct) start from nonzero values.
 *  - NMSE = sum (ref - got)^2 / sum ref^2 over one output, ref from the CPU backend.
 *    Tolerance 0 means bit-exact. Integer outputs (argmax, labels) are always bit-exact.
 *  - The harness checks itself on every passing case: a byte changed on either side of each
 *    tensor, in each input, and a wrong last element of each output, planted one at a time
 *    in the device's results, must each fail the case.
 *  - Inputs come from a stream seeded per op, so one op's cases are the same whether it runs
 *    alone or after the others.
 * The tolerances and why each is what it is: op_cases.c.
 */
#ifndef DBK_OP_CHECK_H
#define DBK_OP_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "backend/backend.h"

/* The outcome of one case, handed to the caller's report function. */
typedef struct dbk_op_case_result {
    dbk_op      op;
    const char *shape;       /* what the case is: shapes and variant, e.g. "N2 C3 7x7 K10 ..." */
    double      nmse;        /* largest NMSE of its outputs (INFINITY: an integer output differs) */
    double      tolerance;   /* the op's NMSE tolerance (0: bit-exact) */
    bool        pass;
    const char *details;     /* why it failed, lines indented by 4 spaces ("" on a pass) */
    const char *algorithm;   /* the device's algorithm when not the op's plain one, e.g.
                              * "winograd F(2x2,3x3)" (dbk_backend_op_algorithm), else NULL */
} dbk_op_case_result;

typedef void (*dbk_op_case_report)(const dbk_op_case_result *r, void *user);

typedef struct dbk_op_check_config {
    dbk_backend       *ref;        /* the CPU reference backend */
    dbk_backend       *dev;        /* the backend under test */
    const char        *dev_name;   /* for messages, e.g. "opencl:0" */
    dbk_op_case_report report;     /* called once per case, in order (may be NULL) */
    void              *user;
    /* when set, only the cases the device runs with an algorithm naming it (e.g. "winograd";
     * dbk_op_case_result.algorithm) run; the rest are left out, unreported */
    const char        *only_algorithm;
} dbk_op_check_config;

/* True when op has cases; every op of op_list.h must (op_cases.c). */
bool   dbk_op_check_has_cases(dbk_op op);
/* The op's NMSE tolerance (0: bit-exact); -1 for an op without cases. */
double dbk_op_check_tolerance(dbk_op op);

/* Runs every case of op on cfg->dev and cfg->ref and reports each. Returns the number of
 * cases that failed, or -1 when op has no cases. The caller first checks that the device
 * has the op (dbk_backend_has_op): a case the device refuses is a failure, except a case
 * with f16 tensors on a device without the fp16 path (dbk_device_info.fp16_missing), which
 * must be refused. */
int dbk_op_check_run(const dbk_op_check_config *cfg, dbk_op op);

/* Normalised mean squared error sum((ref-got)^2) / sum(ref^2); INFINITY when ref is all zero
 * and got is not. */
double dbk_op_check_nmse(const float *ref, const float *got, size_t n);

#endif
