/*
 * resnet.c — torchvision's ResNet-18 and ResNet-50 v1.5 (see resnet.h) and their table entries.
 * Reference: torchvision/models/resnet.py (BasicBlock, Bottleneck, ResNet._make_layer).
 */
#include <stdio.h>

#include "models/resnet.h"

/* A convolution without bias, initialised as the config says. */
static dbk_value conv(dbk_graph *g, const dbk_resnet_config *cfg, dbk_value x, int64_t k, int r, int stride,
                      const char *name) {
    const dbk_conv_options o = {.r = r, .stride = stride, .pad = r / 2,
                                .init = cfg->imagenet18_init ? DBK_PARAM_INIT_KAIMING_NORMAL_FAN_OUT
                                                             : DBK_PARAM_INIT_KAIMING_UNIFORM};
    return dbk_nn_conv_ex(g, x, k, &o, name);
}

/* Batch norm; with imagenet18_init in group "bn", its scale 0 when zero (a branch's last). */
static dbk_value bn(dbk_graph *g, const dbk_resnet_config *cfg, dbk_value x, bool zero, const char *name) {
    const dbk_batchnorm_options o = {.weight_group = cfg->imagenet18_init ? "bn" : NULL,
                                     .bias_group = cfg->imagenet18_init ? "bn" : NULL,
                                     .weight_zero = cfg->imagenet18_init && zero};
    return dbk_nn_batchnorm_ex(g, x, &o, name);
}

/* conv (no bias) then batch norm, named "<prefix>conv<i>" / "<prefix>bn<i>" as torchvision;
 * last: the branch's last batch norm. */
static dbk_value conv_bn(dbk_graph *g, const dbk_resnet_config *cfg, dbk_value x, int64_t k, int r, int stride,
                         const char *prefix, int i, bool last) {
    char cn[80], bn_name[80];
    snprintf(cn, sizeof cn, "%sconv%d", prefix, i);
    snprintf(bn_name, sizeof bn_name, "%sbn%d", prefix, i);
    return bn(g, cfg, conv(g, cfg, x, k, r, stride, cn), last, bn_name);
}

/* One residual block of layer `layer`, block `index`: the branch on a fork of x, the shortcut
 * (identity or the strided 1x1 projection), their sum, relu. */
static dbk_value block(dbk_graph *g, const dbk_resnet_config *cfg, dbk_value x, int64_t width, int stride, int layer,
                       int index) {
    char prefix[48], name[80];
    snprintf(prefix, sizeof prefix, "layer%d.%d.", layer, index);
    const int64_t out = cfg->bottleneck ? 4 * width : width;
    snprintf(name, sizeof name, "%sresidual", prefix);
    dbk_value b = dbk_nn_fork(g, x, name);
    if (cfg->bottleneck) {
        b = dbk_nn_relu(g, conv_bn(g, cfg, b, width, 1, 1, prefix, 1, false));
        b = dbk_nn_relu(g, conv_bn(g, cfg, b, width, 3, stride, prefix, 2, false));   /* v1.5: the stride is here */
        b = conv_bn(g, cfg, b, out, 1, 1, prefix, 3, true);
    } else {
        b = dbk_nn_relu(g, conv_bn(g, cfg, b, width, 3, stride, prefix, 1, false));
        b = conv_bn(g, cfg, b, out, 3, 1, prefix, 2, true);
    }
    dbk_value shortcut = x;
    if (stride != 1 || x.data.shape[1] != out) {
        char cn[80], bn_name[80];
        snprintf(cn, sizeof cn, "%sdownsample.0", prefix);
        snprintf(bn_name, sizeof bn_name, "%sdownsample.1", prefix);
        shortcut = bn(g, cfg, conv(g, cfg, x, out, 1, stride, cn), false, bn_name);
    }
    snprintf(name, sizeof name, "%sadd", prefix);
    return dbk_nn_relu(g, dbk_nn_add(g, shortcut, b, name));
}

dbk_value dbk_resnet_forward(dbk_graph *g, const void *config, dbk_value x, int num_classes) {
    const dbk_resnet_config *cfg = config;
    dbk_value y = conv(g, cfg, x, cfg->width, 7, 2, "conv1");
    y = dbk_nn_relu(g, bn(g, cfg, y, false, "bn1"));
    y = dbk_nn_maxpool_padded(g, y, 3, 2, 1, "maxpool");   /* torchvision: MaxPool2d(3, 2, padding=1) */
    for (int layer = 0; layer < 4; layer++) {
        const int64_t width = cfg->width << layer;
        for (int i = 0; i < cfg->blocks[layer]; i++)
            y = block(g, cfg, y, width, layer > 0 && i == 0 ? 2 : 1, layer + 1, i);
    }
    y = dbk_nn_global_avgpool(g, y, "avgpool");
    /* PyTorch's Linear: a uniform bias (daybreak's default conv bias starts at 0) */
    const dbk_conv_options fc = {.r = 1, .stride = 1, .pad = 0, .bias = true, .bias_uniform = cfg->imagenet18_init,
                                 .init = cfg->imagenet18_init ? DBK_PARAM_INIT_NORMAL_001 : DBK_PARAM_INIT_KAIMING_UNIFORM};
    return dbk_nn_conv_ex(g, y, num_classes, &fc, "fc");
}

/* ---------------------------------------------------------------------------------- */
/* the table's entries                                                                */

static const dbk_resnet_config resnet18 = {.bottleneck = false, .blocks = {2, 2, 2, 2}, .width = 64};
static const dbk_resnet_config resnet50 = {.bottleneck = true, .blocks = {3, 4, 6, 3}, .width = 64, .imagenet18_init = true};

const dbk_model_def dbk_model_resnet18 = {
    .name = "resnet18",
    .description = "ResNet-18 (torchvision; basic blocks 2-2-2-2, global average pool; 11.7M parameters at 1,000 "
                   "classes)",
    .dataset = "imagenet",
    .forward = dbk_resnet_forward,
    .config = &resnet18,
};
const dbk_model_def dbk_model_resnet50 = {
    .name = "resnet50",
    .description = "ResNet-50 v1.5 (torchvision; bottlenecks 3-4-6-3 with the stride on the 3x3, global average "
                   "pool; 25.6M parameters at 1,000 classes), initialised as fast.ai's DAWNBench ImageNet entry",
    .dataset = "imagenet",
    .forward = dbk_resnet_forward,
    .config = &resnet50,
};
