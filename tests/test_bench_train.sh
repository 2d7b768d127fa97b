#!/usr/bin/env bash
# test_bench_train.sh — bench_train as a user runs it: --recipe runs the one CIFAR-10 recipe it
# names (one outside the default three too: it once printed no line and exited 0), a recipe of
# another dataset or an unknown one is refused with exit 2 and one line, and bad counts get the
# usage line.
# --tsv gives the same line tab-separated under a header; both carry the step costs.
# usage: test_bench_train.sh <path to bench_train>   (DAYBREAK_DATA: the CIFAR-10 folder)
set -uo pipefail
exe=$1
fail() { echo "FAIL: $*"; exit 1; }
if [ ! -d "${DAYBREAK_DATA:-}/cifar-10-batches-bin" ]; then
  [ "${CI:-}" = true ] && fail "CI=true and no CIFAR-10 under DAYBREAK_DATA='${DAYBREAK_DATA:-}'"
  echo "skipped: no CIFAR-10 under DAYBREAK_DATA='${DAYBREAK_DATA:-}'"; exit 77
fi

# A recipe outside the default three, on the CPU backend, a tiny batch: one line with its figures:
# launches, syncs (none in a step), host ms, MB moved, MB minimum, CPU s; batch, img/s, ms/step, build_s.
out=$("$exe" --backend cpu --recipe cifar10-alexnet --batch 2 --steps 1 --warmup 0 2>&1); rc=$?
[ $rc -eq 0 ] || fail "cifar10-alexnet: exit $rc: $out"
lines=$(echo "$out" | grep -c '^cpu ')
[ "$lines" -eq 1 ] || fail "cifar10-alexnet: $lines result lines, want 1: $out"
echo "$out" | grep -qE '^backend .* prec +launches +syncs +host_ms +MB_moved +MB_min +cpu_s +batch +img/s +ms/step +build_s$' ||
  fail "cifar10-alexnet: header: $out"
echo "$out" | grep -qE '^cpu +0 .* cifar10-alexnet +fp32 +[1-9][0-9]* +0\.00 +[0-9]+\.[0-9]{2} +[0-9]+ +[0-9]+ +[0-9]+\.[0-9]{2} +2 +[0-9]+\.[0-9] +[0-9]+\.[0-9] +[0-9]+\.[0-9]{2}$' ||
  fail "cifar10-alexnet: no step costs, img/s, ms/step and build_s: $out"

# --tsv: a header and one tab-separated line, every figure present and the error column empty.
out=$("$exe" --backend cpu --recipe cifar10-alexnet --batch 2 --steps 1 --warmup 0 --tsv 2>&1); rc=$?
[ $rc -eq 0 ] || fail "--tsv: exit $rc: $out"
[ "$(echo "$out" | head -1)" = "$(printf 'backend\tindex\tdevice\trecipe\tprecision\tbatch\timg_per_s\tms_per_step\tbuild_s\tlaunches\tsyncs\thost_ms\tmb_moved\tmb_min\tcpu_s\terror')" ] ||
  fail "--tsv: header: $out"
echo "$out" | tail -n +2 | awk -F'\t' 'NF != 16 || $1 != "cpu" || $4 != "cifar10-alexnet" || $7 !~ /^[0-9]+\.[0-9]$/ ||
  $9 !~ /^[0-9]+\.[0-9][0-9]$/ || $10 !~ /^[1-9][0-9]*$/ || $11 != "0.00" || $15 !~ /^[0-9]+\.[0-9][0-9]$/ ||
  $16 != "" { bad = 1 } END { exit bad || NR != 1 }' || fail "--tsv: the line: $out"

# Refusals: exit 2, one line naming the cause.
check_refused() {
  local what=$1 want=$2; shift 2
  local out rc
  out=$("$exe" "$@" 2>&1); rc=$?
  [ $rc -eq 2 ] || fail "$what: exit $rc, want 2: $out"
  [ "$(echo "$out" | wc -l)" -eq 1 ] || fail "$what: more than one line: $out"
  echo "$out" | grep -qF -- "$want" || fail "$what: '$want' not said: $out"
}
check_refused "another dataset's recipe" "recipe imagenette-resnet18 trains on imagenette" --recipe imagenette-resnet18
check_refused "an unknown recipe" "no-such-recipe" --recipe no-such-recipe
check_refused "--steps 0" "--steps and --batch must be >= 1" --steps 0
check_refused "an unknown option" "usage: bench_train" --frobnicate
echo "ok: bench_train --recipe and its refusals"
