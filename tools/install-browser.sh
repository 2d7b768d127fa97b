#!/usr/bin/env bash
# Installs Debian 12's headless-capable Chromium and one font family, if missing: what the
# report_html_browser test needs to render report.html (tests/test_report_html.sh). Test-only,
# so tools/install-deps.sh (the quick start's) leaves it out; `tools/run.sh test` calls this.
# Uses sudo when not root. Prints what it installs; does nothing when both are present.
set -euo pipefail
packages=(chromium fonts-dejavu-core)

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
echo "daybreak: installing ${missing[*]} (test-only: the report's browser test)"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
