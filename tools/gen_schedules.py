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
  cifar10-alexnet@1024  sands-lab/layer-wise-aaai20 CIFAR10/dawn.py defaults: 2 workers x 512,
        TorchOptimiser (step_number += 1 before the lr), PiecewiseLinear([0, 5, 24], [0, 0.4, 0])
        / 512 on the summed loss, all_reduce / world_size, momentum 0, wd 5e-4 * 512.
"""
import argparse
import json
import math
import os
import struct

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

    def get_lr(step):                                     # L381-L389
        warmup_steps = int(total_train_steps * 0.23)
        warmdown_steps = total_train_steps - warmup_steps
        if step < warmup_steps:
            frac = step / warmup_steps
            return 0.2 * (1 - frac) + 1.0 * frac
        frac = (step - warmup_steps) / warmdown_steps
        return 1.0 * (1 - frac) + 0.07 * frac

    # L377-L378: dict(norm_biases, lr=lr_biases, weight_decay=wd/lr_biases), dict(others, lr=lr,
    # weight_decay=wd/lr); the summed loss (L422): scale 1. LambdaLR multiplies lr by get_lr.
    groups = {"": [], "norm_biases": [], "whiten_bias": []}
    for s in range(total_train_steps):
        f = get_lr(s)
        for name, base, decay in (("", lr, wd / lr), ("norm_biases", lr_biases, wd / lr_biases),
                                  ("whiten_bias", lr, wd / lr)):
            step_lr = base * f
            trains = name != "whiten_bias" or s // steps_per_epoch < 3   # L410
            groups[name].append((step_lr if trains else 0.0, step_lr * decay / batch if trains else 0.0))
    return steps_per_epoch, total_train_steps, groups, [momentum] * total_train_steps


# ---------------------------------------------------------------------------------------------
# imagenet18 one_machine (train.py, training/train_imagenet_nv.py)

def imagenet18(steps_per_epoch):
    lr = 1.0
    bs = [512, 224, 128]
    bs_scale = [x / bs[0] for x in bs]
    one_machine = [
        {'ep': 0, 'sz': 128, 'bs': bs[0], 'trndir': '-sz/160'},
        {'ep': (0, 7), 'lr': (lr, lr * 2)},
        {'ep': (7, 13), 'lr': (lr * 2, lr / 4)},
        {'ep': 13, 'sz': 224, 'bs': bs[1], 'trndir': '-sz/352', 'min_scale': 0.087},
        {'ep': (13, 22), 'lr': (lr * bs_scale[1], lr / 10 * bs_scale[1])},
        {'ep': (22, 25), 'lr': (lr / 10 * bs_scale[1], lr / 100 * bs_scale[1])},
        {'ep': 25, 'sz': 288, 'bs': bs[2], 'min_scale': 0.5, 'rect_val': True},
        {'ep': (25, 28), 'lr': (lr / 100 * bs_scale[2], lr / 1000 * bs_scale[2])},
    ]
    listify = lambda x: list(x) if isinstance(x, (list, tuple)) else [x]
    phases = []
    for p in one_machine:                         # Scheduler.__init__ / format_phase
        if 'lr' not in p:
            continue
        phases.append({'ep': listify(p['ep']), 'lr': listify(p['lr'])})
    tot_epochs = max(max(p['ep']) for p in phases)

    def get_lr(epoch, batch_curr, batch_tot):     # Scheduler.get_lr / linear_phase_lr / calc_linear_lr
        phase = next(p for p in reversed(phases) if epoch >= p['ep'][0])
        if len(phase['lr']) == 1:
            return phase['lr'][0]
        lr_start, lr_end = phase['lr']
        ep_start, ep_end = phase['ep']
        ep_relative, ep_tot = epoch - ep_start, ep_end - ep_start
        step_tot = ep_tot * batch_tot
        step_curr = ep_relative * batch_tot + batch_curr
        return lr_start + step_curr * (lr_end - lr_start) / step_tot

    def global_batch(epoch):                      # DataManager: the phase's per-GPU bs, 8 GPUs
        return 8 * [p for p in one_machine if 'bs' in p and p['ep'] <= epoch][-1]['bs']

    groups = {"": [], "bn": []}
    for epoch in range(tot_epochs):
        for i in range(steps_per_epoch):
            step_lr = get_lr(epoch, i + 1, steps_per_epoch)   # train(): scheduler.update_lr(epoch, i+1, len)
            # mean loss over the global batch; SGD coupled wd 1e-4, none on batch norm (--no-bn-wd)
            per_example = step_lr / global_batch(epoch)
            groups[""].append((per_example, per_example * 1e-4))
            groups["bn"].append((per_example, 0.0))
    return steps_per_epoch, tot_epochs * steps_per_epoch, groups, [0.9] * (tot_epochs * steps_per_epoch)


# ---------------------------------------------------------------------------------------------
# fastai 0.7 (old/fastai/sgdr.py)

class CircularLR_beta:
    """sgdr.py's CircularLR_beta with LR_Updater's calls: on_train_begin and every on_batch_end
    call update_lr (calc_lr, which advances cycle_iter) then update_mom (calc_mom)."""

    def __init__(self, nb, div, pct, momentums):
        self.nb, self.div, self.pct = nb, div, pct
        self.cycle_nb = int(nb * (1 - pct / 100) / 2)
        self.moms = momentums
        self.cycle_iter = 0

    def calc_lr(self, init_lrs):
        if self.cycle_iter > 2 * self.cycle_nb:
            pct = (self.cycle_iter - 2 * self.cycle_nb) / (self.nb - 2 * self.cycle_nb)
            res = init_lrs * (1 + (pct * (1 - 100) / 100)) / self.div
        elif self.cycle_iter > self.cycle_nb:
            pct = 1 - (self.cycle_iter - self.cycle_nb) / self.cycle_nb
            res = init_lrs * (1 + pct * (self.div - 1)) / self.div
        else:
            pct = self.cycle_iter / self.cycle_nb
            res = init_lrs * (1 + pct * (self.div - 1)) / self.div
        self.cycle_iter += 1
        if self.cycle_iter == self.nb:
            self.cycle_iter = 0
        return res

    def calc_mom(self):
        if self.cycle_iter > 2 * self.cycle_nb:
            res = self.moms[0]
        elif self.cycle_iter > self.cycle_nb:
            pct = 1 - (self.cycle_iter - self.cycle_nb) / self.cycle_nb
            res = self.moms[0] + pct * (self.moms[1] - self.moms[0])
        else:
            pct = self.cycle_iter / self.cycle_nb
            res = self.moms[0] + pct * (self.moms[1] - self.moms[0])
        return res


def wrn22(batch=1024):
    steps_per_epoch = TRAIN_IMAGES // batch
    cycle_len, lr, wd = 50, 1.3, 2e-4
    div, pct, mom_max, mom_min = 50, 15, 0.95, 0.85          # --use-clr 50,15,0.95,0.85
    nb = steps_per_epoch * cycle_len
    sched = CircularLR_beta(nb, div, pct, (mom_max, mom_min))
    lrs, moms = [], []
    cur_lr, cur_mom = sched.calc_lr(lr), sched.calc_mom()    # on_train_begin
    for _ in range(nb):
        lrs.append(cur_lr)                                   # the batch runs with these
        moms.append(cur_mom)
        cur_lr, cur_mom = sched.calc_lr(lr), sched.calc_mom()  # on_batch_end
    # mean loss over the 1024 images of 8 GPUs (DDP averages); coupled wd
    groups = {"": [(x / batch, x * wd / batch) for x in lrs]}
    return steps_per_epoch, nb, groups, moms


class DecayScheduler:
    def __init__(self, linear, num_it, start_val, end_val=None):
        self.linear, self.nb, self.start_val, self.end_val = linear, num_it, start_val, end_val
        self.it = 0

    def next_val(self):
        self.it += 1
        if not self.linear:
            return self.start_val
        pct = self.it / self.nb
        return self.start_val + pct * (self.end_val - self.start_val)


def wrn22_adamw(batch=128):
    steps_per_epoch = TRAIN_IMAGES // batch
    base_lr, lr_div, wd, cyc_len, ann_len, moms = 3e-3, 10, 0.1, 18, 0.075, (0.95, 0.85)
    phase_lengths = [cyc_len * (1 - ann_len) / 2, cyc_len * (1 - ann_len) / 2, cyc_len * ann_len]
    # (epochs, lr start/end, LINEAR, momentum start/end, momentum LINEAR?)
    phases = [(phase_lengths[0], (base_lr / lr_div, base_lr), moms, True),
              (phase_lengths[1], (base_lr, base_lr / lr_div), (moms[1], moms[0]), True),
              (phase_lengths[2], (base_lr / lr_div, base_lr / (lr_div * 100)), (moms[0], None), False)]
    cnt_phases = []
    acc = 0.0
    for ep, *_ in phases:                                    # fit_gen: np.array([ep * len(dl)]).cumsum()
        acc += ep * steps_per_epoch
        cnt_phases.append(acc)
    tot_epochs = int(math.ceil(sum(p[0] for p in phases)))

    def phase_begin(p):                                      # TrainingPhase.phase_begin
        ep, lr, mom, mom_linear = phases[p]
        lr_sched = DecayScheduler(True, steps_per_epoch * ep, lr[0], lr[1])
        mom_sched = DecayScheduler(mom_linear, steps_per_epoch * ep, mom[0], mom[1])
        return lr_sched, mom_sched, lr[0], mom[0]

    lrs, moms_out = [], []
    phase, batch_num = 0, 0
    lr_sched, mom_sched, cur_lr, cur_mom = phase_begin(0)
    done = False
    for epoch in range(tot_epochs):
        for _ in range(steps_per_epoch):
            batch_num += 1
            lrs.append(cur_lr)
            moms_out.append(cur_mom)
            cur_lr, cur_mom = lr_sched.next_val(), mom_sched.next_val()   # OptimScheduler.on_batch_end
            if batch_num >= cnt_phases[phase]:
                phase += 1
                if phase >= len(phases):
                    done = True
                    break
                lr_sched, mom_sched, cur_lr, cur_mom = phase_begin(phase)
        if done:
            break
    # At 390 steps per epoch the phases' float cumsum ends at 7020.000000000001, one step past 18
    # epochs, so this loop takes one step of a 19th (np.ceil(18.000000000000004) epochs); at the
    # notebook's own 391 steps it ends at 7038.0, exactly 18 epochs. The fixture keeps 18 epochs.
    lrs, moms_out = lrs[:cyc_len * steps_per_epoch], moms_out[:cyc_len * steps_per_epoch]
    # Adam: the lr itself; wd_loss=False: p -= lr * wd * p before the step (decoupled)
    groups = {"": [(x, x * wd) for x in lrs]}
    return steps_per_epoch, len(lrs), groups, moms_out


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

def write_checkpoint(path, model_name, meta, tensors):
    """src/train/checkpoint.h, version 1: 1-D float32 tensors."""
    body = bytearray(b"DBKCKPT1")
    body += struct.pack("<II", 1, len(tensors))
    name = model_name.encode()
    body += struct.pack("<I", len(name)) + name
    meta_bytes = json.dumps(meta, sort_keys=True).encode()
    body += struct.pack("<I", len(meta_bytes)) + meta_bytes
    for tname, values in tensors:
        encoded = tname.encode()
        body += struct.pack("<I", len(encoded)) + encoded
        body += struct.pack("<I", 1) + struct.pack("<q", len(values))
        body += struct.pack("<Q", len(values)) + struct.pack(f"<{len(values)}f", *values)
    h = 0xCBF29CE484222325
    for byte in body:
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    body += struct.pack("<Q", h)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(body)
    os.replace(tmp, path)


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
    }
    tensors, meta_cases = [], {}
    for case, (batch, (spe, total, groups, moms)) in cases.items():
        meta_cases[case] = {"batch": batch, "steps_per_epoch": spe, "steps": total, "groups": sorted(groups)}
        for g, rows in groups.items():
            assert len(rows) == total, (case, g, len(rows), total)
            tensors.append((f"rate/{case}/{g}", [r for r, _ in rows]))
            tensors.append((f"decay/{case}/{g}", [d for _, d in rows]))
        tensors.append((f"momentum/{case}", moms))
    meta = {"generator": "tools/gen_schedules.py", "cases": meta_cases}
    write_checkpoint(args.out, "schedules", meta, tensors)
    print(f"wrote {args.out}: {len(tensors)} tensors, {sum(len(v) for _, v in tensors)} values")


if __name__ == "__main__":
    main()
