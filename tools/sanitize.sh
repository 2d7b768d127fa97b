#!/usr/bin/env bash
# Builds daybreak with AddressSanitizer + UndefinedBehaviorSanitizer (DBK_SANITIZE=ON, CPU
# backend only: the drivers are not instrumented) in ./build-asan and runs the CPU test suite
# there. Any sanitizer report ends its test with a failure (halt_on_error, UBSan without
# recovery, leaks detected at exit).
#   tools/sanitize.sh [ctest options]
# Build folder: ./build-asan (override with DBK_ASAN_BUILD_DIR).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DBK_ASAN_BUILD_DIR:-$root/build-asan}

"$root/tools/install-deps.sh"
werror=OFF
[ "${CI:-}" = true ] && werror=ON
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDBK_SANITIZE=ON -DDBK_WERROR=$werror \
  -DDBK_WITH_OPENCL=OFF -DDBK_WITH_VULKAN=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" >/dev/null

export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1
cd "$build"
# The CPU suites (labels unit, ops, grad, data, cli), without the device backends' tests and
# without `model` (230-350 s under ASan here, more than the rest together; its ResNet9
# gradient checks run the same CPU ops that grad, curve_* and ops_* exercise).
exec ctest --output-on-failure --timeout 900 -j "$(nproc)" -L 'unit|ops|grad|data|cli' -LE 'opencl|vulkan|gpu' \
  -E '^model$' "$@"
