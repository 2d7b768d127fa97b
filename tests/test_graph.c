/*
 * test_graph.c — the graph builder's layout contracts (nn/graph.h): parameter groups laid
 * out contiguously and identically in both passes, per-step values and counters in their
 * two regions, rules filling the host block, declaration errors, and the batch norm + ReLU
 * fusion and its switch.
 */
#include <stdio.h>
#include <string.h>

#include "nn/graph.h"
#include "test_util.h"

typedef struct built {
    dbk_backend *be;
    dbk_graph   *g;
    dbk_buffer  *params, *grads, *state, *arena, *steps;
} built;

static void built_free(built *b) {
    dbk_graph_destroy(b->g);
    dbk_buffer *bufs[] = {b->params, b->grads, b->state, b->arena, b->steps};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) dbk_buffer_destroy(bufs[i]);
    dbk_backend_destroy(b->be);
}

/* Runs lay_out in the planning pass of a training graph (cfg's fusion switch), allocates what
 * it planned, and runs the build pass. */
static dbk_status plan_and_build_with(built *b, dbk_status (*lay_out)(dbk_graph *g), bool no_fusion) {
    memset(b, 0, sizeof *b);
    dbk_graph_config cfg = {.training = true, .bn = {1e-5f, 0.1f}, .no_fusion = no_fusion};
    DBK_TRY(dbk_backend_create(DBK_BACKEND_KIND_CPU, 0, &b->be));
    DBK_TRY(dbk_graph_create(&cfg, &b->g));
    DBK_TRY(lay_out(b->g));
    DBK_TRY(dbk_buffer_create(b->be, dbk_graph_param_count(b->g) * 4 + 4, &b->params));
    DBK_TRY(dbk_buffer_create(b->be, dbk_graph_param_count(b->g) * 4 + 4, &b->grads));
    DBK_TRY(dbk_buffer_create(b->be, dbk_graph_state_count(b->g) * 4 + 4, &b->state));
    DBK_TRY(dbk_buffer_create(b->be, dbk_graph_arena_bytes(b->g) + 4, &b->arena));
    DBK_TRY(dbk_buffer_create(b->be, dbk_graph_step_bytes(b->g) + 4, &b->steps));
    const dbk_graph_buffers bufs = {b->params, b->grads, b->state, b->arena, b->steps};
    dbk_graph_begin_build(b->g, &bufs);
    return lay_out(b->g);
}

static dbk_status plan_and_build(built *b, dbk_status (*lay_out)(dbk_graph *g)) {
    return plan_and_build_with(b, lay_out, false);
}

/* ---------------------------------------------------------------------------------- */

/* conv (default group), batch norm in group "norm", linear back in the default group. */
static dbk_status lay_out_two_groups(dbk_graph *g) {
    dbk_value x = dbk_graph_value(g, false, 2, 3, 8, 8);
    dbk_value y = dbk_nn_conv(g, x, 4, 3, 1, 1, "conv");
    dbk_graph_set_group(g, "norm");
    y = dbk_nn_batchnorm(g, y, "bn");
    dbk_graph_set_group(g, NULL);
    dbk_nn_linear(g, y, 5, "linear");
    return dbk_graph_status(g);
}

static const dbk_param_info *param_named(const dbk_graph *g, const char *name) {
    for (int i = 0; i < dbk_graph_param_info_count(g); i++)
        if (!strcmp(dbk_graph_param_info(g, i)->name, name)) return dbk_graph_param_info(g, i);
    return NULL;
}

static int parameter_groups_should_be_contiguous_in_first_use_order(void) {
    built b;
    DBK_CHECK_OK(plan_and_build(&b, lay_out_two_groups));
    const dbk_graph *g = b.g;
    DBK_CHECK(dbk_graph_group_count(g) == 2);
    DBK_CHECK(!strcmp(dbk_graph_group_name(g, 0), "") && !strcmp(dbk_graph_group_name(g, 1), "norm"));
    /* Default group: conv.weight (4*3*3*3 = 108, padded to 112 floats), linear.weight (5*256).
     * Then "norm": bn.weight and bn.bias (4 each, padded to 16). */
    const dbk_param_info *conv = param_named(g, "conv.weight"), *lin = param_named(g, "linear.weight");
    const dbk_param_info *gw = param_named(g, "bn.weight"), *gb = param_named(g, "bn.bias");
    DBK_CHECK(conv && lin && gw && gb);
    DBK_CHECK(conv->group == 0 && lin->group == 0 && gw->group == 1 && gb->group == 1);
    DBK_CHECK_MSG(conv->offset == 0 && lin->offset == 112, "conv %zu linear %zu", conv->offset, lin->offset);
    DBK_CHECK_MSG(gw->offset == 112 + 1280 && gb->offset == 112 + 1280 + 16, "bn %zu %zu", gw->offset, gb->offset);
    DBK_CHECK(dbk_graph_param_count(g) == 112 + 1280 + 32);
    dbk_tensor p0 = dbk_graph_group_params(g, 0), p1 = dbk_graph_group_grads(g, 1);
    DBK_CHECK(p0.buf == b.params && p0.offset == 0 && dbk_tensor_numel(&p0) == 112 + 1280);
    DBK_CHECK(p1.buf == b.grads && p1.offset == (112 + 1280) * 4 && dbk_tensor_numel(&p1) == 32);
    /* The forward op of the batch norm reads its gamma where the layout put it. */
    const dbk_op_desc *fwd = dbk_graph_forward_ops(g);
    DBK_CHECK(fwd[1].op == DBK_OP_BATCHNORM_FWD_TRAIN && fwd[1].src[1].offset == gw->offset * 4);
    built_free(&b);
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* fusion (docs/fusion.md)                                                            */

/* conv, batch norm, ReLU (fused), then conv and ReLU (no batch norm before it: not fused). */
static dbk_status lay_out_bn_relu(dbk_graph *g) {
    dbk_value x = dbk_graph_value(g, false, 2, 3, 8, 8);
    dbk_value y = dbk_nn_relu(g, dbk_nn_batchnorm(g, dbk_nn_conv(g, x, 4, 3, 1, 1, "conv"), "bn"));
    dbk_nn_relu(g, dbk_nn_conv(g, y, 4, 3, 1, 1, "conv2"));
    return dbk_graph_status(g);
}

static int count_ops(const dbk_op_desc *ops, int n, dbk_op op, const dbk_op_desc **last) {
    int k = 0;
    for (int i = 0; i < n; i++)
        if (ops[i].op == op) {
            k++;
            *last = &ops[i];
        }
    return k;
}

static int batchnorm_then_relu_should_fuse_unless_turned_off(void) {
    size_t arena[2];
    for (int off = 0; off < 2; off++) {
        built b;
        DBK_CHECK_OK(plan_and_build_with(&b, lay_out_bn_relu, off));
        int n = 0;
        const dbk_op_desc *ops = dbk_graph_program(b.g, &n), *f = NULL, *bw = NULL, *any = NULL;
        DBK_CHECK(ops != NULL);
        const int fused_fwd = count_ops(ops, n, DBK_OP_BATCHNORM_RELU_FWD_TRAIN, &f);
        const int fused_bwd = count_ops(ops, n, DBK_OP_BATCHNORM_RELU_BWD, &bw);
        const int relu_fwd = count_ops(ops, n, DBK_OP_RELU_FWD, &any);
        const int relu_bwd = count_ops(ops, n, DBK_OP_RELU_BWD, &any);
        const int bn_fwd = count_ops(ops, n, DBK_OP_BATCHNORM_FWD_TRAIN, &any);
        const int bn_bwd = count_ops(ops, n, DBK_OP_BATCHNORM_BWD, &any);
        printf("  %s: fused %d + %d, relu %d + %d, batchnorm %d + %d\n", off ? "no_fusion" : "fusion on", fused_fwd,
               fused_bwd, relu_fwd, relu_bwd, bn_fwd, bn_bwd);
        if (off) {
            DBK_CHECK(fused_fwd == 0 && fused_bwd == 0 && relu_fwd == 2 && relu_bwd == 2 && bn_fwd == 1 && bn_bwd == 1);
        } else {
            DBK_CHECK(fused_fwd == 1 && fused_bwd == 1 && relu_fwd == 1 && relu_bwd == 1 && bn_fwd == 0 && bn_bwd == 0);
            /* the backward masks with the fused forward's output and reads that output's gradient */
            DBK_CHECK(bw->src[5].buf == f->dst[0].buf && bw->src[5].offset == f->dst[0].offset);
            DBK_CHECK(strstr(f->label, "+relu") && strstr(bw->label, "+relu"));
        }
        arena[off] = dbk_graph_arena_bytes(b.g);
        built_free(&b);
    }
    DBK_CHECK_MSG(arena[0] == arena[1], "the arena differs: %zu fused, %zu unfused", arena[0], arena[1]);
    return 0;
}

/* The last forward op when the op lists were read in the middle of lay_out_bn_read_relu. */
static dbk_op mid_build_last_op[2];

static dbk_op last_forward_op(const dbk_graph *g) {
    const int n = dbk_graph_forward_count(g);
    return n ? dbk_graph_forward_ops(g)[n - 1].op : DBK_OP_COUNT;
}

/* conv and batch norm, the op lists read (the fusion pass runs on what is built so far), the
 * ReLU, the lists read again, then another conv. */
static dbk_status lay_out_bn_read_relu(dbk_graph *g) {
    dbk_value x = dbk_graph_value(g, false, 2, 3, 8, 8);
    dbk_value y = dbk_nn_batchnorm(g, dbk_nn_conv(g, x, 4, 3, 1, 1, "conv"), "bn");
    mid_build_last_op[0] = last_forward_op(g);
    y = dbk_nn_relu(g, y);
    mid_build_last_op[1] = last_forward_op(g);
    dbk_nn_conv(g, y, 4, 3, 1, 1, "conv2");
    return dbk_graph_status(g);
}

/* A batch norm whose output is forked before the ReLU: the fork's gradient sum is the last
 * backward op when the ReLU is built, so nothing fuses. */
static dbk_status lay_out_bn_fork_relu(dbk_graph *g) {
    dbk_value x = dbk_graph_value(g, false, 2, 3, 8, 8);
    dbk_value y = dbk_nn_batchnorm(g, dbk_nn_conv(g, x, 4, 3, 1, 1, "conv"), "bn");
    dbk_nn_relu(g, dbk_nn_fork(g, y, "fork"));
    return dbk_graph_status(g);
}

/* The fusion pass rewrites the op lists whenever they are read after a push: a read in the
 * middle of the build sees the plain batch norm, one after the ReLU the fused one, the finished
 * graph also the conv after it; and a rule sees the ops that were last when its layer was
 * built, backward ones included (the fork). */
static int fusion_should_follow_the_graph_as_built(void) {
    built b;
    DBK_CHECK_OK(plan_and_build(&b, lay_out_bn_read_relu));
    int n = 0;
    const dbk_op_desc *ops = dbk_graph_program(b.g, &n), *any = NULL;
    DBK_CHECK(ops != NULL);
    printf("  read mid-build: last op %s, then %s; built: %d fused, %d relu, %d conv\n",
           dbk_op_name(mid_build_last_op[0]), dbk_op_name(mid_build_last_op[1]),
           count_ops(ops, n, DBK_OP_BATCHNORM_RELU_FWD_TRAIN, &any), count_ops(ops, n, DBK_OP_RELU_FWD, &any),
           count_ops(ops, n, DBK_OP_CONV2D_FWD, &any));
    DBK_CHECK(mid_build_last_op[0] == DBK_OP_BATCHNORM_FWD_TRAIN);
    DBK_CHECK(mid_build_last_op[1] == DBK_OP_BATCHNORM_RELU_FWD_TRAIN);
    DBK_CHECK(count_ops(ops, n, DBK_OP_BATCHNORM_RELU_FWD_TRAIN, &any) == 1 &&
              count_ops(ops, n, DBK_OP_BATCHNORM_RELU_BWD, &any) == 1 && count_ops(ops, n, DBK_OP_RELU_FWD, &any) == 0);
    DBK_CHECK(count_ops(ops, n, DBK_OP_CONV2D_FWD, &any) == 2);
    DBK_CHECK(ops[dbk_graph_forward_count(b.g) - 1].op == DBK_OP_CONV2D_FWD);
    built_free(&b);

    DBK_CHECK_OK(plan_and_build(&b, lay_out_bn_fork_relu));
    ops = dbk_graph_program(b.g, &n);
    DBK_CHECK(ops != NULL);
    DBK_CHECK(count_ops(ops, n, DBK_OP_BATCHNORM_RELU_FWD_TRAIN, &any) == 0 &&
              count_ops(ops, n, DBK_OP_BATCHNORM_FWD_TRAIN, &any) == 1);
    DBK_CHECK(count_ops(ops, n, DBK_OP_RELU_FWD, &any) == 1 && count_ops(ops, n, DBK_OP_RELU_BWD, &any) == 1);
    built_free(&b);
    return 0;
}

/* ResNet9's layer: a 2x2 max pool of batch norm + ReLU (fused), then a 3x3 stride-2 pool of
 * another (not fused: only the 2x2 window is). */
static dbk_status lay_out_bn_relu_pool(dbk_graph *g) {
    dbk_value x = dbk_graph_value(g, false, 2, 3, 8, 8);
    dbk_value y = dbk_nn_relu(g, dbk_nn_batchnorm(g, dbk_nn_conv(g, x, 4, 3, 1, 1, "conv"), "bn"));
    y = dbk_nn_maxpool(g, y, 2, 2, "pool");
    y = dbk_nn_relu(g, dbk_nn_batchnorm(g, dbk_nn_conv(g, y, 4, 3, 1, 1, "conv2"), "bn2"));
    dbk_nn_maxpool(g, y, 3, 2, "pool2");
    return dbk_graph_status(g);
}

static int maxpool_after_batchnorm_relu_should_fuse_unless_turned_off(void) {
    size_t arena[2];
    for (int off = 0; off < 2; off++) {
        built b;
        DBK_CHECK_OK(plan_and_build_with(&b, lay_out_bn_relu_pool, off));
        int n = 0;
        const dbk_op_desc *ops = dbk_graph_program(b.g, &n), *f = NULL, *bw = NULL, *any = NULL, *pool_bwd = NULL;
        DBK_CHECK(ops != NULL);
        const int fused_fwd = count_ops(ops, n, DBK_OP_BATCHNORM_RELU_POOL_FWD_TRAIN, &f);
        const int fused_bwd = count_ops(ops, n, DBK_OP_BATCHNORM_RELU_POOL_BWD, &bw);
        const int bn_relu = count_ops(ops, n, DBK_OP_BATCHNORM_RELU_FWD_TRAIN, &any);
        const int pools = count_ops(ops, n, DBK_OP_MAXPOOL_FWD, &any);
        const int pool_bwds = count_ops(ops, n, DBK_OP_MAXPOOL_BWD, &pool_bwd);
        printf("  %s: fused %d + %d, batchnorm+relu %d, maxpool %d + %d\n", off ? "no_fusion" : "fusion on",
               fused_fwd, fused_bwd, bn_relu, pools, pool_bwds);
        if (off) {
            DBK_CHECK(fused_fwd == 0 && fused_bwd == 0 && bn_relu == 0 && pools == 2 && pool_bwds == 2);
        } else {
            DBK_CHECK(fused_fwd == 1 && fused_bwd == 1 && bn_relu == 1 && pools == 1 && pool_bwds == 1);
            /* y pooled (4x4 of 8x8); the backward reads its gradient and recomputes from beta */
            DBK_CHECK(f->dst[0].shape[2] == 4 && f->dst[0].shape[3] == 4 && bw->src[1].shape[2] == 4);
            DBK_CHECK(bw->src[5].buf == f->src[2].buf && bw->src[5].offset == f->src[2].offset);
            DBK_CHECK(strstr(f->label, "+relu+pool") && strstr(bw->label, "+relu+pool"));
            DBK_CHECK(pool_bwd->p.pool.size_h == 3);   /* the 3x3 pool is the one left */
        }
        arena[off] = dbk_graph_arena_bytes(b.g);
        built_free(&b);
    }
    DBK_CHECK_MSG(arena[0] == arena[1], "the arena differs: %zu fused, %zu unfused", arena[0], arena[1]);
    return 0;
}

/* ResNet9's residual block, x + relu(bn(conv(relu(bn(conv(x)))))) (the add fuses into the
 * second batch norm + ReLU), then a residual add whose branch ends in a convolution (not
 * fused). */
static dbk_status lay_out_residual(dbk_graph *g) {
    dbk_value x = dbk_nn_conv(g, dbk_graph_value(g, false, 2, 3, 8, 8), 4, 3, 1, 1, "conv");
    dbk_value b = dbk_nn_fork(g, x, "res.fork");
    b = dbk_nn_relu(g, dbk_nn_batchnorm(g, dbk_nn_conv(g, b, 4, 3, 1, 1, "res1.conv"), "res1.bn"));
    b = dbk_nn_relu(g, dbk_nn_batchnorm(g, dbk_nn_conv(g, b, 4, 3, 1, 1, "res2.conv"), "res2.bn"));
    dbk_value y = dbk_nn_add(g, x, b, "res.add");
    dbk_value c = dbk_nn_fork(g, y, "plain.fork");
    dbk_nn_add(g, y, dbk_nn_conv(g, c, 4, 3, 1, 1, "plain.conv"), "plain.add");
    return dbk_graph_status(g);
}

static int residual_add_after_batchnorm_relu_should_fuse_unless_turned_off(void) {
    size_t arena[2];
    for (int off = 0; off < 2; off++) {
        built b;
        DBK_CHECK_OK(plan_and_build_with(&b, lay_out_residual, off));
        int n = 0;
        const dbk_op_desc *ops = dbk_graph_program(b.g, &n), *f = NULL, *bw = NULL, *any = NULL;
        DBK_CHECK(ops != NULL);
        const int fused_fwd = count_ops(ops, n, DBK_OP_BATCHNORM_RELU_ADD_FWD_TRAIN, &f);
        const int fused_bwd = count_ops(ops, n, DBK_OP_BATCHNORM_RELU_ADD_BWD, &bw);
        const int bn_relu = count_ops(ops, n, DBK_OP_BATCHNORM_RELU_FWD_TRAIN, &any);
        const int adds = count_ops(ops, n, DBK_OP_ADD, &any), copies = count_ops(ops, n, DBK_OP_COPY, &any);
        printf("  %s: fused %d + %d, batchnorm+relu %d, add %d, copy %d\n", off ? "no_fusion" : "fusion on", fused_fwd,
               fused_bwd, bn_relu, adds, copies);
        if (off) {
            /* two forward adds, two fork gradient sums; each add copies dy to both inputs */
            DBK_CHECK(fused_fwd == 0 && fused_bwd == 0 && bn_relu == 0 && adds == 4 && copies == 4);
        } else {
            /* the fused add: no forward add, dy copied to the skip only */
            DBK_CHECK(fused_fwd == 1 && fused_bwd == 1 && bn_relu == 1 && adds == 3 && copies == 3);
            /* x is the skip; the backward recomputes the mask with the forward's beta */
            const dbk_op_desc *conv = &ops[0];
            DBK_CHECK(conv->op == DBK_OP_CONV2D_FWD && f->src[3].buf == conv->dst[0].buf &&
                      f->src[3].offset == conv->dst[0].offset);
            DBK_CHECK(bw->src[5].buf == f->src[2].buf && bw->src[5].offset == f->src[2].offset);
            DBK_CHECK(strstr(f->label, "+relu+add") && strstr(bw->label, "+relu+add"));
        }
        arena[off] = dbk_graph_arena_bytes(b.g);
        built_free(&b);
    }
    DBK_CHECK_MSG(arena[0] == arena[1], "the arena differs: %zu fused, %zu unfused", arena[0], arena[1]);
    return 0;
}

/* ResNet-18's two kinds of basic block, relu(x + bn(conv(relu(bn(conv(x)))))) and the one with
 * a projection shortcut, relu(bn(conv1x1(x)) + branch): the add and ReLU fuse into the batch
 * norm just before the add (bn2, then downsample.1). */
static dbk_status lay_out_resnet_blocks(dbk_graph *g) {
    dbk_value x = dbk_nn_conv(g, dbk_graph_value(g, false, 2, 3, 8, 8), 4, 3, 1, 1, "conv");
    dbk_value b = dbk_nn_fork(g, x, "0.residual");
    b = dbk_nn_relu(g, dbk_nn_batchnorm(g, dbk_nn_conv(g, b, 4, 3, 1, 1, "0.conv1"), "0.bn1"));
    b = dbk_nn_batchnorm(g, dbk_nn_conv(g, b, 4, 3, 1, 1, "0.conv2"), "0.bn2");
    dbk_value y = dbk_nn_relu(g, dbk_nn_add(g, x, b, "0.add"));
    b = dbk_nn_fork(g, y, "1.residual");
    b = dbk_nn_relu(g, dbk_nn_batchnorm(g, dbk_nn_conv(g, b, 8, 3, 2, 1, "1.conv1"), "1.bn1"));
    b = dbk_nn_batchnorm(g, dbk_nn_conv(g, b, 8, 3, 1, 1, "1.conv2"), "1.bn2");
    dbk_value s = dbk_nn_batchnorm(g, dbk_nn_conv(g, y, 8, 1, 2, 0, "1.downsample.0"), "1.downsample.1");
    dbk_nn_relu(g, dbk_nn_add(g, s, b, "1.add"));
    return dbk_graph_status(g);
}

static int add_then_relu_should_fuse_into_the_batchnorm_before_unless_turned_off(void) {
    size_t arena[2];
    for (int off = 0; off < 2; off++) {
        built b;
        DBK_CHECK_OK(plan_and_build_with(&b, lay_out_resnet_blocks, off));
        int n = 0;
        const dbk_op_desc *ops = dbk_graph_program(b.g, &n), *f = NULL, *any = NULL;
        DBK_CHECK(ops != NULL);
        const int fused = count_ops(ops, n, DBK_OP_BATCHNORM_ADD_RELU_FWD_TRAIN, &f);
        const int adds = count_ops(ops, n, DBK_OP_ADD, &any), copies = count_ops(ops, n, DBK_OP_COPY, &any);
        const int relu_fwd = count_ops(ops, n, DBK_OP_RELU_FWD, &any);
        const int relu_bwd = count_ops(ops, n, DBK_OP_RELU_BWD, &any);
        printf("  %s: fused %d, add %d, copy %d, relu %d + %d\n", off ? "no_fusion" : "fusion on", fused, adds, copies,
               relu_fwd, relu_bwd);
        if (off) {
            DBK_CHECK(fused == 0 && adds == 4 && copies == 4 && relu_fwd == 4 && relu_bwd == 4);
        } else {
            /* no forward add, no copy: the skips' gradients come from RELU_BWD; the fork sums stay */
            DBK_CHECK(fused == 2 && adds == 2 && copies == 0 && relu_fwd == 0 && relu_bwd == 2);
            int masked = 0;   /* batch-norm backwards masked by a fused forward's output */
            for (int i = 0; i < n; i++) {
                if (ops[i].op != DBK_OP_BATCHNORM_RELU_BWD) continue;
                for (int j = 0; j < n; j++)
                    masked += ops[j].op == DBK_OP_BATCHNORM_ADD_RELU_FWD_TRAIN &&
                              ops[i].src[5].buf == ops[j].dst[0].buf && ops[i].src[5].offset == ops[j].dst[0].offset &&
                              strstr(ops[i].label, "+add+relu") != NULL;
            }
            DBK_CHECK_MSG(masked == 2, "%d batch-norm backwards masked by the fused add's output, expected 2", masked);
            DBK_CHECK(strstr(f->label, "downsample.1+add+relu") != NULL);
        }
        arena[off] = dbk_graph_arena_bytes(b.g);
        built_free(&b);
    }
    DBK_CHECK_MSG(arena[0] == arena[1], "the arena differs: %zu fused, %zu unfused", arena[0], arena[1]);
    return 0;
}

/* ---------------------------------------------------------------------------------- */

static void lr_rule(const dbk_step_ctx *ctx, const double k[4], void *dst) {
    float v = (float)(ctx->lr * k[0]);
    memcpy(dst, &v, sizeof v);
}

static void position_rule(const dbk_step_ctx *ctx, const double k[4], void *dst) {
    (void)k;
    int32_t v[2] = {ctx->first, ctx->step};
    memcpy(dst, v, sizeof v);
}

/* A counter declared between two host values: counters still come after all of them. */
static dbk_status lay_out_step_values(dbk_graph *g) {
    const double half[4] = {0.5, 0, 0, 0};
    dbk_graph_step_value(g, "lr", DBK_DTYPE_F32, 1, lr_rule, half);
    dbk_graph_counter(g, "loss_sum");
    dbk_graph_step_value(g, "position", DBK_DTYPE_I32, 2, position_rule, NULL);
    return dbk_graph_status(g);
}

static int step_values_should_precede_counters_and_fill_from_their_rules(void) {
    built b;
    DBK_CHECK_OK(plan_and_build(&b, lay_out_step_values));
    const dbk_graph *g = b.g;
    DBK_CHECK(dbk_graph_step_value_count(g) == 3);
    DBK_CHECK(dbk_graph_step_host_bytes(g) == 32 && dbk_graph_step_bytes(g) == 48);
    const dbk_step_value_info *lr = dbk_graph_step_value_find(g, "lr"), *pos = dbk_graph_step_value_find(g, "position");
    const dbk_step_value_info *loss = dbk_graph_step_value_find(g, "loss_sum");
    DBK_CHECK(lr && pos && loss && !dbk_graph_step_value_find(g, "missing"));
    DBK_CHECK_MSG(lr->offset == 0 && pos->offset == 16 && loss->offset == 32, "%zu %zu %zu", lr->offset, pos->offset,
                  loss->offset);
    DBK_CHECK(loss->rule == NULL && lr->rule != NULL);

    unsigned char host[32];
    memset(host, 0xee, sizeof host);
    const dbk_step_ctx ctx = {.step = 7, .first = 1234, .lr = 0.25};
    dbk_graph_fill_step(g, &ctx, host);
    float lrv;
    int32_t posv[2];
    memcpy(&lrv, host, 4);
    memcpy(posv, host + 16, 8);
    DBK_CHECK(lrv == 0.125f && posv[0] == 1234 && posv[1] == 7);
    built_free(&b);
    return 0;
}

static dbk_status lay_out_duplicate(dbk_graph *g) {
    dbk_graph_counter(g, "correct");
    dbk_graph_counter(g, "correct");
    return dbk_graph_status(g);
}

static int a_duplicate_step_value_should_be_an_error(void) {
    dbk_graph *g;
    dbk_graph_config cfg = {.training = false, .bn = {1e-5f, 0.1f}};
    DBK_CHECK_OK(dbk_graph_create(&cfg, &g));
    dbk_status st = lay_out_duplicate(g);
    DBK_CHECK(st == DBK_ERR_INVALID_ARG);
    DBK_CHECK(strstr(dbk_last_error(), "correct") != NULL);
    dbk_graph_destroy(g);
    return 0;
}

/* ---------------------------------------------------------------------------------- */

static dbk_graph_config eval_cfg(void) { return (dbk_graph_config){.training = false, .bn = {1e-5f, 0.1f}}; }

static dbk_status lay_out_applied_twice(dbk_graph *g) {
    dbk_value x = dbk_graph_value(g, false, 2, 3, 8, 8);
    dbk_value a = dbk_nn_batchnorm(g, dbk_nn_conv(g, x, 4, 3, 1, 1, "conv"), "bn");
    dbk_graph_reuse_params(g);
    dbk_value b = dbk_nn_batchnorm(g, dbk_nn_conv(g, x, 4, 3, 1, 1, "conv"), "bn");
    (void)a;
    (void)b;
    return dbk_graph_status(g);
}

static int reused_parameters_should_be_the_same_views(void) {
    dbk_graph *g;
    dbk_graph_config cfg = eval_cfg();
    DBK_CHECK_OK(dbk_graph_create(&cfg, &g));
    DBK_CHECK_OK(lay_out_applied_twice(g));
    DBK_CHECK(dbk_graph_param_info_count(g) == 3 && dbk_graph_state_info_count(g) == 2);
    const size_t params = dbk_graph_param_count(g);
    dbk_backend *be;
    DBK_CHECK_OK(dbk_backend_create(DBK_BACKEND_KIND_CPU, 0, &be));
    dbk_buffer *p, *st, *ar;
    DBK_CHECK_OK(dbk_buffer_create(be, params * 4, &p));
    DBK_CHECK_OK(dbk_buffer_create(be, dbk_graph_state_count(g) * 4, &st));
    DBK_CHECK_OK(dbk_buffer_create(be, dbk_graph_arena_bytes(g), &ar));
    const dbk_graph_buffers bufs = {.params = p, .state = st, .arena = ar};
    dbk_graph_begin_build(g, &bufs);
    DBK_CHECK_OK(lay_out_applied_twice(g));
    DBK_CHECK(dbk_graph_param_count(g) == params);
    const dbk_op_desc *f = dbk_graph_forward_ops(g);
    DBK_CHECK(dbk_graph_forward_count(g) == 4);
    DBK_CHECK(f[0].src[1].buf == p && f[2].src[1].buf == p && f[0].src[1].offset == f[2].src[1].offset);
    DBK_CHECK(f[1].src[3].offset == f[3].src[3].offset && f[1].src[4].offset == f[3].src[4].offset);
    DBK_CHECK(f[0].dst[0].offset != f[2].dst[0].offset); /* activations are new */
    dbk_graph_destroy(g);
    dbk_buffer_destroy(p);
    dbk_buffer_destroy(st);
    dbk_buffer_destroy(ar);
    dbk_backend_destroy(be);
    return 0;
}

static dbk_status lay_out_reuse_mismatch(dbk_graph *g) {
    dbk_value x = dbk_graph_value(g, false, 2, 3, 8, 8);
    dbk_nn_conv(g, x, 4, 3, 1, 1, "conv");
    dbk_graph_reuse_params(g);
    dbk_nn_conv(g, x, 5, 3, 1, 1, "conv");
    return dbk_graph_status(g);
}

static int reusing_in_a_training_graph_or_with_another_shape_should_be_an_error(void) {
    dbk_graph *g;
    dbk_graph_config cfg = eval_cfg();
    DBK_CHECK_OK(dbk_graph_create(&cfg, &g));
    DBK_CHECK(lay_out_reuse_mismatch(g) == DBK_ERR_INVALID_ARG);
    DBK_CHECK(strstr(dbk_last_error(), "conv.weight") != NULL);
    dbk_graph_destroy(g);
    cfg.training = true;
    DBK_CHECK_OK(dbk_graph_create(&cfg, &g));
    dbk_graph_reuse_params(g);
    DBK_CHECK(dbk_graph_status(g) == DBK_ERR_INVALID_ARG);
    dbk_graph_destroy(g);
    return 0;
}

int main(void) {
    DBK_RUN(parameter_groups_should_be_contiguous_in_first_use_order);
    DBK_RUN(batchnorm_then_relu_should_fuse_unless_turned_off);
    DBK_RUN(residual_add_after_batchnorm_relu_should_fuse_unless_turned_off);
    DBK_RUN(maxpool_after_batchnorm_relu_should_fuse_unless_turned_off);
    DBK_RUN(add_then_relu_should_fuse_into_the_batchnorm_before_unless_turned_off);
    DBK_RUN(fusion_should_follow_the_graph_as_built);
    DBK_RUN(step_values_should_precede_counters_and_fill_from_their_rules);
    DBK_RUN(a_duplicate_step_value_should_be_an_error);
    DBK_RUN(reused_parameters_should_be_the_same_views);
    DBK_RUN(reusing_in_a_training_graph_or_with_another_shape_should_be_an_error);
    return dbk_test_finish();
}
