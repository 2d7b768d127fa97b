/*
 * airbench94.c — the network of KellerJordan/cifar10-airbench legacy/airbench94.py (make_net),
 * at commit 1b8f7949; tools/notes/airbench94.md maps every line. In order:
 *   whiten  conv 2x2, C -> 2*C*4 filters (24 for RGB), no padding, with bias; the weight is
 *           frozen and set from the training data's 2x2 patch whitening (train/whiten.h), the
 *           bias trains for the recipe's first epochs only (group "whiten_bias")
 *   GELU
 *   block1..3  conv 3x3 'same' (Dirac-initialised), max pool 2, batch norm, GELU,
 *              conv 3x3 'same' (Dirac), batch norm, GELU;   widths 64, 256, 256
 *   max pool 3, flatten, linear without bias, logits * 1/9
 * Batch norm has its scale frozen at 1 and its shift in group "norm_biases" (the source trains
 * those at 64x the learning rate); eps and momentum come from the recipe (1e-12, 0.4 in
 * daybreak's convention = torch momentum 1 - 0.6). Parameter names follow the source's
 * state_dict with readable module names: whiten, block1.conv1, block1.norm1, ..., linear.
 */
#include <stdio.h>

#include "models/models.h"

typedef struct airbench_config {
    int64_t widths[3];     /* block1, block2, block3 */
    float   logit_scale;   /* hyp['net']['scaling_factor'] = 1/9 */
} airbench_config;

static dbk_value conv_group(dbk_graph *g, dbk_value x, int64_t width, const char *name) {
    char cn[64], nn[64], pn[64], gn[64];
    const dbk_conv_options conv = {.r = 3, .stride = 1, .pad = 1, .init = DBK_PARAM_INIT_DIRAC};
    const dbk_batchnorm_options norm = {.weight_group = DBK_GRAPH_GROUP_FROZEN, .bias_group = "norm_biases"};
    snprintf(cn, sizeof cn, "%s.conv1", name);
    dbk_value y = dbk_nn_conv_ex(g, x, width, &conv, cn);
    snprintf(pn, sizeof pn, "%s.pool", name);
    y = dbk_nn_maxpool(g, y, 2, 2, pn);
    snprintf(nn, sizeof nn, "%s.norm1", name);
    snprintf(gn, sizeof gn, "%s.gelu1", name);
    y = dbk_nn_gelu(g, dbk_nn_batchnorm_ex(g, y, &norm, nn), gn);
    snprintf(cn, sizeof cn, "%s.conv2", name);
    y = dbk_nn_conv_ex(g, y, width, &conv, cn);
    snprintf(nn, sizeof nn, "%s.norm2", name);
    snprintf(gn, sizeof gn, "%s.gelu2", name);
    return dbk_nn_gelu(g, dbk_nn_batchnorm_ex(g, y, &norm, nn), gn);
}

static dbk_value airbench_forward(dbk_graph *g, const void *config, dbk_value x, int num_classes) {
    const airbench_config *c = config;
    const int64_t channels = x.data.shape[1];
    const dbk_conv_options whiten = {.r = 2, .stride = 1, .pad = 0, .init = DBK_PARAM_INIT_WHITEN,
                                     .weight_group = DBK_GRAPH_GROUP_FROZEN, .bias = true,
                                     .bias_group = "whiten_bias"};
    dbk_value y = dbk_nn_conv_ex(g, x, 2 * channels * 2 * 2, &whiten, "whiten");
    y = dbk_nn_gelu(g, y, "whiten.gelu");
    y = conv_group(g, y, c->widths[0], "block1");
    y = conv_group(g, y, c->widths[1], "block2");
    y = conv_group(g, y, c->widths[2], "block3");
    y = dbk_nn_maxpool(g, y, 3, 3, "pool");
    y = dbk_nn_linear(g, y, num_classes, "linear");
    return dbk_nn_scale(g, y, c->logit_scale, "scale");
}

static const airbench_config airbench94 = {{64, 256, 256}, 1.0f / 9.0f};

const dbk_model_def dbk_model_airbench94 = {
    .name = "airbench94",
    .description = "airbench94 (Keller Jordan, 2024): 2x2 whitening conv, three GELU conv groups 64-256-256, "
                   "Dirac init, logits / 9 (1.97M parameters)",
    .dataset = "cifar10",
    .forward = airbench_forward,
    .config = &airbench94,
};
