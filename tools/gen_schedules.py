#!/usr/bin/env python3
"""gen_schedules.py — writes tests/data/golden_schedules.ckpt, the per-step optimizer values of
the recipes whose schedules were corrected against their sources, computed here by transcribing
each source's own scheduling code (tests/test_schedules.c checks daybreak's recipes against it).

For development only; Python 3 standard library, no PyTorch. Nothing in daybreak's build,
programs or tests runs it; the fixture it writes is committed.

    python3 tools/gen_schedules.py [--out tests/data/golden_schedules.ckpt]

For every step s (0-based) of a whole run of each case it stores, per parameter group:
  rate/<case>/<group>   what the optimizer applies to one example's loss gradient at step s:
                        the step's learning rate times the loss's scale (1 for a summed loss,
                        1/batch for a mean; a data-parallel average of W workers' losses adds
                        1/W); for AdamW the learning rate itself (its step ignores the scale);
  decay/<case>/<group>  the weight decay per example at step s: lr * weight_decay / batch for
                        SGD's coupled decay (so a run at another batch, with per-example rates
                        kept, decays as much per epoch), lr * wd for AdamW's decoupled decay;
and momentum/<case>: SGD's momentum, or AdamW's beta1, at step s. A group that no longer trains
has rate and decay 0.

Cases (name: source; batch; steps per epoch as daybreak runs it on the 50,000 CIFAR-10 images,
drop_last; the sources' own loaders keep the last partial batch, and imagenet is a parametric
100 steps per epoch: each schedule is a formula of the steps per epoch, evaluated here with
daybreak's):
  airbench94@1024, airbench94@128  KellerJordan/cifar10-airbench legacy/airbench94.py (commit
        1b8f7949): L352-L362 kilostep arithmetic, get_lr (L381-L389), groups L375-L379, whitening
        bias requires_grad off from epoch 3 (L410);
  imagenet-resnet50@256  cybertronai/imagenet18_old train.py one_machine phases and
        training/train_imagenet_nv.py's Scheduler (batch_curr = i + 1), --no-bn-wd, wd 1e-4,
        momentum 0.9; the phases' batches 8 x (512, 224, 128) and their lr scaling bs_scale;
  cifar10-wrn22@1024  fastai/imagenet-fast cifar10/dawn_submission (dawn_mod.py -b 128 on 8 GPUs,
        --cycle-len 50 --lr 1.3 --wd 2e-4 --use-clr 50,15,0.95,0.85): fastai 0.7's CircularLR_beta
        (old/fastai/sgdr.py), LR_Updater calling calc_lr then calc_mom after every batch;
  cifar10-wrn22-adamw@128  cedrickchee/dawnbench-analysis src/cifar10_custom_wrn_adamw.ipynb:
        three TrainingPhases through fastai 0.7's fit_opt_sched (DecayScheduler, phase switch at
        batch_num >= cnt_phases);
  cifar10-darknet@256  fastai/fastai courses/dl2/cifar10-darknet.ipynb: bs 256, lr 1.3, wd 1e-4,
        learn.fit(lr, 1, wds=wd, cycle_len=30, use_clr_beta=(20, 20, 0.95, 0.85)): CircularLR_beta
        as for wrn22, coupled weight decay, a mean loss;
  cifar10-alexnet@1024  sands-lab/layer-wise-aaai20 CIFAR10/dawn.py defaults: 2 workers x 512,
        TorchOptimiser (step_number += 1 before the lr), PiecewiseLinear([0, 5, 24], [0, 0.4, 0])
        / 512 on the summed loss, all_reduce / world_size, momentum 0, wd 5e-4 * 512;
  airbench94-muon@2000  KellerJordan/cifar10-airbench airbench94_muon.py main() (commit f1c599c);
  cifar10-speedrun@1536  hiverge/cifar10-speedrun cifar10_speedrun.py main() and Muon.step
        (commit 5cd49b1);
for these two also renorm/<case> (1 on the steps that renormalise the filters) and
ns_target/<case> (the Newton-Schulz input's target norm: speedrun's 0.5012 -> 0.0786, else 1);
their Muon group "filters" stores the lr itself as its rate and the decoupled lr * wd as decay.
"""
import argparse
import math
import os

from dbk_checkpoint import float_vector, write_checkpoint

TRAIN_IMAGES = 50000


# ---------------------------------------------------------------------------------------------
# airbench94 (legacy/airbench94.py)

def airbench94(batch):
    steps_per_epoch = TRAIN_IMAGES // batch               # L124, drop_last
    total_train_steps = math.ceil(steps_per_epoch * 9.9)  # L370
    momentum = 0.85
    kilostep_scale = 1024 * (1 + 1 / (1 - momentum))      # L359
    lr = 11.5 / kilostep_scale                            # L360
    wd = 0.0153 * batch / kilostep_scale                  # L361
    lr_biases = lr * 64.0                                 # L362

    warmup = int(total_train_steps * 0.23)                # L381-L389: 0.2 -> 1 over the warm-up, -> 0.07

    def factor(step):
        if step < warmup:
            return 0.2 + 0.8 * step / warmup
        return 1.0 - 0.93 * (step - warmup) / (total_train_steps - warmup)

    # L377-L378: dict(norm_biases, lr=lr_biases, weight_decay=wd/lr_biases), dict(others, lr=lr,
    # weight_decay=wd/lr); the summed loss (L422): scale 1. LambdaLR multiplies lr by get_lr.
    groups = {"": [], "norm_biases": [], "whiten_bias": []}
    for s in range(total_train_steps):
        f = factor(s)
        for name, base, decay in (("", lr, wd / lr), ("norm_biases", lr_biases, wd / lr_biases),
                                  ("whiten_bias", lr, wd / lr)):
            step_lr = base * f
            trains = name != "whiten_bias" or s // steps_per_epoch < 3   # L410
            groups[name].append((step_lr if trains else 0.0, step_lr * decay / batch if trains else 0.0))
    return steps_per_epoch, total_train_steps, groups, [momentum] * total_train_steps


# ---------------------------------------------------------------------------------------------
# imagenet18 one_machine (train.py, training/train_imagenet_nv.py)

# one_machine with lr = 1 and bs = [512, 224, 128] per GPU (8 GPUs), bs_scale = bs / 512: the
# linear lr phases (first epoch, last epoch, lr at the first, lr at the last) and the per-GPU
# batch from each epoch on.
IMAGENET18_LR = [(0, 7, 1.0, 2.0), (7, 13, 2.0, 0.25), (13, 22, 224 / 512, 224 / 512 / 10),
                 (22, 25, 224 / 512 / 10, 224 / 512 / 100), (25, 28, 128 / 512 / 100, 128 / 512 / 1000)]
IMAGENET18_BS = [(0, 512), (13, 224), (25, 128)]


def imagenet18(steps_per_epoch):
    def lr_of(epoch, batch_number):
        # the last phase starting at or before the epoch; within it the rate moves linearly over
        # its epochs' batches, read after counting the batch (its Scheduler gets i + 1)
        first, last, lr0, lr1 = [p for p in IMAGENET18_LR if p[0] <= epoch][-1]
        done = (epoch - first) * steps_per_epoch + batch_number
        return lr0 + done * (lr1 - lr0) / ((last - first) * steps_per_epoch)

    epochs = IMAGENET18_LR[-1][1]
    groups = {"": [], "bn": []}
    for epoch in range(epochs):
        gpu_batch = [b for e, b in IMAGENET18_BS if e <= epoch][-1]
        for i in range(steps_per_epoch):
            # a mean loss over 8 GPUs' batches; coupled wd 1e-4, none on batch norm (--no-bn-wd)
            per_example = lr_of(epoch, i + 1) / (8 * gpu_batch)
            groups[""].append((per_example, per_example * 1e-4))
            groups["bn"].append((per_example, 0.0))
    total = epochs * steps_per_epoch
    return steps_per_epoch, total, groups, [0.9] * total


# ---------------------------------------------------------------------------------------------
# fastai 0.7 (old/fastai/sgdr.py, old/fastai/model.py)

def clr_beta(nb, lr, div, pct, mom_max, mom_min):
    """use_clr_beta=(div, pct, mom_max, mom_min) over nb batches. fastai's callback sets the rate
    and momentum before the first batch and after every batch from a cycle position that it
    advances between computing the rate and the momentum: batch i runs with the rate of
    position i and the momentum of position i + 1 (0 again at the cycle's end)."""
    half = int(nb * (1 - pct / 100) / 2)

    def rise(p):            # 0 at the cycle's start, 1 at `half`, 0 again at 2 * half
        return p / half if p <= half else 1 - (p - half) / half

    def rate(p):
        if p > 2 * half:    # the tail: lr/div down to lr/div/100
            return lr / div * (1 - 0.99 * (p - 2 * half) / (nb - 2 * half))
        return lr / div * (1 + rise(p) * (div - 1))

    def momentum(p):
        return mom_max if p > 2 * half else mom_max + rise(p) * (mom_min - mom_max)

    return [rate(i) for i in range(nb)], [momentum((i + 1) % nb) for i in range(nb)]


def wrn22(batch=1024):
    steps_per_epoch = TRAIN_IMAGES // batch
    wd, nb = 2e-4, steps_per_epoch * 50                  # --cycle-len 50 --wd 2e-4
    lrs, moms = clr_beta(nb, 1.3, 50, 15, 0.95, 0.85)     # --lr 1.3 --use-clr 50,15,0.95,0.85
    # a mean loss over the 1024 images of 8 GPUs (DDP averages); coupled wd
    groups = {"": [(x / batch, x * wd / batch) for x in lrs]}
    return steps_per_epoch, nb, groups, moms


def darknet(batch=256):
    steps_per_epoch = TRAIN_IMAGES // batch
    wd, nb = 1e-4, steps_per_epoch * 30                  # wd = 1e-4; cycle_len=30
    lrs, moms = clr_beta(nb, 1.3, 20, 20, 0.95, 0.85)     # lr = 1.3; use_clr_beta=(20, 20, 0.95, 0.85)
    groups = {"": [(x / batch, x * wd / batch) for x in lrs]}   # a mean loss; coupled wd
    return steps_per_epoch, nb, groups, moms


def training_phases(steps_per_epoch, phases):
    """fit_opt_sched over TrainingPhases (epochs, (lr0, lr1), (mom0, mom1)): a phase starts at
    its first values and moves them linearly by 1 / (epochs * steps) after every batch; fastai
    moves to the next phase after the first batch number >= the phases' cumulative epochs *
    steps (floats)."""
    ends, acc = [], 0.0
    for epochs, _, _ in phases:
        acc += epochs * steps_per_epoch
        ends.append(acc)
    lrs, moms = [], []
    batch_number, phase, k = 0, 0, 0
    while phase < len(phases):
        epochs, (lr0, lr1), (mom0, mom1) = phases[phase]
        span = epochs * steps_per_epoch
        lrs.append(lr0 + k / span * (lr1 - lr0))
        moms.append(mom0 + k / span * (mom1 - mom0))
        batch_number, k = batch_number + 1, k + 1
        if batch_number >= ends[phase]:
            phase, k = phase + 1, 0
    return lrs, moms


def wrn22_adamw(batch=128):
    steps_per_epoch = TRAIN_IMAGES // batch
    base, div, wd, cycle, ann = 3e-3, 10, 0.1, 18, 0.075
    lengths = [cycle * (1 - ann) / 2, cycle * (1 - ann) / 2, cycle * ann]
    lrs, moms = training_phases(steps_per_epoch, [(lengths[0], (base / div, base), (0.95, 0.85)),
                                                  (lengths[1], (base, base / div), (0.85, 0.95)),
                                                  (lengths[2], (base / div, base / (div * 100)), (0.95, 0.95))])
    # At 390 steps per epoch the phases' float cumsum ends at 7020.000000000001, one step past 18
    # epochs, so fastai's loop would take one step of a 19th (np.ceil(18.000000000000004) epochs);
    # at the notebook's own 391 steps it ends at 7038.0, exactly 18 epochs. The fixture keeps 18.
    lrs, moms = lrs[:cycle * steps_per_epoch], moms[:cycle * steps_per_epoch]
    # Adam: the lr itself; wd_loss=False: p -= lr * wd * p before the step (decoupled)
    groups = {"": [(x, x * wd) for x in lrs]}
    return steps_per_epoch, len(lrs), groups, moms


# ---------------------------------------------------------------------------------------------
# sands-lab/layer-wise-aaai20 CIFAR10/dawn.py

def alexnet():
    worker_batch, world_size, epochs = 512, 2, 24
    steps_per_epoch = TRAIN_IMAGES // worker_batch                     # Batches(..., drop_last=True)

    def lr_schedule(t):                                                # PiecewiseLinear([0, 5, 24], [0, 0.4, 0])
        knots, vals = [0, 5, epochs], [0, 0.4, 0]
        if t <= knots[0]:
            return vals[0]
        for i in range(1, len(knots)):
            if t <= knots[i]:
                return vals[i - 1] + (t - knots[i - 1]) * (vals[i] - vals[i - 1]) / (knots[i] - knots[i - 1])
        return vals[-1]

    groups = {"": []}
    for step_number in range(1, epochs * steps_per_epoch + 1):        # TorchOptimiser.step: += 1 first
        lr = lr_schedule(step_number / steps_per_epoch) / worker_batch
        # each worker's summed loss, the gradients averaged over the workers: an example's weight
        # is lr / world_size; coupled wd 5e-4 * 512 per step of world_size * 512 examples
        groups[""].append((lr / world_size, lr * 5e-4 * worker_batch / (world_size * worker_batch)))
    return steps_per_epoch, epochs * steps_per_epoch, groups, [0.0] * (epochs * steps_per_epoch)


# ---------------------------------------------------------------------------------------------
# the record recipes: airbench94_muon.py main(), cifar10_speedrun.py main() and its Muon.step

def muon_recipe(batch, epochs, whiten_epochs, lr_bias, lr_head, lr_muon, wd_per_example, mom, speedrun):
    steps_per_epoch = TRAIN_IMAGES // batch                 # drop_last
    total = math.ceil(epochs * steps_per_epoch)
    bias_steps = math.ceil(whiten_epochs * steps_per_epoch)
    wd = wd_per_example * batch                             # wd = 2e-6 * batch_size (speedrun 1.0418e-6)
    groups = {"whiten_bias": [], "norm_biases": [], "head": [], "filters": []}
    renorm, targets, last = [], [], 0
    for step in range(total):
        decay = 1 - step / total                            # lr = initial * (1 - step / total), before the step
        # SGD groups, summed loss: weight_decay = wd / lr_group, so lr * weight_decay = decay * wd;
        # the whitening bias decays over its own steps and is detached (skipped) after them
        b = 1 - step / bias_steps
        groups["whiten_bias"].append((lr_bias * b, lr_bias * b * (wd / lr_bias) / batch) if step < bias_steps
                                     else (0.0, 0.0))
        groups["norm_biases"].append((lr_bias * decay, lr_bias * decay * (wd / lr_bias) / batch))
        groups["head"].append((lr_head * decay, lr_head * decay * (wd / lr_head) / batch))
        # Muon: the lr itself, and (speedrun) the decoupled decay lr * wd after the step
        groups["filters"].append((lr_muon * decay, lr_muon * decay * wd if speedrun else 0.0))
        count = step + 1                                    # Muon.step_count after its increment
        if speedrun:
            due = count - last >= 2 + int(15 * (count / total))
            last = count if due else last
            renorm.append(1.0 if due else 0.0)
            progress = count / max(1, total)
            targets.append(0.5012 * (1 - progress) + 0.0786 * progress)
        else:
            renorm.append(1.0)                              # p.data.mul_(...) every step
            targets.append(1.0)
    return steps_per_epoch, total, groups, [mom] * total, renorm, targets


# ---------------------------------------------------------------------------------------------

def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(root, "tests", "data", "golden_schedules.ckpt"))
    args = ap.parse_args()
    cases = {
        "airbench94@1024": (1024, airbench94(1024)),
        "airbench94@128": (128, airbench94(128)),
        "imagenet-resnet50@256": (256, imagenet18(100)),
        "cifar10-wrn22@1024": (1024, wrn22()),
        "cifar10-wrn22-adamw@128": (128, wrn22_adamw()),
        "cifar10-alexnet@1024": (1024, alexnet()),
        "cifar10-darknet@256": (256, darknet()),
    }
    muon_cases = {
        "airbench94-muon@2000": (2000, muon_recipe(2000, 8, 3, 0.053, 0.67, 0.24, 2e-6, 0.85, False)),
        "cifar10-speedrun@1536": (1536, muon_recipe(1536, 7.59, 0.19, 0.0573, 0.5415, 0.205, 1.0418e-6, 0.825, True)),
    }
    tensors, meta_cases = [], {}
    for case, (batch, (spe, total, groups, moms, renorm, targets)) in muon_cases.items():
        cases[case] = (batch, (spe, total, groups, moms))
        tensors.append(float_vector(f"renorm/{case}", renorm))
        tensors.append(float_vector(f"ns_target/{case}", targets))
    for case, (batch, (spe, total, groups, moms)) in cases.items():
        meta_cases[case] = {"batch": batch, "steps_per_epoch": spe, "steps": total, "groups": sorted(groups)}
        for g, rows in groups.items():
            assert len(rows) == total, (case, g, len(rows), total)
            tensors.append(float_vector(f"rate/{case}/{g}", [r for r, _ in rows]))
            tensors.append(float_vector(f"decay/{case}/{g}", [d for _, d in rows]))
        tensors.append(float_vector(f"momentum/{case}", moms))
    meta = {"generator": "tools/gen_schedules.py", "cases": meta_cases}
    write_checkpoint(args.out, "schedules", meta, tensors)
    print(f"wrote {args.out}: {len(tensors)} tensors, {sum(len(d) // 4 for _, _, d in tensors)} values")


if __name__ == "__main__":
    main()
