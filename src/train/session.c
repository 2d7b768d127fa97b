/*
 * session.c — creating and destroying a session: plan, allocate, build, place, record (see
 * session.h); and the upload of the resident datasets. The other jobs of a session are in
 * their own files (session_impl.h lists them).
 */
#include "train/session.h"

#include <string.h>

#include "core/alloc.h"
#include "core/profile.h"
#include "train/session_impl.h"

static dbk_status graph_frozen(const dbk_session_config *cfg, dbk_session_program_kind kind, int batch,
                               const char *frozen_group, dbk_session_program *p) {
    const bool training = kind == DBK_SESSION_PROGRAM_TRAIN || kind == DBK_SESSION_PROGRAM_FISHER;
    dbk_graph_config gc = {.training = training, .bn = cfg->recipe->bn, .fp16 = cfg->fp16,
                           .no_fusion = training && !dbk_env_fusion(), .frozen_group = frozen_group};
    p->kind = kind;
    p->batch = batch;
    return dbk_graph_create(&gc, &p->graph);
}

static dbk_status graph_for(const dbk_session_config *cfg, dbk_session_program_kind kind, int batch,
                            dbk_session_program *p) {
    return graph_frozen(cfg, kind, batch, NULL, p);
}

/* The recipe's group that stops training after its first steps (until_epoch), if any: the
 * session then records a second training step without it, used from that step on. Not with
 * the update recorded apart (distributed, mixed precision): the full step stays correct
 * there, as the stopped group's learning rate is 0. */
static const dbk_recipe_group *stopping_group(const dbk_session_config *cfg) {
    if (cfg->separate_update || cfg->fp16) return NULL;
    for (int i = 0; i < cfg->recipe->group_count; i++)
        if (cfg->recipe->groups[i].until_epoch > 0.0f) return &cfg->recipe->groups[i];
    return NULL;
}

/* Whether the planned graph has a group of this name. */
static bool has_group(const dbk_graph *g, const char *name) {
    for (int i = 0; i < dbk_graph_group_count(g); i++)
        if (!strcmp(dbk_graph_group_name(g, i), name)) return true;
    return false;
}

/* The steps buffer a program's per-step values live in: the evaluations share one (their
 * declarations are the same, so are their offsets). */
static dbk_buffer *steps_of(dbk_session *s, const dbk_session_program *p) {
    switch (p->kind) {
    case DBK_SESSION_PROGRAM_TRAIN:     return s->train_steps;
    case DBK_SESSION_PROGRAM_LOOKAHEAD: return s->lookahead_steps;
    case DBK_SESSION_PROGRAM_FISHER:    return s->fisher_steps;
    case DBK_SESSION_PROGRAM_EVAL:
    case DBK_SESSION_PROGRAM_TTA:
    case DBK_SESSION_PROGRAM_TTA_SELECT:
    case DBK_SESSION_PROGRAM_TTA_SELECTED:
    case DBK_SESSION_PROGRAM_TTA_SCORE: break;
    }
    return s->eval_steps;
}

/* A buffer of n zero bytes: the u8 labels DBK_OP_AUGMENT reads for a batch the host
 * delivers, whose real labels (i32, any number of classes) the loss reads instead. */
static dbk_status alloc_zeros(dbk_session *s, size_t n, const char *what, dbk_buffer **out) {
    DBK_TRY(dbk_session_alloc(s, n, what, out));
    uint8_t *zeros = dbk_calloc(n, 1);
    if (!zeros) return DBK_ERR_OUT_OF_HOST_MEMORY;
    dbk_status st = dbk_buffer_write(*out, 0, zeros, n);
    dbk_free(zeros);
    return st;
}

/* Plans every program, allocates parameters, optimizer state, statistics, per-step values
 * and the datasets, builds the programs against a virtual arena, places the activations and
 * records the programs on the backend. */
static dbk_status build(dbk_session *s) {
    const dbk_session_config *cfg = &s->cfg;
    const dbk_recipe *r = cfg->recipe;
    const bool train = cfg->train_count > 0;
    const int eval_batch = cfg->eval_batch, tail_batch = cfg->test_count % eval_batch;
    dbk_backend *be = s->be;

    if (train) DBK_TRY(graph_for(cfg, DBK_SESSION_PROGRAM_TRAIN, cfg->batch, &s->train));
    const dbk_recipe_group *late = train ? stopping_group(cfg) : NULL;
    if (late) DBK_TRY(graph_frozen(cfg, DBK_SESSION_PROGRAM_TRAIN, cfg->batch, late->name, &s->train_late));
    DBK_TRY(graph_for(cfg, DBK_SESSION_PROGRAM_EVAL, eval_batch, &s->eval));
    if (tail_batch) DBK_TRY(graph_for(cfg, DBK_SESSION_PROGRAM_EVAL, tail_batch, &s->tail));
    if (r->tta_level > 0 && r->tta_select.fraction > 0.0f) {
        if (cfg->streamed_eval)
            return dbk_set_error(DBK_ERR_UNSUPPORTED, "recipe %s: selective test-time augmentation needs the test set on "
                                 "the device (a CIFAR-10-like dataset, not an image folder)", r->name);
        s->tta_k = (int)((double)r->tta_select.fraction * (double)cfg->test_count); /* int(N * 0.25) */
        const int k_tail = s->tta_k % eval_batch;
        DBK_TRY(graph_for(cfg, DBK_SESSION_PROGRAM_TTA_SELECT, 1, &s->tta_select));
        DBK_TRY(graph_for(cfg, DBK_SESSION_PROGRAM_TTA_SCORE, cfg->test_count, &s->tta_score));
        if (s->tta_k >= eval_batch) DBK_TRY(graph_for(cfg, DBK_SESSION_PROGRAM_TTA_SELECTED, eval_batch, &s->tta_selected));
        if (k_tail) DBK_TRY(graph_for(cfg, DBK_SESSION_PROGRAM_TTA_SELECTED, k_tail, &s->tta_selected_tail));
    } else if (r->tta_level > 0) {
        DBK_TRY(graph_for(cfg, DBK_SESSION_PROGRAM_TTA, eval_batch, &s->tta));
        if (tail_batch) DBK_TRY(graph_for(cfg, DBK_SESSION_PROGRAM_TTA, tail_batch, &s->tta_tail));
    }
    if (train && r->lookahead_every > 0) DBK_TRY(graph_for(cfg, DBK_SESSION_PROGRAM_LOOKAHEAD, 1, &s->lookahead));
    if (train && s->mask_spec.method == DBK_MASK_FISHER) DBK_TRY(graph_for(cfg, DBK_SESSION_PROGRAM_FISHER, 1, &s->fisher));
    dbk_session_program *progs[] = {&s->train,      &s->train_late,   &s->eval,         &s->tail,
                                    &s->tta,        &s->tta_tail,     &s->lookahead,    &s->tta_select,
                                    &s->tta_selected, &s->tta_selected_tail, &s->tta_score, &s->fisher};
    const int nprogs = (int)(sizeof progs / sizeof progs[0]);

    /* Plan. */
    for (int i = 0; i < nprogs; i++)
        if (progs[i]->graph) DBK_TRY(dbk_session_lay_out(s, progs[i]));
    if (late && !has_group(s->train.graph, late->name)) { /* the model has no such group */
        dbk_graph_destroy(s->train_late.graph);
        s->train_late.graph = NULL;
    }
    if (s->train_late.graph) { /* both steps count into one steps buffer: the same layout */
        DBK_ASSERT(dbk_graph_step_bytes(s->train_late.graph) == dbk_graph_step_bytes(s->train.graph));
        s->train_late_from = dbk_recipe_group_until_step(late, dbk_session_steps_per_epoch(s));
    }
    const dbk_graph *eg = s->eval.graph;
    size_t n_params = dbk_graph_param_count(eg), n_state = dbk_graph_state_count(eg);
    for (int i = 0; i < nprogs; i++) {
        const bool evaluation = progs[i]->kind != DBK_SESSION_PROGRAM_TRAIN && progs[i]->kind != DBK_SESSION_PROGRAM_LOOKAHEAD;
        DBK_ASSERT(!progs[i]->graph || !evaluation || dbk_graph_step_bytes(progs[i]->graph) == dbk_graph_step_bytes(eg));
    }

    /* Allocate everything but the activations. */
    const size_t image_bytes = dbk_image_shape_bytes(&cfg->input);
    DBK_TRY(dbk_session_alloc(s, n_params * 4, "parameters", &s->params));
    DBK_TRY(dbk_session_alloc(s, n_state * 4, "batch-norm statistics", &s->state));
    DBK_TRY(dbk_session_alloc(s, dbk_graph_step_bytes(eg), "evaluation per-step values", &s->eval_steps));
    if (cfg->streamed_eval) {
        DBK_TRY(dbk_session_alloc(s, (size_t)eval_batch * image_bytes, "evaluation batch", &s->eval_images));
        DBK_TRY(alloc_zeros(s, (size_t)eval_batch, "evaluation batch zeros", &s->eval_zeros));
        DBK_TRY(dbk_session_alloc(s, (size_t)eval_batch * 4, "evaluation batch labels", &s->eval_batch_labels));
    } else {
        DBK_TRY(dbk_session_alloc(s, (size_t)cfg->test_count * image_bytes, "test images", &s->test_images));
        DBK_TRY(dbk_session_alloc(s, (size_t)cfg->test_count, "test labels", &s->test_labels));
    }
    if (!(s->eval_host = dbk_calloc(1, dbk_graph_step_bytes(eg) + 1))) return DBK_ERR_OUT_OF_HOST_MEMORY;
    if (s->tta_score.graph) {
        const size_t m = (size_t)cfg->test_count;
        DBK_TRY(dbk_session_alloc(s, m * (size_t)cfg->num_classes * 4, "test logits (selective TTA)", &s->tta_table));
        DBK_TRY(dbk_session_alloc(s, (size_t)(s->tta_k ? s->tta_k : 1) * 4, "selected rows", &s->tta_rows));
        DBK_TRY(dbk_session_alloc(s, m * 4, "selection work", &s->tta_work));
        DBK_TRY(dbk_session_alloc(s, m * 4, "test labels (i32)", &s->test_labels_i32));
    }
    if (train) {
        const size_t step_bytes = dbk_graph_step_bytes(s->train.graph);
        DBK_TRY(dbk_session_alloc(s, n_params * 4, "gradients", &s->grads));
        const bool adamw = r->optimizer == DBK_OPTIMIZER_ADAMW;
        DBK_TRY(dbk_session_alloc(s, n_params * 4, adamw ? "AdamW first moments" : "momentum", &s->momentum));
        if (adamw) DBK_TRY(dbk_session_alloc(s, n_params * 4, "AdamW second moments", &s->exp_avg_sq));
        DBK_TRY(dbk_session_alloc(s, step_bytes, "training per-step values", &s->train_steps));
        if (cfg->fp16) DBK_TRY(dbk_session_alloc(s, DBK_SESSION_AMP_STATE * 4, "loss scaler state", &s->amp_state));
        s->train_host = dbk_calloc(1, step_bytes + 1);
        if (!s->train_host) return DBK_ERR_OUT_OF_HOST_MEMORY;
        if (cfg->streamed) {
            /* One batch: its images, and its labels as i32 (DBK_OP_AUGMENT's u8 labels hold at
             * most 256 classes; its own label output is unused here, fed zeros). */
            DBK_TRY(dbk_session_alloc(s, (size_t)cfg->batch * image_bytes, "training batch", &s->train_images));
            DBK_TRY(alloc_zeros(s, (size_t)cfg->batch, "training batch zeros", &s->train_labels));
            DBK_TRY(dbk_session_alloc(s, (size_t)cfg->batch * 4, "training batch labels", &s->batch_labels));
        } else {
            DBK_TRY(dbk_session_alloc(s, (size_t)cfg->train_count * image_bytes, "training images", &s->train_images));
            DBK_TRY(dbk_session_alloc(s, (size_t)cfg->train_count, "training labels", &s->train_labels));
            /* passes_per_epoch: that many shuffles side by side (train/epoch_order.h) */
            const size_t order = (size_t)cfg->train_count * (size_t)dbk_session_passes(s);
            DBK_TRY(dbk_session_alloc(s, order * 4, "shuffle indices", &s->indices));
            if (!(s->perm = dbk_malloc(order * sizeof *s->perm))) return DBK_ERR_OUT_OF_HOST_MEMORY;
            if (!(s->perm_scratch = dbk_malloc((size_t)cfg->train_count * sizeof *s->perm_scratch)))
                return DBK_ERR_OUT_OF_HOST_MEMORY;
        }
    }
    if (s->lookahead.graph) {
        const size_t step_bytes = dbk_graph_step_bytes(s->lookahead.graph);
        DBK_TRY(dbk_session_alloc(s, n_params * 4, "lookahead parameters", &s->ema_params));
        DBK_TRY(dbk_session_alloc(s, n_state * 4, "lookahead statistics", &s->ema_state));
        DBK_TRY(dbk_session_alloc(s, step_bytes, "lookahead per-step values", &s->lookahead_steps));
        if (!(s->lookahead_host = dbk_calloc(1, step_bytes + 1))) return DBK_ERR_OUT_OF_HOST_MEMORY;
    }
    if (train && s->mask_spec.method != DBK_MASK_ALL) DBK_TRY(dbk_session_alloc_mask(s));

    /* Build: the same layout again, now with buffers, assembling the programs. Activations go
     * to a virtual arena until the memory plan has placed them by lifetime. */
    for (int i = 0; i < nprogs; i++) {
        if (!progs[i]->graph) continue;
        const bool training = progs[i]->kind == DBK_SESSION_PROGRAM_TRAIN, fisher = progs[i] == &s->fisher;
        /* The Fisher program's batch norm updates scratch statistics: the model's stay as trained. */
        const dbk_graph_buffers bufs = {.params = s->params,
                                        .grads = training || fisher ? s->grads : NULL,
                                        .state = fisher ? s->fisher_state : s->state,
                                        .arena = dbk_memplan_virtual_arena(),
                                        .steps = steps_of(s, progs[i])};
        dbk_graph_begin_build(progs[i]->graph, &bufs);
        DBK_TRY(dbk_session_lay_out(s, progs[i]));
    }
    DBK_TRY(dbk_session_place_activations(s));
    if (s->mask) DBK_TRY(dbk_session_place_mask(s));

    /* Let the backend size workspaces, build kernels and record every sequence, once. */
    for (int i = 0; i < nprogs; i++) {
        dbk_session_program *p = progs[i];
        if (!p->graph) continue;
        /* the update apart for the exchange (distributed); loss scaling skips it on the device */
        const int apart = p->kind == DBK_SESSION_PROGRAM_TRAIN && cfg->separate_update ? p->update_count : 0;
        DBK_TRY(dbk_program_create(be, p->ops, p->count - apart, &p->recorded));
        if (apart) DBK_TRY(dbk_program_create(be, p->ops + p->count - apart, apart, &s->update));
    }
    return DBK_OK;
}

dbk_status dbk_session_create(dbk_backend *be, const dbk_session_config *cfg, dbk_session **out) {
    *out = NULL;
    if (cfg->batch < 1 || cfg->eval_batch < 1)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "batch size must be >= 1 (got %d)", cfg->batch);
    if (cfg->streamed && cfg->train_count < 1)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "a streamed session trains (its training set may not be empty)");
    const int shards = cfg->shard_count > 1 ? cfg->shard_count : 1;
    const int passes = cfg->recipe && cfg->recipe->passes_per_epoch > 1 ? cfg->recipe->passes_per_epoch : 1;
    if (cfg->train_count > 0 && passes > 1 && (cfg->batch * shards) % passes != 0)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "batch %d%s must be a multiple of the recipe's %d passes per epoch "
                             "(its rows are the passes' side by side)", cfg->batch * shards,
                             shards > 1 ? " (all ranks)" : "", passes);
    if (cfg->train_count > 0 && cfg->train_count / shards < cfg->batch)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "batch size %d%s is larger than the training set (%d images)",
                             cfg->batch * shards, shards > 1 ? " (all ranks)" : "", cfg->train_count);
    if (cfg->input.channels < 1 || cfg->input.height < 1 || cfg->input.width < 1 || cfg->num_classes < 1)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "session needs the dataset's image shape and classes (got %dx%dx%d, "
                             "%d classes)", cfg->input.channels, cfg->input.height, cfg->input.width, cfg->num_classes);
    const dbk_device_info *dev = dbk_backend_get_info(be);
    if (cfg->fp16 && dev->fp16_missing[0])
        return dbk_set_error(DBK_ERR_UNSUPPORTED, "--precision fp16: %s %s lacks %s",
                             dbk_backend_kind_name(dbk_backend_get_kind(be)), dev->name, dev->fp16_missing);
    if (cfg->fp16 && cfg->separate_update)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "--precision fp16 with distributed training is not supported yet");
    const bool masked = cfg->mask && cfg->mask->method != DBK_MASK_ALL;
    if (masked && cfg->fp16)
        return dbk_set_error(DBK_ERR_UNSUPPORTED, "--sparse-mask with --precision fp16 is not supported yet");
    if (masked && cfg->streamed)
        return dbk_set_error(DBK_ERR_UNSUPPORTED, "--sparse-mask: the Fisher samples are read from the device-resident "
                             "training set; image-folder datasets (streamed) are not supported yet");
    dbk_session *s = dbk_calloc(1, sizeof *s);
    if (!s) return DBK_ERR_OUT_OF_HOST_MEMORY;
    dbk_loss_scaler_init(&s->scaler, DBK_LOSS_SCALE_INIT,
                         cfg->loss_scale_interval > 0 ? cfg->loss_scale_interval : DBK_LOSS_SCALE_INTERVAL);
    s->amp_dirty = cfg->fp16;   /* the device's copy of the scaler is written before the first step */
    s->be = be;
    s->cfg = *cfg;
    dbk_mask_spec_init(&s->mask_spec);
    if (cfg->mask) s->mask_spec = *cfg->mask;
    s->cfg.mask = &s->mask_spec;
    if (cfg->test_count < cfg->eval_batch) s->cfg.eval_batch = cfg->test_count > 0 ? cfg->test_count : 1;
    dbk_status st = build(s);
    if (st != DBK_OK) {
        dbk_session_destroy(s);
        return st;
    }
    *out = s;
    return DBK_OK;
}

void dbk_session_destroy(dbk_session *s) {
    if (!s) return;
    dbk_session_program *progs[] = {&s->train,      &s->train_late,   &s->eval,         &s->tail,
                                    &s->tta,        &s->tta_tail,     &s->lookahead,    &s->tta_select,
                                    &s->tta_selected, &s->tta_selected_tail, &s->tta_score, &s->fisher};
    dbk_program_destroy(s->update);
    dbk_session_free_mask(s);
    for (size_t i = 0; i < sizeof progs / sizeof progs[0]; i++) {
        dbk_program_destroy(progs[i]->recorded);
        dbk_graph_destroy(progs[i]->graph);
    }
    for (int i = 0; i < s->arena_chunks; i++) dbk_buffer_destroy(s->arena[i]);
    dbk_free(s->arena);
    dbk_memplan_destroy(s->memplan);
    dbk_buffer *bufs[] = {s->params,       s->grads,           s->momentum,    s->state,
                          s->ema_params,   s->ema_state,       s->train_steps, s->eval_steps,
                          s->lookahead_steps, s->train_images, s->train_labels, s->indices,
                          s->test_images,  s->test_labels,  s->exp_avg_sq, s->batch_labels,
                          s->eval_images,  s->eval_zeros,   s->eval_batch_labels, s->amp_state,
                          s->tta_table,    s->tta_rows,     s->tta_work,     s->test_labels_i32};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) dbk_buffer_destroy(bufs[i]);
    dbk_free(s->train_host);
    dbk_free(s->eval_host);
    dbk_free(s->lookahead_host);
    dbk_free(s->perm);
    dbk_free(s->perm_scratch);
    dbk_free(s->op_seconds);
    dbk_free(s);
}

uint64_t dbk_session_device_bytes(const dbk_session *s) { return s->device_bytes; }
int dbk_session_activation_buffers(const dbk_session *s) { return s->arena_chunks; }
size_t dbk_session_activation_bytes(const dbk_session *s) { return s->memplan ? dbk_memplan_total_bytes(s->memplan) : 0; }
size_t dbk_session_param_count(const dbk_session *s) { return dbk_graph_param_count(s->eval.graph); }

static bool same_shape(const dbk_session *s, const dbk_dataset *d) {
    const dbk_image_shape *in = &s->cfg.input;
    return d->channels == in->channels && d->height == in->height && d->width == in->width &&
           d->num_classes == s->cfg.num_classes;
}

dbk_status dbk_session_upload_data(dbk_session *s, const dbk_dataset *train, const dbk_dataset *test) {
    const size_t image_bytes = dbk_image_shape_bytes(&s->cfg.input);
    if (s->train_images && !s->cfg.streamed) {
        DBK_ASSERT(train && train->count == s->cfg.train_count && same_shape(s, train));
        DBK_TRY(dbk_buffer_write(s->train_images, 0, train->images, (size_t)train->count * image_bytes));
        DBK_TRY(dbk_buffer_write(s->train_labels, 0, train->labels, (size_t)train->count));
    }
    if (s->cfg.streamed_eval) return DBK_OK; /* evaluation batches come from the eval loader */
    DBK_ASSERT(test->count == s->cfg.test_count && same_shape(s, test));
    DBK_TRY(dbk_buffer_write(s->test_images, 0, test->images, (size_t)test->count * image_bytes));
    if (s->test_labels_i32) { /* selective TTA scores the whole table against these */
        int32_t *wide = dbk_malloc((size_t)test->count * sizeof *wide);
        if (!wide) return DBK_ERR_OUT_OF_HOST_MEMORY;
        for (int32_t i = 0; i < test->count; i++) wide[i] = test->labels[i];
        const dbk_status st = dbk_buffer_write(s->test_labels_i32, 0, wide, (size_t)test->count * sizeof *wide);
        dbk_free(wide);
        DBK_TRY(st);
    }
    return dbk_buffer_write(s->test_labels, 0, test->labels, (size_t)test->count);
}

/* n host rows into a one-batch image buffer and its i32 label buffer, labels checked. */
static dbk_status write_batch(dbk_session *s, const char *what, dbk_buffer *images_buf, dbk_buffer *labels_buf,
                              const uint8_t *images, const int32_t *labels, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (labels[i] < 0 || labels[i] >= s->cfg.num_classes)
            return dbk_set_error(DBK_ERR_INVALID_ARG, "%s batch row %zu has label %d, expected 0..%d", what, i,
                                 (int)labels[i], s->cfg.num_classes - 1);
    DBK_TRY(dbk_buffer_write(images_buf, 0, images, n * dbk_image_shape_bytes(&s->cfg.input)));
    return dbk_buffer_write(labels_buf, 0, labels, n * sizeof *labels);
}

dbk_status dbk_session_upload_batch(dbk_session *s, const uint8_t *images, const int32_t *labels) {
    DBK_ASSERT(s->cfg.streamed);
    dbk_cost_mark m;   /* part of the step's costs (session.h dbk_step_costs) */
    dbk_session_cost_begin(s, &m);
    const dbk_status st = write_batch(s, "training", s->train_images, s->batch_labels, images, labels,
                                      (size_t)s->cfg.batch);
    dbk_session_cost_end(s, &m, 0.0);
    return st;
}

dbk_status dbk_session_upload_eval_batch(dbk_session *s, const uint8_t *images, const int32_t *labels, int rows) {
    DBK_ASSERT(s->cfg.streamed_eval && rows >= 1 && rows <= s->cfg.eval_batch);
    return write_batch(s, "evaluation", s->eval_images, s->eval_batch_labels, images, labels, (size_t)rows);
}

void dbk_session_set_eval_loader(dbk_session *s, dbk_loader *loader) {
    DBK_ASSERT(s->cfg.streamed_eval);
    s->eval_loader = loader;
}
