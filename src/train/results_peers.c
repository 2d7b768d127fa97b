/*
 * results_peers.c — the "distributed" object of result.json (docs/distributed.md, "Result
 * files"): the job's ranks and devices, the compression, the bytes on the wire, the time per
 * step split into compute and exchange, and the modelled exchange time on the stated links.
 */
#include "train/results.h"

#include <cjson/cJSON.h>

/* Seconds per step of the whole training (the clock's epochs: the slowest rank's). */
static double train_seconds(const dbk_train_report *r) {
    double t = 0.0;
    for (int i = 0; i < r->epochs_run; i++) t += r->epochs[i].epoch_seconds;
    return t;
}

void dbk_results_add_distributed(void *json_root, const dbk_train_options *opt, const dbk_train_report *r) {
    const dbk_peers_summary *p = &r->peers;
    if (p->ranks < 1) return;
    cJSON *d = cJSON_AddObjectToObject(json_root, "distributed");
    cJSON_AddNumberToObject(d, "ranks", p->ranks);
    cJSON *devs = cJSON_AddArrayToObject(d, "devices");
    for (int i = 0; i < p->ranks && i < DBK_PEERS_MAX_LISTED; i++)
        cJSON_AddItemToArray(devs, cJSON_CreateString(p->devices[i]));
    cJSON_AddNumberToObject(d, "local_batch", opt->recipe.batch);
    cJSON_AddNumberToObject(d, "global_batch", (double)opt->recipe.batch * p->ranks);
    cJSON_AddStringToObject(d, "compress", p->compress);
    cJSON_AddStringToObject(d, "scope", p->layerwise ? "layerwise" : "model");
    cJSON_AddBoolToObject(d, "error_feedback", p->error_feedback);
    cJSON_AddBoolToObject(d, "sync_bn_stats", p->sync_statistics);
    cJSON_AddStringToObject(d, "compression_on", p->compression_on_device ? "device" : "host");
    const double steps = (double)p->steps, per = steps > 0 ? 1.0 / steps : 0.0;
    cJSON_AddNumberToObject(d, "steps", steps);
    cJSON_AddNumberToObject(d, "gradient_values", p->gradient_floats);
    const double dense = p->gradient_floats * 4.0, sent_per_step = p->bytes_sent * per / p->ranks;
    cJSON_AddNumberToObject(d, "dense_bytes_per_step", dense);
    cJSON_AddNumberToObject(d, "bytes_sent", p->bytes_sent);
    cJSON_AddNumberToObject(d, "bytes_per_step", sent_per_step);
    cJSON_AddNumberToObject(d, "bytes_ratio", sent_per_step > 0 ? dense / sent_per_step : 0.0);
    const double step_s = train_seconds(r) * per, exchange_s = p->exchange_seconds * per;
    const double compute_s = step_s > exchange_s ? step_s - exchange_s : 0.0;
    cJSON_AddNumberToObject(d, "seconds_per_step", step_s);
    cJSON_AddNumberToObject(d, "exchange_seconds_per_step", exchange_s);
    cJSON_AddNumberToObject(d, "codec_seconds_per_step", p->codec_seconds * per);
    cJSON_AddNumberToObject(d, "compute_seconds_per_step", compute_s);
    if (p->local_steps > 0) { /* model averaging: per rank, against the dense average and the allreduce */
        cJSON *a = cJSON_AddObjectToObject(d, "averaging");
        const double averages = (double)p->averages, train_steps = (double)p->train_steps;
        const double per_rank = p->bytes_sent / p->ranks, dense_avg = 4.0 * (p->trainable_values + p->statistics_values);
        cJSON_AddNumberToObject(a, "local_steps", p->local_steps);
        cJSON_AddNumberToObject(a, "averages", averages);
        cJSON_AddNumberToObject(a, "train_steps", train_steps);
        cJSON_AddNumberToObject(a, "trainable_values", p->trainable_values);
        cJSON_AddNumberToObject(a, "statistics_values", p->statistics_values);
        cJSON_AddNumberToObject(a, "values_per_average", averages > 0 ? p->averaged_values / p->ranks / averages : 0.0);
        cJSON_AddNumberToObject(a, "bytes_per_average", averages > 0 ? per_rank / averages : 0.0);
        cJSON_AddNumberToObject(a, "bytes_per_step", train_steps > 0 ? per_rank / train_steps : 0.0);
        cJSON_AddNumberToObject(a, "bytes_per_run", per_rank);
        cJSON_AddNumberToObject(a, "dense_average_bytes", dense_avg);
        cJSON_AddNumberToObject(a, "dense_average_bytes_per_run", dense_avg * averages);
        cJSON_AddNumberToObject(a, "allreduce_bytes_per_step", 4.0 * p->trainable_values);
        cJSON_AddNumberToObject(a, "allreduce_bytes_per_run", 4.0 * p->trainable_values * train_steps);
    }
    cJSON *model = cJSON_AddObjectToObject(d, "exchange_model");
    cJSON_AddStringToObject(model, "note", "a model, not a measurement: alpha-beta cost of ring allreduce/allgather "
                                           "of this run's payloads on the stated link, plus the measured compute time");
    cJSON *links = cJSON_AddArrayToObject(model, "links");
    for (int l = 0; l < p->link_count; l++) {
        cJSON *o = cJSON_CreateObject();
        const double x = p->modelled_exchange_seconds[l] * per;
        cJSON_AddNumberToObject(o, "gbps", p->link_gbps[l]);
        cJSON_AddNumberToObject(o, "latency_us", p->link_latency_us[l]);
        cJSON_AddNumberToObject(o, "exchange_seconds_per_step", x);
        cJSON_AddNumberToObject(o, "seconds_per_step", compute_s + x);
        cJSON_AddNumberToObject(o, "train_seconds", (compute_s + x) * steps);
        cJSON_AddItemToArray(links, o);
    }
}
