/*
 * resnet.h — the ImageNet ResNets of torchvision (He et al. 2016), ResNet-18 and ResNet-50 in
 * its v1.5 form (the bottleneck's stride on the 3x3 convolution, as torchvision and NVIDIA's
 * DeepLearningExamples define it; v1 strides the first 1x1):
 *   stem    conv 7x7/2 (C->64) bn relu, max-pool
 *   layer1..layer4  blocks of width 64, 128, 256, 512 (first block of layer2..4 strides 2)
 *     basic (ResNet-18, 2-2-2-2):      conv3x3/s bn relu, conv3x3 bn
 *     bottleneck (ResNet-50, 3-4-6-3): conv1x1 bn relu, conv3x3/s bn relu, conv1x1 (4x) bn
 *     shortcut: identity, or conv1x1/s bn when the shape changes (the strided 1x1 projection);
 *     relu after the sum
 *   global average pool, fully connected layer with bias (a 1x1 convolution with bias).
 * Every convolution but that final layer has no bias. Parameter names follow torchvision's state_dict ("conv1",
 * "layer2.0.downsample.0", "fc") so that a checkpoint reads like a torchvision one. The stem's
 * max-pool is torchvision's MaxPool2d(3, stride 2, padding 1).
 *
 * Initialisation: kaiming-uniform convolutions as PyTorch's layer defaults (but the final
 * layer's bias starts at 0, daybreak's convolution-bias default), or with
 * imagenet18_init that of fast.ai's DAWNBench ImageNet entry (cybertronai/imagenet18_old
 * training/resnet.py with --init-bn0): convolutions kaiming_normal_(mode='fan_out',
 * nonlinearity='relu'), the last batch norm of every residual branch (bn3, or bn2 of a basic
 * block) scaled by 0, the final layer's weight N(0, 0.01) and its bias PyTorch's uniform; and
 * every batch-norm parameter in group "bn" (the entry's --no-bn-wd keeps weight decay off them).
 */
#ifndef DBK_RESNET_H
#define DBK_RESNET_H

#include <stdbool.h>

#include "models/models.h"

typedef struct dbk_resnet_config {
    bool    bottleneck;     /* false: basic blocks (ResNet-18/34); true: bottleneck (ResNet-50) */
    int     blocks[4];      /* blocks per layer */
    int64_t width;          /* layer1's width, 64; layers double it */
    bool    imagenet18_init;/* fast.ai's DAWNBench ImageNet initialisation and "bn" group (above) */
} dbk_resnet_config;

/* A dbk_model_forward_fn; config is a dbk_resnet_config. */
dbk_value dbk_resnet_forward(dbk_graph *g, const void *config, dbk_value x, int num_classes);

#endif
