/*
 * test_results.c — the run's files without training (about 0.1 s):
 *   - targets compare in hundredths as logs.tsv prints them (90.3 reaches 90.3);
 *   - dawnbench.json is a DAWNBench entry ("version": "v1.0") only for a conforming run, and
 *     says why not otherwise; costPerHour is absent without a price; the same rule for the
 *     inference entry (94.00% on the whole test set);
 *   - logs.tsv of a subset run starts with its marker line, a full run's is DAWNBench's format;
 *   - result.json's fixed_schedule (airbench's metric): the whole schedule's accuracy and
 *     clock when it completed, nulls and the reason when the run stopped at its target;
 *   - the UTF-8 helper (core/utf8.h) and JSON written with invalid bytes in its strings.
 *
 * usage: test_results
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "bench/infer.h"
#include "core/alloc.h"
#include "core/fileio.h"
#include "core/utf8.h"
#include "test_util.h"
#include "train/results.h"

static dbk_train_options opt;
static dbk_train_report *rep;
static char dir[4096];

/* A finished full CIFAR-10 run on the dawnbench clock whose epochs reach acc1 then acc2. */
static void conforming_run(double acc1, double acc2) {
    memset(&opt, 0, sizeof opt);
    const dbk_recipe *rc;
    if (dbk_recipe_find("cifar10-resnet9", &rc) == DBK_OK) opt.recipe = *rc;
    opt.clock = DBK_CLOCK_DAWNBENCH;
    memset(rep, 0, sizeof *rep);
    rep->status = DBK_RUN_REACHED;
    rep->train_images = rep->train_split_images = 50000;
    rep->test_images = rep->test_split_images = 10000;
    rep->epochs_run = 2;
    rep->epochs[0] = (dbk_epoch_record){.epoch = 1, .test_accuracy = acc1, .clock_seconds = 10.0};
    rep->epochs[1] = (dbk_epoch_record){.epoch = 2, .test_accuracy = acc2, .clock_seconds = 20.0};
    rep->epochs_to_target = 2;
    rep->seconds_to_target = 20.0;
    snprintf(rep->device.name, sizeof rep->device.name, "test device");
}

static cJSON *read_json(const char *path) {
    void *data;
    size_t n;
    if (dbk_file_read_all(path, &data, &n) != DBK_OK) return NULL;
    cJSON *root = dbk_utf8_valid(data, n) ? cJSON_Parse(data) : NULL;
    dbk_free(data);
    return root;
}

static int a_target_should_be_reached_by_an_equal_logged_accuracy(void) {
    /* The defect: 90.3 as a float is above 90.3 as the double 100 * 903 / 1000. */
    float target = 90.3f;
    double accuracy = 100.0 * 903 / 1000;
    DBK_CHECK((double)target > accuracy);
    DBK_CHECK(dbk_results_hundredths(target) == 9030);
    DBK_CHECK(dbk_results_hundredths(accuracy) == dbk_results_hundredths(target));
    DBK_CHECK(dbk_results_hundredths(100.0 * 9029 / 10000) < dbk_results_hundredths(target));
    /* As "%.2f" rounds: 100 * 1 / 800 = 0.125 prints as 0.12. */
    DBK_CHECK(dbk_results_hundredths(100.0 * 1 / 800) == 12);
    DBK_CHECK(dbk_results_hundredths(94.0f) == 9400 && dbk_results_hundredths(100.0) == 10000);
    DBK_CHECK(dbk_results_hundredths(0.0) == 0);
    return 0;
}

static int a_conforming_run_should_be_a_dawnbench_entry(void) {
    conforming_run(91.0, 100.0 * 9400 / 10000);
    dbk_conformance c;
    dbk_results_conformance(&opt, rep, &c);
    DBK_CHECK_MSG(c.conforms && c.reason_count == 0, "94.00%% on the full sets: %s", c.reasons[0]);
    char path[4200];
    snprintf(path, sizeof path, "%s/dawnbench.json", dir);
    DBK_CHECK_OK(dbk_results_write_dawnbench_entry(path, &opt, rep, "2026-11-23T12:00:00Z"));
    cJSON *e = read_json(path);
    DBK_CHECK(e != NULL);
    const cJSON *version = cJSON_GetObjectItemCaseSensitive(e, "version");
    DBK_CHECK(cJSON_IsString(version) && !strcmp(version->valuestring, "v1.0"));
    DBK_CHECK(cJSON_GetObjectItemCaseSensitive(e, "conforms") == NULL);
    DBK_CHECK_MSG(cJSON_GetObjectItemCaseSensitive(e, "costPerHour") == NULL, "costPerHour without a price");
    cJSON_Delete(e);
    rep->platform.price_per_hour = 3.06;
    DBK_CHECK_OK(dbk_results_write_dawnbench_entry(path, &opt, rep, "2026-11-23T12:00:00Z"));
    e = read_json(path);
    DBK_CHECK(e != NULL);
    DBK_CHECK(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(e, "costPerHour")) == 3.06);
    cJSON_Delete(e);
    return 0;
}

/* Each way of not conforming gives its own reason, and the file carries them, unversioned. */
static int a_nonconforming_run_should_say_why(void) {
    struct {
        const char *name, *reason;
    } cases[] = {
        {"below the threshold", "best test top-1 accuracy 93.99% is below DAWNBench's CIFAR-10 threshold 94.00%"},
        {"train subset", "trained on 25000 of the 50000 training images (--train-subset)"},
        {"test subset", "evaluated on 1000 of the 10000 test images (--test-subset)"},
        {"mlperf clock", "timed with the mlperf clock"},
    };
    for (int i = 0; i < 4; i++) {
        conforming_run(90.0, i == 0 ? 100.0 * 9399 / 10000 : 95.0);
        if (i == 1) rep->train_images = 25000;
        if (i == 2) rep->test_images = 1000;
        rep->subset = i == 1 || i == 2;
        if (i == 3) opt.clock = DBK_CLOCK_MLPERF;
        dbk_conformance c;
        dbk_results_conformance(&opt, rep, &c);
        DBK_CHECK_MSG(!c.conforms && c.reason_count == 1, "%s: conforms %d, %d reasons", cases[i].name, c.conforms,
                      c.reason_count);
        DBK_CHECK_MSG(strstr(c.reasons[0], cases[i].reason) != NULL, "%s: '%s'", cases[i].name, c.reasons[0]);
        char path[4200];
        snprintf(path, sizeof path, "%s/dawnbench.json", dir);
        DBK_CHECK_OK(dbk_results_write_dawnbench_entry(path, &opt, rep, "2026-11-23T12:00:00Z"));
        cJSON *e = read_json(path);
        DBK_CHECK(e != NULL);
        DBK_CHECK_MSG(cJSON_GetObjectItemCaseSensitive(e, "version") == NULL, "%s: labelled a DAWNBench entry",
                      cases[i].name);
        DBK_CHECK(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(e, "conforms")));
        const cJSON *reasons = cJSON_GetObjectItemCaseSensitive(e, "nonconforming_reasons");
        DBK_CHECK(cJSON_GetArraySize(reasons) == 1);
        DBK_CHECK(!strcmp(cJSON_GetArrayItem(reasons, 0)->valuestring, c.reasons[0]));
        cJSON_Delete(e);
    }
    return 0;
}

/* A CIFAR-10 inference result of accuracy on images of the 10,000 test images. */
static dbk_infer_result inference(int images, double accuracy) {
    dbk_infer_result r;
    memset(&r, 0, sizeof r);
    snprintf(r.model, sizeof r.model, "resnet9");
    snprintf(r.recipe, sizeof r.recipe, "cifar10-resnet9");
    snprintf(r.dataset, sizeof r.dataset, "cifar10");
    snprintf(r.device.name, sizeof r.device.name, "test device");
    r.backend = DBK_BACKEND_KIND_CPU;
    r.images = images;
    r.split_images = 10000;
    r.accuracy = accuracy;
    r.seconds = 1e-3 * images;
    r.latency_ms = 1.0;
    return r;
}

/* The inference entry follows the training entries' rule: "version" only for a model that
 * reaches 94.00% on the whole test set; otherwise the reasons, one per rule broken. */
static int an_inference_entry_should_conform_only_at_the_threshold_on_the_whole_test_set(void) {
    struct {
        int images;
        double accuracy;
        const char *reasons[2];
    } cases[] = {
        {10000, 100.0 * 9400 / 10000, {NULL, NULL}},
        {10000, 100.0 * 9399 / 10000, {"top-1 accuracy 93.99% is below DAWNBench's CIFAR-10 threshold 94.00%", NULL}},
        {200, 95.0, {"classified 200 of the 10000 test images (--test-subset)", NULL}},
        {200, 40.0, {"classified 200 of the 10000 test images", "top-1 accuracy 40.00% is below"}},
    };
    dbk_platform_info pl;
    memset(&pl, 0, sizeof pl);
    snprintf(pl.id, sizeof pl.id, "default");
    char path[4200];
    snprintf(path, sizeof path, "%s/dawnbench_inference.json", dir);
    for (int i = 0; i < 4; i++) {
        dbk_infer_result r = inference(cases[i].images, cases[i].accuracy);
        int expected = (cases[i].reasons[0] != NULL) + (cases[i].reasons[1] != NULL);
        DBK_CHECK_OK(dbk_infer_write_entry(path, "model.ckpt", &r, &pl, NULL, NULL));
        cJSON *e = read_json(path);
        DBK_CHECK(e != NULL);
        const cJSON *version = cJSON_GetObjectItemCaseSensitive(e, "version");
        const cJSON *reasons = cJSON_GetObjectItemCaseSensitive(e, "nonconforming_reasons");
        bool ok = expected == 0 ? cJSON_IsString(version) && !strcmp(version->valuestring, "v1.0") && !reasons
                                : !version && cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(e, "conforms")) &&
                                      cJSON_GetArraySize(reasons) == expected;
        for (int k = 0; ok && k < expected; k++)
            ok = strstr(cJSON_GetArrayItem(reasons, k)->valuestring, cases[i].reasons[k]) != NULL;
        char *text = cJSON_PrintUnformatted(e);
        cJSON_Delete(e);
        DBK_CHECK_MSG(ok, "case %d (%d images, %.2f%%): %s", i, cases[i].images, cases[i].accuracy, text);
        free(text);
    }
    return 0;
}

static char *read_text(const char *path) {
    void *data;
    size_t n;
    return dbk_file_read_all(path, &data, &n) == DBK_OK ? data : NULL;
}

static int a_subset_log_should_start_with_its_marker(void) {
    char path[4200];
    snprintf(path, sizeof path, "%s/logs.tsv", dir);
    conforming_run(90.0, 94.5);
    DBK_CHECK_OK(dbk_results_write_logs_tsv(path, rep));
    char *text = read_text(path);
    DBK_CHECK(text != NULL);
    DBK_CHECK_MSG(!strcmp(text, "epoch\thours\ttop1Accuracy\n1\t0.00277778\t90.00\n2\t0.00555556\t94.50\n"),
                  "full run:\n%s", text);
    dbk_free(text);
    rep->train_images = 5000;
    rep->subset = true;
    DBK_CHECK_OK(dbk_results_write_logs_tsv(path, rep));
    text = read_text(path);
    DBK_CHECK(text != NULL);
    const char *marker = "# subset run: trained on 5000 of 50000 training images, evaluated on 10000 of 10000 test "
                         "images; not a DAWNBench result\nepoch\thours\ttop1Accuracy\n1\t";
    DBK_CHECK_MSG(!strncmp(text, marker, strlen(marker)), "subset run:\n%s", text);
    dbk_free(text);
    return 0;
}

/* A full ImageNet run of imagenet-resnet50 (top-5 target) whose epochs reach top-5 t1 then t2. */
static void imagenet_run(double t1, double t2) {
    conforming_run(70.0, 76.0);
    const dbk_recipe *rc;
    if (dbk_recipe_find("imagenet-resnet50", &rc) == DBK_OK) opt.recipe = *rc;
    rep->train_images = rep->train_split_images = 1281167;
    rep->test_images = rep->test_split_images = 50000;
    rep->top5 = true;
    rep->epochs[0].test_top5 = t1;
    rep->epochs[1].test_top5 = t2;
}

static int imagenet_should_be_judged_on_top5_and_log_it(void) {
    imagenet_run(88.0, 100.0 * 46500 / 50000); /* 93.00% top-5, top-1 only 76% */
    DBK_CHECK(opt.recipe.target_top5 && dbk_results_hundredths(opt.recipe.target) == 9300);
    dbk_conformance c;
    dbk_results_conformance(&opt, rep, &c);
    DBK_CHECK_MSG(c.conforms, "93.00%% top-5 on the full ImageNet: %s", c.reasons[0]);
    imagenet_run(88.0, 100.0 * 46497 / 50000); /* 92.994%: logged as 92.99 */
    dbk_results_conformance(&opt, rep, &c);
    DBK_CHECK_MSG(!c.conforms && c.reason_count == 1, "%d reasons: %s", c.reason_count, c.reasons[0]);
    DBK_CHECK_MSG(strstr(c.reasons[0], "best test top-5 accuracy 92.99% is below DAWNBench's ImageNet threshold "
                                       "93.00%"), "%s", c.reasons[0]);
    /* a top-1 target on ImageNet is not DAWNBench's rule */
    imagenet_run(88.0, 95.0);
    opt.recipe.target_top5 = false;
    dbk_results_conformance(&opt, rep, &c);
    DBK_CHECK(!c.conforms && strstr(c.reasons[0], "the recipe's target is top-1; DAWNBench's ImageNet target is top-5"));

    /* logs.tsv: DAWNBench's ImageNet columns */
    imagenet_run(88.5, 93.25);
    char path[4200];
    snprintf(path, sizeof path, "%s/logs.tsv", dir);
    DBK_CHECK_OK(dbk_results_write_logs_tsv(path, rep));
    char *text = read_text(path);
    DBK_CHECK(text != NULL);
    DBK_CHECK_MSG(!strcmp(text, "epoch\thours\ttop1Accuracy\ttop5Accuracy\n1\t0.00277778\t70.00\t88.50\n"
                                "2\t0.00555556\t76.00\t93.25\n"), "imagenet run:\n%s", text);
    dbk_free(text);
    snprintf(path, sizeof path, "%s/dawnbench.json", dir);
    DBK_CHECK_OK(dbk_results_write_dawnbench_entry(path, &opt, rep, "2026-11-23T12:00:00Z"));
    cJSON *e = read_json(path);
    DBK_CHECK(e != NULL);
    DBK_CHECK(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "version")));
    const cJSON *misc = cJSON_GetObjectItemCaseSensitive(e, "misc");
    const cJSON *metric = cJSON_GetObjectItemCaseSensitive(misc, "targetMetric");
    DBK_CHECK(cJSON_IsString(metric) && !strcmp(metric->valuestring, "top5Accuracy"));
    cJSON_Delete(e);
    return 0;
}

static int utf8_helper_should_replace_invalid_bytes_and_cut_between_characters(void) {
    DBK_CHECK(dbk_utf8_char_length("a", 1) == 1);
    DBK_CHECK(dbk_utf8_char_length("\xC3\xA9", 2) == 2);         /* é */
    DBK_CHECK(dbk_utf8_char_length("\xE2\x82\xAC", 3) == 3);     /* € */
    DBK_CHECK(dbk_utf8_char_length("\xF0\x9F\x98\x80", 4) == 4); /* U+1F600 */
    DBK_CHECK(dbk_utf8_char_length("\xC3\xA9", 1) == 0);         /* cut short */
    DBK_CHECK(dbk_utf8_char_length("\x80", 1) == 0);             /* lone continuation */
    DBK_CHECK(dbk_utf8_char_length("\xC0\xAF", 2) == 0);         /* overlong '/' */
    DBK_CHECK(dbk_utf8_char_length("\xE0\x80\xAF", 3) == 0);     /* overlong */
    DBK_CHECK(dbk_utf8_char_length("\xED\xA0\x80", 3) == 0);     /* surrogate U+D800 */
    DBK_CHECK(dbk_utf8_char_length("\xF4\x90\x80\x80", 4) == 0); /* above U+10FFFF */
    DBK_CHECK(dbk_utf8_char_length("\xFF", 1) == 0);
    DBK_CHECK(dbk_utf8_valid("Zo\xC3\xAB \xE2\x82\xAC", 8) && !dbk_utf8_valid("a\xFF", 2));

    char out[16];
    DBK_CHECK(dbk_utf8_copy(out, sizeof out, "a\xFF" "b\xC3") == 8);
    DBK_CHECK(!strcmp(out, "a" DBK_UTF8_REPLACEMENT "b" DBK_UTF8_REPLACEMENT));
    /* "€€" needs 7 bytes with the terminator: 5 bytes of room keep one euro, never a part. */
    DBK_CHECK(dbk_utf8_copy(out, 5, "\xE2\x82\xAC\xE2\x82\xAC") == 3 && !strcmp(out, "\xE2\x82\xAC"));

    char cut[8];
    memcpy(cut, "ab\xE2\x82\xAC\xE2\x82", 7); /* what snprintf leaves of "ab€€" in 8 bytes */
    cut[7] = '\0';
    dbk_utf8_trim_partial(cut);
    DBK_CHECK_MSG(!strcmp(cut, "ab\xE2\x82\xAC"), "trimmed to '%s'", cut);
    snprintf(cut, sizeof cut, "abc\xC3");
    dbk_utf8_trim_partial(cut);
    DBK_CHECK(!strcmp(cut, "abc"));
    snprintf(cut, sizeof cut, "ab\xC3\xA9");
    dbk_utf8_trim_partial(cut);
    DBK_CHECK(!strcmp(cut, "ab\xC3\xA9"));

    dbk_strbuf sb;
    dbk_strbuf_init(&sb);
    dbk_utf8_append_sanitized(&sb, "x\xED\xA0\x80y", 5);
    bool same = !strcmp(dbk_strbuf_str(&sb), "x" DBK_UTF8_REPLACEMENT DBK_UTF8_REPLACEMENT DBK_UTF8_REPLACEMENT "y");
    dbk_strbuf_deinit(&sb);
    DBK_CHECK_MSG(same, "each byte of an invalid sequence becomes U+FFFD");
    return 0;
}

static int json_should_be_valid_utf8_whatever_its_strings_hold(void) {
    char path[4200];
    snprintf(path, sizeof path, "%s/hostile.json", dir);
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "author", "Zo\xC3\xAB \xFF\xFE\"</svg>\n");
    DBK_CHECK_OK(dbk_results_write_cjson(path, root));
    cJSON *back = read_json(path);
    DBK_CHECK_MSG(back != NULL, "%s is not valid UTF-8 JSON", path);
    const char *author = cJSON_GetObjectItemCaseSensitive(back, "author")->valuestring;
    bool same = !strcmp(author, "Zo\xC3\xAB " DBK_UTF8_REPLACEMENT DBK_UTF8_REPLACEMENT "\"</svg>\n");
    cJSON_Delete(back);
    DBK_CHECK_MSG(same, "author read back as '%s'", author);
    return 0;
}

/* airbench's metric next to DAWNBench's: a run that trained its whole schedule records the
 * accuracy and clock at its end; one that stopped at its target records nulls and says why. */
static int result_json_should_give_the_fixed_schedule_result_or_why_not(void) {
    char path[4200];
    snprintf(path, sizeof path, "%s/result.json", dir);
    for (int stopped = 0; stopped < 2; stopped++) {
        conforming_run(94.5, 95.0);
        rep->schedule = (dbk_schedule_result){.epochs = 24, .steps = 24 * 97};
        if (!stopped) {
            rep->epochs_run = 24;
            rep->epochs[23] = (dbk_epoch_record){.epoch = 24, .test_accuracy = 93.87, .clock_seconds = 345.5};
            rep->status = DBK_RUN_REACHED;
            rep->schedule.completed = true;
            rep->schedule.accuracy = 93.87;
            rep->schedule.seconds = 345.5;
        }
        DBK_CHECK_OK(dbk_results_write_json(path, &opt, rep, "2026-11-23T12:00:00Z"));
        cJSON *root = read_json(path);
        DBK_CHECK(root != NULL);
        const cJSON *fs = cJSON_GetObjectItemCaseSensitive(root, "fixed_schedule");
        DBK_CHECK_MSG(cJSON_IsObject(fs), "no fixed_schedule object");
        const cJSON *acc = cJSON_GetObjectItemCaseSensitive(fs, "test_accuracy");
        const cJSON *secs = cJSON_GetObjectItemCaseSensitive(fs, "seconds");
        const cJSON *note = cJSON_GetObjectItemCaseSensitive(fs, "note");
        DBK_CHECK(cJSON_GetObjectItemCaseSensitive(fs, "epochs")->valuedouble == 24);
        DBK_CHECK(cJSON_GetObjectItemCaseSensitive(fs, "steps")->valuedouble == 24 * 97);
        if (!stopped) {
            DBK_CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(fs, "completed")));
            DBK_CHECK_MSG(cJSON_IsNumber(acc) && acc->valuedouble == 93.87, "accuracy not the last epoch's");
            DBK_CHECK(cJSON_IsNumber(secs) && secs->valuedouble == 345.5);
            DBK_CHECK(cJSON_IsString(note) && note->valuestring[0] == '\0');
        } else {
            DBK_CHECK(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(fs, "completed")));
            DBK_CHECK_MSG(cJSON_IsNull(acc) && cJSON_IsNull(secs), "a stopped run has no fixed-schedule numbers");
            DBK_CHECK_MSG(cJSON_IsString(note) && strstr(note->valuestring, "stopped at its target after epoch 2 of 24") &&
                          strstr(note->valuestring, "--all-epochs"), "note '%s'", note ? note->valuestring : "");
        }
        cJSON_Delete(root);
    }
    return 0;
}

/* result.json holds what ran, exactly: the largest seed (2^53 - 1) as an exact integer (a seed
 * near 2^64 was stored rounded), the recipe's floats as their shortest decimals ("momentum":
 * 0.9, not 0.899999976158142), a command line of 5,000 characters whole (it was cut at
 * 2,047), and for a failed or diverged run the reason (none was recorded). */
static int result_json_should_record_seed_floats_command_and_reason_exactly(void) {
    conforming_run(90.0, 94.5);
    opt.seed = 9007199254740991ULL;
    char *command = malloc(5001);
    DBK_CHECK(command != NULL);
    memset(command, 'a', 5000);
    command[5000] = '\0';
    opt.command_line = command;
    rep->status = DBK_RUN_FAILED;
    snprintf(rep->end_reason, sizeof rep->end_reason, "cannot write x: No space left on device");
    char path[4200];
    snprintf(path, sizeof path, "%s/exact.json", dir);
    dbk_status st = dbk_results_write_json(path, &opt, rep, "2026-01-01T00:00:00Z");
    opt.command_line = NULL;
    DBK_CHECK_OK(st);
    char *text = read_text(path);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    DBK_CHECK(root != NULL);
    const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(root, "command");
    const bool whole = cJSON_IsString(cmd) && !strcmp(cmd->valuestring, command);
    const cJSON *reason = cJSON_GetObjectItemCaseSensitive(root, "reason");
    const bool has_reason = cJSON_IsString(reason) && strstr(reason->valuestring, "No space left");
    cJSON_Delete(root);
    free(command);
    const bool seed_exact = strstr(text, "\"seed\":\t9007199254740991,") != NULL;
    const bool momentum = strstr(text, "\"momentum\":\t0.9,") != NULL;
    const bool smoothing = strstr(text, "\"bn_momentum\":\t0.1,") != NULL;
    free(text);
    DBK_CHECK_MSG(seed_exact, "the seed is not written exactly");
    DBK_CHECK_MSG(momentum && smoothing, "the recipe's floats are not their shortest decimals");
    DBK_CHECK_MSG(whole, "the 5,000-character command line was not kept whole");
    DBK_CHECK_MSG(has_reason, "a failed run's result.json says no reason");
    return 0;
}

int main(void) {
    rep = calloc(1, sizeof *rep);
    const char *d = dbk_test_tmpdir("results");
    if (!rep || !d) return 1;
    snprintf(dir, sizeof dir, "%s", d);
    DBK_RUN(a_target_should_be_reached_by_an_equal_logged_accuracy);
    DBK_RUN(a_conforming_run_should_be_a_dawnbench_entry);
    DBK_RUN(a_nonconforming_run_should_say_why);
    DBK_RUN(a_subset_log_should_start_with_its_marker);
    DBK_RUN(an_inference_entry_should_conform_only_at_the_threshold_on_the_whole_test_set);
    DBK_RUN(imagenet_should_be_judged_on_top5_and_log_it);
    DBK_RUN(utf8_helper_should_replace_invalid_bytes_and_cut_between_characters);
    DBK_RUN(json_should_be_valid_utf8_whatever_its_strings_hold);
    DBK_RUN(result_json_should_give_the_fixed_schedule_result_or_why_not);
    DBK_RUN(result_json_should_record_seed_floats_command_and_reason_exactly);
    free(rep);
    return dbk_test_finish();
}
