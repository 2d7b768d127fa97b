/*
 * alexnet.c — AlexNet for CIFAR-10 as the compressed-gradient study trains it
 * (sands-lab/layer-wise-aaai20, CIFAR10/alexnet.py, "modified to fit dataset size"):
 *   conv3x3 stride 2 (3 -> 64), relu, maxpool 2; conv3x3 (-> 192), relu, maxpool 2;
 *   conv3x3 (-> 384), relu; conv3x3 (-> 256), relu; conv3x3 (-> 256), relu, maxpool 2;
 *   flatten (256 * 2 * 2); dropout 0.5, linear 4096, relu; dropout 0.5, linear 4096, relu;
 *   linear to the classes.
 * Every conv and linear layer has a bias (PyTorch's default, which the source keeps).
 * Difference from PyTorch: conv biases start at zero (dbk_nn_conv_ex), PyTorch draws them
 * U(-1/sqrt(fan_in), 1/sqrt(fan_in)); the linear layers' biases are drawn as PyTorch does.
 */
#include <stdio.h>

#include "models/seed_models.h"

static dbk_value conv_relu(dbk_graph *g, dbk_value x, int64_t k, int stride, const char *name) {
    const dbk_conv_options o = {.r = 3, .stride = stride, .pad = 1, .init = DBK_PARAM_INIT_KAIMING_UNIFORM, .bias = true};
    return dbk_nn_relu(g, dbk_nn_conv_ex(g, x, k, &o, name));
}

dbk_value dbk_alexnet_forward(dbk_graph *g, const void *config, dbk_value x, int num_classes) {
    const dbk_alexnet_config *c = config;
    dbk_value y = conv_relu(g, x, c->conv[0], 2, "features.0");
    y = dbk_nn_maxpool(g, y, 2, 2, "features.2");
    y = conv_relu(g, y, c->conv[1], 1, "features.3");
    y = dbk_nn_maxpool(g, y, 2, 2, "features.5");
    y = conv_relu(g, y, c->conv[2], 1, "features.6");
    y = conv_relu(g, y, c->conv[3], 1, "features.8");
    y = conv_relu(g, y, c->conv[4], 1, "features.10");
    y = dbk_nn_maxpool(g, y, 2, 2, "features.12");
    y = dbk_nn_dropout(g, y, c->dropout, "classifier.0");
    y = dbk_nn_relu(g, dbk_nn_linear_bias(g, y, c->hidden, "classifier.1"));
    y = dbk_nn_dropout(g, y, c->dropout, "classifier.3");
    y = dbk_nn_relu(g, dbk_nn_linear_bias(g, y, c->hidden, "classifier.4"));
    return dbk_nn_linear_bias(g, y, num_classes, "classifier.6");
}

static const dbk_alexnet_config alexnet = {{64, 192, 384, 256, 256}, 4096, 0.5f};

const dbk_model_def dbk_model_alexnet_cifar = {
    .name = "alexnet-cifar",
    .description = "AlexNet for CIFAR of the compressed-gradient study (sands-lab/layer-wise-aaai20): "
                   "5 convs 64-192-384-256-256, dropout, fc 4096-4096",
    .dataset = "cifar10",
    .forward = dbk_alexnet_forward,
    .config = &alexnet,
};
