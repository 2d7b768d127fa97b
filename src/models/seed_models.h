/*
 * seed_models.h — the networks of the seed CIFAR-10 entries (docs/models.md says which source
 * each follows, file by file): their configurations and forward functions, so that tests can
 * train them at reduced width. The table entries (full width) are in their own files:
 *   preact_resnet.c  fast.ai's DAWNBench Wide ResNet-22 ("wrn22"), fastai 0.7's wrn_22
 *                    ("wrn22-fastai") and the DAWNBench ResNet-18 for CIFAR ("resnet18-cifar"):
 *                    pre-activation residual networks
 *   alexnet.c        AlexNet for CIFAR of the compressed-gradient study ("alexnet-cifar")
 *   darknet.c        fast.ai's DarkNet for CIFAR-10 ("darknet-cifar")
 * Forward functions take x (N, C, H, W) and return logits (N, classes, 1, 1) (models.h).
 */
#ifndef DBK_SEED_MODELS_H
#define DBK_SEED_MODELS_H

#include "models/models.h"

/* A pre-activation ResNet for 32x32 images: a 3x3 stem, then groups of blocks
 * bn-relu-conv3x3-bn-relu-conv3x3 (the first block of a group strides by group_stride[i]),
 * with a 1x1 projection where the shape changes. */
typedef struct dbk_preact_config {
    int     groups;                     /* 3 (WRN) or 4 (ResNet-18) */
    int     blocks;                     /* blocks per group: 3 (WRN-22) or 2 (ResNet-18) */
    int64_t stem;                       /* stem width: 16 (WRN), 64 (ResNet-18) */
    int64_t widths[4];                  /* per group */
    int     group_stride[4];            /* 1, 2, 2(, 2) */
    /* fast.ai's BasicBlock adds the shortcut of the activated input, relu(bn(x)), even where
     * it is the identity; bkj's PreActBlock adds x itself there. */
    bool    shortcut_after_activation;
    /* Head. WRN: global avg pool, bn, relu, conv1x1 to the classes. ResNet-18 (bkj): linear
     * with bias on [global avg pool, global max pool] concatenated. fastai 0.7's wrn_22: bn,
     * relu, global avg pool, linear with bias. */
    bool    head_avg_max_linear;
    bool    head_bn_relu_pool_linear;
    /* > 0: the residual branch is multiplied by it before the add (fastai 0.7's wrn_22: 0.2) */
    float   branch_scale;
} dbk_preact_config;

dbk_value dbk_preact_forward(dbk_graph *g, const void *config, dbk_value x, int num_classes);

/* AlexNet for CIFAR: five convs (with biases) and three max pools, then
 * dropout-linear-relu-dropout-linear-relu-linear. */
typedef struct dbk_alexnet_config {
    int64_t conv[5];                    /* 64, 192, 384, 256, 256 */
    int64_t hidden;                     /* 4096 */
    float   dropout;                    /* 0.5 (torch.nn.Dropout's default) */
} dbk_alexnet_config;

dbk_value dbk_alexnet_forward(dbk_graph *g, const void *config, dbk_value x, int num_classes);

/* DarkNet: conv-bn-leaky stem, then per group a strided conv-bn-leaky that doubles the width
 * and `blocks[i]` residual layers (1x1 to half width, 3x3 back); avg pool; linear with bias. */
typedef struct dbk_darknet_config {
    int64_t stem;                       /* 32 */
    int     groups;                     /* 5 */
    int     blocks[5];                  /* 1, 2, 4, 6, 3 */
    float   slope;                      /* leaky ReLU slope, 0.1 */
} dbk_darknet_config;

dbk_value dbk_darknet_forward(dbk_graph *g, const void *config, dbk_value x, int num_classes);

#endif
