/*
 * test_model.c — the model table and the network as a whole on the CPU reference backend:
 *   - every table entry is found by name and lays out on its dataset's image shape, for any
 *     number of classes; a model defined outside the table (one definition, no other file)
 *     trains in a session whose image shape and classes come from its (non-CIFAR) data;
 *   - every parameter gradient of a small ResNet9 (all layer kinds: conv, batch norm, ReLU,
 *     max pool, residual fork/add, global pool, linear, scale, softmax cross-entropy)
 *     matches central finite differences of the loss, so the graph wires backward correctly;
 *   - a training session is deterministic: the same seed gives bit-identical counters, a
 *     different seed does not;
 *   - a checkpoint round trip gives bit-identical evaluation.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/alloc.h"
#include "core/rng.h"
#include "data/cifar10.h"
#include "data/dataset.h"
#include "models/models.h"
#include "models/resnet9.h"
#include "nn/graph.h"
#include "train/session.h"
#include "test_util.h"
#include "train/checkpoint.h"

/* ---------------------------------------------------------------------------------- */
/* the model table                                                                    */

static int model_table_should_find_each_model_and_list_names_on_unknown(void) {
    const char *const expected[] = {"resnet9", "resnet9-half", "resnet9-quarter"};
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
        const dbk_model_def *m = NULL;
        DBK_CHECK_OK(dbk_model_find(expected[i], &m));
        DBK_CHECK(strcmp(m->name, expected[i]) == 0 && m->forward && m->config && m->description && m->dataset);
    }
    const dbk_model_def *m;
    DBK_CHECK(dbk_model_find("resnet1000", &m) == DBK_ERR_NOT_FOUND);
    DBK_CHECK_MSG(strstr(dbk_last_error(), "unknown model 'resnet1000' (known: resnet9, resnet9-half, resnet9-quarter") !=
                      NULL,
                  "%s", dbk_last_error());
    for (int i = 0; i < dbk_model_count(); i++) {
        DBK_CHECK_OK(dbk_model_find(dbk_model_at(i)->name, &m));
        DBK_CHECK(m == dbk_model_at(i));
    }
    return 0;
}

/* Lays def out for a batch of 2 of shape in; the logits must be (2, classes, 1, 1). */
static int lays_out_with_logits(const dbk_model_def *def, dbk_image_shape in, int classes) {
    dbk_graph *g;
    dbk_graph_config cfg = {.training = true, .bn = {1e-5f, 0.1f}};
    DBK_CHECK_OK(dbk_graph_create(&cfg, &g));
    dbk_value x = dbk_graph_value(g, true, 2, in.channels, in.height, in.width);
    dbk_value z = dbk_model_forward(g, def, x, classes);
    dbk_status st = dbk_graph_status(g);
    size_t params = dbk_graph_param_count(g);
    dbk_graph_destroy(g);
    DBK_CHECK_MSG(st == DBK_OK, "%s on %dx%dx%d: %s", def->name, in.channels, in.height, in.width, dbk_last_error());
    DBK_CHECK_MSG(z.data.shape[0] == 2 && z.data.shape[1] == classes && z.data.shape[2] == 1 && z.data.shape[3] == 1,
                  "%s: logits (%lld, %lld, %lld, %lld)", def->name, (long long)z.data.shape[0],
                  (long long)z.data.shape[1], (long long)z.data.shape[2], (long long)z.data.shape[3]);
    DBK_CHECK(params > 0);
    return 0;
}

static int every_model_should_lay_out_on_its_datasets_shape(void) {
    for (int i = 0; i < dbk_model_count(); i++) {
        const dbk_model_def *m = dbk_model_at(i);
        const dbk_dataset_kind *k;
        DBK_CHECK_OK(dbk_dataset_kind_find(m->dataset, &k));
        if (lays_out_with_logits(m, k->shape, 10)) return 1;
        if (lays_out_with_logits(m, k->shape, 7)) return 1;   /* classes come from the caller */
    }
    return 0;
}

/* A model that exists only here: conv-bn-relu, global max pool, linear. */
typedef struct tiny_config {
    int64_t width;
} tiny_config;

static dbk_value tiny_forward(dbk_graph *g, const void *config, dbk_value x, int num_classes) {
    const tiny_config *c = config;
    dbk_value y = dbk_nn_conv(g, x, c->width, 3, 1, 1, "stem.conv");
    y = dbk_nn_batchnorm(g, y, "stem.bn");
    y = dbk_nn_relu(g, y);
    y = dbk_nn_global_maxpool(g, y, "pool");
    return dbk_nn_linear(g, y, num_classes, "linear");
}

static const tiny_config tiny_cfg = {8};
static const dbk_model_def tiny = {
    .name = "tiny", .description = "test", .dataset = "cifar10", .forward = tiny_forward, .config = &tiny_cfg,
};

/* Random u8 images of shape in and labels below classes (a shape no real dataset here has). */
static int make_images(dbk_dataset *d, int32_t count, dbk_image_shape in, int classes, uint64_t seed) {
    memset(d, 0, sizeof *d);
    d->count = count;
    d->channels = in.channels;
    d->height = in.height;
    d->width = in.width;
    d->num_classes = classes;
    d->images = dbk_malloc((size_t)count * dbk_image_shape_bytes(&in));
    d->labels = dbk_malloc((size_t)count);
    DBK_CHECK(d->images && d->labels);
    dbk_rng rng;
    dbk_rng_init(&rng, seed);
    for (size_t i = 0; i < (size_t)count * dbk_image_shape_bytes(&in); i++) d->images[i] = (uint8_t)dbk_rng_below(&rng, 256);
    for (int32_t i = 0; i < count; i++) d->labels[i] = (uint8_t)dbk_rng_below(&rng, (uint32_t)classes);
    return 0;
}

static int a_model_outside_the_table_should_train_on_the_datasets_shape(void) {
    const dbk_image_shape in = {3, 12, 20};
    const int classes = 5;
    dbk_dataset train, test;
    if (make_images(&train, 32, in, classes, 1) || make_images(&test, 12, in, classes, 2)) return 1;
    const dbk_recipe *recipe;
    DBK_CHECK_OK(dbk_recipe_find("quick", &recipe));
    const dbk_model_def *models[] = {&tiny, NULL};
    DBK_CHECK_OK(dbk_model_find("resnet9-quarter", &models[1]));   /* a table model, same data */
    for (int m = 0; m < 2; m++) {
        dbk_backend *be;
        dbk_session *s;
        DBK_CHECK_OK(dbk_backend_create(DBK_BACKEND_KIND_CPU, 0, &be));
        dbk_session_config cfg = {.recipe = recipe, .model = models[m], .input = in, .num_classes = classes,
                                  .batch = 8, .eval_batch = 8, .train_count = train.count, .test_count = test.count};
        DBK_CHECK_OK(dbk_session_create(be, &cfg, &s));
        DBK_CHECK_OK(dbk_session_upload_data(s, &train, &test));
        DBK_CHECK_OK(dbk_session_init_params(s, 5));
        DBK_CHECK_OK(dbk_session_begin_epoch(s, 1, 5));
        for (int step = 0; step < dbk_session_steps_per_epoch(s); step++)
            DBK_CHECK_OK(dbk_session_train_step(s, step, 0.05f));
        dbk_epoch_counters tc, ec;
        DBK_CHECK_OK(dbk_session_end_epoch(s, &tc));
        DBK_CHECK_OK(dbk_session_evaluate(s, &ec));
        dbk_session_destroy(s);
        dbk_backend_destroy(be);
        printf("  %s on %dx%dx%d, %d classes: train loss %.4f, %.0f/%lld test images right\n", models[m]->name,
               in.channels, in.height, in.width, classes, tc.loss_sum / (double)tc.images, ec.correct,
               (long long)ec.images);
        DBK_CHECK(tc.images == 32 && ec.images == 12);
        DBK_CHECK(isfinite(tc.loss_sum) && isfinite(ec.loss_sum) && tc.loss_sum > 0.0);
        DBK_CHECK(ec.correct >= 0.0 && ec.correct <= 12.0);
    }
    dbk_dataset_deinit(&train);
    dbk_dataset_deinit(&test);
    return 0;
}

/* A model with parameter groups: a frozen Dirac-initialised conv, batch norm with its scale
 * frozen and its shift in "shift", and a linear layer in the default group. */
static dbk_value grouped_forward(dbk_graph *g, const void *config, dbk_value x, int num_classes) {
    (void)config;
    const dbk_conv_options co = {.r = 3, .stride = 1, .pad = 1, .init = DBK_PARAM_INIT_DIRAC,
                                 .weight_group = DBK_GRAPH_GROUP_FROZEN};
    dbk_value y = dbk_nn_conv_ex(g, x, 4, &co, "stem.conv");
    const dbk_batchnorm_options bo = {.weight_group = DBK_GRAPH_GROUP_FROZEN, .bias_group = "shift"};
    y = dbk_nn_batchnorm_ex(g, y, &bo, "stem.bn");
    y = dbk_nn_relu(g, y);
    y = dbk_nn_global_maxpool(g, y, "pool");
    return dbk_nn_linear(g, y, num_classes, "linear");
}

static const dbk_model_def grouped = {.name = "grouped", .description = "test", .dataset = "cifar10",
                                      .forward = grouped_forward};

typedef struct param_snapshot {
    float conv[4 * 3 * 3 * 3], gamma[4], beta[4], linear[5 * 4];
} param_snapshot;

static int snapshot(dbk_session *s, const char *path, param_snapshot *out) {
    DBK_CHECK_OK(dbk_session_save(s, path, "{}"));
    dbk_checkpoint *c;
    DBK_CHECK_OK(dbk_checkpoint_load(path, &c));
    const char *names[4] = {"stem.conv.weight", "stem.bn.weight", "stem.bn.bias", "linear.weight"};
    float *dst[4] = {out->conv, out->gamma, out->beta, out->linear};
    const size_t n[4] = {sizeof out->conv, sizeof out->gamma, sizeof out->beta, sizeof out->linear};
    for (int i = 0; i < 4; i++) {
        const dbk_ckpt_tensor *t = dbk_checkpoint_find(c, names[i]);
        DBK_CHECK_MSG(t != NULL, "%s", names[i]);
        memcpy(dst[i], t->data, n[i]);
    }
    dbk_checkpoint_destroy(c);
    return 0;
}

/* Trains one epoch (4 steps) with the recipe's rules and returns the parameters after it. */
static int train_grouped_epoch(const dbk_recipe *recipe, int epoch, param_snapshot *before, param_snapshot *after) {
    const dbk_image_shape in = {3, 8, 8};
    dbk_dataset train, test;
    if (make_images(&train, 32, in, 5, 3) || make_images(&test, 8, in, 5, 4)) return 1;
    dbk_backend *be;
    dbk_session *s;
    DBK_CHECK_OK(dbk_backend_create(DBK_BACKEND_KIND_CPU, 0, &be));
    dbk_session_config cfg = {.recipe = recipe, .model = &grouped, .input = in, .num_classes = 5,
                              .batch = 8, .eval_batch = 8, .train_count = train.count, .test_count = test.count};
    DBK_CHECK_OK(dbk_session_create(be, &cfg, &s));
    DBK_CHECK_OK(dbk_session_upload_data(s, &train, &test));
    DBK_CHECK_OK(dbk_session_init_params(s, 9));
    char path[512];
    snprintf(path, sizeof path, "%s/groups.ckpt", dbk_test_tmpdir("model_groups"));
    if (snapshot(s, path, before)) return 1;
    DBK_CHECK_OK(dbk_session_begin_epoch(s, epoch, 9));
    for (int step = 0; step < dbk_session_steps_per_epoch(s); step++) DBK_CHECK_OK(dbk_session_train_step(s, step, 0.5f));
    dbk_epoch_counters tc;
    DBK_CHECK_OK(dbk_session_end_epoch(s, &tc));
    if (snapshot(s, path, after)) return 1;
    dbk_session_destroy(s);
    dbk_backend_destroy(be);
    dbk_dataset_deinit(&train);
    dbk_dataset_deinit(&test);
    return 0;
}

static int parameter_groups_should_follow_the_recipes_rules(void) {
    const dbk_recipe *quick;
    DBK_CHECK_OK(dbk_recipe_find("quick", &quick));
    dbk_recipe r = *quick;
    r.augment.cutout = 0; /* an 8x8 cutout would blank these 8x8 images: no gradient at all */
    r.group_count = 1;
    r.groups[0] = (dbk_recipe_group){.name = "shift", .lr_scale = 1.0f, .weight_decay_scale = 1.0f, .until_epoch = 2};
    param_snapshot b, a;

    /* Epoch 1 (before until_epoch): the shift and the linear weight train; frozen ones do not. */
    if (train_grouped_epoch(&r, 1, &b, &a)) return 1;
    DBK_CHECK(!memcmp(b.conv, a.conv, sizeof a.conv) && !memcmp(b.gamma, a.gamma, sizeof a.gamma));
    DBK_CHECK(memcmp(b.beta, a.beta, sizeof a.beta) != 0);
    DBK_CHECK(memcmp(b.linear, a.linear, sizeof a.linear) != 0);
    /* Dirac: filter i passes input channel i (i < 3) through the centre tap; filter 3 keeps its
     * kaiming draw. */
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 27; j++) DBK_CHECK(a.conv[i * 27 + j] == (j == (i * 3 + 1) * 3 + 1 ? 1.0f : 0.0f));
    int nonzero = 0;
    for (int j = 0; j < 27; j++) nonzero += a.conv[3 * 27 + j] != 0.0f;
    DBK_CHECK(nonzero > 20);

    /* Epoch 3 (0-based 2 = until_epoch): the shift's learning rate is 0, it stays. */
    if (train_grouped_epoch(&r, 3, &b, &a)) return 1;
    DBK_CHECK(!memcmp(b.beta, a.beta, sizeof a.beta));
    DBK_CHECK(memcmp(b.linear, a.linear, sizeof a.linear) != 0);
    /* A scale of 0 stops a group from the start. */
    r.groups[0].until_epoch = 0;
    r.groups[0].lr_scale = 0.0f;
    if (train_grouped_epoch(&r, 1, &b, &a)) return 1;
    DBK_CHECK(!memcmp(b.beta, a.beta, sizeof a.beta));
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* whole-model gradient check                                                          */

typedef struct gradcheck {
    dbk_backend *be;
    dbk_graph   *g;
    dbk_buffer  *params, *grads, *state, *arena, *scalars;
    dbk_tensor   x, labels, probs, loss, logits, dlogits;
    size_t       n_params;
} gradcheck;

static dbk_status lay_out(gradcheck *c, const dbk_model_def *def, int n, int hw, int classes) {
    dbk_value x = dbk_graph_value(c->g, false, n, 3, hw, hw);
    c->x = x.data;
    c->labels = dbk_graph_tensor(c->g, DBK_DTYPE_I32, 1, n, 1, 1, 1);
    dbk_value z = dbk_model_forward(c->g, def, x, classes);
    c->probs = dbk_graph_tensor(c->g, DBK_DTYPE_F32, 2, n, classes, 1, 1);
    c->logits = z.data;
    c->logits.ndim = 2;
    c->dlogits = z.grad;
    c->dlogits.ndim = 2;
    return dbk_graph_status(c->g);
}

static dbk_status forward_loss(gradcheck *c, float *loss) {
    const float zero = 0.0f;
    DBK_TRY(dbk_tensor_write(&c->loss, &zero));
    const dbk_op_desc *ops = dbk_graph_forward_ops(c->g);
    for (int i = 0; i < dbk_graph_forward_count(c->g); i++) DBK_TRY(dbk_backend_run(c->be, &ops[i]));
    dbk_op_desc l = {.op = DBK_OP_SOFTMAX_XENT_FWD};
    l.src[0] = c->logits;
    l.src[1] = c->labels;
    l.dst[0] = c->probs;
    l.dst[1] = c->loss;
    DBK_TRY(dbk_backend_run(c->be, &l));
    return dbk_tensor_read(&c->loss, loss);
}

static dbk_status backward(gradcheck *c) {
    dbk_op_desc b = {.op = DBK_OP_SOFTMAX_XENT_BWD, .p.xent = {0.0f, 1.0f}};
    b.src[0] = c->probs;
    b.src[1] = c->labels;
    b.dst[0] = c->dlogits;
    DBK_TRY(dbk_backend_run(c->be, &b));
    const dbk_op_desc *ops = dbk_graph_backward_ops(c->g);
    for (int i = 0; i < dbk_graph_backward_count(c->g); i++) DBK_TRY(dbk_backend_run(c->be, &ops[i]));
    return DBK_OK;
}

static int resnet9_gradients_should_match_finite_differences(void) {
    /* Small widths and 16x16 images keep it fast; logit scale 1 keeps gradients well above
     * fp32 rounding of the summed loss. */
    const dbk_resnet9_config small = {{4, 6, 6, 8}, 1.0f};
    const dbk_model_def def = {"resnet9-test", "test", "cifar10", dbk_resnet9_forward, &small};
    const int n = 4, hw = 16, classes = 10;
    gradcheck c;
    memset(&c, 0, sizeof c);
    DBK_CHECK_OK(dbk_backend_create(DBK_BACKEND_KIND_CPU, 0, &c.be));
    dbk_graph_config cfg = {.training = true, .bn = {1e-5f, 0.1f}};
    DBK_CHECK_OK(dbk_graph_create(&cfg, &c.g));
    DBK_CHECK_OK(lay_out(&c, &def, n, hw, classes));
    c.n_params = dbk_graph_param_count(c.g);
    DBK_CHECK_OK(dbk_buffer_create(c.be, c.n_params * 4, &c.params));
    DBK_CHECK_OK(dbk_buffer_create(c.be, c.n_params * 4, &c.grads));
    DBK_CHECK_OK(dbk_buffer_create(c.be, dbk_graph_state_count(c.g) * 4, &c.state));
    DBK_CHECK_OK(dbk_buffer_create(c.be, dbk_graph_arena_bytes(c.g), &c.arena));
    DBK_CHECK_OK(dbk_buffer_create(c.be, 64, &c.scalars));
    c.loss = dbk_tensor_make(c.scalars, 0, DBK_DTYPE_F32, 1, 1, 1, 1, 1);
    const dbk_graph_buffers bufs = {.params = c.params, .grads = c.grads, .state = c.state, .arena = c.arena};
    dbk_graph_begin_build(c.g, &bufs);
    DBK_CHECK_OK(lay_out(&c, &def, n, hw, classes));

    /* Random inputs, labels and parameters (gamma near 1, other params uniform). */
    dbk_rng rng;
    dbk_rng_init(&rng, 42);
    float *host = dbk_calloc(c.n_params, 4);
    float *x = dbk_calloc((size_t)dbk_tensor_numel(&c.x), 4);
    float *state = dbk_calloc(dbk_graph_state_count(c.g) + 1, 4);
    int32_t labels[4];
    for (int64_t i = 0; i < dbk_tensor_numel(&c.x); i++) x[i] = dbk_rng_normal(&rng);
    for (int i = 0; i < n; i++) labels[i] = (int32_t)dbk_rng_below(&rng, classes);
    for (int i = 0; i < dbk_graph_param_info_count(c.g); i++) {
        const dbk_param_info *pi = dbk_graph_param_info(c.g, i);
        int64_t count = 1;
        for (int d = 0; d < pi->ndim; d++) count *= pi->shape[d];
        for (int64_t j = 0; j < count; j++) {
            float u = 2.0f * dbk_rng_uniform(&rng) - 1.0f;
            host[pi->offset + (size_t)j] = pi->init == DBK_PARAM_INIT_ONES ? 1.0f + 0.2f * u : 0.5f * u;
        }
    }
    DBK_CHECK_OK(dbk_tensor_write(&c.x, x));
    DBK_CHECK_OK(dbk_tensor_write(&c.labels, labels));
    DBK_CHECK_OK(dbk_buffer_write(c.params, 0, host, c.n_params * 4));
    DBK_CHECK_OK(dbk_buffer_write(c.state, 0, state, dbk_graph_state_count(c.g) * 4));

    float loss0;
    DBK_CHECK_OK(forward_loss(&c, &loss0));
    DBK_CHECK_OK(backward(&c));
    float *grad = dbk_calloc(c.n_params, 4);
    DBK_CHECK_OK(dbk_buffer_read(c.grads, 0, grad, c.n_params * 4));

    /* Check a few coordinates of every parameter tensor. */
    const float eps = 3e-3f;
    double num = 0.0, den = 0.0;
    int checked = 0;
    for (int i = 0; i < dbk_graph_param_info_count(c.g); i++) {
        const dbk_param_info *pi = dbk_graph_param_info(c.g, i);
        int64_t count = 1;
        for (int d = 0; d < pi->ndim; d++) count *= pi->shape[d];
        double tnum = 0.0, tden = 0.0;
        for (int k = 0; k < 4; k++) {
            size_t j = pi->offset + (size_t)dbk_rng_below(&rng, (uint32_t)count);
            float saved = host[j], lp, lm;
            host[j] = saved + eps;
            DBK_CHECK_OK(dbk_buffer_write(c.params, j * 4, &host[j], 4));
            DBK_CHECK_OK(forward_loss(&c, &lp));
            host[j] = saved - eps;
            DBK_CHECK_OK(dbk_buffer_write(c.params, j * 4, &host[j], 4));
            DBK_CHECK_OK(forward_loss(&c, &lm));
            host[j] = saved;
            DBK_CHECK_OK(dbk_buffer_write(c.params, j * 4, &host[j], 4));
            double fd = ((double)lp - (double)lm) / (2.0 * (double)eps);
            double diff = fd - (double)grad[j];
            tnum += diff * diff;
            tden += fd * fd;
            checked++;
        }
        num += tnum;
        den += tden;
        double tn = tden > 0 ? tnum / tden : tnum;
        if (tn > 1e-2) printf("  %-28s nmse %.3g\n", pi->name, tn);
    }
    double nmse = num / den;
    printf("  %d coordinates of %d tensors: nmse %.3g (loss %.4f)\n", checked, dbk_graph_param_info_count(c.g), nmse,
           (double)loss0);
    dbk_free(host);
    dbk_free(x);
    dbk_free(state);
    dbk_free(grad);
    dbk_buffer_destroy(c.params);
    dbk_buffer_destroy(c.grads);
    dbk_buffer_destroy(c.state);
    dbk_buffer_destroy(c.arena);
    dbk_buffer_destroy(c.scalars);
    dbk_graph_destroy(c.g);
    dbk_backend_destroy(c.be);
    /* Central differences in fp32 through 8 batch norms, ReLU kinks and max-pool switches
     * measure about 5e-4 here at eps 3e-3 (2.9e-3 at eps 1e-2: truncation error, not a
     * wiring error); a mis-wired backward gives an NMSE near 1. */
    DBK_CHECK_MSG(nmse < 2e-3, "whole-model gradient NMSE %.3g >= 2e-3", nmse);
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* sessions on real data                                                               */

static dbk_dataset train_set, test_set;

typedef struct run_result {
    dbk_epoch_counters train, test;
} run_result;

static dbk_status train_two_epochs(uint64_t seed, const char *save_path, run_result *out) {
    dbk_backend *be;
    dbk_session *s;
    const dbk_session_config cfg = {.batch = 64, .eval_batch = 64};
    DBK_TRY(dbk_test_quick_session(DBK_BACKEND_KIND_CPU, 0, cfg, &train_set, &test_set, seed, &be, &s));
    dbk_status st = DBK_OK;
    for (int epoch = 1; epoch <= 2 && st == DBK_OK; epoch++) {
        st = dbk_session_begin_epoch(s, epoch, seed);
        for (int step = 0; step < dbk_session_steps_per_epoch(s) && st == DBK_OK; step++)
            st = dbk_session_train_step(s, step, 0.2f);
        if (st == DBK_OK) st = dbk_session_end_epoch(s, &out->train);
    }
    if (st == DBK_OK) st = dbk_session_evaluate(s, &out->test);
    if (st == DBK_OK && save_path) st = dbk_session_save(s, save_path, "{\"recipe\": \"quick\"}");
    dbk_session_destroy(s);
    dbk_backend_destroy(be);
    return st;
}

static int same_seed_should_give_the_same_run(void) {
    run_result a, b, c;
    DBK_CHECK_OK(train_two_epochs(7, NULL, &a));
    DBK_CHECK_OK(train_two_epochs(7, NULL, &b));
    DBK_CHECK_OK(train_two_epochs(8, NULL, &c));
    printf("  seed 7: loss %.6f correct %.0f test %.0f; seed 8: loss %.6f\n", a.train.loss_sum, a.train.correct,
           a.test.correct, c.train.loss_sum);
    DBK_CHECK(a.train.loss_sum == b.train.loss_sum && a.train.correct == b.train.correct);
    DBK_CHECK(a.test.correct == b.test.correct && a.test.loss_sum == b.test.loss_sum);
    DBK_CHECK(a.train.loss_sum != c.train.loss_sum);
    return 0;
}

static int checkpoint_should_restore_the_trained_model(void) {
    const char *dir = dbk_test_tmpdir("model_ckpt");
    DBK_CHECK(dir != NULL);
    char path[4200];
    snprintf(path, sizeof path, "%s/model.ckpt", dir);
    run_result a;
    DBK_CHECK_OK(train_two_epochs(3, path, &a));

    const dbk_recipe *recipe;
    const dbk_model_def *model;
    DBK_CHECK_OK(dbk_recipe_find("quick", &recipe));
    DBK_CHECK_OK(dbk_model_find(recipe->model, &model));
    dbk_backend *be;
    dbk_session *s;
    DBK_CHECK_OK(dbk_backend_create(DBK_BACKEND_KIND_CPU, 0, &be));
    dbk_session_config cfg = {.recipe = recipe, .model = model, .batch = 64, .eval_batch = 64, .test_count = test_set.count,
                              .input = {test_set.channels, test_set.height, test_set.width},
                              .num_classes = test_set.num_classes};
    DBK_CHECK_OK(dbk_session_create(be, &cfg, &s));
    DBK_CHECK_OK(dbk_session_upload_data(s, NULL, &test_set));
    DBK_CHECK_OK(dbk_session_init_params(s, 99)); /* other weights, overwritten by the load */
    DBK_CHECK_OK(dbk_session_load(s, path));
    dbk_epoch_counters ec;
    DBK_CHECK_OK(dbk_session_evaluate(s, &ec));
    dbk_session_destroy(s);
    dbk_backend_destroy(be);
    printf("  trained %.0f correct, restored %.0f correct of %lld\n", a.test.correct, ec.correct, (long long)ec.images);
    DBK_CHECK(ec.correct == a.test.correct && ec.loss_sum == a.test.loss_sum);
    return 0;
}

int main(void) {
    DBK_RUN(parameter_groups_should_follow_the_recipes_rules);
    DBK_RUN(model_table_should_find_each_model_and_list_names_on_unknown);
    DBK_RUN(every_model_should_lay_out_on_its_datasets_shape);
    DBK_RUN(a_model_outside_the_table_should_train_on_the_datasets_shape);
    DBK_RUN(resnet9_gradients_should_match_finite_differences);
    const char *cifar = dbk_test_cifar_dir();
    if (!cifar) {
        dbk_test_note_missing("the session tests", DBK_TEST_NO_CIFAR);
        return dbk_test_finish();
    }
    if (dbk_cifar10_load(cifar, DBK_CIFAR10_TRAIN, 1024, &train_set) != DBK_OK ||
        dbk_cifar10_load(cifar, DBK_CIFAR10_TEST, 300, &test_set) != DBK_OK) {
        printf("cannot load CIFAR-10: %s\n", dbk_last_error());
        return 1;
    }
    DBK_RUN(same_seed_should_give_the_same_run);
    DBK_RUN(checkpoint_should_restore_the_trained_model);
    dbk_dataset_deinit(&train_set);
    dbk_dataset_deinit(&test_set);
    return dbk_test_finish();
}
