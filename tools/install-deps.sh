#!/usr/bin/env bash
# Installs the Debian 12 packages daybreak builds and runs with, if any are missing.
# Uses sudo when not root. Prints what it installs; does nothing when all are present.
set -euo pipefail

# Build tools; CPU backend GEMM and JSON results; the OpenCL backend with the PoCL CPU device;
# the Vulkan backend with Mesa's lavapipe; image decoding for image-folder datasets; clang and
# libFuzzer for the fuzz targets (tools/fuzz.sh).
packages=(
  build-essential cmake pkg-config clang libfuzzer-14-dev
  libopenblas-dev libcjson-dev
  ocl-icd-opencl-dev opencl-headers libclblast-dev pocl-opencl-icd
  libvulkan-dev glslc spirv-tools mesa-vulkan-drivers vulkan-validationlayers
  libstb-dev
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

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
