/* runs.c — result folders read back, grouped and summarised (see runs.h). */
#define _POSIX_C_SOURCE 200809L
#include "bench/runs.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "core/log.h"
#include "core/utf8.h"
#include "train/results.h"
#include "train/run_lock.h"

/* ---------------------------------------------------------------------------------- */
/* reading result.json                                                                 */

static const cJSON *get(const cJSON *o, const char *key) { return cJSON_GetObjectItemCaseSensitive(o, key); }

static void copy_str(char *dst, size_t cap, const cJSON *o, const char *key) {
    const cJSON *v = get(o, key);
    dbk_utf8_copy(dst, cap, cJSON_IsString(v) ? v->valuestring : "");
}

static double num(const cJSON *o, const char *key, double fallback) {
    const cJSON *v = get(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : fallback;
}

/* result.json's "energy" (absent in results before it: not measured). */
static void load_energy(dbk_run *r, const cJSON *e) {
    r->joules_to_target = nan("");
    r->energy_measured = cJSON_IsTrue(get(e, "measured"));
    if (!cJSON_IsObject(e)) {
        snprintf(r->energy_note, sizeof r->energy_note, "not recorded (a result from before energy was measured)");
        return;
    }
    if (!r->energy_measured) {
        copy_str(r->energy_note, sizeof r->energy_note, e, "reason");
        return;
    }
    copy_str(r->energy_source, sizeof r->energy_source, e, "source");
    copy_str(r->energy_note, sizeof r->energy_note, e, "scope");
    r->joules_to_target = num(e, "joules_to_target", nan(""));
    r->energy_price_per_kwh = num(e, "price_per_kwh", 0.0);
    copy_str(r->energy_price_source, sizeof r->energy_price_source, e, "price_source");
}

/* Whether DIR/dawnbench.json is a DAWNBench entry, and why not (its nonconforming_reasons). */
static void load_conformance(dbk_run *r, const char *dir) {
    char path[1100];
    snprintf(path, sizeof path, "%s/dawnbench.json", dir);
    void *text;
    size_t n;
    r->conforms = false;
    r->nonconforming[0] = '\0';
    if (dbk_file_read_all(path, &text, &n) != DBK_OK) return;
    cJSON *entry = cJSON_ParseWithLength(text, n);
    dbk_free(text);
    r->conforms = cJSON_IsString(get(entry, "version")) && !cJSON_IsFalse(get(entry, "conforms"));
    const cJSON *why;
    cJSON_ArrayForEach(why, get(entry, "nonconforming_reasons")) {
        size_t used = strlen(r->nonconforming);
        if (cJSON_IsString(why))
            snprintf(r->nonconforming + used, sizeof r->nonconforming - used, "%s%s", used ? "; " : "", why->valuestring);
    }
    dbk_utf8_trim_partial(r->nonconforming);
    cJSON_Delete(entry);
}

dbk_status dbk_run_load(const char *dir, dbk_run *r) {
    memset(r, 0, sizeof *r);
    char path[1100];
    dbk_utf8_copy(r->dir, sizeof r->dir, dir);
    snprintf(r->path, sizeof r->path, "%s", dir);
    snprintf(path, sizeof path, "%s/result.json", dir);
    cJSON *root;
    dbk_status st = dbk_results_read_json(dir, &root);
    if (st != DBK_OK) return st;
    const cJSON *dev = get(root, "device"), *rec = get(root, "recipe"), *eps = get(root, "epochs");
    if (!cJSON_IsObject(dev) || !cJSON_IsObject(rec) || !cJSON_IsArray(eps) || !cJSON_IsNumber(get(root, "target"))) {
        cJSON_Delete(root);
        return dbk_set_error(DBK_ERR_FORMAT, "%s lacks device, recipe, target or epochs", path);
    }
    copy_str(r->version, sizeof r->version, root, "daybreak_version");
    copy_str(r->status, sizeof r->status, root, "status");
    /* A run that died without a word (SIGKILL, power loss) left "running" and a free lock. */
    if (!strcmp(r->status, "running") && !dbk_run_lock_is_held(dir)) snprintf(r->status, sizeof r->status, "killed");
    copy_str(r->clock_mode, sizeof r->clock_mode, root, "clock");
    copy_str(r->started_at, sizeof r->started_at, root, "started_at");
    copy_str(r->recipe, sizeof r->recipe, rec, "name");
    copy_str(r->model, sizeof r->model, root, "model");
    copy_str(r->backend, sizeof r->backend, dev, "backend");
    copy_str(r->device, sizeof r->device, dev, "name");
    copy_str(r->driver, sizeof r->driver, dev, "driver");
    const cJSON *pl = get(root, "platform");
    if (cJSON_IsObject(pl)) {
        copy_str(r->platform_id, sizeof r->platform_id, pl, "id");
        copy_str(r->platform_name, sizeof r->platform_name, pl, "name");
        char provider[64], instance[64];
        copy_str(provider, sizeof provider, pl, "provider");
        copy_str(instance, sizeof instance, pl, "instance");
        snprintf(r->instance, sizeof r->instance, "%s%s%s", provider, *provider && *instance ? " " : "", instance);
        dbk_utf8_trim_partial(r->instance);
        r->price_per_hour = num(pl, "price_per_hour", 0.0);
        copy_str(r->price_source, sizeof r->price_source, pl, "price_source");
        if (r->price_per_hour > 0 && !r->price_source[0])   /* results before price_source */
            snprintf(r->price_source, sizeof r->price_source, "profile %.64s", r->platform_id);
        r->peak_gflops = num(pl, "peak_fp32_gflops", 0.0);
        r->bandwidth_gbs = num(pl, "mem_bandwidth_gbs", 0.0);
        copy_str(r->bandwidth_source, sizeof r->bandwidth_source, pl, "mem_bandwidth_source");
        if (r->bandwidth_gbs > 0 && !r->bandwidth_source[0]) snprintf(r->bandwidth_source, sizeof r->bandwidth_source, "estimate");
    }
    r->seed = (uint64_t)num(root, "seed", 0.0);
    r->train_images = (int)num(root, "train_images", 0.0);
    r->test_images = (int)num(root, "test_images", 0.0);
    r->subset = cJSON_IsTrue(get(root, "subset"));
    const cJSON *dist = get(root, "distributed");
    if (cJSON_IsObject(dist)) { /* runs of different ranks or exchanges are never grouped together */
        r->ranks = (int)num(dist, "ranks", 0);
        const cJSON *c = get(dist, "compress"), *sc = get(dist, "scope");
        snprintf(r->exchange, sizeof r->exchange, "%.40s/%.16s%s", cJSON_IsString(c) ? c->valuestring : "?",
                 cJSON_IsString(sc) ? sc->valuestring : "?", cJSON_IsTrue(get(dist, "error_feedback")) ? "+ef" : "");
        const cJSON *avg = get(dist, "averaging");
        if (cJSON_IsObject(avg)) snprintf(r->exchange, sizeof r->exchange, "average every %.0f", num(avg, "local_steps", 0));
    }
    const cJSON *mask = get(root, "sparse_mask"), *spec = get(mask, "mask"); /* masks never group together either */
    if (cJSON_IsString(spec)) {
        const size_t n = strlen(r->exchange);
        snprintf(r->exchange + n, sizeof r->exchange - n, "%smask %.24s%s", n ? ", " : "", spec->valuestring,
                 cJSON_IsTrue(get(mask, "fixed")) ? " fixed" : "");
    }
    r->target = num(root, "target", 0.0);
    r->epochs_to_target = (int)num(root, "epochs_to_target", 0.0);
    r->seconds_to_target = r->epochs_to_target > 0 ? num(root, "seconds_to_target", HUGE_VAL) : HUGE_VAL;
    const cJSON *fs = get(root, "fixed_schedule");
    const bool completed = cJSON_IsObject(fs) && cJSON_IsTrue(get(fs, "completed"));
    r->schedule_accuracy = completed ? num(fs, "test_accuracy", nan("")) : nan("");
    r->schedule_seconds = completed ? num(fs, "seconds", nan("")) : nan("");
    const cJSON *builds = get(root, "builds");
    r->build_seconds = cJSON_IsObject(builds) ? num(builds, "total_seconds", nan("")) : nan("");
    const cJSON *fl = get(root, "flops");
    r->achieved_gflops = cJSON_IsObject(fl) ? num(fl, "achieved_gflops", 0.0) : 0.0;
    r->utilisation = cJSON_IsObject(fl) ? num(fl, "utilisation", nan("")) : nan("");
    load_energy(r, get(root, "energy"));
    load_conformance(r, dir);

    r->epochs = cJSON_GetArraySize(eps);
    st = DBK_OK;
    if (r->epochs > 0) {
        r->accuracy = dbk_calloc((size_t)r->epochs, sizeof *r->accuracy);
        r->clock = dbk_calloc((size_t)r->epochs, sizeof *r->clock);
        if (!r->accuracy || !r->clock) st = DBK_ERR_OUT_OF_HOST_MEMORY;
        for (int i = 0; i < r->epochs && st == DBK_OK; i++) {
            const cJSON *e = cJSON_GetArrayItem(eps, i);
            if (!cJSON_IsNumber(get(e, "test_accuracy")) || !cJSON_IsNumber(get(e, "clock_seconds")))
                st = dbk_set_error(DBK_ERR_FORMAT, "%s: epoch %d lacks test_accuracy or clock_seconds", path, i + 1);
            else {
                r->accuracy[i] = num(e, "test_accuracy", 0.0);
                r->clock[i] = num(e, "clock_seconds", 0.0);
            }
        }
    }
    const cJSON *prof = get(root, "profile"), *ops = cJSON_IsObject(prof) ? get(prof, "ops") : NULL;
    int nops = cJSON_IsArray(ops) ? cJSON_GetArraySize(ops) : 0;
    if (st == DBK_OK && nops > 0) {
        r->ops = dbk_calloc((size_t)nops, sizeof *r->ops);
        if (!r->ops) st = DBK_ERR_OUT_OF_HOST_MEMORY;
        for (int i = 0; i < nops && st == DBK_OK; i++) {
            const cJSON *o = cJSON_GetArrayItem(ops, i);
            dbk_run_op *op = &r->ops[i];
            copy_str(op->label, sizeof op->label, o, "label");
            copy_str(op->op, sizeof op->op, o, "op");
            copy_str(op->algorithm, sizeof op->algorithm, o, "algorithm");
            op->flops = num(o, "flops", 0.0);
            op->bytes = num(o, "bytes", 0.0);
            op->seconds = num(o, "seconds", 0.0);
        }
        if (st == DBK_OK) r->op_count = nops;
        r->profiled_step_seconds = num(prof, "step_seconds", 0.0);
    }
    cJSON_Delete(root);
    if (st != DBK_OK) dbk_run_deinit(r);
    return st;
}

void dbk_run_deinit(dbk_run *r) {
    dbk_free(r->accuracy);
    dbk_free(r->clock);
    dbk_free(r->ops);
    r->accuracy = r->clock = NULL;
    r->ops = NULL;
    r->epochs = r->op_count = 0;
}

bool dbk_run_is_unfinished(const dbk_run *r) {
    return !strcmp(r->status, "running") || !strcmp(r->status, "killed") || !strcmp(r->status, "interrupted");
}

static dbk_status set_push(dbk_run_set *set, const char *dir) {
    dbk_run run;
    DBK_TRY(dbk_run_load(dir, &run));
    if (!strcmp(run.status, "running"))
        dbk_log(DBK_LOG_LEVEL_WARN, "%s: still running; not counted in the summaries", dir);
    else if (dbk_run_is_unfinished(&run))
        dbk_log(DBK_LOG_LEVEL_WARN, "%s: %s%s after %d epoch%s; not counted in the summaries; continue it with "
                "'daybreak train --resume %s'", dir, run.status,
                strcmp(run.status, "killed") ? "" : " (result.json says running, but no process holds its lock)",
                run.epochs, run.epochs == 1 ? "" : "s", dir);
    dbk_run *grown = dbk_malloc(sizeof *grown * (size_t)(set->count + 1));
    if (!grown) {
        dbk_run_deinit(&run);
        return DBK_ERR_OUT_OF_HOST_MEMORY;
    }
    if (set->count) memcpy(grown, set->runs, sizeof *grown * (size_t)set->count);
    grown[set->count] = run;
    dbk_free(set->runs);
    set->runs = grown;
    set->count++;
    return DBK_OK;
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

dbk_status dbk_run_set_add(dbk_run_set *set, const char *dir) {
    char path[1100];
    struct stat sb;
    if (stat(dir, &sb) != 0 && errno == ENOENT)
        return dbk_set_error(DBK_ERR_NOT_FOUND, "result folder %s does not exist", dir);
    if (stat(dir, &sb) != 0) /* a symlink loop, a forbidden folder: say so, not "missing" */
        return dbk_set_error(DBK_ERR_IO, "result folder %s: cannot use it: %s", dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode)) return dbk_set_error(DBK_ERR_NOT_FOUND, "result folder %s is not a folder", dir);
    snprintf(path, sizeof path, "%s/result.json", dir);
    if (stat(path, &sb) == 0) return set_push(set, dir);

    DIR *d = opendir(dir);
    if (!d) return dbk_set_error(DBK_ERR_IO, "cannot list %s", dir);
    char **names = NULL;
    int n = 0, cap = 0;
    dbk_status st = DBK_OK;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && st == DBK_OK) {
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s/result.json", dir, e->d_name);
        if (stat(path, &sb) != 0) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            char **g = dbk_malloc(sizeof *g * (size_t)cap);
            if (!g) {
                st = DBK_ERR_OUT_OF_HOST_MEMORY;
                break;
            }
            if (n) memcpy(g, names, sizeof *g * (size_t)n);
            dbk_free(names);
            names = g;
        }
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        names[n] = dbk_malloc(len);
        if (!names[n]) {
            st = DBK_ERR_OUT_OF_HOST_MEMORY;
            break;
        }
        snprintf(names[n], len, "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(d);
    if (st == DBK_OK && n == 0)
        st = dbk_set_error(DBK_ERR_NOT_FOUND, "%s holds no result.json, nor any subfolder with one", dir);
    if (st == DBK_OK) qsort(names, (size_t)n, sizeof *names, cmp_names);
    for (int i = 0; i < n; i++) {
        if (st == DBK_OK) st = set_push(set, names[i]);
        dbk_free(names[i]);
    }
    dbk_free(names);
    return st;
}

void dbk_run_set_deinit(dbk_run_set *set) {
    for (int i = 0; i < set->count; i++) dbk_run_deinit(&set->runs[i]);
    dbk_free(set->runs);
    set->runs = NULL;
    set->count = 0;
}

/* ---------------------------------------------------------------------------------- */
/* grouping and statistics                                                             */

static bool same_group(const dbk_run *a, const dbk_run *b) {
    return !strcmp(a->backend, b->backend) && !strcmp(a->device, b->device) && !strcmp(a->driver, b->driver) &&
           !strcmp(a->recipe, b->recipe) && !strcmp(a->clock_mode, b->clock_mode) && fabs(a->target - b->target) < 1e-9 &&
           a->train_images == b->train_images && a->test_images == b->test_images &&
           (a->op_count > 0) == (b->op_count > 0) && /* profiled steps are slower: never mixed */
           a->ranks == b->ranks && !strcmp(a->exchange, b->exchange);
}

static double median_of(double *v, int n) {
    dbk_stats s;
    if (n < 1 || dbk_stats_compute(v, n, &s) != DBK_OK || s.converged == 0) return nan("");
    /* only finite values are passed in; the median over them */
    return s.median;
}

/* Energy to the target (joules, and USD at the runs' price per kWh) when every run measured it.
 * tmp: n doubles. */
static dbk_status summarise_energy(const dbk_run_set *set, dbk_run_group *g, double *tmp) {
    const int n = g->count;
    g->energy_measured = true;
    for (int i = 0; i < n; i++) g->energy_measured = g->energy_measured && set->runs[g->members[i]].energy_measured;
    g->energy_priced = g->energy_measured && g->first->energy_price_per_kwh > 0;
    for (int i = 0; i < n; i++) {
        const double j = set->runs[g->members[i]].joules_to_target;
        tmp[i] = isfinite(j) ? j : HUGE_VAL;
    }
    DBK_TRY(dbk_stats_compute(tmp, n, &g->joules));
    for (int i = 0; i < n; i++) {
        const dbk_run *r = &set->runs[g->members[i]];
        tmp[i] = isfinite(r->joules_to_target) && r->energy_price_per_kwh > 0
                     ? r->joules_to_target / DBK_JOULES_PER_KWH * r->energy_price_per_kwh : HUGE_VAL;
    }
    DBK_TRY(dbk_stats_compute(tmp, n, &g->energy_cost));
    return DBK_OK;
}

static dbk_status summarise(const dbk_run_set *set, dbk_run_group *g) {
    const int n = g->count;
    double *secs = dbk_malloc(sizeof *secs * (size_t)n * 4);
    if (!secs) return DBK_ERR_OUT_OF_HOST_MEMORY;
    double *eps = secs + n, *cost = secs + 2 * n, *tmp = secs + 3 * n;
    g->priced = g->first->price_per_hour > 0;
    for (int i = 0; i < n; i++) {
        const dbk_run *r = &set->runs[g->members[i]];
        bool hit = r->epochs_to_target > 0;
        secs[i] = hit ? r->seconds_to_target : HUGE_VAL;
        eps[i] = hit ? r->epochs_to_target : HUGE_VAL;
        cost[i] = hit && r->price_per_hour > 0 ? r->seconds_to_target / 3600.0 * r->price_per_hour : HUGE_VAL;
    }
    dbk_status st = dbk_stats_compute(secs, n, &g->seconds);
    if (st == DBK_OK) st = dbk_stats_compute(eps, n, &g->epochs);
    if (st == DBK_OK) st = dbk_stats_compute(cost, n, &g->cost);
    if (st == DBK_OK) st = summarise_energy(set, g, secs);

    int m = 0;
    for (int i = 0; i < n; i++) /* the runs that completed their schedule only */
        if (isfinite(set->runs[g->members[i]].schedule_accuracy)) {
            tmp[m] = set->runs[g->members[i]].schedule_accuracy;
            cost[m++] = set->runs[g->members[i]].schedule_seconds;
        }
    memset(&g->schedule_accuracy, 0, sizeof g->schedule_accuracy);
    memset(&g->schedule_seconds, 0, sizeof g->schedule_seconds);
    if (st == DBK_OK && m > 0) st = dbk_stats_compute(tmp, m, &g->schedule_accuracy);
    if (st == DBK_OK && m > 0) st = dbk_stats_compute(cost, m, &g->schedule_seconds);
    m = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(set->runs[g->members[i]].utilisation)) tmp[m++] = set->runs[g->members[i]].utilisation;
    g->utilisation_median = median_of(tmp, m);
    m = 0;
    for (int i = 0; i < n; i++)
        if (set->runs[g->members[i]].achieved_gflops > 0) tmp[m++] = set->runs[g->members[i]].achieved_gflops;
    g->achieved_gflops_median = median_of(tmp, m);

    g->nthresholds = dbk_stats_default_thresholds(g->first->target, g->thresholds);
    for (int t = 0; t < g->nthresholds && st == DBK_OK; t++) {
        for (int i = 0; i < n; i++) {
            const dbk_run *r = &set->runs[g->members[i]];
            dbk_threshold_hit h;
            dbk_stats_sweep(r->accuracy, r->clock, r->epochs, &g->thresholds[t], 1, &h);
            secs[i] = h.seconds;
            eps[i] = h.reached ? h.epoch : HUGE_VAL;
        }
        st = dbk_stats_compute(secs, n, &g->threshold_seconds[t]);
        if (st == DBK_OK) st = dbk_stats_compute(eps, n, &g->threshold_epochs[t]);
    }
    dbk_free(secs);
    return st;
}

/* DEVICE=USD of a report's --price: whether it applies to run r, and how well (match length). */
static int price_match(const char *device, const dbk_run *r) {
    if (!strcmp(device, r->platform_id)) return (int)strlen(device) + 1000;   /* a profile id, named exactly */
    size_t n = strlen(device);
    for (const char *p = r->device; *p; p++)
        if (!strncasecmp(p, device, n)) return (int)n;
    return 0;
}

dbk_status dbk_run_set_apply_prices(dbk_run_set *set, const char *const *prices, int nprices, double energy_price) {
    int *best = dbk_calloc((size_t)set->count + 1, sizeof *best);
    if (!best) return DBK_ERR_OUT_OF_HOST_MEMORY;
    dbk_status st = DBK_OK;
    for (int k = 0; k < nprices && st == DBK_OK; k++) {
        const char *eq = strrchr(prices[k], '=');
        char device[256], *end = NULL;
        double usd = eq ? strtod(eq + 1, &end) : 0.0;
        if (!eq || eq == prices[k] || (size_t)(eq - prices[k]) >= sizeof device || end == eq + 1 || *end ||
            !(usd > 0 && usd <= 1e6)) {
            st = dbk_set_error(DBK_ERR_INVALID_ARG, "--price '%s': give DEVICE=USD_PER_HOUR (a profile id or part of the "
                               "device name, and a price above 0), e.g. --price 'V100=3.06'", prices[k]);
            break;
        }
        snprintf(device, sizeof device, "%.*s", (int)(eq - prices[k]), prices[k]);
        int matched = 0;
        for (int i = 0; i < set->count; i++) {
            dbk_run *r = &set->runs[i];
            const int q = price_match(device, r);
            if (!q) continue;
            matched++;
            if (q < best[i]) continue;   /* a longer match given earlier wins */
            best[i] = q;
            r->price_per_hour = usd;
            snprintf(r->price_source, sizeof r->price_source, "--price '%.100s' of this report", prices[k]);
            dbk_utf8_trim_partial(r->price_source);
        }
        if (!matched)
            st = dbk_set_error(DBK_ERR_INVALID_ARG, "--price '%s': no run's device or profile matches '%s'", prices[k],
                               device);
    }
    dbk_free(best);
    for (int i = 0; i < set->count && st == DBK_OK && energy_price > 0; i++) {
        set->runs[i].energy_price_per_kwh = energy_price;
        snprintf(set->runs[i].energy_price_source, sizeof set->runs[i].energy_price_source,
                 "--energy-price of this report");
    }
    return st;
}

dbk_status dbk_run_groups_build(const dbk_run_set *set, dbk_run_group **out, int *count) {
    *out = NULL;
    *count = 0;
    if (set->count == 0) return dbk_set_error(DBK_ERR_INVALID_ARG, "no runs to summarise");
    dbk_run_group *groups = dbk_calloc((size_t)set->count, sizeof *groups);
    int *group_of = dbk_malloc(sizeof *group_of * (size_t)set->count);
    if (!groups || !group_of) {
        dbk_free(groups);
        dbk_free(group_of);
        return DBK_ERR_OUT_OF_HOST_MEMORY;
    }
    int ng = 0;
    for (int i = 0; i < set->count; i++) {
        group_of[i] = -1;
        if (dbk_run_is_unfinished(&set->runs[i])) continue;
        int g = 0;
        while (g < ng && !same_group(groups[g].first, &set->runs[i])) g++;
        if (g == ng) groups[ng++].first = &set->runs[i];
        group_of[i] = g;
        groups[g].count++;
    }
    dbk_status st = DBK_OK;
    for (int g = 0; g < ng && st == DBK_OK; g++) {
        groups[g].members = dbk_malloc(sizeof(int) * (size_t)groups[g].count);
        if (!groups[g].members) st = DBK_ERR_OUT_OF_HOST_MEMORY;
        groups[g].count = 0;
    }
    if (ng == 0) st = dbk_set_error(DBK_ERR_INVALID_ARG, "no finished runs to summarise (%d unfinished)", set->count);
    for (int i = 0; i < set->count && st == DBK_OK; i++) {
        if (group_of[i] < 0) continue;
        dbk_run_group *g = &groups[group_of[i]];
        g->members[g->count++] = i;
    }
    for (int g = 0; g < ng && st == DBK_OK; g++) st = summarise(set, &groups[g]);
    dbk_free(group_of);
    if (st != DBK_OK) {
        dbk_run_groups_destroy(groups, ng);
        return st;
    }
    *out = groups;
    *count = ng;
    return DBK_OK;
}

void dbk_run_groups_destroy(dbk_run_group *groups, int count) {
    if (!groups) return;
    for (int g = 0; g < count; g++) dbk_free(groups[g].members);
    dbk_free(groups);
}

const char *dbk_run_group_energy_note(const dbk_run_set *set, const dbk_run_group *g) {
    for (int i = 0; i < g->count; i++)
        if (!set->runs[g->members[i]].energy_measured) return set->runs[g->members[i]].energy_note;
    return g->first->energy_note;
}

void dbk_run_group_label(const dbk_run_group *g, char *out, size_t cap) {
    snprintf(out, cap, "%s · %s · %s%s%s", g->first->backend, g->first->device, g->first->recipe,
             g->first->op_count > 0 ? " (profiled)" : "", g->first->subset ? " (subset)" : "");
    dbk_utf8_trim_partial(out);
}

/* ---------------------------------------------------------------------------------- */
/* printed summary and summary.json                                                    */

static void fmt_seconds(char *out, size_t cap, double s) {
    if (isfinite(s)) snprintf(out, cap, "%.1f s", s);
    else snprintf(out, cap, "not reached");
}

/* airbench's metric: mean and spread of the whole schedule's accuracy, and its time. */
static void print_schedule_summary(FILE *out, const dbk_run_group *gr) {
    const dbk_stats *a = &gr->schedule_accuracy, *t = &gr->schedule_seconds;
    if (a->n == 0) {
        fprintf(out, "  fixed schedule:     no run completed its schedule\n");
        return;
    }
    fprintf(out, "  fixed schedule:     accuracy mean %.2f%%", a->mean);
    if (isfinite(a->stddev)) fprintf(out, " (sd %.2f)", a->stddev);
    fprintf(out, ", time median %.1f s, over %d of %d runs\n", t->median, a->n, gr->count);
}

void dbk_runs_print_summary(FILE *out, const dbk_run_set *set, const dbk_run_group *groups, int count) {
    fprintf(out, "\n%-4s %-8s %-28.28s %-10s %6s %-12s %7s %14s %9s %9s %8s\n", "run", "backend", "device", "recipe",
            "seed", "status", "epochs", "time to target", "best acc", "sched acc", "util");
    for (int i = 0; i < set->count; i++) {
        const dbk_run *r = &set->runs[i];
        char t[32], util[16];
        double best = 0.0;
        for (int e = 0; e < r->epochs; e++)
            if (r->accuracy[e] > best) best = r->accuracy[e];
        fmt_seconds(t, sizeof t, r->seconds_to_target);
        if (isfinite(r->utilisation)) snprintf(util, sizeof util, "%.2f%%", 100.0 * r->utilisation);
        else snprintf(util, sizeof util, "n/a");
        char sched[16];
        if (isfinite(r->schedule_accuracy)) snprintf(sched, sizeof sched, "%.2f%%", r->schedule_accuracy);
        else snprintf(sched, sizeof sched, "n/a");
        fprintf(out, "%-4d %-8s %-28.28s %-10s %6llu %-12s %7d %14s %8.2f%% %9s %8s\n", i + 1, r->backend, r->device,
                r->recipe, (unsigned long long)r->seed, r->status, r->epochs_to_target ? r->epochs_to_target : r->epochs,
                t, best, sched, util);
    }
    for (int g = 0; g < count; g++) {
        const dbk_run_group *gr = &groups[g];
        char label[512], med[32], oly[32];
        dbk_run_group_label(gr, label, sizeof label);
        fmt_seconds(med, sizeof med, gr->seconds.median);
        fmt_seconds(oly, sizeof oly, gr->seconds.olympic_mean);
        fprintf(out, "\nsummary %s (clock %s, target %.2f%%, %d run%s)\n", label, gr->first->clock_mode, gr->first->target,
                gr->count, gr->count == 1 ? "" : "s");
        fprintf(out, "  reached the target: %d of %d (%.0f%%)\n", gr->seconds.converged, gr->count,
                100.0 * gr->seconds.fraction);
        fprintf(out, "  time to target:     median %s, olympic mean %s", med, oly);
        if (isfinite(gr->seconds.cv)) fprintf(out, ", CV %.1f%%", 100.0 * gr->seconds.cv);
        fprintf(out, "\n");
        if (isfinite(gr->epochs.median)) fprintf(out, "  epochs to target:   median %.1f\n", gr->epochs.median);
        else fprintf(out, "  epochs to target:   median not reached\n");
        print_schedule_summary(out, gr);
        if (gr->priced && isfinite(gr->cost.median))
            fprintf(out, "  cost to target:     median USD %.3g at USD %.2f/h (%s)\n", gr->cost.median,
                    gr->first->price_per_hour, gr->first->price_source);
        else if (!gr->priced)
            fprintf(out, "  cost to target:     n/a (profile %s has no price)\n", gr->first->platform_id);
        if (gr->energy_measured && isfinite(gr->joules.median))
            fprintf(out, "  energy to target:   median %.1f J (%.4g kWh), %s\n", gr->joules.median,
                    gr->joules.median / DBK_JOULES_PER_KWH, gr->first->energy_source);
        else if (!gr->energy_measured) fprintf(out, "  energy to target:   not measured (%s)\n", dbk_run_group_energy_note(set, gr));
        if (isfinite(gr->utilisation_median))
            fprintf(out, "  utilisation:        %.2f%% of %.0f GFLOP/s peak (achieved %.1f GFLOP/s)\n",
                    100.0 * gr->utilisation_median, gr->first->peak_gflops, gr->achieved_gflops_median);
        fprintf(out, "  thresholds:        ");
        for (int t = 0; t < gr->nthresholds; t++) {
            char s[32];
            fmt_seconds(s, sizeof s, gr->threshold_seconds[t].median);
            fprintf(out, " %.4g%%: %s (%d/%d)%s", gr->thresholds[t], s, gr->threshold_seconds[t].converged, gr->count,
                    t + 1 < gr->nthresholds ? ";" : "\n");
        }
    }
}

static cJSON *stats_json(const dbk_stats *s) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "runs", s->n);
    cJSON_AddNumberToObject(o, "converged", s->converged);
    cJSON_AddNumberToObject(o, "fraction_converged", s->fraction);
    const struct { const char *k; double v; } f[] = {{"median", s->median}, {"olympic_mean", s->olympic_mean},
                                                     {"mean", s->mean},     {"stddev", s->stddev},
                                                     {"cv", s->cv},         {"min", s->min},
                                                     {"max", s->max}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        if (isfinite(f[i].v)) cJSON_AddNumberToObject(o, f[i].k, f[i].v);
        else cJSON_AddNullToObject(o, f[i].k);
    }
    return o;
}

dbk_status dbk_runs_write_summary_json(const char *path, const dbk_run_set *set, const dbk_run_group *groups,
                                       int count) {
    cJSON *root = cJSON_CreateObject();
    if (!root) return DBK_ERR_OUT_OF_HOST_MEMORY;
    cJSON_AddStringToObject(root, "daybreak_version", DBK_VERSION);
    cJSON *runs = cJSON_AddArrayToObject(root, "runs");
    for (int i = 0; i < set->count; i++) {
        const dbk_run *r = &set->runs[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "dir", r->dir);
        cJSON_AddItemToObject(o, "seed", dbk_results_u64_json(r->seed));
        cJSON_AddStringToObject(o, "status", r->status);
        if (r->epochs_to_target > 0) {
            cJSON_AddNumberToObject(o, "epochs_to_target", r->epochs_to_target);
            cJSON_AddNumberToObject(o, "seconds_to_target", r->seconds_to_target);
        } else {
            cJSON_AddNullToObject(o, "epochs_to_target");
            cJSON_AddNullToObject(o, "seconds_to_target");
        }
        if (isfinite(r->schedule_accuracy)) {
            cJSON_AddNumberToObject(o, "fixed_schedule_accuracy", r->schedule_accuracy);
            cJSON_AddNumberToObject(o, "fixed_schedule_seconds", r->schedule_seconds);
        } else {
            cJSON_AddNullToObject(o, "fixed_schedule_accuracy");
            cJSON_AddNullToObject(o, "fixed_schedule_seconds");
        }
        cJSON_AddItemToArray(runs, o);
    }
    cJSON *gs = cJSON_AddArrayToObject(root, "groups");
    for (int g = 0; g < count; g++) {
        const dbk_run_group *gr = &groups[g];
        const dbk_run *f = gr->first;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "backend", f->backend);
        cJSON_AddStringToObject(o, "device", f->device);
        cJSON_AddStringToObject(o, "driver", f->driver);
        cJSON_AddStringToObject(o, "recipe", f->recipe);
        cJSON_AddStringToObject(o, "clock", f->clock_mode);
        cJSON_AddStringToObject(o, "platform", f->platform_id);
        cJSON_AddNumberToObject(o, "target", f->target);
        cJSON_AddNumberToObject(o, "train_images", f->train_images);
        cJSON_AddNumberToObject(o, "test_images", f->test_images);
        cJSON_AddBoolToObject(o, "subset", f->subset);
        cJSON *seeds = cJSON_AddArrayToObject(o, "seeds");
        for (int i = 0; i < gr->count; i++)
            cJSON_AddItemToArray(seeds, cJSON_CreateNumber((double)set->runs[gr->members[i]].seed));
        cJSON_AddItemToObject(o, "seconds_to_target", stats_json(&gr->seconds));
        cJSON_AddItemToObject(o, "epochs_to_target", stats_json(&gr->epochs));
        cJSON *fs = cJSON_AddObjectToObject(o, "fixed_schedule");
        cJSON_AddNumberToObject(fs, "runs_completed", gr->schedule_accuracy.n);
        if (gr->schedule_accuracy.n > 0) {
            cJSON_AddItemToObject(fs, "accuracy", stats_json(&gr->schedule_accuracy));
            cJSON_AddItemToObject(fs, "seconds", stats_json(&gr->schedule_seconds));
        } else {
            cJSON_AddNullToObject(fs, "accuracy");
            cJSON_AddNullToObject(fs, "seconds");
        }
        if (gr->priced) {
            cJSON_AddNumberToObject(o, "price_per_hour", f->price_per_hour);
            cJSON_AddItemToObject(o, "cost_to_target", stats_json(&gr->cost));
        } else {
            cJSON_AddNullToObject(o, "price_per_hour");
            cJSON_AddNullToObject(o, "cost_to_target");
        }
        if (gr->energy_measured) cJSON_AddItemToObject(o, "joules_to_target", stats_json(&gr->joules));
        else cJSON_AddNullToObject(o, "joules_to_target");
        if (gr->energy_priced) cJSON_AddItemToObject(o, "energy_cost_to_target", stats_json(&gr->energy_cost));
        else cJSON_AddNullToObject(o, "energy_cost_to_target");
        if (isfinite(gr->utilisation_median)) cJSON_AddNumberToObject(o, "utilisation_median", gr->utilisation_median);
        else cJSON_AddNullToObject(o, "utilisation_median");
        if (isfinite(gr->achieved_gflops_median))
            cJSON_AddNumberToObject(o, "achieved_gflops_median", gr->achieved_gflops_median);
        else cJSON_AddNullToObject(o, "achieved_gflops_median");
        cJSON *th = cJSON_AddArrayToObject(o, "thresholds");
        for (int t = 0; t < gr->nthresholds; t++) {
            cJSON *x = cJSON_CreateObject();
            cJSON_AddNumberToObject(x, "accuracy", gr->thresholds[t]);
            cJSON_AddItemToObject(x, "seconds", stats_json(&gr->threshold_seconds[t]));
            cJSON_AddItemToObject(x, "epochs", stats_json(&gr->threshold_epochs[t]));
            cJSON_AddItemToArray(th, x);
        }
        cJSON_AddItemToArray(gs, o);
    }
    return dbk_results_write_cjson(path, root);
}
