#!/usr/bin/env python3
"""bench_pytorch.py — PyTorch's training throughput for daybreak's ResNet9 (the cifar10-resnet9
recipe's network: widths 64, 128, 256, 512) or airbench94 (tools/torch_nets.py), the other
column of tools/bench_vs_pytorch.sh.

A development tool: daybreak never builds or runs with PyTorch. Without torch (or numpy) this
prints `pytorch: not installed (...)` and exits 3, which bench_vs_pytorch.sh reports as such.

    python3 tools/bench_pytorch.py --batch 512 [--model resnet9|airbench94] [--steps 5]
        [--warmup 1] [--threads N] [--channels-last] [--data DIR]

One training step is the same work as a daybreak step except the augmentation (daybreak's step
includes its crop/flip/cutout kernel; here the batches are pre-normalised real CIFAR-10 images
from data_batch_1.bin, so PyTorch is not charged for augmentation):
  - resnet9: forward, cross-entropy summed over the batch (as the recipe), backward, SGD with
    Nesterov momentum 0.9 and weight decay 5e-4 * batch;
  - airbench94: as tools/airbench94_torch.py trains it: the whitening filters set from the
    batches (before the clock), forward, label-smoothed (0.2) cross-entropy summed over the
    batch, backward, SGD with Nesterov momentum 0.85 in the source's two groups (batch-norm
    biases at 64x the rate, decoupled weight decay), and lookahead every 5 steps (as daybreak's
    bench_train times it).
Threads default to the machine's cores (torch's default); --channels-last stores activations
NHWC (PyTorch's faster CPU layout for some convolutions: try both, report the better).
Prints one line: `pytorch <version> model <M> batch <B> threads <T> layout <L> img/s <X> ms/step <Y>
cpu_s/step <Z>` (Z: the process's CPU seconds per step, every thread).
"""
import argparse
import os
import sys
import time

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError as e:
    print(f"pytorch: not installed ({e.name} missing)")
    sys.exit(3)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_reference import CIFAR_MEAN, CIFAR_STD  # noqa: E402  (the fixture's normalisation)
import torch_nets  # noqa: E402

RECORD = 3073   # CIFAR-10 binary: label byte + 3x32x32
AIRBENCH = dict(lr=11.5, momentum=0.85, weight_decay=0.0153, bias_scaler=64.0, label_smoothing=0.2,
                lookahead_every=5)


def load_images(data_dir, count, mean, std):
    path = os.path.join(data_dir, "cifar-10-batches-bin", "data_batch_1.bin")
    try:
        with open(path, "rb") as f:
            raw = f.read(count * RECORD)
    except OSError as e:
        sys.exit(f"bench_pytorch: cannot read {path}: {e.strerror}")
    if len(raw) != count * RECORD:
        sys.exit(f"bench_pytorch: {path} holds fewer than {count} images")
    rec = np.frombuffer(raw, dtype=np.uint8).reshape(count, RECORD)
    images = rec[:, 1:].reshape(count, 3, 32, 32).astype(np.float32) / 255.0
    mean, std = np.asarray(mean, dtype=np.float32), np.asarray(std, dtype=np.float32)
    x = (images - mean[None, :, None, None]) / std[None, :, None, None]
    return torch.from_numpy(x.astype(np.float32)), torch.from_numpy(rec[:, 0].astype(np.int64))


def resnet9_step(model, batch):
    """ResNet9's optimizer and loss: returns step(x, y, i)."""
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, nesterov=True, weight_decay=5e-4 * batch)

    def step(x, y, i):
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y, reduction="sum")
        loss.backward()
        opt.step()
    return step


def airbench94_step(model, batch, images):
    """airbench94's optimizer, loss and lookahead (tools/airbench94_torch.py's hyper-parameters
    at a mid-schedule rate): returns step(x, y, i)."""
    model.init_whitening(images)
    kilostep = 1024 * (1 + 1 / (1 - AIRBENCH["momentum"]))
    lr, wd = AIRBENCH["lr"] / kilostep, AIRBENCH["weight_decay"] * batch / kilostep
    opt = torch.optim.SGD(model.param_groups(lr, wd, AIRBENCH["bias_scaler"]), momentum=AIRBENCH["momentum"],
                          nesterov=True)
    ema = {k: v.clone() for k, v in model.state_dict().items()}

    def lookahead(decay):
        for e, p in zip(ema.values(), model.state_dict().values()):
            if p.dtype == torch.float:
                e.lerp_(p, 1 - decay)
                p.copy_(e)

    def step(x, y, i):
        loss = F.cross_entropy(model(x), y, label_smoothing=AIRBENCH["label_smoothing"], reduction="none").sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if (i + 1) % AIRBENCH["lookahead_every"] == 0:
            lookahead(0.95 ** 5 * 0.5 ** 3)
    return step


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=("resnet9", "airbench94"), default="resnet9")
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0, help="0: torch's default (the machine's cores)")
    ap.add_argument("--channels-last", action="store_true", help="NHWC activations and weights")
    ap.add_argument("--data", default=os.environ.get("DAYBREAK_DATA", ""))
    a = ap.parse_args()
    if a.batch < 1 or a.steps < 1 or a.warmup < 0 or a.threads < 0:
        sys.exit("bench_pytorch: --batch and --steps must be >= 1, --warmup and --threads >= 0")
    if not a.data:
        sys.exit("bench_pytorch: set DAYBREAK_DATA or pass --data (a folder holding cifar-10-batches-bin/)")
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    steps = a.warmup + a.steps
    airbench = a.model == "airbench94"
    mean, std = (torch_nets.AIRBENCH_MEAN, torch_nets.AIRBENCH_STD) if airbench else (CIFAR_MEAN, CIFAR_STD)
    x_all, y_all = load_images(a.data, min(10000, a.batch * steps), mean, std)
    layout = torch.channels_last if a.channels_last else torch.contiguous_format
    x_all = x_all.contiguous(memory_format=layout)
    model = torch_nets.airbench94() if airbench else torch_nets.resnet9()
    model = model.to(memory_format=layout)
    model.train()
    step = airbench94_step(model, a.batch, x_all[:5000]) if airbench else resnet9_step(model, a.batch)

    def batch_of(i):
        lo = (i * a.batch) % (x_all.shape[0] - a.batch + 1)
        return x_all[lo:lo + a.batch], y_all[lo:lo + a.batch]

    for i in range(a.warmup):
        step(*batch_of(i), i)
    t0, cpu0 = time.perf_counter(), time.process_time()
    for i in range(a.warmup, steps):
        step(*batch_of(i), i)
    seconds = (time.perf_counter() - t0) / a.steps
    cpu = (time.process_time() - cpu0) / a.steps   # every thread of the process
    print(f"pytorch {torch.__version__} model {a.model} batch {a.batch} threads {torch.get_num_threads()} "
          f"layout {'nhwc' if a.channels_last else 'nchw'} img/s {a.batch / seconds:.1f} ms/step {1000 * seconds:.1f} "
          f"cpu_s/step {cpu:.2f}")


if __name__ == "__main__":
    main()
