/*
 * test_step_costs.c — what a training step asks of the device (train/session.h
 * dbk_step_costs, backend.h's counters), on one backend: a CPU device hides these costs, a
 * GPU's 10-millisecond step does not (DESIGN.md decision 9).
 *
 *   test_step_costs <backend>     (cpu, opencl, vulkan, vulkan:1; DAYBREAK_DATA: CIFAR-10)
 *
 * Cases: the counters see a read and a sync as syncs and a step's small scalar write as none;
 * training steps of quick and airbench94 (its lookahead included), and quick's in fp16 where
 * the device has it, never make the host wait for the device (0 syncs: a step that gains a
 * read-back or a drain fails here); on a device
 * backend with the profile's workspace chunking off (conv_chunking "off", what a GPU profile
 * sets), airbench94's and ResNet9's steps launch the same kernels at two batches, so the count
 * holds at their recipes' batches too, and at most 400 of them (a GPU's 10 ms step); on Vulkan
 * with the device's own profile (lavapipe's keeps chunking on), the Winograd ops' launches at
 * the recipes' batches from the backend's chunk rule (vk_conv_plan.h: a step at batch 1024
 * takes minutes on lavapipe) plus the other ops' as measured at a small batch stay at most 400.
 * On OpenCL, with the device's own profile (PoCL's keeps chunking on), a real step of each
 * recipe at its own batch (seconds on PoCL) launches at most 400 kernels and never syncs; with
 * each NVIDIA datacenter profile's OpenCL choices, the same recipes' steps recorded on PoCL at
 * those batches (nothing runs) hold at most 400 launches.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "bench/throughput.h"
#include "bench/tune.h"
#include "core/profile.h"
#include "data/dataset.h"
#include "models/models.h"
#include "test_util.h"
#if DBK_TEST_HAVE_VULKAN
#include "backends/vulkan/vk_conv_plan.h"
#endif

#define GPU_STEP_LAUNCHES 400

static dbk_backend_kind kind;
static int device;
static dbk_dataset train, test;

static int load_data(void) {
    const dbk_dataset_kind *k;
    dbk_dataset_info info = {0};
    DBK_CHECK_OK(dbk_dataset_kind_find("cifar10", &k));
    DBK_CHECK_OK(dbk_dataset_open(k, dbk_test_cifar_dir(), &info));
    /* five batches of 4 (one warm-up step, four timed ones) and an evaluation batch */
    dbk_status st = dbk_dataset_load(&info, DBK_DATASET_SPLIT_TRAIN, 32, &train);
    if (st == DBK_OK) st = dbk_dataset_load(&info, DBK_DATASET_SPLIT_TEST, 16, &test);
    dbk_dataset_info_deinit(&info);
    DBK_CHECK_OK(st);
    return 0;
}

static int reads_and_syncs_should_count_and_small_writes_not(void) {
    dbk_backend *be;
    DBK_CHECK_OK(dbk_backend_create(kind, device, &be));
    dbk_buffer *b = NULL;
    dbk_status st = dbk_buffer_create(be, 4096, &b);
    float v[16] = {1.0f}, back[16];
    dbk_backend_counters c0, c1, c2;
    dbk_backend_get_counters(be, &c0);
    if (st == DBK_OK) st = dbk_buffer_write(b, 0, v, sizeof v);   /* a step's scalars: staged, no wait */
    dbk_backend_get_counters(be, &c1);
    if (st == DBK_OK) st = dbk_buffer_read(b, 0, back, sizeof back);
    if (st == DBK_OK) st = dbk_backend_sync(be);
    dbk_backend_get_counters(be, &c2);
    dbk_buffer_destroy(b);
    dbk_backend_destroy(be);
    DBK_CHECK_OK(st);
    DBK_CHECK_MSG(c1.syncs == c0.syncs, "a 64-byte write counted %llu syncs", (unsigned long long)(c1.syncs - c0.syncs));
    DBK_CHECK_MSG(c2.syncs - c1.syncs == 2, "a read and a sync counted %llu syncs",
                  (unsigned long long)(c2.syncs - c1.syncs));
    DBK_CHECK(c2.host_bytes - c0.host_bytes == 2 * sizeof v);
    DBK_CHECK(back[0] == 1.0f);
    return 0;
}

/* `warmup` steps and `steps` timed ones of the recipe at `batch` (bench/throughput.h), on the
 * device's own profile or, with profile, on that one. */
static int measure_with(const dbk_profile *profile, const char *recipe_name, int batch, bool fp16, int warmup, int steps,
                        dbk_step_costs *out) {
    const dbk_recipe *recipe;
    DBK_CHECK_OK(dbk_recipe_find(recipe_name, &recipe));
    dbk_backend *be;
    DBK_CHECK_OK(dbk_backend_create_with_profile(kind, device, profile, &be));
    dbk_throughput t;
    const dbk_status st = dbk_bench_throughput(be, recipe, batch, fp16, warmup, steps, &train, &test, &t);
    dbk_backend_destroy(be);
    DBK_CHECK_OK(st);
    *out = t.costs;
    char line[256];
    dbk_session_format_step_costs(out, line, sizeof line);
    printf("  %s %s batch %d%s: %s\n", recipe_name, fp16 ? "fp16" : "fp32", batch, profile ? " (chunking off)" : "",
           line);
    return 0;
}

/* One warm-up step and `steps` timed ones at batch 4, on the device's own profile. */
static int measure(const char *recipe_name, bool fp16, int steps, dbk_step_costs *out) {
    return measure_with(NULL, recipe_name, 4, fp16, 1, steps, out);
}

static int steps_should_not_wait_for_the_device(void) {
    /* airbench94's fifth step is followed by its lookahead */
    const char *recipes[] = {"quick", "airbench94"};
    const int steps[] = {2, 4};
    for (size_t i = 0; i < sizeof recipes / sizeof recipes[0]; i++) {
        dbk_step_costs c;
        if (measure(recipes[i], false, steps[i], &c)) return 1;
        DBK_CHECK(c.steps == steps[i]);
        DBK_CHECK_MSG(c.syncs == 0.0, "%s: %.2f syncs per step", recipes[i], c.syncs);
        DBK_CHECK(c.launches >= 10.0);
        DBK_CHECK_MSG(c.launches <= GPU_STEP_LAUNCHES, "%s: %.0f launches per step", recipes[i], c.launches);
        /* the launches read and write at least what the ops' tensors hold, minus the augment
         * op's dataset (counted by the rows it reads) */
        DBK_CHECK_MSG(c.device_bytes > 0.5 * c.min_bytes, "%s: %.0f bytes moved, %.0f the tensors'", recipes[i],
                      c.device_bytes, c.min_bytes);
        DBK_CHECK(c.host_seconds >= 0.0 && c.host_bytes > 0.0);
    }
    return 0;
}

/* Mixed precision's loss scaling lives on the device (its flag once cost a read per step). */
static int fp16_steps_should_not_wait_for_the_device(void) {
    const dbk_device_info *info;
    dbk_backend *be;
    DBK_CHECK_OK(dbk_backend_create(kind, device, &be));
    info = dbk_backend_get_info(be);
    const bool has_fp16 = !info->fp16_missing[0];
    if (!has_fp16) printf("  fp16: this device lacks %s, nothing to measure\n", info->fp16_missing);
    dbk_backend_destroy(be);
    if (!has_fp16) return 0;
    dbk_step_costs c;
    if (measure("quick", true, 2, &c)) return 1;
    DBK_CHECK_MSG(c.syncs == 0.0, "quick fp16: %.2f syncs per step", c.syncs);
    return 0;
}

/* The device's profile with "<backend>.conv_chunking": "off" (via its JSON text). */
static int unchunked_profile(dbk_profile **out) {
    dbk_device_info info;
    DBK_CHECK_OK(dbk_backend_device_info(kind, device, &info));
    const char *section = dbk_backend_kind_name(kind);
    dbk_profile *base;
    DBK_CHECK_OK(dbk_profile_for_device(section, info.name, &base));
    char *text = dbk_profile_print(base);
    dbk_profile_destroy(base);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    free(text);
    DBK_CHECK(root);
    cJSON *sec = cJSON_GetObjectItemCaseSensitive(root, section);
    if (!sec) sec = cJSON_AddObjectToObject(root, section);
    cJSON_DeleteItemFromObjectCaseSensitive(sec, "conv_chunking");
    cJSON_AddStringToObject(sec, "conv_chunking", "off");
    char *changed = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    DBK_CHECK(changed);
    const dbk_status st = dbk_profile_parse(changed, strlen(changed), "test_step_costs", out);
    free(changed);
    DBK_CHECK_OK(st);
    return 0;
}

static int unchunked_launches_should_not_grow_with_the_batch(void) {
    dbk_profile *p;
    if (unchunked_profile(&p)) return 1;
    /* one step each, at small batches (ResNet9's at half of airbench94's: its step costs 2.5x) */
    const char *recipes[] = {"airbench94", "cifar10-resnet9"};
    const int batches[][2] = {{2, 4}, {1, 2}};
    int rc = 0;
    for (size_t i = 0; i < sizeof recipes / sizeof recipes[0] && rc == 0; i++) {
        dbk_step_costs small, larger;
        rc = measure_with(p, recipes[i], batches[i][0], false, 0, 1, &small);
        if (rc == 0) rc = measure_with(p, recipes[i], batches[i][1], false, 0, 1, &larger);
        if (rc) break;
        if (small.launches != larger.launches || larger.launches > GPU_STEP_LAUNCHES) {
            fprintf(stderr, "  FAIL: %s: %.0f launches per step at batch %d, %.0f at batch %d (at most %d, the same)\n",
                    recipes[i], small.launches, batches[i][0], larger.launches, batches[i][1], GPU_STEP_LAUNCHES);
            dbk_test_failed_checks++;
            rc = 1;
        }
    }
    dbk_profile_destroy(p);
    return rc;
}

#if DBK_TEST_HAVE_VULKAN
/* The Winograd dispatches of one step of recipe_name's layers at batch on be: each layer's
 * forward, backward-data (not the first layer's: its input needs no gradient) and
 * backward-filter. */
static int winograd_dispatches(dbk_backend *be, const char *recipe_name, int batch, int *out) {
    dbk_tune_workload w;
    DBK_CHECK_OK(dbk_tune_workload_shapes(recipe_name, batch, 0, &w));
    *out = 0;
    for (int i = 0; i < w.count; i++) {
        const dbk_tune_case *c = &w.cases[i];
        const int first_layer_data = i < 3 && c->desc.op == DBK_OP_CONV2D_BWD_DATA;
        *out += (c->layers - first_layer_data) * dbk_vk_conv_winograd_dispatches(be, &c->desc);
    }
    dbk_tune_workload_deinit(&w);
    return 0;
}

/* A step of airbench94 at batch 1024 and of ResNet9 at 512 on lavapipe takes minutes, so their
 * launches at those batches come from the Winograd chunk rule (the only launches that grow with
 * the batch there, but for the batch slices of tensors over one binding: a few) on top of the
 * other ops' measured at a small batch. */
static int own_profile_should_keep_recipe_batches_under_the_goal(void) {
    const char *recipes[] = {"airbench94", "cifar10-resnet9"};
    const int batches[] = {1024, 512}, small_batches[] = {4, 2};
    dbk_backend *be;
    DBK_CHECK_OK(dbk_backend_create(kind, device, &be));
    int rc = 0;
    for (size_t i = 0; i < sizeof recipes / sizeof recipes[0] && rc == 0; i++) {
        dbk_step_costs small;
        int wino_small = 0, wino_large = 0;
        rc = measure_with(NULL, recipes[i], small_batches[i], false, 0, 1, &small);
        if (rc == 0) rc = winograd_dispatches(be, recipes[i], small_batches[i], &wino_small);
        if (rc == 0) rc = winograd_dispatches(be, recipes[i], batches[i], &wino_large);
        if (rc) break;
        const double planned = small.launches - wino_small + wino_large;
        printf("  %s batch %d: %.0f launches per step planned (%d Winograd, %.0f other as at batch %d)\n", recipes[i],
               batches[i], planned, wino_large, small.launches - wino_small, small_batches[i]);
        DBK_CHECK(wino_small > 0 && wino_small <= small.launches);
        DBK_CHECK_MSG(planned <= GPU_STEP_LAUNCHES, "%s at batch %d: %.0f launches per step planned", recipes[i],
                      batches[i], planned);
    }
    dbk_backend_destroy(be);
    return rc;
}
#endif

/* On OpenCL a step of airbench94 at batch 1024 and of ResNet9 at 512 takes seconds on PoCL, so
 * their launches at those batches are counted in a real step with the device's own profile
 * (its workspace chunks are sized in MiB: the chunk count grows with the batch). */
static int own_profile_should_launch_at_most_400_at_the_recipes_batches(void) {
    const char *recipes[] = {"airbench94", "cifar10-resnet9"};
    const int batches[] = {1024, 512};
    const dbk_dataset_kind *k;
    dbk_dataset_info info = {0};
    dbk_dataset big = {0};
    DBK_CHECK_OK(dbk_dataset_kind_find("cifar10", &k));
    DBK_CHECK_OK(dbk_dataset_open(k, dbk_test_cifar_dir(), &info));
    const dbk_status st = dbk_dataset_load(&info, DBK_DATASET_SPLIT_TRAIN, batches[0], &big);
    dbk_dataset_info_deinit(&info);
    DBK_CHECK_OK(st);
    int rc = 0;
    for (size_t i = 0; i < sizeof recipes / sizeof recipes[0] && rc == 0; i++) {
        const dbk_recipe *recipe;
        dbk_backend *be;
        dbk_throughput t;
        DBK_CHECK_OK(dbk_recipe_find(recipes[i], &recipe));
        DBK_CHECK_OK(dbk_backend_create(kind, device, &be));
        const dbk_status run = dbk_bench_throughput(be, recipe, batches[i], false, 0, 1, &big, &test, &t);
        dbk_backend_destroy(be);
        if (run != DBK_OK) {
            fprintf(stderr, "  FAIL: %s at batch %d: %s\n", recipes[i], batches[i], dbk_last_error());
            dbk_test_failed_checks++;
            rc = 1;
            break;
        }
        printf("  %s batch %d: %.0f launches, %.2f syncs per step\n", recipes[i], batches[i], t.costs.launches,
               t.costs.syncs);
        DBK_CHECK_MSG(t.costs.launches <= GPU_STEP_LAUNCHES, "%s at batch %d: %.0f launches per step", recipes[i],
                      batches[i], t.costs.launches);
        DBK_CHECK(t.costs.syncs == 0.0);
    }
    dbk_dataset_deinit(&big);
    return rc;
}

/* The kernels a training step of recipe_name at batch launches on be, as recorded (train and
 * update programs; nothing runs: a recording costs no CLBlast compile and no step). */
static int recorded_launches(dbk_backend *be, const char *recipe_name, int batch, long *out) {
    const dbk_recipe *recipe;
    const dbk_model_def *model;
    DBK_CHECK_OK(dbk_recipe_find(recipe_name, &recipe));
    DBK_CHECK_OK(dbk_model_find(recipe->model, &model));
    const dbk_session_config cfg = {.recipe = recipe, .model = model, .batch = batch, .eval_batch = 1,
                                    .input = {train.channels, train.height, train.width},
                                    .num_classes = train.num_classes, .train_count = batch, .test_count = 1};
    dbk_session *s;
    DBK_CHECK_OK(dbk_session_create(be, &cfg, &s));
    *out = 0;
    for (int i = 0; i < dbk_session_timed_op_count(s); i++) {
        dbk_op_times t;
        dbk_session_op_times(s, i, &t);
        *out += t.launches;
    }
    dbk_session_destroy(s);
    return 0;
}

/* The NVIDIA datacenter profiles' OpenCL choices (workspace chunking off, im2col + CLBlast), on
 * this device: airbench94 at batch 1024 and ResNet9 at 512 record at most 400 launches per step
 * (an H200 launched 686 per airbench94 step under default.json's 64 MiB im2col chunks).
 * The chunk rule reads only the profile and the device's max allocation (half of it caps a
 * chunk: PoCL's here, more than an H100's 20 GB would give for these batches' 1.5 GB). */
static int nvidia_profiles_should_record_at_most_400_launches(void) {
    const char *ids[] = {"nvidia-h200", "nvidia-h100", "nvidia-a100", "nvidia-v100", "nvidia-k80"};
    const char *recipes[] = {"airbench94", "cifar10-resnet9"};
    const int batches[] = {1024, 512};
    char *tested = NULL;   /* the last opencl section measured (its comment left out): shared ones run once */
    int rc = 0;
    for (size_t i = 0; i < sizeof ids / sizeof ids[0] && rc == 0; i++) {
        dbk_profile *p;
        DBK_CHECK_OK(dbk_profile_by_id(ids[i], &p));
        char *text = dbk_profile_print(p);
        cJSON *root = text ? cJSON_Parse(text) : NULL;
        free(text);
        cJSON *ocl = root ? cJSON_GetObjectItemCaseSensitive(root, "opencl") : NULL;
        cJSON_DeleteItemFromObjectCaseSensitive(ocl, "comment");
        char *section = ocl ? cJSON_PrintUnformatted(ocl) : NULL;
        cJSON_Delete(root);
        if (tested && section && !strcmp(tested, section)) {
            printf("  %s: the same opencl section\n", ids[i]);
            free(section);
            dbk_profile_destroy(p);
            continue;
        }
        free(tested);
        tested = section;
        dbk_backend *be = NULL;
        dbk_status st = dbk_backend_create_with_profile(kind, device, p, &be);
        for (size_t r = 0; r < sizeof recipes / sizeof recipes[0] && st == DBK_OK && rc == 0; r++) {
            long n = 0;
            rc = recorded_launches(be, recipes[r], batches[r], &n);
            if (rc) break;
            printf("  %s: %s batch %d: %ld launches per step\n", ids[i], recipes[r], batches[r], n);
            DBK_CHECK_MSG(n <= GPU_STEP_LAUNCHES, "%s: %s at batch %d: %ld launches per step", ids[i], recipes[r],
                          batches[r], n);
        }
        dbk_backend_destroy(be);
        dbk_profile_destroy(p);
        DBK_CHECK_OK(st);
    }
    free(tested);
    return rc;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_step_costs <backend>\n");
        return 2;
    }
    const int rc = dbk_test_resolve_backend(argv[1], &kind, &device);
    if (rc) return rc;
    if (!dbk_test_cifar_dir()) return dbk_test_skip_or_fail_in_ci(DBK_TEST_NO_CIFAR);
    if (load_data()) return dbk_test_finish();
    DBK_RUN(reads_and_syncs_should_count_and_small_writes_not);
    DBK_RUN(steps_should_not_wait_for_the_device);
    DBK_RUN(fp16_steps_should_not_wait_for_the_device);
    if (kind != DBK_BACKEND_KIND_CPU) DBK_RUN(unchunked_launches_should_not_grow_with_the_batch);
#if DBK_TEST_HAVE_VULKAN
    if (kind == DBK_BACKEND_KIND_VULKAN) DBK_RUN(own_profile_should_keep_recipe_batches_under_the_goal);
#endif
    if (kind == DBK_BACKEND_KIND_OPENCL) DBK_RUN(own_profile_should_launch_at_most_400_at_the_recipes_batches);
    if (kind == DBK_BACKEND_KIND_OPENCL) DBK_RUN(nvidia_profiles_should_record_at_most_400_launches);
    dbk_dataset_deinit(&train);
    dbk_dataset_deinit(&test);
    return dbk_test_finish();
}
