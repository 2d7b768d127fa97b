"""torch_nets.py — PyTorch twins of daybreak's CIFAR-10 networks and data, for the development
tools that put PyTorch beside daybreak (tools/bench_pytorch.py, tools/airbench94_torch.py,
tools/gpu-check.sh). daybreak never builds or runs with PyTorch.

  - ResNet9: the cifar10-resnet9 recipe's network (cifar10-fast's, widths 64/128/256/512), the
    one tools/gen_reference.py builds the golden fixture from;
  - Airbench94: the airbench94 recipe's network, written from KellerJordan/cifar10-airbench
    legacy/airbench94.py (hyp['net']): a frozen 2x2 patch-whitening convolution (24 filters, a
    trainable bias) and GELU, three conv-pool-BN-GELU-conv-BN-GELU groups of 64, 256 and 256
    channels whose convolutions start as a Dirac identity, batch norm with eps 1e-12, momentum
    0.4 in PyTorch's sense and a frozen weight, a 3x3 max pool, a bias-free linear layer and the
    logits scaled by 1/9;
  - read_cifar10(): the official binary files (data_batch_1..5.bin, test_batch.bin), as daybreak
    reads them, into uint8 tensors (N, 3, 32, 32) and int64 labels.
"""
import os

import torch
import torch.nn.functional as F
from torch import nn

RECORD = 3073  # label byte + 3 x 32 x 32
# airbench94's normalisation (its CIFAR_MEAN and CIFAR_STD), also daybreak's airbench94 recipe's
AIRBENCH_MEAN = (0.4914, 0.4822, 0.4465)
AIRBENCH_STD = (0.2470, 0.2435, 0.2616)


def read_cifar10(data_dir, split, count=0):
    """(images uint8 (N,3,32,32), labels int64 (N)) of the train (50,000) or test (10,000)
    split from DATA/cifar-10-batches-bin/, the first `count` records when count > 0."""
    names = [f"data_batch_{i}.bin" for i in range(1, 6)] if split == "train" else ["test_batch.bin"]
    chunks, need = [], count if count > 0 else None
    for name in names:
        path = os.path.join(data_dir, "cifar-10-batches-bin", name)
        with open(path, "rb") as f:
            raw = f.read()
        if len(raw) % RECORD:
            raise ValueError(f"{path}: {len(raw)} bytes is not a whole number of {RECORD}-byte records")
        chunks.append(raw)
        if need is not None and sum(len(c) for c in chunks) >= need * RECORD:
            break
    raw = b"".join(chunks)
    if need is not None:
        if len(raw) < need * RECORD:
            raise ValueError(f"the {split} split holds fewer than {need} images")
        raw = raw[:need * RECORD]
    rec = torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(-1, RECORD)
    return rec[:, 1:].reshape(-1, 3, 32, 32).contiguous(), rec[:, 0].long()


def normalise(images_u8, mean, std, dtype=torch.float32):
    """(x / 255 - mean) / std per channel, as a float tensor of dtype on the images' device."""
    m = torch.tensor(mean, device=images_u8.device).view(1, 3, 1, 1)
    s = torch.tensor(std, device=images_u8.device).view(1, 3, 1, 1)
    return ((images_u8.float() / 255 - m) / s).to(dtype)


# --------------------------------------------------------------------------------------
# ResNet9 (cifar10-resnet9)

def resnet9(widths=(64, 128, 256, 512)):
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from gen_reference import ResNet9  # the golden fixture's network, module names as daybreak's
    return ResNet9(widths)


# --------------------------------------------------------------------------------------
# airbench94

class _BatchNorm(nn.BatchNorm2d):
    """airbench's BatchNorm: eps 1e-12, running statistics with PyTorch momentum 1 - 0.6,
    weight frozen at 1, bias trained."""

    def __init__(self, channels, momentum=0.6):
        super().__init__(channels, eps=1e-12, momentum=1 - momentum)
        self.weight.requires_grad = False


class _Conv(nn.Conv2d):
    """3x3 'same' convolution without bias whose first in_channels filters start as the
    identity (torch.nn.init.dirac_ after PyTorch's default initialisation)."""

    def __init__(self, cin, cout):
        super().__init__(cin, cout, kernel_size=3, padding="same", bias=False)

    def reset_parameters(self):
        super().reset_parameters()
        w = self.weight.data
        torch.nn.init.dirac_(w[:w.size(1)])


class _Group(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv1, self.norm1 = _Conv(cin, cout), _BatchNorm(cout)
        self.conv2, self.norm2 = _Conv(cout, cout), _BatchNorm(cout)

    def forward(self, x):
        x = F.gelu(self.norm1(F.max_pool2d(self.conv1(x), 2)))
        return F.gelu(self.norm2(self.conv2(x)))


class Airbench94(nn.Module):
    WHITEN_WIDTH = 24  # 2 * 3 * 2^2: the patch eigenvectors and their negatives
    LOGIT_SCALE = 1 / 9

    def __init__(self, widths=(64, 256, 256), classes=10):
        super().__init__()
        self.whiten = nn.Conv2d(3, self.WHITEN_WIDTH, kernel_size=2, padding=0, bias=True)
        self.whiten.weight.requires_grad = False
        self.whiten.bias.data.zero_()
        self.block1 = _Group(self.WHITEN_WIDTH, widths[0])
        self.block2 = _Group(widths[0], widths[1])
        self.block3 = _Group(widths[1], widths[2])
        self.head = nn.Linear(widths[2], classes, bias=False)

    def forward(self, x):
        x = F.gelu(self.whiten(x))
        x = self.block3(self.block2(self.block1(x)))
        x = F.max_pool2d(x, 3).flatten(1)
        return self.head(x) * self.LOGIT_SCALE

    def init_whitening(self, train_images, eps=5e-4):
        """The whitening filters from the 2x2 patches of train_images (normalised, float):
        the patch covariance's eigenvectors scaled by 1/sqrt(eigenvalue + eps), largest first,
        and their negatives."""
        c, h, w = 3, 2, 2
        patches = train_images.unfold(2, h, 1).unfold(3, w, 1).transpose(1, 3).reshape(-1, c, h, w).float()
        flat = patches.view(patches.shape[0], -1)
        cov = (flat.T @ flat) / flat.shape[0]
        eigenvalues, eigenvectors = torch.linalg.eigh(cov, UPLO="U")
        eigenvalues = eigenvalues.flip(0).view(-1, 1, 1, 1)
        eigenvectors = eigenvectors.T.reshape(c * h * w, c, h, w).flip(0)
        scaled = eigenvectors / torch.sqrt(eigenvalues + eps)
        self.whiten.weight.data[:] = torch.cat((scaled, -scaled)).to(self.whiten.weight.dtype)

    def param_groups(self, lr, wd, bias_scaler):
        """airbench94's two SGD groups: the batch-norm biases at lr * bias_scaler, the rest at
        lr, both with the decoupled weight decay wd (PyTorch's weight_decay = wd / lr)."""
        norm_biases = [p for n, p in self.named_parameters() if "norm" in n and p.requires_grad]
        others = [p for n, p in self.named_parameters() if "norm" not in n and p.requires_grad]
        lr_b = lr * bias_scaler
        return [dict(params=norm_biases, lr=lr_b, weight_decay=wd / lr_b),
                dict(params=others, lr=lr, weight_decay=wd / lr)]


def airbench94():
    return Airbench94()
