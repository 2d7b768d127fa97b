/*
 * recipe.h — training recipes: the hyper-parameters of one time-to-accuracy workload.
 *
 * Recipes are embedded in the binary (no file to find). The learning rate is piecewise
 * linear in fractional epochs (cifar10-fast's np.interp over knots), evaluated every step.
 * With loss_summed, the loss is summed over the batch as in cifar10-fast, so the per-batch
 * update uses lr / batch and weight_decay * batch (identical to a mean loss with lr, wd).
 */
#ifndef DBK_RECIPE_H
#define DBK_RECIPE_H

#include <stdbool.h>

#include "backend/ops.h"

#define DBK_RECIPE_MAX_KNOTS 6

typedef struct dbk_recipe {
    const char *name;
    const char *description;
    const char *model;               /* a name from models.h */
    const char *dataset;             /* "cifar10" */
    int         batch;
    int         epochs;              /* the most epochs a run may take */
    int         lr_knots;
    float       lr_epochs[DBK_RECIPE_MAX_KNOTS];   /* knot positions in epochs, increasing */
    float       lr_values[DBK_RECIPE_MAX_KNOTS];   /* learning rate at each knot */
    float       momentum;
    float       weight_decay;
    bool        nesterov;
    bool        loss_summed;         /* loss summed over the batch (lr/batch, wd*batch) */
    float       label_smoothing;
    dbk_bn_params      bn;
    dbk_augment_params augment;      /* train-time augmentation and normalisation */
    float       target;              /* test top-1 accuracy in percent that stops the run */
    const char *target_note;         /* where the target comes from */
} dbk_recipe;

dbk_status        dbk_recipe_find(const char *name, const dbk_recipe **out); /* NOT_FOUND lists names */
int               dbk_recipe_count(void);
const dbk_recipe *dbk_recipe_at(int i);
const char       *dbk_recipe_default_name(void);                           /* "quick" */

/* Learning rate at a fractional epoch (np.interp: clamped to the end knots). */
float dbk_recipe_lr(const dbk_recipe *r, double epoch);

#endif
