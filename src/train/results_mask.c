/*
 * results_mask.c — result.json's "sparse_mask" and "checkpoint_diff" objects
 * (docs/sparse-masks.md, docs/formats.md): the mask's method and counts, the time its
 * computations took on the clock, and the small checkpoint's bytes next to model.ckpt's.
 */
#include "train/results.h"

#include <cjson/cJSON.h>

void dbk_results_add_sparse(void *json_root, const dbk_train_options *opt, const dbk_train_report *r) {
    const dbk_mask_report *m = &r->mask;
    if (m->on) {
        cJSON *o = cJSON_AddObjectToObject(json_root, "sparse_mask");
        cJSON_AddStringToObject(o, "mask", m->spec);
        cJSON_AddNumberToObject(o, "keep_fraction", opt->mask.keep);
        cJSON_AddStringToObject(o, "gradient", opt->mask.absolute ? "absolute" : "square");
        cJSON_AddNumberToObject(o, "samples", m->samples);
        cJSON_AddBoolToObject(o, "fixed", opt->mask.fixed);
        cJSON_AddNumberToObject(o, "warmup_epochs", opt->mask.warmup_epochs);
        cJSON_AddNumberToObject(o, "parameters", (double)m->param_count);
        cJSON_AddNumberToObject(o, "classifier_parameters", (double)m->classifier_count);
        cJSON_AddNumberToObject(o, "frozen_parameters", (double)m->frozen_count);
        cJSON_AddNumberToObject(o, "selectable_parameters", (double)m->selectable_count);
        cJSON_AddNumberToObject(o, "kept_parameters", (double)m->keep_count);
        cJSON_AddNumberToObject(o, "selected_parameters", (double)m->select_count);
        cJSON_AddNumberToObject(o, "trained_fraction",
                                m->param_count ? (double)(m->keep_count + m->classifier_count) / (double)m->param_count
                                               : 0.0);
        if (r->peers.ranks > 0) cJSON_AddStringToObject(o, "split", opt->mask.same_for_ranks ? "same" : "interleave");
        cJSON_AddNumberToObject(o, "computations", m->computations);
        cJSON_AddNumberToObject(o, "seconds", m->seconds);
        cJSON_AddNumberToObject(o, "selection_bytes_broadcast", m->mask_bytes);
    }
    if (r->diff_written) {
        cJSON *d = cJSON_AddObjectToObject(json_root, "checkpoint_diff");
        cJSON_AddStringToObject(d, "file", "model.diff");
        cJSON_AddStringToObject(d, "base", r->diff_base);
        char hash[20];
        snprintf(hash, sizeof hash, "%016llx", (unsigned long long)r->diff.base_hash);
        cJSON_AddStringToObject(d, "base_hash", hash);
        cJSON_AddNumberToObject(d, "parameters", (double)r->diff.param_count);
        cJSON_AddNumberToObject(d, "changed_parameters", (double)r->diff.changed);
        cJSON_AddNumberToObject(d, "statistics", (double)r->diff.stat_count);
        cJSON_AddNumberToObject(d, "bytes", r->diff.bytes);
        cJSON_AddNumberToObject(d, "model_ckpt_bytes", r->model_ckpt_bytes);
        cJSON_AddNumberToObject(d, "ratio", r->model_ckpt_bytes > 0 ? r->diff.bytes / r->model_ckpt_bytes : 0.0);
    }
}
