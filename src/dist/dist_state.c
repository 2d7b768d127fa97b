/*
 * dist_state.c — what a distributed run keeps in resume.ckpt besides the session's state
 * (train/resume.h, train/peers.h): the metadata object "distributed" and, with error
 * feedback, every rank's residual.
 *
 * Every rank holds the same parameters, momentum and (after an evaluation with
 * --sync-bn-stats) batch-norm statistics, which rank 0's session state saves; what differs
 * between ranks is the error-feedback residual (what the rank's compression left out), so
 * rank 0 gathers all of them into one tensor "distributed.residuals" (ranks, n), and on
 * resume each rank takes its own row. The exchanges done (the step count that seeds random-k,
 * TernGrad and QSGD draws) and the summary's counts continue from the saved values, so a
 * resumed run draws and reports as the uninterrupted one.
 */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/alloc.h"
#include "dist/dist_impl.h"
#include "train/checkpoint.h"

#define RESIDUALS "distributed.residuals"

/* This rank's residual (packed_count floats) into out. */
static dbk_status read_residual(dbk_dist *d, float *out) {
    if (d->device) return dbk_device_compressor_read_residual(d->device, out);
    memcpy(out, dbk_compressor_residual(d->compressor), d->packed_count * sizeof *out);
    return DBK_OK;
}

static dbk_status write_residual(dbk_dist *d, const float *in) {
    if (d->device) return dbk_device_compressor_write_residual(d->device, in);
    memcpy(dbk_compressor_residual(d->compressor), in, d->packed_count * sizeof *in);
    return DBK_OK;
}

dbk_status dbk_dist_save_state(void *ctx, char **meta_json, float **residuals, int64_t shape[2]) {
    dbk_dist *d = ctx;
    *meta_json = NULL;
    *residuals = NULL;
    dbk_peers_summary s;
    DBK_TRY(dbk_dist_summarise(d, &s));
    enum { CAP = 1024 };
    char *m = dbk_malloc(CAP);
    if (!m) return DBK_ERR_OUT_OF_HOST_MEMORY;
    int len = snprintf(m, CAP, "{\"ranks\":%d,\"compress\":\"%s\",\"steps\":%ld,\"bytes_sent\":%.17g,"
                       "\"exchange_seconds\":%.17g,\"codec_seconds\":%.17g,\"modelled_exchange_seconds\":[",
                       d->size, s.compress, s.steps, s.bytes_sent, s.exchange_seconds, s.codec_seconds);
    for (int l = 0; l < s.link_count; l++)
        len += snprintf(m + len, CAP - (size_t)len, "%s%.17g", l ? "," : "", s.modelled_exchange_seconds[l]);
    snprintf(m + len, CAP - (size_t)len, "]}");
    *meta_json = m;
    if (!d->opt.compress.error_feedback || d->opt.compress.method == DBK_COMPRESS_NONE) return DBK_OK;
    const size_t n = d->packed_count;
    if (n * sizeof(float) > (size_t)2147483647)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "a residual of %zu values: more than one MPI message holds", n);
    float *mine = dbk_malloc((n ? n : 1) * sizeof *mine), *all = dbk_malloc((n ? n : 1) * (size_t)d->size * sizeof *all);
    dbk_status st = mine && all ? read_residual(d, mine) : DBK_ERR_OUT_OF_HOST_MEMORY;
    if (st == DBK_OK) st = dbk_dist_allgather(d, mine, (int)(n * sizeof *mine), all, "error-feedback residuals");
    dbk_free(mine);
    if (st != DBK_OK || d->rank != 0) {
        dbk_free(all);
        return st;
    }
    shape[0] = d->size;
    shape[1] = (int64_t)n;
    *residuals = all;
    return DBK_OK;
}

static double number(const cJSON *o, const char *key, const char **bad) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsNumber(v)) return v->valuedouble;
    if (!*bad) *bad = key;
    return 0.0;
}

/* The saved counts into the summary: rank 0 carries the sums over the ranks (summarise adds
 * the others' counts of the resumed part to them), every rank the step count and the model. */
static dbk_status restore_counts(dbk_dist *d, const cJSON *o, const char *path) {
    const char *bad = NULL;
    const int ranks = (int)number(o, "ranks", &bad);
    const long steps = (long)number(o, "steps", &bad);
    const double bytes = number(o, "bytes_sent", &bad), exchange = number(o, "exchange_seconds", &bad),
                 codec = number(o, "codec_seconds", &bad);
    const cJSON *links = cJSON_GetObjectItemCaseSensitive(o, "modelled_exchange_seconds");
    if (!bad && cJSON_GetArraySize(links) != d->summary.link_count) bad = "modelled_exchange_seconds";
    if (bad) return dbk_set_error(DBK_ERR_FORMAT, "%s: field distributed.%s is missing or malformed", path, bad);
    if (ranks != d->size)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "%s was written by a job of %d ranks; resume it with mpirun -np %d "
                             "(this job has %d)", path, ranks, ranks, d->size);
    d->step = d->summary.steps = steps;
    d->summary.bytes_sent = d->rank == 0 ? bytes : 0.0;
    d->summary.exchange_seconds = d->rank == 0 ? exchange * d->size : 0.0;
    d->summary.codec_seconds = d->rank == 0 ? codec * d->size : 0.0;
    for (int l = 0; l < d->summary.link_count; l++)
        d->summary.modelled_exchange_seconds[l] = cJSON_GetArrayItem(links, l)->valuedouble;
    return DBK_OK;
}

dbk_status dbk_dist_restore_state(void *ctx, const dbk_checkpoint *ckpt, const char *path) {
    dbk_dist *d = ctx;
    if (d->opt.local_steps > 0)
        return dbk_set_error(DBK_ERR_UNSUPPORTED, "%s: resuming a run with --local-steps (model averaging) is not "
                             "supported yet: each rank's parameters and momentum since the last average are not saved",
                             path);
    cJSON *meta = cJSON_Parse(dbk_checkpoint_meta(ckpt));
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(meta, "distributed");
    dbk_status st = cJSON_IsObject(o) ? restore_counts(d, o, path)
                                      : dbk_set_error(DBK_ERR_INVALID_ARG, "%s was not written by a distributed run; "
                                                      "resume it without --distributed", path);
    cJSON_Delete(meta);
    DBK_TRY(st);
    if (!d->opt.compress.error_feedback || d->opt.compress.method == DBK_COMPRESS_NONE) return DBK_OK;
    const dbk_ckpt_tensor *t = dbk_checkpoint_find(ckpt, RESIDUALS);
    if (!t || t->ndim != 2 || t->shape[0] != d->size || t->shape[1] != (int64_t)d->packed_count)
        return dbk_set_error(DBK_ERR_FORMAT, "%s: no tensor '%s' of %d x %zu values (the ranks' error-feedback "
                             "residuals)", path, RESIDUALS, d->size, d->packed_count);
    return write_residual(d, t->data + (size_t)d->rank * d->packed_count);
}
