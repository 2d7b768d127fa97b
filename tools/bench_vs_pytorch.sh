#!/usr/bin/env bash
# bench_vs_pytorch.sh — daybreak's training step next to PyTorch's on the same CPU, in one run:
# ResNet9 (cifar10-resnet9, the default) or airbench94 (--recipe airbench94); docs/winograd.md
# describes it and records its figures.
#
#   tools/bench_vs_pytorch.sh [--recipe cifar10-resnet9|airbench94] [--vulkan] [--no-cpu] [--steps N]
#                             [--batches "128 512"] [--no-profile] [--profile-batch B] [--build DIR]
#                             [--baseline DIR] [--python PATH]
#
# For each batch (default "128 512" for ResNet9, "1024" for airbench94): build/bench_train
# --recipe R --batch B on the cpu and opencl backends (and vulkan with --vulkan: lavapipe takes
# minutes per step), then tools/bench_pytorch.py --model M at the same batch in both layouts
# (NCHW and channels_last; the better one counts) when PyTorch is installed for PATH (--python,
# default python3; a column "not installed" otherwise). Then one table per batch: img/s and
# ms/step per backend and PyTorch (fp32), each daybreak backend's launches, syncs and host ms per step,
# CPU seconds per step (every thread of the process: comparable on a shared machine, where wall
# time is not), and opencl / PyTorch's best batch. Last (unless --no-profile) the per-op profile of 3 PoCL
# steps at batch 512 for ResNet9, 1024 for airbench94 (or --profile-batch B; daybreak train
# --profile on a 3*B-image subset). --no-cpu leaves out the CPU backend (a busy machine).
# Needs DAYBREAK_DATA (CIFAR-10). --baseline DIR adds an "opencl-base" column (DIR/bench_train
# on PoCL, measured right after ours at each batch; a build with bench_train --tsv) and
# DIR/daybreak's profile: before and after in the same run. The load average is printed with every measurement (a shared machine).
# Exit 0 when every measurement ran (PyTorch absent included), 1 when one failed, 2 on usage.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build
steps=3
batches=
recipe=cifar10-resnet9
vulkan=0
profile=1
baseline=
cpu=1
pbatch=
python=python3
usage() {
  echo "usage: tools/bench_vs_pytorch.sh [--recipe cifar10-resnet9|airbench94] [--vulkan] [--no-cpu] [--steps N]" \
       "[--batches \"128 512\"] [--no-profile] [--profile-batch B] [--build DIR] [--baseline DIR] [--python PATH]" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case $1 in
    --vulkan) vulkan=1 ;;
    --no-profile) profile=0 ;;
    --no-cpu) cpu=0 ;;
    --recipe) [ $# -ge 2 ] || usage; recipe=$2; shift ;;
    --profile-batch) [ $# -ge 2 ] || usage; pbatch=$2; shift ;;
    --steps) [ $# -ge 2 ] || usage; steps=$2; shift ;;
    --batches) [ $# -ge 2 ] || usage; batches=$2; shift ;;
    --build) [ $# -ge 2 ] || usage; build=$2; shift ;;
    --baseline) [ $# -ge 2 ] || usage; baseline=$2; shift ;;
    --python) [ $# -ge 2 ] || usage; python=$2; shift ;;
    *) usage ;;
  esac
  shift
done
case $recipe in
  cifar10-resnet9) model=resnet9; batches=${batches:-128 512}; pbatch=${pbatch:-512} ;;
  airbench94) model=airbench94; batches=${batches:-1024}; pbatch=${pbatch:-1024} ;;
  *) echo "bench_vs_pytorch: --recipe must be cifar10-resnet9 or airbench94 (the networks tools/torch_nets.py has), got '$recipe'" >&2
     exit 2 ;;
esac
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
declare -A ips ms costs layouts cpus
load() { cut -d' ' -f1 /proc/loadavg; }
echo "daybreak vs PyTorch, $recipe training, $steps timed steps after 1 warm-up, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(load)"
for b in $batches; do
  for be in $backends; do
    exe=$build/bench_train
    [ "$be" = opencl-base ] && exe=$baseline/bench_train
    out=$("$exe" --recipe "$recipe" --backend "${be%-base}" --batch "$b" --steps "$steps" --warmup 1 --tsv 2>&1)
    line=$(tail -n 1 <<<"$out")
    # --tsv, read by the header's names: img_per_s is empty on an error line; a build without
    # step costs (an older baseline) has no launches, syncs, host_ms, cpu_s columns
    read -r v t c cpu < <(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
        $col["img_per_s"] ~ /^[0-9.]+$/ { c = "-"; cpu = "-"
          if ("launches" in col) { c = $col["launches"] "/" $col["syncs"] "/" $col["host_ms"]; cpu = $col["cpu_s"] }
          print $col["img_per_s"], $col["ms_per_step"], c, cpu }' <<<"$(grep -E $'^backend\t' <<<"$out" | head -1; echo "$line")")
    if [ -z "${v:-}" ]; then
      echo "  $be batch $b failed: $line"
      v=failed t=failed c=- cpu=-
      failed=1
    fi
    ips[$be,$b]=$v ms[$be,$b]=$t costs[$be,$b]=$c cpus[$be,$b]=$cpu
    echo "  $be batch $b: $v img/s, $t ms/step, $cpu CPU s/step, launches/syncs/host ms per step $c (load $(load))"
  done
  best_layout=
  for layout in nchw nhwc; do
    flag=
    [ $layout = nhwc ] && flag=--channels-last
    line=$("$python" "$root/tools/bench_pytorch.py" --model "$model" --variant fp32 --batch "$b" --steps "$steps" --warmup 1 \
           $flag 2>&1 | tail -n 1)
    rc=${PIPESTATUS[0]}
    case $line in
      pytorch\ *img/s*)
        v=$(awk '{ for (i = 1; i < NF; i++) if ($i == "img/s") print $(i+1) }' <<<"$line")
        t=$(awk '{ for (i = 1; i < NF; i++) if ($i == "ms/step") print $(i+1) }' <<<"$line")
        cpu=$(awk '{ for (i = 1; i < NF; i++) if ($i == "cpu_s/step") print $(i+1) }' <<<"$line")
        ptver=$(awk '{ print $2 }' <<<"$line")
        echo "  pytorch $layout batch $b: $v img/s, $t ms/step, $cpu CPU s/step (load $(load))"
        if [ -z "$best_layout" ] || awk -v a="$v" -v b="${ips[pytorch,$b]}" 'BEGIN { exit !(a > b) }'; then
          ips[pytorch,$b]=$v ms[pytorch,$b]=$t cpus[pytorch,$b]=$cpu best_layout=$layout
        fi ;;
      "pytorch: not installed"*) ips[pytorch,$b]="n/a" ms[pytorch,$b]="n/a"; ptnote=$line; break ;;
      *) echo "  pytorch $layout batch $b failed (exit $rc): $line"; ips[pytorch,$b]=failed ms[pytorch,$b]=failed
         failed=1; break ;;
    esac
  done
  layouts[$b]=${best_layout:-}
done

best=0
for b in $batches; do
  v=${ips[pytorch,$b]}
  case $v in [0-9]*) best=$(awk -v a="$v" -v b="$best" 'BEGIN { print (a > b) ? a : b }') ;; esac
done
printf '\n%-6s %-12s %10s %10s %10s %22s\n' batch measure img/s ms/step cpu_s/step "launches/syncs/host_ms"
for b in $batches; do
  for be in $backends pytorch; do
    what=$be
    [ $be = pytorch ] && [ -n "${layouts[$b]:-}" ] && what="pytorch-${layouts[$b]}"
    printf '%-6s %-12s %10s %10s %10s %22s\n' "$b" "$what" "${ips[$be,$b]}" "${ms[$be,$b]}" "${cpus[$be,$b]:--}" \
      "${costs[$be,$b]:--}"
  done
  ratio=n/a
  case ${ips[opencl,$b]} in [0-9]*) [ "$best" != 0 ] && ratio=$(awk -v a="${ips[opencl,$b]}" -v b="$best" 'BEGIN { printf "%.2fx", a / b }') ;; esac
  echo "       opencl / PyTorch's best: $ratio"
done
if [ "$best" != 0 ]; then
  echo "(PyTorch $ptver, its better layout per batch; best PyTorch batch: $best img/s; the bar for airbench94 is opencl >= 2x that;"
  echo " cpu_s/step: the process's CPU seconds per step, every thread: the work, comparable when the machine is shared)"
else
  echo "(no PyTorch figure: ${ptnote:-every PyTorch run failed})"
fi

if [ $profile = 1 ]; then
  for dir in "$build" ${baseline:+"$baseline"}; do
    out=$(mktemp -d)
    echo
    echo "per-op profile of PoCL $recipe steps ($dir/daybreak train --recipe $recipe --backend opencl --batch $pbatch --train-subset $((3 * pbatch)) --profile; load $(load)):"
    "$dir/daybreak" train --recipe "$recipe" --backend opencl --batch "$pbatch" --train-subset $((3 * pbatch)) \
      --test-subset "$pbatch" --epochs 1 --all-epochs --profile --no-progress --quiet --out "$out/run" >"$out/log" 2>&1
    rc=$?
    # the table, its "outside ops" and step-costs lines and the footnote on ops run by another algorithm
    sed -n '/^profile:/,/^outside ops/p;/^per step:/p;/^\* run as/p' "$out/log"
    # exit 3: one epoch of a subset does not reach the recipe's target, as expected
    if [ $rc != 0 ] && [ $rc != 3 ]; then
      echo "  daybreak train failed (exit $rc): $(tail -n 1 "$out/log")"
      failed=1
    fi
    rm -rf "$out"
  done
fi
exit $failed
