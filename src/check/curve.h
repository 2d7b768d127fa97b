/*
 * curve.h — a device backend trains like the CPU reference: the same seed gives the same loss
 * curve, step by step, over the first steps of a real-data run. Shared by tests/test_curve.c
 * and `daybreak check`.
 *
 * A run uses the session API (train/session.h) as the trainer does: the recipe's model, its
 * augmentation, optimizer and summed loss (airbench94 also its whitening init, per-group
 * learning rates, frozen weights and lookahead every 5 steps), on the first train_images real
 * training images, at the spec's batch, for its steps of one epoch. After every step
 * dbk_session_end_epoch synchronises and reads the epoch's cumulative loss counter; the
 * difference to the previous read is that step's summed loss (end_epoch only reads, so the
 * epoch and its shuffle go on undisturbed). Before the first step, while the weights are still
 * identical, the model is evaluated on the test images (the batch-norm inference path and a
 * partial last batch). Why the tolerance is what it is: curve.c.
 */
#ifndef DBK_CHECK_CURVE_H
#define DBK_CHECK_CURVE_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"
#include "data/dataset.h"
#include "train/session.h"

#define DBK_CURVE_MAX_STEPS 10
#define DBK_CURVE_SEED      5

/* The run of one recipe: its images, batch, steps and the peak learning rate (per sample,
 * reached at the last step). */
typedef struct dbk_curve_spec {
    const char *recipe;
    int         train_images, test_images, batch, steps;
    float       peak_lr;
} dbk_curve_spec;

typedef struct dbk_curve {
    double init_test_loss;                    /* mean test loss of the initial weights */
    double step_loss[DBK_CURVE_MAX_STEPS];    /* mean loss of each step's batch */
} dbk_curve;

/* A device's curve judged against the CPU's. */
typedef struct dbk_curve_verdict {
    double init_diff;                         /* relative difference of init_test_loss */
    bool   init_ok;
    double step_diff[DBK_CURVE_MAX_STEPS];    /* relative difference of each step's loss */
    bool   step_ok[DBK_CURVE_MAX_STEPS];
    int    bad_steps;
    double first3, last3;                     /* CPU: mean loss of the first and last 3 steps */
    bool   learned;                           /* the CPU run learned (last3 <= 0.97 first3) */
    bool   pass;                              /* init_ok, no bad step, and learned */
} dbk_curve_verdict;

/* The spec of a recipe ("quick", "airbench94"), or NULL (with the error set, naming them). */
const dbk_curve_spec *dbk_curve_spec_find(const char *recipe);

/* The learning rate of a step: a linear warm-up to the peak at the last step. */
float  dbk_curve_step_lr(const dbk_curve_spec *spec, int step);
/* The tolerance of step k's relative loss difference (step 0 also for the initial test loss). */
double dbk_curve_tolerance(int step);

/* Loads the first spec->train_images training and spec->test_images test images of the
 * recipe's dataset from data_arg (a data root or the dataset's folder; NULL or "": from
 * $DAYBREAK_DATA). Errors name the folder. On failure nothing is held. */
dbk_status dbk_curve_load_data(const dbk_curve_spec *spec, const char *data_arg, dbk_dataset *train,
                               dbk_dataset *test);

/* A backend (kind, index) and a session of the recipe's model on it, for the datasets train
 * and test (image shape and classes from train), with the data uploaded, the parameters
 * initialised from seed and the recipe's data-dependent initialisations done. From cfg only
 * batch, eval_batch and max_activation_buffer are used. On failure nothing is left (*be and
 * *s are NULL). The caller destroys the session, then the backend. */
dbk_status dbk_curve_recipe_session(const char *recipe, dbk_backend_kind kind, int index, dbk_session_config cfg,
                                    const dbk_dataset *train, const dbk_dataset *test, uint64_t seed,
                                    dbk_backend **be, dbk_session **s);

/* Trains spec's run on device (kind, index) from DBK_CURVE_SEED and records its curve. */
dbk_status dbk_curve_train(const dbk_curve_spec *spec, dbk_backend_kind kind, int index, const dbk_dataset *train,
                           const dbk_dataset *test, dbk_curve *out);

/* Judges dev's curve against ref's (the CPU's). */
void dbk_curve_compare(const dbk_curve_spec *spec, const dbk_curve *ref, const dbk_curve *dev,
                       dbk_curve_verdict *out);

#endif
