/*
 * recipe.c — the embedded recipes (see recipe.h).
 *
 * cifar10-resnet9 is the cifar10-fast DAWNBench entry (David Page, 2018):
 * https://github.com/davidcpage/cifar10-fast — batch 512, 24 epochs, lr 0 -> 0.4 (epoch 5)
 * -> 0 (epoch 24) per step, Nesterov momentum 0.9, weight decay 5e-4 * batch on a summed
 * loss, pad-4 reflect crop + flip + 8x8 cutout, 94% target on the original CIFAR-10.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/recipe.h"

/* CIFAR-10 channel statistics used by cifar10-fast, on the [0,1] scale. */
#define CIFAR_MEAN {125.31f / 255.0f, 122.95f / 255.0f, 113.87f / 255.0f}
#define CIFAR_STD  {62.99f / 255.0f, 62.09f / 255.0f, 66.70f / 255.0f}
/* The statistics fast.ai's CIFAR-10 notebooks normalise with. */
#define FASTAI_MEAN {0.4914f, 0.48216f, 0.44653f}
#define FASTAI_STD  {0.24703f, 0.24349f, 0.26159f}
/* ImageNet channel statistics (torchvision's Normalize), on the [0,1] scale. */
#define IMAGENET_MEAN {0.485f, 0.456f, 0.406f}
#define IMAGENET_STD  {0.229f, 0.224f, 0.225f}
/* airbench94's SGD rate per step of the summed loss: 11.5 / kilostep_scale, kilostep_scale =
 * 1024 * (1 + 1 / (1 - 0.85)) = 23552/3, i.e. 3/2048 exactly (legacy/airbench94.py L359-L360). */
#define AIRBENCH_LR (11.5f / (1024.0f * (1.0f + 1.0f / (1.0f - 0.85f))))
/* imagenette-resnet18's top-1 target: all 6 measured runs (seeds 0-2, CPU and PoCL) clear it
 * (docs/imagenet.md). */
#define IMAGENETTE_TARGET 20.0f

static const dbk_recipe recipes[] = {
    {
        .name = "quick",
        .description = "quarter-width ResNet9, 8 epochs: the quick start (80% at epoch 7; README: its times)",
        .model = "resnet9-quarter",
        .dataset = "cifar10",
        .batch = 256,
        .epochs = 8,
        .lr_knots = 3,
        .lr_epochs = {0.0f, 2.0f, 8.0f},
        .lr_values = {0.0f, 0.4f, 0.0f},
        .momentum = 0.9f,
        .weight_decay = 5e-4f,
        .nesterov = true,
        .loss_summed = true,
        .label_smoothing = 0.2f,
        .bn = {.eps = 1e-5f, .momentum = 0.1f},
        .augment = {.train = true, .pad = 4, .flip = true, .cutout = 8, .mean = CIFAR_MEAN, .std = CIFAR_STD},
        .target = 80.0f,
        .target_note = "measured on the JPEG-decoded CIFAR-10 copy in shared/data",
    },
    {
        .name = "cifar10-resnet9",
        .description = "the cifar10-fast DAWNBench entry: ResNet9, batch 512, 24 epochs, 94% top-1",
        .model = "resnet9",
        .dataset = "cifar10",
        .batch = 512,
        .epochs = 24,
        .lr_knots = 3,
        .lr_epochs = {0.0f, 5.0f, 24.0f},
        .lr_values = {0.0f, 0.4f, 0.0f},
        .momentum = 0.9f,
        .weight_decay = 5e-4f,
        .nesterov = true,
        .loss_summed = true,
        .label_smoothing = 0.0f,
        .bn = {.eps = 1e-5f, .momentum = 0.1f},
        .augment = {.train = true, .pad = 4, .flip = true, .cutout = 8, .mean = CIFAR_MEAN, .std = CIFAR_STD},
        .target = 94.0f,
        .target_note = "DAWNBench CIFAR-10 target (original data; the JPEG copy scores about 3 points lower)",
    },
    {
        /* KellerJordan/cifar10-airbench legacy/airbench94.py (tools/notes/airbench94.md maps it).
         * The source's loss is summed over the batch and its kilostep arithmetic (L352-L362)
         * gives torch's SGD lr = 11.5 / kilostep_scale = 3/2048 per step, kilostep_scale = 1024 *
         * (1 + 1/(1 - 0.85)), whatever the batch (lr_per_step), and weight_decay = wd / lr with
         * wd = 0.0153 * batch / kilostep_scale: 0.0153 / 11.5 per example times the batch. So at
         * any --batch the step's rate stays the source's and the decay per step grows with the
         * batch, as in the source. The batch-norm shifts train at 64x the rate with 1/64 of the
         * decay (the same decay per step), the whitening bias for the first 3 epochs (then its
         * gradient is no longer computed: the session's second training step). Evaluation in
         * batches of 2000 (L340). */
        .name = "airbench94",
        .description = "airbench94 (Keller Jordan): 9.9 epochs at batch 1024, whitening init, lookahead, "
                       "test-time augmentation; 94% in ~3.8 s on an A100",
        .model = "airbench94",
        .dataset = "cifar10",
        .batch = 1024,
        .epochs = 10,
        .train_epochs = 9.9f,
        .lr_knots = 3,
        .lr_knots_in_run = true,
        .lr_epochs = {0.0f, 0.23f, 1.0f},
        .lr_values = {0.2f * AIRBENCH_LR, AIRBENCH_LR, 0.07f * AIRBENCH_LR},
        .momentum = 0.85f,
        .weight_decay = 0.0153f / 11.5f,
        .nesterov = true,
        .loss_summed = true,
        .lr_per_step = true,
        .label_smoothing = 0.2f,
        .group_count = 2,
        .groups = {{.name = "norm_biases", .lr_scale = 64.0f, .weight_decay_scale = 1.0f / 64.0f},
                   {.name = "whiten_bias", .lr_scale = 1.0f, .weight_decay_scale = 1.0f, .until_epoch = 3.0f}},
        .bn = {.eps = 1e-12f, .momentum = 0.4f},   /* torch momentum 1 - 0.6 */
        .augment = {.train = true, .pad = 2, .flip = true, .flip_alternating = true, .cutout = 0,
                    .mean = {0.4914f, 0.4822f, 0.4465f}, .std = {0.2470f, 0.2435f, 0.2616f}},
        .lookahead_every = 5,
        .lookahead_base = 0.77378094f,             /* 0.95 ** 5 */
        .lookahead_power = 3.0f,
        .tta_level = 2,
        .eval_batch = 2000,
        .fixed_budget = true,
        .target = 94.0f,
        .target_note = "airbench94's 94.01% mean on the original CIFAR-10 (n=1000); the JPEG copy in shared/data "
                       "scores about 3 points lower",
    },
    {
        /* KellerJordan/cifar10-airbench airbench94_muon.py (commit f1c599c; 94.01% mean over 200
         * runs in 2.59 s on an A100): main(): batch 2000, total_train_steps = ceil(8 * 25) = 200,
         * the loss summed with label smoothing 0.2; torch.optim.SGD(momentum 0.85, nesterov) on
         * three groups, lr 0.053 (whitening bias, decaying to 0 over whiten_bias_train_steps =
         * ceil(3 * 25) = 75 steps, its gradient detached after them), 0.053 (batch-norm biases)
         * and 0.67 (head), each weight_decay = 2e-6 * batch / lr, and Muon(lr 0.24, momentum
         * 0.6, nesterov) on the 3x3 filters; every rate times (1 - step / 200), set before the
         * step. Muon.step: buf = 0.6 buf + g, u = g + 0.6 buf, p *= sqrt(K) / ||p||, p -= lr *
         * zeropower_via_newtonschulz5(u) with (a, b, c) = (3.4445, -4.7750, 2.0315), 3 steps,
         * X = G / (||G|| + 1e-7). Batch norm momentum 1 - 0.6, eps 1e-12; flip and translate 2
         * as airbench94; whitening from 5000 images in eigh's ascending order; evaluation in
         * batches of 2000, the final one with TTA level 2 on the clock; no lookahead. The
         * source runs the network in fp16 (Newton-Schulz in bf16) under torch.compile: fp32 here
         * (docs/recipes.md). */
        .name = "airbench94-muon",
        .description = "airbench94 with Muon (Keller Jordan): batch 2000, 8 epochs, Newton-Schulz orthogonalised "
                       "updates of the filters; 94% in 2.59 s on an A100",
        .model = "airbench94-muon",
        .dataset = "cifar10",
        .batch = 2000,
        .epochs = 8,
        .lr_knots = 2,
        .lr_knots_in_run = true,
        .lr_epochs = {0.0f, 1.0f},
        .lr_values = {1.0f, 0.0f},
        .momentum = 0.85f,
        .nesterov = true,
        .weight_decay = 2e-6f,
        .loss_summed = true,
        .lr_per_step = true,
        .label_smoothing = 0.2f,
        .group_count = 4,
        .groups = {{.name = "filters", .lr_scale = 0.24f, .weight_decay_scale = 1.0f, .muon = true},
                   {.name = "whiten_bias", .lr_scale = 0.053f, .weight_decay_scale = 1.0f / 0.053f,
                    .until_epoch = 3.0f, .own_decay = true},
                   {.name = "norm_biases", .lr_scale = 0.053f, .weight_decay_scale = 1.0f / 0.053f},
                   {.name = "head", .lr_scale = 0.67f, .weight_decay_scale = 1.0f / 0.67f}},
        .muon = {.momentum = 0.6f, .nesterov = true, .ns_steps = 3, .ns_a = 3.4445f, .ns_b = -4.7750f,
                 .ns_c = 2.0315f, .ns_eps = 1e-7f, .renorm_every = 1},
        .bn = {.eps = 1e-12f, .momentum = 0.4f},   /* torch momentum 1 - 0.6 */
        .augment = {.train = true, .pad = 2, .flip = true, .flip_alternating = true, .cutout = 0,
                    .mean = {0.4914f, 0.4822f, 0.4465f}, .std = {0.2470f, 0.2435f, 0.2616f}},
        .tta_level = 2,
        .eval_batch = 2000,
        .fixed_budget = true,
        .whiten_ascending = true,
        .target = 94.0f,
        .target_note = "airbench94_muon's 94.01% mean on the original CIFAR-10 (n=200); the JPEG copy in "
                       "shared/data scores lower (docs/recipes.md)",
    },
    {
        /* hiverge/cifar10-speedrun cifar10_speedrun.py (commit 5cd49b1; 94.01% mean over 200 runs
         * in 2.015 s on an A100, logs of 2025-09-26): main(): batch 1536, total_train_steps =
         * ceil(7.59 * 32) = 243, whiten_bias_train_steps = ceil(0.19 * 32) = 7, the loss summed
         * with label smoothing 0.09; SGD(momentum 0.825, nesterov) on the whitening bias (lr
         * 0.0573, its own decay over 7 steps, detached after), the batch-norm biases (0.0573) and
         * the head (0.5415), each weight_decay = wd / lr, wd = 1.0418e-6 * batch; its batched Muon
         * (lr 0.205, momentum 0.655, nesterov, weight_decay wd applied after the step as p *= 1 -
         * lr * wd) on the filters: Newton-Schulz (3.4576, -4.7391, 2.0843) on X = G * t / (||G|| +
         * 1e-5), then X / (||X|| + 1e-5), t from 0.5012 to 0.0786 over the run; the filters
         * renormalised to sqrt(K) / (||p|| + 1e-7) only every 2 + int(15 * progress) steps; every
         * rate times (1 - step / 243). Network: SiLU in the conv groups, batch norm momentum 1 -
         * 0.5566, eps 1e-12; whitening from 960 images (svd: descending). Augmentation: airbench's
         * flips and translation, then brightness +-0.1399 and contrast 1 +- 0.1308 per image and
         * epoch. Final evaluation on the clock: a plain pass, then the int(0.25 N) least
         * confident images get the mean of the six views (batches of 2000). fp16 and
         * torch.compile in the source, fp32 here (docs/recipes.md). */
        .name = "cifar10-speedrun",
        .description = "the CIFAR-10 speedrun record (hiverge, 2025): batched Muon, SiLU, batch 1536, 7.59 epochs, "
                       "jitter, selective TTA; 94% in 2.015 s on an A100",
        .model = "cifar10-speedrun",
        .dataset = "cifar10",
        .batch = 1536,
        .epochs = 8,
        .train_epochs = 7.59f,
        .lr_knots = 2,
        .lr_knots_in_run = true,
        .lr_epochs = {0.0f, 1.0f},
        .lr_values = {1.0f, 0.0f},
        .momentum = 0.825f,
        .nesterov = true,
        .weight_decay = 1.0418e-6f,
        .loss_summed = true,
        .lr_per_step = true,
        .label_smoothing = 0.09f,
        .group_count = 4,
        .groups = {{.name = "filters", .lr_scale = 0.205f, .weight_decay_scale = 1.0f, .muon = true},
                   {.name = "whiten_bias", .lr_scale = 0.0573f, .weight_decay_scale = 1.0f / 0.0573f,
                    .until_epoch = 0.19f, .own_decay = true},
                   {.name = "norm_biases", .lr_scale = 0.0573f, .weight_decay_scale = 1.0f / 0.0573f},
                   {.name = "head", .lr_scale = 0.5415f, .weight_decay_scale = 1.0f / 0.5415f}},
        .muon = {.momentum = 0.655f, .nesterov = true, .ns_steps = 3, .ns_a = 3.4576f, .ns_b = -4.7391f,
                 .ns_c = 2.0843f, .ns_eps = 1e-5f, .ns_target = 0.5012f, .ns_target_end = 0.0786f, .ns_pre_eps = 1e-5f,
                 .renorm_every = 0, .renorm_eps = 1e-7f, .weight_decay = 1.0418e-6f},
        .bn = {.eps = 1e-12f, .momentum = 0.4434f},   /* torch momentum 1 - 0.5566 */
        .augment = {.train = true, .pad = 2, .flip = true, .flip_alternating = true, .cutout = 0,
                    .mean = {0.4914f, 0.4822f, 0.4465f}, .std = {0.247f, 0.2435f, 0.2616f},
                    .brightness = 0.1399f, .contrast = 0.1308f},
        .tta_level = 3,
        .tta_select = {.fraction = 0.25f},
        .eval_batch = 2000,
        .fixed_budget = true,
        .whiten_images = 960,
        .target = 94.0f,
        .target_note = "cifar10-speedrun's 94.01% mean on the original CIFAR-10 (n=200); the JPEG copy in "
                       "shared/data scores lower (docs/recipes.md)",
    },
    /* The seed CIFAR-10 entries' recipes: docs/models.md gives each source line by line. */
    {
        /* fastai/imagenet-fast cifar10/dawn_submission/README.md: dawn_mod.py -a wrn_22 -b 128 on
         * 8 GPUs (a mean loss over 1024 images per step), --cycle-len 50, --wd 2e-4, --lr 1.3,
         * --use-clr 50,15,0.95,0.85: fastai 0.7's CircularLR_beta, lr/50 -> lr over 42.5% of the
         * cycle, back to lr/50 over 42.5%, then to lr/5000 over the last 15%, with the momentum
         * 0.95 -> 0.85 -> 0.95 then 0.95 (one step ahead, as its callback computes it); SGD, coupled
         * weight decay. Not followed (docs/models.md): ColorJitter(.25, .25, .25) and
         * RandomRotation(2), and batch norm over each GPU's 128 images (here over the whole 1024). */
        .name = "cifar10-wrn22",
        .description = "fast.ai's DAWNBench entry: Wide ResNet-22 (k = 6), batch 1024, 50-epoch 1-cycle with cycled "
                       "momentum, SGD",
        .model = "wrn22",
        .dataset = "cifar10",
        .batch = 1024,
        .epochs = 50,
        .schedule = DBK_SCHEDULE_FASTAI_CLR_BETA,
        .clr = {.lr = 1.3f, .div = 50.0f, .pct = 15.0f, .mom_max = 0.95f, .mom_min = 0.85f},
        .momentum = 0.9f,   /* fastai's SGD_Momentum(0.9); CircularLR_beta sets it every step */
        .weight_decay = 2e-4f,
        .bn = {.eps = 1e-5f, .momentum = 0.1f},
        .augment = {.train = true, .pad = 4, .flip = true, .cutout = 0, .mean = FASTAI_MEAN, .std = FASTAI_STD},
        .target = 94.0f,
        .target_note = "DAWNBench CIFAR-10 target; fast.ai's entry reached it with this network (original data)",
    },
    {
        /* cedrickchee/dawnbench-analysis src/cifar10_custom_wrn_adamw.ipynb (after sgugger's
         * Adam-experiments): fastai 0.7's wrn_22 (fastai/models/cifar10/wideresnet.py: model
         * wrn22-fastai), bs 128, Adam with wd_loss=False (decoupled: p -= lr*wd*p, then the Adam
         * step) wd 0.1, beta2 0.99, fit_opt_sched over three TrainingPhases of 18 * (1 - 0.075) / 2,
         * the same, and 18 * 0.075 epochs: lr 3e-4 -> 3e-3 and beta1 0.95 -> 0.85, lr 3e-3 -> 3e-4
         * and beta1 0.85 -> 0.95, lr 3e-4 -> 3e-6 at beta1 0.95, each linear per step. */
        .name = "cifar10-wrn22-adamw",
        .description = "the AdamW variant of fast.ai's Wide ResNet-22 (cedrickchee/dawnbench-analysis, fastai 0.7's "
                       "wrn_22): batch 128, 18 epochs, cycled beta1, decoupled weight decay 0.1",
        .model = "wrn22-fastai",
        .dataset = "cifar10",
        .batch = 128,
        .epochs = 18,
        .schedule = DBK_SCHEDULE_FASTAI_PHASES,
        .phase_count = 3,
        .phases = {{18.0 * (1 - 0.075) / 2, 3e-4, 3e-3, 0.95, 0.85},
                   {18.0 * (1 - 0.075) / 2, 3e-3, 3e-4, 0.85, 0.95},
                   {18.0 * 0.075, 3e-4, 3e-6, 0.95, 0.95}},
        .optimizer = DBK_OPTIMIZER_ADAMW,
        .adam_beta1 = 0.95f,
        .adam_beta2 = 0.99f,
        .adam_eps = 1e-8f,
        .weight_decay = 0.1f,
        .bn = {.eps = 1e-5f, .momentum = 0.1f},
        .augment = {.train = true, .pad = 4, .flip = true, .cutout = 0, .mean = FASTAI_MEAN, .std = FASTAI_STD},
        .target = 93.76f,
        .target_note = "the source notebook's own result after 18 epochs, one run on the original data (94.25% with "
                       "fastai's TTA, which daybreak does not run); DAWNBench's 94% is above it",
    },
    {
        /* bkj/basenet examples/cifar/cifar10.py (Ben Johnson's DAWNBench ResNet-18): batch 128,
         * SGD nesterov 0.9, wd 5e-4, mean loss, HPSchedule.one_cycle(hp_max=0.1, epochs=30,
         * extra=5): 0 -> 0.1 (epoch 15) -> 0.005 (30) -> 0 (35), then 0.0005 for the 5 burnout
         * epochs; reflect-pad 4, crop, flip. */
        .name = "cifar10-resnet18",
        .description = "the DAWNBench pre-activation ResNet-18 for CIFAR (bkj/basenet): batch 128, 40 epochs, "
                       "one-cycle lr 0.1",
        .model = "resnet18-cifar",
        .dataset = "cifar10",
        .batch = 128,
        .epochs = 40,
        .lr_knots = 6,
        .lr_epochs = {0.0f, 15.0f, 30.0f, 35.0f, 35.0f, 40.0f},
        .lr_values = {0.0f, 0.1f, 0.005f, 0.0f, 0.0005f, 0.0005f},
        .momentum = 0.9f,
        .weight_decay = 5e-4f,
        .nesterov = true,
        .bn = {.eps = 1e-5f, .momentum = 0.1f},
        .augment = {.train = true, .pad = 4, .flip = true, .cutout = 0, .mean = CIFAR_MEAN, .std = CIFAR_STD},
        .target = 94.0f,
        .target_note = "DAWNBench CIFAR-10 target (original data)",
    },
    {
        /* sands-lab/layer-wise-aaai20 CIFAR10/dawn.py with --network Alexnet1 (alexnet.py's
         * AlexNet) and its defaults: --world_size 2 workers, each shuffling and reading the whole
         * training set every epoch (no DistributedSampler) in batches of 512 (drop_last: 97 steps),
         * their summed-loss gradients averaged (all_reduce / world_size); --momentum 0.0, plain
         * SGD; cifar10-fast's schedule PiecewiseLinear([0, 5, 24], [0, 0.4, 0]) / 512 read after
         * TorchOptimiser.step counts the step (step/97 with step 1-based), wd 5e-4 * 512, crop +
         * flip + 8x8 cutout. One process here: batch 1024 = both workers' 512 rows side by side
         * (two passes per epoch), lr / 1024 on the sum of 1024 losses = lr / 512 on the average
         * of the two sums, wd 5e-4 * 1024 with it the same decay per step. */
        .name = "cifar10-alexnet",
        .description = "AlexNet for CIFAR as the compressed-gradient study trains it (sands-lab/layer-wise-aaai20): "
                       "2 workers x 512, 24 epochs of two passes, plain SGD",
        .model = "alexnet-cifar",
        .dataset = "cifar10",
        .batch = 1024,
        .passes_per_epoch = 2,
        .epochs = 24,
        .lr_knots = 3,
        .lr_epochs = {0.0f, 5.0f, 24.0f},
        .lr_values = {0.0f, 0.4f, 0.0f},
        .lr_at_step_end = true,
        .momentum = 0.0f,
        .weight_decay = 5e-4f,
        .nesterov = false,
        .loss_summed = true,
        .bn = {.eps = 1e-5f, .momentum = 0.1f},
        .augment = {.train = true, .pad = 4, .flip = true, .cutout = 8, .mean = CIFAR_MEAN, .std = CIFAR_STD},
        .target = 80.0f,
        .target_note = "the study publishes no accuracy for this AlexNet; 80% is a bar, not a measured figure",
    },
    {
        /* fastai/fastai courses/dl2/cifar10-darknet.ipynb: Darknet([1, 2, 4, 6, 3], nf=32), bs 256,
         * lr 1.3, wd 1e-4, learn.fit(lr, 1, cycle_len=30, use_clr_beta=(20, 20, 0.95, 0.85)):
         * fastai 0.7's CircularLR_beta, lr/20 -> lr over 40% of the cycle, back over 40%, then to
         * lr/2000 over the last 20%, with the momentum 0.95 -> 0.85 -> 0.95 then 0.95 (as
         * cifar10-wrn22); SGD, coupled weight decay, mean loss, BatchNorm momentum 0.01, pad 4 +
         * crop + flip. 94.27% after 30 epochs in the notebook. */
        .name = "cifar10-darknet",
        .description = "fast.ai's DarkNet for CIFAR-10 (course dl2): batch 256, 30-epoch 1-cycle to lr 1.3 with "
                       "cycled momentum",
        .model = "darknet-cifar",
        .dataset = "cifar10",
        .batch = 256,
        .epochs = 30,
        .schedule = DBK_SCHEDULE_FASTAI_CLR_BETA,
        .clr = {.lr = 1.3f, .div = 20.0f, .pct = 20.0f, .mom_max = 0.95f, .mom_min = 0.85f},
        .momentum = 0.9f,   /* fastai's SGD_Momentum(0.9); CircularLR_beta sets it every step */
        .weight_decay = 1e-4f,
        .bn = {.eps = 1e-5f, .momentum = 0.01f},
        .augment = {.train = true, .pad = 4, .flip = true, .cutout = 0, .mean = FASTAI_MEAN, .std = FASTAI_STD},
        .target = 94.0f,
        .target_note = "DAWNBench CIFAR-10 target; the course notebook reached 94.27% (original data)",
    },
    /* FISH (Sung, Nair and Raffel, NeurIPS 2021), github.com/varunnair18/FISH cifar10-fast/:
     * su_dawn.py and asgd_dawn.py with the scripts' arguments (docs/sparse-masks.md says what
     * differs: the scripts leave --model_name at its default resnet34, these train ResNet9;
     * their learning-rate sweep is --lr). Both: batch 512, PiecewiseLinear([0, 5, epochs],
     * [0, lr, 0]) per step, lr 0.4, SGD Nesterov momentum 0.9, weight decay 5e-4 x batch on the
     * summed loss, crop + flip + 8x8 cutout, no label smoothing. */
    {
        /* scripts/small_checkpoints_fish.sh (Table 4): num_samples 1024, epochs 100, keep_ratio
         * swept 0.005 / 0.02 / 0.1, the mask recomputed every epoch or fixed (--fix-mask). */
        .name = "fish-small-checkpoints",
        .description = "FISH small checkpoints (Table 4): ResNet9, 100 epochs, Fisher mask 0.5% of 1024 images, "
                       "recomputed every epoch",
        .model = "resnet9",
        .dataset = "cifar10",
        .batch = 512,
        .epochs = 100,
        .lr_knots = 3,
        .lr_epochs = {0.0f, 5.0f, 100.0f},
        .lr_values = {0.0f, 0.4f, 0.0f},
        .momentum = 0.9f,
        .weight_decay = 5e-4f,
        .nesterov = true,
        .loss_summed = true,
        .bn = {.eps = 1e-5f, .momentum = 0.1f},
        .augment = {.train = true, .pad = 4, .flip = true, .cutout = 8, .mean = CIFAR_MEAN, .std = CIFAR_STD},
        .target = 94.0f,
        .target_note = "DAWNBench CIFAR-10 target; FISH's logs reach 86.37% at 0.5%, 92.51% at 2%, 94.42% at 10% "
                       "in 100 epochs with the recomputed mask (original data)",
        .sparse_mask = "fisher:0.005",
        .mask_samples = 1024,
    },
    {
        /* scripts/distributed_training_fish.sh (Table 3): 2 workers (split 2), num_samples 256,
         * epochs 50, warmup_epoch 5 (dense model averaging first), --same_mask, merge_steps swept
         * (run_table_3.sh: 100, 500, 2500; the published logs: 10, 30, 100). */
        .name = "fish-distributed",
        .description = "FISH distributed training (Table 3): ResNet9, 50 epochs, model averaging every 100 steps, "
                       "Fisher mask 0.5% of 256 images after 5 dense epochs",
        .model = "resnet9",
        .dataset = "cifar10",
        .batch = 512,
        .epochs = 50,
        .lr_knots = 3,
        .lr_epochs = {0.0f, 5.0f, 50.0f},
        .lr_values = {0.0f, 0.4f, 0.0f},
        .momentum = 0.9f,
        .weight_decay = 5e-4f,
        .nesterov = true,
        .loss_summed = true,
        .bn = {.eps = 1e-5f, .momentum = 0.1f},
        .augment = {.train = true, .pad = 4, .flip = true, .cutout = 8, .mean = CIFAR_MEAN, .std = CIFAR_STD},
        .target = 94.0f,
        .target_note = "DAWNBench CIFAR-10 target; FISH's logs reach 84.84% (merge every 10 steps) to 65.38% "
                       "(every 100) at 0.5% in 50 epochs (original data)",
        .sparse_mask = "fisher:0.005",
        .mask_samples = 256,
        .mask_warmup = 5,
        .mask_same = true,
        .local_steps = 100,
    },
    {
        /* The quick variant of fish-small-checkpoints for a 2-core CPU: quick's network and schedule. */
        .name = "fish-quick",
        .description = "short FISH small-checkpoint run: quarter-width ResNet9, 8 epochs, Fisher mask 2% of 256 images",
        .model = "resnet9-quarter",
        .dataset = "cifar10",
        .batch = 256,
        .epochs = 8,
        .lr_knots = 3,
        .lr_epochs = {0.0f, 2.0f, 8.0f},
        .lr_values = {0.0f, 0.4f, 0.0f},
        .momentum = 0.9f,
        .weight_decay = 5e-4f,
        .nesterov = true,
        .loss_summed = true,
        .bn = {.eps = 1e-5f, .momentum = 0.1f},
        .augment = {.train = true, .pad = 4, .flip = true, .cutout = 8, .mean = CIFAR_MEAN, .std = CIFAR_STD},
        .target = 60.0f,
        .target_note = "a bar, not a measured figure: docs/sparse-masks.md has the measured runs",
        .sparse_mask = "fisher:0.02",
        .mask_samples = 256,
    },
    {
        /* The quick variant of fish-distributed: quick's network, 8 epochs, one dense epoch,
         * averaging every 30 steps. */
        .name = "fish-distributed-quick",
        .description = "short FISH distributed run: quarter-width ResNet9, 8 epochs, averaging every 30 steps, "
                       "Fisher mask 2% of 256 images after 1 dense epoch",
        .model = "resnet9-quarter",
        .dataset = "cifar10",
        .batch = 256,
        .epochs = 8,
        .lr_knots = 3,
        .lr_epochs = {0.0f, 2.0f, 8.0f},
        .lr_values = {0.0f, 0.4f, 0.0f},
        .momentum = 0.9f,
        .weight_decay = 5e-4f,
        .nesterov = true,
        .loss_summed = true,
        .bn = {.eps = 1e-5f, .momentum = 0.1f},
        .augment = {.train = true, .pad = 4, .flip = true, .cutout = 8, .mean = CIFAR_MEAN, .std = CIFAR_STD},
        .target = 60.0f,
        .target_note = "a bar, not a measured figure: docs/sparse-masks.md has the measured runs",
        .sparse_mask = "fisher:0.02",
        .mask_samples = 256,
        .mask_warmup = 1,
        .local_steps = 30,
    },
    {
        /* A short schedule for the 3,000-image Imagenette subset, small enough for
         * a 2-core CPU: 32-pixel random-resized crops (min area 0.35, fast.ai's small-image
         * setting), batch 32, two epochs, a linear warm-up over half an epoch then decay to 0,
         * label smoothing 0.1. docs/measurements/imagenet.md has its measured accuracy; the target is the bar
         * that run cleared. */
        .name = "imagenette-resnet18",
        .description = "ResNet-18 on the Imagenette subset (imagenette2-224-mini): 32x32 crops, batch 32, 2 epochs",
        .model = "resnet18",
        .dataset = "imagenette",
        .batch = 32,
        .epochs = 2,
        .lr_knots = 3,
        .lr_epochs = {0.0f, 0.5f, 2.0f},
        .lr_values = {0.01f, 0.1f, 0.0f},
        .momentum = 0.9f,
        .weight_decay = 5e-5f,
        .nesterov = true,
        .label_smoothing = 0.1f,
        .bn = {.eps = 1e-5f, .momentum = 0.1f},
        .augment = {.train = true, .flip = true, .mean = IMAGENET_MEAN, .std = IMAGENET_STD},
        .image_size = 32,
        .min_scale = 0.35f,
        .target_top5 = false,
        .target = IMAGENETTE_TARGET,
        .target_note = "measured: seeds 0-2 on the CPU backend and PoCL ended at 21.60-27.30% top-1, "
                       "69.20-72.10% top-5 (docs/imagenet.md)",
    },
    {
        /* fast.ai's DAWNBench ImageNet entry, one machine (8 GPUs): cybertronai/imagenet18_old
         * train.py's one_machine phases with training/train_imagenet_nv.py (the flags
         * --init-bn0 --no-bn-wd, SGD momentum 0.9, weight decay 1e-4, plain cross-entropy) and
         * training/resnet.py's ResNet-50 (model resnet50: kaiming-normal fan-out convolutions,
         * zero-initialised last batch norm of each block, N(0, 0.01) final layer, no weight decay
         * on batch norm: group "bn"). Phases, lr per 8 x bs images: 128 px at bs 512, lr 1 -> 2
         * over epochs 0-7 and 2 -> 1/4 over 7-13; 224 px at bs 224 from 13 (min area 0.087), lr
         * (1 -> 1/10) * 224/512 over 13-22 and on to 1/100 by 25; 288 px at bs 128 from 25 (min
         * area 0.5), lr (1/100 -> 1/1000) * 128/512 over 25-28. Its batch changes with the size,
         * daybreak's does not: the source scales lr with its batch (bs_scale), so the rate per
         * image is lr / 4096 throughout, here at batch 256: 1/16 of the table's, and with --batch
         * B the rates scale by B / 256 (lr_reference_batch). Its Scheduler reads the rate after
         * counting the batch (batch_curr = i + 1): lr_at_step_end. */
        .name = "imagenet-resnet50",
        .description = "ResNet-50 v1.5 on ImageNet as fast.ai's DAWNBench entry trained it (imagenet18 one_machine "
                       "phases): 28 epochs at 128 -> 224 -> 288, 93% top-5",
        .model = "resnet50",
        .dataset = "imagenet",
        .batch = 256,
        .lr_reference_batch = 256,
        .epochs = 28,
        .lr_knots = 7,
        .lr_epochs = {0.0f, 7.0f, 13.0f, 13.0f, 22.0f, 25.0f, 28.0f},
        .lr_values = {1.0f / 16, 2.0f / 16, 0.25f / 16, 1.0f / 16, 0.1f / 16, 0.01f / 16, 0.001f / 16},
        .lr_at_step_end = true,
        .momentum = 0.9f,
        .weight_decay = 1e-4f,
        .nesterov = false,
        .label_smoothing = 0.0f,
        .group_count = 1,
        .groups = {{.name = "bn", .lr_scale = 1.0f, .weight_decay_scale = 0.0f}},
        .bn = {.eps = 1e-5f, .momentum = 0.1f},
        .augment = {.train = true, .flip = true, .mean = IMAGENET_MEAN, .std = IMAGENET_STD},
        .image_size = 288,   /* the last phase's: what eval and infer use */
        .size_phase_count = 3,
        .size_phases = {{0, 128, 0.08f}, {13, 224, 0.087f}, {25, 288, 0.5f}},
        .min_scale = 0.08f,
        .target_top5 = true,
        .target = 93.0f,
        .target_note = "DAWNBench ImageNet target: 93% top-5 on the 50,000 validation images",
    },
};

const char *dbk_optimizer_name(dbk_optimizer o) { return o == DBK_OPTIMIZER_ADAMW ? "adamw" : "sgd"; }

int dbk_recipe_count(void) { return (int)(sizeof recipes / sizeof recipes[0]); }
const dbk_recipe *dbk_recipe_at(int i) { return &recipes[i]; }
const char *dbk_recipe_default_name(void) { return "quick"; }

dbk_status dbk_recipe_find(const char *name, const dbk_recipe **out) {
    for (int i = 0; i < dbk_recipe_count(); i++) {
        if (!strcmp(recipes[i].name, name)) {
            *out = &recipes[i];
            return DBK_OK;
        }
    }
    char known[512] = "";
    for (int i = 0; i < dbk_recipe_count(); i++) {
        strncat(known, i ? ", " : "", sizeof known - strlen(known) - 1);
        strncat(known, recipes[i].name, sizeof known - strlen(known) - 1);
    }
    return dbk_set_error(DBK_ERR_NOT_FOUND, "unknown recipe '%s' (known: %s)", name, known);
}

/* Knots placed as fractions of the run (lr_knots_in_run) already follow it. */
void dbk_recipe_set_epochs(dbk_recipe *r, int epochs) {
    if (epochs == r->epochs) return;
    if (r->train_epochs > 0.0f) r->train_epochs *= (float)epochs / (float)r->epochs;
    float last = r->lr_epochs[r->lr_knots - 1];
    if (!r->lr_knots_in_run && last > 0.0f)
        for (int i = 0; i < r->lr_knots; i++) r->lr_epochs[i] *= (float)epochs / last;
    int n = 0;
    for (int i = 0; i < r->size_phase_count; i++) {
        dbk_size_phase p = r->size_phases[i];
        p.first_epoch = (int)((double)p.first_epoch * epochs / r->epochs + 0.5);
        if (n > 0 && p.first_epoch <= r->size_phases[n - 1].first_epoch) n--;
        r->size_phases[n++] = p;
    }
    r->size_phase_count = n;
    r->epochs = epochs;
}

void dbk_recipe_set_peak_lr(dbk_recipe *r, float peak) {
    if (r->schedule == DBK_SCHEDULE_FASTAI_CLR_BETA) { /* the cycle's top is its lr */
        if (r->clr.lr > 0.0f) r->clr.lr = peak;
        return;
    }
    if (r->schedule == DBK_SCHEDULE_FASTAI_PHASES) {
        double top = 0.0;
        for (int i = 0; i < r->phase_count; i++) top = fmax(top, fmax(r->phases[i].lr0, r->phases[i].lr1));
        if (top <= 0.0) return;
        for (int i = 0; i < r->phase_count; i++) {
            r->phases[i].lr0 = r->phases[i].lr0 / top * (double)peak;
            r->phases[i].lr1 = r->phases[i].lr1 / top * (double)peak;
        }
        return;
    }
    float top = 0.0f;
    for (int i = 0; i < r->lr_knots; i++)
        if (r->lr_values[i] > top) top = r->lr_values[i];
    if (top <= 0.0f) return;
    for (int i = 0; i < r->lr_knots; i++) r->lr_values[i] = r->lr_values[i] / top * peak;
}

float dbk_recipe_lr(const dbk_recipe *r, double epoch) {
    const int n = r->lr_knots;
    if (n <= 0) return 0.0f;
    if (epoch <= (double)r->lr_epochs[0]) return r->lr_values[0];
    for (int i = 1; i < n; i++) {
        double e0 = (double)r->lr_epochs[i - 1], e1 = (double)r->lr_epochs[i];
        double v0 = (double)r->lr_values[i - 1], v1 = (double)r->lr_values[i];
        if (epoch <= e1) {
            double t = (epoch - e0) / (e1 - e0);
            return (float)(v0 + t * (v1 - v0));
        }
    }
    return r->lr_values[n - 1];
}

long dbk_recipe_total_steps(const dbk_recipe *r, int steps_per_epoch) {
    const double epochs = r->train_epochs > 0.0f ? (double)r->train_epochs : (double)r->epochs;
    return (long)ceil((double)steps_per_epoch * epochs);
}

/* ---------------------------------------------------------------------------------- */
/* fastai 0.7 schedules                                                               */

/* CircularLR_beta's cycle_nb = int(nb * (1 - pct/100) / 2), in doubles as Python. */
static long clr_cycle_nb(const dbk_clr_schedule *c, long nb) {
    return (long)((double)nb * (1.0 - (double)c->pct / 100.0) / 2.0);
}

/* CircularLR_beta.calc_lr at cycle position i of nb. */
static double clr_lr(const dbk_clr_schedule *c, long i, long nb) {
    const long cn = clr_cycle_nb(c, nb);
    const double lr = c->lr, div = c->div;
    if (i > 2 * cn) {
        const double pct = (double)(i - 2 * cn) / (double)(nb - 2 * cn);
        return lr * (1.0 + (pct * (1.0 - 100.0) / 100.0)) / div;
    }
    const double pct = i > cn ? 1.0 - (double)(i - cn) / (double)cn : (double)i / (double)cn;
    return lr * (1.0 + pct * (div - 1.0)) / div;
}

/* CircularLR_beta.calc_mom at cycle position i of nb. */
static double clr_mom(const dbk_clr_schedule *c, long i, long nb) {
    const long cn = clr_cycle_nb(c, nb);
    if (i > 2 * cn) return c->mom_max;
    const double pct = i > cn ? 1.0 - (double)(i - cn) / (double)cn : (double)i / (double)cn;
    return (double)c->mom_max + pct * ((double)c->mom_min - (double)c->mom_max);
}

/* fit_opt_sched: the phase of global step `step` and the step's index j inside it. Phase p
 * ends after batch ceil(cnt[p]), cnt the cumulative sum of epochs * steps per epoch (fastai
 * switches after the first batch_num >= cnt[p]). */
static int phase_of(const dbk_recipe *r, long step, int steps_per_epoch, long *j) {
    double cnt = 0.0;
    long first = 0;
    for (int p = 0; p < r->phase_count; p++) {
        cnt += r->phases[p].epochs * steps_per_epoch;
        const long end = (long)ceil(cnt);
        if (step < end || p == r->phase_count - 1) {
            *j = step - first;
            return p;
        }
        first = end;
    }
    *j = 0;
    return 0;
}

/* DecayScheduler(LINEAR, nb_batches * epochs, start, end) after j next_val()s. */
static double phase_value(double start, double end, long j, double nb) { return start + (double)j / nb * (end - start); }

static double fastai_lr(const dbk_recipe *r, long step, int steps_per_epoch, long total_steps) {
    if (r->schedule == DBK_SCHEDULE_FASTAI_CLR_BETA) return clr_lr(&r->clr, step % total_steps, total_steps);
    long j;
    const dbk_fastai_phase *ph = &r->phases[phase_of(r, step, steps_per_epoch, &j)];
    return phase_value(ph->lr0, ph->lr1, j, ph->epochs * steps_per_epoch);
}

float dbk_recipe_momentum_at_step(const dbk_recipe *r, long step, int steps_per_epoch, long total_steps) {
    if (r->schedule == DBK_SCHEDULE_FASTAI_CLR_BETA) {
        const long next = (step % total_steps) + 1; /* calc_mom runs after calc_lr advanced the position */
        return (float)clr_mom(&r->clr, next == total_steps ? 0 : next, total_steps);
    }
    if (r->schedule == DBK_SCHEDULE_FASTAI_PHASES) {
        long j;
        const dbk_fastai_phase *ph = &r->phases[phase_of(r, step, steps_per_epoch, &j)];
        return (float)phase_value(ph->mom0, ph->mom1, j, ph->epochs * steps_per_epoch);
    }
    return r->optimizer == DBK_OPTIMIZER_ADAMW ? r->adam_beta1 : r->momentum;
}

bool dbk_recipe_momentum_scheduled(const dbk_recipe *r) { return r->schedule != DBK_SCHEDULE_KNOTS; }

/* ---------------------------------------------------------------------------------- */
/* parameter groups                                                                   */

dbk_recipe_group dbk_recipe_group_rule(const dbk_recipe *r, const char *group) {
    for (int i = 0; i < r->group_count; i++)
        if (!strcmp(r->groups[i].name, group)) return r->groups[i];
    return (dbk_recipe_group){.name = group, .lr_scale = 1.0f, .weight_decay_scale = 1.0f};
}

long dbk_recipe_group_until_step(const dbk_recipe_group *g, int steps_per_epoch) {
    if (g->until_epoch <= 0.0f) return -1;
    /* The source's ceil(until * len(loader)) in doubles; a float until (0.19f) is within 1e-6
     * of the source's decimal, so a product that close to a whole number is that number. */
    const double x = (double)g->until_epoch * (double)steps_per_epoch, whole = round(x);
    return (long)(fabs(x - whole) < 1e-4 ? whole : ceil(x));
}

dbk_group_step dbk_recipe_group_step(const dbk_recipe *r, const dbk_recipe_group *g, int batch, double schedule_lr,
                                     long run_step, int steps_per_epoch) {
    const bool adamw = r->optimizer == DBK_OPTIMIZER_ADAMW && !g->muon;
    /* A summed loss divides the per-example rate by the batch, unless the rate is already the
     * step's (lr_per_step) or the optimizer ignores the loss's scale (AdamW, Muon). */
    const bool per_example = r->loss_summed && !r->lr_per_step && !adamw && !g->muon;
    dbk_group_step st = {.grad_scale = r->loss_summed ? 1.0f : 1.0f / (float)batch};
    double lr = schedule_lr * (double)g->lr_scale;
    if (r->lr_reference_batch > 0) lr *= (double)batch / (double)r->lr_reference_batch;
    const long until = dbk_recipe_group_until_step(g, steps_per_epoch);
    if (until >= 0 && g->own_decay) lr = (double)g->lr_scale * (1.0 - (double)run_step / (double)until);
    if (until >= 0 && run_step >= until) lr = 0.0;
    st.lr = (float)(per_example ? lr / batch : lr);
    if (g->muon) st.weight_decay = r->muon.weight_decay * (float)batch; /* decoupled, per example */
    else if (adamw) st.weight_decay = r->weight_decay * g->weight_decay_scale;
    else st.weight_decay = (r->loss_summed ? r->weight_decay * (float)batch : r->weight_decay) * g->weight_decay_scale;
    return st;
}

bool dbk_recipe_muon_renorm_at(const dbk_recipe *r, long step, long total_steps) {
    if (r->muon.renorm_every > 0) return step % r->muon.renorm_every == 0;
    long last = 0;
    bool renorm = false;
    for (long count = 1; count <= step + 1; count++) { /* the source's state, replayed */
        const long freq = 2 + (long)(15.0 * ((double)count / (double)total_steps));
        renorm = count - last >= freq;
        if (renorm) last = count;
    }
    return renorm;
}

float dbk_recipe_muon_ns_target(const dbk_recipe *r, long step, long total_steps) {
    if (r->muon.ns_target <= 0.0f) return 1.0f;
    const double pr = (double)(step + 1) / (double)(total_steps > 1 ? total_steps : 1);
    return (float)((double)r->muon.ns_target * (1.0 - pr) + (double)r->muon.ns_target_end * pr);
}

float dbk_recipe_lr_at_step(const dbk_recipe *r, long step, int steps_per_epoch, long total_steps) {
    if (r->schedule != DBK_SCHEDULE_KNOTS) return (float)fastai_lr(r, step, steps_per_epoch, total_steps);
    if (!r->lr_knots_in_run) { /* whole epochs plus the fraction, as the epoch loop counts them */
        const long s = step + (r->lr_at_step_end ? 1 : 0);
        return dbk_recipe_lr(r, (double)(s / steps_per_epoch) + (double)(s % steps_per_epoch) / steps_per_epoch);
    }
    const int n = r->lr_knots;
    if (n <= 0) return 0.0f;
    long k0 = (long)((double)r->lr_epochs[0] * (double)total_steps);
    if (step <= k0) return r->lr_values[0];
    for (int i = 1; i < n; i++) {
        long k1 = (long)((double)r->lr_epochs[i] * (double)total_steps);
        if (step <= k1 && k1 > k0) {
            double t = (double)(step - k0) / (double)(k1 - k0);
            return (float)((double)r->lr_values[i - 1] * (1.0 - t) + (double)r->lr_values[i] * t);
        }
        k0 = k1;
    }
    return r->lr_values[n - 1];
}

float dbk_recipe_lookahead_decay(float base, float power, long run_step, long run_steps) {
    if (run_steps <= 0) return 1.0f;
    const float a = (float)run_step / (float)run_steps;
    return base * (power == 3.0f ? a * a * a : powf(a, power));
}

int dbk_tta_views(int level, const dbk_tta_view **views) {
    /* infer_mirror_translate: 0.5 * mirror(x) + 0.5 * mean(mirror(pad1[0:32, 0:32]), mirror(pad1[2:34, 2:34])),
     * mirror(v) = 0.5 * net(v) + 0.5 * net(v.flip(-1)); the crops are the translations (-1,-1), (+1,+1). */
    static const dbk_tta_view none[] = {{0, 0, false, 1.0f}};
    static const dbk_tta_view mirror[] = {{0, 0, false, 0.5f}, {0, 0, true, 0.5f}};
    static const dbk_tta_view mirror_translate[] = {
        {0, 0, false, 0.25f},    {0, 0, true, 0.25f},    {-1, -1, false, 0.125f},
        {-1, -1, true, 0.125f},  {1, 1, false, 0.125f},  {1, 1, true, 0.125f},
    };
    /* cifar10-speedrun's _get_tta_logits: the same six views, their logits' plain mean */
    static const dbk_tta_view six_mean[] = {
        {0, 0, false, 1.0f / 6.0f},   {-1, -1, false, 1.0f / 6.0f}, {1, 1, false, 1.0f / 6.0f},
        {0, 0, true, 1.0f / 6.0f},    {-1, -1, true, 1.0f / 6.0f},  {1, 1, true, 1.0f / 6.0f},
    };
    if (level <= 0) {
        *views = none;
        return 1;
    }
    if (level == 1) {
        *views = mirror;
        return 2;
    }
    *views = level >= 3 ? six_mean : mirror_translate;
    return 6;
}

int dbk_recipe_size_phase_at(const dbk_recipe *r, int epoch0) {
    int at = -1;
    for (int i = 0; i < r->size_phase_count; i++)
        if (epoch0 >= r->size_phases[i].first_epoch) at = i;
    return at;
}

int dbk_recipe_image_size_at(const dbk_recipe *r, int epoch0) {
    const int at = dbk_recipe_size_phase_at(r, epoch0);
    return at < 0 ? r->image_size : r->size_phases[at].size;
}

dbk_status dbk_recipe_parse_size_phases(const char *text, dbk_recipe *r) {
    dbk_size_phase phases[DBK_RECIPE_MAX_SIZE_PHASES];
    int n = 0;
    const char *p = text;
    while (*p) {
        if (n == DBK_RECIPE_MAX_SIZE_PHASES)
            return dbk_set_error(DBK_ERR_INVALID_ARG, "image sizes '%s': more than %d phases", text,
                                 DBK_RECIPE_MAX_SIZE_PHASES);
        char *end;
        const long epoch = strtol(p, &end, 10);
        if (end == p || *end != ':' || epoch < 0 || epoch > 1000)
            return dbk_set_error(DBK_ERR_INVALID_ARG, "image sizes '%s': phase %d is not EPOCH:SIZE (epoch 0..1000)",
                                 text, n + 1);
        const char *q = end + 1;
        const long size = strtol(q, &end, 10);
        if (end == q || (*end != ',' && *end != '\0') || size < 8 || size > 1024)
            return dbk_set_error(DBK_ERR_INVALID_ARG, "image sizes '%s': phase %d's size is not 8..1024 pixels", text,
                                 n + 1);
        if (n == 0 && epoch != 0)
            return dbk_set_error(DBK_ERR_INVALID_ARG, "image sizes '%s': the first phase must start at epoch 0", text);
        if (n > 0 && epoch <= phases[n - 1].first_epoch)
            return dbk_set_error(DBK_ERR_INVALID_ARG, "image sizes '%s': phase %d starts at epoch %ld, not after the "
                                 "previous phase's %d", text, n + 1, epoch, phases[n - 1].first_epoch);
        phases[n++] = (dbk_size_phase){.first_epoch = (int)epoch, .size = (int)size};
        p = *end == ',' ? end + 1 : end;
        if (*end == ',' && !*p) return dbk_set_error(DBK_ERR_INVALID_ARG, "image sizes '%s': ends with ','", text);
    }
    if (n == 0) return dbk_set_error(DBK_ERR_INVALID_ARG, "image sizes '': no phase");
    memcpy(r->size_phases, phases, (size_t)n * sizeof *phases);
    r->size_phase_count = n;
    r->image_size = phases[n - 1].size; /* what eval and infer use: the size the run ends at */
    return DBK_OK;
}

void dbk_recipe_format_size_phases(const dbk_recipe *r, char *out, size_t cap) {
    size_t len = 0;
    out[0] = '\0';
    for (int i = 0; i < r->size_phase_count && len < cap; i++)
        len += (size_t)snprintf(out + len, cap - len, "%s%d:%d", i ? "," : "", r->size_phases[i].first_epoch,
                                r->size_phases[i].size);
}
