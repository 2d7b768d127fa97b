/*
 * infer.h — DAWNBench inference latency: classify the test images one at a time with a
 * trained checkpoint and time it.
 *
 * latency = (time to classify all N test images, one image per batch, the device waited for
 * after each image) / N, in milliseconds. A resident dataset's test set (CIFAR-10) is copied
 * to the device before the clock starts (as in training, where it lives on the device); an
 * image folder's validation split is streamed through decode threads as in training (labels
 * int32, so any number of classes), each image copied to the device inside the timing, and the
 * time spent waiting for the decode threads is left out of the latency (reported as the
 * loader wait). Each image is normalised, run through the model with batch-norm running
 * statistics, and scored on the device. The checkpoint's metadata names the model and recipe
 * (dataset, normalisation). The programs run once before the timing (dbk_session_warm_up), so
 * the drivers' lazy compilation is not in the first image's latency.
 *
 * The DAWNBench inference entry (written by dbk_infer_write_entry): version "v1.0" when it
 * conforms (dbk_results_inference_conformance: the whole test set, the benchmark's accuracy
 * threshold reached), otherwise "conforms": false and "nonconforming_reasons"; author,
 * authorEmail, framework, model, hardware, latency (ms), cost (USD per image, null when the
 * profile has no price), top1Accuracy (percent), timestamp "YYYY-MM-DD", misc.
 */
#ifndef DBK_INFER_H
#define DBK_INFER_H

#include "backend/backend.h"
#include "data/dataset.h"
#include "models/models.h"
#include "train/platform.h"
#include "train/recipe.h"
#include "train/results.h"

typedef struct dbk_infer_result {
    char            model[64], recipe[64], dataset[32];
    dbk_backend_kind backend;
    int             device_index;
    dbk_device_info device;
    int             images;
    int             split_images;   /* the dataset's whole test split */
    double          accuracy;       /* top-1, percent */
    double          seconds;        /* all images, without the loader wait */
    double          latency_ms;     /* seconds / images, in ms */
    bool            streamed;       /* an image folder, decoded by loader threads */
    double          loader_wait_seconds; /* streamed: the wait for decoded images, not in seconds */
    double          warmup_seconds; /* every program run once before the timing, off it */
} dbk_infer_result;

/* The recipe and model a checkpoint's metadata names (the recipe gives the dataset and the
 * normalisation). DBK_ERR_FORMAT naming the checkpoint when either is unknown. */
dbk_status dbk_infer_checkpoint(const char *checkpoint, const dbk_recipe **recipe, const dbk_model_def **model);

/* One evaluation of a checkpoint on its dataset's test split: what `daybreak infer` times and
 * `daybreak eval` prints. */
typedef struct dbk_infer_eval_config {
    dbk_backend_kind        kind;
    int                     index;
    const char             *checkpoint;
    const char             *diff;       /* a small checkpoint applied to checkpoint, its base (NULL: none) */
    const dbk_dataset_info *data;       /* the checkpoint recipe's dataset, opened (dbk_dataset_open) */
    int                     test_limit; /* 0: the whole test split */
    int                     batch;      /* images per batch (an image folder's decode threads too) */
    /* DAWNBench inference: the programs run once first (dbk_session_warm_up), the device is
     * waited for after each batch, and the evaluation is timed. */
    bool                    latency;
    bool                    tta;        /* also the recipe's test-time augmentation, when it has one */
} dbk_infer_eval_config;

typedef struct dbk_infer_evaluation {
    const dbk_recipe    *recipe;        /* what the checkpoint's metadata names */
    const dbk_model_def *model;
    dbk_device_info      device;
    bool                 streamed;      /* an image folder, decoded by loader threads */
    bool                 evaluated;     /* plain holds a finite evaluation */
    dbk_epoch_counters   plain;         /* the test split with the evaluation view */
    bool                 tta_done;      /* tta holds a finite evaluation with test-time augmentation */
    dbk_epoch_counters   tta;
    double               seconds;       /* the plain evaluation's time, without the loader wait */
    double               loader_wait_seconds; /* streamed: the wait for decoded images */
    double               warmup_seconds;      /* latency: the programs' one run before it */
} dbk_infer_evaluation;

/* Loads the checkpoint (and diff) into a session on the device and evaluates it: the plain
 * evaluation, then with cfg->tta the recipe's test-time augmentation. DBK_ERR_DIVERGED when an
 * evaluation's outputs are not finite (out says which ran). */
dbk_status dbk_infer_evaluate(const dbk_infer_eval_config *cfg, dbk_infer_evaluation *out);

/* data: the checkpoint recipe's dataset, opened (dbk_dataset_open). test_limit 0 = the whole
 * test split. diff: a small checkpoint applied to checkpoint, its base (NULL: none).
 * DBK_ERR_DIVERGED when the model's outputs are not finite (no accuracy). */
dbk_status dbk_infer_run(dbk_backend_kind kind, int index, const char *checkpoint, const char *diff,
                         const dbk_dataset_info *data, int test_limit, dbk_infer_result *out);

/* Whether r is a DAWNBench inference entry, and why not. */
void dbk_infer_conformance(const dbk_infer_result *r, dbk_conformance *c);

/* Whether the file at path is an inference entry daybreak wrote (so `infer --out` may replace
 * it): a JSON object with "latency", "top1Accuracy" and misc.daybreakVersion. */
bool dbk_infer_is_entry(const char *path);

/* Writes the inference entry atomically. author/author_email NULL give "daybreak" and "". */
dbk_status dbk_infer_write_entry(const char *path, const char *checkpoint, const dbk_infer_result *r,
                                 const dbk_platform_info *pl, const char *author, const char *author_email);

#endif
