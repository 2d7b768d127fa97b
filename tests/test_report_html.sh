#!/usr/bin/env bash
# test_report_html.sh — report.html in a real browser: `daybreak report` on the recorded
# 2-device comparison (tests/data/report: `daybreak bench --runs 3` on the CPU backend and on
# PoCL, see its README), plus a copy of one run whose device name is markup, then Debian's
# Chromium, headless, renders the page to a PNG and dumps its DOM, and check_report_html.py
# checks them against report.md (size, not blank, every table cell and figure, inline charts,
# nothing fetched or run, the markup name shown as text). `tools/install-deps.sh --browser`
# installs Chromium (`tools/run.sh test` runs it so); without it the test is skipped, and fails
# under CI=true.
# usage: test_report_html.sh <daybreak> <tests/data/report> <check_report_html.py>
set -uo pipefail
exe=$1 data=$2 checker=$3
fail() { echo "FAIL: $*"; exit 1; }
browser=$(command -v chromium || true)
if [ -z "$browser" ]; then
  [ "${CI:-}" = true ] && fail "CI=true and no chromium: run tools/install-deps.sh --browser"
  echo "skipped: no chromium (tools/install-deps.sh --browser installs it)"; exit 77
fi
tmp=${DBK_TEST_TMP:-/tmp/daybreak-tests}/report_html
rm -rf "$tmp" && mkdir -p "$tmp" || fail "cannot make $tmp"

# One run again, under a device name made of markup: the page must show it as text.
hostile='<script>alert(1)</script><b>bold</b> & "quoted" | piped **not bold** `not code` \ \| end'
mkdir -p "$tmp/hostile" && cp -r "$data/cpu/run-01" "$tmp/hostile/run-01" || fail "cannot copy a run"
python3 - "$tmp/hostile/run-01/result.json" "$hostile" <<'EOF' || fail "cannot rename the device"
import json, sys
path, name = sys.argv[1:]
r = json.load(open(path))
r["device"]["name"] = name
json.dump(r, open(path, "w"), indent=2)
EOF

# A buyer's price for the CPU (any EPYC) at the report, so the cost columns and their source show.
out=$("$exe" report "$data/cpu" "$data/opencl" "$tmp/hostile" --out "$tmp/report" --price 'EPYC=0.05' 2>&1) ||
  fail "daybreak report: $out"
[ -s "$tmp/report/report.html" ] || fail "no report.html: $out"
echo "$out" | grep -q "report in $tmp/report/report.md and report.html" || fail "the last line does not name report.html: $out"
grep -q "USD 0.05 (--price 'EPYC=0.05' of this report)" "$tmp/report/report.md" || fail "report.md: no price source"

# Headless Chromium: its own profile folder (tests may run in parallel), root needs --no-sandbox.
w=1280 h=2400
flags=(--headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars --no-first-run
       --user-data-dir="$tmp/profile" --window-size=$w,$h)
timeout 120 "$browser" "${flags[@]}" --screenshot="$tmp/page.png" "file://$tmp/report/report.html" \
  >"$tmp/screenshot.log" 2>&1 || fail "chromium --screenshot: $(tail -3 "$tmp/screenshot.log")"
timeout 120 "$browser" "${flags[@]}" --dump-dom "file://$tmp/report/report.html" >"$tmp/dom.html" \
  2>"$tmp/dom.log" || fail "chromium --dump-dom: $(tail -3 "$tmp/dom.log")"
python3 "$checker" "$tmp/report" "$tmp/page.png" "$tmp/dom.html" $w $h "$hostile"
