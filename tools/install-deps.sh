#!/usr/bin/env bash
# Installs the Debian 12 packages daybreak builds and runs with, if any are missing, then the
# test-only Python package mlperf-logging (its parser and compliance checker read mlperf.log)
# into a virtual environment at $DBK_PYENV (default build/pyenv; ctest uses <build>/pyenv).
# Uses sudo when not root. Prints what it installs; does nothing when all are present.
#   --no-test-tools  the packages only, without the test-only virtual environment (the quick start)
#   --browser        also Debian's Chromium and a font: the report's browser test renders
#                    report.html with them (tests/test_report_html.sh; test-only, so not by default)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
pyenv=${DBK_PYENV:-$root/build/pyenv}
test_tools=1 browser=0
for arg in "$@"; do
  case $arg in
    --no-test-tools) test_tools=0 ;;
    --browser) browser=1 ;;
    *) echo "usage: tools/install-deps.sh [--no-test-tools] [--browser]" >&2; exit 2 ;;
  esac
done

# Build tools; CPU backend GEMM and JSON results; zstd for dataset packs; the OpenCL backend with the PoCL CPU device;
# the Vulkan backend with Mesa's lavapipe; image decoding for image-folder datasets; clang and
# libFuzzer for the fuzz targets (tools/fuzz.sh); OpenMPI for train --distributed (src/dist/);
# Pillow for the GPU kit's data rebuild from the source JPEGs (tools/cifar10_from_jpeg.py, rehearsed
# in the tests).
packages=(
  build-essential cmake pkg-config clang libfuzzer-14-dev
  libopenblas-dev libcjson-dev libzstd-dev
  ocl-icd-opencl-dev opencl-headers libclblast-dev pocl-opencl-icd
  libvulkan-dev glslc spirv-tools mesa-vulkan-drivers vulkan-validationlayers
  libstb-dev
  libopenmpi-dev openmpi-bin
  python3 python3-venv python3-yaml python3-pil
)
[ $browser = 1 ] && packages+=(chromium fonts-dejavu-core)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null; then
      echo "daybreak: missing packages (${missing[*]}) and not root; run as root or install sudo" >&2
      exit 1
    fi
    sudo="sudo"
  fi
  echo "daybreak: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Debian's python3 (not one earlier on PATH) so that python3-venv above is the one used; a
# half-made environment (no pip, or an interrupted install) is made again.
[ $test_tools = 1 ] || exit 0
if ! "$pyenv/bin/python3" -c 'import mlperf_logging.compliance_checker' 2>/dev/null; then
  echo "daybreak: installing mlperf-logging into $pyenv (test-only)"
  rm -rf "$pyenv"
  /usr/bin/python3 -m venv "$pyenv"
  "$pyenv/bin/python3" -m pip install -q --disable-pip-version-check mlperf-logging
  "$pyenv/bin/python3" -c 'import mlperf_logging.compliance_checker'
fi
