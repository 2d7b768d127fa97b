/*
 * test_schedules.c — the corrected recipes' optimizer values, step for step, against their
 * sources: the golden fixture tests/data/golden_schedules.ckpt, written by tools/gen_schedules.py
 * from transcriptions of each source's scheduling code (its header names them). About 0.1 s.
 *
 * usage: test_schedules <fixture>
 *
 * For every step of a whole run of each case and every parameter group, what daybreak's
 * optimizer op receives (dbk_recipe_lr_at_step, dbk_recipe_group_step: the functions the
 * session's per-step rules call) must give the source's
 *   rate      lr times the loss's scale: the weight of one example's gradient in the step
 *             (AdamW: the lr itself),
 *   decay     the coupled weight decay per example, lr * wd / batch (AdamW: lr * wd),
 *   momentum  SGD's momentum or AdamW's beta1 (dbk_recipe_momentum_at_step),
 * within float32 rounding of the fixture (relative 2e-6 of the case's largest value; the
 * recipes hold their constants as floats). A group that has stopped must get exactly 0.
 * The cases pin what an audit of the recipes against their sources corrected: airbench94's
 * per-step rate at any --batch (its kilostep arithmetic, checked at 1024 and 128),
 * imagenet-resnet50's imagenet18 phases,
 * cifar10-wrn22's and cifar10-darknet's cycled learning rate and momentum, cifar10-wrn22-adamw's
 * cycled beta1 over fastai's phases, and cifar10-alexnet's two workers with plain SGD.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "test_util.h"
#include "train/checkpoint.h"
#include "train/recipe.h"

#define REL_TOL 2e-6
#define MOM_TOL 1e-6

static dbk_checkpoint *fixture;

typedef struct schedule_case {
    const char *recipe;
    int         batch, steps_per_epoch;
    const char *groups[3];
} schedule_case;

static const schedule_case cases[] = {
    {"airbench94", 1024, 48, {"", "norm_biases", "whiten_bias"}},
    {"airbench94", 128, 390, {"", "norm_biases", "whiten_bias"}},
    {"imagenet-resnet50", 256, 100, {"", "bn", NULL}},
    {"cifar10-wrn22", 1024, 48, {"", NULL, NULL}},
    {"cifar10-wrn22-adamw", 128, 390, {"", NULL, NULL}},
    {"cifar10-alexnet", 1024, 97, {"", NULL, NULL}},
    {"cifar10-darknet", 256, 195, {"", NULL, NULL}},
};

static const dbk_ckpt_tensor *find(const char *kind, const schedule_case *c, const char *group) {
    char key[160];
    if (group) snprintf(key, sizeof key, "%s/%s@%d/%s", kind, c->recipe, c->batch, group);
    else snprintf(key, sizeof key, "%s/%s@%d", kind, c->recipe, c->batch);
    return dbk_checkpoint_find(fixture, key);
}

static double peak_of(const dbk_ckpt_tensor *t) {
    double peak = 0.0;
    for (int64_t i = 0; i < t->shape[0]; i++) peak = fmax(peak, fabs((double)t->data[i]));
    return peak;
}

/* One case: every step's rate, decay and momentum. */
static int case_should_match(const schedule_case *c) {
    const dbk_recipe *found;
    DBK_CHECK_OK(dbk_recipe_find(c->recipe, &found));
    dbk_recipe r = *found;
    r.batch = c->batch;
    const int spe = c->steps_per_epoch;
    const long total = dbk_recipe_total_steps(&r, spe);
    const bool adamw = r.optimizer == DBK_OPTIMIZER_ADAMW;
    const dbk_ckpt_tensor *mom = find("momentum", c, NULL);
    DBK_CHECK_MSG(mom != NULL, "the fixture has no momentum/%s@%d", c->recipe, c->batch);
    DBK_CHECK_MSG(mom->shape[0] == total, "%s@%d: the source runs %lld steps, daybreak %ld", c->recipe, c->batch,
                  (long long)mom->shape[0], total);
    double worst_rate = 0.0, worst_decay = 0.0, worst_mom = 0.0;
    for (int gi = 0; gi < 3 && c->groups[gi]; gi++) {
        const char *group = c->groups[gi];
        const dbk_ckpt_tensor *rate = find("rate", c, group), *decay = find("decay", c, group);
        DBK_CHECK_MSG(rate && decay && rate->shape[0] == total && decay->shape[0] == total, "%s@%d group '%s' missing",
                      c->recipe, c->batch, group);
        const double rate_peak = peak_of(rate), decay_peak = fmax(peak_of(decay), 1e-30);
        const dbk_recipe_group rule = dbk_recipe_group_rule(&r, group);
        for (long s = 0; s < total; s++) {
            const double sched = dbk_recipe_lr_at_step(&r, s, spe, total);
            const dbk_group_step st = dbk_recipe_group_step(&r, &rule, c->batch, sched, s, spe);
            const double lr = st.lr, wd = st.weight_decay, scale = st.grad_scale;
            const double got_rate = adamw ? lr : lr * scale, got_decay = adamw ? lr * wd : lr * wd / c->batch;
            const double want_rate = rate->data[s], want_decay = decay->data[s];
            const double dr = fabs(got_rate - want_rate) / rate_peak, dd = fabs(got_decay - want_decay) / decay_peak;
            DBK_CHECK_MSG(dr < REL_TOL && (want_rate != 0.0 || got_rate == 0.0), "%s@%d group '%s' step %ld: rate %.9g, the "
                          "source %.9g", c->recipe, c->batch, group, s, got_rate, want_rate);
            DBK_CHECK_MSG(dd < REL_TOL && (want_decay != 0.0 || got_decay == 0.0), "%s@%d group '%s' step %ld: decay "
                          "%.9g, the source %.9g", c->recipe, c->batch, group, s, got_decay, want_decay);
            worst_rate = fmax(worst_rate, dr);
            worst_decay = fmax(worst_decay, dd);
        }
    }
    for (long s = 0; s < total; s++) {
        const double got = dbk_recipe_momentum_at_step(&r, s, spe, total), d = fabs(got - (double)mom->data[s]);
        DBK_CHECK_MSG(d < MOM_TOL, "%s@%d step %ld: momentum %.9g, the source %.9g", c->recipe, c->batch, s, got,
                      (double)mom->data[s]);
        worst_mom = fmax(worst_mom, d);
    }
    printf("  %s at batch %d: %ld steps (%d per epoch); worst rate %.2g, decay %.2g of the peak, momentum %.2g\n",
           c->recipe, c->batch, total, spe, worst_rate, worst_decay, worst_mom);
    return 0;
}

static int corrected_schedules_should_follow_their_sources(void) {
    int rc = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) rc |= case_should_match(&cases[i]);
    return rc;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_schedules <fixture>\n");
        return 2;
    }
    if (dbk_checkpoint_load(argv[1], &fixture) != DBK_OK) {
        fprintf(stderr, "FAIL: %s\n", dbk_last_error());
        return 1;
    }
    printf("golden schedules %s (%s)\n", argv[1], dbk_checkpoint_meta(fixture)[0] ? "tools/gen_schedules.py" : "?");
    DBK_RUN(corrected_schedules_should_follow_their_sources);
    dbk_checkpoint_destroy(fixture);
    return dbk_test_finish();
}
