/* mlperf_log.c — mlperf.log in mllog's line format (see mlperf_log.h). */
#define _POSIX_C_SOURCE 200809L
#include "train/mlperf_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "core/alloc.h"
#include "core/utf8.h"
#include "train/results.h"

static const char *const event_names[] = {"INTERVAL_START", "INTERVAL_END", "POINT_IN_TIME"};

void dbk_mlperf_log_init(dbk_mlperf_log *log) { dbk_strbuf_init(&log->lines); }

void dbk_mlperf_log_deinit(dbk_mlperf_log *log) { dbk_strbuf_deinit(&log->lines); }

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One line; takes value and metadata (NULL metadata: {}). cJSON writes the JSON text, so
 * strings are escaped; the line is appended with invalid UTF-8 replaced. */
static void emit(dbk_mlperf_log *log, dbk_mlperf_event type, const char *key, cJSON *value, cJSON *metadata) {
    if (!metadata) metadata = cJSON_CreateObject();
    char *v = value ? cJSON_PrintUnformatted(value) : NULL;
    char *m = metadata ? cJSON_PrintUnformatted(metadata) : NULL;
    char head[256];
    snprintf(head, sizeof head, ":::MLLOG {\"namespace\": \"\", \"time_ms\": %lld, \"event_type\": \"%s\", \"key\": \"%s\", "
             "\"value\": ", now_ms(), event_names[type], key);
    dbk_strbuf_appendf(&log->lines, "%s", head);
    dbk_utf8_append_sanitized(&log->lines, v ? v : "null", strlen(v ? v : "null"));
    dbk_strbuf_appendf(&log->lines, ", \"metadata\": ");
    dbk_utf8_append_sanitized(&log->lines, m ? m : "{}", strlen(m ? m : "{}"));
    dbk_strbuf_appendf(&log->lines, "}\n");
    cJSON_free(v);
    cJSON_free(m);
    cJSON_Delete(value);
    cJSON_Delete(metadata);
}

static cJSON *epoch_metadata(int epoch_num) {
    cJSON *m = cJSON_CreateObject();
    if (epoch_num >= 1) cJSON_AddNumberToObject(m, "epoch_num", epoch_num);
    return m;
}

void dbk_mlperf_log_event(dbk_mlperf_log *log, dbk_mlperf_event type, const char *key, int epoch_num) {
    emit(log, type, key, NULL, epoch_metadata(epoch_num));
}

static void point_string(dbk_mlperf_log *log, const char *key, const char *value) {
    emit(log, DBK_MLPERF_POINT, key, cJSON_CreateString(value), NULL);
}

static void point_number(dbk_mlperf_log *log, const char *key, double value) {
    emit(log, DBK_MLPERF_POINT, key, cJSON_CreateNumber(value), NULL);
}

void dbk_mlperf_log_init_start(dbk_mlperf_log *log, const dbk_train_options *opt, const dbk_train_report *report) {
    const dbk_recipe *rc = &opt->recipe;
    emit(log, DBK_MLPERF_POINT, "cache_clear", cJSON_CreateTrue(), NULL);
    dbk_mlperf_log_event(log, DBK_MLPERF_START, "init_start", 0);
    /* Not an MLPerf benchmark: the dataset names it, and only the open division admits it. */
    point_string(log, "submission_benchmark", rc->dataset);
    point_string(log, "submission_org", opt->author && *opt->author ? opt->author : "daybreak");
    if (opt->author_email && *opt->author_email) point_string(log, "submission_poc_email", opt->author_email);
    point_string(log, "submission_division", "open");
    point_string(log, "submission_status", report->platform.instance[0] ? "cloud" : "onprem");
    char hardware[1024];
    dbk_results_hardware_string(dbk_backend_kind_name(opt->backend), &report->device, &report->platform, hardware,
                                sizeof hardware);
    point_string(log, "submission_platform", hardware);
    emit(log, DBK_MLPERF_POINT, "seed", dbk_results_u64_json(opt->seed), NULL);
    point_number(log, "global_batch_size", rc->batch);
    point_number(log, "gradient_accumulation_steps", 1);
    point_string(log, "opt_name", dbk_optimizer_name(rc->optimizer));
    float peak = 0.0f;
    for (int i = 0; i < rc->lr_knots; i++)
        if (rc->lr_values[i] > peak) peak = rc->lr_values[i];
    point_number(log, "opt_base_learning_rate", dbk_results_float_decimal(peak));
    point_number(log, "opt_weight_decay", dbk_results_float_decimal(rc->weight_decay));
    point_number(log, "train_samples", report->train_images);
    point_number(log, "eval_samples", report->test_images);
}

void dbk_mlperf_log_accuracy(dbk_mlperf_log *log, int epoch_num, double percent) {
    emit(log, DBK_MLPERF_POINT, "eval_accuracy", cJSON_CreateNumber(percent / 100.0), epoch_metadata(epoch_num));
}

void dbk_mlperf_log_run_stop(dbk_mlperf_log *log, bool reached) {
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "status", reached ? "success" : "aborted");
    emit(log, DBK_MLPERF_END, "run_stop", NULL, m);
}

#define MLLOG_PREFIX ":::MLLOG "

/* Whether a loaded line belongs to the run up to epochs_done (run_stop and later epochs do not). */
static bool keep_line(const cJSON *line, int epochs_done) {
    const cJSON *key = cJSON_GetObjectItemCaseSensitive(line, "key");
    if (cJSON_IsString(key) && !strcmp(key->valuestring, "run_stop")) return false;
    const cJSON *epoch = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(line, "metadata"), "epoch_num");
    return !cJSON_IsNumber(epoch) || epoch->valuedouble <= epochs_done;
}

dbk_status dbk_mlperf_log_load(dbk_mlperf_log *log, const char *path, int epochs_done) {
    const dbk_file_spec spec = {.what = "mlperf log", .max_bytes = DBK_FILE_READ_ALL_MAX};
    void *data;
    size_t n;
    dbk_status st = dbk_file_read_spec(path, &spec, &data, &n);
    if (st == DBK_ERR_NOT_FOUND) return DBK_OK;
    DBK_TRY(st);
    int number = 0;
    for (char *line = data; st == DBK_OK && *line; number++) {
        char *end = strchr(line, '\n');
        if (end) *end = '\0';
        cJSON *json = strncmp(line, MLLOG_PREFIX, strlen(MLLOG_PREFIX)) ? NULL : cJSON_Parse(line + strlen(MLLOG_PREFIX));
        if (!cJSON_IsObject(json))
            st = dbk_set_error(DBK_ERR_FORMAT, "mlperf log %s line %d: not an mllog line", path, number + 1);
        else if (keep_line(json, epochs_done))
            st = dbk_strbuf_appendf(&log->lines, "%s\n", line);
        cJSON_Delete(json);
        line = end ? end + 1 : line + strlen(line);
    }
    dbk_free(data);
    return st;
}

bool dbk_mlperf_log_is_empty(const dbk_mlperf_log *log) { return log->lines.len == 0; }

dbk_status dbk_mlperf_log_write(const dbk_mlperf_log *log, const char *path) {
    return dbk_strbuf_write_file(&log->lines, path);
}
