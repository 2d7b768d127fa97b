/*
 * graph_layers.c — the layer builders (dbk_nn_*, see graph.h): each declares its parameters
 * and statistics, allocates its outputs, and appends its plain forward and backward ops. The
 * layers that a fusion may take into the op before them (ReLU, the add, the max pool) mark
 * their ops as a fusion site; the fusion pass (graph_fusion.c) rewrites them after the build.
 */
#include <stdio.h>
#include <string.h>

#include "nn/graph.h"
#include "nn/graph_impl.h"

static char *label_of(char *buf, size_t cap, const char *name, const char *what) {
    snprintf(buf, cap, "%s.%s", name, what);
    return buf;
}

/* A parameter in the current group. */
static void add_param(dbk_graph *g, const char *prefix, const char *suffix, dbk_param_init init, int64_t fan_in,
                      int ndim, const int64_t *shape, dbk_tensor *data, dbk_tensor *grad) {
    dbk_graph_add_param_in(g, NULL, prefix, suffix, init, fan_in, ndim, shape, data, grad);
}

dbk_value dbk_nn_conv(dbk_graph *g, dbk_value x, int64_t k, int r, int stride, int pad, const char *name) {
    const dbk_conv_options o = {.r = r, .stride = stride, .pad = pad, .init = DBK_PARAM_INIT_KAIMING_UNIFORM};
    return dbk_nn_conv_ex(g, x, k, &o, name);
}

/* y += bias per channel (DBK_OP_BIAS_ADD, in place): the bias of a conv or linear layer. */
static void forward_bias(dbk_graph *g, dbk_value y, dbk_tensor bias, const char *name) {
    char lb[96];
    dbk_op_desc ba = {.op = DBK_OP_BIAS_ADD};
    ba.src[0] = y.data;
    ba.src[1] = bias;  /* (K) */
    ba.dst[0] = y.data;
    dbk_graph_forward(g, &ba, label_of(lb, sizeof lb, name, "bias"));
}

/* dbias = sum of dy over all but the channel (DBK_OP_CHANNEL_SUM); none for a frozen or
 * absent bias (dbias.ndim == 0). */
static void backward_bias(dbk_graph *g, dbk_value y, dbk_tensor dbias, const char *name) {
    char lb[96];
    if (!dbias.ndim) return;
    dbk_op_desc bb = {.op = DBK_OP_CHANNEL_SUM};
    bb.src[0] = y.grad;
    bb.dst[0] = dbias;
    dbk_graph_backward(g, &bb, label_of(lb, sizeof lb, name, "bias.bwd"));
}

/* Mixed precision (cfg.fp16): an f16 copy of t in the arena, made by a cast appended to the
 * forward list. Convolutions and GEMMs read these copies; the copy of their input is what
 * they keep for the backward pass, as batch norm keeps one of its input and ReLU of its
 * output. */
static dbk_tensor f16_copy(dbk_graph *g, dbk_tensor t, const char *name, const char *what) {
    char lb[96];
    dbk_tensor h = dbk_graph_tensor(g, DBK_DTYPE_F16, t.ndim, t.shape[0], t.shape[1], t.shape[2], t.shape[3]);
    dbk_op_desc op = {.op = DBK_OP_CAST_F32_F16};
    op.src[0] = t;
    op.dst[0] = h;
    dbk_graph_forward(g, &op, label_of(lb, sizeof lb, name, what));
    return h;
}

/* The backward cast of a gradient into its f16 tensor (declared before the ops that read it,
 * pushed after them so that it runs first). */
static void cast_into(dbk_graph *g, dbk_tensor grad, dbk_tensor h, const char *label) {
    dbk_op_desc op = {.op = DBK_OP_CAST_F32_F16};
    op.src[0] = grad;
    op.dst[0] = h;
    dbk_graph_backward(g, &op, label);
}

dbk_value dbk_nn_conv_ex(dbk_graph *g, dbk_value x, int64_t k, const dbk_conv_options *o, const char *name) {
    char lb[96];
    const int r = o->r, stride = o->stride, pad = o->pad;
    int64_t n = x.data.shape[0], c = x.data.shape[1], h = x.data.shape[2], w = x.data.shape[3];
    int64_t p = (h + 2 * pad - r) / stride + 1, q = (w + 2 * pad - r) / stride + 1;
    const int64_t wshape[4] = {k, c, r, r};
    dbk_tensor wt = {0}, dw = {0};
    dbk_graph_add_param_in(g, o->weight_group, name, "weight", o->init, c * r * r, 4, wshape, &wt, &dw);
    dbk_tensor bias = {0}, dbias = {0};
    if (o->bias) {
        const int64_t bshape[1] = {k};
        const dbk_param_init bias_init = o->bias_uniform ? DBK_PARAM_INIT_KAIMING_UNIFORM : DBK_PARAM_INIT_ZEROS;
        dbk_graph_add_param_in(g, o->bias_group, name, "bias", bias_init, c * r * r, 1, bshape, &bias, &dbias);
    }
    /* The output needs a gradient only when something upstream trains: x, the weight or the
     * bias (airbench's whitening conv once its bias stops: nothing at all). */
    dbk_value y = dbk_graph_value(g, x.grad.ndim || dw.ndim || dbias.ndim, n, k, p, q);

    /* the operands: f32, or their f16 copies in mixed precision (x's own when it has one) */
    const bool half = g->cfg.fp16;
    const dbk_tensor xo = !half ? x.data : x.half.ndim ? x.half : f16_copy(g, x.data, name, "x.f16");
    const dbk_tensor wo = half ? f16_copy(g, wt, name, "weight.f16") : wt;
    dbk_op_desc op = {.op = DBK_OP_CONV2D_FWD, .p.conv = {stride, stride, pad, pad}};
    op.src[0] = xo;      /* (N,C,H,W) */
    op.src[1] = wo;      /* (K,C,R,S) */
    op.dst[0] = y.data;  /* (N,K,P,Q) */
    dbk_graph_forward(g, &op, name);
    if (o->bias) forward_bias(g, y, bias, name);
    if (!g->cfg.training) return y;

    /* Backward runs the bias gradient, (the f16 copy of dy,) then bwd_filter, then bwd_data:
     * pushed in reverse. A frozen weight or bias gets no gradient op. */
    dbk_tensor dyo = y.grad;
    if (half) dyo = dbk_graph_tensor(g, DBK_DTYPE_F16, 4, n, k, p, q);
    if (x.grad.ndim) {
        dbk_op_desc bd = {.op = DBK_OP_CONV2D_BWD_DATA, .p.conv = op.p.conv};
        bd.src[0] = dyo;
        bd.src[1] = wo;
        bd.dst[0] = x.grad;
        dbk_graph_backward(g, &bd, label_of(lb, sizeof lb, name, "bwd_data"));
    }
    if (dw.ndim) { /* not a frozen weight */
        dbk_op_desc bf = {.op = DBK_OP_CONV2D_BWD_FILTER, .p.conv = op.p.conv};
        bf.src[0] = xo;
        bf.src[1] = dyo;
        bf.dst[0] = dw;
        dbk_graph_backward(g, &bf, label_of(lb, sizeof lb, name, "bwd_filter"));
    }
    if (half) cast_into(g, y.grad, dyo, label_of(lb, sizeof lb, name, "dy.f16"));
    backward_bias(g, y, dbias, name);
    return y;
}

dbk_value dbk_nn_batchnorm(dbk_graph *g, dbk_value x, const char *name) {
    const dbk_batchnorm_options o = {0};
    return dbk_nn_batchnorm_ex(g, x, &o, name);
}

dbk_value dbk_nn_batchnorm_ex(dbk_graph *g, dbk_value x, const dbk_batchnorm_options *o, const char *name) {
    char lb[96];
    int64_t c = x.data.shape[1];
    const int64_t vshape[1] = {c};
    dbk_tensor gamma, dgamma, beta, dbeta;
    const dbk_param_init gamma_init = o->weight_zero ? DBK_PARAM_INIT_ZEROS : DBK_PARAM_INIT_ONES;
    dbk_graph_add_param_in(g, o->weight_group, name, "weight", gamma_init, 0, 1, vshape, &gamma, &dgamma);
    dbk_graph_add_param_in(g, o->bias_group, name, "bias", DBK_PARAM_INIT_ZEROS, 0, 1, vshape, &beta, &dbeta);
    dbk_tensor rmean = dbk_graph_add_state(g, name, "running_mean", c, 0.0f);
    dbk_tensor rvar = dbk_graph_add_state(g, name, "running_var", c, 1.0f);
    dbk_value y = dbk_graph_value(g, true, x.data.shape[0], c, x.data.shape[2], x.data.shape[3]);

    if (!g->cfg.training) {
        dbk_op_desc op = {.op = DBK_OP_BATCHNORM_FWD_INFER, .p.bn = g->cfg.bn};
        op.src[0] = x.data;
        op.src[1] = gamma;
        op.src[2] = beta;
        op.src[3] = rmean;
        op.src[4] = rvar;
        op.dst[0] = y.data;
        dbk_graph_forward(g, &op, name);
        return y;
    }
    dbk_tensor mean = dbk_graph_tensor(g, DBK_DTYPE_F32, 1, c, 1, 1, 1);
    dbk_tensor invstd = dbk_graph_tensor(g, DBK_DTYPE_F32, 1, c, 1, 1, 1);
    dbk_op_desc op = {.op = DBK_OP_BATCHNORM_FWD_TRAIN, .p.bn = g->cfg.bn};
    op.src[0] = x.data;
    op.src[1] = gamma;
    op.src[2] = beta;
    op.dst[0] = y.data;
    op.dst[1] = mean;
    op.dst[2] = invstd;
    op.dst[3] = rmean;
    op.dst[4] = rvar;
    dbk_graph_forward(g, &op, name);

    /* The op always writes the input's gradient too; an input that needs none (a frozen
     * convolution of the images) gets it in scratch. */
    const dbk_tensor dx = x.grad.ndim ? x.grad
                                      : dbk_graph_tensor(g, DBK_DTYPE_F32, 4, x.data.shape[0], c, x.data.shape[2],
                                                         x.data.shape[3]);
    /* Mixed precision: the backward pass reads x from an f16 copy, so the f32 x (the
     * convolution's result) lives only through the forward pass. */
    dbk_tensor xs = x.data;
    if (g->cfg.fp16) xs = x.half.ndim ? x.half : f16_copy(g, x.data, name, "x.f16");
    /* The op always writes both parameter gradients; a frozen one goes to scratch. */
    if (!dgamma.ndim) dgamma = dbk_graph_tensor(g, DBK_DTYPE_F32, 1, c, 1, 1, 1);
    if (!dbeta.ndim) dbeta = dbk_graph_tensor(g, DBK_DTYPE_F32, 1, c, 1, 1, 1);
    dbk_op_desc b = {.op = DBK_OP_BATCHNORM_BWD, .p.bn = g->cfg.bn};
    b.src[0] = xs;
    b.src[1] = y.grad;
    b.src[2] = gamma;
    b.src[3] = mean;
    b.src[4] = invstd;
    b.dst[0] = dx;
    b.dst[1] = dgamma;
    b.dst[2] = dbeta;
    dbk_graph_backward(g, &b, label_of(lb, sizeof lb, name, "bwd"));
    return y;
}

dbk_value dbk_nn_relu(dbk_graph *g, dbk_value x) {
    dbk_fusion_site site = dbk_graph_open_site(g, DBK_FUSION_SITE_RELU);
    site.x = x;
    dbk_op_desc op = {.op = DBK_OP_RELU_FWD};
    op.src[0] = x.data;
    op.dst[0] = x.data;
    dbk_graph_forward(g, &op, "relu");
    x.half = (dbk_tensor){0};   /* data changed in place */
    if (g->cfg.training && x.grad.ndim) {
        /* Mixed precision: the backward pass reads the sign of an f16 copy of the output,
         * the copy the next convolution takes too. */
        if (g->cfg.fp16) x.half = f16_copy(g, x.data, "relu", "y.f16");
        dbk_op_desc b = {.op = DBK_OP_RELU_BWD};
        b.src[0] = g->cfg.fp16 ? x.half : x.data; /* the forward output, computed in place */
        b.src[1] = x.grad;
        b.dst[0] = x.grad;
        dbk_graph_backward(g, &b, "relu.bwd");
    }
    dbk_graph_close_site(g, &site);
    return x;
}

/* An activation whose backward reads its input: op fwd (x -> a new y), op bwd (x, dy -> dx). */
static dbk_value input_activation(dbk_graph *g, dbk_value x, dbk_op fwd, dbk_op bwd, const char *name) {
    char lb[96];
    dbk_value y = dbk_graph_value(g, x.grad.ndim != 0, x.data.shape[0], x.data.shape[1], x.data.shape[2],
                                  x.data.shape[3]);
    dbk_op_desc op = {.op = fwd};
    op.src[0] = x.data;
    op.dst[0] = y.data;
    dbk_graph_forward(g, &op, name);
    if (g->cfg.training && x.grad.ndim) {
        dbk_op_desc b = {.op = bwd};
        b.src[0] = x.data; /* the forward input: GELU's and SiLU's derivatives depend on it */
        b.src[1] = y.grad;
        b.dst[0] = x.grad;
        dbk_graph_backward(g, &b, label_of(lb, sizeof lb, name, "bwd"));
    }
    return y;
}

dbk_value dbk_nn_gelu(dbk_graph *g, dbk_value x, const char *name) {
    return input_activation(g, x, DBK_OP_GELU_FWD, DBK_OP_GELU_BWD, name);
}

dbk_value dbk_nn_silu(dbk_graph *g, dbk_value x, const char *name) {
    return input_activation(g, x, DBK_OP_SILU_FWD, DBK_OP_SILU_BWD, name);
}

static dbk_value maxpool(dbk_graph *g, dbk_value x, int sh, int sw, int sth, int stw, int pad, const char *name) {
    char lb[96];
    int64_t n = x.data.shape[0], c = x.data.shape[1];
    int64_t p = dbk_conv_out_len(x.data.shape[2], sh, sth, pad), q = dbk_conv_out_len(x.data.shape[3], sw, stw, pad);
    dbk_value y = dbk_graph_value(g, x.grad.ndim != 0, n, c, p, q);
    dbk_tensor arg = dbk_graph_tensor(g, DBK_DTYPE_I32, 4, n, c, p, q);
    const dbk_pool_params pp = {sh, sw, sth, stw, pad, pad};
    dbk_fusion_site site = dbk_graph_open_site(g, DBK_FUSION_SITE_MAXPOOL);
    site.x = x;
    site.y = y;
    site.pool = pp;
    dbk_op_desc op = {.op = DBK_OP_MAXPOOL_FWD, .p.pool = pp};
    op.src[0] = x.data;
    op.dst[0] = y.data;
    op.dst[1] = arg;
    dbk_graph_forward(g, &op, name);
    if (g->cfg.training && x.grad.ndim) {
        dbk_op_desc b = {.op = DBK_OP_MAXPOOL_BWD, .p.pool = op.p.pool};
        b.src[0] = y.grad;
        b.src[1] = arg;
        b.dst[0] = x.grad;
        dbk_graph_backward(g, &b, label_of(lb, sizeof lb, name, "bwd"));
    }
    dbk_graph_close_site(g, &site);
    return y;
}

dbk_value dbk_nn_maxpool(dbk_graph *g, dbk_value x, int size, int stride, const char *name) {
    return maxpool(g, x, size, size, stride, stride, 0, name);
}

dbk_value dbk_nn_maxpool_padded(dbk_graph *g, dbk_value x, int size, int stride, int pad, const char *name) {
    return maxpool(g, x, size, size, stride, stride, pad, name);
}

dbk_value dbk_nn_global_maxpool(dbk_graph *g, dbk_value x, const char *name) {
    int h = (int)x.data.shape[2], w = (int)x.data.shape[3];
    return maxpool(g, x, h, w, h, w, 0, name);
}

dbk_value dbk_nn_global_avgpool(dbk_graph *g, dbk_value x, const char *name) {
    char lb[96];
    dbk_value y = dbk_graph_value(g, x.grad.ndim != 0, x.data.shape[0], x.data.shape[1], 1, 1);
    dbk_op_desc op = {.op = DBK_OP_GLOBAL_AVGPOOL_FWD};
    op.src[0] = x.data;
    op.dst[0] = y.data;
    dbk_graph_forward(g, &op, name);
    if (g->cfg.training && x.grad.ndim) {
        dbk_op_desc b = {.op = DBK_OP_GLOBAL_AVGPOOL_BWD};
        b.src[0] = y.grad;
        b.dst[0] = x.grad;
        dbk_graph_backward(g, &b, label_of(lb, sizeof lb, name, "bwd"));
    }
    return y;
}

dbk_value dbk_nn_leaky_relu(dbk_graph *g, dbk_value x, float slope) {
    dbk_op_desc op = {.op = DBK_OP_LEAKY_RELU_FWD, .p.leaky.slope = slope};
    op.src[0] = x.data;
    op.dst[0] = x.data;
    dbk_graph_forward(g, &op, "leaky_relu");
    x.half = (dbk_tensor){0};   /* data changed in place */
    if (g->cfg.training && x.grad.ndim) {
        dbk_op_desc b = {.op = DBK_OP_LEAKY_RELU_BWD, .p.leaky.slope = slope};
        b.src[0] = x.data; /* the forward output, computed in place */
        b.src[1] = x.grad;
        b.dst[0] = x.grad;
        dbk_graph_backward(g, &b, "leaky_relu.bwd");
    }
    return x;
}

/* FNV-1a of the layer's name: each dropout layer draws its own mask. */
static uint32_t name_salt(const char *name) {
    uint32_t h = 2166136261u;
    for (const char *c = name; *c; c++) h = (h ^ (uint8_t)*c) * 16777619u;
    return h;
}

dbk_value dbk_nn_dropout(dbk_graph *g, dbk_value x, float p, const char *name) {
    if (!g->cfg.training || p <= 0.0f) return x; /* evaluation: the identity */
    char lb[96];
    const double none[4] = {0};
    dbk_tensor state = dbk_graph_step_value(g, label_of(lb, sizeof lb, name, "state"), DBK_DTYPE_I32, 4,
                                            dbk_graph_batch_state_rule, none);
    dbk_value y = dbk_graph_value(g, x.grad.ndim != 0, x.data.shape[0], x.data.shape[1], x.data.shape[2],
                                  x.data.shape[3]);
    const dbk_dropout_params dp = {p, name_salt(name)};
    dbk_op_desc op = {.op = DBK_OP_DROPOUT_FWD, .p.dropout = dp};
    op.src[0] = x.data;
    op.src[1] = state;
    op.dst[0] = y.data;
    dbk_graph_forward(g, &op, name);
    if (x.grad.ndim) {
        dbk_op_desc b = {.op = DBK_OP_DROPOUT_BWD, .p.dropout = dp};
        b.src[0] = y.grad;
        b.src[1] = state;
        b.dst[0] = x.grad;
        dbk_graph_backward(g, &b, label_of(lb, sizeof lb, name, "bwd"));
    }
    return y;
}

dbk_value dbk_nn_linear_bias(dbk_graph *g, dbk_value x, int64_t k, const char *name) {
    const int64_t c = dbk_tensor_numel(&x.data) / x.data.shape[0], bshape[1] = {k};
    dbk_value y = dbk_nn_linear(g, x, k, name);
    dbk_tensor bias, dbias;
    add_param(g, name, "bias", DBK_PARAM_INIT_KAIMING_UNIFORM, c, 1, bshape, &bias, &dbias);
    forward_bias(g, y, bias, name);
    if (g->cfg.training) backward_bias(g, y, dbias, name);
    return y;
}

dbk_value dbk_nn_linear(dbk_graph *g, dbk_value x, int64_t k, const char *name) {
    return dbk_nn_linear_init(g, x, k, DBK_PARAM_INIT_KAIMING_UNIFORM, name);
}

dbk_value dbk_nn_linear_init(dbk_graph *g, dbk_value x, int64_t k, dbk_param_init init, const char *name) {
    char lb[96];
    int64_t n = x.data.shape[0], c = dbk_tensor_numel(&x.data) / n;
    const int64_t wshape[2] = {k, c};
    dbk_tensor wt = {0}, dw = {0};
    add_param(g, name, "weight", init, c, 2, wshape, &wt, &dw);
    dbk_value y = dbk_graph_value(g, x.grad.ndim || dw.ndim, n, k, 1, 1);
    /* 2-D views of the (N,C,1,1) activations for GEMM. */
    dbk_tensor x2 = x.data, y2 = y.data, dx2 = x.grad, dy2 = y.grad;
    x2.ndim = y2.ndim = 2;
    x2.shape[1] = c;
    y2.shape[1] = k;
    if (dx2.ndim) {
        dx2.ndim = 2;
        dx2.shape[1] = c;
    }
    if (dy2.ndim) {
        dy2.ndim = 2;
        dy2.shape[1] = k;
    }

    /* the operands: f32, or their f16 copies in mixed precision (x's own when it has one) */
    const bool half = g->cfg.fp16;
    dbk_tensor xo = x2;
    if (half && x.half.ndim) {
        xo = x.half;
        xo.ndim = 2;
        xo.shape[1] = c;
    } else if (half) {
        xo = f16_copy(g, x2, name, "x.f16");
    }
    const dbk_tensor wo = half ? f16_copy(g, wt, name, "weight.f16") : wt;
    /* y (N,K) = x (N,C) * W^T (C,K) */
    dbk_op_desc op = {.op = DBK_OP_GEMM, .p.gemm = {false, true, 1.0f, 0.0f}};
    op.src[0] = xo;
    op.src[1] = wo;
    op.dst[0] = y2;
    dbk_graph_forward(g, &op, name);
    if (!g->cfg.training) return y;

    dbk_tensor dyo = dy2;
    if (half) dyo = dbk_graph_tensor(g, DBK_DTYPE_F16, 2, n, k, 1, 1);
    if (x.grad.ndim) { /* dx (N,C) = dy (N,K) * W (K,C) */
        dbk_op_desc bd = {.op = DBK_OP_GEMM, .p.gemm = {false, false, 1.0f, 0.0f}};
        bd.src[0] = dyo;
        bd.src[1] = wo;
        bd.dst[0] = dx2;
        dbk_graph_backward(g, &bd, label_of(lb, sizeof lb, name, "bwd_data"));
    }
    if (dw.ndim) { /* not a frozen weight: dW (K,C) = dy^T (K,N) * x (N,C) */
        dbk_op_desc bw = {.op = DBK_OP_GEMM, .p.gemm = {true, false, 1.0f, 0.0f}};
        bw.src[0] = dyo;
        bw.src[1] = xo;
        bw.dst[0] = dw;
        dbk_graph_backward(g, &bw, label_of(lb, sizeof lb, name, "bwd_filter"));
    }
    if (half) cast_into(g, dy2, dyo, label_of(lb, sizeof lb, name, "dy.f16"));
    return y;
}

dbk_value dbk_nn_scale(dbk_graph *g, dbk_value x, float alpha, const char *name) {
    char lb[96];
    dbk_op_desc op = {.op = DBK_OP_SCALE, .p.scale = {alpha}};
    op.src[0] = x.data;
    op.dst[0] = x.data;
    dbk_graph_forward(g, &op, name);
    x.half = (dbk_tensor){0};   /* data changed in place */
    if (g->cfg.training && x.grad.ndim) {
        dbk_op_desc b = op;
        b.src[0] = x.grad;
        b.dst[0] = x.grad;
        dbk_graph_backward(g, &b, label_of(lb, sizeof lb, name, "bwd"));
    }
    return x;
}

dbk_value dbk_nn_fork(dbk_graph *g, dbk_value x, const char *name) {
    char lb[96];
    dbk_value y = {.data = x.data, .half = x.half};
    if (!g->cfg.training || !x.grad.ndim) return y;
    y.grad = dbk_graph_tensor(g, DBK_DTYPE_F32, x.grad.ndim, x.grad.shape[0], x.grad.shape[1], x.grad.shape[2],
                              x.grad.shape[3]);
    /* Pushed first, so it runs last: by then both consumers have written their gradients. */
    dbk_op_desc b = {.op = DBK_OP_ADD};
    b.src[0] = x.grad;
    b.src[1] = y.grad;
    b.dst[0] = x.grad;
    dbk_graph_backward(g, &b, label_of(lb, sizeof lb, name, "grad_sum"));
    return y;
}

dbk_value dbk_nn_add(dbk_graph *g, dbk_value a, dbk_value b, const char *name) {
    char lb[96];
    dbk_value y = dbk_graph_value(g, a.grad.ndim || b.grad.ndim, a.data.shape[0], a.data.shape[1], a.data.shape[2],
                                  a.data.shape[3]);
    dbk_fusion_site site = dbk_graph_open_site(g, DBK_FUSION_SITE_ADD);
    site.a = a;
    site.b = b;
    site.y = y;
    dbk_op_desc op = {.op = DBK_OP_ADD};
    op.src[0] = a.data;
    op.src[1] = b.data;
    op.dst[0] = y.data;
    dbk_graph_forward(g, &op, name);
    if (g->cfg.training) {
        /* d(a+b)/da = d(a+b)/db = 1: both receive a copy of dy. */
        const dbk_value *in[2] = {&a, &b};
        for (int i = 1; i >= 0; i--) {
            if (!in[i]->grad.ndim) continue;
            dbk_op_desc c = {.op = DBK_OP_COPY};
            c.src[0] = y.grad;
            c.dst[0] = in[i]->grad;
            dbk_graph_backward(g, &c, label_of(lb, sizeof lb, name, i ? "bwd_b" : "bwd_a"));
        }
    }
    dbk_graph_close_site(g, &site);
    return y;
}
