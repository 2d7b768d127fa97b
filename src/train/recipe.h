/*
 * recipe.h — training recipes: the hyper-parameters of one time-to-accuracy workload.
 *
 * Recipes are embedded in the binary (no file to find). The learning rate is piecewise
 * linear in fractional epochs (cifar10-fast's np.interp over knots), evaluated every step.
 * With loss_summed, the loss is summed over the batch as in cifar10-fast, so the per-batch
 * update uses lr / batch and weight_decay * batch (identical to a mean loss with lr, wd).
 * AdamW is invariant to the loss's scale (up to eps), so its lr and decay are never scaled.
 */
#ifndef DBK_RECIPE_H
#define DBK_RECIPE_H

#include <stdbool.h>
#include <stddef.h>

#include "backend/ops.h"

#define DBK_RECIPE_MAX_KNOTS 6
#define DBK_RECIPE_MAX_GROUPS 4
#define DBK_RECIPE_MAX_SIZE_PHASES 8

/* One phase of progressive resizing (fast.ai's DAWNBench ImageNet trick: small crops early,
 * full size late): from epoch first_epoch (0-based) on, streamed datasets are trained and
 * evaluated on size x size crops, with the same parameters, statistics and optimizer state. */
typedef struct dbk_size_phase {
    int first_epoch;                 /* 0-based; the first phase's is 0 */
    int size;                        /* crop side in pixels, 8..1024 */
} dbk_size_phase;

/* How the optimizer treats one parameter group a model declares (nn/graph.h,
 * dbk_graph_set_group). Groups a recipe does not list train with scale 1 to the end. */
typedef struct dbk_recipe_group {
    const char *name;                /* the group's name in the model */
    float       lr_scale;            /* multiplies the schedule's learning rate */
    float       weight_decay_scale;  /* multiplies the recipe's weight decay */
    float       until_epoch;         /* > 0: the group's learning rate is 0 from this epoch on */
} dbk_recipe_group;

/* The optimizer of a recipe's parameter updates. */
typedef enum dbk_optimizer {
    DBK_OPTIMIZER_SGD,               /* SGD with momentum (and nesterov), coupled weight decay */
    DBK_OPTIMIZER_ADAMW,             /* AdamW, decoupled weight decay (DBK_OP_ADAMW_UPDATE) */
} dbk_optimizer;

const char *dbk_optimizer_name(dbk_optimizer o);                     /* "sgd", "adamw" */

typedef struct dbk_recipe {
    const char *name;
    const char *description;
    const char *model;               /* a name from models.h */
    const char *dataset;             /* "cifar10" */
    int         batch;
    int         epochs;              /* the most epochs a run may take */
    float       train_epochs;        /* the run's training budget in epochs, fractional (airbench:
                                        9.9 of epochs = 10); 0 = epochs. The run takes
                                        ceil(steps per epoch * train_epochs) steps in all */
    int         lr_knots;
    bool        lr_knots_in_run;     /* lr_epochs are fractions of the run's steps (knot at step
                                        floor(fraction * total steps)), not epochs */
    float       lr_epochs[DBK_RECIPE_MAX_KNOTS];   /* knot positions in epochs, increasing */
    float       lr_values[DBK_RECIPE_MAX_KNOTS];   /* learning rate at each knot */
    dbk_optimizer optimizer;         /* SGD (the default, zero) or AdamW */
    float       momentum;            /* SGD */
    float       weight_decay;        /* SGD: added to the gradient; AdamW: decoupled, p *= 1 - lr*wd
                                        (never scaled by the batch) */
    bool        nesterov;            /* SGD */
    float       adam_beta1, adam_beta2, adam_eps;   /* AdamW */
    bool        loss_summed;         /* loss summed over the batch (lr/batch, wd*batch) */
    float       label_smoothing;
    int         group_count;
    dbk_recipe_group groups[DBK_RECIPE_MAX_GROUPS];
    dbk_bn_params      bn;
    dbk_augment_params augment;      /* train-time augmentation and normalisation */
    int         lookahead_every;     /* > 0: every this many steps, lookahead (airbench94's EMA): */
    float       lookahead_base;      /*   ema = lerp(ema, params, 1 - decay), params = ema, with */
    float       lookahead_power;     /*   decay = base * (step / total steps)^power; once more with
                                          decay 1 after the last step (params = ema) */
    int         tta_level;           /* test-time augmentation of the final evaluation: 0 none,
                                        1 mirror, 2 mirror and one-pixel translations */
    bool        fixed_budget;        /* the run always trains its whole budget, then evaluates once
                                        more (with tta_level) ON the clock, as airbench times it;
                                        that final evaluation is the run's accuracy. Per-epoch
                                        evaluations stay off the clock (diagnostics) */
    int         image_size;          /* streamed datasets: the side of the square crops trained and
                                        evaluated on (0 = the dataset's shape); evaluation resizes
                                        the short side to 8/7 of it first (256 for 224) */
    int         size_phase_count;    /* streamed: progressive resizing, 0 = image_size throughout;
                                        with phases, image_size is the last phase's */
    dbk_size_phase size_phases[DBK_RECIPE_MAX_SIZE_PHASES]; /* first epochs increasing, from 0 */
    float       min_scale;           /* streamed: smallest area fraction of the random-resized crop
                                        (0 = torchvision's 0.08) */
    bool        target_top5;         /* the target is top-5 accuracy (ImageNet's DAWNBench rule); the
                                        run then also logs top-5 (logs.tsv's top5Accuracy) */
    float       target;              /* test accuracy in percent that stops the run (top-1, or
                                        top-5 with target_top5) */
    const char *target_note;         /* where the target comes from */
    /* Sparse masks (FISH recipes, docs/sparse-masks.md): the defaults of the train options. */
    const char *sparse_mask;         /* --sparse-mask ("fisher:0.005"); NULL: every parameter trains */
    int         mask_samples;        /* --mask-samples (0: 1024) */
    int         mask_warmup;         /* --mask-warmup */
    bool        mask_same;           /* --mask-split same (every rank the same mask) */
    int         local_steps;         /* --local-steps of a --distributed run (0: gradient exchange) */
} dbk_recipe;

/* One view of test-time augmentation: the test image translated by (dy, dx) with reflect
 * padding, mirrored when flip, and its logits' weight in the sum. */
typedef struct dbk_tta_view {
    int   dy, dx;
    bool  flip;
    float weight;
} dbk_tta_view;

/* The views of a TTA level (airbench94's infer): 0: the image (weight 1); 1: it and its mirror
 * (0.5 each); 2: those (0.25 each) and the mirrored and plain one-pixel translations up-left
 * and down-right (0.125 each). Returns the count; levels above 2 are 2. */
int dbk_tta_views(int level, const dbk_tta_view **views);

dbk_status        dbk_recipe_find(const char *name, const dbk_recipe **out); /* NOT_FOUND lists names */
int               dbk_recipe_count(void);
const dbk_recipe *dbk_recipe_at(int i);
const char       *dbk_recipe_default_name(void);                           /* "quick" */

/* Rescales r to a run of `epochs` (--epochs): a fractional budget keeps its ratio to the whole
 * epochs, knots in epochs are stretched so the last lands on the new end, and size phases start
 * at the same fractions of the run (int(first * epochs / r->epochs + 0.5), as fast.ai placed
 * them); a phase rounded onto the previous one's start replaces it. */
void dbk_recipe_set_epochs(dbk_recipe *r, int epochs);

/* --lr: the schedule scaled so that its largest knot value is peak (> 0); a schedule of zeros
 * is left as it is. */
void dbk_recipe_set_peak_lr(dbk_recipe *r, float peak);

/* Learning rate at a fractional epoch (np.interp: clamped to the end knots). */
float dbk_recipe_lr(const dbk_recipe *r, double epoch);

/* The run's length in steps: ceil(steps_per_epoch * train_epochs) (train_epochs 0 = epochs). */
long dbk_recipe_total_steps(const dbk_recipe *r, int steps_per_epoch);

/* Learning rate of global step `step` (0-based) of a run of total_steps steps: piecewise
 * linear over the knots, placed in epochs or, with lr_knots_in_run, at steps
 * floor(fraction * total_steps) (airbench's int(total * 0.23)). */
float dbk_recipe_lr_at_step(const dbk_recipe *r, long step, int steps_per_epoch, long total_steps);

/* Progressive resizing: the index of the size phase that 0-based epoch `epoch0` trains in
 * (-1 without phases), and its crop side (image_size without phases). */
int dbk_recipe_size_phase_at(const dbk_recipe *r, int epoch0);
int dbk_recipe_image_size_at(const dbk_recipe *r, int epoch0);

/* Parses a size schedule "E:S[,E:S]..." (first epochs 0-based, the first 0, increasing; sides
 * 8..1024) into r's size phases, and image_size to the last phase's (the size a finished
 * model is evaluated at). DBK_ERR_INVALID_ARG names the bad part; r is unchanged then. */
dbk_status dbk_recipe_parse_size_phases(const char *text, dbk_recipe *r);

/* The size schedule as text, "0:128,11:224,26:288" ("" without phases). */
void dbk_recipe_format_size_phases(const dbk_recipe *r, char *out, size_t cap);

/* Lookahead decay after run_step of run_steps training steps: base * (run_step / run_steps)^power
 * (airbench94's alpha_schedule[step] with base 0.95^5, power 3); 1 when run_steps is 0. */
float dbk_recipe_lookahead_decay(float base, float power, long run_step, long run_steps);

#endif
