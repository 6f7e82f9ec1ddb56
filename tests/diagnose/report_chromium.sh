#!/usr/bin/env bash
# ctest report_chromium: `twinscale report` of a simulated run (a slow GPU injected) opens
# in headless Chromium with no console error, its scripts run (body data-rendered="ok"),
# the expected sections are present and the screenshot is not blank. Exit 77 (skipped)
# where chromium is not installed (scripts/install-deps.sh installs it).
# Usage: report_chromium.sh TWINSCALE_CLI WORKDIR
set -euo pipefail
cli="$1"
work="$2"
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "chromium not found: skipped (scripts/install-deps.sh installs it)"
  exit 77
fi
rm -rf "$work"
mkdir -p "$work"
printf 'scope,index,factor\nrank,5,0.9\n' > "$work/speeds.csv"
"$cli" simulate --preset tiny-1f1b --mode analytic --every-rank --gpu-speed-file "$work/speeds.csv" \
  --trace "$work/trace.json" --json > /dev/null
"$cli" campaign --preset tiny-megascale --faults llama3-405b --recovery megascale --days 2 --seeds 2 \
  --iteration-time 1 --json > "$work/campaign.json"
"$cli" simulate --preset tiny-1f1b --mode flow --link-csv "$work/links.csv" --json > /dev/null
"$cli" report "$work/trace.json" --layout 2x2x2 --campaign "$work/campaign.json" --links "$work/links.csv" \
  -o "$work/report.html"
run_chromium() {
  timeout 120 "$browser" --headless --disable-gpu --no-sandbox --no-first-run --disable-extensions \
    --user-data-dir="$work/profile" --enable-logging=stderr --v=0 "$@" "file://$work/report.html"
}
run_chromium --dump-dom > "$work/dom.html" 2> "$work/console-dom.log"
run_chromium --screenshot="$work/shot.png" --window-size=1280,1600 > /dev/null 2> "$work/console-shot.log" || true
status=0
if grep -E 'CONSOLE|Uncaught' "$work"/console-*.log; then
  echo "console messages while loading the report (above)" >&2
  status=1
fi
grep -q 'data-rendered="ok"' "$work/dom.html" || { echo "the report's scripts did not finish" >&2; status=1; }
for id in summary breakdown heatmap grid timeline links campaign findings; do
  grep -q "id=\"$id\"" "$work/dom.html" || { echo "missing element #$id" >&2; status=1; }
done
grep -q '<canvas' "$work/dom.html" || { echo "no canvas drawn" >&2; status=1; }
grep -q 'ETTR' "$work/dom.html" || { echo "the campaign section is empty" >&2; status=1; }
grep -q 'straggler' "$work/dom.html" || { echo "the findings table does not name the straggler" >&2; status=1; }
grep -q 'link directions' "$work/dom.html" || { echo "the fabric heat-map is empty" >&2; status=1; }
[ -s "$work/shot.png" ] || { echo "no screenshot" >&2; exit 1; }
/usr/bin/python3 - "$work/shot.png" <<'PY' || status=1
import sys
import matplotlib.image as mpimg
img = mpimg.imread(sys.argv[1])
colours = {tuple((px[:3] * 255).astype(int)) for row in img[::8] for px in row[::8]}
print(f"screenshot {img.shape[1]}x{img.shape[0]}, {len(colours)} distinct colours (sampled)")
sys.exit(0 if len(colours) >= 8 else 1)
PY
exit $status
