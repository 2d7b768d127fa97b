/*
 * ops.c — op names, descriptor validation against the contracts in ops.h, and FLOP counts.
 */
#include <stdio.h>
#include <string.h>

#include "backend/ops.h"

const char *dbk_op_name(dbk_op op) {
    switch (op) {
    case DBK_OP_CONV2D_FWD:          return "conv2d_fwd";
    case DBK_OP_CONV2D_BWD_DATA:     return "conv2d_bwd_data";
    case DBK_OP_CONV2D_BWD_FILTER:   return "conv2d_bwd_filter";
    case DBK_OP_GEMM:                return "gemm";
    case DBK_OP_BATCHNORM_FWD_TRAIN: return "batchnorm_fwd_train";
    case DBK_OP_BATCHNORM_FWD_INFER: return "batchnorm_fwd_infer";
    case DBK_OP_BATCHNORM_BWD:       return "batchnorm_bwd";
    case DBK_OP_RELU_FWD:            return "relu_fwd";
    case DBK_OP_RELU_BWD:            return "relu_bwd";
    case DBK_OP_MAXPOOL_FWD:         return "maxpool_fwd";
    case DBK_OP_MAXPOOL_BWD:         return "maxpool_bwd";
    case DBK_OP_ADD:                 return "add";
    case DBK_OP_SCALE:               return "scale";
    case DBK_OP_SOFTMAX_XENT_FWD:    return "softmax_xent_fwd";
    case DBK_OP_SOFTMAX_XENT_BWD:    return "softmax_xent_bwd";
    case DBK_OP_ACCURACY:            return "accuracy";
    case DBK_OP_SGD_MOMENTUM_UPDATE: return "sgd_momentum_update";
    case DBK_OP_AUGMENT:             return "augment";
    case DBK_OP_FILL:                return "fill";
    case DBK_OP_COPY:                return "copy";
    case DBK_OP_COUNT:               break;
    }
    return "unknown_op";
}

/* ---------------------------------------------------------------------------------- */
/* validation helpers: each returns DBK_ERR_INVALID_ARG with "<op>: <what>" on mismatch */

#define FAIL(...) return dbk_set_error(DBK_ERR_INVALID_ARG, __VA_ARGS__)

static dbk_status want(const dbk_op_desc *d, const dbk_tensor *t, const char *name, dbk_dtype dtype, int ndim) {
    if (t->ndim == 0) FAIL("%s: tensor %s is missing", dbk_op_name(d->op), name);
    if (t->dtype != dtype)
        FAIL("%s: tensor %s is %s, expected %s", dbk_op_name(d->op), name, dbk_dtype_name(t->dtype),
             dbk_dtype_name(dtype));
    if (ndim > 0 && t->ndim != ndim)
        FAIL("%s: tensor %s has %d dims, expected %d", dbk_op_name(d->op), name, t->ndim, ndim);
    return DBK_OK;
}

static bool same_shape(const dbk_tensor *a, const dbk_tensor *b) {
    if (a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return false;
    return true;
}

static dbk_status want_same(const dbk_op_desc *d, const dbk_tensor *a, const char *an, const dbk_tensor *b,
                            const char *bn) {
    if (!same_shape(a, b)) {
        char sa[64], sb[64];
        dbk_tensor_describe(a, sa, sizeof sa);
        dbk_tensor_describe(b, sb, sizeof sb);
        FAIL("%s: %s %s and %s %s must have the same shape", dbk_op_name(d->op), an, sa, bn, sb);
    }
    return DBK_OK;
}

static dbk_status want_dim(const dbk_op_desc *d, const char *what, int64_t got, int64_t expected) {
    if (got != expected)
        FAIL("%s: %s is %lld, expected %lld", dbk_op_name(d->op), what, (long long)got, (long long)expected);
    return DBK_OK;
}

static int64_t conv_out(int64_t in, int64_t k, int stride, int pad) { return (in + 2 * pad - k) / stride + 1; }

/* x (N,C,H,W), w (K,C,R,S), y (N,K,P,Q) agree with conv params. */
static dbk_status check_conv(const dbk_op_desc *d, const dbk_tensor *x, const dbk_tensor *w, const dbk_tensor *y) {
    const dbk_conv2d_params *p = &d->p.conv;
    DBK_TRY(want(d, x, "x", DBK_DTYPE_F32, 4));
    DBK_TRY(want(d, w, "w", DBK_DTYPE_F32, 4));
    DBK_TRY(want(d, y, "y", DBK_DTYPE_F32, 4));
    if (p->stride_h < 1 || p->stride_w < 1 || p->pad_h < 0 || p->pad_w < 0)
        FAIL("%s: stride must be >= 1 and padding >= 0", dbk_op_name(d->op));
    if (x->shape[2] + 2 * p->pad_h < w->shape[2] || x->shape[3] + 2 * p->pad_w < w->shape[3])
        FAIL("%s: filter larger than the padded input", dbk_op_name(d->op));
    DBK_TRY(want_dim(d, "x channels C", x->shape[1], w->shape[1]));
    DBK_TRY(want_dim(d, "y batch N", y->shape[0], x->shape[0]));
    DBK_TRY(want_dim(d, "y channels K", y->shape[1], w->shape[0]));
    DBK_TRY(want_dim(d, "y height P", y->shape[2], conv_out(x->shape[2], w->shape[2], p->stride_h, p->pad_h)));
    DBK_TRY(want_dim(d, "y width Q", y->shape[3], conv_out(x->shape[3], w->shape[3], p->stride_w, p->pad_w)));
    return DBK_OK;
}

static dbk_status check_channel_vec(const dbk_op_desc *d, const dbk_tensor *t, const char *name, int64_t c) {
    DBK_TRY(want(d, t, name, DBK_DTYPE_F32, 0));
    if (dbk_tensor_numel(t) != c)
        FAIL("%s: %s has %lld elements, expected C = %lld", dbk_op_name(d->op), name,
             (long long)dbk_tensor_numel(t), (long long)c);
    return DBK_OK;
}

static dbk_status check_scalar(const dbk_op_desc *d, const dbk_tensor *t, const char *name, dbk_dtype dt, int64_t n) {
    DBK_TRY(want(d, t, name, dt, 0));
    if (dbk_tensor_numel(t) != n)
        FAIL("%s: %s must have %lld element(s)", dbk_op_name(d->op), name, (long long)n);
    return DBK_OK;
}

static dbk_status check_logits_labels(const dbk_op_desc *d, const dbk_tensor *z, const dbk_tensor *labels) {
    DBK_TRY(want(d, z, "logits", DBK_DTYPE_F32, 2));
    DBK_TRY(want(d, labels, "labels", DBK_DTYPE_I32, 1));
    return want_dim(d, "labels length", labels->shape[0], z->shape[0]);
}

dbk_status dbk_op_validate(const dbk_op_desc *d) {
    const dbk_tensor *s = d->src, *o = d->dst;
    switch (d->op) {
    case DBK_OP_CONV2D_FWD:
        return check_conv(d, &s[0], &s[1], &o[0]);
    case DBK_OP_CONV2D_BWD_DATA:
        return check_conv(d, &o[0], &s[1], &s[0]);
    case DBK_OP_CONV2D_BWD_FILTER:
        return check_conv(d, &s[0], &o[0], &s[1]);

    case DBK_OP_GEMM: {
        DBK_TRY(want(d, &s[0], "A", DBK_DTYPE_F32, 2));
        DBK_TRY(want(d, &s[1], "B", DBK_DTYPE_F32, 2));
        DBK_TRY(want(d, &o[0], "C", DBK_DTYPE_F32, 2));
        int64_t m = d->p.gemm.trans_a ? s[0].shape[1] : s[0].shape[0];
        int64_t ka = d->p.gemm.trans_a ? s[0].shape[0] : s[0].shape[1];
        int64_t kb = d->p.gemm.trans_b ? s[1].shape[1] : s[1].shape[0];
        int64_t n = d->p.gemm.trans_b ? s[1].shape[0] : s[1].shape[1];
        DBK_TRY(want_dim(d, "inner dimension of B", kb, ka));
        DBK_TRY(want_dim(d, "C rows", o[0].shape[0], m));
        return want_dim(d, "C columns", o[0].shape[1], n);
    }

    case DBK_OP_BATCHNORM_FWD_TRAIN: {
        DBK_TRY(want(d, &s[0], "x", DBK_DTYPE_F32, 4));
        DBK_TRY(want_same(d, &s[0], "x", &o[0], "y"));
        int64_t c = s[0].shape[1];
        DBK_TRY(check_channel_vec(d, &s[1], "gamma", c));
        DBK_TRY(check_channel_vec(d, &s[2], "beta", c));
        DBK_TRY(check_channel_vec(d, &o[1], "mean", c));
        DBK_TRY(check_channel_vec(d, &o[2], "invstd", c));
        DBK_TRY(check_channel_vec(d, &o[3], "running_mean", c));
        DBK_TRY(check_channel_vec(d, &o[4], "running_var", c));
        if (!(d->p.bn.eps > 0.0f)) FAIL("%s: eps must be > 0", dbk_op_name(d->op));
        return DBK_OK;
    }
    case DBK_OP_BATCHNORM_FWD_INFER: {
        DBK_TRY(want(d, &s[0], "x", DBK_DTYPE_F32, 4));
        DBK_TRY(want_same(d, &s[0], "x", &o[0], "y"));
        int64_t c = s[0].shape[1];
        DBK_TRY(check_channel_vec(d, &s[1], "gamma", c));
        DBK_TRY(check_channel_vec(d, &s[2], "beta", c));
        DBK_TRY(check_channel_vec(d, &s[3], "running_mean", c));
        return check_channel_vec(d, &s[4], "running_var", c);
    }
    case DBK_OP_BATCHNORM_BWD: {
        DBK_TRY(want(d, &s[0], "x", DBK_DTYPE_F32, 4));
        DBK_TRY(want_same(d, &s[0], "x", &s[1], "dy"));
        DBK_TRY(want_same(d, &s[0], "x", &o[0], "dx"));
        int64_t c = s[0].shape[1];
        DBK_TRY(check_channel_vec(d, &s[2], "gamma", c));
        DBK_TRY(check_channel_vec(d, &s[3], "mean", c));
        DBK_TRY(check_channel_vec(d, &s[4], "invstd", c));
        DBK_TRY(check_channel_vec(d, &o[1], "dgamma", c));
        return check_channel_vec(d, &o[2], "dbeta", c);
    }

    case DBK_OP_RELU_FWD:
        DBK_TRY(want(d, &s[0], "x", DBK_DTYPE_F32, 0));
        DBK_TRY(want(d, &o[0], "y", DBK_DTYPE_F32, 0));
        return want_same(d, &s[0], "x", &o[0], "y");
    case DBK_OP_RELU_BWD:
        DBK_TRY(want(d, &s[0], "y", DBK_DTYPE_F32, 0));
        DBK_TRY(want(d, &s[1], "dy", DBK_DTYPE_F32, 0));
        DBK_TRY(want(d, &o[0], "dx", DBK_DTYPE_F32, 0));
        DBK_TRY(want_same(d, &s[0], "y", &s[1], "dy"));
        return want_same(d, &s[0], "y", &o[0], "dx");

    case DBK_OP_MAXPOOL_FWD:
    case DBK_OP_MAXPOOL_BWD: {
        bool fwd = d->op == DBK_OP_MAXPOOL_FWD;
        const dbk_tensor *x = fwd ? &s[0] : &o[0], *y = fwd ? &o[0] : &s[0], *arg = fwd ? &o[1] : &s[1];
        const dbk_pool_params *p = &d->p.pool;
        DBK_TRY(want(d, x, fwd ? "x" : "dx", DBK_DTYPE_F32, 4));
        DBK_TRY(want(d, y, fwd ? "y" : "dy", DBK_DTYPE_F32, 4));
        DBK_TRY(want(d, arg, "argmax", DBK_DTYPE_I32, 4));
        DBK_TRY(want_same(d, y, "y", arg, "argmax"));
        if (p->size_h < 1 || p->size_w < 1 || p->stride_h < 1 || p->stride_w < 1)
            FAIL("%s: window and stride must be >= 1", dbk_op_name(d->op));
        if (p->size_h > x->shape[2] || p->size_w > x->shape[3])
            FAIL("%s: window %dx%d larger than the input %lldx%lld", dbk_op_name(d->op), p->size_h, p->size_w,
                 (long long)x->shape[2], (long long)x->shape[3]);
        DBK_TRY(want_dim(d, "y batch N", y->shape[0], x->shape[0]));
        DBK_TRY(want_dim(d, "y channels C", y->shape[1], x->shape[1]));
        DBK_TRY(want_dim(d, "y height P", y->shape[2], conv_out(x->shape[2], p->size_h, p->stride_h, 0)));
        return want_dim(d, "y width Q", y->shape[3], conv_out(x->shape[3], p->size_w, p->stride_w, 0));
    }

    case DBK_OP_ADD:
        DBK_TRY(want(d, &s[0], "a", DBK_DTYPE_F32, 0));
        DBK_TRY(want(d, &s[1], "b", DBK_DTYPE_F32, 0));
        DBK_TRY(want(d, &o[0], "y", DBK_DTYPE_F32, 0));
        DBK_TRY(want_same(d, &s[0], "a", &s[1], "b"));
        return want_same(d, &s[0], "a", &o[0], "y");
    case DBK_OP_SCALE:
        DBK_TRY(want(d, &s[0], "x", DBK_DTYPE_F32, 0));
        DBK_TRY(want(d, &o[0], "y", DBK_DTYPE_F32, 0));
        return want_same(d, &s[0], "x", &o[0], "y");

    case DBK_OP_SOFTMAX_XENT_FWD:
        DBK_TRY(check_logits_labels(d, &s[0], &s[1]));
        DBK_TRY(want(d, &o[0], "probs", DBK_DTYPE_F32, 2));
        DBK_TRY(want_same(d, &s[0], "logits", &o[0], "probs"));
        if (!(d->p.xent.label_smoothing >= 0.0f && d->p.xent.label_smoothing < 1.0f))
            FAIL("%s: label smoothing must be in [0, 1)", dbk_op_name(d->op));
        return check_scalar(d, &o[1], "loss_sum", DBK_DTYPE_F32, 1);
    case DBK_OP_SOFTMAX_XENT_BWD:
        DBK_TRY(check_logits_labels(d, &s[0], &s[1]));
        DBK_TRY(want(d, &o[0], "dlogits", DBK_DTYPE_F32, 2));
        if (!(d->p.xent.label_smoothing >= 0.0f && d->p.xent.label_smoothing < 1.0f))
            FAIL("%s: label smoothing must be in [0, 1)", dbk_op_name(d->op));
        return want_same(d, &s[0], "probs", &o[0], "dlogits");
    case DBK_OP_ACCURACY:
        DBK_TRY(check_logits_labels(d, &s[0], &s[1]));
        return check_scalar(d, &o[0], "correct", DBK_DTYPE_F32, 1);

    case DBK_OP_SGD_MOMENTUM_UPDATE:
        DBK_TRY(want(d, &s[0], "grad", DBK_DTYPE_F32, 0));
        DBK_TRY(check_scalar(d, &s[1], "lr", DBK_DTYPE_F32, 1));
        DBK_TRY(want(d, &o[0], "params", DBK_DTYPE_F32, 0));
        DBK_TRY(want(d, &o[1], "momentum", DBK_DTYPE_F32, 0));
        if (dbk_tensor_numel(&s[0]) != dbk_tensor_numel(&o[0]) || dbk_tensor_numel(&o[1]) != dbk_tensor_numel(&o[0]))
            FAIL("%s: grad, params and momentum must have the same element count", dbk_op_name(d->op));
        return DBK_OK;

    case DBK_OP_AUGMENT: {
        const dbk_augment_params *p = &d->p.augment;
        DBK_TRY(want(d, &s[0], "images", DBK_DTYPE_U8, 4));
        DBK_TRY(want(d, &s[1], "labels", DBK_DTYPE_U8, 1));
        DBK_TRY(want_dim(d, "labels length", s[1].shape[0], s[0].shape[0]));
        if (s[2].ndim) DBK_TRY(want(d, &s[2], "indices", DBK_DTYPE_I32, 1));
        DBK_TRY(check_scalar(d, &s[3], "state", DBK_DTYPE_I32, 2));
        DBK_TRY(want(d, &o[0], "x", DBK_DTYPE_F32, 4));
        DBK_TRY(want(d, &o[1], "batch labels", DBK_DTYPE_I32, 1));
        DBK_TRY(want_dim(d, "image channels", s[0].shape[1], 3));
        DBK_TRY(want_dim(d, "x channels", o[0].shape[1], 3));
        DBK_TRY(want_dim(d, "x height", o[0].shape[2], s[0].shape[2]));
        DBK_TRY(want_dim(d, "x width", o[0].shape[3], s[0].shape[3]));
        DBK_TRY(want_dim(d, "batch labels length", o[1].shape[0], o[0].shape[0]));
        if (p->pad < 0 || p->pad >= s[0].shape[2] || p->pad >= s[0].shape[3])
            FAIL("%s: reflect padding %d must be in [0, image size)", dbk_op_name(d->op), p->pad);
        if (p->cutout < 0 || p->cutout > s[0].shape[2] || p->cutout > s[0].shape[3])
            FAIL("%s: cutout %d larger than the image", dbk_op_name(d->op), p->cutout);
        for (int c = 0; c < 3; c++)
            if (!(p->std[c] > 0.0f)) FAIL("%s: std[%d] must be > 0", dbk_op_name(d->op), c);
        return DBK_OK;
    }

    case DBK_OP_FILL:
        return want(d, &o[0], "dst", DBK_DTYPE_F32, 0);
    case DBK_OP_COPY:
        if (s[0].ndim == 0 || o[0].ndim == 0) FAIL("copy: src and dst are required");
        if (s[0].dtype != o[0].dtype || dbk_tensor_numel(&s[0]) != dbk_tensor_numel(&o[0]))
            FAIL("copy: src and dst differ in dtype or element count");
        return DBK_OK;

    case DBK_OP_COUNT:
        break;
    }
    FAIL("unknown op %d", (int)d->op);
}

double dbk_op_flops(const dbk_op_desc *d) {
    switch (d->op) {
    case DBK_OP_CONV2D_FWD: /* 2 * N*K*P*Q * C*R*S */
        return 2.0 * (double)dbk_tensor_numel(&d->dst[0]) * (double)(dbk_tensor_numel(&d->src[1]) / d->src[1].shape[0]);
    case DBK_OP_CONV2D_BWD_DATA:
        return 2.0 * (double)dbk_tensor_numel(&d->src[0]) * (double)(dbk_tensor_numel(&d->src[1]) / d->src[1].shape[0]);
    case DBK_OP_CONV2D_BWD_FILTER:
        return 2.0 * (double)dbk_tensor_numel(&d->src[1]) * (double)(dbk_tensor_numel(&d->dst[0]) / d->dst[0].shape[0]);
    case DBK_OP_GEMM: {
        double k = (double)(d->p.gemm.trans_a ? d->src[0].shape[0] : d->src[0].shape[1]);
        return 2.0 * (double)dbk_tensor_numel(&d->dst[0]) * k;
    }
    case DBK_OP_BATCHNORM_FWD_TRAIN: return 8.0 * (double)dbk_tensor_numel(&d->src[0]);
    case DBK_OP_BATCHNORM_FWD_INFER: return 2.0 * (double)dbk_tensor_numel(&d->src[0]);
    case DBK_OP_BATCHNORM_BWD:       return 10.0 * (double)dbk_tensor_numel(&d->src[0]);
    case DBK_OP_SOFTMAX_XENT_FWD:
    case DBK_OP_SOFTMAX_XENT_BWD:    return 5.0 * (double)dbk_tensor_numel(&d->src[0]);
    case DBK_OP_SGD_MOMENTUM_UPDATE: return 6.0 * (double)dbk_tensor_numel(&d->src[0]);
    case DBK_OP_RELU_FWD:
    case DBK_OP_RELU_BWD:
    case DBK_OP_ADD:
    case DBK_OP_SCALE:               return (double)dbk_tensor_numel(&d->dst[0]);
    case DBK_OP_MAXPOOL_FWD:         return (double)dbk_tensor_numel(&d->src[0]);
    case DBK_OP_MAXPOOL_BWD:
    case DBK_OP_ACCURACY:
    case DBK_OP_AUGMENT:
    case DBK_OP_FILL:
    case DBK_OP_COPY:
    case DBK_OP_COUNT:               return 0.0;
    }
    return 0.0;
}
