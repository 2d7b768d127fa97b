/*
 * test_recipe.c — the run length and learning-rate schedule of recipes (train/recipe.h):
 * fractional epoch budgets and knots placed as fractions of the run's steps, checked against
 * airbench94's get_lr arithmetic written out independently here; progressive resizing's size
 * schedules (parsing, the phase of an epoch, imagenet-resnet50's) and the check that a model's
 * parameters do not depend on the image size; an epoch's order with several passes (the
 * alexnet study's two workers) and the steps a stopping group trains.
 */
#include <math.h>
#include <string.h>

#include "core/rng.h"
#include "models/models.h"
#include "test_util.h"
#include "train/epoch_order.h"
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

static int size_phases_should_parse_and_name_the_phase_of_each_epoch(void) {
    dbk_recipe r = {.name = "t", .image_size = 32};
    DBK_CHECK(dbk_recipe_size_phase_at(&r, 5) == -1 && dbk_recipe_image_size_at(&r, 5) == 32);
    DBK_CHECK_OK(dbk_recipe_parse_size_phases("0:128,14:224,29:288", &r));
    DBK_CHECK(r.size_phase_count == 3 && r.image_size == 288); /* eval and infer: the last size */
    const int expect[][2] = {{0, 128}, {13, 128}, {14, 224}, {28, 224}, {29, 288}, {100, 288}};
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++)
        DBK_CHECK_MSG(dbk_recipe_image_size_at(&r, expect[i][0]) == expect[i][1], "epoch %d: size %d, expected %d",
                      expect[i][0], dbk_recipe_image_size_at(&r, expect[i][0]), expect[i][1]);
    char text[64];
    dbk_recipe_format_size_phases(&r, text, sizeof text);
    DBK_CHECK_MSG(!strcmp(text, "0:128,14:224,29:288"), "formatted '%s'", text);
    static const char *const bad[][2] = {
        {"", "no phase"},
        {"1:128", "must start at epoch 0"},
        {"0:128,0:224", "not after the previous"},
        {"0:128,5:4", "not 8..1024"},
        {"0:128,5:2000", "not 8..1024"},
        {"0:128,", "ends with ','"},
        {"0-128", "not EPOCH:SIZE"},
        {"0:128,5:224,6:228,7:232,8:236,9:240,10:244,11:248,12:252", "more than 8 phases"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        DBK_CHECK_MSG(dbk_recipe_parse_size_phases(bad[i][0], &r) == DBK_ERR_INVALID_ARG, "'%s' accepted", bad[i][0]);
        DBK_CHECK_MSG(strstr(dbk_last_error(), bad[i][1]) != NULL, "'%s': %s", bad[i][0], dbk_last_error());
        DBK_CHECK(r.size_phase_count == 3); /* unchanged */
    }
    return 0;
}

/* imagenet18's one_machine phases (cybertronai/imagenet18_old train.py): 128 pixels, 224 from
 * epoch 13 (min_scale 0.087), 288 from epoch 25 (min_scale 0.5); the first phase takes the
 * loader's default 0.08. */
static int imagenet_resnet50_should_follow_the_fastai_sizes(void) {
    const dbk_recipe *r;
    DBK_CHECK_OK(dbk_recipe_find("imagenet-resnet50", &r));
    char text[64];
    dbk_recipe_format_size_phases(r, text, sizeof text);
    DBK_CHECK_MSG(!strcmp(text, "0:128,13:224,25:288"), "imagenet-resnet50 sizes '%s'", text);
    DBK_CHECK(r->epochs == 28 && r->image_size == 288);
    DBK_CHECK(r->size_phases[0].min_scale == 0.08f && r->size_phases[1].min_scale == 0.087f &&
              r->size_phases[2].min_scale == 0.5f);
    return 0;
}

/* --epochs moves the phases with the run: imagenet-resnet50 at 56 epochs changes size at 26 and
 * 50; at 2 epochs 13/28 and 25/28 of the run round to epochs 1 and 2 (int(x + 0.5)); at 1 epoch
 * to 0 and 1, so 224 replaces 128 at epoch 0. */
static int set_epochs_should_move_the_size_phases(void) {
    const dbk_recipe *r;
    DBK_CHECK_OK(dbk_recipe_find("imagenet-resnet50", &r));
    const int epochs[] = {56, 2, 1};
    const char *expect[] = {"0:128,26:224,50:288", "0:128,1:224,2:288", "0:224,1:288"};
    for (int i = 0; i < 3; i++) {
        dbk_recipe c = *r;
        dbk_recipe_set_epochs(&c, epochs[i]);
        char text[64];
        dbk_recipe_format_size_phases(&c, text, sizeof text);
        DBK_CHECK_MSG(!strcmp(text, expect[i]), "%d epochs: '%s', expected '%s'", epochs[i], text, expect[i]);
        DBK_CHECK(c.epochs == epochs[i] && c.lr_epochs[c.lr_knots - 1] == (float)epochs[i]);
    }
    return 0;
}

/* A ResNet's global average pool takes any size; AlexNet's flatten before its linear layers
 * does not, nor airbench94's fixed 3x3 pool (the same 1x1 output at 32 and 48 after its valid
 * 2x2 whitening convolution: 47, 23, 11, 5, 1; at 64 it is 2x2). */
static int models_with_size_dependent_parameters_should_be_refused(void) {
    const int sizes[] = {32, 48, 64};
    const char *ok[] = {"resnet18", "resnet50", "darknet-cifar"}, *refused[][3] = {
        {"alexnet-cifar", "classifier.1.weight", "32x32 and 48x48"}, {"airbench94", "linear.weight", "32x32 and 64x64"}};
    for (int i = 0; i < 3; i++) {
        const dbk_model_def *m;
        DBK_CHECK_OK(dbk_model_find(ok[i], &m));
        DBK_CHECK_OK(dbk_model_check_sizes(m, 3, sizes, 3, 10));
    }
    for (int i = 0; i < 2; i++) {
        const dbk_model_def *m;
        DBK_CHECK_OK(dbk_model_find(refused[i][0], &m));
        DBK_CHECK_MSG(dbk_model_check_sizes(m, 3, sizes, 3, 10) == DBK_ERR_INVALID_ARG, "%s accepted", refused[i][0]);
        printf("  %s: %s\n", refused[i][0], dbk_last_error());
        DBK_CHECK(strstr(dbk_last_error(), "cannot change image size") && strstr(dbk_last_error(), refused[i][1]) &&
                  strstr(dbk_last_error(), refused[i][2]));
    }
    return 0;
}

/* Two passes of 10 images in steps of 4 rows (2 per pass): 5 steps, every step's first two rows
 * from pass 0 and last two from pass 1, each pass a permutation whose first 10 rows are all 10
 * images; one pass keeps the session's earlier order; a batch that does not split is refused. */
static int epoch_order_should_put_each_pass_in_its_own_rows(void) {
    enum { N = 10, B = 4 };
    int32_t order[2 * N], scratch[N], one[N];
    DBK_CHECK(dbk_epoch_steps(N, 2, B) == 5 && dbk_epoch_steps(N, 1, B) == 2);
    DBK_CHECK_OK(dbk_epoch_order(N, 2, B, 7, 3, scratch, order));
    for (int p = 0; p < 2; p++) {
        int seen[N] = {0};
        for (int s = 0; s < 5; s++)
            for (int i = 0; i < 2; i++) {
                const int32_t j = order[s * B + p * 2 + i];
                DBK_CHECK_MSG(j >= 0 && j < N && !seen[j]++, "pass %d step %d row %d: image %d twice or out of range",
                              p, s, i, j);
            }
    }
    int differ = 0;
    for (int s = 0; s < 5; s++) differ += order[s * B] != order[s * B + 2];
    DBK_CHECK_MSG(differ > 0, "the two passes drew the same permutation");
    DBK_CHECK_OK(dbk_epoch_order(N, 1, B, 7, 3, scratch, one));
    dbk_rng rng;
    int32_t want[N];
    dbk_rng_init(&rng, 7 ^ ((uint64_t)(3 + 1) * 0x9e3779b97f4a7c15ULL));
    dbk_rng_permutation(&rng, want, N);
    DBK_CHECK_MSG(!memcmp(one, want, sizeof want), "one pass changed the session's permutation");
    DBK_CHECK(dbk_epoch_order(N, 3, B, 7, 3, scratch, order) == DBK_ERR_INVALID_ARG);
    return 0;
}

/* A group's last step: ceil(until * steps per epoch), whole products taken as they are (3 of
 * airbench94's 48-step epochs is 144) and float recipes' decimals as the source's (0.19 of 32
 * steps is ceil(6.08) = 7, cifar10-speedrun's whitening bias). */
static int until_step_should_be_the_sources_ceil(void) {
    const dbk_recipe_group three = {.name = "w", .until_epoch = 3.0f}, frac = {.name = "w", .until_epoch = 0.19f},
                           none = {.name = "w"};
    DBK_CHECK(dbk_recipe_group_until_step(&three, 48) == 144 && dbk_recipe_group_until_step(&three, 25) == 75);
    DBK_CHECK(dbk_recipe_group_until_step(&frac, 32) == 7 && dbk_recipe_group_until_step(&none, 32) == -1);
    return 0;
}

int main(void) {
    DBK_RUN(total_steps_should_round_a_fractional_budget_up);
    DBK_RUN(lr_knots_in_run_should_follow_airbench_get_lr);
    DBK_RUN(lr_knots_in_epochs_should_match_the_epoch_schedule);
    DBK_RUN(size_phases_should_parse_and_name_the_phase_of_each_epoch);
    DBK_RUN(imagenet_resnet50_should_follow_the_fastai_sizes);
    DBK_RUN(set_epochs_should_move_the_size_phases);
    DBK_RUN(models_with_size_dependent_parameters_should_be_refused);
    DBK_RUN(epoch_order_should_put_each_pass_in_its_own_rows);
    DBK_RUN(until_step_should_be_the_sources_ceil);
    return dbk_test_finish();
}
