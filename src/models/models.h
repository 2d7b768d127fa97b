/*
 * models.h — the networks daybreak trains, each a function that lays out layers on a graph
 * (nn/graph.h), and a table of named model configurations.
 */
#ifndef DBK_MODELS_H
#define DBK_MODELS_H

#include "nn/graph.h"

typedef struct dbk_model_spec {
    const char *name;            /* "resnet9", "resnet9-quarter", ... */
    const char *family;          /* "resnet9" */
    int64_t     widths[4];       /* prep, layer1, layer2, layer3 channels */
    float       logit_scale;     /* 0.125 in cifar10-fast */
    int         num_classes;
    const char *description;
} dbk_model_spec;

/* Looks a model up by name; DBK_ERR_NOT_FOUND lists the known names. */
dbk_status dbk_model_find(const char *name, const dbk_model_spec **out);
int                    dbk_model_count(void);
const dbk_model_spec  *dbk_model_at(int i);

/* Lays out the model on g for input x (N,3,H,W); returns the logits value (N,classes,1,1). */
dbk_value dbk_model_forward(dbk_graph *g, const dbk_model_spec *spec, dbk_value x);

/* The cifar10-fast DAWNBench ResNet9 (David Page, 2018), with configurable widths:
 *   prep   conv(3->w0) bn relu
 *   layer1 conv(w0->w1) bn relu maxpool2, + residual [conv bn relu, conv bn relu] (no relu after the add)
 *   layer2 conv(w1->w2) bn relu maxpool2
 *   layer3 conv(w2->w3) bn relu maxpool2, + residual [conv bn relu, conv bn relu]
 *   global max pool, linear w3->classes without bias, logits * logit_scale.
 * Every conv is 3x3, stride 1, pad 1, no bias. */
dbk_value dbk_resnet9_forward(dbk_graph *g, const dbk_model_spec *spec, dbk_value x);

#endif
