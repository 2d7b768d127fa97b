/*
 * test_recipe.c — the run length and learning-rate schedule of recipes (train/recipe.h):
 * fractional epoch budgets and knots placed as fractions of the run's steps, checked against
 * airbench94's get_lr arithmetic written out independently here.
 */
#include <math.h>

#include "test_util.h"
#include "train/recipe.h"

static dbk_recipe airbench_like(void) {
    dbk_recipe r = {.name = "t", .epochs = 10, .train_epochs = 9.9f, .lr_knots = 3, .lr_knots_in_run = true,
                    .lr_epochs = {0.0f, 0.23f, 1.0f}, .lr_values = {0.2f, 1.0f, 0.07f}};
    return r;
}

/* airbench94.py get_lr(step) for total_train_steps = total. */
static double airbench_get_lr(long step, long total) {
    long warmup = (long)(total * 0.23), warmdown = total - warmup;
    if (step < warmup) {
        double frac = (double)step / warmup;
        return 0.2 * (1 - frac) + 1.0 * frac;
    }
    double frac = (double)(step - warmup) / warmdown;
    return 1.0 * (1 - frac) + 0.07 * frac;
}

static int total_steps_should_round_a_fractional_budget_up(void) {
    dbk_recipe r = airbench_like();
    DBK_CHECK(dbk_recipe_total_steps(&r, 48) == 476); /* ceil(48 * 9.9) */
    r.train_epochs = 0.0f;
    r.epochs = 24;
    DBK_CHECK(dbk_recipe_total_steps(&r, 97) == 24 * 97);
    return 0;
}

static int lr_knots_in_run_should_follow_airbench_get_lr(void) {
    dbk_recipe r = airbench_like();
    const long total = 476;
    for (long step = 0; step <= total; step++) {
        double want = airbench_get_lr(step, total), got = dbk_recipe_lr_at_step(&r, step, 48, total);
        DBK_CHECK_MSG(fabs(got - want) < 1e-6, "step %ld: %.8f, airbench %.8f", step, got, want);
    }
    return 0;
}

static int lr_knots_in_epochs_should_match_the_epoch_schedule(void) {
    dbk_recipe r = {.name = "t", .epochs = 24, .lr_knots = 3, .lr_epochs = {0.0f, 5.0f, 24.0f},
                    .lr_values = {0.0f, 0.4f, 0.0f}};
    const int spe = 97;
    for (long step = 0; step < 24L * spe; step += 13) {
        float want = dbk_recipe_lr(&r, (double)(step / spe) + (double)(step % spe) / spe);
        DBK_CHECK(dbk_recipe_lr_at_step(&r, step, spe, 24L * spe) == want);
    }
    return 0;
}

int main(void) {
    DBK_RUN(total_steps_should_round_a_fractional_budget_up);
    DBK_RUN(lr_knots_in_run_should_follow_airbench_get_lr);
    DBK_RUN(lr_knots_in_epochs_should_match_the_epoch_schedule);
    return dbk_test_finish();
}
