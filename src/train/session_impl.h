/*
 * session_impl.h — the session's state, shared by the files that each do one of its jobs.
 * INTERNAL: include only from src/train/session*.c.
 *
 *   session.c          create and destroy: plan, allocate, build, record; data upload
 *   session_step.c     assembling the programs: augment, model, loss, accuracy, optimizer,
 *                      and the rules of their per-step values
 *   session_memory.c   device allocations and placing the activations (nn/memplan.h)
 *   session_init.c     initialising parameters, statistics and optimizer state
 *   session_run.c      the device side of the epoch loop: epochs, steps, evaluation
 *   session_timing.c  per-op timing of training steps
 *   session_ckpt.c     checkpoints, and the whole training state for --resume and for
 *                      the next session of progressive resizing
 *   session_peers.c    what data-parallel training needs: the exchange between backward
 *                      and update, the trainable tensors, the statistics buffer
 *   session_mask.c     sparse masks: the Fisher information, the selection, the mask
 */
#ifndef DBK_SESSION_IMPL_H
#define DBK_SESSION_IMPL_H

#include "nn/graph.h"
#include "nn/memplan.h"
#include "train/loss_scaler.h"
#include "train/session.h"
#include "train/sparse_mask.h"

typedef enum dbk_session_program_kind {
    DBK_SESSION_PROGRAM_TRAIN,      /* a training step */
    DBK_SESSION_PROGRAM_EVAL,       /* an evaluation batch */
    DBK_SESSION_PROGRAM_TTA,        /* an evaluation batch with test-time augmentation */
    /* selective TTA (recipe tta_select): the least confident rows of the plain pass's table,
     * then the TTA of those rows into the table, then the table's loss and accuracy */
    DBK_SESSION_PROGRAM_TTA_SELECT,
    DBK_SESSION_PROGRAM_TTA_SELECTED,
    DBK_SESSION_PROGRAM_TTA_SCORE,
    DBK_SESSION_PROGRAM_LOOKAHEAD,  /* the lookahead update */
    DBK_SESSION_PROGRAM_FISHER,     /* one image's gradient into the Fisher information (sparse masks) */
} dbk_session_program_kind;

/* One fixed op sequence: its graph (which owns the ops, the parameter layout and the
 * per-step values), the ops as the memory plan rewrote them, and their recording. */
typedef struct dbk_session_program {
    dbk_session_program_kind kind;
    dbk_graph   *graph;
    dbk_op_desc *ops;       /* owned by graph */
    int          count;
    int          batch;
    int          update_count; /* the optimizer's ops at the end of ops (training) */
    dbk_program *recorded;  /* on the backend: every op, or without the update when the
                               session records it apart (cfg.separate_update) */
} dbk_session_program;

struct dbk_session {
    dbk_backend         *be;
    dbk_session_config   cfg;
    dbk_session_program  train, eval, tail;        /* tail: the last partial eval batch */
    dbk_session_program  train_late;               /* the training step once a group stopped (recipe
                                                      until_epoch): its gradients and what only they
                                                      need are not computed; NULL graph when none */
    long                 train_late_from;          /* the run step from which train_late runs */
    dbk_session_program  tta, tta_tail;            /* the final evaluation, when the recipe has TTA */
    dbk_session_program  tta_select, tta_selected, tta_selected_tail, tta_score; /* selective TTA */
    int                  tta_k;                    /* selective TTA: rows that get the views */
    dbk_buffer          *tta_table;                /* selective TTA: the test set's logits f32 (M, classes) */
    dbk_buffer          *tta_rows, *tta_work;      /* the selected rows i32 (k), their work f32 (M) */
    dbk_buffer          *test_labels_i32;          /* selective TTA: the test labels as i32 (M) */
    dbk_session_program  lookahead;                /* when the recipe has lookahead */
    dbk_program         *update;                   /* the optimizer alone (cfg.separate_update) */
    dbk_session_exchange_fn exchange;              /* between backward and update, when set */
    void                *exchange_ctx;
    dbk_buffer          *params, *grads, *momentum, *state;   /* momentum: SGD's, or AdamW's exp_avg */
    dbk_buffer          *exp_avg_sq;               /* AdamW's second moment (NULL for SGD) */
    dbk_buffer          *ema_params, *ema_state;   /* lookahead's averages */
    dbk_buffer          *train_steps, *eval_steps; /* per-step values + counters (every evaluation shares) */
    dbk_buffer          *lookahead_steps;
    void                *train_host, *eval_host, *lookahead_host; /* host images of their per-step values */
    dbk_memplan         *memplan;                  /* where the activations live */
    dbk_buffer         **arena;                    /* its chunks */
    int                  arena_chunks;
    dbk_buffer          *train_images, *train_labels, *indices, *test_images, *test_labels;
    dbk_buffer          *batch_labels;             /* streamed: the step's labels, i32 (batch) */
    dbk_buffer          *eval_images, *eval_zeros, *eval_batch_labels; /* streamed_eval: one batch,
                                                      its u8 zeros for the augment op, its labels i32 */
    dbk_loader          *eval_loader;              /* streamed_eval: borrowed */
    int32_t             *perm;                     /* host copy of the epoch's order (train/epoch_order.h) */
    int32_t             *perm_scratch;             /* one pass's permutation while building it */
    uint32_t             epoch_seed;               /* augmentation seed of the current epoch */
    uint32_t             run_seed;                 /* per-image draws fixed for the run (begin_epoch) */
    int                  epoch;
    int                  epoch_steps;              /* training steps enqueued since begin_epoch */
    bool                 profiling;
    bool                 eval_sync;                /* sync after each eval batch */
    double              *op_seconds;               /* per train op, when profiling */
    double               step_seconds;             /* whole profiled steps */
    long                 profiled_steps;
    uint64_t             device_bytes;
    dbk_loss_scaler      scaler;                   /* mixed precision (cfg.fp16): the host's copy of */
    dbk_buffer          *amp_state;                /* the device's {S, 1/S, found, clean, skipped,
                                                      growths} (DBK_OP_AMP_UPDATE_SCALE), read at
                                                      the end of an epoch */
    bool                 amp_dirty;                /* scaler changed on the host: written before
                                                      the next step */
    dbk_backend_counters cost_sum;                 /* the steps' share of the backend's counters */
    double               cost_wall, cost_min_bytes; /* their wall seconds, dbk_op_bytes moved */
    long                 cost_steps;
    /* sparse masks (cfg.mask, session_mask.c) */
    dbk_mask_spec        mask_spec;                /* a copy of *cfg.mask (method ALL: no mask) */
    dbk_mask_layout      mask_layout;              /* selectable ranges and counts */
    dbk_session_program  fisher;                   /* batch 1, no update: gradients into importance */
    dbk_buffer          *mask;                     /* f32 (params): 1 trains, 0 stays as it is */
    dbk_buffer          *importance;               /* f32 (params): the Fisher information */
    dbk_buffer          *fisher_state, *fisher_steps;  /* scratch statistics; per-step values */
    void                *fisher_host;
    dbk_buffer          *mask_packed;              /* f32 (selectable): importance, then the mask */
    dbk_buffer          *mask_tables, *mask_pairs, *mask_count, *mask_work;   /* the selection */
    int                  mask_chunks;
    size_t               mask_selected;            /* pairs of the last selection */
};

/* session_timing.c: a step-cost measurement around one call of the step (session.h
 * dbk_step_costs): begin reads the counters and the clock, end adds the differences and
 * min_bytes (the dbk_op_bytes of what the call ran). */
typedef struct dbk_cost_mark {
    dbk_backend_counters at;
    double               t;
} dbk_cost_mark;
void dbk_session_cost_begin(const dbk_session *s, dbk_cost_mark *m);
void dbk_session_cost_end(dbk_session *s, const dbk_cost_mark *m, double min_bytes);
/* dbk_op_bytes summed over a program's ops */
double dbk_session_program_bytes(const dbk_session_program *p);

/* Mixed precision: the loss scaler's device state (6 floats, DBK_OP_AMP_UPDATE_SCALE). */
#define DBK_SESSION_AMP_STATE 6

/* session_step.c: lays out one program on its graph (planning or build pass, as the graph
 * is); in the build pass the graph then holds the whole op sequence. */
dbk_status dbk_session_lay_out(dbk_session *s, dbk_session_program *p);

/* session_memory.c */
dbk_status dbk_session_alloc(dbk_session *s, size_t nbytes, const char *what, dbk_buffer **out);
dbk_status dbk_session_place_activations(dbk_session *s);

/* session_run.c: the recipe's passes per epoch (1 unless passes_per_epoch > 1). */
int dbk_session_passes(const dbk_session *s);

/* session.c: an evaluation batch of rows (<= eval_batch) from the host (streamed_eval). */
dbk_status dbk_session_upload_eval_batch(dbk_session *s, const uint8_t *images, const int32_t *labels, int rows);

/* session_peers.c: one training step as forward and backward, the exchange, the update. */
dbk_status dbk_session_run_exchanged(dbk_session *s);

/* session_run.c: the host's copy of the loss scaler from the device's (mixed precision; a read,
 * so between epochs only); nothing to do in fp32. put: the host's copy to the device when it
 * changed on the host (amp_dirty; a small write, no wait). */
dbk_status dbk_session_read_scaler(dbk_session *s);
dbk_status dbk_session_put_scaler(dbk_session *s);

/* session_timing.c: one training step with per-op device timing. */
dbk_status dbk_session_run_timed(dbk_session *s);

/* session_mask.c: the mask's layout and buffers, after the planning pass (cfg.mask set and
 * not ALL); the Fisher program's buffers too for a Fisher mask. */
dbk_status dbk_session_alloc_mask(dbk_session *s);
/* After the build pass: the layout's ranges at the parameters' final offsets (the planning
 * pass places every group at 0). */
dbk_status dbk_session_place_mask(dbk_session *s);
/* The warm-up (session_warmup.c): the mask's ops once, the Fisher program on one image; leaves
 * the mask undefined (set at the first epoch, or loaded from resume.ckpt). */
dbk_status dbk_session_warm_up_mask(dbk_session *s);
void       dbk_session_free_mask(dbk_session *s);

#endif
