#!/usr/bin/env bash
# Side by side: the same `daybreak train` run under two sets of hardware profiles (for example
# the shipped platforms/ against a copy whose lavapipe-cpu.json has other tiles), alternated
# round by round so both see the same machine load. Each run gets its own fresh output folder.
#   tools/compare_profiles.sh [--rounds N] A B -- <daybreak train options without --out>
# A and B are folders of platform JSON files (DBK_PLATFORMS_DIR), or "builtin" for the profiles
# embedded in the binary. Prints, per run: round, variant, wall and user+system CPU seconds,
# daybreak's exit code and the last epoch line; then the mean CPU seconds per variant.
# Uses $DBK_BUILD_DIR/daybreak (default ./build/daybreak). docs/lavapipe-speed.md has an example.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
exe=${DBK_BUILD_DIR:-$root/build}/daybreak
rounds=2
if [ "${1:-}" = --rounds ]; then
  rounds=${2:-}
  shift 2 || true
fi
if ! [[ "$rounds" =~ ^[1-9][0-9]*$ ]]; then
  echo "compare_profiles: --rounds needs a positive whole number, got '$rounds'" >&2
  exit 2
fi
if [ $# -lt 3 ] || [ "$3" != -- ]; then
  echo "usage: tools/compare_profiles.sh [--rounds N] A B -- <daybreak train options without --out>" >&2
  exit 2
fi
variants=("$1" "$2")
shift 3
for v in "${variants[@]}"; do
  if [ "$v" != builtin ] && ! compgen -G "$v/*.json" >/dev/null; then
    echo "compare_profiles: '$v' is neither 'builtin' nor a folder holding platform .json files" >&2
    exit 2
  fi
done
for a in "$@"; do
  if [ "$a" = --out ]; then
    echo "compare_profiles: leave out --out; every run gets its own output folder" >&2
    exit 2
  fi
done
if [ ! -x "$exe" ]; then
  echo "compare_profiles: $exe is not built (cmake --build build)" >&2
  exit 2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
declare -A total
printf '%-5s %-40s %9s %9s %4s  %s\n' round variant wall_s cpu_s exit "last epoch"
for ((r = 1; r <= rounds; r++)); do
  for i in 0 1; do
    v=${variants[$i]}
    out="$work/run-$r-$i"
    log="$work/log-$r-$i"
    start=$(date +%s.%N)
    # CPU seconds of the child (daybreak and lavapipe's threads), from bash's `times`
    set +e
    if [ "$v" = builtin ]; then
      ( unset DBK_PLATFORMS_DIR; "$exe" train "$@" --out "$out" >"$log" 2>&1; rc=$?; times >"$log.times"; exit $rc )
    else
      ( DBK_PLATFORMS_DIR=$v "$exe" train "$@" --out "$out" >"$log" 2>&1; rc=$?; times >"$log.times"; exit $rc )
    fi
    rc=$?
    set -e
    end=$(date +%s.%N)
    # `times` prints the shell's then its children's user and system time as XmY.Zs
    cpu=$(tail -1 "$log.times" | awk '{ s = 0; for (f = 1; f <= 2; f++) { split($f, p, "m"); s += p[1] * 60 + p[2] } printf "%.1f", s }')
    wall=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
    epoch=$(grep -E '^epoch ' "$log" | tail -1 || true)
    printf '%-5s %-40.40s %9s %9s %4s  %s\n' "$r" "$v" "$wall" "$cpu" "$rc" "$epoch"
    total[$i]=$(awk -v a="${total[$i]:-0}" -v b="$cpu" 'BEGIN { print a + b }')
  done
done
for i in 0 1; do
  awk -v v="${variants[$i]}" -v t="${total[$i]}" -v n="$rounds" 'BEGIN { printf "mean CPU seconds  %-40.40s %9.1f\n", v, t / n }'
done
