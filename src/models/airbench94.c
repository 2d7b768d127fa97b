/*
 * airbench94.c — the airbench family's forward function (models/airbench.h) and its table
 * entries:
 *   airbench94        KellerJordan/cifar10-airbench legacy/airbench94.py (make_net), at commit
 *                     1b8f7949; tools/notes/airbench94.md maps every line; logits * 1/9
 *   airbench94-muon   airbench94_muon.py (commit f1c599c): the same network, the head
 *                     nn.Linear(256, 10, bias=False) rescaled to unit std (reset: w *= 1 / w.std()),
 *                     logits / x.size(-1) = 256, the whitening conv a plain nn.Conv2d (its bias
 *                     starts U(+-1/sqrt(12))), groups for Muon ("filters") and SGD ("head")
 *   cifar10-speedrun  hiverge/cifar10-speedrun cifar10_speedrun.py (commit 5cd49b1): as
 *                     airbench94-muon with SiLU in the conv groups (the GELU after the whitening
 *                     stays)
 * Batch-norm eps and momentum come from the recipe (1e-12; torch momentum 1 - 0.6 for airbench,
 * 1 - 0.5566 for speedrun). Parameter names follow the source's state_dict with readable module
 * names: whiten, block1.conv1, block1.norm1, ..., linear (airbench94) or head (the Muon
 * variants).
 */
#include <stdio.h>

#include "models/airbench.h"

/* The blocks' activation: GELU (airbench) or SiLU (speedrun). */
static dbk_value act(dbk_graph *g, const dbk_airbench_config *c, dbk_value x, const char *name) {
    return c->silu ? dbk_nn_silu(g, x, name) : dbk_nn_gelu(g, x, name);
}

static dbk_value conv_group(dbk_graph *g, const dbk_airbench_config *c, dbk_value x, int64_t width, const char *name) {
    char cn[64], nn[64], pn[64], gn[64];
    const dbk_conv_options conv = {.r = 3, .stride = 1, .pad = 1, .init = DBK_PARAM_INIT_DIRAC,
                                   .weight_group = c->muon_groups ? "filters" : NULL};
    const dbk_batchnorm_options norm = {.weight_group = DBK_GRAPH_GROUP_FROZEN, .bias_group = "norm_biases"};
    snprintf(cn, sizeof cn, "%s.conv1", name);
    dbk_value y = dbk_nn_conv_ex(g, x, width, &conv, cn);
    snprintf(pn, sizeof pn, "%s.pool", name);
    y = dbk_nn_maxpool(g, y, 2, 2, pn);
    snprintf(nn, sizeof nn, "%s.norm1", name);
    snprintf(gn, sizeof gn, "%s.%s1", name, c->silu ? "silu" : "gelu");
    y = act(g, c, dbk_nn_batchnorm_ex(g, y, &norm, nn), gn);
    snprintf(cn, sizeof cn, "%s.conv2", name);
    y = dbk_nn_conv_ex(g, y, width, &conv, cn);
    snprintf(nn, sizeof nn, "%s.norm2", name);
    snprintf(gn, sizeof gn, "%s.%s2", name, c->silu ? "silu" : "gelu");
    return act(g, c, dbk_nn_batchnorm_ex(g, y, &norm, nn), gn);
}

dbk_value dbk_airbench_forward(dbk_graph *g, const void *config, dbk_value x, int num_classes) {
    const dbk_airbench_config *c = config;
    const int64_t channels = x.data.shape[1];
    const dbk_conv_options whiten = {.r = 2, .stride = 1, .pad = 0, .init = DBK_PARAM_INIT_WHITEN,
                                     .weight_group = DBK_GRAPH_GROUP_FROZEN, .bias = true,
                                     .bias_group = "whiten_bias", .bias_uniform = c->whiten_bias_uniform};
    dbk_value y = dbk_nn_conv_ex(g, x, 2 * channels * 2 * 2, &whiten, "whiten");
    y = dbk_nn_gelu(g, y, "whiten.gelu");
    y = conv_group(g, c, y, c->widths[0], "block1");
    y = conv_group(g, c, y, c->widths[1], "block2");
    y = conv_group(g, c, y, c->widths[2], "block3");
    y = dbk_nn_maxpool(g, y, 3, 3, "pool");
    if (c->muon_groups) dbk_graph_set_group(g, "head");
    y = dbk_nn_linear_init(g, y, num_classes, c->head_unit_std ? DBK_PARAM_INIT_UNIT_STD : DBK_PARAM_INIT_KAIMING_UNIFORM,
                           c->muon_groups ? "head" : "linear");
    return dbk_nn_scale(g, y, c->logit_scale, "scale");
}

static const dbk_airbench_config airbench94 = {.widths = {64, 256, 256}, .logit_scale = 1.0f / 9.0f};

static const dbk_airbench_config airbench94_muon = {.widths = {64, 256, 256}, .logit_scale = 1.0f / 256.0f,
                                                    .muon_groups = true, .head_unit_std = true,
                                                    .whiten_bias_uniform = true};
static const dbk_airbench_config speedrun = {.widths = {64, 256, 256}, .logit_scale = 1.0f / 256.0f, .silu = true,
                                             .muon_groups = true, .head_unit_std = true, .whiten_bias_uniform = true};

const dbk_model_def dbk_model_airbench94_muon = {
    .name = "airbench94-muon",
    .description = "airbench94_muon.py's network (Keller Jordan, 2024): airbench94's with a unit-std head, logits / "
                   "256, Muon's filter group",
    .dataset = "cifar10",
    .forward = dbk_airbench_forward,
    .config = &airbench94_muon,
};

const dbk_model_def dbk_model_cifar10_speedrun = {
    .name = "cifar10-speedrun",
    .description = "hiverge/cifar10-speedrun's network (2025): airbench94-muon's with SiLU in the conv groups",
    .dataset = "cifar10",
    .forward = dbk_airbench_forward,
    .config = &speedrun,
};

const dbk_model_def dbk_model_airbench94 = {
    .name = "airbench94",
    .description = "airbench94 (Keller Jordan, 2024): 2x2 whitening conv, three GELU conv groups 64-256-256, "
                   "Dirac init, logits / 9 (1.97M parameters)",
    .dataset = "cifar10",
    .forward = dbk_airbench_forward,
    .config = &airbench94,
};
