/*
 * graph_fusion.c — the fusion pass (docs/fusion.md): one pass over a built training graph that
 * rewrites its op lists where a layer marked a fusion site (graph_impl.h).
 *
 * The layer builders push the plain ops and mark the ReLUs, adds and max pools. This pass
 * copies the pushed lists and visits the sites in build order; each rule looks at the op
 * that was last in each list when the site's layer was built (the last op still kept before
 * the site's first one), takes the site's ops into it where the pattern is there, and drops
 * what it replaced. So each rule sees exactly what a builder would have seen had it fused while
 * building, and the lists come out as they would then: the same ops, in the same order, with
 * the same tensors (every tensor is allocated whether or not the graph fuses, so both passes
 * and both settings plan the same arena) and labels.
 *
 * Fusion is off in evaluation graphs, with cfg.no_fusion (DBK_FUSE=0) and, by each rule, in
 * mixed precision, where batch norm's and ReLU's backward passes read f16 copies.
 */
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "nn/graph_impl.h"

/* A list being rewritten in place, with which of its ops are still kept. */
typedef struct pass_list {
    dbk_graph_op_list *l;
    bool              *kept;
} pass_list;

static bool same_tensor(const dbk_tensor *a, const dbk_tensor *b) {
    return a->buf == b->buf && a->offset == b->offset && a->dtype == b->dtype && a->ndim == b->ndim &&
           !memcmp(a->shape, b->shape, sizeof a->shape);
}

/* Appends suffix to an op's label (a 64-byte entry of the labels) where it fits. */
static void label_append(char *label, const char *suffix) {
    const size_t n = strlen(label), k = strlen(suffix);
    if (n + k < sizeof ((dbk_graph_op_list *)0)->labels[0]) memcpy(label + n, suffix, k + 1);
}

/* The last op kept before index before, or -1: the list's last op when the layer whose
 * first op is at before was built. */
static int last_kept(const pass_list *p, int before) {
    for (int i = before - 1; i >= 0; i--)
        if (p->kept[i]) return i;
    return -1;
}

static void drop(pass_list *p, int begin, int end) {
    for (int i = begin; i < end; i++) p->kept[i] = false;
}

/* Drops the site's own ops: the layer the rule took into the op before it. */
static void drop_site(pass_list *fwd, pass_list *bwd, const dbk_fusion_site *s) {
    drop(fwd, s->fwd_begin, s->fwd_end);
    drop(bwd, s->bwd_begin, s->bwd_end);
}

/* A ReLU on the output of the training batch norm built just before turns that batch norm's
 * forward and backward ops into DBK_OP_BATCHNORM_RELU_FWD_TRAIN and _BWD, which clamp y and
 * mask dy in the batch norm's own passes (y and dy each cross memory once less each way). f32
 * only: in fp16 the ReLU backward reads the f16 copy of the output (the copy the next
 * convolution takes), so the f32 output need not live until the backward pass. */
static bool fuse_batchnorm_relu(pass_list *fwd, pass_list *bwd, bool fp16, const dbk_fusion_site *s) {
    const dbk_value x = s->x;
    const int fi = last_kept(fwd, s->fwd_begin), bi = last_kept(bwd, s->bwd_begin);
    if (fp16 || fi < 0 || bi < 0 || x.data.dtype != DBK_DTYPE_F32) return false;
    dbk_op_desc *f = &fwd->l->ops[fi], *b = &bwd->l->ops[bi];
    if (f->op != DBK_OP_BATCHNORM_FWD_TRAIN || !same_tensor(&f->dst[0], &x.data)) return false;
    if (b->op != DBK_OP_BATCHNORM_BWD || !same_tensor(&b->src[1], &x.grad)) return false;
    f->op = DBK_OP_BATCHNORM_RELU_FWD_TRAIN;
    b->op = DBK_OP_BATCHNORM_RELU_BWD;
    b->src[5] = x.data; /* the fused forward's output: ReLU's mask */
    label_append(fwd->l->labels[fi], "+relu");
    label_append(bwd->l->labels[bi], "+relu");
    drop_site(fwd, bwd, s);
    return true;
}

/* ResNet-18/50's add: a ReLU on y = skip + o, where the add is the last forward op and o the
 * output of the training batch norm just before it, becomes DBK_OP_BATCHNORM_ADD_RELU_FWD_TRAIN
 * writing y; backward, the add's copies of dy (the last backward ops) go: the batch norm's
 * backward becomes DBK_OP_BATCHNORM_RELU_BWD reading y's gradient with y as the mask, and
 * skip's gradient is RELU_BWD's output instead of a copy, in the place of the add's first
 * copy. o and its gradient are never written. */
static bool fuse_add_relu(pass_list *fwd, pass_list *bwd, bool fp16, const dbk_fusion_site *s) {
    const dbk_value x = s->x;
    if (fp16 || !x.grad.ndim || x.data.dtype != DBK_DTYPE_F32) return false;
    const int ai = last_kept(fwd, s->fwd_begin), fi = ai >= 0 ? last_kept(fwd, ai) : -1;
    if (fi < 0) return false;
    dbk_op_desc *add = &fwd->l->ops[ai], *f = &fwd->l->ops[fi];
    if (add->op != DBK_OP_ADD || !same_tensor(&add->dst[0], &x.data) || f->op != DBK_OP_BATCHNORM_FWD_TRAIN ||
        same_tensor(&add->src[0], &add->src[1]))
        return false;
    const int side = same_tensor(&add->src[0], &f->dst[0]) ? 0 : same_tensor(&add->src[1], &f->dst[0]) ? 1 : -1;
    if (side < 0) return false;
    /* the add's copies of dy, then (before them) the batch norm's backward: the last three
     * backward ops kept before the ReLU's, the latest first */
    int at[3], n = 0;
    for (int i = last_kept(bwd, s->bwd_begin); i >= 0 && n < 3; i = last_kept(bwd, i)) at[n++] = i;
    int copies = 0;
    while (copies < 2 && copies < n - 1) {
        const dbk_op_desc *c = &bwd->l->ops[at[copies]];
        if (c->op != DBK_OP_COPY || !same_tensor(&c->src[0], &x.grad)) break;
        copies++;
    }
    if (!copies) return false;
    dbk_op_desc *b = &bwd->l->ops[at[copies]];
    if (b->op != DBK_OP_BATCHNORM_BWD || b->src[0].dtype != DBK_DTYPE_F32) return false;
    int to_bn = -1, to_skip = -1;   /* the copies into o's gradient and skip's */
    for (int i = 0; i < copies; i++) {
        if (same_tensor(&bwd->l->ops[at[i]].dst[0], &b->src[1])) to_bn = at[i];
        else to_skip = at[i];
    }
    if (to_bn < 0) return false;

    f->op = DBK_OP_BATCHNORM_ADD_RELU_FWD_TRAIN;
    f->src[3] = add->src[1 - side];
    f->dst[0] = x.data;
    label_append(fwd->l->labels[fi], "+add+relu");
    fwd->kept[ai] = false;
    b->op = DBK_OP_BATCHNORM_RELU_BWD;
    b->src[1] = x.grad;
    b->src[5] = x.data; /* the fused forward's output: ReLU's mask */
    label_append(bwd->l->labels[at[copies]], "+add+relu");
    dbk_op_desc skip_grad = {.op = DBK_OP_RELU_BWD};
    char label[sizeof bwd->l->labels[0]] = "";
    if (to_skip >= 0) {
        skip_grad.src[0] = x.data;
        skip_grad.src[1] = x.grad;
        skip_grad.dst[0] = bwd->l->ops[to_skip].dst[0];
        snprintf(label, sizeof label, "%s", bwd->l->labels[to_skip]);
        label_append(label, "+relu");
    }
    for (int i = 0; i < copies; i++) bwd->kept[at[i]] = false;
    if (to_skip >= 0) {
        const int slot = at[copies - 1];   /* the first copy pushed */
        skip_grad.label = bwd->l->labels[slot];
        bwd->l->ops[slot] = skip_grad;
        snprintf(bwd->l->labels[slot], sizeof bwd->l->labels[0], "%s", label);
        bwd->kept[slot] = true;
    }
    drop_site(fwd, bwd, s);
    return true;
}

/* The residual add: y = skip + branch where branch is the output of the fused batch norm + ReLU
 * built just before (its forward and backward the last ops, so nothing else reads branch or
 * writes its gradient) becomes DBK_OP_BATCHNORM_RELU_ADD_FWD_TRAIN writing y, and _BWD reading
 * y's gradient: branch and its gradient are never written, and the backward recomputes ReLU's
 * mask from the batch norm's input. Of the add's ops only the copy of dy to skip stays. */
static bool fuse_residual_add(pass_list *fwd, pass_list *bwd, bool fp16, const dbk_fusion_site *s,
                              const dbk_value *skip, const dbk_value *branch) {
    const int fi = last_kept(fwd, s->fwd_begin), bi = last_kept(bwd, s->bwd_begin);
    if (fp16 || fi < 0 || bi < 0 || same_tensor(&skip->data, &branch->data) || skip->data.dtype != DBK_DTYPE_F32 ||
        !branch->grad.ndim)
        return false;
    dbk_op_desc *f = &fwd->l->ops[fi], *b = &bwd->l->ops[bi];
    if (f->op != DBK_OP_BATCHNORM_RELU_FWD_TRAIN || !same_tensor(&f->dst[0], &branch->data)) return false;
    if (b->op != DBK_OP_BATCHNORM_RELU_BWD || !same_tensor(&b->src[1], &branch->grad)) return false;
    f->op = DBK_OP_BATCHNORM_RELU_ADD_FWD_TRAIN;
    f->src[3] = skip->data;
    f->dst[0] = s->y.data;
    b->op = DBK_OP_BATCHNORM_RELU_ADD_BWD;
    b->src[1] = s->y.grad;
    b->src[5] = f->src[2]; /* beta: the mask is recomputed, no ReLU output is kept */
    label_append(fwd->l->labels[fi], "+add");
    label_append(bwd->l->labels[bi], "+add");
    drop(fwd, s->fwd_begin, s->fwd_end);
    /* dbk_nn_add pushes b's copy, then a's */
    const int branch_copy = s->bwd_begin + (branch == &s->b ? 0 : s->b.grad.ndim ? 1 : 0);
    DBK_ASSERT(branch_copy < s->bwd_end && bwd->l->ops[branch_copy].op == DBK_OP_COPY);
    bwd->kept[branch_copy] = false;
    return true;
}

/* The max pool: a 2x2, stride-2 max pool of the fused batch norm + ReLU built just before (its
 * forward and backward the last ops, so nothing else reads its output or writes that output's
 * gradient) turns those into DBK_OP_BATCHNORM_RELU_POOL_FWD_TRAIN writing the pooled y, and
 * _BWD reading y's gradient: the full-size output and its gradient are never written, the
 * argmax is never written, and the backward finds each window's winner again from the batch
 * norm's input. */
static bool fuse_maxpool(pass_list *fwd, pass_list *bwd, const dbk_fusion_site *s) {
    const dbk_value x = s->x;
    const dbk_pool_params *pp = &s->pool;
    const int fi = last_kept(fwd, s->fwd_begin), bi = last_kept(bwd, s->bwd_begin);
    if (fi < 0 || bi < 0 || !x.grad.ndim || pp->size_h != 2 || pp->size_w != 2 || pp->stride_h != 2 ||
        pp->stride_w != 2 || pp->pad_h || pp->pad_w)
        return false;
    dbk_op_desc *f = &fwd->l->ops[fi], *b = &bwd->l->ops[bi];
    if (f->op != DBK_OP_BATCHNORM_RELU_FWD_TRAIN || !same_tensor(&f->dst[0], &x.data)) return false;
    if (b->op != DBK_OP_BATCHNORM_RELU_BWD || !same_tensor(&b->src[1], &x.grad)) return false;
    f->op = DBK_OP_BATCHNORM_RELU_POOL_FWD_TRAIN;
    f->dst[0] = s->y.data;
    b->op = DBK_OP_BATCHNORM_RELU_POOL_BWD;
    b->src[1] = s->y.grad;
    b->src[5] = f->src[2]; /* beta: the winners and the mask are recomputed from x */
    label_append(fwd->l->labels[fi], "+pool");
    label_append(bwd->l->labels[bi], "+pool");
    drop_site(fwd, bwd, s);
    return true;
}

static void fuse_site(pass_list *fwd, pass_list *bwd, bool fp16, const dbk_fusion_site *s) {
    switch (s->kind) {
    case DBK_FUSION_SITE_RELU:
        if (!fuse_add_relu(fwd, bwd, fp16, s)) fuse_batchnorm_relu(fwd, bwd, fp16, s);
        break;
    case DBK_FUSION_SITE_ADD:
        if (!fuse_residual_add(fwd, bwd, fp16, s, &s->a, &s->b)) fuse_residual_add(fwd, bwd, fp16, s, &s->b, &s->a);
        break;
    case DBK_FUSION_SITE_MAXPOOL:
        fuse_maxpool(fwd, bwd, s);
        break;
    }
}

/* dst = a copy of src's ops and labels (false: out of host memory). */
static bool copy_list(dbk_graph_op_list *dst, const dbk_graph_op_list *src) {
    int cap = dst->cap;
    if (!dbk_graph_grow((void **)&dst->ops, &cap, src->count, sizeof *dst->ops)) return false;
    cap = dst->cap;
    if (!dbk_graph_grow((void **)&dst->labels, &cap, src->count, sizeof *dst->labels)) return false;
    dst->cap = cap;
    if (src->count) {
        memcpy(dst->ops, src->ops, sizeof *dst->ops * (size_t)src->count);
        memcpy(dst->labels, src->labels, sizeof *dst->labels * (size_t)src->count);
    }
    dst->count = src->count;
    for (int i = 0; i < dst->count; i++) dst->ops[i].label = dst->labels[i];
    return true;
}

/* Moves the kept ops to the front, in order. */
static void compact(pass_list *p) {
    dbk_graph_op_list *l = p->l;
    int n = 0;
    for (int i = 0; i < l->count; i++) {
        if (!p->kept[i]) continue;
        if (n != i) {
            l->ops[n] = l->ops[i];
            memcpy(l->labels[n], l->labels[i], sizeof l->labels[0]);
        }
        l->ops[n].label = l->labels[n];
        n++;
    }
    l->count = n;
}

dbk_status dbk_graph_fuse(dbk_graph *g) {
    if (!copy_list(&g->fused_fwd, &g->fwd) || !copy_list(&g->fused_bwd, &g->bwd)) return DBK_ERR_OUT_OF_HOST_MEMORY;
    if (!g->cfg.training || g->cfg.no_fusion || !g->n_sites) return DBK_OK;
    bool *kept = dbk_malloc(sizeof *kept * (size_t)(g->fwd.count + g->bwd.count + 1));
    if (!kept) return DBK_ERR_OUT_OF_HOST_MEMORY;
    for (int i = 0; i < g->fwd.count + g->bwd.count; i++) kept[i] = true;
    pass_list fwd = {&g->fused_fwd, kept}, bwd = {&g->fused_bwd, kept + g->fwd.count};
    for (int i = 0; i < g->n_sites; i++) fuse_site(&fwd, &bwd, g->cfg.fp16, &g->sites[i]);
    compact(&fwd);
    compact(&bwd);
    dbk_free(kept);
    return DBK_OK;
}
