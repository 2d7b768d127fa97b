#!/usr/bin/env bash
# daybreak quick start.
#   tools/run.sh [train] [daybreak train options]   install packages, build, train on the default device
#   tools/run.sh test [ctest options]               install packages, build, run the whole test suite
# Needs DAYBREAK_DATA: a folder holding cifar-10-batches-bin/ (data_batch_1..5.bin,
# test_batch.bin, batches.meta.txt), that folder itself, or (for training) a dataset pack made by
# `daybreak pack-data`. Build goes to ./build (override with DBK_BUILD_DIR).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DBK_BUILD_DIR:-$root/build}
mode=train
if [ $# -gt 0 ] && { [ "$1" = train ] || [ "$1" = test ]; }; then mode=$1; shift; fi

# The same forms `daybreak train --data` accepts; the test suite reads the folder layout.
need_data() {
  local dir=${DAYBREAK_DATA:-}
  if [ -z "$dir" ]; then
    echo "daybreak: error: DAYBREAK_DATA is not set: set it to a folder holding cifar-10-batches-bin/ (the official CIFAR-10 binary version: data_batch_1..5.bin, test_batch.bin, batches.meta.txt) or to a dataset pack, e.g. DAYBREAK_DATA=/data tools/run.sh" >&2
    exit 1
  fi
  if [ -d "$dir/cifar-10-batches-bin" ]; then return; fi
  if [ "$mode" = train ] && [ -f "$dir/data_batch_1.bin" ]; then return; fi
  if [ "$mode" = train ] && [ -f "$dir" ] && [ "$(head -c 7 "$dir" 2>/dev/null)" = DBKPACK ]; then return; fi
  if [ "$mode" = test ]; then
    echo "daybreak: error: DAYBREAK_DATA=$dir has no cifar-10-batches-bin/ folder: the test suite reads the folder (data_batch_1..5.bin, test_batch.bin, batches.meta.txt inside it)" >&2
  else
    echo "daybreak: error: DAYBREAK_DATA=$dir is neither a folder holding cifar-10-batches-bin/ (data_batch_1..5.bin, test_batch.bin, batches.meta.txt inside it), that folder itself, nor a dataset pack" >&2
  fi
  exit 1
}
need_data

werror=OFF
[ "${CI:-}" = true ] && werror=ON
if [ "$mode" = test ]; then
  DBK_PYENV="$build/pyenv" "$root/tools/install-deps.sh" --browser   # Chromium: the report's browser test
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DDBK_WERROR=$werror >/dev/null
  cmake --build "$build" -j "$(nproc)" >/dev/null
  cd "$build"
  exec ctest --output-on-failure --timeout 1500 "$@"
fi
# Training needs the program only: no test tools, no test programs (a shorter first command).
"$root/tools/install-deps.sh" --no-test-tools
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DDBK_WERROR=$werror >/dev/null
cmake --build "$build" -j "$(nproc)" --target daybreak >/dev/null
exec "$build/daybreak" train "$@"
