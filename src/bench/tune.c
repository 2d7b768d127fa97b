/*
 * tune.c — `daybreak tune` (tune.h): the searches of tune_space.c within a time budget, each
 * candidate checked against the CPU reference, the measurements cached, and the profile
 * written.
 *
 * Budget. What a candidate costs on a CPU OpenCL driver is mostly compiling: PoCL builds our
 * program in seconds and each kernel's code for its work-group size on first use, CLBlast's
 * in 6-50 s. So the budget is spent in wall-clock seconds, not candidates: every search gets
 * a share of what is left when it starts, in proportion to its number of candidates among
 * those of the searches still to run, and a candidate starts only when its
 * estimated cost (the most any candidate of this run has cost so far: creating the backend,
 * compiling, checking and timing every case) fits in what is left of that share. The first
 * candidate of a run has no estimate and always runs, so the budget can be exceeded by at most
 * that one candidate. Cached candidates cost nothing.
 *
 * Cache. <cache dir>/tune/<backend>-<device>.json holds every candidate's outcome keyed by the
 * search, the patch and the workload, under a fingerprint of the daybreak binary, the device
 * and its driver; a different fingerprint starts it afresh. A run whose candidates are all in
 * it measures nothing and says "nothing to tune".
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "backend/conv_choice.h"
#include "bench/tune.h"
#include "bench/tune_space.h"
#include "core/alloc.h"
#include "core/fileio.h"
#include "core/log.h"
#include "core/profile.h"
#include "core/timer.h"

/* ---------------------------------------------------------------------------------- */
/* JSON merge patch (RFC 7386)                                                          */

static void merge_patch(cJSON *target, const cJSON *patch) {
    const cJSON *m;
    cJSON_ArrayForEach(m, patch) {
        if (cJSON_IsNull(m)) {
            cJSON_DeleteItemFromObjectCaseSensitive(target, m->string);
            continue;
        }
        cJSON *t = cJSON_GetObjectItemCaseSensitive(target, m->string);
        if (cJSON_IsObject(m) && cJSON_IsObject(t)) {
            merge_patch(t, m);
            continue;
        }
        cJSON *copy = cJSON_Duplicate(m, true);
        if (cJSON_IsObject(copy)) {   /* a new object: nulls inside it remove nothing */
            cJSON *empty = cJSON_CreateObject();
            merge_patch(empty, copy);
            cJSON_Delete(copy);
            copy = empty;
        }
        if (t) cJSON_ReplaceItemInObjectCaseSensitive(target, m->string, copy);
        else cJSON_AddItemToObject(target, m->string, copy);
    }
}

/* base with patch applied, as a new tree; NULL when the patch is not JSON. */
static cJSON *patched(const cJSON *base, const char *patch) {
    cJSON *p = cJSON_Parse(patch), *out = cJSON_Duplicate(base, true);
    if (!p || !out) {
        cJSON_Delete(p);
        cJSON_Delete(out);
        return NULL;
    }
    merge_patch(out, p);
    cJSON_Delete(p);
    return out;
}

static dbk_status profile_of(const cJSON *tree, dbk_profile **out) {
    char *text = cJSON_PrintUnformatted(tree);
    if (!text) return dbk_set_error(DBK_ERR_OUT_OF_HOST_MEMORY, "out of host memory printing a candidate profile");
    dbk_status st = dbk_profile_parse(text, strlen(text), "candidate profile", out);
    cJSON_free(text);
    return st;
}

/* ---------------------------------------------------------------------------------- */
/* the run                                                                               */

typedef struct tune_run {
    const dbk_tune_options *o;
    dbk_tune_summary       *sum;
    dbk_device_info         info;
    dbk_tune_workload       w;
    cJSON                  *profile;     /* the device profile as the searches leave it */
    cJSON                  *cache;       /* {"fingerprint": "...", "entries": {...}} */
    cJSON                  *report;      /* the profile's "tuned.searches" */
    char                    cache_path[4200];
    char                    fingerprint[40];
    long                    corrupt;     /* DBK_TUNE_CORRUPT: candidate number to corrupt, 0 none */
    int                     numbered;    /* candidates numbered so far */
    double                  t0, estimate;
    bool                    bandwidth_measured;
} tune_run;

static void say(const tune_run *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void say(const tune_run *r, const char *fmt, ...) {
    if (!r->o->print) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(r->o->print, fmt, ap);
    va_end(ap);
    fflush(r->o->print);
}

static bool cache_usable(const tune_run *r) { return r->cache_path[0] && !r->corrupt; }

static void load_cache(tune_run *r) {
    r->cache = NULL;
    if (cache_usable(r)) {
        void *text;
        size_t n;
        if (dbk_file_read_all(r->cache_path, &text, &n) == DBK_OK) {
            r->cache = cJSON_ParseWithLength(text, n);
            dbk_free(text);
            const cJSON *fp = cJSON_GetObjectItemCaseSensitive(r->cache, "fingerprint");
            if (!cJSON_IsString(fp) || strcmp(fp->valuestring, r->fingerprint) ||
                !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(r->cache, "entries"))) {
                say(r, "cache %s is for another daybreak build, device or driver: starting afresh\n", r->cache_path);
                cJSON_Delete(r->cache);
                r->cache = NULL;
            }
        }
    }
    if (!r->cache) {
        r->cache = cJSON_CreateObject();
        cJSON_AddStringToObject(r->cache, "fingerprint", r->fingerprint);
        cJSON_AddItemToObject(r->cache, "entries", cJSON_CreateObject());
    }
    /* The costliest candidate of earlier runs (a cold compile) is the first estimate. */
    r->estimate = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(r->cache, "max_candidate_s"));
    if (!(r->estimate > 0)) r->estimate = 0.0;
}

static void save_cache(tune_run *r) {
    if (!cache_usable(r)) return;
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", r->cache_path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    char *text = cJSON_Print(r->cache);
    if (!text || dbk_mkdir_p(dir) != DBK_OK || dbk_file_write_atomic(r->cache_path, text, strlen(text)) != DBK_OK)
        dbk_log(DBK_LOG_LEVEL_WARN, "tune cache %s not written: %s", r->cache_path, dbk_last_error());
    cJSON_free(text);
}

static cJSON *cache_entries(tune_run *r) { return cJSON_GetObjectItemCaseSensitive(r->cache, "entries"); }

/* One candidate's outcome: ok with the seconds of each measured case (workload order; the
 * cases the search does not measure are 0), or the reason it was rejected. */
typedef struct outcome {
    bool   known, ok;
    double total;
    double *seconds;        /* (w.count) */
    char   why[256];
} outcome;

static void outcome_from_json(const cJSON *e, const tune_run *r, outcome *out) {
    out->known = true;
    out->ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "ok"));
    const cJSON *why = cJSON_GetObjectItemCaseSensitive(e, "why");
    snprintf(out->why, sizeof out->why, "%s", cJSON_IsString(why) ? why->valuestring : "");
    const cJSON *secs = cJSON_GetObjectItemCaseSensitive(e, "seconds");
    out->total = 0.0;
    for (int i = 0; i < r->w.count; i++) {
        const cJSON *v = cJSON_GetArrayItem(secs, i);
        out->seconds[i] = cJSON_IsNumber(v) ? v->valuedouble : 0.0;
        out->total += out->seconds[i];
    }
}

static cJSON *outcome_to_json(const outcome *o, int n) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddBoolToObject(e, "ok", o->ok);
    if (!o->ok) cJSON_AddStringToObject(e, "why", o->why);
    else cJSON_AddItemToObject(e, "seconds", cJSON_CreateDoubleArray(o->seconds, n));
    return e;
}

/* Creates a backend with the candidate profile and measures the search's cases on it. */
static void measure(tune_run *r, const dbk_tune_search *s, const cJSON *tree, bool corrupt, outcome *out) {
    out->known = true;
    out->ok = false;
    out->total = 0.0;
    memset(out->seconds, 0, sizeof *out->seconds * (size_t)r->w.count);
    dbk_profile *p = NULL;
    dbk_backend *be = NULL;
    dbk_status st = profile_of(tree, &p);
    if (st == DBK_OK) st = dbk_backend_create_with_profile(r->o->kind, r->o->index, p, &be);
    for (int i = 0; st == DBK_OK && i < r->w.count; i++) {
        if (!s->applies(&r->w.cases[i])) continue;
        st = dbk_tune_case_measure(be, &r->w.cases[i], corrupt, &out->seconds[i]);
        out->total += out->seconds[i];
    }
    if (st == DBK_OK) out->ok = true;
    else snprintf(out->why, sizeof out->why, "%s", dbk_last_error());
    dbk_backend_destroy(be);
    dbk_profile_destroy(p);
}

static void report_candidate(tune_run *r, cJSON *list, const char *label, const outcome *o, const char *state) {
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "candidate", label);
    if (o->known && o->ok) cJSON_AddNumberToObject(c, "ms", round(o->total * 1e5) / 100.0);
    cJSON_AddStringToObject(c, "result", state);
    cJSON_AddItemToArray(list, c);
    (void)r;
}

/* The fastest algorithm per layer shape and op from the candidates' per-case times; a
 * candidate's label is its algorithm's conv_by_shape value ("im2col", "winograd", "winograd4",
 * "direct"). A shape whose measured ops all pick one algorithm gets that name, the others an
 * object {"fwd", "bwd_data", "bwd_filter"} (backend/conv_choice.h). */
static cJSON *choose_shape(tune_run *r, const dbk_tune_search *s, const outcome *oc, const char *shape) {
    double t[DBK_CONV_OPS][DBK_TUNE_MAX_CANDIDATES] = {{0.0}};
    bool measured[DBK_CONV_OPS] = {false};
    for (int j = 0; j < r->w.count; j++) {
        const dbk_tune_case *c = &r->w.cases[j];
        const int op = dbk_conv_op_index(c->desc.op);
        if (op < 0 || !s->applies(c) || strcmp(c->shape_key, shape)) continue;
        measured[op] = true;
        for (int k = 0; k < s->count; k++) t[op][k] += oc[k].seconds[j];
    }
    int best[DBK_CONV_OPS], first = -1, whole = 0;
    const bool one = dbk_tune_fastest_per_op(t, measured, s->count, best);
    double per_op = 0.0, all[DBK_TUNE_MAX_CANDIDATES] = {0.0};
    for (int op = 0; op < DBK_CONV_OPS; op++) {
        if (!measured[op]) continue;
        char line[256] = "";
        for (int k = 0; k < s->count; k++) {
            all[k] += t[op][k];
            const size_t used = strlen(line);
            snprintf(line + used, sizeof line - used, "  %s %8.2f ms", s->labels[k], t[op][k] * 1e3);
        }
        say(r, "  %-16s%-11s%s  -> %s\n", first < 0 ? shape : "", dbk_conv_op_keys[op], line, s->labels[best[op]]);
        per_op += t[op][best[op]];
        if (first < 0) first = op;
    }
    for (int k = 0; k < s->count; k++)
        if (all[k] < all[whole]) whole = k;
    if (one) {
        say(r, "  %-16s%-11s%s for all three ops\n", "", "chosen", s->labels[best[first]]);
        return cJSON_CreateString(s->labels[best[first]]);
    }
    say(r, "  %-16s%-11sper op: %.2f ms, against %.2f ms with %s for all three\n", "", "chosen", per_op * 1e3,
        all[whole] * 1e3, s->labels[whole]);
    cJSON *ops = cJSON_CreateObject();
    for (int op = 0; op < DBK_CONV_OPS; op++)
        if (measured[op]) cJSON_AddStringToObject(ops, dbk_conv_op_keys[op], s->labels[best[op]]);
    return ops;
}

static void choose_per_shape(tune_run *r, const dbk_tune_search *s, outcome *oc, cJSON *rep) {
    for (int k = 0; k < s->count; k++)
        if (!oc[k].ok) {
            say(r, "  no choice: every algorithm must be measured and correct\n");
            return;
        }
    cJSON *choice = cJSON_CreateObject();
    for (int i = 0; i < r->w.count; i++) {
        const dbk_tune_case *c = &r->w.cases[i];
        if (!s->applies(c) || cJSON_GetObjectItemCaseSensitive(choice, c->shape_key)) continue;
        cJSON_AddItemToObject(choice, c->shape_key, choose_shape(r, s, oc, c->shape_key));
    }
    /* the search's name is "<section>.conv_by_shape" */
    char section[16];
    snprintf(section, sizeof section, "%.*s", (int)strcspn(s->name, "."), s->name);
    cJSON *sec = cJSON_GetObjectItemCaseSensitive(r->profile, section);
    if (!cJSON_IsObject(sec)) sec = cJSON_AddObjectToObject(r->profile, section);
    cJSON_DeleteItemFromObjectCaseSensitive(sec, "conv_algorithm");
    cJSON_AddStringToObject(sec, "conv_algorithm", "winograd");
    cJSON_DeleteItemFromObjectCaseSensitive(sec, "conv_by_shape");
    cJSON_AddItemToObject(sec, "conv_by_shape", cJSON_Duplicate(choice, true));
    /* a hand-written note on the replaced choices would now mislead */
    cJSON_DeleteItemFromObjectCaseSensitive(sec, "conv_comment");
    cJSON_AddStringToObject(sec, "conv_comment", "conv_by_shape: daybreak tune's choice per shape and op, measured at the "
                                                 "batches of tuned.batch_by_shape (docs/tuning.md)");
    cJSON_AddItemToObject(rep, "chosen", choice);
}

/* weight: this search's candidates; weight_left: those of this and the later searches. */
static void run_search(tune_run *r, const dbk_tune_search *sp, int weight, int weight_left) {
    const dbk_tune_search s = *sp;
    cJSON *rep = cJSON_AddObjectToObject(r->report, s.name);
    if (s.skip) {
        say(r, "%s: skipped: %s\n", s.name, s.skip);
        cJSON_AddStringToObject(rep, "skipped", s.skip);
        return;
    }
    int cases = 0;
    for (int i = 0; i < r->w.count; i++) cases += s.applies(&r->w.cases[i]);
    if (!cases) {
        say(r, "%s: skipped: no such layers in the workload\n", s.name);
        cJSON_AddStringToObject(rep, "skipped", "no such layers in the workload");
        return;
    }
    const double start = dbk_time_now();
    const double share = (r->o->budget_s - (start - r->t0)) * weight / (weight_left > 0 ? weight_left : 1);
    say(r, "%s: %d candidates on %d cases, %.0f s of the budget\n", s.name, s.count, cases, share > 0 ? share : 0.0);
    cJSON *list = cJSON_AddArrayToObject(rep, "candidates");
    outcome oc[DBK_TUNE_MAX_CANDIDATES];
    memset(oc, 0, sizeof oc);
    int best = -1;
    uint64_t hashes[DBK_TUNE_MAX_CANDIDATES];
    for (int i = 0; i < s.count; i++) {
        const int number = ++r->numbered;
        oc[i].seconds = dbk_calloc((size_t)r->w.count, sizeof(double));
        cJSON *tree = patched(r->profile, s.patches[i]);
        /* Keyed by the whole candidate profile, not the patch: the same patch on a profile the
         * earlier searches changed is another candidate. */
        char *text = tree ? cJSON_PrintUnformatted(tree) : NULL;
        hashes[i] = text ? dbk_fnv1a64(text, strlen(text)) : 0;
        cJSON_free(text);
        char key[160];
        snprintf(key, sizeof key, "%s|%016llx|%016llx", s.name, (unsigned long long)hashes[i],
                 (unsigned long long)r->w.hash);
        int same = -1;   /* an earlier candidate of this search with the same profile */
        for (int j = 0; j < i && same < 0; j++)
            if (hashes[j] == hashes[i]) same = j;
        const cJSON *hit = cache_usable(r) ? cJSON_GetObjectItemCaseSensitive(cache_entries(r), key) : NULL;
        const char *state;
        double cost = 0.0;
        if (!oc[i].seconds || !tree) {
            state = "failed: out of host memory";
        } else if (same >= 0) {
            state = "the same profile as an earlier candidate: not measured again";
        } else if (hit) {
            outcome_from_json(hit, r, &oc[i]);
            state = oc[i].ok ? "ok (cached)" : "rejected (cached)";
        } else if (number > 1 && dbk_time_now() - start + r->estimate > share) {
            state = "not tried: budget";
            r->sum->untried++;
        } else {
            const double t = dbk_time_now();
            measure(r, &s, tree, number == r->corrupt, &oc[i]);
            cost = dbk_time_now() - t;
            if (cost > r->estimate) {
                r->estimate = cost;
                cJSON_DeleteItemFromObjectCaseSensitive(r->cache, "max_candidate_s");
                cJSON_AddNumberToObject(r->cache, "max_candidate_s", cost);
            }
            r->sum->measured++;
            state = oc[i].ok ? "ok" : "rejected";
            if (cache_usable(r)) {
                cJSON_AddItemToObject(cache_entries(r), key, outcome_to_json(&oc[i], r->w.count));
                save_cache(r);
            }
        }
        if (oc[i].known) r->sum->candidates++;
        if (oc[i].known && !oc[i].ok) r->sum->rejected++;
        if (oc[i].known && oc[i].ok && cost > 0)
            say(r, "  [%d] %-44s %10.2f ms  %s (%.1f s to build, check and time)\n", number, s.labels[i],
                oc[i].total * 1e3, state, cost);
        else if (oc[i].known && oc[i].ok)
            say(r, "  [%d] %-44s %10.2f ms  %s\n", number, s.labels[i], oc[i].total * 1e3, state);
        else if (oc[i].known)
            say(r, "  [%d] %-44s %s: %s\n", number, s.labels[i], state, oc[i].why);
        else say(r, "  [%d] %-44s %s\n", number, s.labels[i], state);
        report_candidate(r, list, s.labels[i], &oc[i], state);
        if (oc[i].ok && (best < 0 || oc[i].total < oc[best].total)) best = i;
        cJSON_Delete(tree);
    }
    if (s.per_shape) {
        choose_per_shape(r, &s, oc, rep);
    } else if (best >= 0) {
        cJSON *next = patched(r->profile, s.patches[best]);
        if (next) {
            cJSON_Delete(r->profile);
            r->profile = next;
        }
        say(r, "  chosen: %s\n", s.labels[best]);
        cJSON_AddStringToObject(rep, "chosen", s.labels[best]);
    } else {
        say(r, "  no candidate measured: the profile keeps its values\n");
    }
    for (int i = 0; i < s.count; i++) dbk_free(oc[i].seconds);
}

static void bandwidth(tune_run *r) {
    char key[64];
    snprintf(key, sizeof key, "bandwidth");
    const cJSON *hit = cache_usable(r) ? cJSON_GetObjectItemCaseSensitive(cache_entries(r), key) : NULL;
    double copy = 0.0, add = 0.0;
    bool cached = false;
    if (hit) {
        copy = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(hit, "copy_gbs"));
        add = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(hit, "add_gbs"));
        cached = copy > 0 && add > 0;
    }
    if (!cached) {
        dbk_profile *p = NULL;
        dbk_backend *be = NULL;
        dbk_status st = profile_of(r->profile, &p);
        if (st == DBK_OK) st = dbk_backend_create_with_profile(r->o->kind, r->o->index, p, &be);
        if (st == DBK_OK) st = dbk_tune_bandwidth(be, &copy, &add);
        dbk_backend_destroy(be);
        dbk_profile_destroy(p);
        if (st != DBK_OK) {
            say(r, "memory bandwidth: not measured: %s\n", dbk_last_error());
            return;
        }
        r->bandwidth_measured = true;
        if (cache_usable(r)) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "copy_gbs", copy);
            cJSON_AddNumberToObject(e, "add_gbs", add);
            cJSON_AddItemToObject(cache_entries(r), key, e);
            save_cache(r);
        }
    }
    r->sum->copy_gbs = copy;
    r->sum->add_gbs = add;
    say(r, "memory bandwidth: copy %.1f GB/s, add %.1f GB/s%s\n", copy, add, cached ? " (cached)" : "");
}

/* [{"recipe", "trains_at", "batch", "why"}, ...]: the batch each recipe's layers were tuned at. */
static cJSON *recipes_json(const dbk_tune_workload *w) {
    cJSON *list = cJSON_CreateArray();
    for (int i = 0; i < w->recipe_count; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "recipe", w->recipes[i].recipe);
        cJSON_AddNumberToObject(e, "trains_at", w->recipes[i].trains_at);
        cJSON_AddNumberToObject(e, "batch", w->recipes[i].batch);
        cJSON_AddStringToObject(e, "why", w->recipes[i].why);
        cJSON_AddItemToArray(list, e);
    }
    return list;
}

/* {"CxKxHxW": [batch, ...]}: the batches each convolution shape was measured at (one per
 * recipe batch it occurs at, ascending). */
static cJSON *batch_by_shape_json(const dbk_tune_workload *w) {
    cJSON *map = cJSON_CreateObject();
    for (int i = 0; i < w->count; i++) {
        const dbk_tune_case *c = &w->cases[i];
        if (!c->shape_key[0]) continue;
        cJSON *list = cJSON_GetObjectItemCaseSensitive(map, c->shape_key);
        if (!list) list = cJSON_AddArrayToObject(map, c->shape_key);
        const double n = (double)c->desc.src[0].shape[0];
        int at = 0;
        const cJSON *v;
        bool seen = false;
        cJSON_ArrayForEach(v, list) {
            if (v->valuedouble == n) seen = true;
            if (v->valuedouble < n) at++;
        }
        if (!seen) cJSON_InsertItemInArray(list, at, cJSON_CreateNumber(n));
    }
    return map;
}

/* A copy of an earlier run's search record with that run's keys under "run" (a record kept
 * before keeps its own "run"); NULL when out of memory. */
static cJSON *record_with_run(const cJSON *record, const cJSON *old) {
    static const char *const run_keys[] = {"device", "driver", "date", "command", "budget_s", "batch", "recipes"};
    cJSON *copy = cJSON_Duplicate(record, true);
    if (!copy || cJSON_GetObjectItemCaseSensitive(copy, "run")) return copy;
    cJSON *run = cJSON_AddObjectToObject(copy, "run");
    for (size_t i = 0; i < sizeof run_keys / sizeof *run_keys; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(old, run_keys[i]);
        if (!run || (v && !cJSON_AddItemToObject(run, run_keys[i], cJSON_Duplicate(v, true)))) {
            cJSON_Delete(copy);
            return NULL;
        }
    }
    return copy;
}

/* A run of one search (--only) keeps the starting profile's records of the other searches when
 * that profile was tuned for this backend, each with the run that made it ("run": its device,
 * driver, date, command, budget, batch and recipes): their values stay in the profile, so the
 * tuned block still accounts for every tuned key, and names the device they were measured on
 * when it is another. A search can so be re-run at another batch without a hand merge. */
static dbk_status keep_earlier_searches(tune_run *r, const cJSON *old, cJSON *searches) {
    if (!r->o->only || !cJSON_IsObject(old) || !cJSON_IsObject(searches)) return DBK_OK;
    const char *backend = r->o->kind == DBK_BACKEND_KIND_OPENCL ? "opencl" : "vulkan";
    const char *b = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(old, "backend"));
    if (!b || strcmp(b, backend)) return DBK_OK;
    const cJSON *s;
    cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(old, "searches")) {
        if (!cJSON_IsObject(s) || !s->string || cJSON_GetObjectItemCaseSensitive(searches, s->string)) continue;
        cJSON *copy = record_with_run(s, old);
        if (!copy || !cJSON_AddItemToObject(searches, s->string, copy)) {
            cJSON_Delete(copy);
            return dbk_set_error(DBK_ERR_OUT_OF_HOST_MEMORY, "out of host memory writing the profile");
        }
        const cJSON *run = cJSON_GetObjectItemCaseSensitive(copy, "run");
        const char *when = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(run, "date"));
        const char *where = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(run, "device"));
        if (!when) when = "an earlier run";
        if (where && strcmp(where, r->info.name))
            say(r, "kept %s as tuned on %s on '%s' (the starting profile's record)\n", s->string, when, where);
        else
            say(r, "kept %s as tuned on %s (the starting profile's record)\n", s->string, when);
    }
    return DBK_OK;
}

/* The profile as written: the tuned tree, the measured bandwidth as the memory roof, and the
 * "tuned" block that says what was done, when and how. */
static dbk_status write_profile(tune_run *r, const char *out) {
    cJSON *p = r->profile;
    cJSON_DeleteItemFromObjectCaseSensitive(p, "generated");
    cJSON_AddStringToObject(p, "generated", "by daybreak tune: do not edit; run daybreak tune again (docs/tuning.md)");
    char date[32];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
    if (r->sum->add_gbs > 0 && r->sum->copy_gbs > 0) {
        /* The roof is what memory delivers to the faster kernel: on lavapipe the add shader is
         * bound by its own instructions (0.1 GB/s) while the copy is the driver's memcpy. */
        const bool add_faster = r->sum->add_gbs >= r->sum->copy_gbs;
        const double roof = add_faster ? r->sum->add_gbs : r->sum->copy_gbs;
        cJSON_DeleteItemFromObjectCaseSensitive(p, "mem_bandwidth_gbs");
        cJSON_AddNumberToObject(p, "mem_bandwidth_gbs", round(roof * 10.0) / 10.0);
        char src[256];
        snprintf(src, sizeof src,
                 "measured by daybreak tune on %s: add (two reads, one write) %.1f GB/s, copy %.1f GB/s; the %s is "
                 "the roof", date, r->sum->add_gbs, r->sum->copy_gbs, add_faster ? "add" : "copy");
        cJSON_DeleteItemFromObjectCaseSensitive(p, "mem_bandwidth_source");
        cJSON_AddStringToObject(p, "mem_bandwidth_source", src);
    }
    /* The hand-written "source" may describe values a search replaced: say so, once. */
    const char *note = " [daybreak tune: the values of the searches in \"tuned\" replace those this text describes.]";
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(p, "source");
    if (cJSON_IsString(src) && !strstr(src->valuestring, note)) {
        char *text = dbk_malloc(strlen(src->valuestring) + strlen(note) + 1);
        if (text) {
            strcpy(text, src->valuestring);
            strcat(text, note);
            cJSON_ReplaceItemInObjectCaseSensitive(p, "source", cJSON_CreateString(text));
            dbk_free(text);
        }
    }
    DBK_TRY(keep_earlier_searches(r, cJSON_GetObjectItemCaseSensitive(p, "tuned"), r->report));
    cJSON_DeleteItemFromObjectCaseSensitive(p, "tuned");
    cJSON *t = cJSON_AddObjectToObject(p, "tuned");
    cJSON_AddStringToObject(t, "backend", r->o->kind == DBK_BACKEND_KIND_OPENCL ? "opencl" : "vulkan");
    cJSON_AddStringToObject(t, "device", r->info.name);
    cJSON_AddStringToObject(t, "driver", r->info.driver);
    cJSON_AddStringToObject(t, "date", date);
    cJSON_AddStringToObject(t, "command", r->o->command ? r->o->command : "");
    cJSON_AddNumberToObject(t, "budget_s", r->o->budget_s);
    if (r->o->batch > 0) cJSON_AddNumberToObject(t, "batch", r->o->batch);
    else cJSON_AddStringToObject(t, "batch", "each recipe's");
    cJSON_AddItemToObject(t, "recipes", recipes_json(&r->w));
    cJSON_AddItemToObject(t, "batch_by_shape", batch_by_shape_json(&r->w));
    cJSON_AddNumberToObject(t, "cases", r->w.count);
    cJSON_AddItemToObject(t, "searches", r->report);
    r->report = NULL;
    char *text = cJSON_Print(p);
    if (!text) return dbk_set_error(DBK_ERR_OUT_OF_HOST_MEMORY, "out of host memory writing the profile");
    dbk_profile *check = NULL;
    dbk_status st = dbk_profile_parse(text, strlen(text), out, &check);
    dbk_profile_destroy(check);
    if (st == DBK_OK) {
        char dir[4200];
        snprintf(dir, sizeof dir, "%s", out);
        char *slash = strrchr(dir, '/');
        if (slash && slash != dir) {
            *slash = '\0';
            st = dbk_mkdir_p(dir);
        }
    }
    if (st == DBK_OK) st = dbk_file_write_atomic(out, text, strlen(text));
    cJSON_free(text);
    return st;
}

/* o->only must name one of the backend's searches. */
static dbk_status check_only(const dbk_tune_options *o) {
    char names[512] = "";
    dbk_profile *base = NULL;
    DBK_TRY(dbk_profile_by_id("default", &base));
    for (int i = 0; i < dbk_tune_search_count(o->kind); i++) {
        dbk_tune_search s;
        dbk_tune_search_make(o->kind, i, base, &s);
        if (!strcmp(s.name, o->only)) {
            dbk_profile_destroy(base);
            return DBK_OK;
        }
        size_t used = strlen(names);
        snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "", s.name);
    }
    dbk_profile_destroy(base);
    return dbk_set_error(DBK_ERR_INVALID_ARG, "--only %s: no such search for this backend (searches: %s)", o->only,
                         names);
}

dbk_status dbk_tune_check_only(dbk_backend_kind kind, const char *only) {
    const dbk_tune_options o = {.kind = kind, .only = only};
    return check_only(&o);
}

static void fingerprint(tune_run *r) {
    uint64_t h = dbk_fnv1a64("tune-cache-1", 12);
    h = dbk_fnv1a64_update(h, &r->o->build_id, sizeof r->o->build_id);
    h = dbk_fnv1a64_update(h, r->info.name, strlen(r->info.name) + 1);
    h = dbk_fnv1a64_update(h, r->info.driver, strlen(r->info.driver) + 1);
    snprintf(r->fingerprint, sizeof r->fingerprint, "%016llx", (unsigned long long)h);
}

dbk_status dbk_tune_run(const dbk_tune_options *o, dbk_tune_summary *sum) {
    memset(sum, 0, sizeof *sum);
    tune_run r;
    memset(&r, 0, sizeof r);
    r.o = o;
    r.sum = sum;
    r.t0 = dbk_time_now();
    const char *backend = o->kind == DBK_BACKEND_KIND_OPENCL ? "opencl" : "vulkan";
    if (dbk_tune_search_count(o->kind) == 0)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "the CPU reference backend has nothing to tune (opencl or vulkan)");
    DBK_TRY(dbk_backend_device_info(o->kind, o->index, &r.info));

    /* Output and cache paths first: an unusable output fails before any measuring. */
    char tuned[4200];
    dbk_profile_tuned_path(backend, r.info.name, tuned, sizeof tuned);
    const char *out = o->out ? o->out : tuned;
    if (!*out)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "DBK_CACHE_DIR=off leaves no default place for the profile: give --out FILE");
    snprintf(sum->out, sizeof sum->out, "%.4000s", out);
    if (*tuned) {
        char *at = strstr(tuned, "/profiles/");
        if (at) snprintf(r.cache_path, sizeof r.cache_path, "%.*s/tune/%s", (int)(at - tuned), tuned, at + 10);
    }
    r.corrupt = dbk_env_tune_corrupt();
    fingerprint(&r);
    if (o->only) DBK_TRY(check_only(o));

    dbk_profile *base = NULL;
    DBK_TRY(dbk_profile_builtin_for_device(backend, r.info.name, &base));
    char *text = dbk_profile_print(base);
    r.profile = text ? cJSON_Parse(text) : NULL;
    free(text);
    say(&r, "tuning %s device %d '%s' (%s), starting from profile %s, budget %.0f s\n", backend, o->index,
        r.info.name, r.info.driver, dbk_profile_id(base), o->budget_s);
    dbk_profile_destroy(base);
    if (!r.profile) return dbk_set_error(DBK_ERR_OUT_OF_HOST_MEMORY, "out of host memory copying the profile");

    dbk_status st = dbk_tune_workload_build(o->recipe, o->batch, r.info.max_alloc_bytes, &r.w);
    if (st == DBK_OK) {
        say(&r, "workload: %d cases (the distinct convolutions and linear layers of %s)\n", r.w.count,
            o->recipe ? o->recipe : "every CIFAR-10 recipe");
        for (int i = 0; i < r.w.recipe_count; i++)
            say(&r, "  %-22s batch %4d (%s)\n", r.w.recipes[i].recipe, r.w.recipes[i].batch, r.w.recipes[i].why);
        load_cache(&r);
        r.report = cJSON_CreateObject();
        bandwidth(&r);
        /* Each search's share of the budget is in proportion to its candidates, counted on the
         * starting profile (a skipped search counts none). */
        const int n = dbk_tune_search_count(o->kind);
        int weights[8] = {0}, weight_left = 0;
        for (int i = 0; i < n && i < 8 && st == DBK_OK; i++) {
            dbk_profile *now = NULL;
            st = profile_of(r.profile, &now);
            dbk_tune_search s;
            if (st == DBK_OK) dbk_tune_search_make(o->kind, i, now, &s);
            dbk_profile_destroy(now);
            if (st == DBK_OK && !s.skip && (!o->only || !strcmp(o->only, s.name))) weights[i] = s.count;
            weight_left += weights[i];
        }
        for (int i = 0; i < n && i < 8 && st == DBK_OK; i++) {
            dbk_profile *now = NULL;
            st = profile_of(r.profile, &now);
            if (st != DBK_OK) break;
            dbk_tune_search s;
            dbk_tune_search_make(o->kind, i, now, &s);
            dbk_profile_destroy(now);
            if (o->only && strcmp(o->only, s.name)) continue;
            run_search(&r, &s, weights[i], weight_left);
            weight_left -= weights[i];
        }
        if (st == DBK_OK && sum->measured == 0 && sum->untried == 0 && !r.bandwidth_measured)
            say(&r, "nothing to tune: every candidate's result is in the cache %s\n", r.cache_path);
        else if (st == DBK_OK && sum->measured == 0)
            say(&r, "nothing measured: the cached candidates are all this budget allows (%d need a larger --budget)\n",
                sum->untried);
        if (st == DBK_OK) st = write_profile(&r, out);
    }
    cJSON_Delete(r.report);
    cJSON_Delete(r.cache);
    cJSON_Delete(r.profile);
    dbk_tune_workload_deinit(&r.w);
    sum->seconds = dbk_time_now() - r.t0;
    return st;
}
