/*
 * results.c — logs.tsv and result.json (see results.h and docs/formats.md).
 */
#include "train/results.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "core/utf8.h"

long dbk_results_hundredths(double percent) {
    char text[64];
    snprintf(text, sizeof text, "%.2f", percent);
    char *dot = strchr(text, '.');
    if (!dot) return 0; /* not finite: below every target */
    *dot = '\0';
    long whole = strtol(text, NULL, 10), frac = strtol(dot + 1, NULL, 10);
    return text[0] == '-' ? whole * 100 - frac : whole * 100 + frac;
}

double dbk_results_best_accuracy(const dbk_train_report *r) {
    double best = 0.0;
    for (int i = 0; i < r->epochs_run; i++)
        if (r->epochs[i].test_accuracy > best) best = r->epochs[i].test_accuracy;
    return best;
}

/* DAWNBench's training thresholds (its tests/test_submissions.py), in hundredths of a percent:
 * CIFAR-10 on top-1, ImageNet on top-5, both on the whole test (validation) set. */
static const struct {
    const char *dataset, *name;
    long        threshold;
    bool        top5;
} dawnbench_thresholds[] = {{"cifar10", "CIFAR-10", 9400, false}, {"imagenet", "ImageNet", 9300, true}};

double dbk_results_best_top5(const dbk_train_report *r) {
    double best = 0.0;
    for (int i = 0; i < r->epochs_run; i++)
        if (r->epochs[i].test_top5 > best) best = r->epochs[i].test_top5;
    return best;
}

static void add_reason(dbk_conformance *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_reason(dbk_conformance *c, const char *fmt, ...) {
    c->conforms = false;
    if (c->reason_count == DBK_RESULTS_MAX_REASONS) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->reasons[c->reason_count++], sizeof c->reasons[0], fmt, ap);
    va_end(ap);
}

/* Index of dataset in dawnbench_thresholds, or -1. */
static int dawnbench_benchmark(const char *dataset) {
    for (int i = 0; i < (int)(sizeof dawnbench_thresholds / sizeof dawnbench_thresholds[0]); i++)
        if (!strcmp(dataset, dawnbench_thresholds[i].dataset)) return i;
    return -1;
}

/* The reason for a best accuracy (hundredths) below benchmark bench's threshold, if it is. */
static void check_threshold(dbk_conformance *c, int bench, long best, const char *what) {
    long bar = dawnbench_thresholds[bench].threshold;
    if (best < bar)
        add_reason(c, "%s %ld.%02ld%% is below DAWNBench's %s threshold %ld.%02ld%%", what, best / 100, best % 100,
                   dawnbench_thresholds[bench].name, bar / 100, bar % 100);
}

void dbk_results_conformance(const dbk_train_options *opt, const dbk_train_report *r, dbk_conformance *c) {
    memset(c, 0, sizeof *c);
    c->conforms = true;
    int bench = dawnbench_benchmark(opt->recipe.dataset);
    if (bench < 0) add_reason(c, "dataset %s is not a DAWNBench training benchmark", opt->recipe.dataset);
    if (r->train_images < r->train_split_images)
        add_reason(c, "trained on %d of the %d training images (--train-subset)", r->train_images,
                   r->train_split_images);
    if (r->test_images < r->test_split_images)
        add_reason(c, "evaluated on %d of the %d test images (--test-subset)", r->test_images, r->test_split_images);
    if (bench >= 0) {
        const bool top5 = dawnbench_thresholds[bench].top5;
        if (top5 && !opt->recipe.target_top5)
            add_reason(c, "the recipe's target is top-1; DAWNBench's %s target is top-5", dawnbench_thresholds[bench].name);
        check_threshold(c, bench, dbk_results_hundredths(top5 ? dbk_results_best_top5(r) : dbk_results_best_accuracy(r)),
                        top5 ? "best test top-5 accuracy" : "best test top-1 accuracy");
    }
    if (opt->clock != DBK_CLOCK_DAWNBENCH)
        add_reason(c, "timed with the %s clock (evaluation on the clock), not DAWNBench's", dbk_clock_mode_name(opt->clock));
}

void dbk_results_inference_conformance(const char *dataset, int images, int split_images, double accuracy,
                                       dbk_conformance *c) {
    memset(c, 0, sizeof *c);
    c->conforms = true;
    int bench = dawnbench_benchmark(dataset);
    if (bench < 0) add_reason(c, "dataset %s is not a DAWNBench inference benchmark", dataset);
    if (images < split_images)
        add_reason(c, "classified %d of the %d test images (--test-subset)", images, split_images);
    if (bench >= 0) check_threshold(c, bench, dbk_results_hundredths(accuracy), "top-1 accuracy");
}

void dbk_results_add_conformance(void *entry, const dbk_conformance *c) {
    cJSON *root = entry;
    if (c->conforms) {
        cJSON_AddStringToObject(root, "version", "v1.0");
        return;
    }
    cJSON_AddBoolToObject(root, "conforms", false);
    cJSON *reasons = cJSON_AddArrayToObject(root, "nonconforming_reasons");
    for (int i = 0; i < c->reason_count; i++) cJSON_AddItemToArray(reasons, cJSON_CreateString(c->reasons[i]));
}

void dbk_conformance_print(FILE *out, const char *file, const dbk_conformance *c) {
    if (c->conforms) return;
    fprintf(out, "%s is not a DAWNBench entry: ", file);
    for (int i = 0; i < c->reason_count; i++) fprintf(out, "%s%s", i ? "; " : "", c->reasons[i]);
    fprintf(out, "\n");
}

void dbk_results_print_conformance(FILE *out, const dbk_train_options *opt, const dbk_train_report *r) {
    dbk_conformance c;
    dbk_results_conformance(opt, r, &c);
    dbk_conformance_print(out, "dawnbench.json", &c);
}

void dbk_results_schedule_note(const dbk_train_report *r, char *out, size_t cap) {
    const dbk_schedule_result *sc = &r->schedule;
    if (sc->completed) {
        out[0] = '\0';
        return;
    }
    const char *what = "has not finished";
    switch (r->status) {
    case DBK_RUN_REACHED:     what = "stopped at its target"; break;
    case DBK_RUN_DIVERGED:    what = "diverged"; break;
    case DBK_RUN_FAILED:      what = "failed"; break;
    case DBK_RUN_INTERRUPTED: what = "was interrupted"; break;
    case DBK_RUN_RUNNING:
    case DBK_RUN_NOT_REACHED: break;
    }
    snprintf(out, cap, "the run %s after epoch %d of %d%s", what, r->epochs_run, sc->epochs,
             r->status == DBK_RUN_REACHED ? " (--all-epochs trains the whole schedule)" : "");
}

void dbk_results_subset_marker(const dbk_train_report *r, char *out, size_t cap) {
    out[0] = '\0';
    if (!r->subset) return;
    snprintf(out, cap,
             "# subset run: trained on %d of %d training images, evaluated on %d of %d test images; not a DAWNBench "
             "result",
             r->train_images, r->train_split_images, r->test_images, r->test_split_images);
}

dbk_status dbk_results_write_logs_tsv(const char *path, const dbk_train_report *r) {
    char marker[256];
    dbk_results_subset_marker(r, marker, sizeof marker);
    size_t cap = sizeof marker + 64 + (size_t)r->epochs_run * 64;
    char *text = dbk_malloc(cap);
    if (!text) return DBK_ERR_OUT_OF_HOST_MEMORY;
    /* ImageNet's DAWNBench log adds top5Accuracy. */
    size_t n = (size_t)snprintf(text, cap, "%s%sepoch\thours\ttop1Accuracy%s\n", marker, marker[0] ? "\n" : "",
                                r->top5 ? "\ttop5Accuracy" : "");
    for (int i = 0; i < r->epochs_run; i++) {
        const dbk_epoch_record *e = &r->epochs[i];
        n += (size_t)snprintf(text + n, cap - n, "%d\t%.8f\t%.2f", e->epoch, e->clock_seconds / 3600.0,
                              e->test_accuracy);
        n += (size_t)snprintf(text + n, cap - n, r->top5 ? "\t%.2f\n" : "\n", e->test_top5);
    }
    dbk_status st = dbk_file_write_atomic(path, text, n);
    dbk_free(text);
    return st;
}

/* What the record recipes' sources added to a recipe: the schedule's kind and arithmetic, Muon, selective
 * TTA, the evaluation batch, the whitening's images and order, the jitter. */
static void add_source_fields(cJSON *o, const dbk_recipe *rc) {
    static const char *const kinds[] = {"knots", "fastai_clr_beta", "fastai_phases"};
    cJSON_AddStringToObject(o, "schedule", kinds[rc->schedule]);
    if (rc->schedule == DBK_SCHEDULE_FASTAI_CLR_BETA) {
        cJSON *c = cJSON_AddObjectToObject(o, "clr");
        cJSON_AddNumberToObject(c, "lr", dbk_results_float_decimal(rc->clr.lr));
        cJSON_AddNumberToObject(c, "div", dbk_results_float_decimal(rc->clr.div));
        cJSON_AddNumberToObject(c, "pct", dbk_results_float_decimal(rc->clr.pct));
        cJSON_AddNumberToObject(c, "momentum_max", dbk_results_float_decimal(rc->clr.mom_max));
        cJSON_AddNumberToObject(c, "momentum_min", dbk_results_float_decimal(rc->clr.mom_min));
    }
    cJSON *ph = cJSON_AddArrayToObject(o, "phases");
    for (int i = 0; i < rc->phase_count; i++) {
        const dbk_fastai_phase *p = &rc->phases[i];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddNumberToObject(x, "epochs", p->epochs);
        cJSON *lr = cJSON_AddArrayToObject(x, "lr"), *mom = cJSON_AddArrayToObject(x, "momentum");
        cJSON_AddItemToArray(lr, cJSON_CreateNumber(p->lr0));
        cJSON_AddItemToArray(lr, cJSON_CreateNumber(p->lr1));
        cJSON_AddItemToArray(mom, cJSON_CreateNumber(p->mom0));
        cJSON_AddItemToArray(mom, cJSON_CreateNumber(p->mom1));
        cJSON_AddItemToArray(ph, x);
    }
    cJSON_AddBoolToObject(o, "lr_at_step_end", rc->lr_at_step_end);
    cJSON_AddBoolToObject(o, "lr_per_step", rc->lr_per_step);
    cJSON_AddNumberToObject(o, "lr_reference_batch", rc->lr_reference_batch);
    cJSON_AddNumberToObject(o, "passes_per_epoch", rc->passes_per_epoch > 1 ? rc->passes_per_epoch : 1);
    cJSON_AddNumberToObject(o, "eval_batch", rc->eval_batch > 0 ? rc->eval_batch : rc->batch);
    cJSON_AddNumberToObject(o, "tta_select_fraction", dbk_results_float_decimal(rc->tta_select.fraction));
    cJSON_AddNumberToObject(o, "whiten_images", rc->whiten_images > 0 ? rc->whiten_images : 5000);
    cJSON_AddBoolToObject(o, "whiten_ascending", rc->whiten_ascending);
    bool muon = false;
    for (int i = 0; i < rc->group_count; i++) muon = muon || rc->groups[i].muon;
    if (!muon) return;
    const dbk_muon_params *m = &rc->muon;
    cJSON *mo = cJSON_AddObjectToObject(o, "muon");
    cJSON_AddNumberToObject(mo, "momentum", dbk_results_float_decimal(m->momentum));
    cJSON_AddBoolToObject(mo, "nesterov", m->nesterov);
    cJSON_AddNumberToObject(mo, "ns_steps", m->ns_steps);
    cJSON *abc = cJSON_AddArrayToObject(mo, "ns_coefficients");
    cJSON_AddItemToArray(abc, cJSON_CreateNumber(dbk_results_float_decimal(m->ns_a)));
    cJSON_AddItemToArray(abc, cJSON_CreateNumber(dbk_results_float_decimal(m->ns_b)));
    cJSON_AddItemToArray(abc, cJSON_CreateNumber(dbk_results_float_decimal(m->ns_c)));
    cJSON_AddNumberToObject(mo, "ns_eps", dbk_results_float_decimal(m->ns_eps));
    cJSON_AddNumberToObject(mo, "ns_target", dbk_results_float_decimal(m->ns_target));
    cJSON_AddNumberToObject(mo, "ns_target_end", dbk_results_float_decimal(m->ns_target_end));
    cJSON_AddNumberToObject(mo, "renorm_every", m->renorm_every);
    cJSON_AddNumberToObject(mo, "renorm_eps", dbk_results_float_decimal(m->renorm_eps));
    cJSON_AddNumberToObject(mo, "weight_decay", dbk_results_float_decimal(m->weight_decay));
}

cJSON *dbk_results_u64_json(uint64_t v) {
    char digits[24];
    snprintf(digits, sizeof digits, "%llu", (unsigned long long)v);
    return cJSON_CreateRaw(digits);
}

double dbk_results_float_decimal(float v) {
    if (!isfinite(v)) return (double)v;
    char text[32];
    for (int digits = 6; digits < 9; digits++) {
        snprintf(text, sizeof text, "%.*g", digits, (double)v);
        if (strtof(text, NULL) == v) return strtod(text, NULL);
    }
    snprintf(text, sizeof text, "%.9g", (double)v);
    return strtod(text, NULL);
}

static cJSON *recipe_json(const dbk_recipe *rc) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", rc->name);
    cJSON_AddStringToObject(o, "model", rc->model);
    cJSON_AddStringToObject(o, "dataset", rc->dataset);
    cJSON_AddNumberToObject(o, "batch", rc->batch);
    cJSON_AddNumberToObject(o, "epochs", rc->epochs);
    cJSON_AddNumberToObject(o, "train_epochs", rc->train_epochs > 0.0f ? dbk_results_float_decimal(rc->train_epochs) : rc->epochs);
    cJSON_AddBoolToObject(o, "lr_knots_in_run", rc->lr_knots_in_run);
    cJSON *knots = cJSON_AddArrayToObject(o, "lr_schedule");
    for (int i = 0; i < rc->lr_knots; i++) {
        cJSON *k = cJSON_CreateArray();
        cJSON_AddItemToArray(k, cJSON_CreateNumber(dbk_results_float_decimal(rc->lr_epochs[i])));
        cJSON_AddItemToArray(k, cJSON_CreateNumber(dbk_results_float_decimal(rc->lr_values[i])));
        cJSON_AddItemToArray(knots, k);
    }
    cJSON_AddStringToObject(o, "optimizer", dbk_optimizer_name(rc->optimizer));
    if (rc->optimizer == DBK_OPTIMIZER_ADAMW) {
        cJSON *betas = cJSON_AddArrayToObject(o, "adam_betas");
        cJSON_AddItemToArray(betas, cJSON_CreateNumber(dbk_results_float_decimal(rc->adam_beta1)));
        cJSON_AddItemToArray(betas, cJSON_CreateNumber(dbk_results_float_decimal(rc->adam_beta2)));
        cJSON_AddNumberToObject(o, "adam_eps", dbk_results_float_decimal(rc->adam_eps));
    }
    cJSON_AddNumberToObject(o, "momentum", dbk_results_float_decimal(rc->momentum));
    cJSON_AddBoolToObject(o, "nesterov", rc->nesterov);
    cJSON_AddNumberToObject(o, "weight_decay", dbk_results_float_decimal(rc->weight_decay));
    cJSON_AddBoolToObject(o, "loss_summed", rc->loss_summed);
    cJSON_AddNumberToObject(o, "label_smoothing", dbk_results_float_decimal(rc->label_smoothing));
    cJSON *groups = cJSON_AddArrayToObject(o, "parameter_groups");
    for (int i = 0; i < rc->group_count; i++) {
        cJSON *g = cJSON_CreateObject();
        cJSON_AddStringToObject(g, "name", rc->groups[i].name);
        cJSON_AddNumberToObject(g, "lr_scale", dbk_results_float_decimal(rc->groups[i].lr_scale));
        cJSON_AddNumberToObject(g, "weight_decay_scale", dbk_results_float_decimal(rc->groups[i].weight_decay_scale));
        cJSON_AddNumberToObject(g, "until_epoch", rc->groups[i].until_epoch);
        cJSON_AddBoolToObject(g, "own_decay", rc->groups[i].own_decay);
        cJSON_AddBoolToObject(g, "muon", rc->groups[i].muon);
        cJSON_AddItemToArray(groups, g);
    }
    if (rc->lookahead_every > 0) {
        cJSON *la = cJSON_AddObjectToObject(o, "lookahead");
        cJSON_AddNumberToObject(la, "every", rc->lookahead_every);
        cJSON_AddNumberToObject(la, "base", dbk_results_float_decimal(rc->lookahead_base));
        cJSON_AddNumberToObject(la, "power", dbk_results_float_decimal(rc->lookahead_power));
    }
    cJSON_AddNumberToObject(o, "tta_level", rc->tta_level);
    cJSON_AddBoolToObject(o, "fixed_budget", rc->fixed_budget);
    if (rc->image_size > 0) cJSON_AddNumberToObject(o, "image_size", rc->image_size);
    if (rc->size_phase_count > 0) {
        char phases[256];
        dbk_recipe_format_size_phases(rc, phases, sizeof phases);
        cJSON_AddStringToObject(o, "image_sizes", phases);
    }
    cJSON_AddNumberToObject(o, "bn_eps", dbk_results_float_decimal(rc->bn.eps));
    cJSON_AddNumberToObject(o, "bn_momentum", dbk_results_float_decimal(rc->bn.momentum));
    cJSON *aug = cJSON_AddObjectToObject(o, "augment");
    cJSON_AddNumberToObject(aug, "pad", rc->augment.pad);
    cJSON_AddBoolToObject(aug, "flip", rc->augment.flip);
    cJSON_AddBoolToObject(aug, "flip_alternating", rc->augment.flip_alternating);
    cJSON_AddNumberToObject(aug, "cutout", rc->augment.cutout);
    cJSON_AddNumberToObject(aug, "brightness", rc->augment.brightness);
    cJSON_AddNumberToObject(aug, "contrast", rc->augment.contrast);
    add_source_fields(o, rc);
    cJSON_AddNumberToObject(o, "target", (double)dbk_results_hundredths(rc->target) / 100.0);
    return o;
}

static void add_number_or_null(cJSON *o, const char *key, double v, bool known) {
    if (known) cJSON_AddNumberToObject(o, key, v);
    else cJSON_AddNullToObject(o, key);
}

/* result.json's "fixed_schedule": airbench's metric, the accuracy and clock time of the whole
 * schedule, or nulls and the reason there are none. */
static void add_fixed_schedule(cJSON *root, const dbk_train_report *r) {
    const dbk_schedule_result *sc = &r->schedule;
    cJSON *o = cJSON_AddObjectToObject(root, "fixed_schedule");
    cJSON_AddBoolToObject(o, "completed", sc->completed);
    cJSON_AddNumberToObject(o, "epochs", sc->epochs);
    cJSON_AddNumberToObject(o, "steps", (double)sc->steps);
    add_number_or_null(o, "test_accuracy", sc->accuracy, sc->completed);
    if (r->top5) add_number_or_null(o, "test_top5_accuracy", sc->top5, sc->completed);
    add_number_or_null(o, "seconds", sc->seconds, sc->completed);
    add_number_or_null(o, "hours", sc->seconds / 3600.0, sc->completed);
    add_number_or_null(o, "cost", sc->seconds / 3600.0 * r->platform.price_per_hour,
                       sc->completed && r->platform.price_per_hour > 0);
    cJSON_AddStringToObject(o, "accuracy_source", r->final_eval.done ? "final evaluation" : "last epoch's evaluation");
    char note[256];
    dbk_results_schedule_note(r, note, sizeof note);
    cJSON_AddStringToObject(o, "note", note);
}

static void add_platform_and_flops(cJSON *root, const dbk_train_report *r) {
    const dbk_platform_info *pl = &r->platform;
    cJSON *p = cJSON_AddObjectToObject(root, "platform");
    cJSON_AddStringToObject(p, "id", pl->id);
    cJSON_AddStringToObject(p, "name", pl->name);
    cJSON_AddStringToObject(p, "selected_by", pl->chosen ? "--platform" : "device name");
    cJSON_AddStringToObject(p, "provider", pl->provider);
    cJSON_AddStringToObject(p, "instance", pl->instance);
    add_number_or_null(p, "price_per_hour", pl->price_per_hour, pl->price_per_hour > 0);
    if (pl->price_per_hour > 0) cJSON_AddStringToObject(p, "price_source", pl->price_source);
    add_number_or_null(p, "peak_fp32_gflops", pl->peak_fp32_gflops, pl->peak_fp32_gflops > 0);
    add_number_or_null(p, "peak_fp16_gflops", pl->peak_fp16_gflops, pl->peak_fp16_gflops > 0);
    add_number_or_null(p, "mem_bandwidth_gbs", pl->mem_bandwidth_gbs, pl->mem_bandwidth_gbs > 0);
    if (pl->mem_bandwidth_gbs > 0) cJSON_AddStringToObject(p, "mem_bandwidth_source", pl->mem_bandwidth_source);
    bool hit = r->epochs_to_target > 0, priced = pl->price_per_hour > 0;
    add_number_or_null(root, "cost_to_target", r->seconds_to_target / 3600.0 * pl->price_per_hour, hit && priced);

    /* Utilisation over the training steps (preprocessing and evaluation excluded). */
    double train_seconds = 0.0;
    for (int i = 0; i < r->epochs_run; i++) train_seconds += r->epochs[i].epoch_seconds;
    double total = 0.0;   /* the steps run, each as the session ran it */
    for (int i = 0; i < r->epochs_run; i++) total += r->epochs[i].flops;
    double achieved = train_seconds > 0 ? total / train_seconds : 0.0;
    cJSON *f = cJSON_AddObjectToObject(root, "flops");
    cJSON_AddNumberToObject(f, "per_step", r->step_flops);
    cJSON_AddNumberToObject(f, "steps_per_epoch", r->steps_per_epoch);
    cJSON_AddNumberToObject(f, "total", total);
    cJSON_AddNumberToObject(f, "train_seconds", train_seconds);
    cJSON_AddNumberToObject(f, "achieved_gflops", achieved * 1e-9);
    add_number_or_null(f, "utilisation", achieved * 1e-9 / pl->peak_fp32_gflops,
                       pl->peak_fp32_gflops > 0 && train_seconds > 0);
}

static void add_profile(cJSON *root, const dbk_train_report *r) {
    if (!r->profiled_steps) return;
    cJSON *p = cJSON_AddObjectToObject(root, "profile");
    cJSON_AddNumberToObject(p, "steps", (double)r->profiled_steps);
    cJSON_AddNumberToObject(p, "step_seconds", r->profiled_step_seconds);
    cJSON *ops = cJSON_AddArrayToObject(p, "ops");
    for (int i = 0; i < r->op_count; i++) {
        const dbk_op_times *op = &r->ops[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "label", op->label);
        cJSON_AddStringToObject(o, "op", op->kind);
        if (op->algorithm[0]) cJSON_AddStringToObject(o, "algorithm", op->algorithm);
        cJSON_AddNumberToObject(o, "flops", op->flops);
        cJSON_AddNumberToObject(o, "bytes", op->bytes);
        cJSON_AddNumberToObject(o, "seconds", op->seconds);
        cJSON_AddNumberToObject(o, "launches", op->launches);
        cJSON_AddItemToArray(ops, o);
    }
}

static void add_step_costs(cJSON *root, const dbk_train_report *r) {
    const dbk_step_costs *c = &r->step_costs;
    if (!c->steps) return;
    cJSON *o = cJSON_AddObjectToObject(root, "step_costs");
    cJSON_AddNumberToObject(o, "steps", (double)c->steps);
    cJSON_AddNumberToObject(o, "launches", c->launches);
    cJSON_AddNumberToObject(o, "syncs", c->syncs);
    cJSON_AddNumberToObject(o, "host_seconds", c->host_seconds);
    cJSON_AddNumberToObject(o, "device_bytes", c->device_bytes);
    cJSON_AddNumberToObject(o, "min_bytes", c->min_bytes);
    cJSON_AddNumberToObject(o, "host_bytes", c->host_bytes);
}

cJSON *dbk_results_epoch_json(const dbk_epoch_record *e) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "epoch", e->epoch);
    cJSON_AddNumberToObject(o, "train_loss", e->train_loss);
    cJSON_AddNumberToObject(o, "train_accuracy", e->train_accuracy);
    cJSON_AddNumberToObject(o, "test_loss", e->test_loss);
    cJSON_AddNumberToObject(o, "test_accuracy", e->test_accuracy);
    cJSON_AddNumberToObject(o, "epoch_seconds", e->epoch_seconds);
    cJSON_AddNumberToObject(o, "clock_seconds", e->clock_seconds);
    cJSON_AddNumberToObject(o, "eval_seconds", e->eval_seconds);
    cJSON_AddNumberToObject(o, "images_per_second", e->images_per_second);
    cJSON_AddNumberToObject(o, "flops", e->flops);
    cJSON_AddNumberToObject(o, "lr_end", dbk_results_float_decimal(e->lr_end));
    cJSON_AddNumberToObject(o, "test_top5_accuracy", e->test_top5);
    cJSON_AddNumberToObject(o, "loader_wait_seconds", e->loader_wait_seconds);
    cJSON_AddNumberToObject(o, "decode_seconds", e->decode_seconds);
    cJSON_AddNumberToObject(o, "eval_wait_seconds", e->eval_wait_seconds);
    if (isfinite(e->clock_joules)) cJSON_AddNumberToObject(o, "clock_joules", e->clock_joules);
    return o;
}

dbk_status dbk_results_write_json(const char *path, const dbk_train_options *opt, const dbk_train_report *r,
                                  const char *started_at) {
    cJSON *root = cJSON_CreateObject();
    if (!root) return DBK_ERR_OUT_OF_HOST_MEMORY;
    cJSON_AddStringToObject(root, "daybreak_version", DBK_VERSION);
    cJSON_AddStringToObject(root, "started_at", started_at);
    cJSON_AddStringToObject(root, "command", opt->command_line ? opt->command_line : "");
    cJSON_AddStringToObject(root, "status", dbk_run_status_name(r->status));
    if (r->status == DBK_RUN_FAILED || r->status == DBK_RUN_DIVERGED)
        cJSON_AddStringToObject(root, "reason", r->end_reason[0] ? r->end_reason : "(not recorded)");
    cJSON_AddItemToObject(root, "recipe", recipe_json(&opt->recipe));
    cJSON_AddStringToObject(root, "model", opt->recipe.model);
    cJSON_AddNumberToObject(root, "parameters", (double)r->param_count);
    cJSON_AddItemToObject(root, "seed", dbk_results_u64_json(opt->seed));
    cJSON_AddNumberToObject(root, "train_images", r->train_images);
    cJSON_AddNumberToObject(root, "test_images", r->test_images);
    cJSON_AddBoolToObject(root, "subset", r->subset);
    cJSON_AddStringToObject(root, "dataset_fingerprint", r->dataset_fingerprint);

    cJSON *dev = cJSON_AddObjectToObject(root, "device");
    cJSON_AddStringToObject(dev, "backend", dbk_backend_kind_name(opt->backend));
    cJSON_AddNumberToObject(dev, "index", opt->device);
    cJSON_AddStringToObject(dev, "name", r->device.name);
    cJSON_AddStringToObject(dev, "vendor", r->device.vendor);
    cJSON_AddStringToObject(dev, "driver", r->device.driver);
    cJSON_AddStringToObject(dev, "api", r->device.api_version);
    cJSON_AddStringToObject(dev, "memory", r->device.memory);

    cJSON *prec = cJSON_AddObjectToObject(root, "precision");
    cJSON_AddStringToObject(prec, "requested", dbk_precision_name(opt->precision));
    cJSON_AddStringToObject(prec, "used", r->fp16 ? "fp16" : "fp32");
    cJSON_AddStringToObject(prec, "note", r->precision_note);
    if (r->fp16) {
        cJSON_AddNumberToObject(prec, "skipped_steps", (double)r->skipped_steps);
        cJSON_AddNumberToObject(prec, "loss_scale", r->loss_scale);
    }
    cJSON_AddNumberToObject(root, "activation_bytes", (double)r->activation_bytes);

    cJSON_AddStringToObject(root, "clock", dbk_clock_mode_name(opt->clock));
    cJSON_AddNumberToObject(root, "preprocess_seconds", r->preprocess_seconds);
    cJSON *builds = cJSON_AddObjectToObject(root, "builds");
    cJSON_AddNumberToObject(builds, "backend_seconds", r->builds.backend_seconds);
    cJSON_AddNumberToObject(builds, "session_seconds", r->builds.session_seconds);
    cJSON_AddNumberToObject(builds, "warmup_seconds", r->builds.warmup_seconds);
    cJSON_AddNumberToObject(builds, "total_seconds",
                            r->builds.backend_seconds + r->builds.session_seconds + r->builds.warmup_seconds);
    cJSON_AddNumberToObject(root, "resumed", r->resumed);
    cJSON_AddNumberToObject(root, "resume_seconds", r->resume_seconds);
    cJSON_AddNumberToObject(root, "target", (double)dbk_results_hundredths(opt->recipe.target) / 100.0);
    cJSON_AddStringToObject(root, "target_metric", opt->recipe.target_top5 ? "top5" : "top1");
    if (r->streamed) {
        cJSON *ld = cJSON_AddObjectToObject(root, "loader");
        cJSON_AddNumberToObject(ld, "threads", r->loader_threads);
        double wait = 0, decode = 0, eval_wait = 0;
        for (int i = 0; i < r->epochs_run; i++) {
            wait += r->epochs[i].loader_wait_seconds;
            decode += r->epochs[i].decode_seconds;
            eval_wait += r->epochs[i].eval_wait_seconds;
        }
        cJSON_AddNumberToObject(ld, "wait_seconds", wait);
        cJSON_AddNumberToObject(ld, "eval_wait_seconds", eval_wait);
        cJSON_AddNumberToObject(ld, "decode_seconds", decode);
    }
    cJSON_AddBoolToObject(root, "target_reached", r->epochs_to_target > 0);
    if (r->epochs_to_target > 0) {
        cJSON_AddNumberToObject(root, "epochs_to_target", r->epochs_to_target);
        cJSON_AddNumberToObject(root, "seconds_to_target", r->seconds_to_target);
        cJSON_AddNumberToObject(root, "hours_to_target", r->seconds_to_target / 3600.0);
    } else {
        cJSON_AddNullToObject(root, "epochs_to_target");
        cJSON_AddNullToObject(root, "seconds_to_target");
        cJSON_AddNullToObject(root, "hours_to_target");
    }
    cJSON_AddNumberToObject(root, "best_test_accuracy", dbk_results_best_accuracy(r));
    cJSON_AddNumberToObject(root, "final_test_accuracy", r->epochs_run ? r->epochs[r->epochs_run - 1].test_accuracy : 0.0);
    if (r->top5) {
        cJSON_AddNumberToObject(root, "best_test_top5_accuracy", dbk_results_best_top5(r));
        cJSON_AddNumberToObject(root, "final_test_top5_accuracy",
                                r->epochs_run ? r->epochs[r->epochs_run - 1].test_top5 : 0.0);
    }
    /* Which evaluation the reported accuracy comes from, and whether it was timed. */
    const dbk_final_eval *fe = &r->final_eval;
    cJSON_AddStringToObject(root, "accuracy_source", fe->done ? "final evaluation" : "per-epoch evaluation");
    if (fe->done) {
        cJSON *f = cJSON_AddObjectToObject(root, "final_evaluation");
        cJSON_AddNumberToObject(f, "tta_level", fe->tta_level);
        cJSON_AddBoolToObject(f, "on_clock", true);
        cJSON_AddNumberToObject(f, "seconds", fe->seconds);
        cJSON_AddNumberToObject(f, "test_accuracy", fe->accuracy);
        cJSON_AddNumberToObject(f, "test_loss", fe->loss);
        cJSON_AddNumberToObject(f, "test_accuracy_without_tta", fe->plain_accuracy);
    }

    add_fixed_schedule(root, r);
    add_platform_and_flops(root, r);
    dbk_results_add_energy(root, r);

    cJSON *eps = cJSON_AddArrayToObject(root, "epochs");
    for (int i = 0; i < r->epochs_run; i++) {
        const dbk_epoch_record *e = &r->epochs[i];
        cJSON *o = dbk_results_epoch_json(e);
        cJSON_AddItemToArray(eps, o);
    }
    add_profile(root, r);
    add_step_costs(root, r);
    dbk_results_add_distributed(root, opt, r);
    dbk_results_add_sparse(root, opt, r);
    return dbk_results_write_cjson(path, root);
}

dbk_status dbk_results_read_json(const char *dir, cJSON **root) {
    *root = NULL;
    char path[4200];
    snprintf(path, sizeof path, "%s/result.json", dir);
    void *data;
    size_t n;
    dbk_status st = dbk_file_read_all(path, &data, &n);
    if (st == DBK_ERR_NOT_FOUND) return dbk_set_error(st, "%s: no result.json (not a daybreak result folder)", dir);
    if (st != DBK_OK) return st;
    cJSON *json = cJSON_ParseWithLength(data, n);
    dbk_free(data);
    if (!cJSON_IsObject(json)) {
        cJSON_Delete(json);
        return dbk_set_error(DBK_ERR_FORMAT, "%s is not valid JSON", path);
    }
    *root = json;
    return DBK_OK;
}

dbk_status dbk_results_write_cjson(const char *path, void *tree) {
    cJSON *root = tree;
    if (!root) return dbk_set_error(DBK_ERR_OUT_OF_HOST_MEMORY, "out of memory building %s", path);
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) return dbk_set_error(DBK_ERR_OUT_OF_HOST_MEMORY, "out of memory formatting %s", path);
    /* cJSON escapes quotes and control characters but copies other bytes as they are. */
    dbk_strbuf sb;
    dbk_strbuf_init(&sb);
    dbk_utf8_append_sanitized(&sb, text, strlen(text));
    cJSON_free(text);
    dbk_strbuf_appendf(&sb, "\n");
    dbk_status st = dbk_strbuf_write_file(&sb, path);
    dbk_strbuf_deinit(&sb);
    return st;
}

void dbk_results_hardware_string(const char *backend, const dbk_device_info *dev, const dbk_platform_info *pl,
                                 char *out, size_t cap) {
    int n = snprintf(out, cap, "%s (%s, %s)", dev->name, backend, dev->driver);
    if (n > 0 && (size_t)n < cap && pl->instance[0])
        snprintf(out + n, cap - (size_t)n, " / %s%s%s", pl->provider, pl->provider[0] ? " " : "", pl->instance);
}

dbk_status dbk_results_write_dawnbench_entry(const char *path, const dbk_train_options *opt, const dbk_train_report *r,
                                             const char *started_at) {
    cJSON *root = cJSON_CreateObject();
    if (!root) return DBK_ERR_OUT_OF_HOST_MEMORY;
    char buf[1024];
    dbk_conformance c;
    dbk_results_conformance(opt, r, &c);
    dbk_results_add_conformance(root, &c);
    cJSON_AddStringToObject(root, "author", opt->author && *opt->author ? opt->author : "daybreak");
    cJSON_AddStringToObject(root, "authorEmail", opt->author_email ? opt->author_email : "");
    snprintf(buf, sizeof buf, "daybreak %s (%s backend)", DBK_VERSION, dbk_backend_kind_name(opt->backend));
    cJSON_AddStringToObject(root, "framework", buf);
    snprintf(buf, sizeof buf, "%s (recipe %s)", opt->recipe.model, opt->recipe.name);
    cJSON_AddStringToObject(root, "model", buf);
    dbk_results_hardware_string(dbk_backend_kind_name(opt->backend), &r->device, &r->platform, buf, sizeof buf);
    cJSON_AddStringToObject(root, "hardware", buf);
    if (r->platform.price_per_hour > 0) cJSON_AddNumberToObject(root, "costPerHour", r->platform.price_per_hour);
    snprintf(buf, sizeof buf, "%.10s", started_at); /* YYYY-MM-DD of the ISO time */
    cJSON_AddStringToObject(root, "timestamp", buf);
    cJSON_AddStringToObject(root, "logFilename", "logs.tsv");

    cJSON *misc = cJSON_AddObjectToObject(root, "misc");
    cJSON_AddStringToObject(misc, "daybreakVersion", DBK_VERSION);
    cJSON_AddStringToObject(misc, "commandLine", opt->command_line ? opt->command_line : "");
    cJSON_AddStringToObject(misc, "startedAt", started_at);
    cJSON_AddStringToObject(misc, "status", dbk_run_status_name(r->status));
    cJSON_AddStringToObject(misc, "clock", dbk_clock_mode_name(opt->clock));
    cJSON_AddStringToObject(misc, "backend", dbk_backend_kind_name(opt->backend));
    cJSON_AddStringToObject(misc, "device", r->device.name);
    cJSON_AddStringToObject(misc, "driver", r->device.driver);
    cJSON_AddStringToObject(misc, "platform", r->platform.id);
    cJSON_AddNumberToObject(misc, "seed", (double)opt->seed);
    cJSON_AddNumberToObject(misc, "trainImages", r->train_images);
    cJSON_AddNumberToObject(misc, "testImages", r->test_images);
    cJSON_AddBoolToObject(misc, "subset", r->subset);
    cJSON_AddNumberToObject(misc, "target", (double)dbk_results_hundredths(opt->recipe.target) / 100.0);
    cJSON_AddStringToObject(misc, "targetMetric", opt->recipe.target_top5 ? "top5Accuracy" : "top1Accuracy");
    cJSON_AddBoolToObject(misc, "targetReached", r->epochs_to_target > 0);
    bool hit = r->epochs_to_target > 0;
    add_number_or_null(misc, "epochsToTarget", r->epochs_to_target, hit);
    add_number_or_null(misc, "hoursToTarget", r->seconds_to_target / 3600.0, hit);
    add_number_or_null(misc, "costToTarget", r->seconds_to_target / 3600.0 * r->platform.price_per_hour,
                       hit && r->platform.price_per_hour > 0);
    const dbk_schedule_result *sc = &r->schedule; /* airbench's metric: the whole schedule's accuracy and time */
    add_number_or_null(misc, "fixedScheduleAccuracy", sc->accuracy, sc->completed);
    add_number_or_null(misc, "fixedScheduleHours", sc->seconds / 3600.0, sc->completed);
    return dbk_results_write_cjson(path, root);
}
