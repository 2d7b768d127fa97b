/*
 * resnet9.c — the cifar10-fast ResNet9 (see resnet9.h for the exact layer list) and its three
 * widths in the model table.
 * Reference: https://github.com/davidcpage/cifar10-fast (DAWNBench entry, 2018), layer names
 * follow its `net()` so checkpoints read naturally.
 */
#include <stdio.h>

#include "models/resnet9.h"

static dbk_value conv_bn_relu(dbk_graph *g, dbk_value x, int64_t k, const char *name) {
    char cn[64], bn[64];
    snprintf(cn, sizeof cn, "%s.conv", name);
    snprintf(bn, sizeof bn, "%s.bn", name);
    dbk_value y = dbk_nn_conv(g, x, k, 3, 1, 1, cn);
    y = dbk_nn_batchnorm(g, y, bn);
    return dbk_nn_relu(g, y);
}

/* x + res2(res1(x)) */
static dbk_value residual(dbk_graph *g, dbk_value x, const char *name) {
    char n1[64], n2[64], nf[64], na[64];
    snprintf(n1, sizeof n1, "%s.res1", name);
    snprintf(n2, sizeof n2, "%s.res2", name);
    snprintf(nf, sizeof nf, "%s.residual", name);
    snprintf(na, sizeof na, "%s.add", name);
    dbk_value branch = dbk_nn_fork(g, x, nf);
    int64_t c = x.data.shape[1];
    branch = conv_bn_relu(g, branch, c, n1);
    branch = conv_bn_relu(g, branch, c, n2);
    return dbk_nn_add(g, x, branch, na);
}

dbk_value dbk_resnet9_forward(dbk_graph *g, const void *config, dbk_value x, int num_classes) {
    const dbk_resnet9_config *cfg = config;
    const int64_t *w = cfg->widths;
    dbk_value y = conv_bn_relu(g, x, w[0], "prep");

    y = conv_bn_relu(g, y, w[1], "layer1");
    y = dbk_nn_maxpool(g, y, 2, 2, "layer1.pool");
    y = residual(g, y, "layer1");

    y = conv_bn_relu(g, y, w[2], "layer2");
    y = dbk_nn_maxpool(g, y, 2, 2, "layer2.pool");

    y = conv_bn_relu(g, y, w[3], "layer3");
    y = dbk_nn_maxpool(g, y, 2, 2, "layer3.pool");
    y = residual(g, y, "layer3");

    y = dbk_nn_global_maxpool(g, y, "pool");
    y = dbk_nn_linear(g, y, num_classes, "linear");
    return dbk_nn_scale(g, y, cfg->logit_scale, "logit_scale");
}

/* ---------------------------------------------------------------------------------- */
/* the table's entries                                                                */

static const dbk_resnet9_config full = {{64, 128, 256, 512}, 0.125f};
static const dbk_resnet9_config half = {{32, 64, 128, 256}, 0.125f};
static const dbk_resnet9_config quarter = {{16, 32, 64, 128}, 0.125f};

const dbk_model_def dbk_model_resnet9 = {
    .name = "resnet9",
    .description = "cifar10-fast DAWNBench ResNet9, widths 64-128-256-512 (6.6M parameters)",
    .dataset = "cifar10",
    .forward = dbk_resnet9_forward,
    .config = &full,
};
const dbk_model_def dbk_model_resnet9_half = {
    .name = "resnet9-half",
    .description = "ResNet9 at half width, 32-64-128-256",
    .dataset = "cifar10",
    .forward = dbk_resnet9_forward,
    .config = &half,
};
const dbk_model_def dbk_model_resnet9_quarter = {
    .name = "resnet9-quarter",
    .description = "ResNet9 at quarter width, 16-32-64-128",
    .dataset = "cifar10",
    .forward = dbk_resnet9_forward,
    .config = &quarter,
};
