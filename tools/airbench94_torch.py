#!/usr/bin/env python3
"""airbench94_torch.py — airbench94 in PyTorch on the CIFAR-10 binary files daybreak reads: the
peer that daybreak's airbench94 recipe is compared with (tools/gpu-check.sh on a GPU, on the
CPU for rehearsals). A development tool; daybreak never builds or runs with PyTorch.

    python3 tools/airbench94_torch.py [--data DIR] [--device cpu|cuda] [--dtype half|float]
        [--epochs 9.9] [--batch 1024] [--train-subset N] [--test-subset N] [--seed S]
        [--warmup-steps N] [--runs R] [--json FILE]

Written from KellerJordan/cifar10-airbench legacy/airbench94.py (94.01% mean over 1,000 runs in
3.83 s on an A100 on the original CIFAR-10; about 3 points less on the JPEG-decoded copy daybreak
tests on): its hyper-parameters in decoupled form (lr 11.5 and weight decay 0.0153 per 1024
examples, Nesterov momentum 0.85, batch-norm biases at 64x the rate, label smoothing 0.2), its
schedule (476 steps for 9.9 epochs of 48 batches; the rate ramps from 0.2 to 1 over the first
23% of the steps, then down to 0.07), lookahead every 5 steps with decay 0.95^5 * (step/total)^3
and a final copy, the whitening layer's filters from 5,000 training images and its bias trained
for the first 3 epochs, alternating flips (a random half pre-flipped, all flipped on odd epochs)
and random 2-pixel translations, and a final evaluation with test-time augmentation level 2 (the
mirror and two 1-pixel translations, weighted). Networks: tools/torch_nets.py.

The clock follows daybreak's airbench94 recipe, which follows airbench: the whitening
initialisation and every training step are on it, the per-epoch evaluations (no augmentation)
are off it, the final evaluation with test-time augmentation is on it; the device is
synchronised at each timestamp. Before the first run, --warmup-steps steps (default 5) of a
throwaway model on random labels and one evaluation of each kind compile and tune the kernels
(cuDNN's autotuning), off the clock and reported apart as warmup_s, as daybreak builds its
programs before its clock. --dtype half (the source's: an fp16 network with fp32 batch norm,
channels_last; the default on CUDA) or float (fp32; the default on the CPU).

Prints one line per epoch and, per run, `airbench94-torch run R: tta_accuracy A% clock S s
(epochs E, steps T, device D, dtype X)`; --json FILE writes every run's figures and the
warm-up time. Exit 0, 1 on an error (data, device), 2 on usage.
"""
import argparse
import json
import math
import os
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:
    print(f"pytorch: not installed ({e.name} missing)")
    sys.exit(3)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_nets  # noqa: E402

HYP = dict(epochs=9.9, batch=1024, lr=11.5, momentum=0.85, weight_decay=0.0153, bias_scaler=64.0,
           label_smoothing=0.2, whiten_bias_epochs=3, translate=2, tta_level=2, eval_batch=2000,
           lookahead_every=5, whiten_images=5000)


class Data:
    """The training images normalised once, pre-flipped at random and reflect-padded (the
    source's epoch-0 work, on the clock), and the test images normalised."""

    def __init__(self, train_u8, train_y, test_u8, test_y, dtype, channels_last):
        self.train_y, self.test_y = train_y, test_y
        self.dtype, self.channels_last = dtype, channels_last
        self.train_raw, self.test_raw = train_u8, test_u8

    def prepare(self):
        norm = torch_nets.normalise(self.train_raw, torch_nets.AIRBENCH_MEAN, torch_nets.AIRBENCH_STD, self.dtype)
        flip = (torch.rand(len(norm), device=norm.device) < 0.5).view(-1, 1, 1, 1)
        flipped = torch.where(flip, norm.flip(-1), norm)
        pad = HYP["translate"]
        self.padded = F.pad(flipped, (pad,) * 4, "reflect")
        self.test = self.layout(torch_nets.normalise(self.test_raw, torch_nets.AIRBENCH_MEAN,
                                                     torch_nets.AIRBENCH_STD, self.dtype))
        return norm

    def layout(self, x):
        return x.contiguous(memory_format=torch.channels_last) if self.channels_last else x

    def epoch_batches(self, epoch, batch):
        """One epoch: a random translation per image, every image mirrored on odd epochs,
        shuffled, full batches only."""
        r = HYP["translate"]
        n = len(self.padded)
        shifts = torch.randint(-r, r + 1, (n, 2), device=self.padded.device)
        out = torch.empty((n, 3, 32, 32), device=self.padded.device, dtype=self.padded.dtype)
        for sy in range(-r, r + 1):
            for sx in range(-r, r + 1):
                m = (shifts[:, 0] == sy) & (shifts[:, 1] == sx)
                out[m] = self.padded[m, :, r + sy:r + sy + 32, r + sx:r + sx + 32]
        if epoch % 2 == 1:
            out = out.flip(-1)
        order = torch.randperm(n, device=out.device)
        for i in range(n // batch):
            idx = order[i * batch:(i + 1) * batch]
            yield self.layout(out[idx]), self.train_y[idx]


def make_model(device, dtype, channels_last):
    model = torch_nets.airbench94().to(device)
    if dtype == torch.float16:
        model = model.half()
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.float()
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    return model


def logits(model, data, tta_level):
    """The test set's logits with test-time augmentation 0 (plain), 1 (mirror) or 2 (mirror and
    1-pixel translations up-left and down-right, weighted as the source)."""
    def mirror(x):
        return 0.5 * model(x) + 0.5 * model(x.flip(-1))

    def mirror_translate(x):
        p = F.pad(x, (1,) * 4, "reflect")
        shifted = torch.stack([mirror(p[:, :, 0:32, 0:32]), mirror(p[:, :, 2:34, 2:34])]).mean(0)
        return 0.5 * mirror(x) + 0.5 * shifted
    fn = [lambda x: model(x), mirror, mirror_translate][tta_level]
    model.eval()
    with torch.no_grad():
        out = torch.cat([fn(x).float() for x in data.test.split(HYP["eval_batch"])])
    model.train()
    return out


def accuracy(model, data, tta_level):
    return (logits(model, data, tta_level).argmax(1) == data.test_y).float().mean().item() * 100


def lr_factor(step, total):
    warmup = int(total * 0.23)
    if step < warmup:
        f = step / warmup
        return 0.2 * (1 - f) + 1.0 * f
    f = (step - warmup) / (total - warmup)
    return 1.0 * (1 - f) + 0.07 * f


def train_run(data, device, dtype, channels_last, epochs, batch, sync, max_steps=None, quiet=False):
    """One run; returns (tta accuracy %, clock seconds, steps)."""
    momentum = HYP["momentum"]
    kilostep = 1024 * (1 + 1 / (1 - momentum))
    lr = HYP["lr"] / kilostep
    wd = HYP["weight_decay"] * batch / kilostep
    model = make_model(device, dtype, channels_last)
    opt = torch.optim.SGD(model.param_groups(lr, wd, HYP["bias_scaler"]), momentum=momentum, nesterov=True)
    steps_per_epoch = len(data.train_raw) // batch
    total = math.ceil(steps_per_epoch * epochs)
    if max_steps:
        total = min(total, max_steps)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, total))
    alpha = 0.95 ** 5 * (torch.arange(total + 1) / total) ** 3
    ema = {k: v.clone() for k, v in model.state_dict().items()}

    def lookahead(decay):
        for e, p in zip(ema.values(), model.state_dict().values()):
            if p.dtype in (torch.half, torch.float):
                e.lerp_(p, 1 - decay)
                p.copy_(e)

    sync()
    t0 = time.perf_counter()
    norm = data.prepare()
    model.init_whitening(norm[:HYP["whiten_images"]])
    sync()
    clock = time.perf_counter() - t0
    step = 0
    for epoch in range(math.ceil(epochs)):
        model.whiten.bias.requires_grad = epoch < HYP["whiten_bias_epochs"]
        sync()
        t0 = time.perf_counter()
        for x, y in data.epoch_batches(epoch, batch):
            out = model(x)
            loss = F.cross_entropy(out, y, label_smoothing=HYP["label_smoothing"], reduction="none").sum()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            step += 1
            if step % HYP["lookahead_every"] == 0:
                lookahead(alpha[step].item())
            if step >= total:
                lookahead(1.0)
                break
        sync()
        clock += time.perf_counter() - t0
        if max_steps:
            break
        if not quiet:
            print(f"epoch {epoch + 1:2d}  train_loss {loss.item() / batch:.4f}  test {accuracy(model, data, 0):6.2f}%  "
                  f"clock {clock:8.2f}s", flush=True)
        if step >= total:
            break
    sync()
    t0 = time.perf_counter()
    tta = accuracy(model, data, HYP["tta_level"])
    sync()
    clock += time.perf_counter() - t0
    return tta, clock, step


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=os.environ.get("DAYBREAK_DATA", ""))
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--dtype", choices=("half", "float"), default=None)
    ap.add_argument("--epochs", type=float, default=HYP["epochs"])
    ap.add_argument("--batch", type=int, default=HYP["batch"])
    ap.add_argument("--train-subset", type=int, default=0)
    ap.add_argument("--test-subset", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--warmup-steps", type=int, default=5)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0, help="CPU threads; 0: the machine's cores")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    if not a.data:
        ap.error("set DAYBREAK_DATA or pass --data (a folder holding cifar-10-batches-bin/)")
    if a.epochs <= 0 or a.batch < 1 or a.runs < 1 or a.warmup_steps < 0 or a.train_subset < 0 or a.test_subset < 0:
        ap.error("--epochs, --batch and --runs must be positive; subsets and --warmup-steps >= 0")
    if a.device == "cuda" and not torch.cuda.is_available():
        print("airbench94-torch: --device cuda: torch.cuda.is_available() is False", file=sys.stderr)
        return 1
    dtype = torch.float16 if (a.dtype or ("half" if a.device == "cuda" else "float")) == "half" else torch.float32
    if a.device == "cpu":
        torch.set_num_threads(a.threads or os.cpu_count() or 1)
    channels_last = a.device == "cuda"
    dev = torch.device(a.device)
    if a.device == "cuda":
        torch.backends.cudnn.benchmark = True

    def sync():
        if a.device == "cuda":
            torch.cuda.synchronize()

    try:
        train_u8, train_y = torch_nets.read_cifar10(a.data, "train", a.train_subset)
        test_u8, test_y = torch_nets.read_cifar10(a.data, "test", a.test_subset)
    except (OSError, ValueError) as e:
        print(f"airbench94-torch: {e}", file=sys.stderr)
        return 1
    if len(train_u8) < a.batch:
        ap.error(f"--batch {a.batch} is larger than the {len(train_u8)} training images")
    data = Data(train_u8.to(dev), train_y.to(dev), test_u8.to(dev), test_y.to(dev), dtype, channels_last)
    torch.manual_seed(a.seed)
    t0 = time.perf_counter()
    if a.warmup_steps:
        real = data.train_y
        data.train_y = torch.randint(0, 10, real.shape, device=dev)   # the source's warm-up: dummy labels
        train_run(data, dev, dtype, channels_last, a.epochs, a.batch, sync, max_steps=a.warmup_steps, quiet=True)
        data.train_y = real
    sync()
    warmup_s = time.perf_counter() - t0
    print(f"airbench94-torch: torch {torch.__version__}, device {a.device}"
          f"{' (' + torch.cuda.get_device_name() + ')' if a.device == 'cuda' else ''}, dtype {'half' if dtype == torch.float16 else 'float'}, "
          f"{len(train_u8)} training and {len(test_u8)} test images, warm-up {warmup_s:.2f} s off the clock", flush=True)
    runs = []
    for r in range(a.runs):
        torch.manual_seed(a.seed + r)
        tta, clock, steps = train_run(data, dev, dtype, channels_last, a.epochs, a.batch, sync)
        runs.append(dict(run=r, seed=a.seed + r, tta_accuracy=tta, clock_seconds=clock, steps=steps))
        print(f"airbench94-torch run {r}: tta_accuracy {tta:.2f}% clock {clock:.2f} s (epochs {a.epochs:g}, "
              f"steps {steps}, device {a.device}, dtype {'half' if dtype == torch.float16 else 'float'})", flush=True)
    if a.json:
        doc = dict(tool="airbench94_torch", torch=torch.__version__, device=a.device,
                   device_name=torch.cuda.get_device_name() if a.device == "cuda" else "cpu",
                   dtype="half" if dtype == torch.float16 else "float", epochs=a.epochs, batch=a.batch,
                   train_images=len(train_u8), test_images=len(test_u8), warmup_seconds=warmup_s, runs=runs)
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
