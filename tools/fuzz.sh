#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ (clang, ASan + UBSan) in ./build-fuzz and runs each for
# a bounded time on a seed corpus made from real files at run time (a small checkpoint and a
# kernel cache written by daybreak's own writers, platforms/*.json, the first records of the
# CIFAR-10 data, dataset packs of those files made by the pack writer, and a few Imagenette
# JPEGs, colour and grayscale, with its classes.txt, and a pack of two of them in the ImageNet
# folder layout, when DAYBREAK_DATA is set). Fails on any
# crash, sanitizer report or leak; the
# crashing input is left in build-fuzz/artifacts/.
#   tools/fuzz.sh [seconds per target, default 25]
# Prints one line per target: executions, executions per second, corpus size.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DBK_FUZZ_BUILD_DIR:-$root/build-fuzz}
seconds=${1:-25}
targets=(fuzz_checkpoint fuzz_profile fuzz_cifar10 fuzz_kcache fuzz_pack fuzz_image)

"$root/tools/install-deps.sh"
CC=clang cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDBK_FUZZ=ON -DDBK_BUILD_TESTS=OFF \
  -DDBK_WITH_OPENCL=OFF -DDBK_WITH_VULKAN=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" fuzz_seeds >/dev/null

seeds=$build/seeds
rm -rf "$seeds" "$build/corpus" "$build/artifacts"
mkdir -p "$build/artifacts"
cifar=()
if [ -n "${DAYBREAK_DATA:-}" ] && [ -d "$DAYBREAK_DATA/cifar-10-batches-bin" ]; then
  cifar=("$DAYBREAK_DATA/cifar-10-batches-bin")
elif [ "${CI:-}" = true ]; then
  echo "fuzz: DAYBREAK_DATA has no cifar-10-batches-bin/ (needed for the CIFAR-10 seeds in CI)" >&2
  exit 1
fi
mkdir -p "$seeds/profile"
cp "$root"/platforms/*.json "$seeds/profile/"
mkdir -p "$seeds/image"
imagenette=${DAYBREAK_DATA:-}/imagenette2-224-mini
if [ -n "${DAYBREAK_DATA:-}" ] && [ -d "$imagenette/train" ]; then
  cp "$imagenette/classes.txt" "$imagenette/train/n02102040/n02102040_725.JPEG" "$seeds/image/"
  # The first files by name, without `| head` (under pipefail, sort killed by SIGPIPE when head
  # exits first would end the script with 141).
  mapfile -t jpegs < <(find "$imagenette/train/n01440764" -name '*.JPEG' | sort)
  cp "${jpegs[@]:0:3}" "$seeds/image/"
  # an image folder of two real JPEGs, which fuzz_seeds packs for fuzz_pack (stored entries)
  mkdir -p "$seeds/imagefolder/train/n02102040" "$seeds/imagefolder/val/n02102040"
  cp "$imagenette/train/n02102040/n02102040_725.JPEG" "$seeds/imagefolder/train/n02102040/"
  mapfile -t jpegs < <(find "$imagenette/val/n02102040" -name '*.JPEG' | sort)
  cp "${jpegs[0]}" "$seeds/imagefolder/val/n02102040/"
  echo n02102040 > "$seeds/imagefolder/classes.txt"
elif [ "${CI:-}" = true ]; then
  echo "fuzz: DAYBREAK_DATA has no imagenette2-224-mini/ (needed for the image seeds in CI)" >&2
  exit 1
fi
"$build/fuzz/fuzz_seeds" "$seeds" "${cifar[@]}"

export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
status=0
for t in "${targets[@]}"; do
  kind=${t#fuzz_}
  corpus=$build/corpus/$kind
  mkdir -p "$corpus"
  cp "$seeds/$kind"/* "$corpus/" 2>/dev/null || true
  log=$build/$t.log
  if "$build/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
       -print_final_stats=1 -artifact_prefix="$build/artifacts/$t-" "$corpus" >"$log" 2>&1; then
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
    echo "fuzz: $t: $execs executions in ${seconds}s ($rate/s), corpus $(ls "$corpus" | wc -l) inputs"
  else
    echo "fuzz: $t FAILED (log $log, input in $build/artifacts/):" >&2
    grep -E "ERROR|SUMMARY|runtime error" "$log" | head -5 >&2
    status=1
  fi
done
exit $status
