#!/usr/bin/env python3
"""bench_pytorch.py — PyTorch's training throughput for daybreak's networks, the other column
of tools/bench_vs_pytorch.sh and of the GPU kit (tools/gpu-check.sh).

A development tool: daybreak never builds or runs with PyTorch. Without torch (or numpy) this
prints `pytorch: not installed (...)` and exits 3, which the scripts report as such.

    python3 tools/bench_pytorch.py [--model resnet9|airbench94] [--device cpu|cuda]
        [--variant fp32|default|amp|compile] [--batch B] [--steps N] [--warmup N] [--threads N]
        [--channels-last] [--data DIR]

Models (tools/torch_nets.py): resnet9 (cifar10-resnet9's network, default batch 512: cross-
entropy summed over the batch, SGD with Nesterov momentum 0.9 and weight decay 5e-4 * batch, as
the recipe) and airbench94 (default batch 1024: label smoothing 0.2 summed, SGD with Nesterov
momentum 0.85 in airbench's two parameter groups and its decoupled rates). One step = forward,
loss, backward, update: a daybreak step's work except the augmentation (the batches are
pre-normalised real CIFAR-10 images from data_batch_1.bin, resident on the device, so PyTorch is
not charged for augmentation).

Variants:
  fp32     eager fp32 with TF32 off (cuDNN and matmul): the like-for-like figure for daybreak's
           fp32 kernels (the default, and the only one that means anything on the CPU);
  default  eager with PyTorch's defaults (on CUDA, cuDNN convolutions may use TF32);
  amp      autocast to bf16 (fp16 where the device lacks bf16) with channels_last;
  compile  torch.compile of the default variant; its first (warm-up) steps hold the compilation,
           reported apart as warmup_s.
--warmup steps (default 1; compile: at least 2) run before the timing; warmup_s is their time.
--channels-last stores the network and the batches NHWC in any variant (amp always does): on the
CPU the faster layout for some of airbench94's convolutions, not for others; try both.
Prints one line:
  pytorch <version> model <m> device <d> variant <v> batch <B> threads <T> img/s <X> ms/step <Y> warmup_s <Z>
      layout <nchw|nhwc> cpu_s/step <C>
(C: the process's CPU seconds per timed step, every thread: the work, comparable on a shared
machine where wall time is not).
or `pytorch: <variant> not available (<why>)` with exit 4 (torch.compile before PyTorch 2, CUDA
absent). Exit 2 on a usage error.
"""
import argparse
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

CIFAR_MEAN_RESNET9 = (125.31 / 255, 122.95 / 255, 113.87 / 255)   # the cifar10-resnet9 recipe's
CIFAR_STD_RESNET9 = (62.99 / 255, 62.09 / 255, 66.70 / 255)


def unavailable(variant, why):
    print(f"pytorch: {variant} not available ({why})")
    sys.exit(4)


def build(model_name, batch, device):
    """(model, optimizer, loss function, mean, std) as the recipe trains it."""
    if model_name == "resnet9":
        model = torch_nets.resnet9().to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, nesterov=True, weight_decay=5e-4 * batch)

        def loss_fn(out, y):
            return F.cross_entropy(out, y, reduction="sum")
        return model, opt, loss_fn, CIFAR_MEAN_RESNET9, CIFAR_STD_RESNET9
    model = torch_nets.airbench94().to(device)
    momentum = 0.85
    kilostep = 1024 * (1 + 1 / (1 - momentum))   # airbench94's decoupled hyper-parameters
    lr, wd = 11.5 / kilostep, 0.0153 * batch / kilostep
    opt = torch.optim.SGD(model.param_groups(lr, wd, 64.0), momentum=momentum, nesterov=True)

    def loss_fn(out, y):
        return F.cross_entropy(out, y, label_smoothing=0.2, reduction="sum")
    return model, opt, loss_fn, torch_nets.AIRBENCH_MEAN, torch_nets.AIRBENCH_STD


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=("resnet9", "airbench94"), default="resnet9")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--variant", choices=("fp32", "default", "amp", "compile"), default="fp32")
    ap.add_argument("--batch", type=int, default=0, help="0: the recipe's (512 resnet9, 1024 airbench94)")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0,
                    help="CPU threads; 0: the machine's cores (Debian's torch 1.13 would take 1)")
    ap.add_argument("--channels-last", action="store_true", help="NHWC network and batches")
    ap.add_argument("--data", default=os.environ.get("DAYBREAK_DATA", ""))
    a = ap.parse_args()
    batch = a.batch or (512 if a.model == "resnet9" else 1024)
    if batch < 1 or a.steps < 1 or a.warmup < 0 or a.threads < 0:
        ap.error("--batch and --steps must be >= 1, --warmup and --threads >= 0")
    if not a.data:
        ap.error("set DAYBREAK_DATA or pass --data (a folder holding cifar-10-batches-bin/)")
    if a.device == "cuda" and not torch.cuda.is_available():
        unavailable(a.variant, "torch.cuda.is_available() is False")
    if a.variant == "compile" and not hasattr(torch, "compile"):
        unavailable(a.variant, f"torch.compile needs PyTorch 2; this is {torch.__version__}")
    torch.set_num_threads(a.threads or os.cpu_count() or 1)
    if a.device == "cuda":
        like_for_like = a.variant == "fp32"
        torch.backends.cudnn.allow_tf32 = not like_for_like
        torch.backends.cuda.matmul.allow_tf32 = False if like_for_like else torch.backends.cuda.matmul.allow_tf32
        torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    dev = torch.device(a.device)
    warmup = max(a.warmup, 2) if a.variant == "compile" else a.warmup
    steps = warmup + a.steps
    try:
        images, labels = torch_nets.read_cifar10(a.data, "train", min(10000, batch * steps))
    except (OSError, ValueError) as e:
        sys.exit(f"bench_pytorch: {e}")
    model, opt, loss_fn, mean, std = build(a.model, batch, dev)
    x_all = torch_nets.normalise(images.to(dev), mean, std)
    y_all = labels.to(dev)
    model.train()
    autocast_dtype = None
    if a.variant == "amp":
        bf16 = a.device == "cpu" or torch.cuda.is_bf16_supported()
        autocast_dtype = torch.bfloat16 if bf16 else torch.float16
    channels_last = a.variant == "amp" or a.channels_last
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
        x_all = x_all.contiguous(memory_format=torch.channels_last)
    forward = torch.compile(model) if a.variant == "compile" else model
    scaler = torch.cuda.amp.GradScaler() if autocast_dtype == torch.float16 else None

    def step(i):
        lo = (i * batch) % (x_all.shape[0] - batch + 1)
        x, y = x_all[lo:lo + batch], y_all[lo:lo + batch]
        opt.zero_grad(set_to_none=True)
        if autocast_dtype is not None:
            with torch.autocast(device_type=a.device, dtype=autocast_dtype):
                loss = loss_fn(forward(x), y)
        else:
            loss = loss_fn(forward(x), y)
        if scaler:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()

    def sync():
        if a.device == "cuda":
            torch.cuda.synchronize()

    t0 = time.perf_counter()
    for i in range(warmup):
        step(i)
    sync()
    t1, cpu1 = time.perf_counter(), time.process_time()
    for i in range(warmup, steps):
        step(i)
    sync()
    seconds = (time.perf_counter() - t1) / a.steps
    cpu = (time.process_time() - cpu1) / a.steps   # every thread of the process
    print(f"pytorch {torch.__version__} model {a.model} device {a.device} variant {a.variant} batch {batch} "
          f"threads {torch.get_num_threads()} img/s {batch / seconds:.1f} ms/step {1000 * seconds:.2f} "
          f"warmup_s {t1 - t0:.2f} layout {'nhwc' if channels_last else 'nchw'} cpu_s/step {cpu:.2f}")


if __name__ == "__main__":
    main()
