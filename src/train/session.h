/*
 * session.h — a model, its data and its optimizer living on one backend: the device-side
 * half of training.
 *
 * dbk_session_create plans every buffer from the model and recipe (plan, then allocate),
 * allocates them, records the fixed op sequences of a training step and of an evaluation
 * batch, and lets the backend prepare each op. After that nothing is allocated:
 *   train step  = augment, forward, loss, accuracy, loss backward, backward, SGD update
 *   eval batch  = normalise, forward (batch norm with running stats), accuracy, loss
 * Per-step values (learning rate, augmentation seed and offset) are a few bytes written to a
 * small device buffer; loss and accuracy counters stay on the device until read once per
 * epoch (DESIGN.md decision 4).
 */
#ifndef DBK_SESSION_H
#define DBK_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "backend/backend.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "models/models.h"
#include "train/recipe.h"

typedef struct dbk_session dbk_session;

typedef struct dbk_session_config {
    const dbk_recipe     *recipe;
    const dbk_model_def  *model;
    dbk_image_shape       input;       /* the dataset's image shape (C, H, W) */
    int                   num_classes; /* the dataset's classes */
    int                   batch;       /* training batch */
    int                   eval_batch;  /* evaluation batch (<= batch keeps the arena shared) */
    int32_t               train_count; /* images in the training set (0 = inference only) */
    bool                  streamed;    /* the training batches come from the host every step
                                          (dbk_session_upload_batch, data/loader.h), already
                                          cropped and flipped; the device holds one batch, not
                                          the training set */
    bool                  streamed_eval; /* the test set comes from the host batch by batch
                                          (dbk_session_set_eval_loader: the decode threads'
                                          evaluation view, labels i32); the device holds one
                                          evaluation batch, not the test set */
    bool                  top5;        /* evaluation also counts top-5 hits, on the device
                                          (DBK_OP_ACCURACY with k 5; ties as op_list.h says) */
    int32_t               test_count;  /* images in the test set */
    size_t                max_activation_buffer; /* bytes; 0 = the device's largest allocation */
    /* Data-parallel training (train/peers.h): rank shard_index of shard_count trains on rows
     * shard_index*batch.. of every global batch of shard_count*batch rows; separate_update
     * records the optimizer update as its own program so the exchange can run between. */
    int                   shard_count;  /* 0 or 1: one process */
    int                   shard_index;
    bool                  separate_update;
    /* Mixed precision (--precision fp16): the graphs' fp16 mode (nn/graph.h) with dynamic loss
     * scaling (train/loss_scaler.h): each step waits for its gradients' inf/NaN check and runs
     * the update only when they are clean. Needs the device's fp16 path (fp16_missing ""). */
    bool                  fp16;
    int                   loss_scale_interval;   /* clean steps before S doubles; 0: the default */
    /* Sparse masks (train/sparse_mask.h; NULL or method ALL: every parameter trains): the
     * optimizer leaves a parameter whose mask is 0 as it is; a Fisher mask builds a batch-1
     * program whose gradients accumulate into the importance (dbk_session_fisher_select). The
     * session keeps a copy. Not with fp16 or a streamed dataset (refused). */
    const struct dbk_mask_spec *mask;
    int                   mask_ranks;  /* ranks sharing out one selection (model averaging with
                                          interleaved masks); 0 or 1: one mask for all */
} dbk_session_config;

typedef struct dbk_epoch_counters {
    double loss_sum;    /* summed training loss over the epoch */
    double correct;     /* correct top-1 predictions */
    double correct5;    /* labels among the 5 largest logits (evaluation with config top5) */
    int64_t images;     /* images seen */
} dbk_epoch_counters;

/* Plans, allocates and records. Borrowed: be, recipe, model (must outlive the session). */
dbk_status dbk_session_create(dbk_backend *be, const dbk_session_config *cfg, dbk_session **out);
void       dbk_session_destroy(dbk_session *s);                 /* accepts NULL */

/* Bytes of device memory the session allocated (for logs and out-of-memory hints). */
uint64_t dbk_session_device_bytes(const dbk_session *s);
/* Buffers the activations were placed in (nn/memplan.h: at most the device's largest
 * allocation, or the config's max_activation_buffer, each). */
int      dbk_session_activation_buffers(const dbk_session *s);
size_t   dbk_session_activation_bytes(const dbk_session *s);   /* their bytes, all together */
size_t   dbk_session_param_count(const dbk_session *s);
int      dbk_session_steps_per_epoch(const dbk_session *s);    /* full batches only (drop_last) */
/* Mixed precision (config fp16): the dynamic loss scale and the steps it skipped; NULL in fp32. */
const struct dbk_loss_scaler *dbk_session_loss_scaler(const dbk_session *s);
/* Resuming in mixed precision: S, the clean steps since it last changed, the skipped steps
 * and growths as saved (resume.ckpt); the growth interval stays the session's. */
void dbk_session_restore_loss_scaler(dbk_session *s, const struct dbk_loss_scaler *saved);

/* Copies the u8 datasets to the device (preprocessing; on the DAWNBench clock). Their image
 * shape and counts must be the config's. test is not read with config streamed_eval. */
dbk_status dbk_session_upload_data(dbk_session *s, const dbk_dataset *train, const dbk_dataset *test);

/* A streamed session's next training batch (config streamed): batch images u8 (batch, C, H, W)
 * and their labels, each in [0, num_classes). Written before the step that trains on it; the
 * writes are ordered with the device's work, so the previous step is not disturbed. */
dbk_status dbk_session_upload_batch(dbk_session *s, const uint8_t *images, const int32_t *labels);

/* Initialises parameters (PyTorch defaults: kaiming-uniform conv/linear, BN 1/0), running
 * statistics and momentum from the seed. */
dbk_status dbk_session_init_params(dbk_session *s, uint64_t seed);

/* The initialisations computed from the training images (host copy, as uploaded): the patch
 * whitening of DBK_PARAM_INIT_WHITEN weights (train/whiten.h). Run after init_params; a
 * model without such weights needs nothing. On the clock, as airbench times it. */
dbk_status dbk_session_init_from_data(dbk_session *s, const dbk_dataset *train);

/* Runs every recorded program once (training step, separate update, evaluation batches,
 * test-time augmentation, lookahead) with the real shapes and waits, so the driver's lazy
 * compilation (PoCL's per-kernel builds, CLBlast's kernels, pipelines finished at first use)
 * happens before the clock starts. Call it on a new session, before the data upload and the
 * state's initialisation: it touches no dataset (label buffers zeroed, parameters from seed 0)
 * and leaves the datasets and the training state undefined for the caller to write.
 * *seconds (may be NULL): its wall time. */
dbk_status dbk_session_warm_up(dbk_session *s, double *seconds);

/* Shuffles the training set for the epoch (host permutation, one upload) and zeroes the
 * on-device counters. */
dbk_status dbk_session_begin_epoch(dbk_session *s, int epoch, uint64_t seed);   /* epoch: 1, 2, ... */

/* Enqueues one training step (step < steps_per_epoch) with learning rate lr (per-sample
 * scale as in the recipe; the session applies loss_summed). Reads nothing back, except in
 * mixed precision (config fp16): the step then waits for its gradients' inf/NaN flag and
 * skips the update on overflow (dbk_session_loss_scaler). */
dbk_status dbk_session_train_step(dbk_session *s, int step, float lr);

/* Waits for the device and reads the epoch's counters (images: those of the steps run, which
 * the last epoch of a fractional budget may cut short). */
dbk_status dbk_session_end_epoch(dbk_session *s, dbk_epoch_counters *out);

/* With config streamed_eval: the evaluation loader (borrowed; it must outlive the session's
 * evaluations), whose batches of eval_batch rows (the last one shorter) are the test set.
 * Each evaluation starts a new pass of it (dbk_loader_begin_epoch), so its statistics after
 * an evaluation are that evaluation's (the loader wait of the evaluation). */
void dbk_session_set_eval_loader(dbk_session *s, dbk_loader *loader);

/* Evaluates the whole test set; returns correct count and summed loss. */
dbk_status dbk_session_evaluate(dbk_session *s, dbk_epoch_counters *out);

/* DBK_ERR_DIVERGED when an evaluation's mean loss is NaN or infinite: the model's logits were
 * not finite (ACCURACY counts such rows as wrong), so no accuracy may be reported. The message
 * names `model` (e.g. the checkpoint's path) and the loss. */
dbk_status dbk_session_check_evaluation(const dbk_epoch_counters *c, const char *model);

/* The recipe's final evaluation: with its test-time augmentation (the weighted logits of every
 * view, dbk_tta_views) when it has one, else the same as dbk_session_evaluate. */
dbk_status dbk_session_evaluate_final(dbk_session *s, dbk_epoch_counters *out);

/* Lookahead (recipe lookahead_every > 0): after run_step of run_steps training steps, moves
 * the averages of every parameter and statistic towards the live values with the recipe's
 * decay and copies them back; the final one uses decay 1 (the live values become the
 * averages: airbench's last update). Enqueues; reads nothing back. */
bool       dbk_session_has_lookahead(const dbk_session *s);
dbk_status dbk_session_lookahead(dbk_session *s, long run_step, long run_steps);
dbk_status dbk_session_lookahead_final(dbk_session *s);               /* decay 1 */

/* --- sparse masks (config mask; train/sparse_mask.h, docs/sparse-masks.md) ---------------- */

struct dbk_mask_layout;
struct dbk_mask_pick;
/* The mask's layout (selectable ranges, kept counts); NULL without a mask. */
const struct dbk_mask_layout *dbk_session_mask_layout(const dbk_session *s);
/* Every parameter trains (the mask all ones): warm-up epochs. Enqueues. */
dbk_status dbk_session_mask_dense(dbk_session *s);
/* Fisher masks: the importance (empirical Fisher information) summed over `samples` single
 * images (rows 0.. of the current epoch's shuffle, at most the training set; augmented as in
 * training with `seed`), then the `count` most important selectable parameters selected, all on
 * the device (DBK_OP_FISHER_ACCUMULATE, DBK_OP_SPARSE_SELECT). Enqueues; the model's running
 * statistics are not changed. */
dbk_status dbk_session_fisher_select(dbk_session *s, int samples, uint32_t seed, size_t count);
/* The mask from that selection: every selected parameter, the classifier, nothing else. */
dbk_status dbk_session_mask_from_selection(dbk_session *s);
/* The selection to the host: count (of fisher_select) picks of packed index and importance. */
dbk_status dbk_session_read_selection(dbk_session *s, struct dbk_mask_pick *picks);
/* The mask from n packed indices given by the host (a random mask, a rank's share). */
dbk_status dbk_session_mask_from_indices(dbk_session *s, const int32_t *indices, size_t n);
/* The mask and the importance to the host (one float per parameter, flat layout). */
dbk_status dbk_session_read_mask(dbk_session *s, float *out);
dbk_status dbk_session_read_importance(dbk_session *s, float *out);

/* When on, evaluation waits for the device after every batch (inference latency: with
 * eval_batch 1 each image is classified completely before the next one starts). */
void dbk_session_set_eval_sync(dbk_session *s, bool on);

/* Per-op timing of training steps (`daybreak train --profile`; "profile" elsewhere in the code
 * is a hardware profile, core/profile.h): when on, each step runs through
 * dbk_program_run_timed (device time per op from OpenCL events or Vulkan timestamps; the CPU
 * backend synchronises and times each op on the host). dbk_session_print_op_times prints per
 * op: time per step, share, FLOPs and the achieved GFLOP/s, and the share of the step's
 * wall time spent outside ops (host overhead, launch gaps). */
void dbk_session_set_op_timing(dbk_session *s, bool on);
void dbk_session_print_op_times(const dbk_session *s, FILE *out);

/* FLOPs of one training step: dbk_op_flops summed over its ops (2 per multiply-add). */
double dbk_session_step_flops(const dbk_session *s);
/* FLOPs of the run's training steps [first, first + count) as the session runs them: once a
 * group has stopped (recipe until_epoch), its step without that group's gradients. */
double dbk_session_steps_flops(const dbk_session *s, long first, long count);

/* One op of the training step as timed (for result.json and rooflines). */
typedef struct dbk_op_times {
    char   label[48];       /* e.g. "layer1.conv" */
    char   kind[24];        /* dbk_op_name, e.g. "conv2d_fwd" */
    char   algorithm[32];   /* dbk_backend_op_algorithm, "" for the op's plain one */
    double flops;           /* per call, always the plain algorithm's (a Winograd conv's
                               direct-convolution FLOPs) */
    double bytes;           /* bytes read + written per call (every input and output tensor once;
                               augment counts only the batch it reads, not the whole dataset) */
    double seconds;         /* mean per step, 0 before any timed step */
    int    launches;        /* kernels it launches per step on this backend (1 on the CPU) */
} dbk_op_times;

int        dbk_session_timed_op_count(const dbk_session *s);    /* ops of the training step */
long       dbk_session_timed_steps(const dbk_session *s);       /* 0 when timing was off */
double     dbk_session_timed_step_seconds(const dbk_session *s); /* mean whole-step time */
void       dbk_session_op_times(const dbk_session *s, int i, dbk_op_times *out);

/* What the training steps ask of the device (DESIGN.md decision 9), per step: backend.h's
 * counters summed over every dbk_session_upload_batch, dbk_session_train_step and
 * dbk_session_lookahead call since the session was created or the costs were last reset,
 * divided by the training steps. While profiling, the profiler's own waits are not syncs
 * (their time is not host time either). */
typedef struct dbk_step_costs {
    long   steps;           /* training steps measured; the figures below are 0 when none */
    double launches;        /* kernels launched */
    double syncs;           /* host waits on the device (0 for a step that never blocks) */
    double host_seconds;    /* the calls' wall time outside those waits (CPU backend: outside
                               the ops, which are the device's work there) */
    double device_bytes;    /* what the launches read and write (backend.h device_bytes) */
    double min_bytes;       /* the least a step can move: each op's tensors once (dbk_op_bytes) */
    double host_bytes;      /* copied between host and device */
} dbk_step_costs;

void dbk_session_step_costs(const dbk_session *s, dbk_step_costs *out);
void dbk_session_reset_step_costs(dbk_session *s);   /* e.g. after warm-up steps */
/* One line: "per step: 396 launches, 0 syncs, host 0.41 ms, 1.52 GB moved (0.81 GB the
 * tensors', 1.9x), 96 B to and from the host". */
void dbk_session_format_step_costs(const dbk_step_costs *c, char *out, size_t cap);

/* --- data-parallel training (src/dist drives these through train/peers.h) ------------ */

/* Called by every training step between the backward pass and the optimizer update, after
 * the device finished the backward pass; it may read and rewrite the flat gradients. The
 * session must have been created with separate_update. */
typedef dbk_status (*dbk_session_exchange_fn)(void *ctx, dbk_buffer *grads);
void       dbk_session_set_exchange(dbk_session *s, dbk_session_exchange_fn fn, void *ctx);
/* The trainable parameter tensors (not in a frozen group) as offsets and counts in floats of
 * the flat gradient buffer, at most cap of them; returns how many there are (NULL, NULL, 0
 * to count). */
int        dbk_session_trainable_tensors(const dbk_session *s, size_t *offsets, size_t *counts, int cap);
/* The backend the session runs on. */
dbk_backend *dbk_session_backend(const dbk_session *s);
/* The flat buffer of batch-norm running statistics and its floats. */
dbk_buffer *dbk_session_statistics(dbk_session *s, size_t *count);
/* The flat parameter buffer (dbk_session_param_count floats, the flat layout) to and from the
 * host (model averaging). The read waits for the ops before it; the write is ordered with them. */
dbk_status dbk_session_read_params(dbk_session *s, float *out);
dbk_status dbk_session_write_params(dbk_session *s, const float *params);

/* Writes weights and batch-norm statistics to a checkpoint (train/checkpoint.h). */
dbk_status dbk_session_save(dbk_session *s, const char *path, const char *meta_json);
/* Loads a checkpoint written for the same model; names and shapes must match. */
dbk_status dbk_session_load(dbk_session *s, const char *path);
/* A run that starts from a checkpoint (--base): dbk_session_load, and lookahead's averages
 * set to the loaded model as they are set to the initial one. */
dbk_status dbk_session_start_from(dbk_session *s, const char *path);

/* Small checkpoints (train/ckpt_diff.h): what a difference file holds. */
typedef struct dbk_diff_summary {
    uint64_t param_count, stat_count;   /* P, S */
    uint64_t changed;                   /* K: parameters whose bits differ from the base's */
    double   bytes;                     /* the file's size */
    uint64_t base_hash;
} dbk_diff_summary;
/* Writes the session's model to path as its difference from the checkpoint base_path (a
 * model.ckpt of the same model). */
dbk_status dbk_session_save_diff(dbk_session *s, const char *base_path, const char *path, const char *meta_json,
                                 dbk_diff_summary *out);
/* Applies the difference file path to the session's model, which must be its base (loaded
 * from base_path: named in the wrong-base error). */
dbk_status dbk_session_load_diff(dbk_session *s, const char *base_path, const char *path);

/* The whole training state for --resume: the flat parameter and statistics buffers, the
 * momentum and lookahead's averages (tensors "params", "statistics", "momentum",
 * "lookahead.params", "lookahead.statistics", the last three when the session has them), with
 * meta_json. dbk_session_load_state restores them from a loaded checkpoint of the same
 * recipe and model (every tensor present, every size the same; path is for messages). */
struct dbk_checkpoint;
struct dbk_ckpt_tensor;
dbk_status dbk_session_save_state(dbk_session *s, const char *path, const char *meta_json);
/* The same with one more tensor in the checkpoint (NULL: none): a distributed run's error-
 * feedback residuals (train/peers.h). */
dbk_status dbk_session_save_state_extra(dbk_session *s, const char *path, const char *meta_json,
                                        const struct dbk_ckpt_tensor *extra);
dbk_status dbk_session_load_state(dbk_session *s, const struct dbk_checkpoint *c, const char *path);

/* The training state held on the host between two sessions of one run (progressive resizing:
 * the session of one image size is destroyed, freeing its activations, before the next is
 * created): the buffers dbk_session_save_state writes and the loss scaler. */
typedef struct dbk_session_state dbk_session_state;
/* Reads s's state to the host (synchronises the device). */
dbk_status dbk_session_state_take(dbk_session *s, dbk_session_state **out);
/* Writes it into s, a session of the same model and recipe: every buffer must have the same
 * size, else DBK_ERR_INVALID_ARG (a model whose parameters depend on the image size). */
dbk_status dbk_session_state_put(dbk_session *s, const dbk_session_state *st);
void       dbk_session_state_destroy(dbk_session_state *st);                 /* accepts NULL */

#endif
