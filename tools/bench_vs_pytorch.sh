#!/usr/bin/env bash
# bench_vs_pytorch.sh — daybreak's ResNet9 training throughput next to PyTorch's, in one run
# (issue 12, "The bar"); docs/winograd.md describes it and records its figures.
#
#   tools/bench_vs_pytorch.sh [--vulkan] [--no-cpu] [--steps N] [--batches "128 512"] [--no-profile]
#                             [--profile-batch B] [--build DIR] [--baseline DIR]
#
# For each batch: build/bench_train --recipe cifar10-resnet9 --batch B on the cpu and opencl
# backends (and vulkan with --vulkan: lavapipe takes minutes per step), and
# tools/bench_pytorch.py at the same batch when PyTorch is installed (a column "not installed"
# otherwise). Then one table, img/s per backend, PyTorch, and opencl / PyTorch's best batch.
# Last (unless --no-profile) the per-op profile of 3 PoCL ResNet9 steps at batch 512 (or
# --profile-batch B; daybreak train --profile on a 3*B-image subset). --no-cpu leaves out the
# CPU backend (a busy machine: the column the Winograd work does not change). Needs DAYBREAK_DATA (CIFAR-10).
# --baseline DIR adds an "opencl-base" column (DIR/bench_train on PoCL, measured right after
# ours at each batch) and DIR/daybreak's profile: before and after in the same run.
# Exit 0 when every measurement ran (PyTorch absent included), 1 when one failed, 2 on usage.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build
steps=3
batches="128 512"
vulkan=0
profile=1
baseline=
cpu=1
pbatch=512
usage() {
  echo "usage: tools/bench_vs_pytorch.sh [--vulkan] [--no-cpu] [--steps N] [--batches \"128 512\"] [--no-profile]" \
       "[--profile-batch B] [--build DIR] [--baseline DIR]" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case $1 in
    --vulkan) vulkan=1 ;;
    --no-profile) profile=0 ;;
    --no-cpu) cpu=0 ;;
    --profile-batch) [ $# -ge 2 ] || usage; pbatch=$2; shift ;;
    --steps) [ $# -ge 2 ] || usage; steps=$2; shift ;;
    --batches) [ $# -ge 2 ] || usage; batches=$2; shift ;;
    --build) [ $# -ge 2 ] || usage; build=$2; shift ;;
    --baseline) [ $# -ge 2 ] || usage; baseline=$2; shift ;;
    *) usage ;;
  esac
  shift
done
case $steps in ''|*[!0-9]*|0) echo "bench_vs_pytorch: --steps must be a positive integer" >&2; exit 2 ;; esac
for b in $batches $pbatch; do
  case $b in ''|*[!0-9]*|0) echo "bench_vs_pytorch: batch '$b' is not a positive integer" >&2; exit 2 ;; esac
done
if [ -z "${DAYBREAK_DATA:-}" ]; then
  echo "bench_vs_pytorch: DAYBREAK_DATA is not set (a folder holding cifar-10-batches-bin/)" >&2
  exit 1
fi
for dir in "$build" ${baseline:+"$baseline"}; do
  for exe in bench_train daybreak; do
    if [ ! -x "$dir/$exe" ]; then
      echo "bench_vs_pytorch: $dir/$exe not found: build first (cmake --build $dir)" >&2
      exit 1
    fi
  done
done

backends="opencl"
[ -n "$baseline" ] && backends="$backends opencl-base"
[ $cpu = 1 ] && backends="cpu $backends"
[ $vulkan = 1 ] && backends="$backends vulkan"
failed=0
declare -A ips
echo "daybreak vs PyTorch, ResNet9 (cifar10-resnet9) training, $steps timed steps after 1 warm-up, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores"
for b in $batches; do
  for be in $backends; do
    exe=$build/bench_train
    [ "$be" = opencl-base ] && exe=$baseline/bench_train
    line=$("$exe" --recipe cifar10-resnet9 --backend "${be%-base}" --batch "$b" --steps "$steps" --warmup 1 --tsv 2>&1 | tail -n 1)
    # --tsv: the 7th column is img/s, empty when the line is an error
    v=$(awk -F'\t' 'NF >= 9 && $7 ~ /^[0-9.]+$/ { print $7 }' <<<"$line")
    if [ -z "$v" ]; then
      echo "  $be batch $b failed: $line"
      v=failed
      failed=1
    fi
    ips[$be,$b]=$v
    echo "  $be batch $b: $v img/s"
  done
  line=$(python3 "$root/tools/bench_pytorch.py" --batch "$b" --steps "$steps" --warmup 1 2>&1 | tail -n 1)
  rc=${PIPESTATUS[0]}
  case $line in
    pytorch\ *img/s*) ips[pytorch,$b]=$(awk '{ for (i = 1; i < NF; i++) if ($i == "img/s") print $(i+1) }' <<<"$line")
                      ptver=$(awk '{ print $2 }' <<<"$line") ;;
    "pytorch: not installed"*) ips[pytorch,$b]="n/a"; ptnote=$line ;;
    *) echo "  pytorch batch $b failed (exit $rc): $line"; ips[pytorch,$b]=failed; failed=1 ;;
  esac
  echo "  pytorch batch $b: ${ips[pytorch,$b]} img/s"
done

best=0
for b in $batches; do
  v=${ips[pytorch,$b]}
  case $v in [0-9]*) best=$(awk -v a="$v" -v b="$best" 'BEGIN { print (a > b) ? a : b }') ;; esac
done
printf '\n%-6s' batch
for be in $backends; do printf ' %12s' "$be"; done
printf ' %12s %18s\n' pytorch "opencl/pt-best"
for b in $batches; do
  printf '%-6s' "$b"
  for be in $backends; do printf ' %12s' "${ips[$be,$b]}"; done
  ratio=n/a
  case ${ips[opencl,$b]} in [0-9]*) [ "$best" != 0 ] && ratio=$(awk -v a="${ips[opencl,$b]}" -v b="$best" 'BEGIN { printf "%.2fx", a / b }') ;; esac
  printf ' %12s %18s\n' "${ips[pytorch,$b]}" "$ratio"
done
if [ "$best" != 0 ]; then
  echo "(img/s; PyTorch $ptver; best PyTorch batch: $best img/s; the bar is opencl >= 1.5x that)"
else
  echo "(img/s; no PyTorch figure: ${ptnote:-every PyTorch run failed})"
fi

if [ $profile = 1 ]; then
  for dir in "$build" ${baseline:+"$baseline"}; do
    out=$(mktemp -d)
    echo
    echo "per-op profile of PoCL ResNet9 steps ($dir/daybreak train --recipe cifar10-resnet9 --backend opencl --batch $pbatch --train-subset $((3 * pbatch)) --profile):"
    "$dir/daybreak" train --recipe cifar10-resnet9 --backend opencl --batch "$pbatch" --train-subset $((3 * pbatch)) \
      --test-subset "$pbatch" --epochs 1 --all-epochs --profile --no-progress --quiet --out "$out/run" >"$out/log" 2>&1
    rc=$?
    # the table, its "outside ops" line and the footnote on ops run by another algorithm
    sed -n '/^profile:/,/^outside ops/p;/^\* run as/p' "$out/log"
    # exit 3: one epoch of a subset does not reach the recipe's target, as expected
    if [ $rc != 0 ] && [ $rc != 3 ]; then
      echo "  daybreak train failed (exit $rc): $(tail -n 1 "$out/log")"
      failed=1
    fi
    rm -rf "$out"
  done
fi
exit $failed
