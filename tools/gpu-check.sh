#!/usr/bin/env bash
# gpu-check.sh — the GPU kit: turns a short GPU lease into evidence, most valuable first, under a
# deadline (docs/gpu.md). Run from the repository root on the GPU machine, with .gpu-in/ carried
# (tools/gpu-pack.sh):
#
#   tools/gpu-check.sh [--deadline SECONDS] [--stages LIST] [--out DIR] [--work DIR] [--in DIR]
#                      [--smoke] [--drill no-icd|failing-op|deadline]
#
# Stages, in order of value (--stages takes a comma-separated subset; the default is
# env,data,drivers,check,bench,profile,torch,tta; `tune` and `compile` are meant for a second call):
#   env      the machine: OS, glibc, nvidia-smi (read-only), torch, where the NVIDIA OpenCL
#            library and Vulkan ICD file are, gVisor or not                       -> env.txt
#   data     CIFAR-10's .bin files rebuilt from .gpu-in/cifar10-jpeg.tar.gz (tools/
#            cifar10_from_jpeg.py), in the background from the start; later stages wait for it
#   drivers  the bundle unpacked; an OpenCL ICD written (OCL_ICD_VENDORS) when the loader finds
#            no GPU device but the vendor's library exists, VK_DRIVER_FILES set likewise for
#            Vulkan; `daybreak devices`; the devices used: the first GPU of each API
#   check    `daybreak check --json` on both APIs at once (every op against the CPU, the curve)
#                                                                                  -> check.json
#   bench    bench_train --tsv: airbench94 (batch 1024) and ResNet9 (batch 512) per API, with the
#            build time; then airbench94 in fp16 on Vulkan                         -> bench.tsv
#   profile  `daybreak train --profile` of airbench94 per API (10 steps at batch 1024 on 10,240
#            images): where the step goes, per op and kernel launch      -> logs/profile-API.txt
#   torch    tools/bench_pytorch.py on the same GPU, networks and batches: eager fp32 with TF32
#            off (like for like), eager defaults, bf16 autocast with channels_last  -> torch.tsv
#   tta      airbench94 trained to its end through the faster API first, each API only when its
#            predicted time (from bench) fits the time left; then tools/airbench94_torch.py
#   compile  torch.compile variants (compile time apart)                           -> torch.tsv
#   tune     (only when named) `daybreak tune` on airbench94's layers per API, then airbench94's
#            step again with the tuned profile: before and after in the stage's note, the
#            profiles in runs/ (tuned-API.json) for platforms/
# and always, from the exit trap (also after SIGTERM or a deadline): summary.md (one row per
# stage: status, exit code, seconds, why; then the headline figures; rewritten after every
# stage), log.txt, report.md (`daybreak report` over the runs) and runs.tar.gz (run folders
# without checkpoints, the report's charts, the device list, the data and PyTorch logs): at most
# 8 files, flat, named [A-Za-z0-9._-], each under 16 MiB, in --out (default $OUT, else ./gpu-out).
#
# --deadline SECONDS (default 540): the whole call's budget; each command runs under `timeout`
# capped by the time left minus what packaging needs, and a stage that cannot fit is skipped
# with the reason. --work DIR (default $DBK_GPU_WORK, else /tmp/dbk-gpu): kept between calls
# on a warm machine: the unpacked bundle, the data, the kernel caches, the runs, the drivers'
# environment. --in DIR (default .gpu-in).
# --smoke: the rehearsal on software devices (PoCL, lavapipe; PyTorch on the CPU where it is
# installed): the first device of each API stands in for the GPU, every stage at tiny sizes.
# --drill no-icd: the OpenCL loader is pointed at an empty ICD folder first, so the drivers stage
# must find the library and write the ICD itself. --drill failing-op: the OpenCL kernels come
# from a copy of cl/ whose relu_fwd is broken (DBK_KERNEL_DIR), so the check must fail.
# --drill deadline: the check stalls before it starts, as a hung driver would, for longer than any
# --deadline leaves, so the deadline must cut it and the packaging still arrive.
# Never changes the GPU's settings; never clears the environment (the NVIDIA libraries are found
# through it). Exit 0 when every stage run passed (skips for time included), 1 when one failed,
# 2 on a usage error.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
t_start=$(date +%s)
deadline=540
stages_arg=env,data,drivers,check,bench,profile,torch,tta
out=${OUT:-$root/gpu-out}
work=${DBK_GPU_WORK:-/tmp/dbk-gpu}
in=$root/.gpu-in
smoke=0
drill=
known_stages="env data drivers check bench profile torch tta compile tune"
usage() {
  echo "usage: tools/gpu-check.sh [--deadline SECONDS] [--stages LIST] [--out DIR] [--work DIR] [--in DIR] [--smoke]" \
       "[--drill no-icd|failing-op|deadline]" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case $1 in
    --deadline) [ $# -ge 2 ] && [[ $2 =~ ^[0-9]+$ ]] && [ "$2" -ge 10 ] || usage; deadline=$2; shift ;;
    --stages) [ $# -ge 2 ] || usage; stages_arg=$2; shift ;;
    --out) [ $# -ge 2 ] || usage; out=$2; shift ;;
    --work) [ $# -ge 2 ] || usage; work=$2; shift ;;
    --in) [ $# -ge 2 ] || usage; in=$2; shift ;;
    --smoke) smoke=1 ;;
    --drill) [ $# -ge 2 ] && [[ " no-icd failing-op deadline " == *" $2 "* ]] || usage; drill=$2; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) usage ;;
  esac
  shift
done
IFS=, read -r -a stages <<<"$stages_arg"
for s in "${stages[@]}"; do
  [[ " $known_stages " == *" $s "* ]] || { echo "gpu-check: unknown stage '$s' (known: $known_stages)" >&2; exit 2; }
done
wanted() { [[ ",$stages_arg," == *",$1,"* ]]; }
# The Python of the data rebuild (Pillow), the summary and PyTorch: DBK_GPU_PYTHON, else python3;
# in the rehearsal, Debian's own when the python3 on PATH lacks Pillow (a pyenv one, say).
py=${DBK_GPU_PYTHON:-python3}
if [ -z "${DBK_GPU_PYTHON:-}" ] && [ $smoke = 1 ] && ! python3 -c 'import PIL' 2>/dev/null && [ -x /usr/bin/python3 ]; then
  py=/usr/bin/python3
fi

mkdir -p "$out" "$work"/runs "$work"/logs || { echo "gpu-check: cannot create $out or $work" >&2; exit 1; }
out=$(cd "$out" && pwd)
work=$(cd "$work" && pwd)
log=$out/log.txt
exec > >(tee -a "$log") 2>&1
echo "gpu-check: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), deadline ${deadline} s, stages $stages_arg$([ $smoke = 1 ] && echo ', smoke')$([ -n "$drill" ] && echo ", drill $drill"), work $work"

reserve=25                       # seconds kept for packaging
left() { echo $((deadline - ($(date +%s) - t_start))); }
budget() { local l; l=$(( $(left) - reserve )); [ "$l" -lt 0 ] && l=0; echo "$l"; }
cap() { local b; b=$(budget); [ "$1" -lt "$b" ] && echo "$1" || echo "$b"; }   # min(want, budget)

# ---------------------------------------------------------------------------------------------
# stage records and the summary

stage_file=$work/stages.tsv     # this call's rows: name status rc seconds note
: >"$stage_file"
current=""
record() {   # name status rc seconds note
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "${5//$'\t'/ }" >>"$stage_file"
  write_summary
}
write_summary() {
  if command -v "$py" >/dev/null && "$py" "$root/tools/gpu_summary.py" --work "$work" --stages "$stage_file" \
      --deadline "$deadline" --elapsed $(( $(date +%s) - t_start )) --smoke "$smoke" >"$out/summary.md.tmp" 2>>"$log"; then
    mv "$out/summary.md.tmp" "$out/summary.md"
  else   # no Python: the stage table alone
    { echo "# gpu-check summary (no python3: stage table only)"; echo; echo "| stage | status | exit | seconds | note |"
      echo "| --- | --- | --- | --- | --- |"; awk -F'\t' '{ printf "| %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5 }' "$stage_file"
    } >"$out/summary.md"
    rm -f "$out/summary.md.tmp"
  fi
}
# run_stage NAME MIN_SECONDS FUNCTION: skipped when not selected or when fewer than MIN_SECONDS
# are left; the function sets stage_status (ok|failed|cut|partial) and stage_note.
run_stage() {
  local name=$1 min=$2 fn=$3
  wanted "$name" || return 0
  local b; b=$(budget)
  if [ "$b" -lt "$min" ]; then
    record "$name" skipped - 0 "needs about ${min} s, ${b} s left before packaging"
    return 0
  fi
  echo; echo "=== stage $name ($(left) s left) ==="
  current=$name
  stage_status=ok stage_rc=0 stage_note=""
  local t0; t0=$(date +%s)
  "$fn"
  current=""
  [ "$stage_status" = pending ] && return 0
  record "$name" "$stage_status" "$stage_rc" $(( $(date +%s) - t0 )) "$stage_note"
}
# run_cmd SECONDS LOGNAME cmd...: the command under timeout, its output teed to logs/LOGNAME;
# returns its exit code (124: cut by the deadline).
run_cmd() {
  local secs=$1 name=$2; shift 2
  echo "\$ $* (cap ${secs} s)" >&2
  if [ "$secs" -le 0 ]; then echo "  not run: no time left" >&2; return 124; fi
  timeout -k 10 "$secs" "$@" 2>&1 | tee "$work/logs/$name"
  return "${PIPESTATUS[0]}"
}
# run_tsv SECONDS LOGNAME OUTFILE cmd...: as run_cmd, standard output (a table) to OUTFILE alone.
run_tsv() {
  local secs=$1 name=$2 outfile=$3; shift 3
  echo "\$ $* (cap ${secs} s)" >&2
  if [ "$secs" -le 0 ]; then echo "  not run: no time left" >&2; : >"$outfile"; return 124; fi
  timeout -k 10 "$secs" "$@" >"$outfile" 2>"$work/logs/$name"
  local rc=$?
  cat "$outfile" "$work/logs/$name" >&2
  return $rc
}
note_rc() {   # a command's exit code into the stage's status and note
  local what=$1 rc=$2
  [ "$rc" -eq 0 ] && return 0
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    stage_status=cut; stage_note+="${what}: cut by the deadline; "
  else
    [ "$stage_status" = cut ] || stage_status=failed
    stage_note+="${what}: exit $rc; "
  fi
  stage_rc=$rc
}

# ---------------------------------------------------------------------------------------------
# packaging: always, last

packed=0
pack() {
  [ $packed = 1 ] && return
  packed=1
  echo; echo "=== packaging ($(left) s left) ==="
  if [ -n "$current" ]; then record "$current" cut 143 0 "stopped by a signal or the deadline"; fi
  if [ -n "$data_pid" ]; then   # never waited for: its state now
    if kill -0 "$data_pid" 2>/dev/null; then kill "$data_pid" 2>/dev/null; record data cut 124 $(( $(date +%s) - data_t0 )) "still running at packaging"
    else data_t0=${data_t0:-$(date +%s)}; need_data; fi
    data_pid=
  fi
  local runs=()
  for d in "$work"/runs/*/; do [ -f "$d/result.json" ] && runs+=("${d%/}"); done
  if [ ${#runs[@]} -gt 0 ] && [ -n "${daybreak:-}" ]; then
    rm -rf "$work/report"
    timeout 60 "$daybreak" report "${runs[@]}" --out "$work/report" >/dev/null 2>&1 && cp "$work/report/report.md" "$out/report.md"
  fi
  (cd "$work" && tar --exclude='*.ckpt' -czf "$out/runs.tar.gz.tmp" runs report logs devices.txt data.log \
     --ignore-failed-read 2>/dev/null; true) && mv "$out/runs.tar.gz.tmp" "$out/runs.tar.gz"
  for f in env.txt bench.tsv torch.tsv check.json; do [ -f "$work/$f" ] && cp "$work/$f" "$out/$f"; done
  write_summary
  local max=$((15 * 1048576))
  if [ "$(stat -c %s "$log")" -gt "$max" ]; then   # keep the start and the end
    { head -c $((max / 2)) "$log"; printf '\n[... log cut to fit the 16 MiB limit ...]\n'; tail -c $((max / 2 - 100)) "$log"; } >"$log.cut"
    mv "$log.cut" "$log"
  fi
  echo "gpu-check: outputs in $out: $(cd "$out" && ls | tr '\n' ' ')"
}
on_signal() { echo "gpu-check: signal received, packaging what there is"; pack; exit 1; }
trap pack EXIT
trap on_signal TERM INT HUP

# ---------------------------------------------------------------------------------------------
# the stages

stage_env() {
  {
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "kit commit: $(cat "$in/COMMIT" 2>/dev/null || echo 'no .gpu-in/COMMIT')"
    echo "uname: $(uname -a)"
    echo "os: $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
    echo "glibc: $(getconf GNU_LIBC_VERSION 2>/dev/null)"
    echo "cpus: $(nproc), memory: $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
    local rt="not gVisor"
    if grep -qi gvisor <<<"$(dmesg 2>/dev/null)" || [ "$(uname -r)" = 4.4.0 ]; then rt="gVisor (kernel reported as $(uname -r))"; fi
    echo "runtime: $rt"
    echo "python: $py, $("$py" --version 2>&1)"
    echo "torch: $("$py" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), "available", torch.cuda.is_available())' 2>&1 | tail -1)"
    echo "OCL_ICD_VENDORS=${OCL_ICD_VENDORS:-} VK_DRIVER_FILES=${VK_DRIVER_FILES:-} VK_ICD_FILENAMES=${VK_ICD_FILENAMES:-}"
    echo "/etc/OpenCL/vendors: $(ls /etc/OpenCL/vendors 2>&1 | tr '\n' ' ')"
    echo "OpenCL libraries: $(find_libs "libnvidia-opencl.so*" | tr '\n' ' ')"
    echo "NVML (energy): $(find_libs "libnvidia-ml.so*" | tr '\n' ' ')"
    echo "Vulkan ICD files: $(find_vk_icds | tr '\n' ' ')"
    echo "libvulkan: $(ldconfig -p 2>/dev/null | awk '/libvulkan.so/ { print $NF }' | tr '\n' ' ')"
    if command -v nvidia-smi >/dev/null; then
      echo; echo "nvidia-smi --query-gpu:"
      timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit,power.draw,clocks.max.sm,clocks.sm,temperature.gpu,pstate,compute_mode --format=csv 2>&1
      echo; timeout 20 nvidia-smi 2>&1
    else
      echo "nvidia-smi: not found"
    fi
  } >"$work/env.txt" 2>&1
  cat "$work/env.txt"
}
find_libs() {   # paths of libraries matching a name pattern, ldconfig's first
  { ldconfig -p 2>/dev/null | awk -v p="${1%%\**}" 'index($1, p) == 1 { print $NF }'
    find /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/local/lib \
         -maxdepth 2 -name "$1" 2>/dev/null; } | awk '!seen[$0]++'
}
find_vk_icds() {
  for f in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json \
           /etc/vulkan/icd.d/nvidia_icd.json /usr/local/share/vulkan/icd.d/nvidia_icd.json; do
    [ -f "$f" ] && echo "$f"
  done
}

data_pid= data_t0=
stage_data() {
  local tar=$in/cifar10-jpeg.tar.gz
  if [ ! -f "$tar" ]; then stage_status=failed stage_rc=1 stage_note="$tar is missing (tools/gpu-pack.sh)"; return; fi
  ("$py" "$root/tools/cifar10_from_jpeg.py" "$tar" "$work/data" >"$work/data.log" 2>&1; echo "exit $?" >>"$work/data.log") &
  data_pid=$!
  data_t0=$(date +%s)
  stage_status=pending   # its row is written when the rebuild ends (need_data)
  echo "rebuilding the data in the background (pid $data_pid)"
}
# Waits (up to the time left) for the data; sets data_dir or says why not.
data_dir=
need_data() {
  [ -n "$data_dir" ] && return 0
  if [ -n "$data_pid" ]; then
    local waited=0
    while kill -0 "$data_pid" 2>/dev/null && [ "$(budget)" -gt 0 ]; do sleep 1; waited=$((waited + 1)); done
    local status=ok rc=0
    if kill -0 "$data_pid" 2>/dev/null; then
      status=cut rc=124
      kill "$data_pid" 2>/dev/null
    fi
    wait "$data_pid" 2>/dev/null
    data_pid=
    [ $status = ok ] && ! grep -q '^exit 0$' "$work/data.log" && { status=failed; rc=$(awk '/^exit / { print $2 }' "$work/data.log"); }
    record data "$status" "${rc:--}" $(( $(date +%s) - data_t0 )) \
      "waited ${waited} s; $(grep -E '^(sha256|rebuilt|cifar10_from_jpeg)' "$work/data.log" | tr '\n' ' ')"
  fi
  if [ -f "$work/data/cifar-10-batches-bin/test_batch.bin" ] && grep -q '^exit 0$' "$work/data.log" 2>/dev/null; then
    data_dir=$work/data
    return 0
  fi
  return 1
}

daybreak= bench_train= ocl_dev= vk_dev=
unpack_bundle() {
  local tgz; tgz=$(ls "$in"/daybreak-*-linux-*.tar.gz 2>/dev/null | head -1)
  [ -n "$tgz" ] || { echo "no bundle in $in (tools/gpu-pack.sh)"; return 1; }
  local stamp; stamp="$(basename "$tgz") $(cat "$in/COMMIT" 2>/dev/null)"
  if [ "$(cat "$work/bundle/.stamp" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$work/bundle" && mkdir -p "$work/bundle" && tar xzf "$tgz" -C "$work/bundle" || return 1
    echo "$stamp" >"$work/bundle/.stamp"
  fi
  daybreak=$(ls -d "$work"/bundle/daybreak-*/ | head -1)daybreak
  bench_train=${daybreak%daybreak}bench_train
  [ -x "$daybreak" ]
}
# The first device of an API in `daybreak devices` output: a GPU, or (smoke) any device.
first_device() {
  awk -v api="$1" -v any="$smoke" '
    $1 ~ "^" api ":[0-9]+$" { dev = $1; next }
    dev != "" && $1 == "type" { t = $2; sub(/,$/, "", t); if (t == "gpu" || any == 1) { print dev; exit } dev = "" }
  ' "$work/devices.txt"
}
list_devices() { "$daybreak" devices >"$work/devices.txt" 2>&1; }
setup_drivers() {
  [ -f "$work/drivers.env" ] && . "$work/drivers.env"
  unpack_bundle || { stage_status=failed stage_rc=1 stage_note="cannot unpack the bundle from $in; "; return 1; }
  export DBK_CACHE_DIR=${DBK_CACHE_DIR:-$([ $smoke = 1 ] && echo "" || echo "$work/cache")}
  [ -n "$DBK_CACHE_DIR" ] || unset DBK_CACHE_DIR
  if [ "$drill" = no-icd ] && [ ! -f "$work/drivers.env" ]; then
    mkdir -p "$work/empty-icd"
    export OCL_ICD_VENDORS=$work/empty-icd
    echo "drill no-icd: OCL_ICD_VENDORS=$OCL_ICD_VENDORS (no ICD file)"
  fi
  if [ "$drill" = failing-op ]; then
    rm -rf "$work/cl-broken" && cp -r "$root/cl" "$work/cl-broken"
    # relu_fwd scales its positive results by 1.001: its check must fail
    sed -i 's/y\[y_off + i\] = v < 0.0f ? 0.0f : v;/y[y_off + i] = v < 0.0f ? 0.0f : v * 1.001f;/' "$work/cl-broken/eltwise.cl"
    grep -q 'v \* 1.001f;' "$work/cl-broken/eltwise.cl" || { echo "drill failing-op: cl/eltwise.cl's relu_fwd changed; update the drill"; return 1; }
    export DBK_KERNEL_DIR=$work/cl-broken
    echo "drill failing-op: DBK_KERNEL_DIR=$DBK_KERNEL_DIR (relu_fwd broken)"
  fi
  list_devices
  local notes=""
  ocl_dev=$(first_device opencl)
  if [ -z "$ocl_dev" ]; then
    local lib_names="libnvidia-opencl.so.1"
    [ $smoke = 1 ] && lib_names="libpocl.so.2"
    local lib; lib=$(for n in $lib_names; do find_libs "$n*"; done | head -1)
    if [ -n "$lib" ]; then
      mkdir -p "$work/icd" && echo "$lib" >"$work/icd/gpu.icd"
      export OCL_ICD_VENDORS=$work/icd
      notes+="OpenCL: no device through the loader's ICD files; wrote $work/icd/gpu.icd naming $lib (OCL_ICD_VENDORS); "
      list_devices
      ocl_dev=$(first_device opencl)
    else
      notes+="OpenCL: no device, and no $lib_names found; "
    fi
  fi
  vk_dev=$(first_device vulkan)
  if [ -z "$vk_dev" ] && [ $smoke = 0 ]; then
    local icd; icd=$(find_vk_icds | head -1)
    if [ -n "$icd" ]; then
      export VK_DRIVER_FILES=$icd
      notes+="Vulkan: no GPU device; VK_DRIVER_FILES=$icd; "
      list_devices
      vk_dev=$(first_device vulkan)
      # Headless, the driver's GLX library gives the loader no vkCreateInstance ("Could not get
      # 'vkCreateInstance' via 'vk_icdGetInstanceProcAddr'", seen on the lent H200); its EGL
      # library exports the same Vulkan entry points without a display.
      local egl; egl=$(find_libs "libEGL_nvidia.so.0*" | head -1)
      if [ -z "$vk_dev" ] && [ -n "$egl" ]; then
        local api; api=$(sed -n 's/.*"api_version" *: *"\([0-9.]*\)".*/\1/p' "$icd" | head -1)
        mkdir -p "$work/vk-icd"
        printf '{ "file_format_version": "1.0.1", "ICD": { "library_path": "%s", "api_version": "%s" } }\n' \
          "$egl" "${api:-1.3.0}" >"$work/vk-icd/nvidia_egl_icd.json"
        export VK_DRIVER_FILES=$work/vk-icd/nvidia_egl_icd.json
        notes+="Vulkan: still none through $icd; wrote $VK_DRIVER_FILES naming $egl; "
        list_devices
        vk_dev=$(first_device vulkan)
      fi
    else
      notes+="Vulkan: no GPU device and no nvidia_icd.json found; "
    fi
  fi
  {
    [ -n "${OCL_ICD_VENDORS:-}" ] && echo "export OCL_ICD_VENDORS='$OCL_ICD_VENDORS'"
    [ -n "${VK_DRIVER_FILES:-}" ] && echo "export VK_DRIVER_FILES='$VK_DRIVER_FILES'"
    [ -n "${DBK_CACHE_DIR:-}" ] && echo "export DBK_CACHE_DIR='$DBK_CACHE_DIR'"
    [ -n "${DBK_KERNEL_DIR:-}" ] && echo "export DBK_KERNEL_DIR='$DBK_KERNEL_DIR'"
    echo "ocl_dev='$ocl_dev' vk_dev='$vk_dev'"
  } >"$work/drivers.env.tmp" && mv "$work/drivers.env.tmp" "$work/drivers.env"
  drivers_note="${notes}devices: opencl ${ocl_dev:-none}, vulkan ${vk_dev:-none}"
  return 0
}
drivers_ready=0
need_drivers() {
  [ $drivers_ready = 1 ] && return 0
  setup_drivers || return 1
  drivers_ready=1
}
stage_drivers() {
  drivers_ready=0
  if ! need_drivers; then return; fi
  cat "$work/devices.txt"
  stage_note=$drivers_note
  [ -z "$ocl_dev$vk_dev" ] && { stage_status=failed stage_rc=1; }
}
devices() { for d in $ocl_dev $vk_dev; do echo "$d"; done; }

stage_check() {
  need_drivers || return
  local extra=()
  if [ $smoke = 1 ]; then extra=(--no-curve --ops relu_fwd,augment,gemm,accuracy)
  elif need_data; then extra=(--data "$data_dir")
  else extra=(--no-curve); stage_note+="data not ready: curve skipped; "; fi
  local pids=() d
  [ -n "$(devices)" ] || { stage_status=failed stage_rc=1 stage_note+="no device"; return; }
  local secs; secs=$(cap $([ $smoke = 1 ] && echo 240 || echo 200))
  local stall=(env)
  [ "$drill" = deadline ] && stall=(bash -c 'sleep "$1"; shift; exec "$@"' stall $((secs + 60)))
  for d in $(devices); do   # both APIs at once: correctness, not timing
    # DBK_LOG=info: a program that fails to build leaves its whole build log in the .err file
    ( DBK_LOG=${DBK_LOG:-info} timeout -k 5 "$secs" "${stall[@]}" "$daybreak" check --backend "$d" --json "${extra[@]}" \
        >"$work/check-${d%%:*}.json" 2>"$work/logs/check-${d%%:*}.err"; echo $? >"$work/check-${d%%:*}.rc" ) &
    pids+=($!)
  done
  wait "${pids[@]}"
  local first=1 api rc
  echo "{" >"$work/check.json"
  for d in $(devices); do
    api=${d%%:*} rc=$(cat "$work/check-$api.rc")
    { [ $first = 1 ] || echo ","
      printf '"%s": {"device": "%s", "exit": %s, "result": ' "$api" "$d" "$rc"
      if "$py" -c 'import json,sys; json.load(open(sys.argv[1]))' "$work/check-$api.json" 2>/dev/null; then
        cat "$work/check-$api.json"
      else echo null; fi
      echo "}"; } >>"$work/check.json"
    first=0
    note_rc "check $d" "$rc"
    echo "check $d: exit $rc"; cat "$work/logs/check-$api.err"
  done
  echo "}" >>"$work/check.json"
}

bench_row() {   # api recipe batch steps warmup [precision]
  local secs; secs=$(cap $([ $smoke = 1 ] && echo 300 || echo 120))
  local prec=${6:-fp32}
  local tsv=$work/logs/bench-${1%%:*}-$2-$prec.tsv
  run_tsv "$secs" "bench-${1%%:*}-$2-$prec.log" "$tsv" "$bench_train" --tsv --backend "$1" --recipe "$2" --batch "$3" \
    --steps "$4" --warmup "$5" --precision "$prec" --data "$data_dir"
  note_rc "bench_train $1 $2 $prec" $?
  grep -q $'^backend\t' "$tsv" || return 0
  [ -f "$work/bench.tsv" ] || head -1 "$tsv" >"$work/bench.tsv"
  tail -n +2 "$tsv" >>"$work/bench.tsv"
}
stage_bench() {
  need_drivers || return
  need_data || { stage_status=failed stage_rc=1 stage_note="no data: $(tail -2 "$work/data.log" | tr '\n' ' ')"; return; }
  rm -f "$work/bench.tsv"
  local d
  for d in $(devices); do
    if [ $smoke = 1 ]; then bench_row "$d" airbench94 "$smoke_batch" 1 0   # one recipe, one step: the machinery
    else bench_row "$d" airbench94 1024 20 2; bench_row "$d" cifar10-resnet9 512 10 2; fi
  done
  # mixed precision where it exists (Vulkan with shaderFloat16), after every fp32 figure
  [ $smoke = 0 ] && [ -n "$vk_dev" ] && bench_row "$vk_dev" airbench94 1024 20 2 fp16
  return 0
}

# Per API: airbench94's per-op profile (10 steps at its batch; smoke: the tta stage's sizes).
stage_profile() {
  need_drivers || return
  need_data || { stage_status=failed stage_rc=1 stage_note="no data"; return; }
  local d api size
  for d in $(devices); do
    api=${d%%:*}
    if [ $smoke = 1 ]; then size=$(tta_size); else size="--train-subset 10240 --test-subset 1024 --epochs 1"; fi
    rm -rf "$work/profile-runs/$api"   # a call before left its run there
    # shellcheck disable=SC2086  # size is a list of options
    run_cmd "$(cap $([ $smoke = 1 ] && echo 300 || echo 90))" "profile-$api.txt" "$daybreak" train --recipe airbench94 \
      --backend "$d" --data "$data_dir" $size --profile --no-progress --out "$work/profile-runs/$api"
    local rc=$?
    [ $rc -eq 3 ] && rc=0   # one epoch does not reach the target: expected
    note_rc "profile $d" $rc
  done
}

torch_why=
torch_available() {   # PyTorch with the device the kit needs; torch_why says why not
  local why
  if ! why=$("$py" -c 'import torch' 2>&1 | tail -1); then torch_why="PyTorch not installed ($why)"; return 1; fi
  if [ $smoke = 0 ] && ! "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    torch_why="torch.cuda.is_available() is False"; return 1
  fi
}
torch_ok() {   # for the PyTorch stages: skipped (not installed) or failed (no CUDA) when not available
  torch_available && return 0
  if [[ $torch_why == "PyTorch not installed"* ]]; then stage_status=skipped stage_rc=-; else stage_status=failed stage_rc=1; fi
  stage_note=$torch_why
  return 1
}
torch_rows() {   # variants...
  local tdev=cuda; [ $smoke = 1 ] && tdev=cpu
  [ -f "$work/torch.tsv" ] || printf 'model\tdevice\tvariant\tbatch\timg_per_s\tms_per_step\twarmup_s\tversion\tnote\n' >"$work/torch.tsv"
  local m v b steps line rc models="airbench94 resnet9"
  [ $smoke = 1 ] && models=airbench94
  for m in $models; do
    for v in "$@"; do
      if [ $smoke = 1 ]; then b=$smoke_batch steps=1; else b=$([ $m = airbench94 ] && echo 1024 || echo 512) steps=20; fi
      run_cmd "$(cap $([ $smoke = 1 ] && echo 120 || echo 90))" "torch-$m-$v.log" "$py" "$root/tools/bench_pytorch.py" \
        --model "$m" --device "$tdev" --variant "$v" --batch "$b" --steps "$steps" --warmup 2 --data "$data_dir"
      rc=$?
      line=$(tail -1 "$work/logs/torch-$m-$v.log")
      if [ $rc -eq 4 ]; then   # variant not available: said, not a failure
        printf '%s\t%s\t%s\t%s\t\t\t\t\t%s\n' "$m" "$tdev" "$v" "$b" "$line" >>"$work/torch.tsv"
        continue
      fi
      note_rc "bench_pytorch $m $v" "$rc"
      awk -v m="$m" -v d="$tdev" -v v="$v" 'BEGIN { OFS = "\t" } $1 == "pytorch" {
          for (i = 1; i < NF; i++) f[$i] = $(i + 1)
          print m, d, v, f["batch"], f["img/s"], f["ms/step"], f["warmup_s"], $2, "" }' <<<"$line" >>"$work/torch.tsv"
    done
  done
}
stage_torch() {
  torch_ok || return
  need_data || { stage_status=failed stage_rc=1 stage_note="no data"; return; }
  if [ $smoke = 1 ]; then torch_rows fp32 amp; else torch_rows fp32 default amp; fi
}
stage_compile() {
  torch_ok || return
  need_data || { stage_status=failed stage_rc=1 stage_note="no data"; return; }
  torch_rows compile
}

# Per API: `daybreak tune` on airbench94's layers (the tuned profile lands in the kernel cache,
# where later runs of the same device take it), then airbench94's step again. The rehearsal
# tunes one cheap search into runs/ and does not re-bench: a fresh cache would compile every
# kernel again.
stage_tune() {
  need_drivers || return
  need_data || { stage_status=failed stage_rc=1 stage_note="no data"; return; }
  [ $smoke = 1 ] || [ -n "${DBK_CACHE_DIR:-}" ] || { stage_status=failed stage_rc=1 stage_note="DBK_CACHE_DIR unset"; return; }
  local d api secs prof before after
  for d in $(devices); do
    api=${d%%:*}
    secs=$(cap $([ $smoke = 1 ] && echo 120 || echo 240))
    if [ "$secs" -lt 60 ]; then stage_note+="$d: not tuned: ${secs} s left; "; continue; fi
    if [ $smoke = 1 ]; then
      prof=$work/runs/tuned-$api.json
      run_cmd "$secs" "tune-$api.log" "$daybreak" tune --backend "$d" --recipe airbench94 --batch "$smoke_batch" \
        --only "$api.$([ "$api" = opencl ] && echo gemm_rb || echo gemm)" --budget 5 --out "$prof"
      note_rc "tune $d" $?
      [ -f "$prof" ] && stage_note+="$d: tuned into runs/$(basename "$prof") (re-bench not rehearsed); "
      continue
    fi
    run_cmd "$secs" "tune-$api.log" "$daybreak" tune --backend "$d" --recipe airbench94 --budget $((secs * 2 / 3))
    note_rc "tune $d" $?
    prof=$(ls -t "$DBK_CACHE_DIR"/profiles/"$api"-*.json 2>/dev/null | head -1)
    [ -n "$prof" ] || { stage_note+="$d: no tuned profile written; "; continue; }
    cp "$prof" "$work/runs/tuned-$api.json"
    before=$(awk -F'\t' -v dev="$d" 'NR > 1 && ($1 ":" $2) == dev && $4 == "airbench94" && $5 == "fp32" { print $8; exit }' \
      "$work/bench.tsv" 2>/dev/null)
    local tsv=$work/logs/bench-$api-airbench94-tuned.tsv
    run_tsv "$(cap 120)" "bench-$api-airbench94-tuned.log" "$tsv" "$bench_train" --tsv --backend "$d" --recipe airbench94 \
      --batch 1024 --steps 20 --warmup 2 --data "$data_dir"
    note_rc "bench_train $d airbench94 tuned" $?
    after=$(awk -F'\t' 'NR == 2 { print $8 }' "$tsv" 2>/dev/null)
    stage_note+="$d airbench94: ${before:-?} ms/step before, ${after:-?} with the tuned profile (runs/tuned-$api.json); "
  done
}

# The airbench94 run of the tta stage: the recipe's, or (smoke) a subset at the bench's batch.
smoke_batch=16 smoke_train=128 smoke_test=160
tta_size() { [ $smoke = 1 ] && echo "--train-subset $smoke_train --test-subset $smoke_test --batch $smoke_batch --epochs 1"; }
# Predicted seconds of that run through an API, from its bench.tsv line (0: no figure): the
# builds, then training steps and evaluation batches (a forward pass, a third of a step; per
# epoch one plain pass, at the end six views) at the measured ms/step, +30%, +20 s.
predict_tta() {
  local steps evals
  if [ $smoke = 1 ]; then steps=$((smoke_train / smoke_batch)); evals=$(( (smoke_test + smoke_batch - 1) / smoke_batch * 7 / 3 ))
  else steps=476; evals=$(( 10 * 16 / 3 )); fi   # 10 epochs of 10 batches of 1024, then 6 views
  awk -F'\t' -v dev="$1" -v steps="$steps" -v evals="$evals" '
    NR > 1 && ($1 ":" $2) == dev && $4 == "airbench94" && $5 == "fp32" && $8 != "" {
      printf "%d\n", $9 + (steps + evals) * $8 / 1000 * 1.3 + 20; found = 1; exit }
    END { if (!found) print 0 }' "$work/bench.tsv" 2>/dev/null || echo 0
}
stage_tta() {
  need_drivers || return
  need_data || { stage_status=failed stage_rc=1 stage_note="no data"; return; }
  local order d
  # the faster API first: sort by airbench94 img/s from bench.tsv
  order=$(awk -F'\t' 'NR > 1 && $4 == "airbench94" && $5 == "fp32" && $7 != "" { print $7, $1 ":" $2 }' "$work/bench.tsv" 2>/dev/null |
          sort -rn | awk '{ print $2 }')
  [ -n "$order" ] || order=$(devices)
  [ $smoke = 1 ] && order=$(head -1 <<<"$order")   # the rehearsal: the faster API's run only
  local target=${DBK_GPU_TARGET:-90}
  for d in $order; do
    local want; want=$(predict_tta "$d")
    [ "$want" -gt 0 ] || want=$([ $smoke = 1 ] && echo 240 || echo 400)
    if [ "$want" -gt "$(budget)" ]; then
      stage_note+="airbench94 on $d: predicted ${want} s, $(budget) s left: not run; "
      [ "$stage_status" = ok ] && stage_status=partial
      continue
    fi
    local name; name=airbench94-${d%%:*}-$(date -u +%H%M%S)
    # shellcheck disable=SC2046
    run_cmd "$(cap $((want * 2)))" "$name.log" "$daybreak" train --recipe airbench94 --backend "$d" --data "$data_dir" \
      --target "$target" --no-progress $(tta_size) --out "$work/runs/$name"
    local rc=$?
    [ $rc -eq 3 ] && rc=0   # ran to its end without the target: a result, not a failure
    note_rc "airbench94 on $d" $rc
    stage_note+="airbench94 on $d: predicted ${want} s; "
  done
  if torch_available; then
    local tdev=cuda size=(); [ $smoke = 1 ] && { tdev=cpu; size=(--train-subset "$smoke_train" --test-subset "$smoke_test" --batch "$smoke_batch" --epochs 1 --warmup-steps 1); }
    run_cmd "$(cap $([ $smoke = 1 ] && echo 200 || echo 150))" torch-airbench94.log "$py" "$root/tools/airbench94_torch.py" \
      --device "$tdev" --data "$data_dir" "${size[@]}" --json "$work/runs/torch-airbench94-$(date -u +%H%M%S).json"
    note_rc "airbench94_torch" $?
  else
    stage_note+="PyTorch port: not run: $torch_why; "
  fi
}

run_stage env 5 stage_env
run_stage data 5 stage_data
run_stage drivers 10 stage_drivers
run_stage check 30 stage_check
run_stage bench 30 stage_bench
run_stage profile 20 stage_profile
run_stage torch 30 stage_torch
run_stage tta 30 stage_tta
run_stage compile 60 stage_compile
run_stage tune 60 stage_tune
[ -n "$data_pid" ] && need_data
pack
trap - EXIT
awk -F'\t' '$2 == "failed" || $2 == "cut" { bad = 1 } END { exit bad }' "$stage_file"
