/*
 * graph.h — building a network as fixed lists of backend ops (plan, then allocate, then run).
 *
 * A model is written once as a function that calls the layer builders below (dbk_nn_conv,
 * dbk_nn_batchnorm, ...). That function runs twice on a dbk_graph:
 *   1. planning pass (no buffers): every parameter, batch-norm statistic, activation,
 *      gradient and saved tensor gets an offset; the pass ends with the byte sizes;
 *   2. build pass (buffers attached): the same calls produce the same offsets, now as views
 *      into real buffers, and append op descriptors to the forward list and to the backward
 *      list (in reverse, so the backward list runs last layer first). The op lists read back
 *      are those of one fusion pass over what was built (docs/fusion.md: a training batch
 *      norm takes the ReLU, residual add or max pool after it), unless cfg.no_fusion.
 * A training step is then its program (dbk_graph_program): the forward list, the backward
 * list, then the update list (the optimizer) — a fixed sequence a backend can replay. Nothing
 * is allocated while it runs.
 *
 * Memory layout (DESIGN.md decision 3):
 *   params   flat f32: every trainable tensor, in creation order (momentum and gradients
 *            use the same layout in their own flat buffers, so the optimizer is one op);
 *            Parameters belong to groups (dbk_graph_set_group; "" by default) and are laid
 *            out group by group, each group contiguous, so an optimizer may treat each group
 *            with its own learning rate and weight decay in one dispatch per group;
 *   state    flat f32: batch-norm running mean/var, in creation order;
 *   steps    per-step values (bytes): what the host writes before every run of the program
 *            (learning rates, augmentation draws, ...), each declared by the layer or
 *            optimizer that reads it together with the rule that computes it, then the
 *            counters the ops accumulate into on the device (loss, correct predictions);
 *   arena    activations, their gradients and saved tensors (bytes; 256-byte aligned views),
 *            each at its own offset. The session builds against a virtual arena and lets
 *            nn/memplan.h place these tensors by lifetime in real buffers, so tensors that are
 *            never alive together share memory and no buffer exceeds the device's limit.
 * Parameter order and offsets depend only on the model function, so a training graph and an
 * evaluation graph built from the same function share params and state.
 */
#ifndef DBK_GRAPH_H
#define DBK_GRAPH_H

#include <stdbool.h>
#include <stddef.h>

#include <stdint.h>

#include "backend/backend.h"

/* An activation and its gradient. grad.ndim == 0 when no gradient flows into it (the input
 * images, or anything in an evaluation graph). In mixed precision a layer may also keep half,
 * an f16 copy of data that its backward pass reads (ReLU); the next convolution or linear
 * layer then reads that copy instead of making its own, so the copy is the only activation
 * kept for the backward pass and the f32 data dies in the forward pass. half.ndim == 0 when
 * there is none; a layer that changes data in place drops it. */
typedef struct dbk_value {
    dbk_tensor data;
    dbk_tensor grad;
    dbk_tensor half;
} dbk_value;

typedef enum dbk_param_init {
    DBK_PARAM_INIT_KAIMING_UNIFORM, /* U(-1/sqrt(fan_in), 1/sqrt(fan_in)): PyTorch's conv/linear default */
    DBK_PARAM_INIT_ONES,
    DBK_PARAM_INIT_ZEROS,
    /* A conv weight (K,C,R,S): kaiming-uniform, then torch.nn.init.dirac_ on its first
     * min(K,C) filters (filter i passes input channel i through its centre tap). */
    DBK_PARAM_INIT_DIRAC,
    /* Computed from the training data by the session (train/whiten.h: 2x2 patch whitening,
     * the eigenvectors of the patch covariance and their negatives). */
    DBK_PARAM_INIT_WHITEN,
    /* torch.nn.init.kaiming_normal_(w, mode='fan_out', nonlinearity='relu'): N(0, 2 / fan_out),
     * fan_out = K*R*S of a (K,C,R,S) weight (imagenet18's ResNet-50). */
    DBK_PARAM_INIT_KAIMING_NORMAL_FAN_OUT,
    /* N(0, 0.01^2) (imagenet18's init_dist_weights for the final linear layer). */
    DBK_PARAM_INIT_NORMAL_001,
    /* kaiming-uniform, then scaled so that the tensor's standard deviation (unbiased, over all
     * its elements) is 1: airbench94_muon's head, w *= 1 / w.std(). */
    DBK_PARAM_INIT_UNIT_STD,
} dbk_param_init;

typedef struct dbk_param_info {
    char           name[64];        /* "layer1.conv.weight" */
    int            group;           /* index of its group (dbk_graph_group_name) */
    int            ndim;
    int64_t        shape[4];
    size_t         offset;          /* in floats from the start of params (and grads, momentum) */
    dbk_param_init init;
    int64_t        fan_in;
} dbk_param_info;

typedef struct dbk_state_info {
    char   name[64];                /* "layer1.bn.running_mean" */
    int64_t count;
    size_t offset;                  /* in floats from the start of state */
    float  init;                    /* 0 for means, 1 for variances */
} dbk_state_info;

typedef struct dbk_graph dbk_graph;

typedef struct dbk_graph_config {
    bool          training;         /* false: batch norm uses running stats, no gradients */
    dbk_bn_params bn;               /* eps, momentum of every batch norm */
    /* Mixed precision (--precision fp16): convolutions and linear layers read f16 copies of
     * their input, weight and output gradient (DBK_OP_CAST_F32_F16) and produce f32; batch
     * norm and ReLU compute in f32 but keep f16 copies for their backward pass (batch norm of
     * its input, ReLU of its output: dbk_value.half), so what lives from the forward to the
     * backward pass is f16; batch-norm statistics, the loss, parameters and optimizer state
     * stay f32. */
    bool          fp16;
    /* Fusion off (DBK_FUSE=0, docs/fusion.md): a ReLU after a training batch norm stays two
     * ops each way instead of DBK_OP_BATCHNORM_RELU_FWD_TRAIN / _BWD, and a residual add after
     * those stays an add instead of DBK_OP_BATCHNORM_RELU_ADD_FWD_TRAIN / _BWD, and a 2x2 max
     * pool after those stays a max pool instead of DBK_OP_BATCHNORM_RELU_POOL_FWD_TRAIN / _BWD. */
    bool          no_fusion;
    /* A group treated as frozen in this graph only (NULL: none): no gradient, no update, and
     * nothing computed just for it (airbench's whitening bias after its epochs, when the source
     * stops its requires_grad or detaches it). The group keeps its place in the layout. */
    const char   *frozen_group;
} dbk_graph_config;

/* Creates an empty graph in planning mode. */
dbk_status dbk_graph_create(const dbk_graph_config *cfg, dbk_graph **out);
void       dbk_graph_destroy(dbk_graph *g);                        /* accepts NULL */

/* The buffers a build pass attaches (any may be NULL when the graph has nothing of that
 * kind; grads is NULL for evaluation graphs). */
typedef struct dbk_graph_buffers {
    dbk_buffer *params, *grads, *state, *arena;
    dbk_buffer *steps;              /* dbk_graph_step_bytes bytes: per-step values, then counters */
} dbk_graph_buffers;

/* Switches to the build pass: clears ops and offsets and attaches the buffers. The build
 * pass must declare the same parameters, groups and step values as the planning pass. */
void dbk_graph_begin_build(dbk_graph *g, const dbk_graph_buffers *bufs);
bool dbk_graph_is_planning(const dbk_graph *g);
bool dbk_graph_is_training(const dbk_graph *g);

/* Sizes after a pass. */
size_t dbk_graph_param_count(const dbk_graph *g);                /* floats */
size_t dbk_graph_state_count(const dbk_graph *g);                /* floats */
size_t dbk_graph_arena_bytes(const dbk_graph *g);

int                   dbk_graph_param_info_count(const dbk_graph *g);
const dbk_param_info *dbk_graph_param_info(const dbk_graph *g, int i);
int                   dbk_graph_state_info_count(const dbk_graph *g);
const dbk_state_info *dbk_graph_state_info(const dbk_graph *g, int i);

/* The op lists of the build pass (valid until the graph is destroyed or rebuilt). The
 * backward list is already in execution order. */
int                dbk_graph_forward_count(const dbk_graph *g);
const dbk_op_desc *dbk_graph_forward_ops(const dbk_graph *g);
int                dbk_graph_backward_count(const dbk_graph *g);
const dbk_op_desc *dbk_graph_backward_ops(const dbk_graph *g);

/* The whole program of the build pass: forward, backward (execution order), update. The
 * array belongs to the graph and stays valid until the graph is destroyed or rebuilt; the
 * caller may rewrite its tensors in place (nn/memplan.h does). NULL with *count 0 when the
 * program could not be assembled (out of host memory). */
dbk_op_desc *dbk_graph_program(dbk_graph *g, int *count);

/* --- parameter groups ----------------------------------------------------------------- */

/* Parameters of this group get no gradient and no update; they are still saved, loaded,
 * initialised and averaged by lookahead like any other. */
#define DBK_GRAPH_GROUP_FROZEN "frozen"

/* Parameters created after this call belong to group name ("" = the default group) until the
 * next call. Groups are numbered in order of first use. */
void        dbk_graph_set_group(dbk_graph *g, const char *name);
int         dbk_graph_group_count(const dbk_graph *g);
const char *dbk_graph_group_name(const dbk_graph *g, int group);
bool        dbk_graph_group_frozen(const dbk_graph *g, int group);   /* "frozen", or the config's frozen_group */
/* The group's parameters (and their gradients): flat views of one contiguous range. */
dbk_tensor  dbk_graph_group_params(const dbk_graph *g, int group);
dbk_tensor  dbk_graph_group_grads(const dbk_graph *g, int group);

/* Later layers take the parameters and statistics declared so far, in the same order, instead
 * of declaring new ones: the model applied again, with the same weights, to another input
 * (test-time augmentation views). Evaluation graphs only (backward ops overwrite gradients);
 * a layer that asks for another name or shape than the next declared one is an error. */
void dbk_graph_reuse_params(dbk_graph *g);

/* --- per-step values ------------------------------------------------------------------ */

/* What a rule may use to compute a per-step value. The trainer fills it before each run. */
typedef struct dbk_step_ctx {
    int      epoch;                 /* 0-based */
    int      step;                  /* step within the epoch (evaluation: batch index) */
    int      steps_per_epoch;
    int32_t  first;                 /* index of the batch's first row in the split's order */
    uint32_t seed;                  /* the epoch's augmentation seed */
    uint32_t run_seed;              /* constant for the whole run (per-image draws that must
                                       not change between epochs); 0 in evaluation */
    double   lr;                    /* the schedule's learning rate at this step */
    long     run_step;              /* training steps done in the whole run before this one */
    long     run_steps;             /* the run's length in steps */
    const void *recipe;             /* the owner's description of the run, for its rules (the
                                       session: its dbk_recipe); NULL when it has none */
} dbk_step_ctx;

/* Computes one per-step value into dst (count elements of the declared dtype) from the
 * context and the constants k given at declaration. */
typedef void (*dbk_step_rule)(const dbk_step_ctx *ctx, const double k[4], void *dst);

typedef struct dbk_step_value_info {
    char          name[48];         /* "lr.norm_biases", "augment.state", "loss_sum" */
    dbk_dtype     dtype;
    int64_t       count;
    size_t        offset;           /* bytes from the start of the steps buffer */
    dbk_step_rule rule;             /* NULL for a counter */
    double        k[4];
} dbk_step_value_info;

/* Declares a value the host writes before every run of the program, computed by rule(ctx,
 * k); returns its device view. Names are unique within a graph. */
dbk_tensor dbk_graph_step_value(dbk_graph *g, const char *name, dbk_dtype dtype, int64_t count, dbk_step_rule rule,
                                const double k[4]);
/* Declares an f32 counter that ops accumulate into on the device (zeroed and read by the
 * owner of the steps buffer, e.g. once per epoch). */
dbk_tensor dbk_graph_counter(dbk_graph *g, const char *name);

/* The rule of a batch's {first row, the epoch's seed, the 0-based epoch, the run's seed}, the
 * state DBK_OP_AUGMENT and DBK_OP_DROPOUT_* read. */
void dbk_graph_batch_state_rule(const dbk_step_ctx *ctx, const double k[4], void *dst);

size_t dbk_graph_step_bytes(const dbk_graph *g);          /* the whole steps buffer */
size_t dbk_graph_step_host_bytes(const dbk_graph *g);     /* its first part: the host-written values */
int                        dbk_graph_step_value_count(const dbk_graph *g);
const dbk_step_value_info *dbk_graph_step_value_at(const dbk_graph *g, int i);
/* The value or counter named name, or NULL. */
const dbk_step_value_info *dbk_graph_step_value_find(const dbk_graph *g, const char *name);
/* Writes every host-written value for ctx into host (dbk_graph_step_host_bytes bytes), ready
 * for one dbk_buffer_write at offset 0 of the steps buffer. */
void dbk_graph_fill_step(const dbk_graph *g, const dbk_step_ctx *ctx, void *host);

/* Returns the first error a builder hit (builders do not return statuses, to keep model
 * functions readable; an out-of-memory while recording is kept here). */
dbk_status dbk_graph_status(const dbk_graph *g);

/* --- tensors and raw ops ------------------------------------------------------------- */

/* A new arena tensor (f32 unless dtype says otherwise), 256-byte aligned. */
dbk_tensor dbk_graph_tensor(dbk_graph *g, dbk_dtype dtype, int ndim, int64_t d0, int64_t d1, int64_t d2, int64_t d3);
/* A new activation with a gradient tensor when the graph trains and want_grad is set. */
dbk_value dbk_graph_value(dbk_graph *g, bool want_grad, int64_t n, int64_t c, int64_t h, int64_t w);
/* Appends to the forward list / pushes onto the backward list / appends to the update list
 * (label is copied). */
void dbk_graph_forward(dbk_graph *g, const dbk_op_desc *op, const char *label);
void dbk_graph_backward(dbk_graph *g, const dbk_op_desc *op, const char *label);
void dbk_graph_update(dbk_graph *g, const dbk_op_desc *op, const char *label);

/* --- layers (names are prefixes: "layer1.conv" gives "layer1.conv.weight") ---------- */

dbk_value dbk_nn_conv(dbk_graph *g, dbk_value x, int64_t k, int r, int stride, int pad, const char *name);
dbk_value dbk_nn_batchnorm(dbk_graph *g, dbk_value x, const char *name);

/* A convolution with the choices dbk_nn_conv fixes: weight initialisation, the groups of its
 * weight and bias (NULL = the current group), and an optional per-channel bias ("<name>.bias",
 * zero-initialised, added by DBK_OP_BIAS_ADD; its gradient by DBK_OP_CHANNEL_SUM). */
typedef struct dbk_conv_options {
    int            r, stride, pad;  /* square R x R filter */
    dbk_param_init init;            /* of the weight: KAIMING_UNIFORM, DIRAC, WHITEN, ... */
    const char    *weight_group;    /* NULL = the current group */
    bool           bias;
    const char    *bias_group;      /* NULL = the current group */
    bool           bias_uniform;    /* the bias starts U(-1/sqrt(fan_in), 1/sqrt(fan_in)), PyTorch's
                                       Conv2d/Linear default, instead of 0 */
} dbk_conv_options;
dbk_value dbk_nn_conv_ex(dbk_graph *g, dbk_value x, int64_t k, const dbk_conv_options *o, const char *name);

/* Batch norm whose scale (gamma) and shift (beta) may sit in their own groups (NULL = the
 * current group), e.g. a scale frozen at 1 (DBK_GRAPH_GROUP_FROZEN). */
typedef struct dbk_batchnorm_options {
    const char *weight_group, *bias_group;
    bool        weight_zero;        /* the scale starts at 0 (the last batch norm of a residual
                                       branch: Goyal et al.'s zero-init, imagenet18's --init-bn0) */
} dbk_batchnorm_options;
dbk_value dbk_nn_batchnorm_ex(dbk_graph *g, dbk_value x, const dbk_batchnorm_options *o, const char *name);
dbk_value dbk_nn_relu(dbk_graph *g, dbk_value x);                  /* in place */
dbk_value dbk_nn_gelu(dbk_graph *g, dbk_value x, const char *name);  /* exact (erf) GELU, a new value */
dbk_value dbk_nn_silu(dbk_graph *g, dbk_value x, const char *name);  /* SiLU x * sigmoid(x), a new value */
dbk_value dbk_nn_maxpool(dbk_graph *g, dbk_value x, int size, int stride, const char *name);
/* With a -inf border of pad (at most size / 2) on every side: torch's MaxPool2d(size, stride, pad). */
dbk_value dbk_nn_maxpool_padded(dbk_graph *g, dbk_value x, int size, int stride, int pad, const char *name);
dbk_value dbk_nn_global_maxpool(dbk_graph *g, dbk_value x, const char *name);
dbk_value dbk_nn_global_avgpool(dbk_graph *g, dbk_value x, const char *name); /* (N,C,H,W) -> (N,C,1,1) */
dbk_value dbk_nn_linear(dbk_graph *g, dbk_value x, int64_t k, const char *name); /* no bias */
/* The same with the weight's initialisation chosen (dbk_nn_linear: KAIMING_UNIFORM). */
dbk_value dbk_nn_linear_init(dbk_graph *g, dbk_value x, int64_t k, dbk_param_init init, const char *name);
/* A linear layer with a bias (torch.nn.Linear): "<name>.weight" (K,C) and "<name>.bias" (K),
 * both U(-1/sqrt(C), 1/sqrt(C)) as PyTorch initialises them; the bias is DBK_OP_BIAS_ADD on
 * the (N,K,1,1) output. */
dbk_value dbk_nn_linear_bias(dbk_graph *g, dbk_value x, int64_t k, const char *name);
dbk_value dbk_nn_leaky_relu(dbk_graph *g, dbk_value x, float slope);  /* in place */
/* Inverted dropout with probability p in training graphs (a new value; its mask a hash of the
 * step's batch state and the layer's name, declared as the step value "<name>.state"); the
 * identity in evaluation graphs. */
dbk_value dbk_nn_dropout(dbk_graph *g, dbk_value x, float p, const char *name);
dbk_value dbk_nn_scale(dbk_graph *g, dbk_value x, float alpha, const char *name); /* in place */
/* The same data as x with its own gradient; its gradient is added into x's at the end of
 * the backward pass. Use it for the second consumer of an activation (residual blocks). */
dbk_value dbk_nn_fork(dbk_graph *g, dbk_value x, const char *name);
/* y = a + b (a residual sum); both gradients receive dy. Where a or b is the output of the
 * fused batch norm + ReLU built just before, that op writes y itself (docs/fusion.md). */
dbk_value dbk_nn_add(dbk_graph *g, dbk_value a, dbk_value b, const char *name);


#endif
