#!/usr/bin/env bash
# bench_airbench94_runs.sh — whole airbench94 runs of daybreak and of PyTorch on this machine,
# alternated round by round in one window, so both see the same load: time to accuracy on the
# clock of each (daybreak: the last epoch's clock_seconds of result.json, whitening and final
# test-time-augmented evaluation included; PyTorch: tools/airbench94_torch.py's clock, which
# counts the same work) and the ratio.
#
#   tools/bench_airbench94_runs.sh [--rounds N] [--backend B] [--build DIR] [--python PATH]
#                                  [--torch-script FILE] [--train-subset N] [--test-subset N]
#                                  [--epochs E] [--seed S] [--batch B]
#
# Each round runs `daybreak train --recipe airbench94 --backend B --all-epochs` (default backend
# opencl) and `PATH FILE --device cpu --dtype float --runs 1` (FILE: tools/airbench94_torch.py,
# the GPU kit's PyTorch peer), daybreak first in odd rounds and PyTorch first in even ones.
# --train-subset, --test-subset, --epochs, --seed and --batch go to both (a short rehearsal: the whole
# run takes about an hour on the 2-core development machine). Prints one line per run (round,
# who, clock seconds, accuracy, load average at its start and end), then the mean clock of each
# and daybreak / PyTorch. Needs DAYBREAK_DATA (CIFAR-10). Exit 0 when every run finished, 1
# when one failed (its last output line is printed), 2 on usage.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build
python=python3
script=$root/tools/airbench94_torch.py
rounds=1
backend=opencl
shared=()
usage() {
  echo "usage: tools/bench_airbench94_runs.sh [--rounds N] [--backend B] [--build DIR] [--python PATH]" \
       "[--torch-script FILE] [--train-subset N] [--test-subset N] [--epochs E] [--seed S] [--batch B]" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) [ $# -ge 2 ] || usage; rounds=$2; shift ;;
    --backend) [ $# -ge 2 ] || usage; backend=$2; shift ;;
    --build) [ $# -ge 2 ] || usage; build=$2; shift ;;
    --python) [ $# -ge 2 ] || usage; python=$2; shift ;;
    --torch-script) [ $# -ge 2 ] || usage; script=$2; shift ;;
    --train-subset|--test-subset|--epochs|--seed|--batch) [ $# -ge 2 ] || usage; shared+=("$1" "$2"); shift ;;
    *) usage ;;
  esac
  shift
done
case $rounds in ''|*[!0-9]*|0) echo "bench_airbench94_runs: --rounds must be a positive integer" >&2; exit 2 ;; esac
if [ -z "${DAYBREAK_DATA:-}" ]; then
  echo "bench_airbench94_runs: DAYBREAK_DATA is not set (a folder holding cifar-10-batches-bin/)" >&2
  exit 1
fi
[ -x "$build/daybreak" ] || { echo "bench_airbench94_runs: $build/daybreak not found: build first" >&2; exit 1; }
[ -f "$script" ] || { echo "bench_airbench94_runs: $script not found (the PyTorch airbench94 of the GPU kit; --torch-script names another)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
load() { cut -d' ' -f1 /proc/loadavg; }
failed=0
declare -A sum count
echo "airbench94 whole runs, daybreak ($backend) and PyTorch (CPU, fp32) alternated, $rounds round(s), ${shared[*]:-full runs}, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores"
printf '%-5s %-9s %10s %9s %11s\n' round who clock_s accuracy load
run_daybreak() {
  local r=$1 out=$work/daybreak-$1 l0 rc
  l0=$(load)
  "$build/daybreak" train --recipe airbench94 --backend "$backend" --all-epochs --no-progress --quiet \
    "${shared[@]}" --out "$out" >"$work/daybreak-$r.log" 2>&1
  rc=$?
  # exit 3: the target was not reached (a subset, or an unlucky run): the figures still stand
  if { [ $rc = 0 ] || [ $rc = 3 ]; } && [ -f "$out/result.json" ]; then
    read -r clock acc < <("$python" -c 'import json, sys
d = json.load(open(sys.argv[1])); e = d["epochs"][-1]
print(e["clock_seconds"], e["test_accuracy"])' "$out/result.json")
    printf '%-5s %-9s %10.1f %8.2f%% %5s-%-5s\n' "$r" daybreak "$clock" "$acc" "$l0" "$(load)"
    sum[daybreak]=$(awk -v a="${sum[daybreak]:-0}" -v b="$clock" 'BEGIN { print a + b }'); count[daybreak]=$(( ${count[daybreak]:-0} + 1 ))
  else
    echo "$r     daybreak  failed (exit $rc): $(tail -n 1 "$work/daybreak-$r.log")"
    failed=1
  fi
}
run_torch() {
  local r=$1 l0 line rc
  l0=$(load)
  line=$("$python" "$script" --device cpu --dtype float --runs 1 "${shared[@]}" 2>&1 | grep -E '^airbench94-torch run |rror' | tail -n 1)
  rc=${PIPESTATUS[0]}
  if [ "$rc" = 0 ] && [[ $line == airbench94-torch\ run* ]]; then
    read -r acc clock < <(awk '{ for (i = 1; i < NF; i++) { if ($i == "tta_accuracy") a = $(i+1); if ($i == "clock") c = $(i+1) }
                                 sub("%", "", a); print a, c }' <<<"$line")
    printf '%-5s %-9s %10.1f %8.2f%% %5s-%-5s\n' "$r" pytorch "$clock" "$acc" "$l0" "$(load)"
    sum[pytorch]=$(awk -v a="${sum[pytorch]:-0}" -v b="$clock" 'BEGIN { print a + b }'); count[pytorch]=$(( ${count[pytorch]:-0} + 1 ))
  else
    echo "$r     pytorch   failed (exit $rc): $line"
    failed=1
  fi
}
for ((r = 1; r <= rounds; r++)); do
  if [ $((r % 2)) = 1 ]; then run_daybreak $r; run_torch $r; else run_torch $r; run_daybreak $r; fi
done
if [ "${count[daybreak]:-0}" -gt 0 ] && [ "${count[pytorch]:-0}" -gt 0 ]; then
  awk -v a="${sum[daybreak]}" -v na="${count[daybreak]}" -v b="${sum[pytorch]}" -v nb="${count[pytorch]}" \
    'BEGIN { printf "mean clock: daybreak %.1f s (%d runs), PyTorch %.1f s (%d runs); daybreak / PyTorch %.2f\n", a / na, na, b / nb, nb, (a / na) / (b / nb) }'
fi
exit $failed
