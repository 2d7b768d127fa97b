/*
 * resnet9.h — the cifar10-fast DAWNBench ResNet9 (David Page, 2018), with configurable widths:
 *   prep   conv(C->w0) bn relu
 *   layer1 conv(w0->w1) bn relu maxpool2, + residual [conv bn relu, conv bn relu] (no relu after the add)
 *   layer2 conv(w1->w2) bn relu maxpool2
 *   layer3 conv(w2->w3) bn relu maxpool2, + residual [conv bn relu, conv bn relu]
 *   global max pool, linear w3->classes without bias, logits * logit_scale.
 * Every conv is 3x3, stride 1, pad 1, no bias. The table's entries (resnet9, resnet9-half,
 * resnet9-quarter) are defined in resnet9.c; the config and forward are public so tests can
 * build other widths.
 */
#ifndef DBK_RESNET9_H
#define DBK_RESNET9_H

#include "models/models.h"

typedef struct dbk_resnet9_config {
    int64_t widths[4];      /* prep, layer1, layer2, layer3 channels */
    float   logit_scale;    /* 0.125 in cifar10-fast */
} dbk_resnet9_config;

/* A dbk_model_forward_fn; config is a dbk_resnet9_config. */
dbk_value dbk_resnet9_forward(dbk_graph *g, const void *config, dbk_value x, int num_classes);

#endif
