/*
 * session.c — the device-side training program (see session.h).
 */
#include "train/session.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/timer.h"
#include "nn/memplan.h"
#include "train/checkpoint.h"

/* Byte layout of the small per-step buffer. */
enum {
    SC_LR          = 0,   /* f32: learning rate of this step (already divided by batch if summed) */
    SC_LOSS_SUM    = 4,   /* f32: epoch training loss, accumulated on the device */
    SC_CORRECT     = 8,   /* f32: epoch training top-1 correct count */
    SC_EVAL_LOSS   = 12,  /* f32: evaluation loss sum */
    SC_EVAL_CORR   = 16,  /* f32: evaluation correct count */
    SC_TRAIN_STATE = 32,  /* i32[2]: augment {first index, seed} for the training step */
    SC_EVAL_STATE  = 40,  /* i32[2]: augment {first index, seed} for evaluation */
    SC_BYTES       = 64,
};

/* A fixed op sequence. */
typedef struct program {
    dbk_op_desc *ops;
    int          count;
} program;

struct dbk_session {
    dbk_backend         *be;
    dbk_session_config   cfg;
    dbk_graph           *train_graph, *eval_graph, *tail_graph;  /* tail: last partial eval batch */
    dbk_buffer          *params, *grads, *momentum, *state, *scalars;
    dbk_memplan         *memplan;                                 /* where the activations live */
    dbk_buffer         **arena;                                   /* its chunks */
    int                  arena_chunks;
    dbk_buffer          *train_images, *train_labels, *indices, *test_images, *test_labels;
    program              train_step, eval_step, eval_tail;         /* op lists as laid out */
    dbk_program         *train_prog, *eval_prog, *tail_prog;       /* the same, recorded on the backend */
    int                  eval_tail_batch;
    int32_t             *perm;                                  /* host permutation buffer */
    bool                 profiling;
    bool                 eval_sync;                             /* sync after each eval batch */
    double              *op_seconds;                            /* per train_step op, when profiling */
    double               step_seconds;                          /* whole profiled steps */
    long                 profiled_steps;
    uint64_t             device_bytes;
};

static dbk_tensor scalar(dbk_buffer *b, size_t off, dbk_dtype dt, int64_t n) {
    return dbk_tensor_make(b, off, dt, 1, n, 1, 1, 1);
}

static dbk_status program_append(program *p, const dbk_op_desc *ops, int n) {
    dbk_op_desc *np = dbk_malloc(sizeof *np * (size_t)(p->count + n));
    if (!np) return DBK_ERR_OUT_OF_HOST_MEMORY;
    if (p->count) memcpy(np, p->ops, sizeof *np * (size_t)p->count);
    memcpy(np + p->count, ops, sizeof *np * (size_t)n);
    dbk_free(p->ops);
    p->ops = np;
    p->count += n;
    return DBK_OK;
}

/* Lays out one graph (model + input + loss tensors). In the build pass also assembles its
 * program: augment, forward, loss/accuracy, and for training the backward and update. */
static dbk_status lay_out(dbk_session *s, dbk_graph *g, int batch, bool training, program *prog) {
    const dbk_recipe *r = s->cfg.recipe;
    const int classes = s->cfg.num_classes;
    const dbk_image_shape in = s->cfg.input;
    dbk_value x = dbk_graph_value(g, false, batch, in.channels, in.height, in.width);
    dbk_tensor labels = dbk_graph_tensor(g, DBK_DTYPE_I32, 1, batch, 1, 1, 1);
    dbk_value logits = dbk_model_forward(g, s->cfg.model, x, classes);
    dbk_tensor probs = dbk_graph_tensor(g, DBK_DTYPE_F32, 2, batch, classes, 1, 1);
    DBK_TRY(dbk_graph_status(g));
    if (dbk_graph_is_planning(g)) return DBK_OK;

    dbk_tensor z = logits.data, dz = logits.grad;
    z.ndim = 2;
    if (dz.ndim) dz.ndim = 2;

    dbk_op_desc aug = {.op = DBK_OP_AUGMENT, .p.augment = r->augment, .label = "augment"};
    if (training) {
        aug.src[0] = dbk_tensor_make(s->train_images, 0, DBK_DTYPE_U8, 4, s->cfg.train_count, in.channels, in.height,
                                     in.width);
        aug.src[1] = scalar(s->train_labels, 0, DBK_DTYPE_U8, s->cfg.train_count);
        aug.src[2] = scalar(s->indices, 0, DBK_DTYPE_I32, s->cfg.train_count);
        aug.src[3] = scalar(s->scalars, SC_TRAIN_STATE, DBK_DTYPE_I32, 2);
    } else {
        aug.p.augment.train = false;
        aug.src[0] = dbk_tensor_make(s->test_images, 0, DBK_DTYPE_U8, 4, s->cfg.test_count, in.channels, in.height,
                                     in.width);
        aug.src[1] = scalar(s->test_labels, 0, DBK_DTYPE_U8, s->cfg.test_count);
        aug.src[3] = scalar(s->scalars, SC_EVAL_STATE, DBK_DTYPE_I32, 2);
    }
    aug.dst[0] = x.data;
    aug.dst[1] = labels;
    DBK_TRY(program_append(prog, &aug, 1));
    DBK_TRY(program_append(prog, dbk_graph_forward_ops(g), dbk_graph_forward_count(g)));

    dbk_op_desc loss = {.op = DBK_OP_SOFTMAX_XENT_FWD, .label = "loss"};
    loss.p.xent.label_smoothing = r->label_smoothing;
    loss.src[0] = z;
    loss.src[1] = labels;
    loss.dst[0] = probs;
    loss.dst[1] = scalar(s->scalars, training ? SC_LOSS_SUM : SC_EVAL_LOSS, DBK_DTYPE_F32, 1);
    dbk_op_desc acc = {.op = DBK_OP_ACCURACY, .label = "accuracy"};
    acc.src[0] = z;
    acc.src[1] = labels;
    acc.dst[0] = scalar(s->scalars, training ? SC_CORRECT : SC_EVAL_CORR, DBK_DTYPE_F32, 1);
    DBK_TRY(program_append(prog, &loss, 1));
    DBK_TRY(program_append(prog, &acc, 1));
    if (!training) return DBK_OK;

    dbk_op_desc lb = {.op = DBK_OP_SOFTMAX_XENT_BWD, .label = "loss.bwd"};
    lb.p.xent.label_smoothing = r->label_smoothing;
    lb.p.xent.grad_scale = r->loss_summed ? 1.0f : 1.0f / (float)batch;
    lb.src[0] = probs;
    lb.src[1] = labels;
    lb.dst[0] = dz;
    DBK_TRY(program_append(prog, &lb, 1));
    const dbk_op_desc *bwd = dbk_graph_backward_ops(g);
    if (!bwd) return DBK_ERR_OUT_OF_HOST_MEMORY;
    DBK_TRY(program_append(prog, bwd, dbk_graph_backward_count(g)));

    dbk_op_desc sgd = {.op = DBK_OP_SGD_MOMENTUM_UPDATE, .label = "sgd"};
    sgd.p.sgd.momentum = r->momentum;
    sgd.p.sgd.weight_decay = r->loss_summed ? r->weight_decay * (float)batch : r->weight_decay;
    sgd.p.sgd.nesterov = r->nesterov;
    sgd.src[0] = dbk_graph_grads_view(g);
    sgd.src[1] = scalar(s->scalars, SC_LR, DBK_DTYPE_F32, 1);
    sgd.dst[0] = dbk_graph_params_view(g);
    sgd.dst[1] = sgd.dst[0];
    sgd.dst[1].buf = s->momentum;
    return program_append(prog, &sgd, 1);
}

static dbk_status alloc(dbk_session *s, size_t nbytes, const char *what, dbk_buffer **out) {
    dbk_status st = dbk_buffer_create(s->be, nbytes ? nbytes : 4, out);
    if (st != DBK_OK) {
        char reason[700];
        snprintf(reason, sizeof reason, "%s", dbk_last_error());
        return dbk_set_error(st, "allocating %s (%.1f MiB, %.1f MiB allocated before it): %s", what,
                             (double)nbytes / 1048576.0, (double)s->device_bytes / 1048576.0, reason);
    }
    s->device_bytes += nbytes;
    return DBK_OK;
}

/* Activations scale with the batch: the hint names the largest batch whose activations
 * (total bytes at the configured batch) fit in room bytes and whose largest tensor fits in
 * max_tensor bytes (0: no limit). */
static dbk_status with_batch_hint(dbk_session *s, dbk_status st, double total, double room, double largest,
                                  double max_tensor) {
    const int batch = s->cfg.batch > s->cfg.eval_batch ? s->cfg.batch : s->cfg.eval_batch;
    if (total <= 0 || room <= 0) return st;
    double fit = room * 0.9 / (total / batch);
    if (max_tensor > 0 && largest > 0 && max_tensor / (largest / batch) < fit) fit = max_tensor / (largest / batch);
    if (fit < 1) return st;
    char reason[800];
    snprintf(reason, sizeof reason, "%s", dbk_last_error());
    return dbk_set_error(st, "%s; HINT: a batch of about %ld fits this device (--batch %ld)", reason, (long)fit, (long)fit);
}

/* Places the programs' activations by lifetime (nn/memplan.h) in buffers no larger than the
 * device's largest allocation, allocates those and points the programs at them. A plan that
 * cannot fit the device (one tensor above the largest allocation, or more than its memory in
 * all) is refused before anything is allocated: some drivers (PoCL) accept allocations beyond
 * their memory and fail, or swap, only when the step runs. */
static dbk_status place_activations(dbk_session *s) {
    const dbk_device_info *info = dbk_backend_get_info(s->be);
    size_t max_chunk = s->cfg.max_activation_buffer ? s->cfg.max_activation_buffer : (size_t)info->max_alloc_bytes;
    if (info->max_alloc_bytes && max_chunk > info->max_alloc_bytes) max_chunk = (size_t)info->max_alloc_bytes;
    DBK_TRY(dbk_memplan_create(max_chunk, &s->memplan));
    program *progs[3] = {&s->train_step, &s->eval_step, &s->eval_tail};
    for (int i = 0; i < 3; i++)
        if (progs[i]->count) DBK_TRY(dbk_memplan_add_program(s->memplan, progs[i]->ops, progs[i]->count));
    const int n = dbk_memplan_chunk_count(s->memplan);
    const size_t total = dbk_memplan_total_bytes(s->memplan), largest = dbk_memplan_largest_block(s->memplan);
    const double mib = 1048576.0, room = (double)info->global_mem_bytes - (double)s->device_bytes;
    dbk_log(DBK_LOG_LEVEL_INFO, "plan: %zu parameters, %zu statistics, %.1f MiB activations in %d buffer%s (%.1f MiB without reuse)",
            dbk_graph_param_count(s->eval_graph), dbk_graph_state_count(s->eval_graph), (double)total / mib, n,
            n == 1 ? "" : "s", (double)dbk_memplan_unshared_bytes(s->memplan) / mib);
    if (max_chunk && largest > max_chunk) {
        dbk_status st = dbk_set_error(DBK_ERR_OUT_OF_DEVICE_MEMORY,
                                      "one activation takes %.1f MiB, more than the device's largest buffer (%.1f MiB)",
                                      (double)largest / mib, (double)max_chunk / mib);
        return with_batch_hint(s, st, (double)total, room, (double)largest, (double)max_chunk);
    }
    if (info->global_mem_bytes && (double)total > room) {
        dbk_status st = dbk_set_error(DBK_ERR_OUT_OF_DEVICE_MEMORY,
                                      "the activations need %.1f MiB, more than the %.1f MiB of device memory left (%.1f MiB "
                                      "of %.1f MiB taken by weights and data)",
                                      (double)total / mib, room > 0 ? room / mib : 0.0, (double)s->device_bytes / mib,
                                      (double)info->global_mem_bytes / mib);
        return with_batch_hint(s, st, (double)total, room, (double)largest, (double)max_chunk);
    }
    s->arena = dbk_calloc((size_t)(n ? n : 1), sizeof *s->arena);
    if (!s->arena) return DBK_ERR_OUT_OF_HOST_MEMORY;
    s->arena_chunks = n;
    for (int i = 0; i < n; i++) {
        char what[48];
        snprintf(what, sizeof what, "activations (buffer %d of %d)", i + 1, n);
        dbk_status st = alloc(s, dbk_memplan_chunk_bytes(s->memplan, i), what, &s->arena[i]);
        if (st != DBK_OK) return with_batch_hint(s, st, (double)total, room, (double)largest, (double)max_chunk);
    }
    dbk_memplan_bind(s->memplan, s->arena);
    return DBK_OK;
}

dbk_status dbk_session_create(dbk_backend *be, const dbk_session_config *cfg, dbk_session **out) {
    *out = NULL;
    if (cfg->batch < 1 || cfg->eval_batch < 1)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "batch size must be >= 1 (got %d)", cfg->batch);
    if (cfg->train_count > 0 && cfg->train_count < cfg->batch)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "batch size %d is larger than the training set (%d images)",
                             cfg->batch, cfg->train_count);
    if (cfg->input.channels < 1 || cfg->input.height < 1 || cfg->input.width < 1 || cfg->num_classes < 1)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "session needs the dataset's image shape and classes (got %dx%dx%d, "
                             "%d classes)", cfg->input.channels, cfg->input.height, cfg->input.width, cfg->num_classes);
    const size_t image_bytes = dbk_image_shape_bytes(&cfg->input);
    dbk_session *s = dbk_calloc(1, sizeof *s);
    if (!s) return DBK_ERR_OUT_OF_HOST_MEMORY;
    s->be = be;
    s->cfg = *cfg;
    dbk_status st;
    const int eval_batch = cfg->test_count < cfg->eval_batch ? (cfg->test_count > 0 ? cfg->test_count : 1) : cfg->eval_batch;
    s->cfg.eval_batch = eval_batch;
    s->eval_tail_batch = cfg->test_count % eval_batch;

    dbk_graph_config tcfg = {.training = true, .bn = cfg->recipe->bn};
    dbk_graph_config ecfg = {.training = false, .bn = cfg->recipe->bn};
    if ((st = dbk_graph_create(&tcfg, &s->train_graph)) != DBK_OK) goto fail;
    if ((st = dbk_graph_create(&ecfg, &s->eval_graph)) != DBK_OK) goto fail;
    if (s->eval_tail_batch && (st = dbk_graph_create(&ecfg, &s->tail_graph)) != DBK_OK) goto fail;

    /* Plan. */
    const bool train = cfg->train_count > 0;
    if (train && (st = lay_out(s, s->train_graph, cfg->batch, true, NULL)) != DBK_OK) goto fail;
    if ((st = lay_out(s, s->eval_graph, eval_batch, false, NULL)) != DBK_OK) goto fail;
    if (s->tail_graph && (st = lay_out(s, s->tail_graph, s->eval_tail_batch, false, NULL)) != DBK_OK) goto fail;
    size_t n_params = dbk_graph_param_count(s->eval_graph);
    size_t n_state = dbk_graph_state_count(s->eval_graph);

    /* Allocate everything but the activations. */
    if ((st = alloc(s, n_params * 4, "parameters", &s->params)) != DBK_OK) goto fail;
    if ((st = alloc(s, n_state * 4, "batch-norm statistics", &s->state)) != DBK_OK) goto fail;
    if ((st = alloc(s, SC_BYTES, "step scalars", &s->scalars)) != DBK_OK) goto fail;
    if ((st = alloc(s, (size_t)cfg->test_count * image_bytes, "test images", &s->test_images)) != DBK_OK) goto fail;
    if ((st = alloc(s, (size_t)cfg->test_count, "test labels", &s->test_labels)) != DBK_OK) goto fail;
    if (train) {
        if ((st = alloc(s, n_params * 4, "gradients", &s->grads)) != DBK_OK) goto fail;
        if ((st = alloc(s, n_params * 4, "momentum", &s->momentum)) != DBK_OK) goto fail;
        if ((st = alloc(s, (size_t)cfg->train_count * image_bytes, "training images", &s->train_images)) != DBK_OK) goto fail;
        if ((st = alloc(s, (size_t)cfg->train_count, "training labels", &s->train_labels)) != DBK_OK) goto fail;
        if ((st = alloc(s, (size_t)cfg->train_count * 4, "shuffle indices", &s->indices)) != DBK_OK) goto fail;
        s->perm = dbk_malloc((size_t)cfg->train_count * sizeof *s->perm);
        if (!s->perm) {
            st = DBK_ERR_OUT_OF_HOST_MEMORY;
            goto fail;
        }
    }

    /* Build: the same layout again, now with buffers, recording the programs. Activations go
     * to a virtual arena until the memory plan has placed them by lifetime. */
    dbk_buffer *varena = dbk_memplan_virtual_arena();
    if (train) {
        dbk_graph_begin_build(s->train_graph, s->params, s->grads, s->state, varena);
        if ((st = lay_out(s, s->train_graph, cfg->batch, true, &s->train_step)) != DBK_OK) goto fail;
    }
    dbk_graph_begin_build(s->eval_graph, s->params, NULL, s->state, varena);
    if ((st = lay_out(s, s->eval_graph, eval_batch, false, &s->eval_step)) != DBK_OK) goto fail;
    if (s->tail_graph) {
        dbk_graph_begin_build(s->tail_graph, s->params, NULL, s->state, varena);
        if ((st = lay_out(s, s->tail_graph, s->eval_tail_batch, false, &s->eval_tail)) != DBK_OK) goto fail;
    }
    if ((st = place_activations(s)) != DBK_OK) goto fail;

    /* Let the backend size workspaces, build kernels and record every sequence, once. */
    if (train && (st = dbk_program_create(be, s->train_step.ops, s->train_step.count, &s->train_prog)) != DBK_OK)
        goto fail;
    if ((st = dbk_program_create(be, s->eval_step.ops, s->eval_step.count, &s->eval_prog)) != DBK_OK) goto fail;
    if (s->tail_graph &&
        (st = dbk_program_create(be, s->eval_tail.ops, s->eval_tail.count, &s->tail_prog)) != DBK_OK)
        goto fail;

    *out = s;
    return DBK_OK;
fail:
    dbk_session_destroy(s);
    return st;
}

void dbk_session_destroy(dbk_session *s) {
    if (!s) return;
    dbk_program_destroy(s->train_prog);
    dbk_program_destroy(s->eval_prog);
    dbk_program_destroy(s->tail_prog);
    dbk_graph_destroy(s->train_graph);
    dbk_graph_destroy(s->eval_graph);
    dbk_graph_destroy(s->tail_graph);
    for (int i = 0; i < s->arena_chunks; i++) dbk_buffer_destroy(s->arena[i]);
    dbk_free(s->arena);
    dbk_memplan_destroy(s->memplan);
    dbk_buffer *bufs[] = {s->params, s->grads, s->momentum, s->state, s->scalars,
                          s->train_images, s->train_labels, s->indices, s->test_images, s->test_labels};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) dbk_buffer_destroy(bufs[i]);
    dbk_free(s->train_step.ops);
    dbk_free(s->eval_step.ops);
    dbk_free(s->eval_tail.ops);
    dbk_free(s->perm);
    dbk_free(s->op_seconds);
    dbk_free(s);
}

uint64_t dbk_session_device_bytes(const dbk_session *s) { return s->device_bytes; }
int dbk_session_activation_buffers(const dbk_session *s) { return s->arena_chunks; }
size_t dbk_session_param_count(const dbk_session *s) { return dbk_graph_param_count(s->eval_graph); }
int dbk_session_steps_per_epoch(const dbk_session *s) { return s->cfg.train_count / s->cfg.batch; }

/* The dataset has the image shape and classes the session was laid out for. */
static bool same_shape(const dbk_session *s, const dbk_dataset *d) {
    const dbk_image_shape *in = &s->cfg.input;
    return d->channels == in->channels && d->height == in->height && d->width == in->width &&
           d->num_classes == s->cfg.num_classes;
}

dbk_status dbk_session_upload_data(dbk_session *s, const dbk_dataset *train, const dbk_dataset *test) {
    const size_t image_bytes = dbk_image_shape_bytes(&s->cfg.input);
    if (s->train_images) {
        DBK_ASSERT(train && train->count == s->cfg.train_count && same_shape(s, train));
        DBK_TRY(dbk_buffer_write(s->train_images, 0, train->images, (size_t)train->count * image_bytes));
        DBK_TRY(dbk_buffer_write(s->train_labels, 0, train->labels, (size_t)train->count));
    }
    DBK_ASSERT(test->count == s->cfg.test_count && same_shape(s, test));
    DBK_TRY(dbk_buffer_write(s->test_images, 0, test->images, (size_t)test->count * image_bytes));
    return dbk_buffer_write(s->test_labels, 0, test->labels, (size_t)test->count);
}

dbk_status dbk_session_init_params(dbk_session *s, uint64_t seed) {
    const dbk_graph *g = s->eval_graph;
    size_t np = dbk_graph_param_count(g), ns = dbk_graph_state_count(g);
    float *host = dbk_calloc(np > ns ? np : ns, sizeof *host);
    if (!host) return DBK_ERR_OUT_OF_HOST_MEMORY;
    dbk_rng rng;
    dbk_rng_init(&rng, seed);
    for (int i = 0; i < dbk_graph_param_info_count(g); i++) {
        const dbk_param_info *pi = dbk_graph_param_info(g, i);
        int64_t n = 1;
        for (int d = 0; d < pi->ndim; d++) n *= pi->shape[d];
        float bound = pi->fan_in > 0 ? 1.0f / sqrtf((float)pi->fan_in) : 0.0f;
        for (int64_t j = 0; j < n; j++) {
            float v = 0.0f;
            switch (pi->init) {
            case DBK_PARAM_INIT_KAIMING_UNIFORM: v = (2.0f * dbk_rng_uniform(&rng) - 1.0f) * bound; break;
            case DBK_PARAM_INIT_ONES: v = 1.0f; break;
            case DBK_PARAM_INIT_ZEROS: v = 0.0f; break;
            }
            host[pi->offset + (size_t)j] = v;
        }
    }
    dbk_status st = dbk_buffer_write(s->params, 0, host, np * 4);
    if (st == DBK_OK && s->momentum) {
        memset(host, 0, np * 4);
        st = dbk_buffer_write(s->momentum, 0, host, np * 4);
    }
    if (st == DBK_OK) {
        memset(host, 0, ns * 4);
        for (int i = 0; i < dbk_graph_state_info_count(g); i++) {
            const dbk_state_info *si = dbk_graph_state_info(g, i);
            for (int64_t j = 0; j < si->count; j++) host[si->offset + (size_t)j] = si->init;
        }
        st = dbk_buffer_write(s->state, 0, host, ns * 4);
    }
    dbk_free(host);
    return st;
}

dbk_status dbk_session_begin_epoch(dbk_session *s, int epoch, uint64_t seed) {
    DBK_ASSERT(s->perm);
    dbk_rng rng;
    dbk_rng_init(&rng, seed ^ ((uint64_t)(epoch + 1) * 0x9e3779b97f4a7c15ULL));
    dbk_rng_permutation(&rng, s->perm, s->cfg.train_count);
    DBK_TRY(dbk_buffer_write(s->indices, 0, s->perm, (size_t)s->cfg.train_count * 4));
    /* The augmentation seed of the epoch; rows are told apart by their position. */
    int32_t state[2] = {0, (int32_t)dbk_hash_u32((uint32_t)seed, (uint32_t)(seed >> 32), (uint32_t)epoch, 0xa5a5u)};
    DBK_TRY(dbk_buffer_write(s->scalars, SC_TRAIN_STATE, state, sizeof state));
    const float zero[2] = {0.0f, 0.0f};
    return dbk_buffer_write(s->scalars, SC_LOSS_SUM, zero, sizeof zero);
}

/* Runs the training step with per-op device timing (dbk_program_run_timed), accumulating
 * each op's time and the wall time of the whole step. */
static dbk_status run_profiled(dbk_session *s) {
    if (!s->op_seconds) {
        s->op_seconds = dbk_calloc((size_t)s->train_step.count, sizeof *s->op_seconds);
        if (!s->op_seconds) return DBK_ERR_OUT_OF_HOST_MEMORY;
    }
    DBK_TRY(dbk_backend_sync(s->be));
    double step_start = dbk_time_now();
    DBK_TRY(dbk_program_run_timed(s->train_prog, s->op_seconds));
    DBK_TRY(dbk_backend_sync(s->be));
    s->step_seconds += dbk_time_now() - step_start;
    s->profiled_steps++;
    return DBK_OK;
}

void dbk_session_set_profiling(dbk_session *s, bool on) { s->profiling = on; }

void dbk_session_set_eval_sync(dbk_session *s, bool on) { s->eval_sync = on; }

void dbk_session_print_profile(const dbk_session *s, FILE *out) {
    if (!s->profiled_steps || !s->op_seconds) return;
    const program *p = &s->train_step;
    const double steps = (double)s->profiled_steps;
    double ops_total = 0.0, flops_total = 0.0;
    fprintf(out, "\nprofile: %ld training steps, batch %d, on %s (%s)\n", s->profiled_steps, s->cfg.batch,
            dbk_backend_kind_name(dbk_backend_get_kind(s->be)), dbk_backend_get_info(s->be)->name);
    fprintf(out, "%-28s %-20s %10s %7s %10s %9s\n", "op", "kind", "ms/step", "share", "GFLOP", "GFLOP/s");
    for (int i = 0; i < p->count; i++) {
        double ms = 1000.0 * s->op_seconds[i] / steps, gflop = dbk_op_flops(&p->ops[i]) * 1e-9;
        ops_total += s->op_seconds[i];
        flops_total += gflop;
        fprintf(out, "%-28.28s %-20s %10.3f %6.1f%% %10.4f %9.1f\n", p->ops[i].label ? p->ops[i].label : "",
                dbk_op_name(p->ops[i].op), ms, 100.0 * s->op_seconds[i] / s->step_seconds, gflop,
                ms > 0 ? gflop / (ms * 1e-3) : 0.0);
    }
    double step_ms = 1000.0 * s->step_seconds / steps, outside = s->step_seconds - ops_total;
    fprintf(out, "%-28s %-20s %10.3f %6.1f%% %10.4f %9.1f\n", "total", "", step_ms, 100.0, flops_total,
            flops_total / (step_ms * 1e-3));
    fprintf(out, "outside ops: %.3f ms/step (%.1f%%)\n", 1000.0 * outside / steps, 100.0 * outside / s->step_seconds);
}

double dbk_session_step_flops(const dbk_session *s) {
    double f = 0.0;
    for (int i = 0; i < s->train_step.count; i++) f += dbk_op_flops(&s->train_step.ops[i]);
    return f;
}

int dbk_session_profile_op_count(const dbk_session *s) { return s->train_step.count; }
long dbk_session_profiled_steps(const dbk_session *s) { return s->op_seconds ? s->profiled_steps : 0; }
double dbk_session_profiled_step_seconds(const dbk_session *s) {
    return s->profiled_steps ? s->step_seconds / (double)s->profiled_steps : 0.0;
}

static double op_bytes(const dbk_op_desc *d) {
    double b = 0.0;
    for (int i = 0; i < DBK_OP_MAX_DST; i++)
        if (d->dst[i].ndim) b += (double)dbk_tensor_nbytes(&d->dst[i]);
    if (d->op == DBK_OP_AUGMENT) /* reads one u8 per output element, not the whole dataset */
        return b + (double)dbk_tensor_numel(&d->dst[0]) + (double)dbk_tensor_numel(&d->dst[1]);
    for (int i = 0; i < DBK_OP_MAX_SRC; i++)
        if (d->src[i].ndim) b += (double)dbk_tensor_nbytes(&d->src[i]);
    return b;
}

void dbk_session_profile_op(const dbk_session *s, int i, dbk_op_profile *out) {
    const dbk_op_desc *d = &s->train_step.ops[i];
    memset(out, 0, sizeof *out);
    snprintf(out->label, sizeof out->label, "%s", d->label ? d->label : "");
    snprintf(out->kind, sizeof out->kind, "%s", dbk_op_name(d->op));
    out->flops = dbk_op_flops(d);
    out->bytes = op_bytes(d);
    out->seconds = s->op_seconds && s->profiled_steps ? s->op_seconds[i] / (double)s->profiled_steps : 0.0;
}

dbk_status dbk_session_train_step(dbk_session *s, int step, float lr) {
    const dbk_recipe *r = s->cfg.recipe;
    float step_lr = r->loss_summed ? lr / (float)s->cfg.batch : lr;
    int32_t first = step * s->cfg.batch;
    DBK_TRY(dbk_buffer_write(s->scalars, SC_LR, &step_lr, sizeof step_lr));
    DBK_TRY(dbk_buffer_write(s->scalars, SC_TRAIN_STATE, &first, sizeof first));
    if (s->profiling) return run_profiled(s);
    return dbk_program_run(s->train_prog);
}

static dbk_status read_counters(dbk_session *s, size_t loss_off, size_t corr_off, dbk_epoch_counters *out) {
    float loss, corr;
    DBK_TRY(dbk_backend_sync(s->be));
    DBK_TRY(dbk_buffer_read(s->scalars, loss_off, &loss, 4));
    DBK_TRY(dbk_buffer_read(s->scalars, corr_off, &corr, 4));
    out->loss_sum = loss;
    out->correct = corr;
    return DBK_OK;
}

dbk_status dbk_session_end_epoch(dbk_session *s, dbk_epoch_counters *out) {
    out->images = (int64_t)dbk_session_steps_per_epoch(s) * s->cfg.batch;
    return read_counters(s, SC_LOSS_SUM, SC_CORRECT, out);
}

dbk_status dbk_session_evaluate(dbk_session *s, dbk_epoch_counters *out) {
    const float zero[2] = {0.0f, 0.0f};
    DBK_TRY(dbk_buffer_write(s->scalars, SC_EVAL_LOSS, zero, sizeof zero));
    int32_t state[2] = {0, 0};
    const int eb = s->cfg.eval_batch;
    for (int32_t first = 0; first < s->cfg.test_count; first += eb) {
        state[0] = first;
        DBK_TRY(dbk_buffer_write(s->scalars, SC_EVAL_STATE, state, sizeof state));
        bool tail = s->cfg.test_count - first < eb;
        DBK_TRY(dbk_program_run(tail ? s->tail_prog : s->eval_prog));
        if (s->eval_sync) DBK_TRY(dbk_backend_sync(s->be));
    }
    out->images = s->cfg.test_count;
    return read_counters(s, SC_EVAL_LOSS, SC_EVAL_CORR, out);
}

/* ---------------------------------------------------------------------------------- */
/* checkpoints                                                                        */

dbk_status dbk_session_save(dbk_session *s, const char *path, const char *meta_json) {
    const dbk_graph *g = s->eval_graph;
    size_t np = dbk_graph_param_count(g), ns = dbk_graph_state_count(g);
    int npi = dbk_graph_param_info_count(g), nsi = dbk_graph_state_info_count(g);
    float *params = dbk_malloc(np * 4 + 4), *state = dbk_malloc(ns * 4 + 4);
    dbk_ckpt_tensor *t = dbk_calloc((size_t)(npi + nsi), sizeof *t);
    dbk_status st = DBK_ERR_OUT_OF_HOST_MEMORY;
    if (!params || !state || !t) goto done;
    if ((st = dbk_backend_sync(s->be)) != DBK_OK) goto done;
    if ((st = dbk_buffer_read(s->params, 0, params, np * 4)) != DBK_OK) goto done;
    if ((st = dbk_buffer_read(s->state, 0, state, ns * 4)) != DBK_OK) goto done;
    for (int i = 0; i < npi; i++) {
        const dbk_param_info *pi = dbk_graph_param_info(g, i);
        t[i].name = pi->name;
        t[i].ndim = pi->ndim;
        memcpy(t[i].shape, pi->shape, sizeof pi->shape);
        t[i].data = params + pi->offset;
    }
    for (int i = 0; i < nsi; i++) {
        const dbk_state_info *si = dbk_graph_state_info(g, i);
        t[npi + i].name = si->name;
        t[npi + i].ndim = 1;
        t[npi + i].shape[0] = si->count;
        t[npi + i].data = state + si->offset;
    }
    st = dbk_checkpoint_save(path, s->cfg.model->name, meta_json, t, npi + nsi);
done:
    dbk_free(params);
    dbk_free(state);
    dbk_free(t);
    return st;
}

static dbk_status load_tensor(const dbk_checkpoint *c, const char *path, const char *name, int ndim,
                              const int64_t *shape, float *dst) {
    const dbk_ckpt_tensor *t = dbk_checkpoint_find(c, name);
    if (!t) return dbk_set_error(DBK_ERR_FORMAT, "%s: checkpoint has no tensor '%s'", path, name);
    bool same = t->ndim == ndim;
    int64_t n = 1;
    for (int d = 0; same && d < ndim; d++) {
        same = t->shape[d] == shape[d];
        n *= shape[d];
    }
    if (!same) return dbk_set_error(DBK_ERR_FORMAT, "%s: tensor '%s' has another shape than the model's", path, name);
    memcpy(dst, t->data, (size_t)n * 4);
    return DBK_OK;
}

dbk_status dbk_session_load(dbk_session *s, const char *path) {
    dbk_checkpoint *c = NULL;
    DBK_TRY(dbk_checkpoint_load(path, &c));
    const dbk_graph *g = s->eval_graph;
    size_t np = dbk_graph_param_count(g), ns = dbk_graph_state_count(g);
    float *params = dbk_calloc(np + 1, 4), *state = dbk_calloc(ns + 1, 4);
    dbk_status st = DBK_ERR_OUT_OF_HOST_MEMORY;
    if (!params || !state) goto done;
    if (strcmp(dbk_checkpoint_model(c), s->cfg.model->name) != 0) {
        st = dbk_set_error(DBK_ERR_FORMAT, "%s holds model '%s', not '%s'", path, dbk_checkpoint_model(c),
                           s->cfg.model->name);
        goto done;
    }
    for (int i = 0; i < dbk_graph_param_info_count(g); i++) {
        const dbk_param_info *pi = dbk_graph_param_info(g, i);
        if ((st = load_tensor(c, path, pi->name, pi->ndim, pi->shape, params + pi->offset)) != DBK_OK) goto done;
    }
    for (int i = 0; i < dbk_graph_state_info_count(g); i++) {
        const dbk_state_info *si = dbk_graph_state_info(g, i);
        if ((st = load_tensor(c, path, si->name, 1, &si->count, state + si->offset)) != DBK_OK) goto done;
    }
    if ((st = dbk_buffer_write(s->params, 0, params, np * 4)) != DBK_OK) goto done;
    st = dbk_buffer_write(s->state, 0, state, ns * 4);
done:
    dbk_free(params);
    dbk_free(state);
    dbk_checkpoint_destroy(c);
    return st;
}
