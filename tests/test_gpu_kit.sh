#!/usr/bin/env bash
# test_gpu_kit.sh SOURCE_DIR BUILD_DIR DATA_DIR — the GPU kit rehearsed on PoCL and lavapipe
# (docs/gpu.md), as a lease would run it:
#   1. tools/gpu-pack.sh packs the bundle, the source-JPEG tar and COMMIT, saying what travels;
#      with a limit the pack cannot meet it refuses and writes nothing;
#   2. tools/gpu-check.sh --smoke runs every default stage at tiny sizes, and its output keeps the
#      device tool's contract: at most 8 plain files, flat, names of [A-Za-z0-9._-], each under
#      16 MiB; summary.md has exactly one row per stage, each ok (torch: ok, or skipped because
#      PyTorch is not installed), the check passed on both APIs, bench.tsv has a figure per API,
#      runs.tar.gz holds a result.json and no checkpoint, report.md is there, and the summary
#      has a step profile per API;
#   2b. the tune stage, named on its own: a tuned profile per API lands in runs.tar.gz;
#   3. drills: no OpenCL ICD (the drivers stage writes one and finds the device), a broken op
#      (the check fails and names relu_fwd), and a deadline that cuts a stage (the check is cut,
#      the call ends on time, and the summary and packaging still arrive).
# A missing device, dataset or the JPEG tar skips (77), or fails under CI=true.
set -uo pipefail
src=$1 build=$2 data=$3
fail() { echo "FAIL: $*"; exit 1; }
skip() { if [ "${CI:-}" = true ]; then fail "$* (CI=true: a missing device, dataset or tool fails)"; fi; echo "skipped: $*"; exit 77; }
[ -f "$data/cifar10-jpeg.tar.gz" ] || skip "no cifar10-jpeg.tar.gz in $data"
py=python3
python3 -c 'import PIL' 2>/dev/null || py=/usr/bin/python3
"$py" -c 'import PIL' 2>/dev/null || skip "no Python with Pillow (tools/install-deps.sh installs python3-pil)"
devices_out=$("$build/daybreak" devices)
grep -q '^opencl: [1-9]' <<<"$devices_out" || skip "no OpenCL device"
grep -q '^vulkan: [1-9]' <<<"$devices_out" || skip "no Vulkan device"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/dbk-test-gpukit.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$src" || fail "cannot enter $src"
export DBK_GPU_PYTHON=$py

# 1. the pack
out=$(tools/gpu-pack.sh --build "$build" --jpeg-tar "$data/cifar10-jpeg.tar.gz" --out "$tmp/in" 2>&1) || fail "gpu-pack: $out"
echo "$out" | tail -1
echo "$out" | grep -qE 'of the 60 MiB limit' || fail "gpu-pack did not say what travels: $out"
for f in COMMIT cifar10-jpeg.tar.gz; do [ -f "$tmp/in/$f" ] || fail "the pack lacks $f"; done
ls "$tmp"/in/daybreak-*-linux-*.tar.gz >/dev/null 2>&1 || fail "the pack lacks the bundle"
out=$(tools/gpu-pack.sh --build "$build" --jpeg-tar "$data/cifar10-jpeg.tar.gz" --out "$tmp/small" --limit-mib 5 2>&1)
[ $? -eq 1 ] || fail "a pack over --limit-mib 5 did not exit 1: $out"
echo "$out" | grep -q 'over the 5 MiB limit; nothing written' || fail "the refusal does not say why: $out"
[ ! -e "$tmp/small" ] && ! ls -d "$tmp"/small.tmp.* >/dev/null 2>&1 || fail "the refused pack left files behind"

# The device tool's rules for what comes back.
contract() {   # out dir
  local n
  n=$(find "$1" -mindepth 1 | wc -l)
  [ "$n" -ge 1 ] && [ "$n" -le 8 ] || fail "$1 holds $n entries (1 to 8 allowed): $(ls "$1")"
  find "$1" -mindepth 1 ! -type f | grep -q . && fail "$1 holds something other than plain files"
  find "$1" -mindepth 1 -printf '%f\n' | grep -qvE '^[A-Za-z0-9._-]+$' && fail "a name in $1 has other characters"
  find "$1" -type f -size +16383k | grep -q . && fail "a file in $1 is over 16 MiB"
  [ -s "$1/summary.md" ] && [ -s "$1/log.txt" ] || fail "$1 lacks summary.md or log.txt"
}
row() { grep -E "^\| $2 \|" "$1/summary.md"; }   # out stage
status() { row "$1" "$2" | awk -F'|' '{ gsub(/ /, "", $3); print $3 }'; }
rows() { grep -cE "^\| $2 \|" "$1/summary.md"; }

# 2. the rehearsal
t0=$(date +%s)
tools/gpu-check.sh --smoke --in "$tmp/in" --out "$tmp/out" --work "$tmp/work" --deadline 1500 >"$tmp/smoke.log" 2>&1
rc=$?
echo "smoke: exit $rc in $(( $(date +%s) - t0 )) s"
contract "$tmp/out"
for s in env data drivers check bench profile torch tta; do
  [ "$(rows "$tmp/out" "$s")" -eq 1 ] || fail "summary.md has $(rows "$tmp/out" "$s") rows for stage $s: $(cat "$tmp/out/summary.md")"
done
for s in env data drivers check bench profile tta; do
  [ "$(status "$tmp/out" "$s")" = ok ] || fail "stage $s: $(row "$tmp/out" "$s")"
done
case $(status "$tmp/out" torch) in
  ok) ;;
  skipped) row "$tmp/out" torch | grep -q 'PyTorch not installed' || fail "torch skipped without the reason: $(row "$tmp/out" torch)" ;;
  *) fail "stage torch: $(row "$tmp/out" torch)" ;;
esac
[ $rc -eq 0 ] || fail "the smoke run exited $rc: $(cat "$tmp/out/summary.md")"
"$py" - "$tmp/out/check.json" <<'EOF' || fail "check.json: $(head -c 400 "$tmp/out/check.json")"
import json, sys
doc = json.load(open(sys.argv[1]))
assert set(doc) == {"opencl", "vulkan"}, doc.keys()
for api, r in doc.items():
    assert r["exit"] == 0 and r["result"]["pass"], api
EOF
[ "$(awk -F'\t' 'NR > 1 && $7 ~ /^[0-9.]+$/' "$tmp/out/bench.tsv" | wc -l)" -eq 2 ] ||
  fail "bench.tsv should have a figure per API: $(cat "$tmp/out/bench.tsv")"
# the listing first: under pipefail, grep -q ending early would fail tar with SIGPIPE
listing=$(tar tzf "$tmp/out/runs.tar.gz") || fail "runs.tar.gz does not list"
grep -q 'runs/airbench94-.*/result.json' <<<"$listing" || fail "runs.tar.gz holds no run: $listing"
grep -q '\.ckpt$' <<<"$listing" && fail "runs.tar.gz holds a checkpoint"
[ -s "$tmp/out/report.md" ] || fail "no report.md"
grep -q '^## Training throughput' "$tmp/out/summary.md" && grep -q 'airbench94' "$tmp/out/summary.md" ||
  fail "summary.md lacks the headline figures"
[ "$(grep -cE '^  - total: [0-9.]+ ms per step' "$tmp/out/summary.md")" -eq 2 ] ||
  fail "summary.md lacks a step profile per API: $(sed -n '/^## Where/,/^## Time/p' "$tmp/out/summary.md")"

# 2b. the tune stage (named, never a default) on the same work folder: a profile per API in runs/
tools/gpu-check.sh --smoke --stages drivers,tune --in "$tmp/in" --out "$tmp/out-tune" --work "$tmp/work" \
  >"$tmp/tune.log" 2>&1 || fail "tune: exit $?: $(cat "$tmp/out-tune/summary.md")"
contract "$tmp/out-tune"
[ "$(status "$tmp/out-tune" tune)" = ok ] || fail "stage tune: $(row "$tmp/out-tune" tune)"
listing=$(tar tzf "$tmp/out-tune/runs.tar.gz") || fail "runs.tar.gz does not list"
for api in opencl vulkan; do
  grep -q "runs/tuned-$api.json" <<<"$listing" || fail "tune: no runs/tuned-$api.json: $listing"
done

# 3a. no OpenCL ICD: the drivers stage writes one naming the library and finds the device
tools/gpu-check.sh --smoke --stages drivers --drill no-icd --in "$tmp/in" --out "$tmp/out-icd" --work "$tmp/w-icd" \
  >"$tmp/icd.log" 2>&1 || fail "drill no-icd: exit $?: $(cat "$tmp/out-icd/summary.md")"
contract "$tmp/out-icd"
row "$tmp/out-icd" drivers | grep -q 'wrote .*gpu.icd naming .*libpocl' || fail "drill no-icd: $(row "$tmp/out-icd" drivers)"
row "$tmp/out-icd" drivers | grep -q 'opencl opencl:0' || fail "drill no-icd: no OpenCL device after the fix"

# 3b. a broken op: the check fails and names it
tools/gpu-check.sh --smoke --stages drivers,check --drill failing-op --in "$tmp/in" --out "$tmp/out-op" \
  --work "$tmp/w-op" >"$tmp/op.log" 2>&1
[ $? -eq 1 ] || fail "drill failing-op: the kit did not exit 1"
contract "$tmp/out-op"
[ "$(status "$tmp/out-op" check)" = failed ] || fail "drill failing-op: $(row "$tmp/out-op" check)"
grep -q 'relu_fwd' "$tmp/out-op/summary.md" || fail "drill failing-op: summary.md does not name relu_fwd"

# 3c. a deadline that cuts a stage: the drill stalls the check, as a hung driver would, past the deadline
t0=$(date +%s)
tools/gpu-check.sh --smoke --stages drivers,check --drill deadline --deadline 60 --in "$tmp/in" --out "$tmp/out-cut" \
  --work "$tmp/w-cut" >"$tmp/cut.log" 2>&1
rc=$? took=$(( $(date +%s) - t0 ))
[ $rc -eq 1 ] || fail "drill deadline: exit $rc"
[ "$took" -le 80 ] || fail "drill deadline: the 60 s call took $took s"
contract "$tmp/out-cut"
[ "$(status "$tmp/out-cut" check)" = cut ] || fail "drill deadline: $(row "$tmp/out-cut" check)"
echo "ok: the kit packs, rehearses every stage, keeps the output contract and passes its drills"
