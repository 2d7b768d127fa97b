/*
 * ops.c — everything ops.h derives from the op list (op_list.h): names, the info table,
 * validation against each op's contract, FLOP and byte counts, and the convolution geometry.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "backend/ops.h"

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

/* The operands of a convolution or GEMM (src0, src1) are both f32, or both f16 (mixed
 * precision: products of fp16 values, exact in fp32, summed in fp32); the result dst0 is f32. */
static dbk_status want_operands(const dbk_op_desc *d) {
    const dbk_tensor *a = &d->src[0], *b = &d->src[1], *c = &d->dst[0];
    if (a->ndim == 0 || b->ndim == 0 || c->ndim == 0) FAIL("%s: a tensor is missing", dbk_op_name(d->op));
    if (a->dtype != b->dtype || (a->dtype != DBK_DTYPE_F32 && a->dtype != DBK_DTYPE_F16))
        FAIL("%s: operands are %s and %s, expected both f32 or both f16", dbk_op_name(d->op), dbk_dtype_name(a->dtype),
             dbk_dtype_name(b->dtype));
    if (c->dtype != DBK_DTYPE_F32)
        FAIL("%s: the result is %s, expected f32", dbk_op_name(d->op), dbk_dtype_name(c->dtype));
    return DBK_OK;
}

/* x (N,C,H,W), w (K,C,R,S), y (N,K,P,Q) agree with conv params, in any of the three
 * directions (dbk_conv2d_geom_of says which slot holds which). */
static dbk_status check_conv2d(const dbk_op_desc *d) {
    const dbk_conv2d_geom g = dbk_conv2d_geom_of(d);
    const dbk_tensor *x = g.x, *w = g.w, *y = g.y;
    const dbk_conv2d_params *p = &d->p.conv;
    DBK_TRY(want_operands(d));
    DBK_TRY(want(d, x, "x", x->dtype, 4));
    DBK_TRY(want(d, w, "w", w->dtype, 4));
    DBK_TRY(want(d, y, "y", y->dtype, 4));
    if (p->stride_h < 1 || p->stride_w < 1 || p->pad_h < 0 || p->pad_w < 0)
        FAIL("%s: stride must be >= 1 and padding >= 0", dbk_op_name(d->op));
    if (x->shape[2] + 2 * p->pad_h < w->shape[2] || x->shape[3] + 2 * p->pad_w < w->shape[3])
        FAIL("%s: filter larger than the padded input", dbk_op_name(d->op));
    DBK_TRY(want_dim(d, "x channels C", x->shape[1], w->shape[1]));
    DBK_TRY(want_dim(d, "y batch N", y->shape[0], x->shape[0]));
    DBK_TRY(want_dim(d, "y channels K", y->shape[1], w->shape[0]));
    DBK_TRY(want_dim(d, "y height P", y->shape[2], dbk_conv_out_len(x->shape[2], w->shape[2], p->stride_h, p->pad_h)));
    DBK_TRY(want_dim(d, "y width Q", y->shape[3], dbk_conv_out_len(x->shape[3], w->shape[3], p->stride_w, p->pad_w)));
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


/* ---------------------------------------------------------------------------------- */
/* per-op checks (the check column)                                                    */

static dbk_status check_gemm(const dbk_op_desc *d) {
    const dbk_tensor *s = d->src, *o = d->dst;
    DBK_TRY(want_operands(d));
    DBK_TRY(want(d, &s[0], "A", s[0].dtype, 2));
    DBK_TRY(want(d, &s[1], "B", s[1].dtype, 2));
    DBK_TRY(want(d, &o[0], "C", DBK_DTYPE_F32, 2));
    int64_t m = d->p.gemm.trans_a ? s[0].shape[1] : s[0].shape[0];
    int64_t ka = d->p.gemm.trans_a ? s[0].shape[0] : s[0].shape[1];
    int64_t kb = d->p.gemm.trans_b ? s[1].shape[1] : s[1].shape[0];
    int64_t n = d->p.gemm.trans_b ? s[1].shape[0] : s[1].shape[1];
    DBK_TRY(want_dim(d, "inner dimension of B", kb, ka));
    DBK_TRY(want_dim(d, "C rows", o[0].shape[0], m));
    return want_dim(d, "C columns", o[0].shape[1], n);
}

static dbk_status check_bn_fwd_train(const dbk_op_desc *d) {
    const dbk_tensor *s = d->src, *o = d->dst;
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

static dbk_status check_bn_fwd_infer(const dbk_op_desc *d) {
    const dbk_tensor *s = d->src, *o = d->dst;
    DBK_TRY(want(d, &s[0], "x", DBK_DTYPE_F32, 4));
    DBK_TRY(want_same(d, &s[0], "x", &o[0], "y"));
    int64_t c = s[0].shape[1];
    DBK_TRY(check_channel_vec(d, &s[1], "gamma", c));
    DBK_TRY(check_channel_vec(d, &s[2], "beta", c));
    DBK_TRY(check_channel_vec(d, &s[3], "running_mean", c));
    return check_channel_vec(d, &s[4], "running_var", c);
}

/* A tensor a backward op reads from the forward pass: f32, or f16 in mixed precision (the
 * f16 copy the graph keeps instead of the f32 activation). */
static dbk_status want_saved(const dbk_op_desc *d, const dbk_tensor *t, const char *name, int ndim) {
    return want(d, t, name, t->dtype == DBK_DTYPE_F16 ? DBK_DTYPE_F16 : DBK_DTYPE_F32, ndim);
}

static dbk_status check_bn_bwd(const dbk_op_desc *d) {
    const dbk_tensor *s = d->src, *o = d->dst;
    DBK_TRY(want_saved(d, &s[0], "x", 4));
    DBK_TRY(want(d, &s[1], "dy", DBK_DTYPE_F32, 4));
    DBK_TRY(want(d, &o[0], "dx", DBK_DTYPE_F32, 4));
    DBK_TRY(want_same(d, &s[0], "x", &s[1], "dy"));
    DBK_TRY(want_same(d, &s[0], "x", &o[0], "dx"));
    int64_t c = s[0].shape[1];
    DBK_TRY(check_channel_vec(d, &s[2], "gamma", c));
    DBK_TRY(check_channel_vec(d, &s[3], "mean", c));
    DBK_TRY(check_channel_vec(d, &s[4], "invstd", c));
    DBK_TRY(check_channel_vec(d, &o[1], "dgamma", c));
    return check_channel_vec(d, &o[2], "dbeta", c);
}

static dbk_status check_bn_relu_bwd(const dbk_op_desc *d) {
    DBK_TRY(check_bn_bwd(d));
    return want_same(d, &d->src[0], "x", &d->src[5], "y");
}

/* The training forward fused with a residual add: src3 skip like x. */
static dbk_status check_bn_fwd_train_skip(const dbk_op_desc *d) {
    DBK_TRY(check_bn_fwd_train(d));
    DBK_TRY(want(d, &d->src[3], "skip", DBK_DTYPE_F32, 4));
    return want_same(d, &d->src[0], "x", &d->src[3], "skip");
}

static dbk_status check_bn_relu_add_bwd(const dbk_op_desc *d) {
    DBK_TRY(check_bn_bwd(d));
    DBK_TRY(want(d, &d->src[0], "x", DBK_DTYPE_F32, 4));   /* f32 only: the mask recomputes bn(x) */
    return check_channel_vec(d, &d->src[5], "beta", d->src[0].shape[1]);
}

/* The fused 2x2 max pool (stride 2, no padding): pooled (N,C,H/2,W/2) of x (N,C,H,W), H, W >= 2. */
static dbk_status want_pooled(const dbk_op_desc *d, const dbk_tensor *x, const dbk_tensor *y, const char *name) {
    DBK_TRY(want(d, y, name, DBK_DTYPE_F32, 4));
    if (x->shape[2] < 2 || x->shape[3] < 2)
        FAIL("%s: x is %lldx%lld, smaller than the 2x2 pool window", dbk_op_name(d->op), (long long)x->shape[2],
             (long long)x->shape[3]);
    DBK_TRY(want_dim(d, "pooled batch N", y->shape[0], x->shape[0]));
    DBK_TRY(want_dim(d, "pooled channels C", y->shape[1], x->shape[1]));
    DBK_TRY(want_dim(d, "pooled height H/2", y->shape[2], x->shape[2] / 2));
    return want_dim(d, "pooled width W/2", y->shape[3], x->shape[3] / 2);
}

/* The training forward fused with ReLU and the 2x2 max pool: dst0 y pooled. */
static dbk_status check_bn_relu_pool_fwd_train(const dbk_op_desc *d) {
    dbk_op_desc full = *d;
    full.dst[0] = d->src[0];   /* the other slots as the plain training forward */
    DBK_TRY(check_bn_fwd_train(&full));
    return want_pooled(d, &d->src[0], &d->dst[0], "y");
}

/* Its backward: src1 dy pooled, src5 beta (the winners are recomputed from x). */
static dbk_status check_bn_relu_pool_bwd(const dbk_op_desc *d) {
    dbk_op_desc full = *d;
    full.src[1] = d->src[0];
    DBK_TRY(check_bn_relu_add_bwd(&full));
    return want_pooled(d, &d->src[0], &d->src[1], "dy");
}

/* The i-th space-separated word of slots: its start and length (0 past the end). */
static size_t slot_span(const char *slots, int i, const char **start) {
    const char *p = slots;
    for (;;) {
        while (*p == ' ') p++;
        size_t n = strcspn(p, " ");
        if (n == 0 || i == 0) {
            *start = p;
            return n;
        }
        p += n;
        i--;
    }
}

/* The i-th slot name of slots into out ("" past the end), without its marks ('?', '#'). */
static void slot_word(const char *slots, int i, char *out, size_t cap) {
    const char *p;
    size_t n = slot_span(slots, i, &p);
    while (n && (p[n - 1] == '?' || p[n - 1] == '#')) n--;
    snprintf(out, cap, "%.*s", (int)n, p);
}

unsigned dbk_op_slot_marks(dbk_op op, bool dst, int i) {
    const dbk_op_info *in = dbk_op_get_info(op);
    if (!in) return 0;
    const char *p;
    size_t n = slot_span(dst ? in->dst_slots : in->src_slots, i, &p);
    unsigned marks = 0;
    for (; n && (p[n - 1] == '?' || p[n - 1] == '#'); n--)
        marks |= p[n - 1] == '?' ? DBK_SLOT_OPTIONAL : DBK_SLOT_COUNTED;
    return marks;
}

/* Slots in a space-separated list (a compile-time constant would need the preprocessor to
 * count words; counting the string once per lookup is cheap). */
static int count_words(const char *s) {
    int n = 0;
    for (const char *p = s; *p;) {
        while (*p == ' ') p++;
        if (!*p) break;
        n++;
        p += strcspn(p, " ");
    }
    return n;
}

/* Elementwise ops (relu, add, scale, fill and any launch EW op): every slot of the
 * declaration is an f32 tensor of one shape. The names in messages are the slot names. */
static dbk_status check_eltwise(const dbk_op_desc *d) {
    const dbk_op_info *in = dbk_op_get_info(d->op);
    const dbk_tensor *first = NULL;
    char name[32], first_name[32] = "";
    for (int side = 0; side < 2; side++) {
        const int n = side ? dbk_op_ndst(d->op) : dbk_op_nsrc(d->op);
        for (int i = 0; i < n; i++) {
            const dbk_tensor *t = side ? &d->dst[i] : &d->src[i];
            slot_word(side ? in->dst_slots : in->src_slots, i, name, sizeof name);
            DBK_TRY(want(d, t, name, DBK_DTYPE_F32, 0));
            if (!first) {
                first = t;
                snprintf(first_name, sizeof first_name, "%s", name);
            } else {
                DBK_TRY(want_same(d, first, first_name, t, name));
            }
        }
    }
    return DBK_OK;
}

/* y f32 or f16 (want_saved), dy and dx f32, one shape. */
static dbk_status check_relu_bwd(const dbk_op_desc *d) {
    DBK_TRY(want_saved(d, &d->src[0], "y", 0));
    DBK_TRY(want(d, &d->src[1], "dy", DBK_DTYPE_F32, 0));
    DBK_TRY(want(d, &d->dst[0], "dx", DBK_DTYPE_F32, 0));
    DBK_TRY(want_same(d, &d->src[0], "y", &d->src[1], "dy"));
    return want_same(d, &d->src[0], "y", &d->dst[0], "dx");
}

static dbk_status check_maxpool(const dbk_op_desc *d) {
    const dbk_tensor *s = d->src, *o = d->dst;
    bool fwd = d->op == DBK_OP_MAXPOOL_FWD;
    const dbk_tensor *x = fwd ? &s[0] : &o[0], *y = fwd ? &o[0] : &s[0], *arg = fwd ? &o[1] : &s[1];
    const dbk_pool_params *p = &d->p.pool;
    DBK_TRY(want(d, x, fwd ? "x" : "dx", DBK_DTYPE_F32, 4));
    DBK_TRY(want(d, y, fwd ? "y" : "dy", DBK_DTYPE_F32, 4));
    DBK_TRY(want(d, arg, "argmax", DBK_DTYPE_I32, 4));
    DBK_TRY(want_same(d, y, "y", arg, "argmax"));
    if (p->size_h < 1 || p->size_w < 1 || p->stride_h < 1 || p->stride_w < 1)
        FAIL("%s: window and stride must be >= 1", dbk_op_name(d->op));
    /* torch's rule: every window then holds at least one element of x */
    if (p->pad_h < 0 || p->pad_w < 0 || 2 * p->pad_h > p->size_h || 2 * p->pad_w > p->size_w)
        FAIL("%s: padding %dx%d must be >= 0 and at most half the window %dx%d", dbk_op_name(d->op), p->pad_h,
             p->pad_w, p->size_h, p->size_w);
    if (p->size_h > x->shape[2] + 2 * p->pad_h || p->size_w > x->shape[3] + 2 * p->pad_w)
        FAIL("%s: window %dx%d larger than the padded input %lldx%lld", dbk_op_name(d->op), p->size_h, p->size_w,
             (long long)x->shape[2] + 2 * p->pad_h, (long long)x->shape[3] + 2 * p->pad_w);
    DBK_TRY(want_dim(d, "y batch N", y->shape[0], x->shape[0]));
    DBK_TRY(want_dim(d, "y channels C", y->shape[1], x->shape[1]));
    DBK_TRY(want_dim(d, "y height P", y->shape[2], dbk_conv_out_len(x->shape[2], p->size_h, p->stride_h, p->pad_h)));
    return want_dim(d, "y width Q", y->shape[3], dbk_conv_out_len(x->shape[3], p->size_w, p->stride_w, p->pad_w));
}

/* x (N,C,H,W) and y (N,C,1,1), in either direction (backward: dx and dy). */
/* Elementwise shapes, and a slope > 0 (the backward reads the sign of y). */
static dbk_status check_leaky_relu(const dbk_op_desc *d) {
    if (!(d->p.leaky.slope > 0.0f))
        FAIL("%s: slope must be > 0 (got %g)", dbk_op_name(d->op), (double)d->p.leaky.slope);
    return check_eltwise(d);
}

/* x and y (dy and dx) f32 of one shape, state i32 (4), p in [0, 1). */
static dbk_status check_dropout(const dbk_op_desc *d) {
    const bool fwd = d->op == DBK_OP_DROPOUT_FWD;
    DBK_TRY(want(d, &d->src[0], fwd ? "x" : "dy", DBK_DTYPE_F32, 0));
    DBK_TRY(want(d, &d->dst[0], fwd ? "y" : "dx", DBK_DTYPE_F32, 0));
    DBK_TRY(want_same(d, &d->src[0], fwd ? "x" : "dy", &d->dst[0], fwd ? "y" : "dx"));
    DBK_TRY(check_scalar(d, &d->src[1], "state {first, seed, epoch, run_seed}", DBK_DTYPE_I32, 4));
    if (!(d->p.dropout.p >= 0.0f && d->p.dropout.p < 1.0f))
        FAIL("%s: p must lie in [0, 1) (got %g)", dbk_op_name(d->op), (double)d->p.dropout.p);
    return DBK_OK;
}

static dbk_status check_global_avgpool(const dbk_op_desc *d) {
    const bool fwd = d->op == DBK_OP_GLOBAL_AVGPOOL_FWD;
    const dbk_tensor *x = fwd ? &d->src[0] : &d->dst[0], *y = fwd ? &d->dst[0] : &d->src[0];
    DBK_TRY(want(d, x, fwd ? "x" : "dx", DBK_DTYPE_F32, 4));
    DBK_TRY(want(d, y, fwd ? "y" : "dy", DBK_DTYPE_F32, 4));
    if (x->shape[2] < 1 || x->shape[3] < 1)
        FAIL("%s: the input plane is empty (%lldx%lld)", dbk_op_name(d->op), (long long)x->shape[2],
             (long long)x->shape[3]);
    DBK_TRY(want_dim(d, "y batch N", y->shape[0], x->shape[0]));
    DBK_TRY(want_dim(d, "y channels C", y->shape[1], x->shape[1]));
    DBK_TRY(want_dim(d, "y height", y->shape[2], 1));
    return want_dim(d, "y width", y->shape[3], 1);
}

static dbk_status check_smoothing(const dbk_op_desc *d) {
    if (!(d->p.xent.label_smoothing >= 0.0f && d->p.xent.label_smoothing < 1.0f))
        FAIL("%s: label smoothing must be in [0, 1)", dbk_op_name(d->op));
    return DBK_OK;
}

static dbk_status check_softmax_xent_fwd(const dbk_op_desc *d) {
    const dbk_tensor *s = d->src, *o = d->dst;
    DBK_TRY(check_logits_labels(d, &s[0], &s[1]));
    DBK_TRY(want(d, &o[0], "probs", DBK_DTYPE_F32, 2));
    DBK_TRY(want_same(d, &s[0], "logits", &o[0], "probs"));
    DBK_TRY(check_smoothing(d));
    return check_scalar(d, &o[1], "loss_sum", DBK_DTYPE_F32, 1);
}

static dbk_status check_softmax_xent_bwd(const dbk_op_desc *d) {
    const dbk_tensor *s = d->src, *o = d->dst;
    DBK_TRY(check_logits_labels(d, &s[0], &s[1]));
    DBK_TRY(want(d, &o[0], "dlogits", DBK_DTYPE_F32, 2));
    DBK_TRY(check_smoothing(d));
    return want_same(d, &s[0], "probs", &o[0], "dlogits");
}

static dbk_status check_accuracy(const dbk_op_desc *d) {
    DBK_TRY(check_logits_labels(d, &d->src[0], &d->src[1]));
    if (d->p.accuracy.k < 0) FAIL("%s: k = %d, must be >= 0 (0 means top-1)", dbk_op_name(d->op), (int)d->p.accuracy.k);
    return check_scalar(d, &d->dst[0], "correct", DBK_DTYPE_F32, 1);
}

/* The optimizers' optional mask (sparse masks): f32 with the parameters' element count. */
static dbk_status check_update_mask(const dbk_op_desc *d, const dbk_tensor *mask, const dbk_tensor *params) {
    if (mask->ndim == 0) return DBK_OK;
    DBK_TRY(want(d, mask, "mask", DBK_DTYPE_F32, 0));
    return want_dim(d, "mask elements (one per parameter)", dbk_tensor_numel(mask), dbk_tensor_numel(params));
}

static dbk_status check_sgd_momentum_update(const dbk_op_desc *d) {
    const dbk_tensor *s = d->src, *o = d->dst;
    DBK_TRY(want(d, &s[0], "grad", DBK_DTYPE_F32, 0));
    DBK_TRY(check_scalar(d, &s[1], "lr {lr[, momentum]}", DBK_DTYPE_F32, dbk_tensor_numel(&s[1]) == 2 ? 2 : 1));
    DBK_TRY(want(d, &o[0], "params", DBK_DTYPE_F32, 0));
    DBK_TRY(want(d, &o[1], "momentum", DBK_DTYPE_F32, 0));
    if (s[3].ndim) DBK_TRY(check_scalar(d, &s[3], "skip", DBK_DTYPE_F32, 1));
    if (dbk_tensor_numel(&s[0]) != dbk_tensor_numel(&o[0]) || dbk_tensor_numel(&o[1]) != dbk_tensor_numel(&o[0]))
        FAIL("%s: grad, params and momentum must have the same element count", dbk_op_name(d->op));
    return check_update_mask(d, &s[2], &o[0]);
}

/* grad, params, exp_avg, exp_avg_sq f32 of one element count; step f32 (3 or 4); betas in
 * [0, 1), eps > 0, weight decay >= 0. */
static dbk_status check_adamw_update(const dbk_op_desc *d) {
    const dbk_tensor *s = d->src, *o = d->dst;
    const dbk_adamw_params *p = &d->p.adamw;
    DBK_TRY(want(d, &s[0], "grad", DBK_DTYPE_F32, 0));
    DBK_TRY(check_scalar(d, &s[1], "step {lr, step_size, bc2_sqrt[, beta1]}", DBK_DTYPE_F32,
                         dbk_tensor_numel(&s[1]) == 4 ? 4 : 3));
    DBK_TRY(want(d, &o[0], "params", DBK_DTYPE_F32, 0));
    DBK_TRY(want(d, &o[1], "exp_avg", DBK_DTYPE_F32, 0));
    DBK_TRY(want(d, &o[2], "exp_avg_sq", DBK_DTYPE_F32, 0));
    if (s[3].ndim) DBK_TRY(check_scalar(d, &s[3], "skip", DBK_DTYPE_F32, 1));
    const int64_t n = dbk_tensor_numel(&o[0]);
    if (dbk_tensor_numel(&s[0]) != n || dbk_tensor_numel(&o[1]) != n || dbk_tensor_numel(&o[2]) != n)
        FAIL("%s: grad, params, exp_avg and exp_avg_sq must have the same element count", dbk_op_name(d->op));
    if (!(p->beta1 >= 0.0f && p->beta1 < 1.0f && p->beta2 >= 0.0f && p->beta2 < 1.0f))
        FAIL("%s: beta1 %g and beta2 %g must lie in [0, 1)", dbk_op_name(d->op), (double)p->beta1, (double)p->beta2);
    if (!(p->eps > 0.0f)) FAIL("%s: eps must be > 0 (got %g)", dbk_op_name(d->op), (double)p->eps);
    if (!(p->weight_decay >= 0.0f))
        FAIL("%s: weight decay must be >= 0 (got %g)", dbk_op_name(d->op), (double)p->weight_decay);
    return check_update_mask(d, &s[2], &o[0]);
}

static dbk_status check_augment(const dbk_op_desc *d) {
    const dbk_tensor *s = d->src, *o = d->dst;
    const dbk_augment_params *p = &d->p.augment;
    DBK_TRY(want(d, &s[0], "images", DBK_DTYPE_U8, 4));
    DBK_TRY(want(d, &s[1], "labels", DBK_DTYPE_U8, 1));
    DBK_TRY(want_dim(d, "labels length", s[1].shape[0], s[0].shape[0]));
    if (s[2].ndim) DBK_TRY(want(d, &s[2], "indices", DBK_DTYPE_I32, 1));
    DBK_TRY(check_scalar(d, &s[3], "state {first, seed, epoch, run_seed}", DBK_DTYPE_I32, 4));
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
    if (p->flip_alternating && !(p->train && p->flip))
        FAIL("%s: flip_alternating needs train and flip", dbk_op_name(d->op));
    if (!(p->brightness >= 0.0f && p->brightness < 1.0f && p->contrast >= 0.0f && p->contrast < 1.0f) ||
        (!p->train && (p->brightness > 0.0f || p->contrast > 0.0f)))
        FAIL("%s: brightness %g and contrast %g must lie in [0, 1), and be 0 in evaluation", dbk_op_name(d->op),
             (double)p->brightness, (double)p->contrast);
    /* A view set on a training descriptor would be silently dropped: refuse it instead. */
    if (p->train && (p->view_dy || p->view_dx || p->view_flip))
        FAIL("%s: view_dy %d, view_dx %d, view_flip %d are for evaluation (train false) only", dbk_op_name(d->op),
             p->view_dy, p->view_dx, (int)p->view_flip);
    if (p->view_dy <= -s[0].shape[2] || p->view_dy >= s[0].shape[2] || p->view_dx <= -s[0].shape[3] ||
        p->view_dx >= s[0].shape[3])
        FAIL("%s: view shift (%d, %d) must be smaller than the image %lldx%lld", dbk_op_name(d->op), p->view_dy,
             p->view_dx, (long long)s[0].shape[2], (long long)s[0].shape[3]);
    return DBK_OK;
}

static dbk_status check_copy(const dbk_op_desc *d) {
    const dbk_tensor *s = d->src, *o = d->dst;
    if (s[0].ndim == 0 || o[0].ndim == 0) FAIL("copy: src and dst are required");
    if (s[0].dtype != o[0].dtype || dbk_tensor_numel(&s[0]) != dbk_tensor_numel(&o[0]))
        FAIL("copy: src and dst differ in dtype or element count");
    return DBK_OK;
}

/* x f32 (n); segments (S,3) and chunks (C,3) i32; pairs i32 of whole pairs; count i32 (1);
 * work i32 (258S + 2C); a threshold > 0. The tables' contents are the host's promise. */
static dbk_status check_sparse_select(const dbk_op_desc *d) {
    const dbk_tensor *s = d->src, *o = d->dst;
    DBK_TRY(want(d, &s[0], "x", DBK_DTYPE_F32, 0));
    DBK_TRY(want(d, &s[1], "segments", DBK_DTYPE_I32, 2));
    DBK_TRY(want(d, &s[2], "chunks", DBK_DTYPE_I32, 2));
    DBK_TRY(want_dim(d, "segments columns", s[1].shape[1], 3));
    DBK_TRY(want_dim(d, "chunks columns", s[2].shape[1], 3));
    DBK_TRY(want(d, &o[0], "pairs", DBK_DTYPE_I32, 0));
    if (dbk_tensor_numel(&o[0]) % 2) FAIL("%s: pairs must hold whole {index, value} pairs", dbk_op_name(d->op));
    DBK_TRY(check_scalar(d, &o[1], "count", DBK_DTYPE_I32, 1));
    DBK_TRY(want(d, &o[2], "work", DBK_DTYPE_I32, 0));
    DBK_TRY(want_dim(d, "work elements (258 x segments + 2 x chunks)", dbk_tensor_numel(&o[2]),
                     258 * s[1].shape[0] + 2 * s[2].shape[0]));
    if (!d->p.select.topk && !(d->p.select.threshold > 0.0f))
        FAIL("%s: the threshold must be > 0 (got %g)", dbk_op_name(d->op), (double)d->p.select.threshold);
    return DBK_OK;
}

/* pairs i32 of whole pairs, acc f32. */
static dbk_status check_sparse_add(const dbk_op_desc *d) {
    DBK_TRY(want(d, &d->src[0], "pairs", DBK_DTYPE_I32, 0));
    if (dbk_tensor_numel(&d->src[0]) % 2) FAIL("%s: pairs must hold whole {index, value} pairs", dbk_op_name(d->op));
    return want(d, &d->dst[0], "acc", DBK_DTYPE_F32, 0);
}

/* pairs i32 of whole pairs, y f32; a constant must be finite. */
static dbk_status check_sparse_scatter(const dbk_op_desc *d) {
    DBK_TRY(want(d, &d->src[0], "pairs", DBK_DTYPE_I32, 0));
    if (dbk_tensor_numel(&d->src[0]) % 2) FAIL("%s: pairs must hold whole {index, value} pairs", dbk_op_name(d->op));
    if (d->p.scatter.constant && !(d->p.scatter.value - d->p.scatter.value == 0.0f))
        FAIL("%s: the constant value must be finite (got %g)", dbk_op_name(d->op), (double)d->p.scatter.value);
    return want(d, &d->dst[0], "y", DBK_DTYPE_F32, 0);
}

/* x f32, indices i32 (k), scales i32 (S,2), pairs i32 (2k). */
static dbk_status check_sparse_gather(const dbk_op_desc *d) {
    const dbk_tensor *s = d->src, *o = d->dst;
    DBK_TRY(want(d, &s[0], "x", DBK_DTYPE_F32, 0));
    DBK_TRY(want(d, &s[1], "indices", DBK_DTYPE_I32, 0));
    DBK_TRY(want(d, &s[2], "scales", DBK_DTYPE_I32, 2));
    DBK_TRY(want_dim(d, "scales columns", s[2].shape[1], 2));
    DBK_TRY(want(d, &o[0], "pairs", DBK_DTYPE_I32, 0));
    return want_dim(d, "pairs values (2 per index)", dbk_tensor_numel(&o[0]), 2 * dbk_tensor_numel(&s[1]));
}

/* QSGD's levels in [1, 65535] or TernGrad's 0; segments i32 (S,3). */
static dbk_status check_quant_common(const dbk_op_desc *d, const dbk_tensor *segments) {
    if (d->p.quant.levels < 0 || d->p.quant.levels > 65535)
        FAIL("%s: levels %d outside 0 (TernGrad) .. 65535", dbk_op_name(d->op), (int)d->p.quant.levels);
    DBK_TRY(want(d, segments, "segments", DBK_DTYPE_I32, 2));
    return want_dim(d, "segments columns", segments->shape[1], 3);
}

/* x f32 (n); segments (S,3) and chunks (C,3) i32; payload i32; work f32 (C + S). */
static dbk_status check_quant_encode(const dbk_op_desc *d) {
    const dbk_tensor *s = d->src, *o = d->dst;
    DBK_TRY(want(d, &s[0], "x", DBK_DTYPE_F32, 0));
    DBK_TRY(check_quant_common(d, &s[1]));
    DBK_TRY(want(d, &s[2], "chunks", DBK_DTYPE_I32, 2));
    DBK_TRY(want_dim(d, "chunks columns", s[2].shape[1], 3));
    DBK_TRY(want(d, &o[0], "payload", DBK_DTYPE_I32, 0));
    DBK_TRY(want(d, &o[1], "work", DBK_DTYPE_F32, 0));
    return want_dim(d, "work elements (chunks + segments)", dbk_tensor_numel(&o[1]), s[2].shape[0] + s[1].shape[0]);
}

/* payload i32; segments i32 (S,3); acc f32. */
static dbk_status check_quant_add(const dbk_op_desc *d) {
    DBK_TRY(want(d, &d->src[0], "payload", DBK_DTYPE_I32, 0));
    DBK_TRY(check_quant_common(d, &d->src[1]));
    return want(d, &d->dst[0], "acc", DBK_DTYPE_F32, 0);
}

int dbk_select_chunks(const int32_t *segments, int segment_count, int chunk, int32_t *chunks) {
    int c = 0;
    for (int s = 0; s < segment_count; s++)
        for (int32_t at = 0; at < segments[3 * s + 1]; at += chunk, c++)
            if (chunks) {
                const int32_t left = segments[3 * s + 1] - at;
                chunks[3 * c] = segments[3 * s] + at;
                chunks[3 * c + 1] = left < chunk ? left : chunk;
                chunks[3 * c + 2] = s;
            }
    return c;
}

static dbk_status check_cast(const dbk_op_desc *d) {
    const bool narrow = d->op == DBK_OP_CAST_F32_F16;
    DBK_TRY(want(d, &d->src[0], "x", narrow ? DBK_DTYPE_F32 : DBK_DTYPE_F16, 0));
    DBK_TRY(want(d, &d->dst[0], "y", narrow ? DBK_DTYPE_F16 : DBK_DTYPE_F32, 0));
    if (dbk_tensor_numel(&d->src[0]) != dbk_tensor_numel(&d->dst[0]))
        FAIL("%s: x and y differ in element count", dbk_op_name(d->op));
    return DBK_OK;
}

static dbk_status check_loss_scale(const dbk_op_desc *d) {
    DBK_TRY(want(d, &d->src[0], "x", DBK_DTYPE_F32, 0));
    DBK_TRY(want(d, &d->dst[0], "y", DBK_DTYPE_F32, 0));
    DBK_TRY(want_same(d, &d->src[0], "x", &d->dst[0], "y"));
    return check_scalar(d, &d->src[1], "s", DBK_DTYPE_F32, 1);
}

static dbk_status check_grad_unscale(const dbk_op_desc *d) {
    DBK_TRY(check_scalar(d, &d->src[0], "inv", DBK_DTYPE_F32, 1));
    DBK_TRY(want(d, &d->dst[0], "g", DBK_DTYPE_F32, 0));
    return check_scalar(d, &d->dst[1], "found", DBK_DTYPE_F32, 1);
}

/* state f32 (6); a growth interval of at least one step. */
static dbk_status check_amp_update_scale(const dbk_op_desc *d) {
    DBK_TRY(check_scalar(d, &d->dst[0], "state {S, 1/S, found, clean, skipped, growths}", DBK_DTYPE_F32, 6));
    if (!(d->p.amp.growth_interval >= 1.0f))
        FAIL("%s: growth interval must be >= 1 (got %g)", dbk_op_name(d->op), (double)d->p.amp.growth_interval);
    return DBK_OK;
}

/* x (N,C,H,W) and y of the same shape, b (C). */
static dbk_status check_bias_add(const dbk_op_desc *d) {
    const dbk_tensor *s = d->src, *o = d->dst;
    DBK_TRY(want(d, &s[0], "x", DBK_DTYPE_F32, 4));
    DBK_TRY(want(d, &o[0], "y", DBK_DTYPE_F32, 4));
    DBK_TRY(want_same(d, &s[0], "x", &o[0], "y"));
    return check_channel_vec(d, &s[1], "b", s[0].shape[1]);
}

/* dy (N,C,H,W), db (C). */
static dbk_status check_channel_sum(const dbk_op_desc *d) {
    DBK_TRY(want(d, &d->src[0], "dy", DBK_DTYPE_F32, 4));
    return check_channel_vec(d, &d->dst[0], "db", d->src[0].shape[1]);
}

/* decay f32 (1); ema and params f32 with the same element count (any shapes: flat buffers
 * or one layer's views). */
/* g, v, u f32 of one element count; nesterov 0 or 1. */
static dbk_status check_muon_momentum(const dbk_op_desc *d) {
    DBK_TRY(want(d, &d->src[0], "g", DBK_DTYPE_F32, 0));
    DBK_TRY(want(d, &d->dst[0], "v", DBK_DTYPE_F32, 0));
    DBK_TRY(want(d, &d->dst[1], "u", DBK_DTYPE_F32, 0));
    const int64_t n = dbk_tensor_numel(&d->src[0]);
    if (dbk_tensor_numel(&d->dst[0]) != n || dbk_tensor_numel(&d->dst[1]) != n)
        FAIL("%s: g, v and u must have the same element count", dbk_op_name(d->op));
    const float nesterov = d->p.muon_momentum.nesterov;
    if (nesterov != 0.0f && nesterov != 1.0f) FAIL("%s: nesterov must be 0 or 1 (got %g)", dbk_op_name(d->op), (double)nesterov);
    return DBK_OK;
}

/* x and y f32 of one element count, g f32 (1), eps >= 0. */
static dbk_status check_norm_scale(const dbk_op_desc *d) {
    DBK_TRY(want(d, &d->src[0], "x", DBK_DTYPE_F32, 0));
    DBK_TRY(check_scalar(d, &d->src[1], "g", DBK_DTYPE_F32, 1));
    DBK_TRY(want(d, &d->dst[0], "y", DBK_DTYPE_F32, 0));
    if (dbk_tensor_numel(&d->src[0]) != dbk_tensor_numel(&d->dst[0]))
        FAIL("%s: x and y must have the same element count", dbk_op_name(d->op));
    if (!(d->p.norm_scale.eps >= 0.0f)) FAIL("%s: eps must be >= 0 (got %g)", dbk_op_name(d->op), (double)d->p.norm_scale.eps);
    return DBK_OK;
}

/* x and params f32 of one element count, lr f32 (1), weight decay >= 0. */
static dbk_status check_muon_update(const dbk_op_desc *d) {
    DBK_TRY(want(d, &d->src[0], "x", DBK_DTYPE_F32, 0));
    DBK_TRY(check_scalar(d, &d->src[1], "lr", DBK_DTYPE_F32, 1));
    DBK_TRY(want(d, &d->dst[0], "params", DBK_DTYPE_F32, 0));
    if (dbk_tensor_numel(&d->src[0]) != dbk_tensor_numel(&d->dst[0]))
        FAIL("%s: x and params must have the same element count", dbk_op_name(d->op));
    if (!(d->p.muon_update.weight_decay >= 0.0f))
        FAIL("%s: weight decay must be >= 0 (got %g)", dbk_op_name(d->op), (double)d->p.muon_update.weight_decay);
    return DBK_OK;
}

/* rows f32 (N,K), table f32 (M,K) with the same K, indices i32 (L) when present, state i32 (4). */
static dbk_status check_scatter_rows(const dbk_op_desc *d) {
    DBK_TRY(want(d, &d->src[0], "rows", DBK_DTYPE_F32, 2));
    if (d->src[1].ndim) DBK_TRY(want(d, &d->src[1], "indices", DBK_DTYPE_I32, 1));
    DBK_TRY(check_scalar(d, &d->src[2], "state", DBK_DTYPE_I32, 4));
    DBK_TRY(want(d, &d->dst[0], "table", DBK_DTYPE_F32, 2));
    return want_dim(d, "table columns", d->dst[0].shape[1], d->src[0].shape[1]);
}

/* logits f32 (N,K), indices i32 (k) with k <= N, work f32 (N). */
static dbk_status check_confidence_select(const dbk_op_desc *d) {
    DBK_TRY(want(d, &d->src[0], "logits", DBK_DTYPE_F32, 2));
    DBK_TRY(want(d, &d->dst[0], "indices", DBK_DTYPE_I32, 1));
    DBK_TRY(want(d, &d->dst[1], "work", DBK_DTYPE_F32, 1));
    if (d->dst[0].shape[0] > d->src[0].shape[0])
        FAIL("%s: %lld indices of %lld rows", dbk_op_name(d->op), (long long)d->dst[0].shape[0],
             (long long)d->src[0].shape[0]);
    return want_dim(d, "work length", d->dst[1].shape[0], d->src[0].shape[0]);
}

static dbk_status check_lookahead(const dbk_op_desc *d) {
    const dbk_tensor *o = d->dst;
    DBK_TRY(check_scalar(d, &d->src[0], "decay", DBK_DTYPE_F32, 1));
    DBK_TRY(want(d, &o[0], "ema", DBK_DTYPE_F32, 0));
    DBK_TRY(want(d, &o[1], "params", DBK_DTYPE_F32, 0));
    if (dbk_tensor_numel(&o[0]) != dbk_tensor_numel(&o[1]))
        FAIL("%s: ema has %lld elements and params %lld: they must have the same element count", dbk_op_name(d->op),
             (long long)dbk_tensor_numel(&o[0]), (long long)dbk_tensor_numel(&o[1]));
    return DBK_OK;
}

/* ---------------------------------------------------------------------------------- */
/* FLOP and byte counts (the flops and bytes columns)                                  */

static double n_src(const dbk_op_desc *d, int i) { return (double)dbk_tensor_numel(&d->src[i]); }
static double n_dst(const dbk_op_desc *d, int i) { return (double)dbk_tensor_numel(&d->dst[i]); }

/* 2 * N*K*P*Q * C*R*S in every direction. */
static double conv2d_flops(const dbk_op_desc *d) {
    const dbk_conv2d_geom g = dbk_conv2d_geom_of(d);
    return 2.0 * (double)(g.N * g.K * g.P * g.Q) * (double)(g.C * g.R * g.S);
}

static double gemm_flops(const dbk_op_desc *d) {
    double k = (double)(d->p.gemm.trans_a ? d->src[0].shape[0] : d->src[0].shape[1]);
    return 2.0 * (double)dbk_tensor_numel(&d->dst[0]) * k;
}

/* Every present tensor once (an in-place tensor is read and written, counted once: its
 * second pass usually hits the cache). */
static double all_bytes(const dbk_op_desc *d) {
    double b = 0.0;
    for (int i = 0; i < DBK_OP_MAX_SRC; i++)
        if (d->src[i].ndim) b += (double)dbk_tensor_nbytes(&d->src[i]);
    for (int i = 0; i < DBK_OP_MAX_DST; i++)
        if (d->dst[i].ndim) b += (double)dbk_tensor_nbytes(&d->dst[i]);
    return b;
}

/* The outputs, plus one u8 read per output element (pixels and labels), not the dataset. */
static double augment_bytes(const dbk_op_desc *d) {
    double b = 0.0;
    for (int i = 0; i < DBK_OP_MAX_DST; i++)
        if (d->dst[i].ndim) b += (double)dbk_tensor_nbytes(&d->dst[i]) + (double)dbk_tensor_numel(&d->dst[i]);
    return b;
}

#define DEFINE_COUNTS_(E, name, family, src, dst, params, check, flops, bytes, ...)     \
    static double flops_##name(const dbk_op_desc *d) { (void)d; return (flops); }      \
    static double bytes_##name(const dbk_op_desc *d) { (void)d; return (bytes); }
DBK_OP_LIST(DEFINE_COUNTS_)
#undef DEFINE_COUNTS_

/* ---------------------------------------------------------------------------------- */
/* the table                                                                           */

/* The size of the params column's member of dbk_op_desc.p, 0 for none. "none" is told
 * apart by the preprocessor's probe idiom: PROBE_none expands to two arguments, which shifts
 * the 0 into SECOND's result; any other name stays one argument and the sizeof is chosen. */
#define SECOND_(a, b, ...) b
#define SECOND(...)        SECOND_(__VA_ARGS__)
#define PROBE_none         ~, 0
#define PARAM_BYTES(m)     SECOND(PROBE_##m, sizeof(((dbk_op_desc *)0)->p.m), ~)

#define IS_EW_EW  true
#define IS_EW_OWN false
#define IS_EW_FAMILY false
#define INFO_ROW_(E, name_, family_, src_, dst_, params_, check_, fl_, by_, grad_, launch_, where_)     \
    [DBK_OP_##E] = {.op = DBK_OP_##E,                                                                   \
                    .name = #name_,                                                                     \
                    .family = #family_,                                                                 \
                    .src_slots = src_,                                                                  \
                    .dst_slots = dst_,                                                                  \
                    .params = #params_,                                                                 \
                    .param_bytes = PARAM_BYTES(params_),                                                \
                    .grad = DBK_OP_GRAD_##grad_,                                                        \
                    .eltwise = IS_EW_##launch_,                                                         \
                    .where = DBK_OP_WHERE_##where_,                                                     \
                    .check = check_,                                                                    \
                    .flops = flops_##name_,                                                             \
                    .bytes = bytes_##name_},
static const dbk_op_info infos[DBK_OP_COUNT] = {DBK_OP_LIST(INFO_ROW_)};
#undef INFO_ROW_

const dbk_op_info *dbk_op_get_info(dbk_op op) { return (unsigned)op < DBK_OP_COUNT ? &infos[op] : NULL; }

int dbk_op_nsrc(dbk_op op) { return (unsigned)op < DBK_OP_COUNT ? count_words(infos[op].src_slots) : 0; }
int dbk_op_ndst(dbk_op op) { return (unsigned)op < DBK_OP_COUNT ? count_words(infos[op].dst_slots) : 0; }

const char *dbk_op_name(dbk_op op) {
    return (unsigned)op < DBK_OP_COUNT ? infos[op].name : "unknown_op";
}

dbk_status dbk_op_from_name(const char *name, dbk_op *out) {
    for (int i = 0; i < DBK_OP_COUNT; i++) {
        if (!strcmp(infos[i].name, name)) {
            *out = (dbk_op)i;
            return DBK_OK;
        }
    }
    FAIL("no op is named '%s' (see src/backend/op_list.h)", name);
}

dbk_status dbk_op_validate(const dbk_op_desc *d) {
    if ((unsigned)d->op >= DBK_OP_COUNT) FAIL("unknown op %d", (int)d->op);
    return infos[d->op].check(d);
}

double dbk_op_flops(const dbk_op_desc *d) {
    return (unsigned)d->op < DBK_OP_COUNT ? infos[d->op].flops(d) : 0.0;
}

double dbk_op_bytes(const dbk_op_desc *d) {
    return (unsigned)d->op < DBK_OP_COUNT ? infos[d->op].bytes(d) : 0.0;
}

/* ---------------------------------------------------------------------------------- */
/* convolution geometry                                                                */

dbk_conv2d_geom dbk_conv2d_geom_of(const dbk_op_desc *d) {
    DBK_ASSERT(d->op == DBK_OP_CONV2D_FWD || d->op == DBK_OP_CONV2D_BWD_DATA || d->op == DBK_OP_CONV2D_BWD_FILTER);
    dbk_conv2d_geom g;
    g.x = &d->src[0];   /* forward: src0 x, src1 w, dst0 y */
    g.w = &d->src[1];
    g.y = &d->dst[0];
    if (d->op == DBK_OP_CONV2D_BWD_DATA) {   /* src0 dy, src1 w, dst0 dx */
        g.x = &d->dst[0];
        g.y = &d->src[0];
    } else if (d->op == DBK_OP_CONV2D_BWD_FILTER) {   /* src0 x, src1 dy, dst0 dw */
        g.w = &d->dst[0];
        g.y = &d->src[1];
    }
    g.N = g.x->shape[0];
    g.C = g.x->shape[1];
    g.H = g.x->shape[2];
    g.W = g.x->shape[3];
    g.K = g.w->shape[0];
    g.R = g.w->shape[2];
    g.S = g.w->shape[3];
    g.P = g.y->shape[2];
    g.Q = g.y->shape[3];
    g.stride_h = d->p.conv.stride_h;
    g.stride_w = d->p.conv.stride_w;
    g.pad_h = d->p.conv.pad_h;
    g.pad_w = d->p.conv.pad_w;
    return g;
}

void dbk_augment_affine(const dbk_augment_params *p, float scale[3], float shift[3]) {
    for (int c = 0; c < 3; c++) {
        scale[c] = (float)(1.0 / (255.0 * (double)p->std[c]));
        shift[c] = (float)(-(double)p->mean[c] / (double)p->std[c]);
    }
}
