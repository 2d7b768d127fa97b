/*
 * airbench.h — the airbench network family (KellerJordan/cifar10-airbench): airbench94, its
 * Muon variant (airbench94_muon.py) and the cifar10-speedrun network (hiverge/cifar10-speedrun),
 * one forward function with the choices that tell them apart, so that tests can build them at
 * reduced width. The table entries (full width) are in airbench94.c.
 *
 *   whiten  conv 2x2, C -> 2*C*4 filters, no padding, with bias; the weight is frozen and set
 *           from the training data's patch whitening (train/whiten.h), the bias (group
 *           "whiten_bias") trains for the recipe's first steps only
 *   GELU
 *   block1..3  conv 3x3 'same' (Dirac-initialised), max pool 2, batch norm, act, conv 3x3
 *              'same' (Dirac), batch norm, act;  act GELU (airbench) or SiLU (speedrun)
 *   max pool 3, flatten, linear without bias ("linear" or "head"), logits * logit_scale
 * Batch norm has its scale frozen at 1 and its shift in group "norm_biases". With muon_groups
 * the 3x3 convolutions' weights are in group "filters" (trained by Muon) and the head in
 * group "head"; otherwise both in the default group "".
 */
#ifndef DBK_AIRBENCH_H
#define DBK_AIRBENCH_H

#include <stdbool.h>

#include "models/models.h"

typedef struct dbk_airbench_config {
    int64_t widths[3];      /* block1, block2, block3 */
    float   logit_scale;    /* airbench94: 1/9; the Muon variants divide by x.size(-1) = widths[2] */
    bool    silu;           /* the blocks' activation is SiLU (speedrun), else GELU */
    bool    muon_groups;    /* groups "filters" and "head" (above) */
    bool    head_unit_std;  /* the head's weight rescaled to standard deviation 1 (w *= 1 / w.std()) */
    bool    whiten_bias_uniform; /* the whitening bias starts as nn.Conv2d's U(+-1/sqrt(12)), not 0 */
} dbk_airbench_config;

/* A dbk_model_forward_fn; config is a dbk_airbench_config. */
dbk_value dbk_airbench_forward(dbk_graph *g, const void *config, dbk_value x, int num_classes);

#endif
