/*
 * darknet.c — fast.ai's DarkNet for CIFAR-10 (fastai/fastai courses/dl2/cifar10-darknet.ipynb,
 * fastai 0.7): Darknet([1, 2, 4, 6, 3], num_classes=10, nf=32):
 *   conv_layer(3, 32, ks=3): conv (no bias, padding ks//2) - BatchNorm2d(momentum=0.01) -
 *   LeakyReLU(0.1); then per group i: conv_layer(nf, 2 nf, stride 2 - (i == 1)) and
 *   blocks[i] ResLayers x + conv_layer(ni/2 -> ni, 3)(conv_layer(ni -> ni/2, 1)(x));
 *   AdaptiveAvgPool2d(1), Flatten, Linear(1024, classes) with bias.
 * The batch-norm momentum (0.01) is the recipe's (darknet-cifar), as every recipe sets it.
 */
#include <stdio.h>

#include "models/seed_models.h"

static dbk_value conv_layer(dbk_graph *g, dbk_value x, int64_t nf, int ks, int stride, float slope, const char *name) {
    char cn[96], bn[96];
    snprintf(cn, sizeof cn, "%s.conv", name);
    snprintf(bn, sizeof bn, "%s.bn", name);
    dbk_value y = dbk_nn_conv(g, x, nf, ks, stride, ks / 2, cn);
    return dbk_nn_leaky_relu(g, dbk_nn_batchnorm(g, y, bn), slope);
}

/* x + conv3x3(conv1x1(x)), half width inside; no activation after the sum. */
static dbk_value res_layer(dbk_graph *g, dbk_value x, float slope, const char *name) {
    char n1[96], n2[96], nf[96];
    snprintf(n1, sizeof n1, "%s.conv1", name);
    snprintf(n2, sizeof n2, "%s.conv2", name);
    snprintf(nf, sizeof nf, "%s.residual", name);
    const int64_t ni = x.data.shape[1];
    dbk_value branch = dbk_nn_fork(g, x, nf);
    branch = conv_layer(g, branch, ni / 2, 1, 1, slope, n1);
    branch = conv_layer(g, branch, ni, 3, 1, slope, n2);
    return dbk_nn_add(g, x, branch, name);
}

dbk_value dbk_darknet_forward(dbk_graph *g, const void *config, dbk_value x, int num_classes) {
    const dbk_darknet_config *c = config;
    char name[64];
    int64_t nf = c->stem;
    dbk_value y = conv_layer(g, x, nf, 3, 1, c->slope, "layers.0");
    for (int i = 0; i < c->groups; i++) {
        snprintf(name, sizeof name, "group%d.down", i + 1);
        y = conv_layer(g, y, 2 * nf, 3, i == 1 ? 1 : 2, c->slope, name);
        nf *= 2;
        for (int b = 0; b < c->blocks[i]; b++) {
            snprintf(name, sizeof name, "group%d.res%d", i + 1, b);
            y = res_layer(g, y, c->slope, name);
        }
    }
    y = dbk_nn_global_avgpool(g, y, "pool");
    return dbk_nn_linear_bias(g, y, num_classes, "linear");
}

static const dbk_darknet_config darknet = {32, 5, {1, 2, 4, 6, 3}, 0.1f};

const dbk_model_def dbk_model_darknet_cifar = {
    .name = "darknet-cifar",
    .description = "fast.ai's DarkNet for CIFAR-10 (course dl2): leaky ReLU 0.1, groups 1-2-4-6-3 residual "
                   "layers, widths 64..1024",
    .dataset = "cifar10",
    .forward = dbk_darknet_forward,
    .config = &darknet,
};
