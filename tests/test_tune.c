/*
 * test_tune.c — `daybreak tune` on PoCL with a tiny workload: the profile it writes, its cache,
 * a wrong candidate rejected, the tuned profile picked up by device name, and the usage errors.
 *
 * usage: test_tune <path to daybreak>
 *
 * The runs search only the algorithm per layer (--only opencl.conv_by_shape: im2col, winograd,
 * winograd4, direct; all candidates use the profile's kernel build, so nothing is compiled twice) on the quick
 * recipe's layers at batch 2, with DBK_CACHE_DIR in the test's own folder.
 * Cases:
 *  - the batch of the layers, from the workload's shapes alone (nothing measured): by default
 *    each recipe's own batch at most DBK_TUNE_BATCH_CAP, --batch overriding every recipe's, and
 *    both lowered to the largest batch that fits a device's max allocation (an error naming the
 *    recipe when one image does not fit);
 *  - a first run writes a profile: exit 0, both candidates "ok", the profile is the device's
 *    (id pocl-cpu, "tuned" names the device and backend), every Winograd-eligible layer of the
 *    quick model has a choice in opencl.conv_by_shape (an algorithm, or one per op where the
 *    ops' winners differ; conv_choice reads it back; the summary lists each op), and mem_bandwidth_gbs is a measurement
 *    (mem_bandwidth_source says so), and its "tuned" block records the batch per shape and per
 *    recipe (2, the --batch); a second run prints "nothing to tune", measures nothing
 *    and takes under 5 s, and writes the same choices;
 *  - the profile written to the default place is the one dbk_profile_for_device returns for
 *    the device (and a profile tuned for another device in that place is not);
 *  - --budget 0.001 (given after the default 120): the first candidate runs, the others are "not
 *    tried: budget", and the profile keeps the built-in per-layer choices (none is made from
 *    half the measurements);
 *  - DBK_TUNE_CORRUPT=2 corrupts the Winograd candidate's results: it is "rejected" with its
 *    NMSE, and the profile keeps the built-in per-layer choices;
 *  - --only keeps the starting profile's record of the other searches, each naming its run
 *    and the device it ran on (this one or another);
 *  - errors: unknown backend, --backend cpu, no --backend, --budget 0 and -5, --out in a
 *    missing folder or naming a folder, --only naming no search: exit 1 or 2 and one line
 *    naming the cause (a usage error, exit 2, adds the usual "run 'daybreak tune --help'").
 * Measured 2026-11-23 on the shared 2-core machine (load ~9): see tests/CMakeLists.txt.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "backend/backend.h"
#include "backend/conv_choice.h"
#include "bench/tune.h"
#include "bench/tune_space.h"
#include "core/alloc.h"
#include "core/fileio.h"
#include "core/profile.h"
#include "core/timer.h"
#include "test_util.h"
#include "train/recipe.h"

static const char *exe;
static char out[1 << 16];

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

static cJSON *read_json(const char *path) {
    void *text;
    size_t n;
    if (dbk_file_read_all(path, &text, &n) != DBK_OK) return NULL;
    cJSON *j = cJSON_ParseWithLength(text, n);
    dbk_free(text);
    return j;
}

/* `daybreak tune` of the tiny workload with DBK_CACHE_DIR=cache and extra environment/args. */
static int tune(const char *env, const char *cache, const char *args) {
    char cmd[16384];
    snprintf(cmd, sizeof cmd,
             "%s DBK_CACHE_DIR='%s' '%s' tune --backend opencl --only opencl.conv_by_shape --recipe quick --batch 2 "
             "--budget 120 %s",
             env, cache, exe, args);
    return dbk_test_run_command(cmd, out, sizeof out);
}

/* The quick model's 3x3 stride-1 layers, as opencl.conv_by_shape keys. */
static const char *const kQuickShapes[] = {"3x16x32x32", "16x32x32x32", "32x32x16x16", "32x64x16x16", "64x128x8x8",
                                           "128x128x4x4"};

static bool is_algorithm(const char *v) {
    return v && (!strcmp(v, "winograd") || !strcmp(v, "winograd4") || !strcmp(v, "im2col") || !strcmp(v, "direct"));
}

/* One layer's choice: an algorithm name, or {"fwd", "bwd_data", "bwd_filter"} of names that are
 * not all the same (one winner for all three is written as its name). */
static int layer_choice_should_be_valid(const cJSON *v, const char *shape) {
    if (cJSON_IsString(v)) {
        DBK_CHECK_MSG(is_algorithm(v->valuestring), "layer %s: \"%s\"", shape, v->valuestring);
        return 0;
    }
    DBK_CHECK_MSG(cJSON_IsObject(v) && cJSON_GetArraySize(v) >= 2, "no choice for layer %s", shape);
    const char *first = NULL;
    bool differ = false;
    for (const cJSON *m = v->child; m; m = m->next) {
        DBK_CHECK_MSG(is_algorithm(cJSON_GetStringValue(m)) && (!strcmp(m->string, "fwd") ||
                      !strcmp(m->string, "bwd_data") || !strcmp(m->string, "bwd_filter")),
                      "layer %s: op \"%s\"", shape, m->string);
        if (first && strcmp(first, m->valuestring)) differ = true;
        if (!first) first = m->valuestring;
    }
    DBK_CHECK_MSG(differ, "layer %s: one algorithm for every op, written as an object", shape);
    return 0;
}

static int profile_should_choose_every_layer(cJSON *p) {
    const cJSON *choice = cJSON_GetObjectItem(cJSON_GetObjectItem(p, "opencl"), "conv_by_shape");
    DBK_CHECK_MSG(cJSON_IsObject(choice), "the profile has no opencl.conv_by_shape");
    for (size_t i = 0; i < sizeof kQuickShapes / sizeof kQuickShapes[0]; i++) {
        if (layer_choice_should_be_valid(cJSON_GetObjectItem(choice, kQuickShapes[i]), kQuickShapes[i])) return 1;
        /* the summary printed each op's times and winner, and the layer's choice */
        char line[64];
        snprintf(line, sizeof line, "  %-16sfwd", kQuickShapes[i]);
        DBK_CHECK_MSG(strstr(out, line), "no per-op summary for %s:\n%s", kQuickShapes[i], out);
    }
    DBK_CHECK_MSG(strstr(out, "bwd_data ") && strstr(out, "bwd_filter ") && strstr(out, "chosen "),
                  "no per-op summary:\n%s", out);
    /* the backends read what tune wrote */
    char *text = cJSON_PrintUnformatted(p);
    dbk_profile *parsed = NULL;
    dbk_conv_choice conv;
    const dbk_status st = text ? dbk_profile_parse(text, strlen(text), "tuned", &parsed) : DBK_ERR_OUT_OF_HOST_MEMORY;
    const dbk_status read = st == DBK_OK ? dbk_conv_choice_read(parsed, "opencl", 0, &conv) : st;
    free(text);
    dbk_profile_destroy(parsed);
    DBK_CHECK_MSG(read == DBK_OK, "the written conv_by_shape does not read back: %s", dbk_last_error());
    DBK_CHECK_MSG(cJSON_GetArraySize(choice) == (int)(sizeof kQuickShapes / sizeof kQuickShapes[0]),
                  "%d choices, expected one per quick layer", cJSON_GetArraySize(choice));
    /* the batch each shape was measured at: --batch 2 */
    const cJSON *t = cJSON_GetObjectItem(p, "tuned"), *by = cJSON_GetObjectItem(t, "batch_by_shape");
    for (size_t i = 0; i < sizeof kQuickShapes / sizeof kQuickShapes[0]; i++) {
        const cJSON *b = cJSON_GetObjectItem(by, kQuickShapes[i]);
        DBK_CHECK_MSG(cJSON_GetArraySize(b) == 1 && cJSON_GetNumberValue(cJSON_GetArrayItem(b, 0)) == 2.0,
                      "tuned.batch_by_shape has no [2] for %s", kQuickShapes[i]);
    }
    DBK_CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(t, "batch")) == 2.0);
    const cJSON *rb = cJSON_GetArrayItem(cJSON_GetObjectItem(t, "recipes"), 0);
    DBK_CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(rb, "recipe")), "quick"));
    DBK_CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(rb, "trains_at")) == 256.0);
    DBK_CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(rb, "batch")) == 2.0);
    DBK_CHECK(strstr(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(p, "opencl"), "conv_comment")),
                     "tuned.batch_by_shape"));
    DBK_CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(p, "opencl"), "conv_algorithm")),
                      "winograd"));
    return 0;
}

/* A fresh folder for one case: its cache folder, its profile path and the --out argument. */
typedef struct case_paths {
    char cache[4200], path[4300], args[4400];
} case_paths;

static bool case_paths_init(case_paths *c, const char *name) {
    const char *dir = dbk_test_tmpdir(name);
    if (!dir) return false;
    snprintf(c->cache, sizeof c->cache, "%s/cache", dir);
    snprintf(c->path, sizeof c->path, "%s/profile.json", dir);
    snprintf(c->args, sizeof c->args, "--out '%s'", c->path);
    return true;
}

static int tune_should_write_a_checked_profile_and_cache_it(void) {
    case_paths c;
    DBK_CHECK(case_paths_init(&c, "tune-profile"));
    const char *cache = c.cache, *path = c.path, *args = c.args;
    int rc = tune("", cache, args);
    DBK_CHECK_MSG(rc == 0, "exit %d:\n%s", rc, out);
    DBK_CHECK_MSG(strstr(out, "[1] im2col") && strstr(out, "[2] winograd") && strstr(out, "[3] winograd4") &&
                      strstr(out, "[4] direct"),
                  "candidates missing:\n%s", out);
    DBK_CHECK_MSG(!strstr(out, "rejected:"), "a correct candidate was rejected:\n%s", out);
    cJSON *p = read_json(path);
    DBK_CHECK_MSG(p != NULL, "%s is not JSON", path);
    DBK_CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(p, "id")), "pocl-cpu"));
    const cJSON *t = cJSON_GetObjectItem(p, "tuned");
    DBK_CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(t, "backend")), "opencl"));
    DBK_CHECK(strlen(cJSON_GetStringValue(cJSON_GetObjectItem(t, "device"))) > 0);
    if (profile_should_choose_every_layer(p)) return 1;
    DBK_CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(p, "mem_bandwidth_gbs")) > 0.0);
    DBK_CHECK(strstr(cJSON_GetStringValue(cJSON_GetObjectItem(p, "mem_bandwidth_source")), "measured by daybreak tune"));
    char *first = cJSON_PrintUnformatted(cJSON_GetObjectItem(cJSON_GetObjectItem(p, "opencl"), "conv_by_shape"));
    cJSON_Delete(p);

    const double t0 = dbk_time_now();
    rc = tune("", cache, args);
    const double wall = dbk_time_now() - t0;
    printf("  second run: %.2f s\n", wall);
    DBK_CHECK_MSG(rc == 0, "second run: exit %d:\n%s", rc, out);
    DBK_CHECK_MSG(strstr(out, "nothing to tune"), "second run tuned again:\n%s", out);
    DBK_CHECK_MSG(strstr(out, "0 measured now"), "second run measured:\n%s", out);
    DBK_CHECK_MSG(wall < 5.0, "second run took %.1f s", wall);
    p = read_json(path);
    char *second = cJSON_PrintUnformatted(cJSON_GetObjectItem(cJSON_GetObjectItem(p, "opencl"), "conv_by_shape"));
    DBK_CHECK_MSG(first && second && !strcmp(first, second), "the cached run chose differently: %s vs %s", first,
                  second);
    free(first);
    free(second);
    cJSON_Delete(p);
    return 0;
}

static int tuned_profile_should_be_found_by_device_name(void) {
    const char *dir = dbk_test_tmpdir("tune-default");
    DBK_CHECK(dir != NULL);
    char cache[4200];
    snprintf(cache, sizeof cache, "%s/cache", dir);
    int rc = tune("", cache, "");
    DBK_CHECK_MSG(rc == 0, "exit %d:\n%s", rc, out);
    setenv("DBK_CACHE_DIR", cache, 1);
    dbk_device_info info;
    DBK_CHECK_OK(dbk_backend_device_info(DBK_BACKEND_KIND_OPENCL, 0, &info));
    char path[4400];
    dbk_profile_tuned_path("opencl", info.name, path, sizeof path);
    DBK_CHECK_MSG(strstr(out, path) != NULL, "the profile was not written to %s:\n%s", path, out);
    dbk_profile *p = NULL;
    DBK_CHECK_OK(dbk_profile_for_device("opencl", info.name, &p));
    DBK_CHECK(!strcmp(dbk_profile_string(p, "tuned.device", ""), info.name));
    DBK_CHECK(dbk_profile_has(p, "opencl.conv_by_shape"));
    dbk_profile_destroy(p);
    /* The same file claiming another device is not taken: the built-in profile is. */
    void *text;
    size_t n;
    DBK_CHECK_OK(dbk_file_read_all(path, &text, &n));
    cJSON *j = cJSON_ParseWithLength(text, n);
    dbk_free(text);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(j, "tuned"), "device", cJSON_CreateString("another device"));
    char *other = cJSON_Print(j);
    cJSON_Delete(j);
    DBK_CHECK_OK(dbk_file_write_atomic(path, other, strlen(other)));
    free(other);
    DBK_CHECK_OK(dbk_profile_for_device("opencl", info.name, &p));
    DBK_CHECK_MSG(strcmp(dbk_profile_string(p, "tuned.device", ""), "another device"),
                  "a profile tuned for another device was used");
    dbk_profile_destroy(p);
    unsetenv("DBK_CACHE_DIR");
    return 0;
}

/* The built-in PoCL profile's opencl.conv_by_shape as unformatted JSON ("null" when it has
 * none): what a run that makes no per-layer choice leaves in the profile it writes. */
static char *builtin_conv_by_shape(void) {
    dbk_device_info info;
    dbk_profile *p = NULL;
    if (dbk_backend_device_info(DBK_BACKEND_KIND_OPENCL, 0, &info) != DBK_OK ||
        dbk_profile_builtin_for_device("opencl", info.name, &p) != DBK_OK)
        return NULL;
    char *text = dbk_profile_print(p);
    dbk_profile_destroy(p);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    free(text);
    char *choice = cJSON_PrintUnformatted(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "opencl"), "conv_by_shape"));
    cJSON_Delete(j);
    return choice ? choice : strdup("null");
}

/* The profile at path has the built-in profile's per-layer choices, unchanged. */
static int per_layer_choice_should_be_unchanged(const char *path) {
    cJSON *p = read_json(path);
    DBK_CHECK_MSG(p != NULL, "no profile written at %s", path);
    char *got = cJSON_PrintUnformatted(cJSON_GetObjectItem(cJSON_GetObjectItem(p, "opencl"), "conv_by_shape"));
    char *want = builtin_conv_by_shape();
    cJSON_Delete(p);
    const bool same = want && !strcmp(got ? got : "null", want);
    DBK_CHECK_MSG(same, "per-layer choices changed without both measurements: %s (built-in: %s)", got ? got : "null",
                  want ? want : "?");
    free(got);
    free(want);
    return 0;
}

/* --budget 0.001: the first candidate runs (its cost is unknown), the others do not fit,
 * whatever the machine's speed: timing the first alone takes longer than 1 ms (with a budget
 * of 1 s an idle machine tried both, and the test failed in a fresh-clone CI run). */
static int tiny_budget_should_leave_candidates_untried(void) {
    case_paths c;
    DBK_CHECK(case_paths_init(&c, "tune-budget"));
    char args[4500];
    snprintf(args, sizeof args, "%s --budget 0.001", c.args);
    const int rc = tune("", c.cache, args);
    DBK_CHECK_MSG(rc == 0, "exit %d:\n%s", rc, out);
    const char *line = strstr(out, "[2] winograd"), *line4 = strstr(out, "[3] winograd4");
    const char *line_direct = strstr(out, "[4] direct");
    DBK_CHECK_MSG(strstr(out, "[1] im2col") && line && strstr(line, "not tried: budget") && line4 &&
                      strstr(line4, "not tried: budget") && line_direct && strstr(line_direct, "not tried: budget"),
                  "budget not kept:\n%s", out);
    DBK_CHECK_MSG(strstr(out, "3 not tried for lack of budget"), "summary:\n%s", out);
    return per_layer_choice_should_be_unchanged(c.path);
}

static int corrupted_candidate_should_be_rejected(void) {
    case_paths c;
    DBK_CHECK(case_paths_init(&c, "tune-corrupt"));
    const int rc = tune("DBK_TUNE_CORRUPT=2", c.cache, c.args);
    DBK_CHECK_MSG(rc == 0, "exit %d:\n%s", rc, out);
    const char *line = strstr(out, "[2] winograd");
    DBK_CHECK_MSG(line && strstr(line, "rejected") && strstr(line, "NMSE"), "the corrupted candidate passed:\n%s", out);
    DBK_CHECK_MSG(strstr(out, "1 rejected"), "summary:\n%s", out);
    return per_layer_choice_should_be_unchanged(c.path);
}

/* A copy of platforms/ in dir/platforms whose pocl-cpu.json carries a "tuned" block naming
 * device with two searches: opencl.gemm_rb (not re-run by the test's --only) and
 * opencl.conv_by_shape (re-run). */
static int write_platforms_tuned_on(const char *dir, const char *device) {
    char cmd[8800], path[4400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s/platforms' && cp -r '%s/platforms' '%s/platforms'", dir,
             DBK_TEST_SOURCE_TREE, dir);
    DBK_CHECK_MSG(dbk_test_run_command(cmd, out, sizeof out) == 0, "%s:\n%s", cmd, out);
    snprintf(path, sizeof path, "%s/platforms/pocl-cpu.json", dir);
    cJSON *p = read_json(path);
    DBK_CHECK_MSG(p != NULL, "%s is not JSON", path);
    cJSON *t = cJSON_Parse("{\"backend\": \"opencl\", \"date\": \"2026-01-01 00:00 UTC\", \"command\": \"an earlier "
                           "run\", \"budget_s\": 900, \"batch\": 16, \"searches\": {\"opencl.gemm_rb\": {\"chosen\": "
                           "\"profile as is\"}, \"opencl.conv_by_shape\": {\"chosen\": \"per shape\"}}}");
    cJSON_AddStringToObject(t, "device", device);
    cJSON_DeleteItemFromObject(p, "tuned");
    cJSON_AddItemToObject(p, "tuned", t);
    char *text = cJSON_Print(p);
    cJSON_Delete(p);
    DBK_CHECK_OK(dbk_file_write_atomic(path, text, strlen(text)));
    free(text);
    return 0;
}

/* --only re-runs one search: the starting profile's record of another search stays, marked
 * with the run that made it (its device too: the values it chose stay in the profile, also
 * when they were tuned on another device). */
static int only_should_keep_the_other_searches_records(void) {
    const char *dir = dbk_test_tmpdir("tune-only-keeps");
    DBK_CHECK(dir != NULL);
    dbk_device_info info;
    DBK_CHECK_OK(dbk_backend_device_info(DBK_BACKEND_KIND_OPENCL, 0, &info));
    char cache[4300], path[4300], args[4400], env[4400];
    snprintf(cache, sizeof cache, "%s/cache", dir);
    snprintf(path, sizeof path, "%s/profile.json", dir);
    snprintf(args, sizeof args, "--out '%s'", path);
    snprintf(env, sizeof env, "DBK_PLATFORMS_DIR='%s/platforms'", dir);
    for (int other = 0; other < 2; other++) {
        if (write_platforms_tuned_on(dir, other ? "another device" : info.name)) return 1;
        const int rc = tune(env, cache, args);
        DBK_CHECK_MSG(rc == 0, "exit %d:\n%s", rc, out);
        cJSON *p = read_json(path);
        DBK_CHECK_MSG(p != NULL, "no profile written at %s", path);
        const cJSON *searches = cJSON_GetObjectItem(cJSON_GetObjectItem(p, "tuned"), "searches");
        const cJSON *cbs = cJSON_GetObjectItem(searches, "opencl.conv_by_shape");
        const cJSON *gemm = cJSON_GetObjectItem(searches, "opencl.gemm_rb");
        DBK_CHECK_MSG(cJSON_IsArray(cJSON_GetObjectItem(cbs, "candidates")) && !cJSON_GetObjectItem(cbs, "run"),
                      "the re-run search's record is not this run's");
        const cJSON *run = cJSON_GetObjectItem(gemm, "run");
        DBK_CHECK_MSG(gemm && !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(gemm, "chosen")), "profile as is"),
                      "the other search's record was dropped");
        DBK_CHECK_MSG(run && !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(run, "command")), "an earlier run") &&
                          cJSON_GetNumberValue(cJSON_GetObjectItem(run, "batch")) == 16.0 &&
                          !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(run, "date")), "2026-01-01 00:00 UTC") &&
                          !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(run, "device")),
                                  other ? "another device" : info.name),
                      "the kept record does not name its run");
        const char *said = other ? "kept opencl.gemm_rb as tuned on 2026-01-01 00:00 UTC on 'another device'"
                                 : "kept opencl.gemm_rb as tuned on 2026-01-01 00:00 UTC (";
        DBK_CHECK_MSG(strstr(out, said), "'%s' not said:\n%s", said, out);
        cJSON_Delete(p);
    }
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* the batch of each recipe's layers (shapes only: no measuring)                        */

/* Every convolution case of w has n images (src[0] is x or dy). */
static int every_conv_case_should_have_batch(const dbk_tune_workload *w, int n, const char *what) {
    int convs = 0;
    for (int i = 0; i < w->count; i++) {
        const dbk_op_desc *d = &w->cases[i].desc;
        if (d->op == DBK_OP_GEMM) continue;
        convs++;
        DBK_CHECK_MSG(d->src[0].shape[0] == n, "%s: %s has batch %lld, expected %d", what, w->cases[i].label,
                      (long long)d->src[0].shape[0], n);
    }
    DBK_CHECK_MSG(convs > 0, "%s: no convolutions", what);
    return 0;
}

static int default_batch_should_be_each_recipes_own_at_most_the_cap(void) {
    int recipes = 0;
    for (int i = 0; i < dbk_recipe_count(); i++) {
        const dbk_recipe *r = dbk_recipe_at(i);
        if (strcmp(r->dataset, "cifar10")) continue;
        recipes++;
        dbk_tune_workload w;
        DBK_CHECK_OK(dbk_tune_workload_shapes(r->name, 0, 0, &w));
        const int want = r->batch < DBK_TUNE_BATCH_CAP ? r->batch : DBK_TUNE_BATCH_CAP;
        DBK_CHECK(w.recipe_count == 1 && w.recipes[0].trains_at == r->batch && w.recipes[0].batch == want);
        const int rc = every_conv_case_should_have_batch(&w, want, r->name);
        dbk_tune_workload_deinit(&w);
        if (rc) return rc;
    }
    DBK_CHECK(recipes >= 2);
    /* every recipe at once: one entry each, each recipe's batch */
    dbk_tune_workload all;
    DBK_CHECK_OK(dbk_tune_workload_shapes(NULL, 0, 0, &all));
    DBK_CHECK_MSG(all.recipe_count == recipes, "%d recipe entries for %d CIFAR-10 recipes", all.recipe_count, recipes);
    dbk_tune_workload_deinit(&all);
    return 0;
}

static int batch_flag_should_override_every_recipes_batch(void) {
    dbk_tune_workload w;
    DBK_CHECK_OK(dbk_tune_workload_shapes(NULL, 7, 0, &w));
    for (int i = 0; i < w.recipe_count; i++)
        DBK_CHECK_MSG(w.recipes[i].batch == 7 && strstr(w.recipes[i].why, "--batch"), "%s: batch %d (%s)",
                      w.recipes[i].recipe, w.recipes[i].batch, w.recipes[i].why);
    const int rc = every_conv_case_should_have_batch(&w, 7, "--batch 7");
    dbk_tune_workload_deinit(&w);
    return rc;
}

/* ResNet9's largest tensor per image is its 128-channel 32x32 activation, 512 KiB: with a
 * 16 MiB max allocation the largest batch that fits is 32, whether the batch asked was the
 * recipe's or --batch's. */
static int batch_should_shrink_to_the_largest_that_fits_the_device(void) {
    const int asked[] = {0, 64};
    for (int i = 0; i < 2; i++) {
        dbk_tune_workload w;
        DBK_CHECK_OK(dbk_tune_workload_shapes("cifar10-resnet9", asked[i], (uint64_t)16 << 20, &w));
        DBK_CHECK_MSG(w.recipes[0].batch == 32 && strstr(w.recipes[0].why, "max allocation"),
                      "batch %d (%s), expected 32", w.recipes[0].batch, w.recipes[0].why);
        const int rc = every_conv_case_should_have_batch(&w, 32, "16 MiB max allocation");
        dbk_tune_workload_deinit(&w);
        if (rc) return rc;
    }
    /* one image that does not fit: an error naming the recipe */
    dbk_tune_workload w;
    DBK_CHECK(dbk_tune_workload_shapes("cifar10-resnet9", 0, 4096, &w) != DBK_OK);
    DBK_CHECK_MSG(strstr(dbk_last_error(), "cifar10-resnet9") && strstr(dbk_last_error(), "max allocation"), "%s",
                  dbk_last_error());
    return 0;
}

static int usage_errors_should_be_one_line(void) {
    const char *dir = dbk_test_tmpdir("tune-usage");
    DBK_CHECK(dir != NULL);
    char missing[4300], folder[4300];
    snprintf(missing, sizeof missing, "--backend opencl --out '%s/no/such/folder/p.json'", dir);
    snprintf(folder, sizeof folder, "--backend opencl --out '%s'", dir);
    const char *cases[][2] = {
        {"--backend nope", "nope"},         {"--backend cpu", "cpu"},       {"--budget 10", "--backend"},
        {"--backend opencl --budget 0", "--budget"}, {"--backend opencl --budget -5", "--budget"},
        {missing, "cannot write"},          {folder, "folder"},
        {"--backend opencl --only nope --out /dev/null", "no such search"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char args[4400];
        snprintf(args, sizeof args, "tune %s", cases[i][0]);
        const int rc = dbk_test_run_daybreak(exe, args, out, sizeof out);
        DBK_CHECK_MSG(rc == 1 || rc == 2, "daybreak %s: exit %d", args, rc);
        /* The cause on one line, "daybreak: error: ..." (a usage error names the --help to read). */
        DBK_CHECK_MSG(count_lines(out) == 1 && !strncmp(out, "daybreak: error: ", 17), "daybreak %s: %d lines:\n%s",
                      args, count_lines(out), out);
        const char *nl = strchr(out, '\n');
        DBK_CHECK_MSG(strstr(out, cases[i][1]) && strstr(out, cases[i][1]) < nl, "daybreak %s: '%s' not named:\n%s",
                      args, cases[i][1], out);
    }
    return 0;
}

/* The per-op choice from per-op times, no device: docs/measurements/opencl.md's 32x32x16x16 on PoCL
 * (im2col 128/75/110 ms, direct 66/92/141 per fwd/bwd_data/bwd_filter) picks direct for the
 * forward only; one winner everywhere is one name; an op not measured is left out. */
static int fastest_per_op_should_pick_each_ops_winner(void) {
    const double table[DBK_CONV_OPS][DBK_TUNE_MAX_CANDIDATES] = {{128, 66}, {75, 92}, {110, 141}};
    const bool all[DBK_CONV_OPS] = {true, true, true}, no_data[DBK_CONV_OPS] = {true, false, true};
    int best[DBK_CONV_OPS];
    DBK_CHECK(!dbk_tune_fastest_per_op(table, all, 2, best));
    DBK_CHECK(best[0] == 1 && best[1] == 0 && best[2] == 0);
    const double same[DBK_CONV_OPS][DBK_TUNE_MAX_CANDIDATES] = {{3, 2, 1}, {9, 9, 8}, {1, 1, 0.5}};
    DBK_CHECK(dbk_tune_fastest_per_op(same, all, 3, best) && best[0] == 2 && best[1] == 2 && best[2] == 2);
    const double mixed[DBK_CONV_OPS][DBK_TUNE_MAX_CANDIDATES] = {{2, 1}, {1, 2}, {3, 1}};
    DBK_CHECK(dbk_tune_fastest_per_op(mixed, no_data, 2, best) && best[0] == 1 && best[1] == -1 && best[2] == 1);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_tune <path to daybreak>\n");
        return 2;
    }
    exe = argv[1];
    dbk_backend_kind kind;
    int index;
    const int missing = dbk_test_resolve_backend("opencl", &kind, &index);
    if (missing) return missing;
    DBK_RUN(fastest_per_op_should_pick_each_ops_winner);
    DBK_RUN(default_batch_should_be_each_recipes_own_at_most_the_cap);
    DBK_RUN(batch_flag_should_override_every_recipes_batch);
    DBK_RUN(batch_should_shrink_to_the_largest_that_fits_the_device);
    DBK_RUN(usage_errors_should_be_one_line);
    DBK_RUN(tune_should_write_a_checked_profile_and_cache_it);
    DBK_RUN(tuned_profile_should_be_found_by_device_name);
    DBK_RUN(only_should_keep_the_other_searches_records);
    DBK_RUN(corrupted_candidate_should_be_rejected);
    DBK_RUN(tiny_budget_should_leave_candidates_untried);
    return dbk_test_finish();
}
