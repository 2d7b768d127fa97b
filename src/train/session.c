/*
 * session.c — creating and destroying a session: plan, allocate, build, place, record (see
 * session.h); and the upload of the resident datasets. The other jobs of a session are in
 * their own files (session_impl.h lists them).
 */
#include "train/session.h"

#include <string.h>

#include "core/alloc.h"
#include "train/session_impl.h"

static dbk_status graph_for(const dbk_session_config *cfg, bool training, int batch, dbk_session_program *p) {
    dbk_graph_config gc = {.training = training, .bn = cfg->recipe->bn};
    p->batch = batch;
    return dbk_graph_create(&gc, &p->graph);
}

/* Plans every program, allocates parameters, optimizer state, statistics, per-step values
 * and the datasets, builds the programs against a virtual arena, places the activations and
 * records the programs on the backend. */
static dbk_status build(dbk_session *s) {
    const dbk_session_config *cfg = &s->cfg;
    const bool train = cfg->train_count > 0;
    const int eval_batch = cfg->eval_batch, tail_batch = cfg->test_count % eval_batch;
    dbk_backend *be = s->be;

    if (train) DBK_TRY(graph_for(cfg, true, cfg->batch, &s->train));
    DBK_TRY(graph_for(cfg, false, eval_batch, &s->eval));
    if (tail_batch) DBK_TRY(graph_for(cfg, false, tail_batch, &s->tail));
    dbk_session_program *progs[3] = {&s->train, &s->eval, &s->tail};

    /* Plan. */
    for (int i = 0; i < 3; i++)
        if (progs[i]->graph) DBK_TRY(dbk_session_lay_out(s, progs[i], progs[i] == &s->train));
    const dbk_graph *eg = s->eval.graph;
    size_t n_params = dbk_graph_param_count(eg), n_state = dbk_graph_state_count(eg);
    DBK_ASSERT(!s->tail.graph || dbk_graph_step_bytes(s->tail.graph) == dbk_graph_step_bytes(eg));

    /* Allocate everything but the activations. */
    const size_t image_bytes = dbk_image_shape_bytes(&cfg->input);
    DBK_TRY(dbk_session_alloc(s, n_params * 4, "parameters", &s->params));
    DBK_TRY(dbk_session_alloc(s, n_state * 4, "batch-norm statistics", &s->state));
    DBK_TRY(dbk_session_alloc(s, dbk_graph_step_bytes(eg), "evaluation per-step values", &s->eval_steps));
    DBK_TRY(dbk_session_alloc(s, (size_t)cfg->test_count * image_bytes, "test images", &s->test_images));
    DBK_TRY(dbk_session_alloc(s, (size_t)cfg->test_count, "test labels", &s->test_labels));
    if (!(s->eval_host = dbk_calloc(1, dbk_graph_step_bytes(eg) + 1))) return DBK_ERR_OUT_OF_HOST_MEMORY;
    if (train) {
        const size_t step_bytes = dbk_graph_step_bytes(s->train.graph);
        DBK_TRY(dbk_session_alloc(s, n_params * 4, "gradients", &s->grads));
        DBK_TRY(dbk_session_alloc(s, n_params * 4, "momentum", &s->momentum));
        DBK_TRY(dbk_session_alloc(s, step_bytes, "training per-step values", &s->train_steps));
        DBK_TRY(dbk_session_alloc(s, (size_t)cfg->train_count * image_bytes, "training images", &s->train_images));
        DBK_TRY(dbk_session_alloc(s, (size_t)cfg->train_count, "training labels", &s->train_labels));
        DBK_TRY(dbk_session_alloc(s, (size_t)cfg->train_count * 4, "shuffle indices", &s->indices));
        s->perm = dbk_malloc((size_t)cfg->train_count * sizeof *s->perm);
        s->train_host = dbk_calloc(1, step_bytes + 1);
        if (!s->perm || !s->train_host) return DBK_ERR_OUT_OF_HOST_MEMORY;
    }

    /* Build: the same layout again, now with buffers, assembling the programs. Activations go
     * to a virtual arena until the memory plan has placed them by lifetime. */
    for (int i = 0; i < 3; i++) {
        if (!progs[i]->graph) continue;
        const bool training = progs[i] == &s->train;
        const dbk_graph_buffers bufs = {.params = s->params,
                                        .grads = training ? s->grads : NULL,
                                        .state = s->state,
                                        .arena = dbk_memplan_virtual_arena(),
                                        .steps = training ? s->train_steps : s->eval_steps};
        dbk_graph_begin_build(progs[i]->graph, &bufs);
        DBK_TRY(dbk_session_lay_out(s, progs[i], training));
    }
    DBK_TRY(dbk_session_place_activations(s));

    /* Let the backend size workspaces, build kernels and record every sequence, once. */
    for (int i = 0; i < 3; i++)
        if (progs[i]->graph) DBK_TRY(dbk_program_create(be, progs[i]->ops, progs[i]->count, &progs[i]->recorded));
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
    dbk_session *s = dbk_calloc(1, sizeof *s);
    if (!s) return DBK_ERR_OUT_OF_HOST_MEMORY;
    s->be = be;
    s->cfg = *cfg;
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
    dbk_session_program *progs[3] = {&s->train, &s->eval, &s->tail};
    for (int i = 0; i < 3; i++) {
        dbk_program_destroy(progs[i]->recorded);
        dbk_graph_destroy(progs[i]->graph);
    }
    for (int i = 0; i < s->arena_chunks; i++) dbk_buffer_destroy(s->arena[i]);
    dbk_free(s->arena);
    dbk_memplan_destroy(s->memplan);
    dbk_buffer *bufs[] = {s->params,       s->grads,        s->momentum, s->state,       s->train_steps, s->eval_steps,
                          s->train_images, s->train_labels, s->indices,  s->test_images, s->test_labels};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) dbk_buffer_destroy(bufs[i]);
    dbk_free(s->train_host);
    dbk_free(s->eval_host);
    dbk_free(s->perm);
    dbk_free(s->op_seconds);
    dbk_free(s);
}

uint64_t dbk_session_device_bytes(const dbk_session *s) { return s->device_bytes; }
int dbk_session_activation_buffers(const dbk_session *s) { return s->arena_chunks; }
size_t dbk_session_param_count(const dbk_session *s) { return dbk_graph_param_count(s->eval.graph); }

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
