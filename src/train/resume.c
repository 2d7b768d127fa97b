/*
 * resume.c — the resume checkpoint (see resume.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "train/resume.h"
#include "train/results.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>


static void resume_path(const char *dir, char *out, size_t cap) { snprintf(out, cap, "%s/%s", dir, DBK_RESUME_FILE); }

dbk_status dbk_resume_save(dbk_session *s, const char *dir, const dbk_train_options *opt, const dbk_train_report *rep,
                           const char *started_at, double clock, const dbk_resume_peers *peers) {
    cJSON *m = cJSON_CreateObject();
    if (!m) return DBK_ERR_OUT_OF_HOST_MEMORY;
    char seed[32];
    snprintf(seed, sizeof seed, "%" PRIu64, opt->seed);
    cJSON_AddNumberToObject(m, "resume", 1);
    cJSON_AddStringToObject(m, "daybreak_version", DBK_VERSION);
    cJSON_AddStringToObject(m, "started_at", started_at);
    if (opt->args) {
        cJSON *args = cJSON_AddArrayToObject(m, "arguments");
        for (int i = 0; i < opt->arg_count; i++) cJSON_AddItemToArray(args, cJSON_CreateString(opt->args[i]));
    } else cJSON_AddNullToObject(m, "arguments");
    cJSON_AddStringToObject(m, "backend", dbk_backend_kind_name(opt->backend));
    cJSON_AddNumberToObject(m, "device", opt->device);
    cJSON_AddStringToObject(m, "seed", seed);
    cJSON_AddNumberToObject(m, "epochs_done", rep->epochs_run);
    cJSON_AddNumberToObject(m, "clock_seconds", clock);
    cJSON_AddNumberToObject(m, "preprocess_seconds", rep->preprocess_seconds);
    cJSON_AddNumberToObject(m, "resumed", rep->resumed);
    cJSON_AddNumberToObject(m, "resume_seconds", rep->resume_seconds);
    cJSON_AddNumberToObject(m, "epochs_to_target", rep->epochs_to_target);
    cJSON_AddNumberToObject(m, "seconds_to_target", rep->seconds_to_target);
    cJSON_AddStringToObject(m, "dataset_fingerprint", rep->dataset_fingerprint);
    cJSON *eps = cJSON_AddArrayToObject(m, "epochs");
    for (int i = 0; i < rep->epochs_run; i++) cJSON_AddItemToArray(eps, dbk_results_epoch_json(&rep->epochs[i]));
    dbk_results_add_energy_state(m, rep);
    if (peers) cJSON_AddItemToObject(m, "distributed", cJSON_Parse(peers->meta_json));
    if (rep->mask.on) { /* the mask's counts so far (the mask itself is the tensor sparse_mask) */
        cJSON *o = cJSON_AddObjectToObject(m, "sparse_mask");
        cJSON_AddNumberToObject(o, "computations", rep->mask.computations);
        cJSON_AddNumberToObject(o, "seconds", rep->mask.seconds);
        cJSON_AddNumberToObject(o, "selection_bytes_broadcast", rep->mask.mask_bytes);
    }
    const dbk_loss_scaler *ls = dbk_session_loss_scaler(s);
    if (ls) {
        cJSON *o = cJSON_AddObjectToObject(m, "loss_scaler");
        cJSON_AddNumberToObject(o, "scale", ls->scale);
        cJSON_AddNumberToObject(o, "clean_steps", ls->clean_steps);
        cJSON_AddNumberToObject(o, "skipped_steps", (double)ls->skipped_steps);
        cJSON_AddNumberToObject(o, "growths", (double)ls->growths);
    }
    char *text = cJSON_PrintUnformatted(m);
    cJSON_Delete(m);
    if (!text) return DBK_ERR_OUT_OF_HOST_MEMORY;
    char path[4200];
    resume_path(dir, path, sizeof path);
    dbk_status st = dbk_session_save_state_extra(s, path, text, peers ? peers->residuals : NULL);
    cJSON_free(text);
    return st;
}

/* Field readers: each sets *bad to the first missing or mistyped field's name. */
static double number(const cJSON *o, const char *key, const char **bad) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsNumber(v)) return v->valuedouble;
    if (!*bad) *bad = key;
    return 0.0;
}

static void string(const cJSON *o, const char *key, char *out, size_t cap, const char **bad) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsString(v) && strlen(v->valuestring) < cap) snprintf(out, cap, "%s", v->valuestring);
    else if (!*bad) *bad = key;
}

static void read_epochs(const cJSON *eps, dbk_train_report *rep, const char **bad) {
    rep->epochs_run = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, eps) {
        if (rep->epochs_run == DBK_MAX_EPOCHS) break;
        dbk_epoch_record *r = &rep->epochs[rep->epochs_run++];
        r->epoch = (int)number(e, "epoch", bad);
        r->train_loss = number(e, "train_loss", bad);
        r->train_accuracy = number(e, "train_accuracy", bad);
        r->test_loss = number(e, "test_loss", bad);
        r->test_accuracy = number(e, "test_accuracy", bad);
        r->epoch_seconds = number(e, "epoch_seconds", bad);
        r->clock_seconds = number(e, "clock_seconds", bad);
        r->eval_seconds = number(e, "eval_seconds", bad);
        r->images_per_second = number(e, "images_per_second", bad);
        r->lr_end = (float)number(e, "lr_end", bad);
        r->test_top5 = number(e, "test_top5_accuracy", bad);
        r->loader_wait_seconds = number(e, "loader_wait_seconds", bad);
        r->decode_seconds = number(e, "decode_seconds", bad);
        r->eval_wait_seconds = number(e, "eval_wait_seconds", bad);
        const cJSON *flops = cJSON_GetObjectItemCaseSensitive(e, "flops"); /* absent before it existed */
        r->flops = cJSON_IsNumber(flops) ? flops->valuedouble : 0.0;
        const cJSON *joules = cJSON_GetObjectItemCaseSensitive(e, "clock_joules");   /* only when measured */
        r->clock_joules = cJSON_IsNumber(joules) ? joules->valuedouble : (double)NAN;
        if (r->epoch != rep->epochs_run && !*bad) *bad = "epochs (not numbered 1, 2, ...)";
    }
}

/* The header fields of the metadata; *bad names the first one missing. */
static void read_header(const cJSON *m, dbk_resume_header *h, const char **bad) {
    char seed[32] = "";
    if (number(m, "resume", bad) != 1 && !*bad) *bad = "resume (not 1)";
    string(m, "daybreak_version", h->daybreak_version, sizeof h->daybreak_version, bad);
    string(m, "started_at", h->started_at, sizeof h->started_at, bad);
    string(m, "backend", h->backend, sizeof h->backend, bad);
    string(m, "seed", seed, sizeof seed, bad);
    h->device = (int)number(m, "device", bad);
    h->epochs_done = (int)number(m, "epochs_done", bad);
    h->clock_seconds = number(m, "clock_seconds", bad);
    const cJSON *fp = cJSON_GetObjectItemCaseSensitive(m, "dataset_fingerprint");
    if (cJSON_IsString(fp)) snprintf(h->dataset_fingerprint, sizeof h->dataset_fingerprint, "%s", fp->valuestring);
    char *end = NULL;
    errno = 0;
    h->seed = strtoull(seed, &end, 10);
    if ((errno || !seed[0] || *end) && !*bad) *bad = "seed";
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(m, "arguments"), *a;
    if (cJSON_IsNull(args)) {
        h->argc = -1;
        return;
    }
    if (!cJSON_IsArray(args) || cJSON_GetArraySize(args) > DBK_RESUME_MAX_ARGS) {
        if (!*bad) *bad = "arguments";
        return;
    }
    cJSON_ArrayForEach(a, args) {
        if (!cJSON_IsString(a) || !(h->argv[h->argc] = strdup(a->valuestring))) {
            if (!*bad) *bad = "arguments";
            return;
        }
        h->argc++;
    }
}

/* "loss_scaler", when present: S a power of two in [1, 2^64] (what dbk_loss_scaler_step
 * keeps it to), the counts whole and not negative. */
static void read_loss_scaler(const cJSON *m, dbk_resume_header *h, const char **bad) {
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(m, "loss_scaler");
    if (!o) return;
    const char *inner = NULL;
    const double scale = number(o, "scale", &inner), clean = number(o, "clean_steps", &inner);
    const double skipped = number(o, "skipped_steps", &inner), growths = number(o, "growths", &inner);
    int exp2 = 0;
    const bool power_of_two = frexp(scale, &exp2) == 0.5 && exp2 >= 1 && exp2 <= 65;
    const bool counts = clean >= 0 && clean <= INT_MAX && clean == floor(clean) && skipped >= 0 &&
                        skipped == floor(skipped) && skipped <= LONG_MAX && growths >= 0 && growths == floor(growths) &&
                        growths <= LONG_MAX;
    if (inner || !power_of_two || !counts) {
        if (!*bad) *bad = "loss_scaler";
        return;
    }
    h->has_loss_scaler = true;
    h->loss_scaler = (dbk_loss_scaler){.scale = (float)scale, .clean_steps = (int)clean, .skipped_steps = (long)skipped,
                                       .growths = (long)growths};
}

static void read_totals(const cJSON *m, dbk_train_report *rep, const char **bad) {
    const cJSON *eps = cJSON_GetObjectItemCaseSensitive(m, "epochs");
    if (!cJSON_IsArray(eps)) {
        if (!*bad) *bad = "epochs";
        return;
    }
    read_epochs(eps, rep, bad);
    rep->preprocess_seconds = number(m, "preprocess_seconds", bad);
    rep->resumed = (int)number(m, "resumed", bad);
    rep->resume_seconds = number(m, "resume_seconds", bad);
    rep->epochs_to_target = (int)number(m, "epochs_to_target", bad);
    rep->seconds_to_target = number(m, "seconds_to_target", bad);
    const cJSON *mask = cJSON_GetObjectItemCaseSensitive(m, "sparse_mask");
    if (mask) { /* a run with a sparse mask: its computations so far */
        rep->mask.computations = (int)number(mask, "computations", bad);
        rep->mask.seconds = number(mask, "seconds", bad);
        rep->mask.mask_bytes = number(mask, "selection_bytes_broadcast", bad);
    }
    dbk_results_read_energy_state(m, rep);
}

dbk_status dbk_resume_read(const char *dir, dbk_resume_header *h, dbk_train_report *rep, dbk_checkpoint **ckpt) {
    memset(h, 0, sizeof *h);
    if (ckpt) *ckpt = NULL;
    char path[4200];
    resume_path(dir, path, sizeof path);
    if (access(path, F_OK) != 0)
        return dbk_set_error(DBK_ERR_NOT_FOUND, "%s has no %s: nothing to resume (the run finished, or never started)",
                             dir, DBK_RESUME_FILE);
    dbk_checkpoint *c;
    DBK_TRY(dbk_checkpoint_load(path, &c));
    cJSON *m = cJSON_Parse(dbk_checkpoint_meta(c));
    const char *bad = NULL;
    if (!cJSON_IsObject(m)) bad = "metadata (not a JSON object)";
    else {
        read_header(m, h, &bad);
        if (!bad) read_loss_scaler(m, h, &bad);
        if (rep && !bad) read_totals(m, rep, &bad);
        if (rep && !bad && rep->epochs_run != h->epochs_done) bad = "epochs (not epochs_done of them)";
    }
    cJSON_Delete(m);
    if (bad) {
        dbk_checkpoint_destroy(c);
        dbk_resume_header_deinit(h);
        return dbk_set_error(DBK_ERR_FORMAT, "%s: bad or missing field '%s' in the resume metadata", path, bad);
    }
    if (ckpt) *ckpt = c;
    else dbk_checkpoint_destroy(c);
    return DBK_OK;
}

void dbk_resume_header_deinit(dbk_resume_header *h) {
    for (int i = 0; i < h->argc; i++) free(h->argv[i]);
    h->argc = 0;
}

void dbk_resume_remove(const char *dir) {
    char path[4200];
    resume_path(dir, path, sizeof path);
    unlink(path);
}

dbk_status dbk_resume_read_record(const char *dir, dbk_run_record *out) {
    memset(out, 0, sizeof *out);
    snprintf(out->status, sizeof out->status, "none");
    out->train_images = out->test_images = -1;
    cJSON *root;
    dbk_status st = dbk_results_read_json(dir, &root);
    if (st == DBK_ERR_NOT_FOUND) return DBK_OK;
    if (st != DBK_OK) return st;
    out->present = true;
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(root, "status");
    const cJSON *recipe = cJSON_GetObjectItemCaseSensitive(root, "recipe");
    const cJSON *fields[] = {cJSON_GetObjectItemCaseSensitive(recipe, "name"),
                             cJSON_GetObjectItemCaseSensitive(root, "model"),
                             cJSON_GetObjectItemCaseSensitive(root, "dataset_fingerprint")};
    char *dst[] = {out->recipe, out->model, out->dataset_fingerprint};
    const size_t cap[] = {sizeof out->recipe, sizeof out->model, sizeof out->dataset_fingerprint};
    for (int i = 0; i < 3; i++)
        if (cJSON_IsString(fields[i])) snprintf(dst[i], cap[i], "%s", fields[i]->valuestring);
    const cJSON *train = cJSON_GetObjectItemCaseSensitive(root, "train_images");
    const cJSON *test = cJSON_GetObjectItemCaseSensitive(root, "test_images");
    if (cJSON_IsNumber(train)) out->train_images = train->valuedouble;
    if (cJSON_IsNumber(test)) out->test_images = test->valuedouble;
    const bool found = cJSON_IsString(status);
    if (found) snprintf(out->status, sizeof out->status, "%s", status->valuestring);
    cJSON_Delete(root);
    return found ? DBK_OK : dbk_set_error(DBK_ERR_FORMAT, "%s/result.json has no \"status\"", dir);
}
