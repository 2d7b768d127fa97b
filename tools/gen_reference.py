#!/usr/bin/env python3
"""gen_reference.py — writes tests/data/golden_resnet9_quarter.ckpt, the golden fixture that
tests/test_golden.c checks daybreak against: an independent PyTorch implementation of the quick
recipe's model (resnet9-quarter) and of the recipes' learning-rate schedules.

For development only: it needs PyTorch and numpy (`pip install torch numpy`) and the real CIFAR-10
under $DAYBREAK_DATA. Nothing in daybreak's build, programs or tests runs it; the fixture it writes
is committed, and test_golden runs without PyTorch.

    DAYBREAK_DATA=../shared/data python3 tools/gen_reference.py [--out tests/data/golden_resnet9_quarter.ckpt]

What it computes (all in float64, stored as float32):
  * the batch: the first 8 images of data_batch_1.bin, normalised with the quick recipe's
    cifar10-fast mean and std (stored as `input`, shape (8,3,32,32), and `labels`);
  * the weights: PyTorch's own default initialisation (conv and linear U(+-1/sqrt(fan_in)), the
    distribution daybreak's init_params draws from) from torch.manual_seed(SEED), with the batch-norm
    scales, shifts and running statistics drawn around their defaults (scale U(0.5, 1.5), shift
    U(-0.5, 0.5), mean U(-0.1, 0.1), var U(0.5, 1.5)) so that every one of them shapes the result.
    They go the PyTorch -> daybreak way: daybreak loads them by name (`param/<name>`,
    `state/<name>`), so the test needs no daybreak initialiser to agree with torch's generator;
  * one training-mode forward (batch statistics; eps 1e-5, momentum 0.1), the logits (`logits`),
    the loss summed over the batch with label smoothing 0.2 (`loss`: the quick recipe's), the
    updated running statistics (`state_after/<name>`) and the gradient of every parameter
    (`grad/<name>`);
  * the learning rate of every step of a full CIFAR-10 run (50,000 images, drop_last) of each
    recipe from its source's formula: cifar10-fast's dawn.py (np.interp over np.arange(0, epochs,
    1/steps_per_epoch)) for `quick` (knots 0, 2, 8 epochs) and `cifar10-resnet9` (0, 5, 24), and
    KellerJordan/cifar10-airbench legacy/airbench94.py's get_lr for `airbench94` (`lr/<recipe>`;
    airbench's is the multiplier of its peak rate), and airbench94's lookahead
    `alpha_schedule = 0.95**5 * (torch.arange(total_train_steps+1) / total_train_steps)**3`
    (`lookahead_decay/airbench94`).

The file is a daybreak checkpoint (src/train/checkpoint.h: little-endian, FNV-1a-64 checksum), so
the test reads it with daybreak's own validated reader; the metadata JSON records the provenance.
"""
import argparse
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from dbk_checkpoint import write_checkpoint

SEED = 14
BATCH = 8
WIDTHS = (16, 32, 64, 128)            # resnet9-quarter
LOGIT_SCALE = 0.125
LABEL_SMOOTHING = 0.2
BN_EPS, BN_MOMENTUM = 1e-5, 0.1
CIFAR_MEAN = np.array([125.31, 122.95, 113.87]) / 255.0   # cifar10-fast's, as the quick recipe
CIFAR_STD = np.array([62.99, 62.09, 66.70]) / 255.0
TRAIN_IMAGES = 50000


class ConvBnRelu(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(c_out, eps=BN_EPS, momentum=BN_MOMENTUM)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


class Residual(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.res1 = ConvBnRelu(c, c)
        self.res2 = ConvBnRelu(c, c)

    def forward(self, x):
        return x + self.res2(self.res1(x))


class Layer(nn.Module):
    """conv-bn-relu, max pool 2, and a residual block when asked (cifar10-fast's layer1/2/3)."""

    def __init__(self, c_in, c_out, residual):
        super().__init__()
        self.conv_bn = ConvBnRelu(c_in, c_out)
        self.residual = Residual(c_out) if residual else None

    def forward(self, x):
        x = F.max_pool2d(self.conv_bn(x), 2)
        return self.residual(x) if self.residual is not None else x


class ResNet9(nn.Module):
    """cifar10-fast's ResNet9 (dawn.py net()): the module names map onto daybreak's below."""

    def __init__(self, widths, classes=10):
        super().__init__()
        self.prep = ConvBnRelu(3, widths[0])
        self.layer1 = Layer(widths[0], widths[1], True)
        self.layer2 = Layer(widths[1], widths[2], False)
        self.layer3 = Layer(widths[2], widths[3], True)
        self.linear = nn.Linear(widths[3], classes, bias=False)

    def forward(self, x):
        x = self.layer3(self.layer2(self.layer1(self.prep(x))))
        x = F.adaptive_max_pool2d(x, 1).flatten(1)
        return self.linear(x) * LOGIT_SCALE


def daybreak_name(torch_name):
    """torch's 'layer1.conv_bn.conv.weight' -> daybreak's 'layer1.conv.weight';
    'layer1.residual.res1.bn.running_mean' -> 'layer1.res1.bn.running_mean'."""
    return torch_name.replace(".conv_bn.", ".").replace(".residual.", ".")


def read_batch(data_dir):
    path = os.path.join(data_dir, "cifar-10-batches-bin", "data_batch_1.bin")
    try:
        with open(path, "rb") as f:
            raw = f.read(BATCH * 3073)
    except OSError as e:
        sys.exit(f"gen_reference: cannot read {path}: {e.strerror}")
    if len(raw) != BATCH * 3073:
        sys.exit(f"gen_reference: {path} is shorter than {BATCH} records")
    rec = np.frombuffer(raw, dtype=np.uint8).reshape(BATCH, 3073)
    labels = rec[:, 0].astype(np.int64)
    images = rec[:, 1:].reshape(BATCH, 3, 32, 32).astype(np.float64) / 255.0
    x = (images - CIFAR_MEAN[None, :, None, None]) / CIFAR_STD[None, :, None, None]
    return path, x, labels


def lr_cifar10_fast(knots, values, epochs, batch):
    """dawn.py: lr_schedule(x) for x in np.arange(0, epochs, 1/len(train_batches))."""
    steps = TRAIN_IMAGES // batch
    xs = np.arange(0, epochs, 1 / steps)[: epochs * steps]
    return np.interp(xs, knots, values)


def airbench94_schedules():
    """legacy/airbench94.py: total_train_steps = ceil(len(train_loader) * epochs), its get_lr
    and its lookahead alpha_schedule (torch float32, as the source computes it)."""
    total_train_steps = math.ceil((TRAIN_IMAGES // 1024) * 9.9)

    def get_lr(step):
        warmup_steps = int(total_train_steps * 0.23)
        warmdown_steps = total_train_steps - warmup_steps
        if step < warmup_steps:
            frac = step / warmup_steps
            return 0.2 * (1 - frac) + 1.0 * frac
        frac = (step - warmup_steps) / warmdown_steps
        return 1.0 * (1 - frac) + 0.07 * frac

    lr = np.array([get_lr(s) for s in range(total_train_steps)])
    alpha = 0.95**5 * (torch.arange(total_train_steps + 1) / total_train_steps) ** 3
    return lr, alpha.numpy()


def checkpoint_tensor(name, array):
    """(name, shape, bytes) of an array as float32, a scalar as a 1-element tensor."""
    a = np.ascontiguousarray(array, dtype="<f4")
    if a.ndim == 0:
        a = a.reshape(1)
    return name, a.shape, a.tobytes()


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(root, "tests", "data", "golden_resnet9_quarter.ckpt"))
    args = ap.parse_args()
    data_dir = os.environ.get("DAYBREAK_DATA")
    if not data_dir:
        sys.exit("gen_reference: DAYBREAK_DATA is not set (a folder holding cifar-10-batches-bin/)")
    batch_path, x, labels = read_batch(data_dir)

    torch.manual_seed(SEED)
    model = ResNet9(WIDTHS)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
    model = model.double().train()
    tensors = []
    for n, p in model.named_parameters():
        tensors.append(("param/" + daybreak_name(n), p.detach().numpy().copy()))
    buffers = [(n, b) for n, b in model.named_buffers() if not n.endswith("num_batches_tracked")]
    for n, b in buffers:
        tensors.append(("state/" + daybreak_name(n), b.detach().numpy().copy()))

    xt = torch.tensor(x, dtype=torch.float64)
    yt = torch.tensor(labels)
    logits = model(xt)
    loss = F.cross_entropy(logits, yt, label_smoothing=LABEL_SMOOTHING, reduction="sum")
    loss.backward()

    tensors.append(("input", x))
    tensors.append(("labels", labels.astype(np.float64)))
    tensors.append(("logits", logits.detach().numpy()))
    tensors.append(("loss", np.array([loss.item()])))
    for n, b in buffers:
        tensors.append(("state_after/" + daybreak_name(n), b.detach().numpy().copy()))
    for n, p in model.named_parameters():
        tensors.append(("grad/" + daybreak_name(n), p.grad.numpy().copy()))

    tensors.append(("lr/quick", lr_cifar10_fast([0, 2, 8], [0, 0.4, 0], 8, 256)))
    tensors.append(("lr/cifar10-resnet9", lr_cifar10_fast([0, 5, 24], [0, 0.4, 0], 24, 512)))
    air_lr, air_alpha = airbench94_schedules()
    tensors.append(("lr/airbench94", air_lr))
    tensors.append(("lookahead_decay/airbench94", air_alpha))

    meta = {
        "generator": "tools/gen_reference.py",
        "torch": torch.__version__,
        "numpy": np.__version__,
        "seed": SEED,
        "batch": f"first {BATCH} records of {os.path.basename(batch_path)}",
        "model": "resnet9-quarter",
        "precision": "float64, stored as float32",
        "label_smoothing": LABEL_SMOOTHING,
        "loss": "summed over the batch",
        "bn": {"eps": BN_EPS, "momentum": BN_MOMENTUM},
    }
    write_checkpoint(args.out, "resnet9-quarter", meta, [checkpoint_tensor(n, a) for n, a in tensors])
    n_params = sum(p.numel() for p in model.parameters())
    print(f"wrote {args.out}: {len(tensors)} tensors, {n_params} parameters, loss {loss.item():.6f}, "
          f"labels {labels.tolist()}")


if __name__ == "__main__":
    main()
