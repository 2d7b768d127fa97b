#!/usr/bin/env python3
"""bench_pytorch.py — PyTorch's training throughput for daybreak's ResNet9 (the cifar10-resnet9
recipe's network: widths 64, 128, 256, 512), the other column of tools/bench_vs_pytorch.sh.

A development tool: daybreak never builds or runs with PyTorch. Without torch (or numpy) this
prints `pytorch: not installed (...)` and exits 3, which bench_vs_pytorch.sh reports as such.

    python3 tools/bench_pytorch.py --batch 512 [--steps 5] [--warmup 1] [--threads N] [--data DIR]

One training step = forward, loss (cross-entropy summed over the batch, as the recipe),
backward, SGD with Nesterov momentum 0.9 and weight decay 5e-4 * batch: the same work as a
daybreak step except the augmentation (daybreak's step includes its crop/flip/cutout kernel;
here the batches are pre-normalised real CIFAR-10 images from data_batch_1.bin, so PyTorch is
not charged for augmentation). Threads default to the machine's cores (torch's default).
Prints one line: `pytorch <version> batch <B> threads <T> img/s <X> ms/step <Y>`.
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
from gen_reference import CIFAR_MEAN, CIFAR_STD, ResNet9  # noqa: E402  (the fixture's network)

RESNET9_WIDTHS = (64, 128, 256, 512)
RECORD = 3073   # CIFAR-10 binary: label byte + 3x32x32


def load_images(data_dir, count):
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
    x = (images - CIFAR_MEAN[None, :, None, None]) / CIFAR_STD[None, :, None, None]
    return torch.from_numpy(x.astype(np.float32)), torch.from_numpy(rec[:, 0].astype(np.int64))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0, help="0: torch's default (the machine's cores)")
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
    x_all, y_all = load_images(a.data, min(10000, a.batch * steps))
    model = ResNet9(RESNET9_WIDTHS)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, nesterov=True, weight_decay=5e-4 * a.batch)

    def step(i):
        lo = (i * a.batch) % (x_all.shape[0] - a.batch + 1)
        x, y = x_all[lo:lo + a.batch], y_all[lo:lo + a.batch]
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y, reduction="sum")
        loss.backward()
        opt.step()

    for i in range(a.warmup):
        step(i)
    t0 = time.perf_counter()
    for i in range(a.warmup, steps):
        step(i)
    seconds = (time.perf_counter() - t0) / a.steps
    print(f"pytorch {torch.__version__} batch {a.batch} threads {torch.get_num_threads()} "
          f"img/s {a.batch / seconds:.1f} ms/step {1000 * seconds:.1f}")


if __name__ == "__main__":
    main()
