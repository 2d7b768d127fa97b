/*
 * cli_dist.c — parsing the distributed options of `daybreak train` (see cli_dist.h).
 */
#include "app/cli_dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/recipe.h"

/* The links of the exchange-time model when --link is not given: a 10 Gb/s Ethernet with
 * TCP-like latency and a 100 Gb/s RDMA fabric (assumed figures, stated in the report). */
static const double default_gbps[2] = {10.0, 100.0}, default_latency_us[2] = {50.0, 5.0};

void dbk_cli_dist_args_init(dbk_cli_dist_args *d) {
    memset(d, 0, sizeof *d);
    d->opt.compress.method = DBK_COMPRESS_NONE;
    d->opt.compress.layerwise = true;
    d->opt.timeout_seconds = 120.0;
    d->opt.link_count = 2;
    for (int i = 0; i < 2; i++) {
        d->opt.link_gbps[i] = default_gbps[i];
        d->opt.link_latency_us[i] = default_latency_us[i];
    }
}

/* GBPS or GBPS@LATENCY_US. */
static bool parse_link(const char *v, double *gbps, double *latency_us) {
    char *end;
    *gbps = strtod(v, &end);
    if (end == v || !(*gbps > 0.0) || *gbps > 1e6) return false;
    *latency_us = 0.0;
    if (*end == '@') {
        const char *l = end + 1;
        *latency_us = strtod(l, &end);
        if (end == l || *latency_us < 0.0 || *latency_us > 1e7) return false;
    }
    return *end == '\0';
}

bool dbk_cli_dist_option(dbk_cli_args *a, dbk_cli_dist_args *d, int *exit_code) {
    const char *v = NULL, *arg = a->argv[a->i];
    int m = 0;
    *exit_code = DBK_EXIT_OK;
#define VALUE(name) ((m = dbk_cli_match(a, name, true, &v)) != 0)
#define FLAG(name) (dbk_cli_match(a, name, false, NULL) > 0)
    if (FLAG("--distributed")) {
        d->distributed = true;
        return true;
    }
    bool bad = false;
    if (VALUE("--compress")) bad = m > 0 && dbk_compress_parse(v, &d->opt.compress) != DBK_OK;
    else if (VALUE("--compress-scope")) bad = m > 0 && dbk_compress_parse_scope(v, &d->opt.compress) != DBK_OK;
    else if (FLAG("--error-feedback")) d->opt.compress.error_feedback = true;
    else if (FLAG("--sync-bn-stats")) d->opt.sync_statistics = true;
    else if (FLAG("--device-per-rank")) d->device_per_rank = true;
    else if (VALUE("--dist-timeout")) bad = m > 0 && !dbk_cli_parse_double(v, 1.0, 86400.0, &d->opt.timeout_seconds);
    else if (VALUE("--local-steps")) {
        long steps = 0;
        bad = m > 0 && !dbk_cli_parse_long(v, 0, 1000000, &steps);
        d->opt.local_steps = (int)steps;
        d->local_steps_given = true;
    }
    else if (VALUE("--link")) {
        if (m > 0) {
            if (!d->links_given) d->opt.link_count = 0;
            d->links_given = true;
            if (d->opt.link_count == DBK_PEERS_MAX_LINKS) {
                *exit_code = dbk_cli_usage_error("train", "at most %d --link options", DBK_PEERS_MAX_LINKS);
                return true;
            }
            const int l = d->opt.link_count++;
            bad = !parse_link(v, &d->opt.link_gbps[l], &d->opt.link_latency_us[l]);
        }
    } else return false;
#undef VALUE
#undef FLAG
    if (!d->first_other) d->first_other = arg;
    if (m < 0) *exit_code = dbk_cli_usage_error("train", "option '%s' needs a value", arg);
    else if (bad) {
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(arg, "="), arg);
        if (!strcmp(name, "--link"))
            *exit_code = dbk_cli_usage_error("train", "bad --link '%s' (GBPS or GBPS@LATENCY_US, e.g. 10@50)", v);
        else if (!strcmp(name, "--dist-timeout"))
            *exit_code = dbk_cli_usage_error("train", "bad --dist-timeout '%s' (seconds, 1..86400)", v);
        else if (!strcmp(name, "--local-steps"))
            *exit_code = dbk_cli_usage_error("train", "bad --local-steps '%s' (training steps between model averages, "
                                             "1..1000000, or 0: a gradient exchange every step)", v);
        else *exit_code = dbk_cli_usage_error("train", "%s", dbk_last_error());
    }
    return true;
}

int dbk_cli_dist_check(const dbk_cli_dist_args *d) {
    if (d->first_other && !d->distributed)
        return dbk_cli_usage_error("train", "'%s' needs --distributed", d->first_other);
    if (d->opt.local_steps > 0 && (d->opt.compress.method != DBK_COMPRESS_NONE || d->opt.compress.error_feedback))
        return dbk_cli_usage_error("train", "--local-steps averages models every few steps and exchanges no gradients: "
                                   "--compress and --error-feedback do not apply");
    if (d->opt.local_steps > 0 && d->opt.sync_statistics)
        return dbk_cli_usage_error("train", "--local-steps averages the batch-norm statistics with the model: "
                                   "--sync-bn-stats does not apply");
    return DBK_EXIT_OK;
}

int dbk_cli_dist_recipe_defaults(dbk_cli_dist_args *d, const char *recipe) {
    const dbk_recipe *r;
    if (!d->local_steps_given && dbk_recipe_find(recipe, &r) == DBK_OK) d->opt.local_steps = r->local_steps;
    return dbk_cli_dist_check(d);
}

int dbk_cli_dist_start(dbk_cli_dist_args *d, uint64_t seed, dbk_dist **out) {
    if (dbk_dist_init(NULL, NULL, out) != DBK_OK) return dbk_cli_fail("--distributed");
    d->opt.seed = seed;
    dbk_dist_configure(*out, &d->opt);
    return DBK_EXIT_OK;
}

void dbk_cli_dist_help(void) {
    printf("\ndata-parallel training (run under mpirun; docs/distributed.md):\n"
           "  --distributed       one rank per process of the MPI job; --batch is each rank's batch\n"
           "                      (global batch = ranks x batch); rank 0 evaluates and writes the files\n"
           "  --device-per-rank   rank r uses device (local rank r) of --backend's kind, modulo its devices\n"
           "  --compress M        gradient exchange: none (allreduce, default), randomk:K, topk:K\n"
           "                      (K a fraction or percentage, e.g. 0.01 or 1%%), threshold:V, terngrad,\n"
           "                      qsgd:Q (Q levels, e.g. 255)\n"
           "  --compress-scope S  layerwise (per parameter tensor, default) or model\n"
           "  --error-feedback    keep what compression left out and add it to the next step\n"
           "  --sync-bn-stats     average batch-norm running statistics over ranks before evaluating\n"
           "  --dist-timeout S    a collective not done in S seconds ends the job (default 120)\n"
           "  --local-steps M     sparse model averaging instead of a gradient exchange every step: each rank\n"
           "                      trains its own copy (its --sparse-mask share) and the copies are averaged\n"
           "                      every M steps, only the masked values sent (docs/sparse-masks.md); 0: the\n"
           "                      gradient exchange (default, except for the fish-distributed recipes)\n"
           "  --link GBPS[@US]    a link of the exchange-time model (repeatable, up to 4; default\n"
           "                      10@50 and 100@5: 10 Gb/s with 50 us latency, 100 Gb/s with 5 us)\n");
}
