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

#define DBK_RECIPE_MAX_KNOTS 8
#define DBK_RECIPE_MAX_PHASES 4
#define DBK_RECIPE_MAX_GROUPS 4
#define DBK_RECIPE_MAX_SIZE_PHASES 8

/* One phase of progressive resizing (fast.ai's DAWNBench ImageNet trick: small crops early,
 * full size late): from epoch first_epoch (0-based) on, streamed datasets are trained and
 * evaluated on size x size crops, with the same parameters, statistics and optimizer state. */
typedef struct dbk_size_phase {
    int   first_epoch;               /* 0-based; the first phase's is 0 */
    int   size;                      /* crop side in pixels, 8..1024 */
    float min_scale;                 /* > 0: this phase's random-resized-crop area minimum (else the
                                        recipe's min_scale) */
} dbk_size_phase;

/* How the optimizer treats one parameter group a model declares (nn/graph.h,
 * dbk_graph_set_group). Groups a recipe does not list train with scale 1 to the end. */
typedef struct dbk_recipe_group {
    const char *name;                /* the group's name in the model */
    float       lr_scale;            /* multiplies the schedule's learning rate */
    float       weight_decay_scale;  /* multiplies the recipe's weight decay */
    float       until_epoch;         /* > 0: the group trains for ceil(until_epoch * steps per
                                        epoch) steps, then its learning rate is 0 and, once the
                                        session switches to its step without them, its
                                        gradients are no longer computed (airbench's whitening
                                        bias: requires_grad off, or b.detach()) */
    bool        own_decay;           /* with until_epoch: the group's rate is lr_scale * (1 -
                                        step / until steps), its own linear decay, instead of
                                        the schedule's (airbench94_muon's whitening bias) */
    bool        muon;                /* the group trains with Muon (recipe.muon), not the recipe's
                                        optimizer: 4-D filters, each its own matrix */
} dbk_recipe_group;

/* The optimizer of a recipe's parameter updates. */
typedef enum dbk_optimizer {
    DBK_OPTIMIZER_SGD,               /* SGD with momentum (and nesterov), coupled weight decay */
    DBK_OPTIMIZER_ADAMW,             /* AdamW, decoupled weight decay (DBK_OP_ADAMW_UPDATE) */
} dbk_optimizer;

/* How the learning rate (and the momentum, or AdamW's beta1) move step by step. */
typedef enum dbk_schedule_kind {
    DBK_SCHEDULE_KNOTS,              /* piecewise linear over lr_knots; momentum constant */
    DBK_SCHEDULE_FASTAI_CLR_BETA,    /* fastai 0.7's CircularLR_beta over the whole run (clr) */
    DBK_SCHEDULE_FASTAI_PHASES,      /* fastai 0.7's fit_opt_sched TrainingPhases (phases) */
} dbk_schedule_kind;

/* fastai 0.7's use_clr_beta=(div, pct, mom_max, mom_min), cycle_len = the run, nb its steps,
 * cycle_nb = int(nb * (1 - pct/100) / 2): lr/div -> lr over cycle_nb steps, back over
 * cycle_nb, then to lr/div/100 over the rest; momentum mom_max -> mom_min -> mom_max over
 * the first two parts, then mom_max. As its callback does, step s gets the learning rate of
 * cycle position s and the momentum of position s + 1 (calc_mom runs after calc_lr has
 * advanced the position). */
typedef struct dbk_clr_schedule {
    float lr, div, pct, mom_max, mom_min;
} dbk_clr_schedule;

/* One fastai 0.7 TrainingPhase with DecayType.LINEAR learning rate and momentum (mom1 == mom0
 * for a constant one): epochs (fractional) of the run's steps per epoch. */
typedef struct dbk_fastai_phase {
    double epochs, lr0, lr1, mom0, mom1;   /* double: phase ends are epochs * steps, as Python's */
} dbk_fastai_phase;

/* Muon (KellerJordan/cifar10-airbench airbench94_muon.py, hiverge/cifar10-speedrun) for the
 * groups marked muon: per 4-D filter W (K, C, R, S) viewed as the matrix G (K, C*R*S):
 *   v = momentum * v + g;  u = nesterov ? g + momentum * v : v
 *   renormalise W *= sqrt(K) / (||W|| + renorm_eps)    (every renorm_every steps: 1 = each
 *                                                       step; 0 = speedrun's adaptive rule)
 *   X = u; (ns_target > 0: X *= target(t) / (||X|| + ns_pre_eps), target linear from
 *   ns_target to ns_target_end over the run); X /= ||X|| + ns_eps
 *   ns_steps times: A = X X^T; B = b A + c A A; X = a X + B X   (rows <= columns, else on X^T)
 *   W -= lr * X;  W *= 1 - lr * weight_decay * batch   (weight_decay 0: none)
 * lr is the schedule's rate times the group's lr_scale (never divided by the batch). */
typedef struct dbk_muon_params {
    float momentum;
    bool  nesterov;
    int   ns_steps;
    float ns_a, ns_b, ns_c, ns_eps;
    float ns_target, ns_target_end, ns_pre_eps;
    int   renorm_every;
    float renorm_eps;
    float weight_decay;              /* per example, times the batch (speedrun: 1.0418e-6) */
} dbk_muon_params;

/* Test-time augmentation that replaces only the least confident predictions (cifar10-speedrun):
 * after a plain pass over the test set, the int(fraction * N) images of lowest maximum softmax
 * probability get the mean logits of the tta_level views instead. fraction 0 = every image gets
 * the views (airbench). */
typedef struct dbk_tta_select {
    float fraction;
} dbk_tta_select;

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
    bool        lr_at_step_end;      /* knots in epochs: step s (0-based) of an epoch of n steps
                                        gets the rate at epoch + (s+1)/n, as schedulers that
                                        count the step before reading the rate (imagenet18's
                                        Scheduler, cifar10-fast's TorchOptimiser) */
    dbk_schedule_kind schedule;      /* DBK_SCHEDULE_KNOTS (zero) unless set */
    dbk_clr_schedule  clr;           /* DBK_SCHEDULE_FASTAI_CLR_BETA */
    int               phase_count;   /* DBK_SCHEDULE_FASTAI_PHASES */
    dbk_fastai_phase  phases[DBK_RECIPE_MAX_PHASES];
    bool        lr_per_step;         /* with loss_summed: lr is the rate per step of the summed loss,
                                        whatever the batch (airbench's lr / kilostep_scale), not a
                                        rate per example divided by the batch; weight decay stays
                                        per example (times the batch), as the source's wd */
    int         lr_reference_batch;  /* > 0: the rates are for this batch and scale linearly with the
                                        run's (Goyal et al.'s rule, the source's bs_scale) */
    int         passes_per_epoch;    /* > 1: an epoch is this many independent shuffles of the
                                        training set side by side, each row block of a step from
                                        its own (the study's workers, each reading the whole set);
                                        batch / passes rows per pass; 0 or 1: one pass */
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
    dbk_muon_params    muon;         /* the groups marked muon */
    dbk_bn_params      bn;
    dbk_augment_params augment;      /* train-time augmentation and normalisation */
    int         lookahead_every;     /* > 0: every this many steps, lookahead (airbench94's EMA): */
    float       lookahead_base;      /*   ema = lerp(ema, params, 1 - decay), params = ema, with */
    float       lookahead_power;     /*   decay = base * (step / total steps)^power; once more with
                                          decay 1 after the last step (params = ema) */
    int         tta_level;           /* test-time augmentation of the final evaluation: 0 none,
                                        1 mirror, 2 mirror and one-pixel translations, 3 the same
                                        six views weighted equally (cifar10-speedrun's mean) */
    dbk_tta_select tta_select;       /* fraction > 0: only the least confident images get TTA */
    int         eval_batch;          /* evaluation batch (0: the training batch, as before) */
    int         whiten_images;       /* DBK_PARAM_INIT_WHITEN: the first N training images (0:
                                        airbench94's 5000) */
    bool        whiten_ascending;    /* whitening filters in eigh's ascending order (airbench94_muon)
                                        rather than descending (airbench94's flip, speedrun's svd) */
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
 * and down-right (0.125 each); 3: the same six views weighted 1/6 each (cifar10-speedrun).
 * Returns the count; levels above 3 are 3. */
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
/* The momentum (SGD) or beta1 (AdamW) of global step `step` (0-based): the schedule's for
 * DBK_SCHEDULE_FASTAI_*, else the recipe's constant (momentum, or adam_beta1). */
float dbk_recipe_momentum_at_step(const dbk_recipe *r, long step, int steps_per_epoch, long total_steps);
/* Whether the momentum (or beta1) changes from step to step (the optimizer then reads it per step). */
bool  dbk_recipe_momentum_scheduled(const dbk_recipe *r);

/* The recipe's rule for a parameter group, or the defaults (scale 1, until the end, the
 * recipe's optimizer). */
dbk_recipe_group dbk_recipe_group_rule(const dbk_recipe *r, const char *group);
/* The steps a group with until_epoch trains: ceil(until_epoch * steps_per_epoch) (airbench's
 * ceil(3 * len(train_loader)); epoch 3 of 48-step epochs is step 144); -1 without until. */
long  dbk_recipe_group_until_step(const dbk_recipe_group *g, int steps_per_epoch);

/* What a parameter group's optimizer op gets at a step: the learning rate (the schedule's
 * schedule_lr times the group's scale; divided by the batch for a summed loss unless
 * lr_per_step or AdamW/Muon; 0 once the group stops, its own decay with own_decay), the weight
 * decay (SGD: coupled, times the batch for a summed loss; AdamW: decoupled) and the scale of
 * the loss gradient (1 for a summed loss, 1/batch for a mean). The products lr * grad_scale and
 * lr * weight_decay are what the source's optimizer applies per example and per step. */
typedef struct dbk_group_step {
    float lr, weight_decay, grad_scale;
} dbk_group_step;
dbk_group_step dbk_recipe_group_step(const dbk_recipe *r, const dbk_recipe_group *g, int batch, double schedule_lr,
                                     long run_step, int steps_per_epoch);

/* Muon: whether run step `step` (0-based) of total_steps renormalises the filters: every
 * renorm_every-th step, or with renorm_every 0 cifar10-speedrun's rule (its Muon.step: step_count
 * += 1; norm_freq = 2 + int(15 * step_count / total); renormalise when step_count - last >=
 * norm_freq, then last = step_count). */
bool  dbk_recipe_muon_renorm_at(const dbk_recipe *r, long step, long total_steps);
/* Muon: the Newton-Schulz input's target norm at run step `step` (speedrun: linear from
 * ns_target to ns_target_end in step_count / total, step_count = step + 1); 1 without a target. */
float dbk_recipe_muon_ns_target(const dbk_recipe *r, long step, long total_steps);

/* Learning rate at a fractional epoch (np.interp: clamped to the end knots). */
float dbk_recipe_lr(const dbk_recipe *r, double epoch);

/* The run's length in steps: ceil(steps_per_epoch * train_epochs) (train_epochs 0 = epochs). */
long dbk_recipe_total_steps(const dbk_recipe *r, int steps_per_epoch);

/* Learning rate of global step `step` (0-based) of a run of total_steps steps: piecewise
 * linear over the knots, placed in epochs (at the step's end with lr_at_step_end) or, with
 * lr_knots_in_run, at steps floor(fraction * total_steps) (airbench's int(total * 0.23)); or
 * the fastai schedule of the recipe (dbk_schedule_kind). */
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
