/*
 * trainer.c — the epoch loop, the clock, and the stop rule (see trainer.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "train/trainer.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "core/log.h"
#include "core/timer.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "train/energy_clock.h"
#include "train/loss_scaler.h"
#include "train/mlperf_log.h"
#include "train/results.h"
#include "train/resume.h"
#include "train/run_lock.h"
#include "train/session.h"

/* Everything a run holds, released in one place. */
typedef struct run {
    dbk_dataset_info data;
    dbk_dataset  train, test;
    dbk_split_files *train_files;   /* streamed: the training images, decoded by loader */
    dbk_loader  *loader;
    dbk_split_files *test_files;    /* streamed: the validation images, decoded by eval_loader */
    dbk_loader  *eval_loader;
    dbk_backend *be;
    dbk_session *session;
    char         logs_path[4096], json_path[4096], ckpt_path[4096], entry_path[4096], mlperf_path[4096];
    char         base_path[4096], diff_path[4096];   /* --checkpoint-diff: base.ckpt, model.diff */
    dbk_mlperf_log mlperf;
    bool         mlperf_continued;  /* with opt->resume: mlperf.log of the run it continues loaded */
    char         started_at[32];
    dbk_run_lock lock;
    dbk_checkpoint *resume_ckpt;    /* with opt->resume: resume.ckpt, until the state is restored */
    double       resume_clock;      /* with opt->resume: the saved clock */
    int          size_phase;        /* progressive resizing: the phase the session is built for */
    bool         resume_has_scaler; /* with opt->resume: resume.ckpt holds the loss scaler's state */
    dbk_loss_scaler resume_scaler;  /* then that state */
    dbk_run_record resume_record;   /* with opt->resume: what the folder's result.json records */
    char         resume_fingerprint[24]; /* and the data resume.ckpt was trained on ("" unknown) */
    dbk_energy_clock energy;        /* the energy on the clock */
} run;

static void run_release(run *r) {
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

static void progress_bar(int epoch, int step, int steps, double seconds, int batch) {
    const int width = 30;
    int filled = steps ? step * width / steps : width;
    char bar[64];
    for (int i = 0; i < width; i++) bar[i] = i < filled ? '=' : (i == filled ? '>' : ' ');
    bar[width] = '\0';
    double ips = seconds > 0 ? (double)step * batch / seconds : 0.0;
    printf("\r  epoch %3d [%s] %4d/%d  %7.1f img/s", epoch, bar, step, steps, ips);
    fflush(stdout);
}

static dbk_status write_files(run *r, const dbk_train_options *opt, const dbk_train_report *rep) {
    if (!dbk_peers_writes_files(opt->peers)) return DBK_OK;
    DBK_TRY(dbk_results_write_logs_tsv(r->logs_path, rep));
    DBK_TRY(dbk_results_write_dawnbench_entry(r->entry_path, opt, rep, r->started_at));
    DBK_TRY(dbk_mlperf_log_write(&r->mlperf, r->mlperf_path));
    return dbk_results_write_json(r->json_path, opt, rep, r->started_at);
}

/* Whether the ranks average their models every few steps (--local-steps) instead of
 * exchanging gradients every step. */
static bool averaging(const dbk_train_options *opt) { return opt->peers && opt->peers->averaging; }

static dbk_status checkpoint_meta(const dbk_train_options *opt, const dbk_train_report *rep, char *out, size_t cap) {
    const dbk_epoch_record *last = rep->epochs_run ? &rep->epochs[rep->epochs_run - 1] : NULL;
    snprintf(out, cap,
             "{\"recipe\": \"%s\", \"model\": \"%s\", \"seed\": %llu, \"epochs\": %d, \"test_accuracy\": %.2f, "
             "\"mean\": [%.9g, %.9g, %.9g], \"std\": [%.9g, %.9g, %.9g]}",
             opt->recipe.name, opt->recipe.model, (unsigned long long)opt->seed, rep->epochs_run,
             last ? last->test_accuracy : 0.0, (double)opt->recipe.augment.mean[0], (double)opt->recipe.augment.mean[1],
             (double)opt->recipe.augment.mean[2], (double)opt->recipe.augment.std[0],
             (double)opt->recipe.augment.std[1], (double)opt->recipe.augment.std[2]);
    return DBK_OK;
}

/* A streamed dataset's decode threads (data/loader.h) at the current image shape: the
 * training loader and the validation split's, in evaluation batches (the session's
 * eval_batch: the recipe's eval_batch or else its batch, or the whole split when smaller). */
static dbk_status create_loaders(run *r, const dbk_train_options *opt, const dbk_train_report *rep, int phase) {
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
static dbk_status open_loader(run *r, const dbk_train_options *opt, dbk_train_report *rep) {
    DBK_TRY(dbk_dataset_list(&r->data, DBK_DATASET_SPLIT_TRAIN, &r->train_files));
    const int32_t n = dbk_split_files_count(r->train_files);
    rep->train_images = opt->train_limit > 0 && opt->train_limit < n ? opt->train_limit : n;
    DBK_TRY(dbk_dataset_list(&r->data, DBK_DATASET_SPLIT_TEST, &r->test_files));
    const int32_t m = dbk_split_files_count(r->test_files);
    rep->test_images = opt->test_limit > 0 && opt->test_limit < m ? opt->test_limit : m;
    DBK_TRY(create_loaders(r, opt, rep, r->size_phase));
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
static dbk_status create_session(run *r, const dbk_train_options *opt, dbk_train_report *rep) {
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
    dbk_session_set_profiling(r->session, opt->profile);
    rep->param_count = dbk_session_param_count(r->session);
    rep->step_flops = dbk_session_step_flops(r->session);
    rep->steps_per_epoch = dbk_session_steps_per_epoch(r->session);
    rep->activation_bytes = dbk_session_activation_bytes(r->session);
    return DBK_OK;
}

/* The programs run once off the clock (dbk_session_warm_up), and one console line saying how
 * long the builds took (a cold kernel cache on PoCL takes minutes). */
static dbk_status warm_up(run *r, const dbk_train_options *opt, dbk_train_report *rep, bool say) {
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

/* Progressive resizing (recipe size phases): only for image folders, one process, and a model
 * whose parameters do not depend on the image size, refused before anything is allocated. */
static dbk_status check_size_phases(const dbk_train_options *opt, const dbk_dataset_kind *kind) {
    const dbk_recipe *rc = &opt->recipe;
    if (rc->size_phase_count == 0) return DBK_OK;
    if (kind->residency != DBK_DATASET_STREAMED)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "image sizes: dataset %s has fixed images (progressive resizing is "
                             "for image-folder datasets only)", kind->name);
    if (opt->peers)
        return dbk_set_error(DBK_ERR_UNSUPPORTED, "image sizes: progressive resizing with --distributed is not "
                             "supported yet");
    const dbk_model_def *model;
    DBK_TRY(dbk_model_find(rc->model, &model));
    int sizes[DBK_RECIPE_MAX_SIZE_PHASES];
    for (int i = 0; i < rc->size_phase_count; i++) sizes[i] = rc->size_phases[i].size;
    /* Checked before the dataset is read: the classes shape only the last layer, alike at every size. */
    return dbk_model_check_sizes(model, 3, sizes, rc->size_phase_count, 10);
}

/* Says which size the run trains at from the epoch (0-based) epoch0 on. */
static void print_size_phase(const dbk_recipe *rc, int phase, int epoch0, const char *how) {
    char schedule[128];
    dbk_recipe_format_size_phases(rc, schedule, sizeof schedule);
    printf("image size %dx%d from epoch %d (phase %d of %d of %s)%s\n", rc->size_phases[phase].size,
           rc->size_phases[phase].size, epoch0 + 1, phase + 1, rc->size_phase_count, schedule, how);
    fflush(stdout);
}

/* At the first epoch of a size phase: the session and the decode threads rebuilt at the
 * phase's size, with the same parameters, statistics and optimizer state. The old session is
 * destroyed (its activations freed) before the new one allocates. On the clock: it is part of
 * the training, except the new session's program builds (its creation and warm-up), which are
 * off the clock like the first session's. Runs at every phase boundary, even one that keeps
 * the size. */
static dbk_status enter_size_phase(run *r, const dbk_train_options *opt, dbk_train_report *rep, int epoch0,
                                   double *clock) {
    const dbk_recipe *rc = &opt->recipe;
    const int phase = dbk_recipe_size_phase_at(rc, epoch0);
    if (phase == r->size_phase) return DBK_OK;
    dbk_energy_clock_start(&r->energy);
    const double t0 = dbk_time_now(), built0 = rep->builds.session_seconds;
    dbk_session_state *state;
    DBK_TRY(dbk_session_state_take(r->session, &state));
    dbk_session_destroy(r->session);
    r->session = NULL;
    dbk_loader_destroy(r->loader);
    dbk_loader_destroy(r->eval_loader);
    r->loader = r->eval_loader = NULL;
    const bool resized = dbk_dataset_set_image_size(&r->data, rc->size_phases[phase].size);
    DBK_ASSERT(resized); /* check_size_phases: an image-folder dataset */
    dbk_status st = create_loaders(r, opt, rep, phase);
    const double warmed0 = rep->builds.warmup_seconds;
    dbk_energy_clock_stop(&r->energy);   /* the programs' builds are off the clock, their energy too */
    if (st == DBK_OK) st = create_session(r, opt, rep);
    if (st == DBK_OK) st = warm_up(r, opt, rep, false); /* the phase's line says it */
    dbk_energy_clock_start(&r->energy);
    if (st == DBK_OK) st = dbk_session_state_put(r->session, state);
    dbk_session_state_destroy(state);
    DBK_TRY(st);
    r->size_phase = phase;
    const double built = rep->builds.session_seconds - built0 + rep->builds.warmup_seconds - warmed0;
    const double seconds = dbk_time_now() - t0 - built;
    dbk_energy_clock_stop(&r->energy);
    *clock += seconds;
    if (!opt->quiet) {
        char how[96];
        snprintf(how, sizeof how, ": rebuilt in %.2f s on the clock, programs built in %.2f s off it", seconds, built);
        print_size_phase(rc, phase, epoch0, how);
    }
    return DBK_OK;
}

/* A resumed run trains on the data it started with: the same image counts as result.json
 * records and the same fingerprint as resume.ckpt (and result.json) record. */
static dbk_status check_resumed_data(const run *r, const dbk_train_options *opt, const dbk_train_report *rep) {
    const dbk_run_record *rec = &r->resume_record;
    if ((rec->train_images >= 0 && rec->train_images != rep->train_images) ||
        (rec->test_images >= 0 && rec->test_images != rep->test_images))
        return dbk_set_error(DBK_ERR_INVALID_ARG, "%s: the run trained on %.0f images and evaluated %.0f; the data in %s "
                             "now gives %d and %d: resume it with the data it started with", opt->out_dir,
                             rec->train_images, rec->test_images, opt->data_dir, (int)rep->train_images,
                             (int)rep->test_images);
    const char *expected = r->resume_fingerprint[0] ? r->resume_fingerprint : rec->dataset_fingerprint;
    if (expected[0] && strcmp(expected, rep->dataset_fingerprint))
        return dbk_set_error(DBK_ERR_INVALID_ARG, "%s: the data in %s is not the data the run started with (dataset "
                             "fingerprint %s, the run's %s): resume it with the same data", opt->out_dir, opt->data_dir,
                             rep->dataset_fingerprint, expected);
    return DBK_OK;
}

static dbk_status setup(run *r, const dbk_train_options *opt, dbk_train_report *rep) {
    const dbk_recipe *rc = &opt->recipe;
    if (averaging(opt) && rc->lookahead_every > 0) /* it would move parameters outside a rank's share */
        return dbk_set_error(DBK_ERR_UNSUPPORTED, "--local-steps: recipe %s has lookahead, which model averaging does "
                             "not support yet", rc->name);
    DBK_TRY(resolve_precision(opt, rep));
    /* Reading the files is "downloading the data", off the clock as in DAWNBench. */
    const dbk_dataset_kind *kind;
    DBK_TRY(dbk_dataset_kind_find(rc->dataset, &kind));
    DBK_TRY(check_size_phases(opt, kind));
    DBK_TRY(dbk_dataset_open_dir(kind, opt->data_dir, &r->data));
    const bool streamed = kind->residency == DBK_DATASET_STREAMED;
    /* A resumed run starts in the phase of its next epoch. */
    const int first_epoch0 = rep->epochs_run, size = dbk_recipe_image_size_at(rc, first_epoch0);
    r->size_phase = dbk_recipe_size_phase_at(rc, first_epoch0);
    if (size > 0 && !dbk_dataset_set_image_size(&r->data, size))
        return dbk_set_error(DBK_ERR_INVALID_ARG, "image size %d: dataset %s has fixed %dx%d images (the size is a "
                             "choice for image-folder datasets only)", size, kind->name, r->data.shape.height,
                             r->data.shape.width);
    if (r->size_phase >= 0 && !opt->quiet) print_size_phase(rc, r->size_phase, first_epoch0, "");
    if (streamed) DBK_TRY(open_loader(r, opt, rep));
    else DBK_TRY(dbk_dataset_load(&r->data, DBK_DATASET_SPLIT_TRAIN, opt->train_limit, &r->train));
    if (!streamed) {
        DBK_TRY(dbk_dataset_load(&r->data, DBK_DATASET_SPLIT_TEST, opt->test_limit, &r->test));
        rep->train_images = r->train.count;
        rep->test_images = r->test.count;
    }
    uint64_t fingerprint = 0;
    if (streamed) fingerprint = dbk_split_files_fingerprint(dbk_split_files_fingerprint(0, r->train_files), r->test_files);
    else fingerprint = dbk_dataset_fingerprint(dbk_dataset_fingerprint(0, &r->train), &r->test);
    snprintf(rep->dataset_fingerprint, sizeof rep->dataset_fingerprint, "%016llx", (unsigned long long)fingerprint);
    if (opt->resume) DBK_TRY(check_resumed_data(r, opt, rep));
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

    DBK_TRY(create_session(r, opt, rep));
    if (!opt->quiet) dbk_mask_report_print(&rep->mask, &opt->mask, opt->peers ? opt->peers->size : 1, stdout);
    return warm_up(r, opt, rep, true);
}

/* A fresh run: the folder must hold no earlier run. */
static dbk_status check_fresh(run *r, const dbk_train_options *opt) {
    if (access(r->json_path, F_OK) == 0)
        return dbk_set_error(DBK_ERR_IO, "%s already exists; choose another --out or remove it", r->json_path);
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", opt->out_dir, DBK_RESUME_FILE);
    if (access(path, F_OK) == 0)
        return dbk_set_error(DBK_ERR_IO, "%s holds an unfinished run (%s); continue it with --resume %s or remove it",
                             opt->out_dir, DBK_RESUME_FILE, opt->out_dir);
    /* Another run's (or program's) files of the names a run writes are never replaced. */
    const char *const others[] = {r->logs_path, r->ckpt_path, r->entry_path, r->mlperf_path};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        if (access(others[i], F_OK) == 0)
            return dbk_set_error(DBK_ERR_IO, "%s already exists and a run would replace it; choose another --out or "
                                 "remove it", others[i]);
    time_t now = time(NULL);
    struct tm tmv;
    gmtime_r(&now, &tmv);
    strftime(r->started_at, sizeof r->started_at, "%Y-%m-%dT%H:%M:%SZ", &tmv);
    return DBK_OK;
}

/* A resumed run: resume.ckpt read (records into rep, the state kept for prepare), and one
 * line saying how the run it continues ended. */
static dbk_status open_resume(run *r, const dbk_train_options *opt, dbk_train_report *rep) {
    dbk_run_record *rec = &r->resume_record;
    if (dbk_peers_writes_files(opt->peers)) {
        DBK_TRY(dbk_resume_read_record(opt->out_dir, rec));
    } else { /* the other ranks of a distributed run check resume.ckpt only */
        snprintf(rec->status, sizeof rec->status, "running");
        rec->train_images = rec->test_images = -1;
    }
    const char *previous = rec->status;
    dbk_resume_header h;
    DBK_TRY(dbk_resume_read(opt->out_dir, &h, rep, &r->resume_ckpt));
    snprintf(r->resume_fingerprint, sizeof r->resume_fingerprint, "%s", h.dataset_fingerprint);
    dbk_status st = DBK_OK;
    /* resume.ckpt must be the run the folder records: a checkpoint copied in from another run
     * would otherwise train that run on and replace this one's result.json and logs.tsv. */
    if (rec->recipe[0] && (strcmp(rec->recipe, opt->recipe.name) || strcmp(rec->model, opt->recipe.model)))
        st = dbk_set_error(DBK_ERR_INVALID_ARG, "%s/%s continues a run of recipe %s (model %s), but %s/result.json "
                           "records recipe %s (model %s): the checkpoint is not this folder's run; nothing was resumed",
                           opt->out_dir, DBK_RESUME_FILE, opt->recipe.name, opt->recipe.model, opt->out_dir, rec->recipe,
                           rec->model[0] ? rec->model : "?");
    else if (rec->dataset_fingerprint[0] && h.dataset_fingerprint[0] &&
             strcmp(rec->dataset_fingerprint, h.dataset_fingerprint))
        st = dbk_set_error(DBK_ERR_INVALID_ARG, "%s/%s was trained on other data (dataset %s) than %s/result.json records "
                           "(dataset %s): the checkpoint is not this folder's run; nothing was resumed", opt->out_dir,
                           DBK_RESUME_FILE, h.dataset_fingerprint, opt->out_dir, rec->dataset_fingerprint);
    else if (strcmp(h.daybreak_version, DBK_VERSION) != 0)
        st = dbk_set_error(DBK_ERR_INVALID_ARG, "%s/%s was written by daybreak %s; this is daybreak %s", opt->out_dir,
                           DBK_RESUME_FILE, h.daybreak_version, DBK_VERSION);
    else if (h.seed != opt->seed || strcmp(h.backend, dbk_backend_kind_name(opt->backend)) != 0 ||
             (h.device != opt->device && !opt->peers)) /* ranks may each have their own device */
        st = dbk_set_error(DBK_ERR_INVALID_ARG, "%s was run with seed %llu on %s:%d; resume it with the same",
                           opt->out_dir, (unsigned long long)h.seed, h.backend, h.device);
    /* Still "running" (or no result.json yet) while we hold the lock: that run is dead, killed. */
    const bool killed = !strcmp(previous, "running") || !strcmp(previous, "none");
    if (st == DBK_OK && !killed && strcmp(previous, "interrupted") && strcmp(previous, "failed"))
        st = dbk_set_error(DBK_ERR_INVALID_ARG, "%s: the run has finished (status %s); nothing to resume", opt->out_dir,
                           previous);
    if (st == DBK_OK && dbk_peers_writes_files(opt->peers)) st = dbk_mlperf_log_load(&r->mlperf, r->mlperf_path, h.epochs_done);
    if (st == DBK_OK) {
        r->mlperf_continued = !dbk_mlperf_log_is_empty(&r->mlperf);
        snprintf(r->started_at, sizeof r->started_at, "%s", h.started_at);
        r->resume_clock = h.clock_seconds;
        r->resume_has_scaler = h.has_loss_scaler;
        r->resume_scaler = h.loss_scaler;
        printf("resuming %s after epoch %d (clock %.2f s): the run was %s\n", opt->out_dir, h.epochs_done,
               h.clock_seconds, killed ? "killed" : previous);
        fflush(stdout);
    }
    dbk_resume_header_deinit(&h);
    return st;
}

static void run_paths(run *r, const char *dir) {
    snprintf(r->logs_path, sizeof r->logs_path, "%s/logs.tsv", dir);
    snprintf(r->json_path, sizeof r->json_path, "%s/result.json", dir);
    snprintf(r->ckpt_path, sizeof r->ckpt_path, "%s/model.ckpt", dir);
    snprintf(r->entry_path, sizeof r->entry_path, "%s/dawnbench.json", dir);
    snprintf(r->mlperf_path, sizeof r->mlperf_path, "%s/mlperf.log", dir);
    snprintf(r->base_path, sizeof r->base_path, "%s/base.ckpt", dir);
    snprintf(r->diff_path, sizeof r->diff_path, "%s/model.diff", dir);
}

/* The folder, created if needed, and its lock. *created says whether this run made it. */
static dbk_status lock_folder(run *r, const char *dir, const dbk_peers *peers, bool *created) {
    *created = false;
    if (!dbk_peers_writes_files(peers)) return DBK_OK;
    struct stat sb;
    *created = stat(dir, &sb) != 0;
    DBK_TRY(dbk_mkdir_p(dir));
    return dbk_run_lock_acquire(dir, &r->lock);
}

/* The loss scaler's state after an epoch (mixed precision), into the report and the log. */
static void collect_loss_scale(const dbk_session *s, dbk_train_report *rep, int epoch) {
    const dbk_loss_scaler *ls = dbk_session_loss_scaler(s);
    if (!ls) return;
    if (ls->skipped_steps > rep->skipped_steps || epoch == 1)
        dbk_log(DBK_LOG_LEVEL_INFO, "fp16: epoch %d: loss scale %g, %ld step%s skipped for inf/NaN gradients so far",
                epoch, (double)ls->scale, ls->skipped_steps, ls->skipped_steps == 1 ? "" : "s");
    rep->skipped_steps = ls->skipped_steps;
    rep->loss_scale = ls->scale;
}

/* Copies the per-op profile into the report (result.json "profile"). */
static void collect_profile(const dbk_session *s, dbk_train_report *rep) {
    rep->profiled_steps = dbk_session_profiled_steps(s);
    rep->profiled_step_seconds = dbk_session_profiled_step_seconds(s);
    rep->op_count = 0;
    if (!rep->profiled_steps) return;
    int n = dbk_session_profile_op_count(s);
    if (n > DBK_MAX_PROFILE_OPS) n = DBK_MAX_PROFILE_OPS;
    for (int i = 0; i < n; i++) dbk_session_profile_op(s, i, &rep->ops[i]);
    rep->op_count = n;
}

static void print_epoch(const dbk_epoch_record *e, int max_epochs, const dbk_train_report *rep) {
    printf("epoch %3d/%d  loss %.4f  train %6.2f%%  test %6.2f%%", e->epoch, max_epochs, e->train_loss,
           e->train_accuracy, e->test_accuracy);
    if (rep->top5) printf("  top-5 %6.2f%%", e->test_top5);
    printf("  time %7.2fs  clock %8.2fs  %8.1f img/s", e->epoch_seconds, e->clock_seconds, e->images_per_second);
    /* How long the device waited for decoded batches: the host is the bottleneck when large. */
    if (rep->streamed) printf("  loader wait %.2fs  eval wait %.2fs", e->loader_wait_seconds, e->eval_wait_seconds);
    printf("\n");
    fflush(stdout);
}

/* airbench94's lookahead: every lookahead_every steps, and once more with decay 1 after the
 * run's last step. */
static dbk_status lookahead_after(dbk_session *s, const dbk_recipe *rc, long done, long total) {
    if (!dbk_session_has_lookahead(s)) return DBK_OK;
    if (done % rc->lookahead_every == 0) DBK_TRY(dbk_session_lookahead(s, done, total));
    if (done == total) DBK_TRY(dbk_session_lookahead_final(s));
    return DBK_OK;
}

/* A fixed-budget recipe's final evaluation, on the clock (see dbk_final_eval). */
static dbk_status final_evaluation(run *r, const dbk_train_options *opt, dbk_train_report *rep, double *clock) {
    const dbk_recipe *rc = &opt->recipe;
    dbk_epoch_record *e = &rep->epochs[rep->epochs_run - 1];
    dbk_energy_clock_start(&r->energy);
    double start = dbk_time_now();
    dbk_epoch_counters fc = {0};
    if (dbk_peers_evaluates(opt->peers)) DBK_TRY(dbk_session_evaluate_final(r->session, &fc)); /* synchronises */
    dbk_final_eval *f = &rep->final_eval;
    f->done = true;
    f->tta_level = rc->tta_level;
    f->seconds = dbk_time_now() - start;
    dbk_energy_clock_stop(&r->energy);
    DBK_TRY(dbk_peers_share_eval(opt->peers, &fc, &f->seconds));
    f->accuracy = 100.0 * fc.correct / (double)fc.images;
    f->loss = fc.loss_sum / (double)fc.images;
    f->plain_accuracy = e->test_accuracy;
    *clock += f->seconds;
    e->clock_seconds = *clock;
    dbk_energy_clock_record(&r->energy, e);
    e->test_accuracy = f->accuracy;
    e->test_loss = f->loss;
    return DBK_OK;
}

/* resume.ckpt, written by rank 0; in a distributed run every rank takes part (collective):
 * the exchange's counts and every rank's error-feedback residual go into it. */
static dbk_status save_resume(run *r, const dbk_train_options *opt, const dbk_train_report *rep, double clock) {
    if (!opt->peers) return dbk_resume_save(r->session, opt->out_dir, opt, rep, r->started_at, clock, NULL);
    char *meta = NULL;
    float *residuals = NULL;
    int64_t shape[2] = {0, 0};
    dbk_status st = opt->peers->save_state(opt->peers->ctx, &meta, &residuals, shape);
    if (st == DBK_OK && dbk_peers_writes_files(opt->peers)) {
        const dbk_ckpt_tensor t = {.name = "distributed.residuals", .ndim = 2, .shape = {shape[0], shape[1]},
                                   .data = residuals};
        const dbk_resume_peers p = {meta, residuals ? &t : NULL};
        st = dbk_resume_save(r->session, opt->out_dir, opt, rep, r->started_at, clock, &p);
    }
    dbk_free(meta);
    dbk_free(residuals);
    return st;
}

/* Preprocessing, on the clock: the dataset to the device and the model's initial state; or,
 * resuming, the state of resume.ckpt, its time added to the saved clock. A fresh run then
 * saves resume.ckpt for epoch 0 (off the clock), so it can be resumed from its first step. */
static dbk_status prepare(run *r, const dbk_train_options *opt, dbk_train_report *rep, double *clock) {
    dbk_session *s = r->session;
    if (!r->mlperf_continued) {
        dbk_mlperf_log_event(&r->mlperf, DBK_MLPERF_END, "init_stop", 0);
        dbk_mlperf_log_event(&r->mlperf, DBK_MLPERF_START, "run_start", 0);
    }
    dbk_energy_clock_start(&r->energy);
    double t0 = dbk_time_now();
    DBK_TRY(dbk_session_upload_data(s, &r->train, &r->test));
    if (opt->resume) {
        DBK_TRY(dbk_session_load_state(s, r->resume_ckpt, DBK_RESUME_FILE)); /* synchronises the device */
        if (opt->peers) DBK_TRY(opt->peers->restore_state(opt->peers->ctx, r->resume_ckpt, DBK_RESUME_FILE));
        dbk_checkpoint_destroy(r->resume_ckpt); /* its host copy of the state is no longer needed */
        r->resume_ckpt = NULL;
        if (dbk_session_loss_scaler(s) && r->resume_has_scaler) dbk_session_restore_loss_scaler(s, &r->resume_scaler);
        else if (dbk_session_loss_scaler(s))
            dbk_log(DBK_LOG_LEVEL_WARN, "%s holds no loss scale (the run it continues trained in fp32): fp16 starts "
                    "at the initial scale %g", DBK_RESUME_FILE, (double)DBK_LOSS_SCALE_INIT);
        const double restore = dbk_time_now() - t0;
        dbk_energy_clock_stop(&r->energy);
        rep->resumed++;
        rep->resume_seconds += restore;
        *clock = r->resume_clock + restore;
        return DBK_OK;
    }
    DBK_TRY(dbk_session_init_params(s, opt->seed));
    DBK_TRY(dbk_session_init_from_data(s, &r->train));
    if (opt->base) DBK_TRY(dbk_session_start_from(s, opt->base));
    DBK_TRY(dbk_backend_sync(r->be));
    *clock = rep->preprocess_seconds = dbk_time_now() - t0;
    dbk_energy_clock_stop(&r->energy);
    DBK_TRY(dbk_peers_slowest(opt->peers, clock, "preprocessing time"));
    rep->preprocess_seconds = *clock;
    if (opt->checkpoint_diff && !opt->base && dbk_peers_writes_files(opt->peers)) { /* the difference's base */
        char meta[1024];
        DBK_TRY(checkpoint_meta(opt, rep, meta, sizeof meta));
        DBK_TRY(dbk_session_save(s, r->base_path, meta));
    }
    DBK_TRY(save_resume(r, opt, rep, *clock));
    return write_files(r, opt, rep);
}

/* *stopped: the signal that stops the run here, agreed by every rank (0: go on). */
static dbk_status stop_requested(const dbk_train_options *opt, int *stopped) {
    *stopped = opt->stop_signal ? (int)*opt->stop_signal : 0;
    return dbk_peers_agree_stop(opt->peers, stopped);
}

/* Trains one epoch's steps into e (train loss, accuracy, time, lr). *stopped is the signal
 * that ended it early (the record is then incomplete), 0 otherwise. */
static dbk_status train_epoch(run *r, const dbk_train_options *opt, dbk_train_report *rep, dbk_epoch_record *e,
                              long total_steps, double *clock, int *stopped) {
    const dbk_recipe *rc = &opt->recipe;
    dbk_session *s = r->session;
    const int steps = dbk_session_steps_per_epoch(s);
    double start = dbk_time_now();
    const long first_step = (long)(e->epoch - 1) * steps;
    const int epoch_steps = total_steps - first_step < steps ? (int)(total_steps - first_step) : steps;
    dbk_energy_clock_start(&r->energy);
    dbk_mlperf_log_event(&r->mlperf, DBK_MLPERF_START, "epoch_start", e->epoch);
    DBK_TRY(dbk_session_begin_epoch(s, e->epoch, opt->seed));
    DBK_TRY(dbk_mask_begin_epoch(s, &opt->mask, opt->peers, opt->seed, e->epoch, &rep->mask)); /* on the clock */
    if (r->loader) DBK_TRY(dbk_loader_begin_epoch(r->loader, e->epoch));
    for (int step = 0; step < epoch_steps; step++) {
        DBK_TRY(stop_requested(opt, stopped));
        if (*stopped) return dbk_backend_sync(r->be);
        if (r->loader) { /* the next decoded batch; the threads are already on the ones after it */
            dbk_loader_batch b;
            DBK_TRY(dbk_loader_next(r->loader, &b));
            DBK_ASSERT(b.count == rc->batch);
            DBK_TRY(dbk_session_upload_batch(s, b.images, b.labels));
        }
        e->lr_end = dbk_recipe_lr_at_step(rc, first_step + step, steps, total_steps);
        DBK_TRY(dbk_session_train_step(s, step, e->lr_end));
        if (averaging(opt)) DBK_TRY(opt->peers->after_step(opt->peers->ctx, s, first_step + step + 1, total_steps));
        DBK_TRY(lookahead_after(s, rc, first_step + step + 1, total_steps));
        if (opt->progress) progress_bar(e->epoch, step + 1, epoch_steps, dbk_time_now() - start, rc->batch);
    }
    dbk_epoch_counters tc;
    DBK_TRY(dbk_session_end_epoch(s, &tc)); /* synchronises the device */
    /* An asynchronous device lets the loop above enqueue the whole epoch in a moment and wait
     * here: a signal that came during that wait stops the run now, before the evaluation, and
     * the epoch is dropped as one stopped between steps is. */
    DBK_TRY(stop_requested(opt, stopped));
    if (*stopped) return DBK_OK;
    e->epoch_seconds = dbk_time_now() - start;
    dbk_energy_clock_stop(&r->energy);
    DBK_TRY(dbk_peers_combine_epoch(opt->peers, &tc, &e->epoch_seconds)); /* all ranks: the slowest's time */
    dbk_mlperf_log_event(&r->mlperf, DBK_MLPERF_END, "epoch_stop", e->epoch);
    *clock += e->epoch_seconds;
    e->clock_seconds = *clock;
    dbk_energy_clock_record(&r->energy, e);
    e->images_per_second = (double)tc.images / e->epoch_seconds;
    e->flops = dbk_session_steps_flops(s, first_step, epoch_steps);
    e->train_loss = tc.loss_sum / (double)tc.images;
    e->train_accuracy = 100.0 * tc.correct / (double)tc.images;
    if (r->loader) {
        dbk_loader_stats ls;
        dbk_loader_get_stats(r->loader, &ls);
        e->loader_wait_seconds = ls.wait_seconds;
        e->decode_seconds = ls.decode_seconds;
    }
    if (opt->progress) printf("\r%*s\r", 79, "");
    return DBK_OK;
}

/* The test set after an epoch: off the clock (DAWNBench), on it with --clock mlperf. */
static dbk_status evaluate_epoch(run *r, const dbk_train_options *opt, dbk_epoch_record *e, double *clock) {
    dbk_mlperf_log_event(&r->mlperf, DBK_MLPERF_START, "eval_start", e->epoch);
    if (opt->clock == DBK_CLOCK_MLPERF) dbk_energy_clock_start(&r->energy);
    double eval_start = dbk_time_now();
    dbk_epoch_counters ec = {0};
    if (opt->peers) DBK_TRY(opt->peers->before_eval(opt->peers->ctx, r->session));
    if (dbk_peers_evaluates(opt->peers)) DBK_TRY(dbk_session_evaluate(r->session, &ec));
    if (averaging(opt)) DBK_TRY(opt->peers->after_eval(opt->peers->ctx, r->session));
    e->eval_seconds = dbk_time_now() - eval_start;
    dbk_energy_clock_stop(&r->energy);   /* nothing to stop on the DAWNBench clock */
    if (r->eval_loader) {
        dbk_loader_stats ls;
        dbk_loader_get_stats(r->eval_loader, &ls);
        e->eval_wait_seconds = ls.wait_seconds;
        e->decode_seconds += ls.decode_seconds;
    }
    DBK_TRY(dbk_peers_share_eval(opt->peers, &ec, &e->eval_seconds));
    e->test_loss = ec.loss_sum / (double)ec.images;
    e->test_accuracy = 100.0 * ec.correct / (double)ec.images;
    e->test_top5 = 100.0 * ec.correct5 / (double)ec.images;
    dbk_mlperf_log_event(&r->mlperf, DBK_MLPERF_END, "eval_stop", e->epoch);
    dbk_mlperf_log_accuracy(&r->mlperf, e->epoch, e->test_accuracy);
    if (opt->clock == DBK_CLOCK_MLPERF) {
        *clock += e->eval_seconds;
        e->clock_seconds = *clock;
        dbk_energy_clock_record(&r->energy, e);
    }
    return DBK_OK;
}

static dbk_status diverged(const dbk_epoch_record *e) {
    return dbk_set_error(DBK_ERR_DIVERGED,
                         "training diverged: the %s loss is %s in epoch %d (learning rate %.4g); "
                         "try a lower learning rate or another seed",
                         isfinite(e->train_loss) ? "test" : "training",
                         isnan(isfinite(e->train_loss) ? e->test_loss : e->train_loss) ? "NaN" : "infinite", e->epoch,
                         (double)e->lr_end);
}

/* model.diff: the saved model as its difference from the base (--base, or base.ckpt), with its
 * bytes next to model.ckpt's on the console and in the report. */
static dbk_status save_diff(run *r, const dbk_train_options *opt, dbk_train_report *rep, const char *meta) {
    const char *base = opt->base ? opt->base : r->base_path;
    DBK_TRY(dbk_session_save_diff(r->session, base, r->diff_path, meta, &rep->diff));
    struct stat sb;
    rep->model_ckpt_bytes = stat(r->ckpt_path, &sb) == 0 ? (double)sb.st_size : 0.0;
    rep->diff_written = true;
    snprintf(rep->diff_base, sizeof rep->diff_base, "%s", base);
    if (!opt->quiet)
        printf("small checkpoint %s: %.0f bytes, %llu of %llu parameters changed (%.3f%%) against %s; model.ckpt "
               "%.0f bytes (%.2f%% of it)\n", r->diff_path, rep->diff.bytes, (unsigned long long)rep->diff.changed,
               (unsigned long long)rep->diff.param_count,
               100.0 * (double)rep->diff.changed / (double)(rep->diff.param_count ? rep->diff.param_count : 1), base,
               rep->model_ckpt_bytes, rep->model_ckpt_bytes > 0 ? 100.0 * rep->diff.bytes / rep->model_ckpt_bytes : 0.0);
    return DBK_OK;
}

/* The run's end: final files, the model, and no resume.ckpt (nothing is left to resume). */
static dbk_status finish(run *r, const dbk_train_options *opt, dbk_train_report *rep) {
    DBK_TRY(write_files(r, opt, rep));
    if (dbk_peers_writes_files(opt->peers)) dbk_resume_remove(opt->out_dir);
    if (rep->status == DBK_RUN_DIVERGED) return DBK_OK;
    if (opt->profile) dbk_session_print_profile(r->session, stdout);
    /* Model averaging: the model saved is the last average, the one the last evaluation saw. */
    if (averaging(opt)) DBK_TRY(opt->peers->before_eval(opt->peers->ctx, r->session));
    if (!dbk_peers_writes_files(opt->peers)) return DBK_OK;
    char meta[1024];
    DBK_TRY(checkpoint_meta(opt, rep, meta, sizeof meta));
    DBK_TRY(dbk_session_save(r->session, r->ckpt_path, meta));
    if (!opt->checkpoint_diff) return DBK_OK;
    DBK_TRY(save_diff(r, opt, rep, meta));
    return write_files(r, opt, rep); /* result.json with the difference's bytes */
}

/* The whole schedule ran: its accuracy (the final evaluation's, now in e) and its clock. */
static void record_schedule(dbk_train_report *rep, const dbk_epoch_record *e, long total_steps, int epochs,
                            double clock) {
    rep->schedule = (dbk_schedule_result){.completed = true, .epochs = epochs, .steps = total_steps,
                                          .accuracy = e->test_accuracy, .top5 = e->test_top5, .seconds = clock};
}

static dbk_status train_loop(run *r, const dbk_train_options *opt, dbk_train_report *rep) {
    const dbk_recipe *rc = &opt->recipe;
    double clock;
    DBK_TRY(prepare(r, opt, rep, &clock));

    if (averaging(opt)) DBK_TRY(opt->peers->average_now(opt->peers->ctx, r->session)); /* the first "average" */
    const int steps = dbk_session_steps_per_epoch(r->session);
    const long total_steps = dbk_recipe_total_steps(rc, steps);
    const int epochs = (int)((total_steps + steps - 1) / steps);
    rep->schedule.epochs = epochs;
    rep->schedule.steps = total_steps;
    for (int epoch = rep->epochs_run + 1; epoch <= epochs && epoch <= DBK_MAX_EPOCHS; epoch++) {
        dbk_epoch_record *e = &rep->epochs[epoch - 1];
        memset(e, 0, sizeof *e);
        e->epoch = epoch;
        DBK_TRY(enter_size_phase(r, opt, rep, epoch - 1, &clock));
        DBK_TRY(train_epoch(r, opt, rep, e, total_steps, &clock, &rep->stop_signal));
        if (rep->stop_signal) { /* the epoch in progress is dropped; resume.ckpt holds the last one */
            rep->status = DBK_RUN_INTERRUPTED;
            dbk_mlperf_log_run_stop(&r->mlperf, false);
            return write_files(r, opt, rep);
        }
        DBK_TRY(evaluate_epoch(r, opt, e, &clock));
        if (opt->peers) DBK_TRY(opt->peers->summarise(opt->peers->ctx, &rep->peers));
        rep->epochs_run = epoch;
        if (opt->profile) collect_profile(r->session, rep);
        dbk_session_step_costs(r->session, &rep->step_costs);
        collect_loss_scale(r->session, rep, epoch);
        if (!opt->quiet) print_epoch(e, epochs, rep);

        bool last = epoch == epochs;
        if (rc->fixed_budget && last && isfinite(e->train_loss) && isfinite(e->test_loss)) {
            dbk_mlperf_log_event(&r->mlperf, DBK_MLPERF_START, "eval_start", epoch);
            DBK_TRY(final_evaluation(r, opt, rep, &clock));
            dbk_mlperf_log_event(&r->mlperf, DBK_MLPERF_END, "eval_stop", epoch);
            dbk_mlperf_log_accuracy(&r->mlperf, epoch, e->test_accuracy);
            if (!opt->quiet && rc->tta_select.fraction > 0.0f)
                printf("final evaluation (test-time augmentation level %d for the %.0f%% least confident images, on the "
                       "clock): test %6.2f%%  time %7.2fs  clock %8.2fs\n", rc->tta_level,
                       100.0 * (double)rc->tta_select.fraction, e->test_accuracy, rep->final_eval.seconds, clock);
            else if (!opt->quiet)
                printf("final evaluation (test-time augmentation level %d, on the clock): test %6.2f%%  time %7.2fs  "
                       "clock %8.2fs\n", rc->tta_level, e->test_accuracy, rep->final_eval.seconds, clock);
        }
        /* Non-finite logits give a non-finite loss (and count as wrong, op_list.h ACCURACY): the
         * run ends as diverged, whichever evaluation (per epoch or the final one) saw them. */
        if (!isfinite(e->train_loss) || !isfinite(e->test_loss)) {
            rep->status = DBK_RUN_DIVERGED;
            diverged(e);
            snprintf(rep->end_reason, sizeof rep->end_reason, "%s", dbk_last_error());
            dbk_mlperf_log_run_stop(&r->mlperf, false);
            DBK_TRY(finish(r, opt, rep));
            return diverged(e);
        }
        /* A fixed budget is judged by its final evaluation only. */
        const double judged = rc->target_top5 ? e->test_top5 : e->test_accuracy;
        if (rep->epochs_to_target == 0 && (!rc->fixed_budget || last) &&
            dbk_results_hundredths(judged) >= dbk_results_hundredths(rc->target)) {
            rep->epochs_to_target = epoch;
            rep->seconds_to_target = clock;
        }
        bool reached = rep->epochs_to_target > 0;
        if (last) record_schedule(rep, e, total_steps, epochs, clock);
        if (last || (reached && !opt->all_epochs)) {
            rep->status = reached ? DBK_RUN_REACHED : DBK_RUN_NOT_REACHED;
            dbk_mlperf_log_run_stop(&r->mlperf, reached);
            return finish(r, opt, rep);
        }
        /* resume.ckpt first: whatever the other files say, it holds this epoch or the last. */
        DBK_TRY(save_resume(r, opt, rep, clock));
        DBK_TRY(write_files(r, opt, rep));
    }
    return DBK_OK;
}

dbk_status dbk_train_run(const dbk_train_options *opt, dbk_train_report *rep) {
    run r;
    memset(&r, 0, sizeof r);
    r.lock.fd = -1;
    dbk_mlperf_log_init(&r.mlperf);
    memset(rep, 0, sizeof *rep);
    rep->status = DBK_RUN_FAILED;
    run_paths(&r, opt->out_dir);
    bool created = false;
    dbk_status st = lock_folder(&r, opt->out_dir, opt->peers, &created);
    if (st != DBK_OK) return st; /* another run's folder: touch nothing */
    if (opt->resume) st = open_resume(&r, opt, rep); /* every rank of a distributed job reads resume.ckpt */
    else st = dbk_peers_writes_files(opt->peers) ? check_fresh(&r, opt) : DBK_OK;
    if (st == DBK_OK) st = setup(&r, opt, rep);
    if (st != DBK_OK && !opt->resume && dbk_peers_writes_files(opt->peers)) {
        /* A run that cannot start (data, device, memory) leaves no folder behind. */
        dbk_run_lock_discard(&r.lock, opt->out_dir);
        if (created) rmdir(opt->out_dir);
    }
    if (st == DBK_OK) {
        rep->status = DBK_RUN_RUNNING;
        st = train_loop(&r, opt, rep);
        if (st != DBK_OK && st != DBK_ERR_DIVERGED) {
            /* Keep the record of the epochs that completed, marked failed (not "running"). */
            char reason[1024];
            snprintf(reason, sizeof reason, "%s", dbk_last_error());
            snprintf(rep->end_reason, sizeof rep->end_reason, "%.500s", reason);
            rep->status = DBK_RUN_FAILED;
            dbk_mlperf_log_run_stop(&r.mlperf, false);
            write_files(&r, opt, rep);
            dbk_set_error(st, "%s", reason);
        }
    }
    if (opt->peers) opt->peers->detach(opt->peers->ctx); /* its device buffers, before the backend goes */
    run_release(&r);
    if (dbk_peers_writes_files(opt->peers)) dbk_run_lock_release(&r.lock);
    return st;
}
