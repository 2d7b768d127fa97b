/*
 * trainer_setup.c — a run before the clock: precision, the data, the device, the session and
 * its warm-up (see trainer_impl.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "train/trainer_impl.h"

#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "core/timer.h"
#include "train/results.h"

void dbk_trainer_release(dbk_trainer_run *r) {
    dbk_energy_clock_close(&r->energy);
    dbk_checkpoint_destroy(r->resume_ckpt);
    dbk_mlperf_log_deinit(&r->mlperf);
    dbk_session_destroy(r->session);
    dbk_backend_destroy(r->be);
    dbk_loader_destroy(r->loader);
    dbk_split_files_destroy(r->train_files);
    dbk_loader_destroy(r->eval_loader);
    dbk_split_files_destroy(r->test_files);
    dbk_dataset_deinit(&r->train);
    dbk_dataset_deinit(&r->test);
    dbk_dataset_info_deinit(&r->data);
}

/* A streamed dataset's decode threads (data/loader.h) at the current image shape: the
 * training loader and the validation split's, in evaluation batches (the session's
 * eval_batch: the recipe's eval_batch or else its batch, or the whole split when smaller). */
dbk_status dbk_trainer_create_loaders(dbk_trainer_run *r, const dbk_train_options *opt, const dbk_train_report *rep,
                                      int phase) {
    const dbk_recipe *rc = &opt->recipe;
    /* progressive resizing: a phase may have its own smallest crop area (imagenet18: 0.5 at 288) */
    const float min_scale = phase >= 0 && rc->size_phases[phase].min_scale > 0.0f ? rc->size_phases[phase].min_scale
                                                                                    : rc->min_scale;
    const dbk_loader_config lc = {.list = r->train_files,
                                  .count = rep->train_images,
                                  .batch = rc->batch,
                                  .height = r->data.shape.height,
                                  .width = r->data.shape.width,
                                  .train = true,
                                  .min_scale = min_scale,
                                  .threads = opt->loader_threads,
                                  .seed = opt->seed,
                                  .shard_count = opt->peers ? opt->peers->size : 1,
                                  .shard_index = opt->peers ? opt->peers->rank : 0};
    DBK_TRY(dbk_loader_create(&lc, &r->loader));
    const int32_t n = rep->test_images, eb = rc->eval_batch > 0 ? rc->eval_batch : rc->batch;
    const dbk_loader_config ec = dbk_loader_eval_config(r->test_files, n, n < eb ? n : eb,
                                                        r->data.shape.height, r->data.shape.width, opt->loader_threads);
    return dbk_loader_create(&ec, &r->eval_loader);
}

/* A streamed dataset: the training and validation lists, and their decode threads. */
static dbk_status open_loader(dbk_trainer_run *r, const dbk_train_options *opt, dbk_train_report *rep) {
    DBK_TRY(dbk_dataset_list(&r->data, DBK_DATASET_SPLIT_TRAIN, &r->train_files));
    const int32_t n = dbk_split_files_count(r->train_files);
    rep->train_images = opt->train_limit > 0 && opt->train_limit < n ? opt->train_limit : n;
    DBK_TRY(dbk_dataset_list(&r->data, DBK_DATASET_SPLIT_TEST, &r->test_files));
    const int32_t m = dbk_split_files_count(r->test_files);
    rep->test_images = opt->test_limit > 0 && opt->test_limit < m ? opt->test_limit : m;
    DBK_TRY(dbk_trainer_create_loaders(r, opt, rep, r->size_phase));
    dbk_loader_stats stats;
    dbk_loader_get_stats(r->loader, &stats);
    rep->loader_threads = stats.threads;
    return DBK_OK;
}

/* --precision against the device's fp16 path, before anything is loaded: fp16 is refused
 * naming the missing feature; auto falls back to fp32 and says why (log and result.json). */
static dbk_status resolve_precision(const dbk_train_options *opt, dbk_train_report *rep) {
    rep->fp16 = false;
    rep->precision_note[0] = '\0';
    if (opt->precision == DBK_PRECISION_FP32) return DBK_OK;
    dbk_device_info info;
    DBK_TRY(dbk_backend_device_info(opt->backend, opt->device, &info));
    const char *backend = dbk_backend_kind_name(opt->backend);
    if (!info.fp16_missing[0]) {
        rep->fp16 = true;
        return DBK_OK;
    }
    if (opt->precision == DBK_PRECISION_FP16)
        return dbk_set_error(DBK_ERR_UNSUPPORTED, "--precision fp16: %s device %d (%s) lacks %s; use --precision fp32 "
                             "or auto", backend, opt->device, info.name, info.fp16_missing);
    snprintf(rep->precision_note, sizeof rep->precision_note, "--precision auto: training in fp32: %s device %d lacks %s",
             backend, opt->device, info.fp16_missing);
    dbk_log(DBK_LOG_LEVEL_WARN, "%s", rep->precision_note);
    return DBK_OK;
}

/* The session at the current image shape, and what the report takes from it. */
dbk_status dbk_trainer_create_session(dbk_trainer_run *r, const dbk_train_options *opt, dbk_train_report *rep) {
    const dbk_recipe *rc = &opt->recipe;
    const bool streamed = rep->streamed;
    const dbk_model_def *model;
    DBK_TRY(dbk_model_find(rc->model, &model));
    dbk_session_config cfg = {
        .recipe = rc,
        .model = model,
        .input = r->data.shape,
        .num_classes = r->data.num_classes,
        .batch = rc->batch,
        .eval_batch = rc->eval_batch > 0 ? rc->eval_batch : rc->batch,
        .train_count = rep->train_images,
        .streamed = streamed,
        .streamed_eval = streamed,
        .top5 = rep->top5,
        .test_count = rep->test_images,
        .shard_count = opt->peers ? opt->peers->size : 1,
        .shard_index = opt->peers ? opt->peers->rank : 0,
        .separate_update = opt->peers != NULL && !opt->peers->averaging,
        .fp16 = rep->fp16,
        .loss_scale_interval = opt->loss_scale_interval,
        .mask = &opt->mask,
        .mask_ranks = opt->peers && opt->peers->averaging && !opt->mask.same_for_ranks ? opt->peers->size : 1,
    };
    const double t0 = dbk_time_now();
    DBK_TRY(dbk_session_create(r->be, &cfg, &r->session));
    rep->builds.session_seconds += dbk_time_now() - t0;
    dbk_mask_report_init(&rep->mask, &opt->mask, r->session);
    if (streamed) dbk_session_set_eval_loader(r->session, r->eval_loader);
    if (opt->peers) { /* the summary from the start: result.json says it is distributed mid-run too */
        DBK_TRY(opt->peers->attach(opt->peers->ctx, r->session, &rep->device));
        DBK_TRY(opt->peers->summarise(opt->peers->ctx, &rep->peers));
    }
    dbk_session_set_op_timing(r->session, opt->profile);
    rep->param_count = dbk_session_param_count(r->session);
    rep->step_flops = dbk_session_step_flops(r->session);
    rep->steps_per_epoch = dbk_session_steps_per_epoch(r->session);
    rep->activation_bytes = dbk_session_activation_bytes(r->session);
    return DBK_OK;
}

/* The programs run once off the clock (dbk_session_warm_up), and one console line saying how
 * long the builds took (a cold kernel cache on PoCL takes minutes). */
dbk_status dbk_trainer_warm_up(dbk_trainer_run *r, const dbk_train_options *opt, dbk_train_report *rep, bool say) {
    double seconds;
    DBK_TRY(dbk_session_warm_up(r->session, &seconds));
    rep->builds.warmup_seconds += seconds;
    const double total = rep->builds.backend_seconds + rep->builds.session_seconds + rep->builds.warmup_seconds;
    if (say && !opt->quiet)
        printf("programs built in %.1f s before the clock started (backend %.1f s, session %.1f s, warm-up %.1f s)\n",
               total, rep->builds.backend_seconds, rep->builds.session_seconds, rep->builds.warmup_seconds);
    fflush(stdout);
    return DBK_OK;
}

dbk_status dbk_trainer_setup(dbk_trainer_run *r, const dbk_train_options *opt, dbk_train_report *rep) {
    const dbk_recipe *rc = &opt->recipe;
    if (dbk_trainer_averaging(opt) && rc->lookahead_every > 0) /* it would move parameters outside a rank's share */
        return dbk_set_error(DBK_ERR_UNSUPPORTED, "--local-steps: recipe %s has lookahead, which model averaging does "
                             "not support yet", rc->name);
    DBK_TRY(resolve_precision(opt, rep));
    /* Reading the files is "downloading the data", off the clock as in DAWNBench. */
    const dbk_dataset_kind *kind;
    DBK_TRY(dbk_dataset_kind_find(rc->dataset, &kind));
    DBK_TRY(dbk_trainer_check_size_phases(opt, kind));
    DBK_TRY(dbk_dataset_open_dir(kind, opt->data_dir, &r->data));
    const bool streamed = kind->residency == DBK_DATASET_STREAMED;
    DBK_TRY(dbk_trainer_first_size_phase(r, opt, rep));
    if (streamed) DBK_TRY(open_loader(r, opt, rep));
    else DBK_TRY(dbk_dataset_load(&r->data, DBK_DATASET_SPLIT_TRAIN, opt->train_limit, &r->train));
    if (!streamed) {
        DBK_TRY(dbk_dataset_load(&r->data, DBK_DATASET_SPLIT_TEST, opt->test_limit, &r->test));
        rep->train_images = r->train.count;
        rep->test_images = r->test.count;
    }
    uint64_t fingerprint = 0;
    if (streamed)
        fingerprint = dbk_split_files_fingerprint(dbk_split_files_fingerprint(0, r->train_files), r->test_files);
    else fingerprint = dbk_dataset_fingerprint(dbk_dataset_fingerprint(0, &r->train), &r->test);
    snprintf(rep->dataset_fingerprint, sizeof rep->dataset_fingerprint, "%016llx", (unsigned long long)fingerprint);
    if (opt->resume) DBK_TRY(dbk_trainer_check_resumed_data(r, opt, rep));
    rep->streamed = streamed;
    rep->top5 = streamed || rc->target_top5;
    rep->train_split_images = r->data.split_count[DBK_DATASET_SPLIT_TRAIN];
    rep->test_split_images = r->data.split_count[DBK_DATASET_SPLIT_TEST];
    rep->subset = rep->train_images < r->data.split_count[DBK_DATASET_SPLIT_TRAIN] ||
                  rep->test_images < r->data.split_count[DBK_DATASET_SPLIT_TEST];

    const double t0 = dbk_time_now();
    DBK_TRY(dbk_backend_create(opt->backend, opt->device, &r->be));
    rep->builds.backend_seconds = dbk_time_now() - t0;
    rep->device = *dbk_backend_get_info(r->be);
    DBK_TRY(dbk_platform_resolve(opt->platform, dbk_backend_kind_name(opt->backend), rep->device.name, &rep->platform));
    dbk_platform_set_prices(&rep->platform, opt->price_per_hour, opt->energy_price_per_kwh);
    dbk_energy_clock_open(&r->energy, opt, rep);
    if (!r->mlperf_continued) dbk_mlperf_log_init_start(&r->mlperf, opt, rep);
    dbk_log(DBK_LOG_LEVEL_INFO, "device: %s %d: %s (%s)", dbk_backend_kind_name(opt->backend), opt->device,
            rep->device.name, rep->device.driver);

    DBK_TRY(dbk_trainer_create_session(r, opt, rep));
    if (!opt->quiet) dbk_mask_report_print(&rep->mask, &opt->mask, opt->peers ? opt->peers->size : 1, stdout);
    return dbk_trainer_warm_up(r, opt, rep, true);
}
