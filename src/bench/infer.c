/* infer.c — inference latency and the DAWNBench inference entry (see infer.h). */
#define _POSIX_C_SOURCE 200809L
#include "bench/infer.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "core/timer.h"
#include "data/loader.h"
#include "models/models.h"
#include "train/checkpoint.h"
#include "train/recipe.h"
#include "train/results.h"
#include "train/session.h"

static dbk_status checkpoint_names(const char *path, char *model, size_t mcap, char *recipe, size_t rcap) {
    dbk_checkpoint *c = NULL;
    DBK_TRY(dbk_checkpoint_load(path, &c));
    snprintf(model, mcap, "%s", dbk_checkpoint_model(c));
    cJSON *meta = cJSON_Parse(dbk_checkpoint_meta(c));
    const cJSON *rn = meta ? cJSON_GetObjectItemCaseSensitive(meta, "recipe") : NULL;
    snprintf(recipe, rcap, "%s", cJSON_IsString(rn) ? rn->valuestring : "");
    cJSON_Delete(meta);
    dbk_checkpoint_destroy(c);
    return DBK_OK;
}

dbk_status dbk_infer_checkpoint(const char *checkpoint, const dbk_recipe **recipe, const dbk_model_def **model) {
    char model_name[64], recipe_name[64];
    DBK_TRY(checkpoint_names(checkpoint, model_name, sizeof model_name, recipe_name, sizeof recipe_name));
    if (dbk_recipe_find(recipe_name, recipe) != DBK_OK || dbk_model_find(model_name, model) != DBK_OK) {
        char reason[900];
        snprintf(reason, sizeof reason, "%s", dbk_last_error());
        return dbk_set_error(DBK_ERR_FORMAT, "%s: %s", checkpoint, reason);
    }
    return DBK_OK;
}

dbk_status dbk_infer_evaluate(const dbk_infer_eval_config *cfg, dbk_infer_evaluation *out) {
    memset(out, 0, sizeof *out);
    DBK_TRY(dbk_infer_checkpoint(cfg->checkpoint, &out->recipe, &out->model));
    const dbk_recipe *recipe = out->recipe;
    dbk_dataset test;
    memset(&test, 0, sizeof test);
    dbk_split_files *test_files = NULL;
    dbk_loader *loader = NULL;
    dbk_backend *be = NULL;
    dbk_session *s = NULL;
    /* At the size the recipe trained on (a shallow copy: it shares data's class names). */
    dbk_dataset_info sized = *cfg->data;
    if (recipe->image_size > 0) dbk_dataset_set_image_size(&sized, recipe->image_size);
    /* An image folder streams through decode threads, as evaluation does in training (int32
     * labels: any number of classes). */
    out->streamed = sized.kind->residency == DBK_DATASET_STREAMED;
    dbk_status st = out->streamed
                        ? dbk_loader_open_eval(&sized, cfg->test_limit, cfg->batch, 0, &test_files, &test.count, &loader)
                        : dbk_dataset_load(&sized, DBK_DATASET_SPLIT_TEST, cfg->test_limit, &test);
    if (st == DBK_OK) st = dbk_backend_create(cfg->kind, cfg->index, &be);
    if (st == DBK_OK) {
        out->device = *dbk_backend_get_info(be);
        dbk_session_config sc = {.recipe = recipe, .model = out->model, .input = sized.shape,
                                 .num_classes = sized.num_classes, .batch = cfg->batch, .eval_batch = cfg->batch,
                                 .train_count = 0, .streamed_eval = out->streamed, .test_count = test.count};
        st = dbk_session_create(be, &sc, &s);
    }
    if (st == DBK_OK && loader) dbk_session_set_eval_loader(s, loader);
    /* no first-image compile in the latency */
    if (st == DBK_OK && cfg->latency) st = dbk_session_warm_up(s, &out->warmup_seconds);
    if (st == DBK_OK) st = dbk_session_upload_data(s, NULL, &test);
    if (st == DBK_OK) st = dbk_session_load(s, cfg->checkpoint);
    if (st == DBK_OK && cfg->diff) st = dbk_session_load_diff(s, cfg->checkpoint, cfg->diff);
    if (st == DBK_OK && cfg->latency) {
        st = dbk_backend_sync(be);
        dbk_session_set_eval_sync(s, true);
    }
    if (st == DBK_OK) {
        double t0 = dbk_time_now();
        st = dbk_session_evaluate(s, &out->plain);
        out->seconds = dbk_time_now() - t0;
    }
    if (st == DBK_OK) st = dbk_session_check_evaluation(&out->plain, cfg->checkpoint);
    out->evaluated = st == DBK_OK;
    if (st == DBK_OK && loader) {
        dbk_loader_stats ls;
        dbk_loader_get_stats(loader, &ls);
        out->loader_wait_seconds = ls.wait_seconds;
        out->seconds -= ls.wait_seconds;
    }
    /* A recipe judged with test-time augmentation (airbench94): the accuracy its runs record. */
    if (st == DBK_OK && cfg->tta && recipe->tta_level > 0) {
        st = dbk_session_evaluate_final(s, &out->tta);
        if (st == DBK_OK) st = dbk_session_check_evaluation(&out->tta, cfg->checkpoint);
        out->tta_done = st == DBK_OK;
    }
    dbk_session_destroy(s);
    dbk_backend_destroy(be);
    dbk_loader_destroy(loader);
    dbk_split_files_destroy(test_files);
    dbk_dataset_deinit(&test);
    return st;
}

dbk_status dbk_infer_run(dbk_backend_kind kind, int index, const char *checkpoint, const char *diff,
                         const dbk_dataset_info *data, int test_limit, dbk_infer_result *out) {
    memset(out, 0, sizeof *out);
    out->backend = kind;
    out->device_index = index;
    out->split_images = data->split_count[DBK_DATASET_SPLIT_TEST];
    const dbk_infer_eval_config cfg = {.kind = kind, .index = index, .checkpoint = checkpoint, .diff = diff,
                                       .data = data, .test_limit = test_limit, .batch = 1, .latency = true};
    dbk_infer_evaluation ev;
    const dbk_status st = dbk_infer_evaluate(&cfg, &ev);
    if (ev.recipe) {
        snprintf(out->model, sizeof out->model, "%s", ev.model->name);
        snprintf(out->recipe, sizeof out->recipe, "%s", ev.recipe->name);
        snprintf(out->dataset, sizeof out->dataset, "%s", ev.recipe->dataset);
    }
    out->device = ev.device;
    out->streamed = ev.streamed;
    out->warmup_seconds = ev.warmup_seconds;
    out->loader_wait_seconds = ev.loader_wait_seconds;
    out->seconds = ev.seconds;
    if (st != DBK_OK) return st;
    const dbk_epoch_counters *ec = &ev.plain;
    out->images = (int)ec->images;
    out->accuracy = 100.0 * ec->correct / (double)ec->images;
    out->latency_ms = 1000.0 * out->seconds / (double)ec->images;
    return DBK_OK;
}

void dbk_infer_conformance(const dbk_infer_result *r, dbk_conformance *c) {
    dbk_results_inference_conformance(r->dataset, r->images, r->split_images, r->accuracy, c);
}

bool dbk_infer_is_entry(const char *path) {
    const dbk_file_spec spec = {.what = "inference entry", .max_bytes = (size_t)1 << 20};
    void *text;
    size_t n;
    if (dbk_file_read_spec(path, &spec, &text, &n) != DBK_OK) return false;
    cJSON *root = cJSON_ParseWithLength(text, n);
    dbk_free(text);
    const cJSON *misc = cJSON_GetObjectItemCaseSensitive(root, "misc");
    const bool entry = cJSON_IsObject(root) && cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(root, "latency")) &&
                       cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(root, "top1Accuracy")) &&
                       cJSON_IsString(cJSON_GetObjectItemCaseSensitive(misc, "daybreakVersion"));
    cJSON_Delete(root);
    return entry;
}

dbk_status dbk_infer_write_entry(const char *path, const char *checkpoint, const dbk_infer_result *r,
                                 const dbk_platform_info *pl, const char *author, const char *author_email) {
    cJSON *root = cJSON_CreateObject();
    if (!root) return DBK_ERR_OUT_OF_HOST_MEMORY;
    char buf[1024];
    const char *backend = dbk_backend_kind_name(r->backend);
    dbk_conformance c;
    dbk_infer_conformance(r, &c);
    dbk_results_add_conformance(root, &c);
    cJSON_AddStringToObject(root, "author", author && *author ? author : "daybreak");
    cJSON_AddStringToObject(root, "authorEmail", author_email ? author_email : "");
    snprintf(buf, sizeof buf, "daybreak %s (%s backend)", DBK_VERSION, backend);
    cJSON_AddStringToObject(root, "framework", buf);
    snprintf(buf, sizeof buf, "%s (recipe %s)", r->model, r->recipe);
    cJSON_AddStringToObject(root, "model", buf);
    dbk_results_hardware_string(backend, &r->device, pl, buf, sizeof buf);
    cJSON_AddStringToObject(root, "hardware", buf);
    cJSON_AddNumberToObject(root, "latency", r->latency_ms);
    if (pl->price_per_hour > 0)
        cJSON_AddNumberToObject(root, "cost", r->latency_ms / 3600000.0 * pl->price_per_hour);
    else cJSON_AddNullToObject(root, "cost");
    cJSON_AddNumberToObject(root, "top1Accuracy", r->accuracy);
    time_t now = time(NULL);
    struct tm tmv;
    gmtime_r(&now, &tmv);
    strftime(buf, sizeof buf, "%Y-%m-%d", &tmv);
    cJSON_AddStringToObject(root, "timestamp", buf);
    cJSON *misc = cJSON_AddObjectToObject(root, "misc");
    cJSON_AddStringToObject(misc, "daybreakVersion", DBK_VERSION);
    cJSON_AddStringToObject(misc, "checkpoint", checkpoint);
    cJSON_AddStringToObject(misc, "backend", backend);
    cJSON_AddStringToObject(misc, "device", r->device.name);
    cJSON_AddStringToObject(misc, "driver", r->device.driver);
    cJSON_AddStringToObject(misc, "platform", pl->id);
    cJSON_AddNumberToObject(misc, "images", r->images);
    cJSON_AddNumberToObject(misc, "batch", 1);
    cJSON_AddNumberToObject(misc, "totalSeconds", r->seconds);
    if (r->streamed) cJSON_AddNumberToObject(misc, "loaderWaitSeconds", r->loader_wait_seconds);
    if (pl->price_per_hour > 0) cJSON_AddNumberToObject(misc, "costPerHour", pl->price_per_hour);
    return dbk_results_write_cjson(path, root);
}
