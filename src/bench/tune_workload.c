/*
 * tune_workload.c — what `daybreak tune` measures (tune.h): the distinct convolutions and
 * linear-layer GEMMs of recipes' models, their CPU reference results, one case run and timed
 * on a device, and the memory-bandwidth kernels.
 *
 * The shapes come from the models themselves: each model's forward function runs on a graph
 * (nn/graph.h) in both passes without buffers, and the CONV2D_FWD and GEMM descriptors it
 * appends are the layers. Each convolution gives three cases (forward, backward-data,
 * backward-filter: a training step runs all three); each GEMM one.
 */
#include <math.h>
#include <string.h>

#include "bench/tune.h"
#include "check/op_check.h"
#include "core/alloc.h"
#include "core/fileio.h"
#include "core/rng.h"
#include "core/timer.h"
#include "data/dataset.h"
#include "models/models.h"
#include "nn/graph.h"
#include "train/recipe.h"

static dbk_status run_once(dbk_backend *be, const dbk_tune_case *c, float *out);

/* Classes of a recipe's dataset: the GEMM shape of its classifier. */
static int classes_of(const char *dataset) { return strcmp(dataset, "imagenet") ? 10 : 1000; }

/* More distinct layers than any recipe has (ResNet-50: about 60 convolutions). */
#define MAX_CASES 1024

static dbk_status grow(dbk_tune_workload *w) {
    if (!w->cases && !(w->cases = dbk_calloc(MAX_CASES, sizeof *w->cases)))
        return dbk_set_error(DBK_ERR_OUT_OF_HOST_MEMORY, "out of host memory listing the tuning shapes");
    if (w->count == MAX_CASES)
        return dbk_set_error(DBK_ERR_UNSUPPORTED, "more than %d distinct layers to tune", MAX_CASES);
    return DBK_OK;
}

static dbk_tune_case *find_label(dbk_tune_workload *w, const char *label) {
    for (int i = 0; i < w->count; i++)
        if (!strcmp(w->cases[i].label, label)) return &w->cases[i];
    return NULL;
}

static dbk_status add_case(dbk_tune_workload *w, const dbk_tune_case *c) {
    dbk_tune_case *seen = find_label(w, c->label);
    if (seen) {
        seen->layers++;
        return DBK_OK;
    }
    DBK_TRY(grow(w));
    w->cases[w->count] = *c;
    w->cases[w->count++].layers = 1;
    return DBK_OK;
}

static dbk_tensor shaped(int ndim, int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    return dbk_tensor_make(NULL, 0, DBK_DTYPE_F32, ndim, d0, d1, d2, d3);
}

/* The three cases of one forward convolution. */
static dbk_status add_conv(dbk_tune_workload *w, const dbk_op_desc *fwd) {
    const dbk_tensor *x = &fwd->src[0], *wt = &fwd->src[1], *y = &fwd->dst[0];
    const int64_t n = x->shape[0], c = x->shape[1], h = x->shape[2], wd = x->shape[3];
    const int64_t k = wt->shape[0], r = wt->shape[2], s = wt->shape[3], p = y->shape[2], q = y->shape[3];
    const dbk_conv2d_params cp = fwd->p.conv;
    static const dbk_op ops[3] = {DBK_OP_CONV2D_FWD, DBK_OP_CONV2D_BWD_DATA, DBK_OP_CONV2D_BWD_FILTER};
    for (int i = 0; i < 3; i++) {
        dbk_tune_case tc;
        memset(&tc, 0, sizeof tc);
        tc.desc.op = ops[i];
        tc.desc.p.conv = cp;
        const dbk_tensor tx = shaped(4, n, c, h, wd), tw = shaped(4, k, c, r, s), ty = shaped(4, n, k, p, q);
        if (i == 0) { tc.desc.src[0] = tx; tc.desc.src[1] = tw; tc.desc.dst[0] = ty; }
        if (i == 1) { tc.desc.src[0] = ty; tc.desc.src[1] = tw; tc.desc.dst[0] = tx; }
        if (i == 2) { tc.desc.src[0] = tx; tc.desc.src[1] = ty; tc.desc.dst[0] = tw; }
        snprintf(tc.label, sizeof tc.label, "%s C%lld K%lld %lldx%lld %lldx%lld/%d N%lld", dbk_op_name(ops[i]),
                 (long long)c, (long long)k, (long long)h, (long long)wd, (long long)r, (long long)s, cp.stride_h,
                 (long long)n);
        snprintf(tc.shape_key, sizeof tc.shape_key, "%lldx%lldx%lldx%lld", (long long)c, (long long)k, (long long)h,
                 (long long)wd);
        tc.winograd = r == 3 && s == 3 && cp.stride_h == 1 && cp.stride_w == 1 && cp.pad_h == 1 && cp.pad_w == 1;
        DBK_TRY(add_case(w, &tc));
    }
    return DBK_OK;
}

static dbk_status add_gemm(dbk_tune_workload *w, const dbk_op_desc *g) {
    dbk_tune_case tc;
    memset(&tc, 0, sizeof tc);
    tc.desc.op = DBK_OP_GEMM;
    tc.desc.p.gemm = g->p.gemm;
    tc.desc.p.gemm.beta = 0.0f;
    for (int i = 0; i < 2; i++) tc.desc.src[i] = shaped(2, g->src[i].shape[0], g->src[i].shape[1], 1, 1);
    tc.desc.dst[0] = shaped(2, g->dst[0].shape[0], g->dst[0].shape[1], 1, 1);
    snprintf(tc.label, sizeof tc.label, "gemm %lldx%lld%s . %lldx%lld%s", (long long)g->src[0].shape[0],
             (long long)g->src[0].shape[1], g->p.gemm.trans_a ? "^T" : "", (long long)g->src[1].shape[0],
             (long long)g->src[1].shape[1], g->p.gemm.trans_b ? "^T" : "");
    return add_case(w, &tc);
}

/* Runs the model's forward function through both passes of a buffer-less graph and adds its
 * layers. */
static dbk_status add_layers(dbk_tune_workload *w, const dbk_recipe *r, int batch) {
    const dbk_model_def *def;
    const dbk_dataset_kind *kind;
    DBK_TRY(dbk_model_find(r->model, &def));
    DBK_TRY(dbk_dataset_kind_find(r->dataset, &kind));
    const int side = r->image_size > 0 ? r->image_size : kind->shape.height;
    const int width = r->image_size > 0 ? r->image_size : kind->shape.width;
    const dbk_graph_config gc = {.training = false, .bn = {1e-5f, 0.1f}};
    dbk_graph *g;
    DBK_TRY(dbk_graph_create(&gc, &g));
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            const dbk_graph_buffers none = {0};
            dbk_graph_begin_build(g, &none);
        }
        dbk_value x = dbk_graph_value(g, false, batch, kind->shape.channels, side, width);
        dbk_model_forward(g, def, x, classes_of(r->dataset));
    }
    dbk_status st = dbk_graph_status(g);
    const dbk_op_desc *ops = dbk_graph_forward_ops(g);
    for (int i = 0; st == DBK_OK && i < dbk_graph_forward_count(g); i++) {
        if (ops[i].op == DBK_OP_CONV2D_FWD) st = add_conv(w, &ops[i]);
        else if (ops[i].op == DBK_OP_GEMM && ops[i].src[0].ndim == 2 && ops[i].src[1].ndim == 2) st = add_gemm(w, &ops[i]);
    }
    dbk_graph_destroy(g);
    return st;
}

/* Bytes per image of the largest batch-sized tensor of the cases (x, y, or a GEMM's rows). */
static size_t largest_per_image(const dbk_tune_workload *w) {
    size_t most = 0;
    for (int i = 0; i < w->count; i++) {
        const dbk_op_desc *d = &w->cases[i].desc;
        const dbk_tensor *t[] = {&d->src[0], &d->src[1], &d->dst[0]};
        for (int j = 0; j < 3; j++)
            if (t[j]->ndim && t[j]->shape[0] > 0 && t[j]->shape[0] == d->src[0].shape[0]) {
                const size_t per = dbk_tensor_nbytes(t[j]) / (size_t)t[j]->shape[0];
                if (per > most) most = per;
            }
    }
    return most;
}

/* The batch for recipe r (see dbk_tune_workload_build), recorded in w->recipes. */
static dbk_status choose_batch(dbk_tune_workload *w, const dbk_recipe *r, int batch, uint64_t max_alloc, int *out) {
    if (w->recipe_count == DBK_TUNE_MAX_RECIPES)
        return dbk_set_error(DBK_ERR_UNSUPPORTED, "more than %d recipes to tune", DBK_TUNE_MAX_RECIPES);
    dbk_tune_recipe_batch *rb = &w->recipes[w->recipe_count++];
    rb->recipe = r->name;
    rb->trains_at = r->batch;
    if (batch > 0) {
        rb->batch = batch;
        snprintf(rb->why, sizeof rb->why, "--batch %d", batch);
    } else if (r->batch > DBK_TUNE_BATCH_CAP) {
        rb->batch = DBK_TUNE_BATCH_CAP;
        snprintf(rb->why, sizeof rb->why, "the recipe's batch %d, capped at %d", r->batch, DBK_TUNE_BATCH_CAP);
    } else {
        rb->batch = r->batch > 0 ? r->batch : 1;
        snprintf(rb->why, sizeof rb->why, "the recipe's batch");
    }
    if (max_alloc) {
        /* Per-image sizes from the layers at batch 1: the largest batch whose tensors all fit. */
        dbk_tune_workload one;
        memset(&one, 0, sizeof one);
        dbk_status st = add_layers(&one, r, 1);
        const size_t per = st == DBK_OK ? largest_per_image(&one) : 0;
        dbk_free(one.cases);
        DBK_TRY(st);
        const uint64_t fits = per ? max_alloc / per : (uint64_t)rb->batch;
        if (fits < 1)
            return dbk_set_error(DBK_ERR_UNSUPPORTED, "recipe %s: one image's largest tensor (%zu bytes) exceeds the "
                                 "device's max allocation (%llu bytes)", r->name, per, (unsigned long long)max_alloc);
        if (fits < (uint64_t)rb->batch) {
            const size_t used = strlen(rb->why);
            snprintf(rb->why + used, sizeof rb->why - used, "; %d is the largest that fits the device's max allocation "
                     "(%.0f MiB), not %d", (int)fits, (double)max_alloc / 1048576.0, rb->batch);
            rb->batch = (int)fits;
        }
    }
    *out = rb->batch;
    return DBK_OK;
}

static dbk_status add_recipe(dbk_tune_workload *w, const dbk_recipe *r, int batch, uint64_t max_alloc) {
    int b;
    DBK_TRY(choose_batch(w, r, batch, max_alloc, &b));
    return add_layers(w, r, b);
}

/* Seeded uniform inputs in [-1, 1) and the CPU reference's dst0 for every case. */
static dbk_status reference_results(dbk_tune_workload *w) {
    dbk_backend *cpu;
    DBK_TRY(dbk_backend_create(DBK_BACKEND_KIND_CPU, 0, &cpu));
    dbk_rng rng;
    dbk_rng_init(&rng, 12);
    dbk_status st = DBK_OK;
    for (int i = 0; st == DBK_OK && i < w->count; i++) {
        dbk_tune_case *c = &w->cases[i];
        for (int s = 0; st == DBK_OK && s < DBK_OP_MAX_SRC && c->desc.src[s].ndim; s++) {
            const size_t n = (size_t)dbk_tensor_numel(&c->desc.src[s]);
            c->in[s] = dbk_malloc(n * sizeof(float));
            if (!c->in[s]) st = DBK_ERR_OUT_OF_HOST_MEMORY;
            for (size_t e = 0; st == DBK_OK && e < n; e++) c->in[s][e] = 2.0f * dbk_rng_uniform(&rng) - 1.0f;
        }
        const size_t out_n = (size_t)dbk_tensor_numel(&c->desc.dst[0]);
        if (st == DBK_OK && !(c->ref = dbk_malloc(out_n * sizeof(float)))) st = DBK_ERR_OUT_OF_HOST_MEMORY;
        if (st == DBK_OK) st = run_once(cpu, c, c->ref);
    }
    dbk_backend_destroy(cpu);
    if (st == DBK_ERR_OUT_OF_HOST_MEMORY) dbk_set_error(st, "out of host memory for the tuning inputs");
    return st;
}

dbk_status dbk_tune_workload_shapes(const char *recipe, int batch, uint64_t max_alloc, dbk_tune_workload *w) {
    memset(w, 0, sizeof *w);
    dbk_status st = DBK_OK;
    if (recipe) {
        const dbk_recipe *r;
        st = dbk_recipe_find(recipe, &r);
        if (st == DBK_OK) st = add_recipe(w, r, batch, max_alloc);
    } else {
        for (int i = 0; st == DBK_OK && i < dbk_recipe_count(); i++)
            if (!strcmp(dbk_recipe_at(i)->dataset, "cifar10")) st = add_recipe(w, dbk_recipe_at(i), batch, max_alloc);
    }
    if (st != DBK_OK) dbk_tune_workload_deinit(w);
    return st;
}

dbk_status dbk_tune_workload_build(const char *recipe, int batch, uint64_t max_alloc, dbk_tune_workload *w) {
    DBK_TRY(dbk_tune_workload_shapes(recipe, batch, max_alloc, w));
    dbk_status st = reference_results(w);
    uint64_t h = dbk_fnv1a64("tune-workload-1", 15);   /* the labels name the batch ("N128") */
    for (int i = 0; i < w->count; i++) h = dbk_fnv1a64_update(h, w->cases[i].label, strlen(w->cases[i].label) + 1);
    w->hash = h;
    if (st != DBK_OK) dbk_tune_workload_deinit(w);
    return st;
}

void dbk_tune_workload_deinit(dbk_tune_workload *w) {
    for (int i = 0; i < w->count; i++) {
        for (int s = 0; s < DBK_OP_MAX_SRC; s++) dbk_free(w->cases[i].in[s]);
        dbk_free(w->cases[i].ref);
    }
    dbk_free(w->cases);
    memset(w, 0, sizeof *w);
}

/* ---------------------------------------------------------------------------------- */
/* one case on a device                                                                */

typedef struct bound_case {
    dbk_op_desc desc;
    dbk_buffer *bufs[DBK_OP_MAX_SRC + DBK_OP_MAX_DST];
} bound_case;

static void unbind(bound_case *b) {
    for (size_t i = 0; i < sizeof b->bufs / sizeof b->bufs[0]; i++) dbk_buffer_destroy(b->bufs[i]);
}

/* Buffers of the case's shapes on be, the inputs written and dst0 zeroed. */
static dbk_status bind(dbk_backend *be, const dbk_tune_case *c, bound_case *b) {
    memset(b, 0, sizeof *b);
    b->desc = c->desc;
    dbk_status st = DBK_OK;
    for (int s = 0; st == DBK_OK && s < DBK_OP_MAX_SRC && c->desc.src[s].ndim; s++) {
        st = dbk_buffer_create(be, dbk_tensor_nbytes(&c->desc.src[s]), &b->bufs[s]);
        if (st == DBK_OK) {
            b->desc.src[s].buf = b->bufs[s];
            st = dbk_tensor_write(&b->desc.src[s], c->in[s]);
        }
    }
    const size_t out_bytes = dbk_tensor_nbytes(&c->desc.dst[0]);
    if (st == DBK_OK) st = dbk_buffer_create(be, out_bytes, &b->bufs[DBK_OP_MAX_SRC]);
    if (st == DBK_OK) {
        b->desc.dst[0].buf = b->bufs[DBK_OP_MAX_SRC];
        float *zeros = dbk_calloc(1, out_bytes);
        st = zeros ? dbk_tensor_write(&b->desc.dst[0], zeros) : DBK_ERR_OUT_OF_HOST_MEMORY;
        dbk_free(zeros);
    }
    if (st == DBK_OK) st = dbk_backend_prepare(be, &b->desc);
    if (st != DBK_OK) unbind(b);
    return st;
}

static dbk_status run_once(dbk_backend *be, const dbk_tune_case *c, float *out) {
    bound_case b;
    DBK_TRY(bind(be, c, &b));
    dbk_status st = dbk_backend_run(be, &b.desc);
    if (st == DBK_OK) st = dbk_backend_sync(be);
    if (st == DBK_OK) st = dbk_tensor_read(&b.desc.dst[0], out);
    unbind(&b);
    return st;
}

dbk_status dbk_tune_case_measure(dbk_backend *be, const dbk_tune_case *c, int corrupt, double *seconds) {
    *seconds = 0.0;
    const size_t n = (size_t)dbk_tensor_numel(&c->desc.dst[0]);
    float *got = dbk_malloc(n * sizeof *got);
    if (!got) return dbk_set_error(DBK_ERR_OUT_OF_HOST_MEMORY, "out of host memory for a tuning result");
    bound_case b;
    dbk_status st = bind(be, c, &b);
    if (st != DBK_OK) {
        dbk_free(got);
        return st;
    }
    /* The first run builds and compiles what it needs; its result is the one judged. */
    st = dbk_backend_run(be, &b.desc);
    if (st == DBK_OK) st = dbk_backend_sync(be);
    if (st == DBK_OK) st = dbk_tensor_read(&b.desc.dst[0], got);
    if (st == DBK_OK && corrupt) got[n / 2] += 1.0f + fabsf(got[n / 2]);
    if (st == DBK_OK) {
        const double nmse = dbk_op_check_nmse(c->ref, got, n), tol = dbk_op_check_tolerance(c->desc.op);
        if (!(nmse <= (tol > 0 ? tol : 0.0)))
            st = dbk_set_error(DBK_ERR_DEVICE, "%s: NMSE %.3g against the CPU reference, tolerance %.3g", c->label,
                               nmse, tol);
    }
    /* The fastest of up to 5 runs, stopping after 0.5 s: the minimum is the least disturbed by
     * other work on the machine. */
    double best = INFINITY, spent = 0.0;
    for (int rep = 0; st == DBK_OK && rep < 5 && (rep < 2 || spent < 0.5); rep++) {
        const double t0 = dbk_time_now();
        st = dbk_backend_run(be, &b.desc);
        if (st == DBK_OK) st = dbk_backend_sync(be);
        const double dt = dbk_time_now() - t0;
        spent += dt;
        if (dt < best) best = dt;
    }
    unbind(&b);
    dbk_free(got);
    if (st == DBK_OK) *seconds = best;
    return st;
}

/* ---------------------------------------------------------------------------------- */
/* memory bandwidth                                                                    */

/* Fastest of 5 runs of op, after one warm-up run. */
static dbk_status best_time(dbk_backend *be, const dbk_op_desc *op, double *seconds) {
    DBK_TRY(dbk_backend_prepare(be, op));
    DBK_TRY(dbk_backend_run(be, op));
    DBK_TRY(dbk_backend_sync(be));
    double best = INFINITY;
    for (int rep = 0; rep < 5; rep++) {
        const double t0 = dbk_time_now();
        DBK_TRY(dbk_backend_run(be, op));
        DBK_TRY(dbk_backend_sync(be));
        const double dt = dbk_time_now() - t0;
        if (dt < best) best = dt;
    }
    *seconds = best;
    return DBK_OK;
}

dbk_status dbk_tune_bandwidth(dbk_backend *be, double *copy_gbs, double *add_gbs) {
    *copy_gbs = *add_gbs = 0.0;
    /* 32 Mi floats (128 MiB) per array: far past any CPU's last-level cache or GPU's L2, and
     * within lavapipe's 128 MiB per binding. */
    const int64_t n = (int64_t)32 << 20;
    dbk_buffer *a = NULL, *b = NULL, *y = NULL;
    const size_t bytes = (size_t)n * sizeof(float);
    dbk_status st = dbk_buffer_create(be, bytes, &a);
    if (st == DBK_OK) st = dbk_buffer_create(be, bytes, &b);
    if (st == DBK_OK) st = dbk_buffer_create(be, bytes, &y);
    dbk_op_desc fill = {.op = DBK_OP_FILL};
    fill.p.fill.value = 1.0f;
    for (int i = 0; st == DBK_OK && i < 2; i++) {
        fill.dst[0] = dbk_tensor_make(i ? b : a, 0, DBK_DTYPE_F32, 1, n, 1, 1, 1);
        st = dbk_backend_run(be, &fill);
    }
    dbk_op_desc copy = {.op = DBK_OP_COPY}, add = {.op = DBK_OP_ADD};
    copy.src[0] = add.src[0] = dbk_tensor_make(a, 0, DBK_DTYPE_F32, 1, n, 1, 1, 1);
    add.src[1] = dbk_tensor_make(b, 0, DBK_DTYPE_F32, 1, n, 1, 1, 1);
    copy.dst[0] = add.dst[0] = dbk_tensor_make(y, 0, DBK_DTYPE_F32, 1, n, 1, 1, 1);
    double t_copy = 0.0, t_add = 0.0;
    if (st == DBK_OK) st = best_time(be, &copy, &t_copy);
    if (st == DBK_OK) st = best_time(be, &add, &t_add);
    if (st == DBK_OK) {
        *copy_gbs = 2.0 * (double)bytes / t_copy / 1e9;
        *add_gbs = 3.0 * (double)bytes / t_add / 1e9;
    }
    dbk_buffer_destroy(a);
    dbk_buffer_destroy(b);
    dbk_buffer_destroy(y);
    return st;
}
