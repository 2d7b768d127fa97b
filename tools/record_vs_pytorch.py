#!/usr/bin/env python3
"""record_vs_pytorch.py — the record recipes' sources, re-implemented in PyTorch on the CPU, on
the same shortened schedule and real-data subset as a daybreak run, so that their accuracies
can be compared (docs/recipes.md, "The record recipes against PyTorch").

A development tool: daybreak never builds or runs with PyTorch. Without torch (or numpy) this
prints `pytorch: not installed (...)` and exits 3.

    python3 tools/record_vs_pytorch.py --recipe airbench94-muon|cifar10-speedrun --seed S \
        [--train N] [--test M] [--batch B] [--epochs E] [--data DIR] [--threads T]

What it runs (written here from the sources' algorithms, in fp32 where they use fp16/bf16 and
without torch.compile, as daybreak does):
  airbench94-muon   KellerJordan/cifar10-airbench airbench94_muon.py (commit f1c599c)
  cifar10-speedrun  hiverge/cifar10-speedrun cifar10_speedrun.py (commit 5cd49b1)
The data: the first N images of daybreak's training split (data_batch_1.bin first) and the
first M of the test split, as `daybreak train --train-subset N --test-subset M` takes them.
The schedule: batch B (default the recipe's), E epochs of N // B steps (airbench94-muon: 8;
speedrun: 7.59, ceil'ed to steps as the sources do; --epochs stretches or shrinks the budget
as daybreak's --epochs: speedrun keeps the ratio 7.59 / 8), every rate and weight decay as the
sources compute them for batch B. Prints one line:
`<recipe> seed S: tta A%, plain P%, train T s (N train, M test, batch B, K steps)`.
"""
import argparse
import math
import os
import sys
import time

try:
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:
    print(f"pytorch: not installed ({e.name} missing)")
    sys.exit(3)

RECORD = 3073
MEAN = {"airbench94-muon": (0.4914, 0.4822, 0.4465), "cifar10-speedrun": (0.4914, 0.4822, 0.4465)}
STD = {"airbench94-muon": (0.2470, 0.2435, 0.2616), "cifar10-speedrun": (0.247, 0.2435, 0.2616)}


def load(data_dir, files, count):
    """The first `count` records of the CIFAR-10 binary files, in order: (count,3,32,32) u8, labels."""
    out = []
    for name in files:
        with open(os.path.join(data_dir, "cifar-10-batches-bin", name), "rb") as f:
            out.append(np.frombuffer(f.read(), dtype=np.uint8).reshape(-1, RECORD))
        if sum(len(a) for a in out) >= count:
            break
    rec = np.concatenate(out)[:count]
    return torch.from_numpy(rec[:, 1:].reshape(-1, 3, 32, 32).copy()), torch.from_numpy(rec[:, 0].astype(np.int64))


# ---------------------------------------------------------------------------------------------
# the network (both sources: whitening conv, GELU, three conv groups, max pool 3, linear / 256)

class Block(nn.Module):
    def __init__(self, cin, cout, act, bn_momentum):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.norm1 = nn.BatchNorm2d(cout, eps=1e-12, momentum=1 - bn_momentum)
        self.norm2 = nn.BatchNorm2d(cout, eps=1e-12, momentum=1 - bn_momentum)
        for bn in (self.norm1, self.norm2):
            bn.weight.requires_grad = False
        self.act = act

    def forward(self, x):
        x = self.act(self.norm1(F.max_pool2d(self.conv1(x), 2)))
        return self.act(self.norm2(self.conv2(x)))


class Net(nn.Module):
    def __init__(self, silu, bn_momentum, widths=(64, 256, 256)):
        super().__init__()
        self.whiten = nn.Conv2d(3, 24, 2, padding=0, bias=True)
        self.whiten.weight.requires_grad = False
        act = nn.SiLU() if silu else nn.GELU()
        self.blocks = nn.Sequential(Block(24, widths[0], act, bn_momentum), Block(widths[0], widths[1], act, bn_momentum),
                                    Block(widths[1], widths[2], act, bn_momentum))
        self.head = nn.Linear(widths[2], 10, bias=False)
        for m in self.modules():   # Dirac on the first C_in filters of every 3x3 conv, after the default init
            if isinstance(m, nn.Conv2d) and m.kernel_size == (3, 3):
                with torch.no_grad():
                    nn.init.dirac_(m.weight[:m.weight.size(1)])
        with torch.no_grad():
            self.head.weight.mul_(1 / self.head.weight.std())

    def forward(self, x, bias_grad=True):
        b = self.whiten.bias if bias_grad else self.whiten.bias.detach()
        x = F.gelu(F.conv2d(x, self.whiten.weight, b))
        x = F.max_pool2d(self.blocks(x), 3).flatten(1)
        return self.head(x) / x.size(-1)


def init_whiten(net, images, ascending, eps=5e-4):
    """The 2x2 patch covariance's eigenvectors scaled by 1/sqrt(eigenvalue + eps), and negated."""
    p = images.unfold(2, 2, 1).unfold(3, 2, 1).permute(0, 2, 3, 1, 4, 5).reshape(-1, 12).double()
    cov = p.T @ p / len(p)
    vals, vecs = torch.linalg.eigh(cov)
    if not ascending:
        vals, vecs = vals.flip(0), vecs.flip(1)
    filt = (vecs.T / torch.sqrt(vals + eps)[:, None]).reshape(12, 3, 2, 2).float()
    with torch.no_grad():
        net.whiten.weight.copy_(torch.cat([filt, -filt]))


# ---------------------------------------------------------------------------------------------
# Muon (a matrix per filter: (K, C*3*3))

def newton_schulz(g, coeffs, steps, pre_target=None):
    a, b, c = coeffs
    x = g.reshape(len(g), -1)
    if pre_target is not None:           # speedrun: X * target / (||X|| + 1e-5), then / (||X|| + 1e-5)
        x = x * (pre_target / (x.norm() + 1e-5))
        x = x / (x.norm() + 1e-5)
    else:
        x = x / (x.norm() + 1e-7)
    wide = x.size(0) <= x.size(1)
    if not wide:
        x = x.T
    for _ in range(steps):
        m = x @ x.T
        x = a * x + (b * m + c * m @ m) @ x
    return (x if wide else x.T).reshape(g.shape)


# ---------------------------------------------------------------------------------------------

def run(args):
    torch.manual_seed(args.seed)
    muon = args.recipe == "airbench94-muon"
    cfg = dict(batch=2000, epochs=8.0, lr_bias=0.053, lr_head=0.67, lr_muon=0.24, wd=2e-6, mom_sgd=0.85,
               mom_muon=0.6, ls=0.2, bn=0.6, whiten_n=5000, whiten_epochs=3.0,
               coeffs=(3.4445, -4.7750, 2.0315)) if muon else \
        dict(batch=1536, epochs=7.59, lr_bias=0.0573, lr_head=0.5415, lr_muon=0.205, wd=1.0418e-6, mom_sgd=0.825,
             mom_muon=0.655, ls=0.09, bn=0.5566, whiten_n=960, whiten_epochs=0.19,
             coeffs=(3.4576, -4.7391, 2.0843))
    batch = args.batch or cfg["batch"]
    epochs = cfg["epochs"] * (args.epochs / 8.0) if args.epochs else cfg["epochs"]
    train_x, train_y = load(args.data, [f"data_batch_{i}.bin" for i in range(1, 6)], args.train)
    test_x, test_y = load(args.data, ["test_batch.bin"], args.test)
    mean = torch.tensor(MEAN[args.recipe]).view(1, 3, 1, 1)
    std = torch.tensor(STD[args.recipe]).view(1, 3, 1, 1)
    norm = lambda u8: (u8.float() / 255 - mean) / std
    steps_per_epoch = len(train_x) // batch
    total = math.ceil(epochs * steps_per_epoch)
    bias_steps = math.ceil(cfg["whiten_epochs"] * steps_per_epoch)

    net = Net(silu=not muon, bn_momentum=cfg["bn"])
    init_whiten(net, norm(train_x[:cfg["whiten_n"]]), ascending=muon)
    wd = cfg["wd"] * batch
    filters = [p for p in net.parameters() if p.ndim == 4 and p.requires_grad]
    norm_biases = [p for n, p in net.named_parameters() if "norm" in n and p.requires_grad]
    sgd = torch.optim.SGD([dict(params=[net.whiten.bias], lr=cfg["lr_bias"], weight_decay=wd / cfg["lr_bias"]),
                           dict(params=norm_biases, lr=cfg["lr_bias"], weight_decay=wd / cfg["lr_bias"]),
                           dict(params=[net.head.weight], lr=cfg["lr_head"], weight_decay=wd / cfg["lr_head"])],
                          momentum=cfg["mom_sgd"], nesterov=True)
    bufs = [torch.zeros_like(p) for p in filters]
    last_norm = 0

    # data: a random flip per image for the run, pad 2, then per epoch a random crop, all
    # images flipped on odd epochs (and speedrun's brightness/contrast per image per epoch)
    images = norm(train_x)
    flip = torch.rand(len(images)) < 0.5
    images = torch.where(flip.view(-1, 1, 1, 1), images.flip(-1), images)
    padded = F.pad(images, (2,) * 4, mode="reflect")

    step, t0 = 0, time.time()
    for epoch in range(math.ceil(total / steps_per_epoch)):
        dy, dx = torch.randint(0, 5, (len(images),)), torch.randint(0, 5, (len(images),))
        epoch_x = torch.stack([padded[i, :, dy[i]:dy[i] + 32, dx[i]:dx[i] + 32] for i in range(len(padded))])
        if epoch % 2 == 1:
            epoch_x = epoch_x.flip(-1)
        if not muon:
            b = (torch.rand(len(epoch_x), 1, 1, 1) * 2 - 1) * 0.1399
            c = (torch.rand(len(epoch_x), 1, 1, 1) * 2 - 1) * 0.1308 + 1
            epoch_x = (epoch_x + b) * c
        order = torch.randperm(len(epoch_x))
        net.train()
        for i in range(steps_per_epoch):
            idx = order[i * batch:(i + 1) * batch]
            out = net(epoch_x[idx], bias_grad=step < bias_steps)
            F.cross_entropy(out, train_y[idx], label_smoothing=cfg["ls"], reduction="sum").backward()
            decay = 1 - step / total
            sgd.param_groups[0]["lr"] = cfg["lr_bias"] * (1 - step / bias_steps)
            sgd.param_groups[1]["lr"] = cfg["lr_bias"] * decay
            sgd.param_groups[2]["lr"] = cfg["lr_head"] * decay
            sgd.step()
            lr = cfg["lr_muon"] * decay
            with torch.no_grad():
                count = step + 1
                if muon:
                    renorm = True
                else:
                    renorm = count - last_norm >= 2 + int(15 * count / total)
                    if renorm:
                        last_norm = count
                for p, buf in zip(filters, bufs):
                    buf.mul_(cfg["mom_muon"]).add_(p.grad)
                    u = p.grad + cfg["mom_muon"] * buf
                    if renorm:
                        p.mul_(len(p) ** 0.5 / (p.norm() + (0 if muon else 1e-7)))
                    target = None if muon else 0.5012 * (1 - count / total) + 0.0786 * count / total
                    p.add_(newton_schulz(u, cfg["coeffs"], 3, target), alpha=-lr)
                    if not muon:
                        p.mul_(1 - lr * wd)
            net.zero_grad(set_to_none=True)
            step += 1
            if step >= total:
                break
    train_seconds = time.time() - t0

    net.eval()
    views = lambda x: [x, x.flip(-1), F.pad(x, (1,) * 4, mode="reflect")[:, :, 0:32, 0:32],
                       F.pad(x, (1,) * 4, mode="reflect")[:, :, 0:32, 0:32].flip(-1),
                       F.pad(x, (1,) * 4, mode="reflect")[:, :, 2:34, 2:34],
                       F.pad(x, (1,) * 4, mode="reflect")[:, :, 2:34, 2:34].flip(-1)]
    with torch.no_grad():
        x = norm(test_x)
        plain = torch.cat([net(b) for b in x.split(2000)])
        if muon:   # tta level 2: 1/4, 1/4 plain and mirrored, 1/8 each translated view
            w = [0.25, 0.25, 0.125, 0.125, 0.125, 0.125]
            tta = sum(wi * torch.cat([net(v) for v in vs]) for wi, vs in
                      zip(w, zip(*[views(b) for b in x.split(2000)])))
        else:      # the int(0.25 N) least confident images get the mean of the six views
            k = int(len(x) * 0.25)
            conf = F.softmax(plain, 1).max(1).values
            low = torch.topk(conf, k, largest=False).indices
            tta = plain.clone()
            if k:
                tta[low] = torch.stack([net(v) for v in views(x[low])]).mean(0)
    acc = lambda z: 100.0 * (z.argmax(1) == test_y).float().mean().item()
    print(f"{args.recipe} seed {args.seed}: tta {acc(tta):.2f}%, plain {acc(plain):.2f}%, train {train_seconds:.1f} s "
          f"({len(train_x)} train, {len(test_x)} test, batch {batch}, {total} steps)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--recipe", required=True, choices=["airbench94-muon", "cifar10-speedrun"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--train", type=int, default=50000)
    ap.add_argument("--test", type=int, default=10000)
    ap.add_argument("--batch", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=0, help="daybreak's --epochs (the recipe's budget rescaled)")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--data", default=os.environ.get("DAYBREAK_DATA", ""))
    args = ap.parse_args()
    if not args.data:
        sys.exit("set DAYBREAK_DATA or --data to a folder holding cifar-10-batches-bin/")
    if args.threads:
        torch.set_num_threads(args.threads)
    run(args)


if __name__ == "__main__":
    main()
