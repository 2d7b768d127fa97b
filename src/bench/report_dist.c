/*
 * report_dist.c — the "Distributed runs" section of the report (see report_dist.h).
 *
 * Scaling efficiency = (training images per second of the N-rank run) / (N x training images
 * per second of the one-process run), both the mean over their epochs; the baseline is the
 * first one-process run in the set with the same recipe and training images (its batch is
 * shown: with the same global batch the comparison is strong scaling, with the same per-rank
 * batch weak scaling).
 */
#include "bench/report_dist.h"

#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "bench/report_text.h"
#include "train/results.h"

static const cJSON *get(const cJSON *o, const char *key) { return cJSON_GetObjectItemCaseSensitive(o, key); }

static double num(const cJSON *o, const char *key) {
    const cJSON *v = get(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0.0;
}

/* The baseline's result.json, or NULL (its row then says n/a); the run set has read it once already. */
static cJSON *load_baseline(const char *dir) {
    cJSON *root;
    return dbk_results_read_json(dir, &root) == DBK_OK ? root : NULL;
}

/* Mean training images per second over the run's epochs (0 when none). */
static double mean_throughput(const cJSON *root) {
    const cJSON *eps = get(root, "epochs"), *e;
    double sum = 0.0;
    int n = 0;
    cJSON_ArrayForEach(e, eps) {
        sum += num(e, "images_per_second");
        n++;
    }
    return n ? sum / n : 0.0;
}

static const dbk_run *baseline_of(const dbk_run_set *set, const dbk_run *r) {
    for (int i = 0; i < set->count; i++) {
        const dbk_run *b = &set->runs[i];
        if (!b->ranks && !strcmp(b->recipe, r->recipe) && b->train_images == r->train_images) return b;
    }
    return NULL;
}

static void row(dbk_strbuf *sb, const dbk_run_set *set, const dbk_run *r, const cJSON *root) {
    const cJSON *d = get(root, "distributed"), *devs = get(d, "devices"), *dev;
    dbk_strbuf_appendf(sb, "| `");
    dbk_report_md_code(sb, r->dir);
    dbk_strbuf_appendf(sb, "` | %d: ", r->ranks);
    int i = 0;
    cJSON_ArrayForEach(dev, devs) {
        dbk_strbuf_appendf(sb, "%s", i++ ? ", " : "");
        dbk_report_md_cell(sb, cJSON_IsString(dev) ? dev->valuestring : "?");
    }
    dbk_strbuf_appendf(sb, " | %.0f x %.0f | ", num(d, "local_batch"), (double)r->ranks);
    dbk_report_md_cell(sb, r->exchange);
    dbk_strbuf_appendf(sb, " | %.2f%% | %.3g MB (1/%.1f) | %.3f (%.3f + %.3f) |", r->epochs ? r->accuracy[r->epochs - 1] : 0.0,
                       num(d, "bytes_per_step") / 1e6, num(d, "bytes_ratio"), num(d, "seconds_per_step"),
                       num(d, "compute_seconds_per_step"), num(d, "exchange_seconds_per_step"));
    const cJSON *link;
    i = 0;
    cJSON_ArrayForEach(link, get(get(d, "exchange_model"), "links"))
        dbk_strbuf_appendf(sb, "%s %g Gb/s %g us: %.3f (%.4f)", i++ ? ";" : "", num(link, "gbps"), num(link, "latency_us"),
                           num(link, "seconds_per_step"), num(link, "exchange_seconds_per_step"));
    const dbk_run *b = baseline_of(set, r);
    cJSON *broot = b ? load_baseline(b->path) : NULL;
    const double tn = mean_throughput(root), t1 = broot ? mean_throughput(broot) : 0.0;
    if (t1 > 0.0 && tn > 0.0) {
        dbk_strbuf_appendf(sb, " | %.0f%% (vs `", 100.0 * tn / (r->ranks * t1));
        dbk_report_md_code(sb, b->dir);
        dbk_strbuf_appendf(sb, "`, batch %.0f) |\n", num(get(broot, "recipe"), "batch"));
    } else {
        dbk_strbuf_appendf(sb, " | n/a (no one-process run of recipe ");
        dbk_report_md_cell(sb, r->recipe);
        dbk_strbuf_appendf(sb, " on %d images in this report) |\n", r->train_images);
    }
    cJSON_Delete(broot);
}

dbk_status dbk_report_distributed(dbk_strbuf *sb, const dbk_run_set *set) {
    bool any = false;
    for (int i = 0; i < set->count; i++) any = any || set->runs[i].ranks > 0;
    if (!any) return DBK_OK;
    dbk_strbuf_appendf(sb, "\n## Distributed runs\n\n| run | ranks: devices | batch (per rank x ranks) | exchange "
                           "| final accuracy | bytes sent per rank per step (dense/sent) | seconds per step (compute + "
                           "exchange), measured | modelled seconds per step (exchange) per link | scaling efficiency |\n"
                           "|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < set->count; i++) {
        const dbk_run *r = &set->runs[i];
        if (!r->ranks) continue;
        cJSON *root;
        dbk_status st = dbk_results_read_json(r->path, &root);
        if (st != DBK_OK) return st;
        if (!cJSON_IsObject(get(root, "distributed"))) {
            cJSON_Delete(root);
            return dbk_set_error(DBK_ERR_FORMAT, "%s/result.json: its \"distributed\" object cannot be read", r->dir);
        }
        row(sb, set, r, root);
        cJSON_Delete(root);
    }
    dbk_strbuf_appendf(sb, "\nThe modelled times are a **model, not a measurement**: the alpha-beta cost of ring "
                           "allreduce (uncompressed) or allgather (compressed payloads) of each run's actual payloads on "
                           "the stated link, added to the measured compute time per step. Measured exchange time on this "
                           "machine is over shared memory and includes the host-side read-back, compression and "
                           "decoding. Scaling efficiency = images/s of the N-rank run / (N x images/s of the one-process "
                           "run).\n");
    return DBK_OK;
}
