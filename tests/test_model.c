/*
 * test_model.c — the network as a whole on the CPU reference backend:
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
#include "models/models.h"
#include "models/resnet9.h"
#include "nn/graph.h"
#include "train/session.h"
#include "test_util.h"

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
    dbk_graph_begin_build(c.g, c.params, c.grads, c.state, c.arena);
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
    DBK_RUN(resnet9_gradients_should_match_finite_differences);
    const char *cifar = dbk_test_cifar_dir();
    if (!cifar) {
        printf("skipping the session tests: CIFAR-10 not found under $DAYBREAK_DATA\n");
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
