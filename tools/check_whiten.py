#!/usr/bin/env python3
"""check_whiten.py - recompute airbench94's whitening filters with numpy and compare them with
the C implementation's dump (src/train/whiten.c, written by `test_whiten --dump FILE`).

Follows KellerJordan/cifar10-airbench legacy/airbench94.py (commit 1b8f7949) step by step:
    train_images = train_loader.normalize(train_loader.images[:5000])
    get_patches: x.unfold(2,h,1).unfold(3,w,1).transpose(1,3).reshape(-1,c,h,w).float()
    est_patch_covariance = (patches_flat.T @ patches_flat) / n
    eigenvalues, eigenvectors = torch.linalg.eigh(est_patch_covariance, UPLO='U')
    eigenvalues.flip(0), eigenvectors.T.reshape(c*h*w,c,h,w).flip(0)
    eigenvectors_scaled = eigenvectors / torch.sqrt(eigenvalues + eps)
    torch.cat((eigenvectors_scaled, -eigenvectors_scaled))
numpy stands in for torch (np.linalg.eigh is the same LAPACK driver family). Eigenvector signs
are implementation-defined, so each of the C filters k and k+12 is compared after aligning the
sign of numpy's eigenvector k to it. Also reports how far the source's fp16 normalisation
(images.half() / 255, Normalize on half tensors) moves the filters, for the notes.

A development tool, not a build or test dependency: needs numpy (pip install numpy).
Usage: check_whiten.py DUMP [CIFAR_DIR]   (CIFAR_DIR defaults to $DAYBREAK_DATA/cifar-10-batches-bin)
Exit 0 when every filter agrees to 1e-5 relative to its largest element, 1 otherwise.
"""
import os
import sys

import numpy as np

MEAN = np.array([0.4914, 0.4822, 0.4465])
STD = np.array([0.2470, 0.2435, 0.2616])
EPS = 5e-4
COUNT = 5000
RECORD = 3073


def load_first_images(cifar_dir, count):
    """The first `count` training records (data_batch_1.bin first), (count, 3, 32, 32) uint8."""
    raw = np.fromfile(os.path.join(cifar_dir, 'data_batch_1.bin'), dtype=np.uint8, count=count * RECORD)
    return raw.reshape(count, RECORD)[:, 1:].reshape(count, 3, 32, 32)


def whitening_filters(x, dtype):
    """x: normalised images (N, C, H, W). Returns (eigenvalues desc, filters (2d, C, 2, 2))."""
    n, c, h, w = x.shape
    # unfold(2,2,1).unfold(3,2,1): (N, C, H-1, W-1, 2, 2); the source's transpose(1,3) only
    # reorders patches, so move C next to the window to get (c, dy, dx) flattening.
    win = np.lib.stride_tricks.sliding_window_view(x, (2, 2), axis=(2, 3))
    patches = win.transpose(0, 2, 3, 1, 4, 5).reshape(-1, c * 4).astype(dtype)
    cov = (patches.T @ patches) / len(patches)
    vals, vecs = np.linalg.eigh(cov.astype(np.float64), UPLO='U')
    vals = vals[::-1]
    vecs = vecs.T[::-1]
    scaled = vecs / np.sqrt(vals + EPS)[:, None]
    return vals, np.concatenate([scaled, -scaled]).reshape(2 * c * 4, c, 2, 2)


def compare(name, ref_vals, ref_w, got_vals, got_w):
    worst = 0.0
    for k in range(12):
        r = ref_w[k].ravel()
        g = got_w[k].ravel()
        sign = 1.0 if np.dot(r, g) >= 0 else -1.0
        scale = np.abs(g).max()
        worst = max(worst, np.abs(sign * r - g).max() / scale,
                    np.abs(-sign * r - got_w[k + 12].ravel()).max() / scale)
    lam = np.abs(ref_vals - got_vals) / np.abs(got_vals)
    print('%-40s max filter diff (rel. to filter max) %.3g, max eigenvalue rel. diff %.3g' % (name, worst, lam.max()))
    return worst


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__)
        return 2
    cifar_dir = sys.argv[2] if len(sys.argv) == 3 else os.path.join(os.environ.get('DAYBREAK_DATA', ''),
                                                                    'cifar-10-batches-bin')
    with open(sys.argv[1]) as f:
        numbers = [float(line) for line in f if not line.startswith('#')]
    vals_c = np.array(numbers[:12])
    w_c = np.array(numbers[12:], dtype=np.float32).reshape(24, 3, 2, 2)
    assert np.array_equal(w_c[12:], -w_c[:12]), 'second half is not the negation of the first'

    u8 = load_first_images(cifar_dir, COUNT)
    x32 = ((u8.astype(np.float32) / np.float32(255) - MEAN.astype(np.float32)[:, None, None])
           / STD.astype(np.float32)[:, None, None])
    vals64, w64 = whitening_filters(x32.astype(np.float64), np.float64)
    worst = compare('numpy fp32 normalise, fp64 covariance', vals64, w64, vals_c, w_c)
    vals32, w32 = whitening_filters(x32, np.float32)
    compare('numpy fp32 normalise, fp32 covariance', vals32, w32, vals_c, w_c)
    # The source: images.half() / 255, then T.Normalize with half mean/std, patches .float().
    x16 = ((u8.astype(np.float16) / np.float16(255) - MEAN.astype(np.float16)[:, None, None])
           / STD.astype(np.float16)[:, None, None])
    vals16, w16 = whitening_filters(x16.astype(np.float32), np.float32)
    compare('source-like fp16 normalise, fp32 cov', vals16, w16, vals_c, w_c)
    ok = worst <= 1e-5
    print('OK' if ok else 'MISMATCH', '(threshold 1e-5 against the fp64 recomputation)')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
