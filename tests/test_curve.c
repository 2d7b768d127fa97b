/*
 * test_curve.c — a device backend trains like the CPU reference: the same seed gives the
 * same loss curve, step by step, over the first steps of a real-data run.
 *
 * usage: test_curve <backend-spec> [recipe]    e.g. cpu, opencl:0, vulkan:0; quick (default)
 *                                               or airbench94
 *
 * The runs (images, batch, steps, learning rates), the training and the tolerances live in
 * the library, src/check/curve.{h,c}, shared with `daybreak check`: each step's mean loss
 * within 1e-3 + 2.5e-3 * k of the CPU's, the test loss of the initial weights within 1e-3,
 * and the CPU run itself learning (last 3 steps' mean loss at least 3% below the first 3's).
 *
 * Exit 77 (skipped) without CIFAR-10, or when the backend is not compiled in or has no
 * device; the latter is a failure when CI=true (dbk_test_skip_or_fail_in_ci).
 */
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "check/curve.h"
#include "test_util.h"

static const dbk_curve_spec *cr;
static dbk_backend_kind dev_kind;
static int dev_index;
static const char *dev_spec;
static dbk_dataset train_set, test_set;

static int loss_curve_should_match_the_cpu_reference(void) {
    dbk_curve ref, dev;
    DBK_CHECK_OK(dbk_curve_train(cr, DBK_BACKEND_KIND_CPU, 0, &train_set, &test_set, &ref));
    DBK_CHECK_OK(dbk_curve_train(cr, dev_kind, dev_index, &train_set, &test_set, &dev));
    dbk_curve_verdict v;
    dbk_curve_compare(cr, &ref, &dev, &v);

    printf("  initial weights: test loss %.5f vs %.5f (rel diff %.2e, tolerance %.1e) %s\n", ref.init_test_loss,
           dev.init_test_loss, v.init_diff, dbk_curve_tolerance(0), v.init_ok ? "PASS" : "FAIL");
    printf("  step      lr   cpu loss  %8.8s loss   rel diff  tolerance\n", dev_spec);
    for (int k = 0; k < cr->steps; k++)
        printf("  %4d  %6.3f  %9.5f  %13.5f  %9.2e  %9.1e %s\n", k, (double)dbk_curve_step_lr(cr, k), ref.step_loss[k],
               dev.step_loss[k], v.step_diff[k], dbk_curve_tolerance(k), v.step_ok[k] ? "PASS" : "FAIL");
    DBK_CHECK_MSG(v.init_ok, "test loss of the initial weights differs by %.2e (tolerance %.1e)", v.init_diff,
                  dbk_curve_tolerance(0));
    DBK_CHECK_MSG(v.bad_steps == 0, "%d of %d steps outside the tolerance", v.bad_steps, cr->steps);
    printf("  cpu: mean loss of the first 3 steps %.4f, of the last 3 %.4f\n", v.first3, v.last3);
    DBK_CHECK_MSG(v.learned, "the CPU run did not learn (%.4f -> %.4f): the comparison proves nothing", v.first3,
                  v.last3);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: test_curve <backend-spec> [recipe]   (cpu, opencl[:N], vulkan[:N]; quick or airbench94)\n");
        return 2;
    }
    dev_spec = argv[1];
    if (!(cr = dbk_curve_spec_find(argc > 2 ? argv[2] : "quick"))) {
        fprintf(stderr, "test_curve: %s\n", dbk_last_error());
        return 2;
    }
    const int unavailable = dbk_test_resolve_backend(dev_spec, &dev_kind, &dev_index);
    if (unavailable) return unavailable;
    const char *cifar = dbk_test_cifar_dir();
    if (!cifar) return dbk_test_skip_or_fail_in_ci(DBK_TEST_NO_CIFAR);
    if (dbk_curve_load_data(cr, cifar, &train_set, &test_set) != DBK_OK) {
        printf("cannot load CIFAR-10: %s\n", dbk_last_error());
        return 1;
    }
    printf("%s recipe model, %d real training images, batch %d, %d steps, seed %d: %s against the CPU reference\n",
           cr->recipe, cr->train_images, cr->batch, cr->steps, DBK_CURVE_SEED, dev_spec);
    DBK_RUN(loss_curve_should_match_the_cpu_reference);
    dbk_dataset_deinit(&train_set);
    dbk_dataset_deinit(&test_set);
    return dbk_test_finish();
}
