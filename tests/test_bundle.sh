#!/usr/bin/env bash
# test_bundle.sh SOURCE_DIR BUILD_DIR DATA_DIR — the portable bundle as a user on another
# machine runs it (docs/gpu.md): tools/bundle.sh makes the tarball, which is unpacked in a
# temporary folder outside the source tree and run through a symlink from a third folder, with
# a clean environment (env -i with only HOME and PATH, as a login shell has them):
#   1. nothing in the binaries names the source tree except assertion messages (__FILE__):
#      kernels, shaders, recipes and platform profiles are embedded;
#   2. the launchers run bench_train too, refuse a glibc older than the bundle needs, and load
#      the bundled libstdc++ only where the system's is too old (both cases simulated);
#      `daybreak devices` lists PoCL and lavapipe and the ICD files that load them;
#   3. `daybreak pack-data` packs the real CIFAR-10 (zstd level 1, the fastest);
#   4. a short real-data training at batch 8 on PoCL from the data folder and from the pack
#      (16 training and 16 test images: two steps), and on lavapipe from the folder (8 and 8:
#      one step; lavapipe compiles every pipeline on first use).
# A device that is missing skips (77), or fails under CI=true. HOME is the user's, so the
# compiled-kernel cache the other tests filled is used, as it would be on a second run.
set -uo pipefail
src=$1 build=$2 data=$3
fail() { echo "FAIL: $*"; exit 1; }
skip() { if [ "${CI:-}" = true ]; then fail "$* (CI=true: a missing device or dataset fails)"; fi; echo "skipped: $*"; exit 77; }
[ -d "$data/cifar-10-batches-bin" ] || skip "CIFAR-10 not found in $data"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/dbk-test-bundle.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
t0=$(date +%s)
"$src/tools/bundle.sh" "$build" "$tmp" || fail "tools/bundle.sh failed"
tarball=$(ls "$tmp"/daybreak-*-linux-*.tar.gz) || fail "no tarball"
mkdir "$tmp/unpacked" "$tmp/bin" "$tmp/work"
tar -C "$tmp/unpacked" -xzf "$tarball" || fail "cannot unpack $tarball"
dir=$(ls -d "$tmp"/unpacked/daybreak-*)
for f in daybreak bench_train README.md MANIFEST.txt bin/daybreak bin/bench_train lib/libclblast.so.1 \
         lib/libcjson.so.1 lib/libOpenCL.so.1 lib/libvulkan.so.1 lib/libzstd.so.1 lib/gcc/libstdc++.so.6; do
  [ -e "$dir/$f" ] || fail "the bundle lacks $f"
done
grep -q 'glibc [0-9.]* or newer' "$dir/README.md" || fail "README.md does not state the glibc requirement"
ln -s "$dir/daybreak" "$tmp/bin/daybreak"
echo "bundle: $(du -k "$tarball" | cut -f1) KiB, made in $(( $(date +%s) - t0 )) s"

# 1. The source tree is named only by assertion messages.
leaks=$(strings "$dir/bin/daybreak" "$dir/bin/bench_train" | grep -F "$src" | grep -vE '\.[ch]$' || true)
[ -z "$leaks" ] || fail "the binaries name the source tree: $leaks"

run() {   # a clean environment, from a folder that is neither the source tree nor the bundle
  (cd "$tmp/work" && env -i HOME="$HOME" PATH=/usr/bin:/bin "$tmp/bin/daybreak" "$@")
}

# The launchers: bench_train's too, and the glibc check (a copy that asks for glibc 99.0).
out=$(cd "$tmp/work" && env -i HOME="$HOME" PATH=/usr/bin:/bin "$dir/bench_train" --help 2>&1)
echo "$out" | grep -q '^usage: bench_train' || fail "bench_train --help through its launcher: $out"
sed 's/^need=[0-9.]*$/need=99.0/' "$dir/daybreak" >"$dir/daybreak-old-glibc"
chmod +x "$dir/daybreak-old-glibc"
out=$(env -i PATH=/usr/bin:/bin "$dir/daybreak-old-glibc" --version 2>&1)
[ $? -eq 1 ] && echo "$out" | grep -q 'needs glibc 99.0 or newer' || fail "the launcher's glibc check: $out"
# Where the system's libstdc++ lacks the symbol version the bundle needs (simulated: a launcher
# copy asking for GLIBCXX_99.0), the bundled one in lib/gcc is loaded; otherwise the system's.
sed 's/GLIBCXX_[0-9.]*/GLIBCXX_99.0/g' "$dir/daybreak" >"$dir/daybreak-old-libstdcxx"
chmod +x "$dir/daybreak-old-libstdcxx"
loaded() { env -i PATH=/usr/bin:/bin LD_DEBUG=libs "$1" --version 2>&1 | grep -E 'calling init: .*libstdc\+\+' | head -1; }
loaded "$dir/daybreak-old-libstdcxx" | grep -q "$dir/lib/gcc/libstdc++.so.6" || fail "lib/gcc/libstdc++ not used"
loaded "$dir/daybreak" | grep -q "$dir/lib/gcc/" && fail "the bundled libstdc++ was used though the system's is new enough"

# 2. devices
out=$(run devices 2>&1) || fail "daybreak devices failed: $out"
echo "$out" | grep -E 'devices?$|drivers:|loads|does not load'
echo "$out" | grep -qE '^opencl: [1-9]' || skip "no OpenCL device through the bundle (PoCL)"
echo "$out" | grep -qE '^vulkan: [1-9]' || skip "no Vulkan device through the bundle (lavapipe)"
echo "$out" | grep -q 'pocl.icd: .* loads' || fail "devices does not report the PoCL ICD file as loading"
echo "$out" | grep -q 'lvp_icd.*\.json: .* loads' || fail "devices does not report the lavapipe ICD file as loading"

# 3. pack-data
t=$(date +%s)
out=$(run pack-data --data "$data" --out "$tmp/cifar10.dbkpack" --level 1 2>&1) || fail "pack-data failed: $out"
echo "$out ($(( $(date +%s) - t )) s)"

# 4. training
train() {   # backend, data, name, images (training and test)
  local t=$(date +%s) rc
  out=$(run train --recipe quick --backend "$1" --data "$2" --train-subset "$4" --test-subset "$4" --batch 8 --epochs 1 \
        --seed 1 --quiet --no-progress --out "$tmp/work/run-$3" 2>&1)
  rc=$?
  # Exit 3: a finished run below the recipe's target, as two steps are.
  [ $rc -eq 3 ] || fail "train $3 exited $rc, expected 3: $out"
  [ -s "$tmp/work/run-$3/result.json" ] && [ -s "$tmp/work/run-$3/model.ckpt" ] || fail "train $3 wrote no result"
  echo "train $3: ok ($(( $(date +%s) - t )) s)"
}
train opencl "$data" opencl-folder 16
train opencl "$tmp/cifar10.dbkpack" opencl-pack 16
train vulkan "$data" vulkan-folder 8
echo "bundle test passed in $(( $(date +%s) - t0 )) s"
