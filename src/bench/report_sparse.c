/*
 * report_sparse.c — the "Sparse masks and small checkpoints" section of the report (see
 * report_sparse.h).
 */
#include "bench/report_sparse.h"

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

static const char *str(const cJSON *o, const char *key) {
    const cJSON *v = get(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static void row(dbk_strbuf *sb, const dbk_run *r, const cJSON *root) {
    const cJSON *m = get(root, "sparse_mask"), *d = get(root, "checkpoint_diff");
    const cJSON *avg = get(get(root, "distributed"), "averaging");
    dbk_strbuf_appendf(sb, "| `");
    dbk_report_md_code(sb, r->dir);
    dbk_strbuf_appendf(sb, "` | ");
    if (cJSON_IsObject(m)) {
        dbk_report_md_cell(sb, str(m, "mask"));
        dbk_strbuf_appendf(sb, "%s%s | %.3f%% | %.0f (%.1f s) | ", cJSON_IsTrue(get(m, "fixed")) ? " fixed" : "",
                           num(m, "warmup_epochs") > 0 ? ", dense warm-up" : "", 100.0 * num(m, "trained_fraction"),
                           num(m, "computations"), num(m, "seconds"));
    } else dbk_strbuf_appendf(sb, "all | 100%% | - | ");
    dbk_strbuf_appendf(sb, "%.2f%% | ", r->epochs ? r->accuracy[r->epochs - 1] : 0.0);
    if (cJSON_IsObject(d))
        dbk_strbuf_appendf(sb, "%.0f of %.0f: %.0f B (%.2f%% of %.0f B) | ", num(d, "changed_parameters"),
                           num(d, "parameters"), num(d, "bytes"), 100.0 * num(d, "ratio"), num(d, "model_ckpt_bytes"));
    else dbk_strbuf_appendf(sb, "- | ");
    if (cJSON_IsObject(avg))
        dbk_strbuf_appendf(sb, "%d ranks, every %.0f steps: %.0f averages of %.0f B; %.3g MB per run (dense average %.3g "
                           "MB, allreduce %.3g MB) |\n", r->ranks, num(avg, "local_steps"), num(avg, "averages"),
                           num(avg, "bytes_per_average"), num(avg, "bytes_per_run") / 1e6,
                           num(avg, "dense_average_bytes_per_run") / 1e6, num(avg, "allreduce_bytes_per_run") / 1e6);
    else dbk_strbuf_appendf(sb, "- |\n");
}

dbk_status dbk_report_sparse(dbk_strbuf *sb, const dbk_run_set *set) {
    bool header = false;
    for (int i = 0; i < set->count; i++) {
        const dbk_run *r = &set->runs[i];
        cJSON *root;
        DBK_TRY(dbk_results_read_json(r->path, &root));
        if (!cJSON_IsObject(get(root, "sparse_mask")) && !cJSON_IsObject(get(root, "checkpoint_diff"))) {
            cJSON_Delete(root);
            continue;
        }
        if (!header)
            dbk_strbuf_appendf(sb, "\n## Sparse masks and small checkpoints\n\n| run | mask | trained | mask "
                                   "computations (seconds, on the clock) | final accuracy | model.diff: changed "
                                   "parameters, bytes (of model.ckpt) | model averaging, bytes per rank |\n"
                                   "|---|---|---|---|---|---|---|\n");
        header = true;
        row(sb, r, root);
        cJSON_Delete(root);
    }
    if (header)
        dbk_strbuf_appendf(sb, "\nA sparse mask trains the named share of the parameters (the classifier included) and "
                               "leaves the others exactly as they started; model.diff holds the changed ones against "
                               "the run's base (docs/sparse-masks.md).\n");
    return DBK_OK;
}
