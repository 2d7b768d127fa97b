/*
 * preact_resnet.c — pre-activation residual networks for CIFAR-10 (seed_models.h):
 *   wrn22           fast.ai's DAWNBench Wide ResNet-22 (k = 6): fastai/imagenet-fast
 *                   cifar10/models/wideresnet.py, wrn_22() = WideResNet(num_groups=3, N=3,
 *                   k=6, start_nf=16): widths 16 -> 96, 192, 384; head AdaptiveAvgPool2d(1),
 *                   bn, relu, conv1x1 to the classes (no linear layer)
 *   wrn22-fastai    fastai 0.7's wrn_22 (fastai/fastai old/fastai/models/cifar10/wideresnet.py,
 *                   "Cifar10 Wideresnet for Dawn Submission"), which the AdamW notebook imports:
 *                   the same blocks with the branch scaled by 0.2 before the add, and head bn,
 *                   relu, AdaptiveAvgPool2d(1), Linear(384, classes) with bias
 *   resnet18-cifar  the DAWNBench ResNet-18 for CIFAR (Ben Johnson, bkj/basenet
 *                   examples/cifar/cifar10.py, derived from kuangliu/pytorch-cifar): 3x3 stem
 *                   conv-bn-relu 64, PreActBlocks 64, 128, 256, 256 (two per group, strides
 *                   1, 2, 2, 2), head Linear(512) on [avg pool, max pool] concatenated
 * Layer names follow the sources' modules (conv1, block.bn, block.conv1, ...). Every conv is
 * bias-free, as in both sources.
 *
 * The concatenation of bkj's head is written as its algebra: Linear([a, m]) = W_a a + W_m m
 * + b, two linear layers ("classifier.avg" with the bias, "classifier.max") summed.
 */
#include <stdio.h>

#include "models/seed_models.h"

static dbk_value bn_relu(dbk_graph *g, dbk_value x, const char *name) {
    return dbk_nn_relu(g, dbk_nn_batchnorm(g, x, name));
}

/* bn-relu-conv3x3(stride)-bn-relu-conv3x3 plus the shortcut (see dbk_preact_config). */
static dbk_value preact_block(dbk_graph *g, const dbk_preact_config *c, dbk_value x, int64_t nf, int stride,
                              const char *name) {
    char n[5][96];
    const char *parts[5] = {"bn1", "conv1", "bn2", "conv2", "shortcut"};
    for (int i = 0; i < 5; i++) snprintf(n[i], sizeof n[i], "%s.%s", name, parts[i]);
    const bool project = stride != 1 || x.data.shape[1] != nf;
    dbk_value main = x, skip = x;
    if (!project && !c->shortcut_after_activation) main = dbk_nn_fork(g, x, n[4]);   /* skip = x */
    dbk_value a = bn_relu(g, main, n[0]);
    if (project || c->shortcut_after_activation) {
        skip = dbk_nn_fork(g, a, n[4]);
        if (project) skip = dbk_nn_conv(g, skip, nf, 1, stride, 0, n[4]);
    }
    dbk_value y = dbk_nn_conv(g, a, nf, 3, stride, 1, n[1]);
    y = dbk_nn_conv(g, bn_relu(g, y, n[2]), nf, 3, 1, 1, n[3]);
    if (c->branch_scale > 0.0f) {
        char sn[112];
        snprintf(sn, sizeof sn, "%s.scale", name);
        y = dbk_nn_scale(g, y, c->branch_scale, sn);   /* x = self.conv2(x) * 0.2 */
    }
    return dbk_nn_add(g, y, skip, name);
}

dbk_value dbk_preact_forward(dbk_graph *g, const void *config, dbk_value x, int num_classes) {
    const dbk_preact_config *c = config;
    char name[64];
    dbk_value y = dbk_nn_conv(g, x, c->stem, 3, 1, 1, "conv1");
    if (c->head_avg_max_linear) y = bn_relu(g, y, "bn1");   /* bkj's prep: conv-bn-relu */
    for (int i = 0; i < c->groups; i++)
        for (int b = 0; b < c->blocks; b++) {
            snprintf(name, sizeof name, "group%d.block%d", i + 1, b);
            y = preact_block(g, c, y, c->widths[i], b == 0 ? c->group_stride[i] : 1, name);
        }
    if (c->head_bn_relu_pool_linear)
        return dbk_nn_linear_bias(g, dbk_nn_global_avgpool(g, bn_relu(g, y, "head.bn"), "pool"), num_classes, "head.fc");
    if (!c->head_avg_max_linear) {
        y = dbk_nn_global_avgpool(g, y, "pool");
        return dbk_nn_conv(g, bn_relu(g, y, "head.bn"), num_classes, 1, 1, 0, "head.conv");
    }
    dbk_value m = dbk_nn_fork(g, y, "pool.max_input");
    dbk_value avg = dbk_nn_linear_bias(g, dbk_nn_global_avgpool(g, y, "pool.avg"), num_classes, "classifier.avg");
    dbk_value max = dbk_nn_linear(g, dbk_nn_global_maxpool(g, m, "pool.max"), num_classes, "classifier.max");
    return dbk_nn_add(g, avg, max, "classifier");
}

/* ---------------------------------------------------------------------------------- */
/* the table's entries                                                                */

static const dbk_preact_config wrn22 = {.groups = 3, .blocks = 3, .stem = 16, .widths = {96, 192, 384},
                                        .group_stride = {1, 2, 2}, .shortcut_after_activation = true};
static const dbk_preact_config wrn22_fastai = {.groups = 3, .blocks = 3, .stem = 16, .widths = {96, 192, 384},
                                               .group_stride = {1, 2, 2}, .shortcut_after_activation = true,
                                               .head_bn_relu_pool_linear = true, .branch_scale = 0.2f};
static const dbk_preact_config resnet18 = {.groups = 4, .blocks = 2, .stem = 64, .widths = {64, 128, 256, 256},
                                           .group_stride = {1, 2, 2, 2}, .head_avg_max_linear = true};

const dbk_model_def dbk_model_wrn22 = {
    .name = "wrn22",
    .description = "fast.ai's DAWNBench Wide ResNet-22 (k = 6): pre-activation, widths 16-96-192-384, "
                   "avg pool, bn-relu-conv1x1 head",
    .dataset = "cifar10",
    .forward = dbk_preact_forward,
    .config = &wrn22,
};

const dbk_model_def dbk_model_wrn22_fastai = {
    .name = "wrn22-fastai",
    .description = "fastai 0.7's wrn_22 (k = 6): as wrn22 with the residual branch scaled by 0.2 and a bn-relu-"
                   "avg pool-linear head",
    .dataset = "cifar10",
    .forward = dbk_preact_forward,
    .config = &wrn22_fastai,
};

const dbk_model_def dbk_model_resnet18_cifar = {
    .name = "resnet18-cifar",
    .description = "the DAWNBench pre-activation ResNet-18 for CIFAR (bkj/basenet): 3x3 stem, 64-128-256-256, "
                   "linear on avg and max pools",
    .dataset = "cifar10",
    .forward = dbk_preact_forward,
    .config = &resnet18,
};
