#!/usr/bin/env bash
# ctest report_chromium: `twinscale report` pages opened in headless Chromium.
#  1. a simulated run's trace (a slow GPU injected), a campaign and a flow run's link loads;
#  2. the per-rank CSV of a flow run with a degraded link, and its link loads.
# Each page loads with no console error and its scripts finish (body data-rendered="ok");
# in the DOM after the scripts ran, every chart section holds Vega's SVG axes and a
# legend (and says so in data-axes / data-legends) and gives a tooltip on its first mark,
# the rank, DP and time axes zoom with the wheel (report.html#probe=tooltip+zoom); each
# section, shown alone
# (report.html#only=ID), is screenshotted and must not be blank. The screenshots stay in
# WORKDIR (CI artefacts). Exit 77 (skipped) where chromium is not installed
# (scripts/install-deps.sh installs it) or the build has no charting library.
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

# --- the inputs -------------------------------------------------------------------------
printf 'scope,index,factor\nrank,5,0.9\n' > "$work/speeds.csv"
"$cli" simulate --preset tiny-1f1b --mode analytic --every-rank --gpu-speed-file "$work/speeds.csv" \
  --trace "$work/trace.json" --json > /dev/null
"$cli" campaign --preset tiny-megascale --faults llama3-405b --recovery megascale --days 2 --seeds 2 \
  --iteration-time 1 --json > "$work/campaign.json"
"$cli" simulate --preset tiny-1f1b --mode flow --link-csv "$work/links.csv" --json > /dev/null
if ! "$cli" report "$work/trace.json" --campaign "$work/campaign.json" --links "$work/links.csv" \
  -o "$work/trace.html" 2> "$work/report.log"; then
  cat "$work/report.log" >&2
  if grep -q "libjs-vega" "$work/report.log"; then
    echo "built without the charting library: skipped"
    exit 77
  fi
  exit 1
fi
printf '[[event]]\nkind = "link-degraded"\nlink = "server1.nic0-tor0.r0#0"\nbandwidth_factor = 0.25\n' \
  > "$work/plan.toml"
"$cli" simulate --preset tiny-1f1b --gpus 32 --global-batch 32 --every-rank --mode flow \
  --faults "$work/plan.toml" --per-rank-csv "$work/flow.csv" --link-csv "$work/flow-links.csv" --quiet > /dev/null
"$cli" report "$work/flow.csv" --links "$work/flow-links.csv" -o "$work/flow.html" 2>> "$work/report.log"

# --- the browser ------------------------------------------------------------------------
run_chromium() { # URL, then chromium's options
  local url="$1"
  shift
  timeout 120 "$browser" --headless --disable-gpu --no-sandbox --no-first-run --disable-extensions \
    --hide-scrollbars --user-data-dir="$work/profile" --virtual-time-budget=10000 "$@" "$url"
}
status=0
fail() {
  echo "FAIL: $*" >&2
  status=1
}
for page in trace flow; do
  run_chromium "file://$work/$page.html" --enable-logging=stderr --v=0 --dump-dom \
    > "$work/$page.dom.html" 2> "$work/$page.console.log" || fail "$page: chromium --dump-dom failed"
  if grep -E 'CONSOLE|Uncaught' "$work/$page.console.log"; then fail "$page: console messages (above)"; fi
  grep -q '<body[^>]*data-rendered="ok"' "$work/$page.dom.html" || fail "$page: the report's scripts did not finish"
  run_chromium "file://$work/$page.html" --screenshot="$work/$page.png" --window-size=1280,2600 \
    > /dev/null 2>&1 || fail "$page: full-page screenshot failed"
done

# Every chart section: Vega's axes and legend in the SVG, counted in the scene graph too.
/usr/bin/python3 - "$work/trace.dom.html" breakdown heatmap grid timeline links campaign <<'PY' || status=1
import re, sys
dom = open(sys.argv[1], encoding="utf-8").read()
bad = 0
for sid in sys.argv[2:]:
    m = re.search(r'<section id="%s"([^>]*)>(.*?)</section>' % sid, dom, re.S)
    if not m:
        print(f"FAIL: #{sid} missing"); bad = 1; continue
    attrs, body = m.group(1), m.group(2)
    axes = int((re.search(r'data-axes="(\d+)"', attrs) or [0, 0])[1])
    legends = int((re.search(r'data-legends="(\d+)"', attrs) or [0, 0])[1])
    svg_axes, svg_legends = body.count("role-axis\""), body.count("role-legend\"")
    ok = axes >= 2 and legends >= 1 and svg_axes >= 2 and svg_legends >= 1 and "<svg" in body
    print(f"#{sid}: {axes} axes, {legends} legend(s) in the scene graph; {svg_axes} axis and "
          f"{svg_legends} legend groups in the SVG: {'ok' if ok else 'FAIL'}")
    bad |= not ok
sys.exit(bad)
PY
# Tooltips: the pointer moved over each chart's first mark; zoom: one wheel step over the
# rank, DP and time axes (report.html#probe=tooltip+zoom).
run_chromium "file://$work/trace.html#probe=tooltip+zoom" --dump-dom > "$work/trace.probed.html" 2> /dev/null ||
  fail "chromium --dump-dom (probes) failed"
for id in breakdown heatmap grid timeline links campaign; do
  tip=$(grep -o "<section id=\"$id\"[^>]*>" "$work/trace.probed.html" | grep -o 'data-tooltip="[^"]*"' || true)
  echo "#$id tooltip: ${tip:-none}"
  [ -n "$tip" ] && [ "$tip" != 'data-tooltip=""' ] || fail "#$id: no tooltip on its first mark"
done
for id in heatmap grid timeline; do
  zoom=$(grep -o "<section id=\"$id\"[^>]*>" "$work/trace.probed.html" | grep -o 'data-zoom="[^"]*"' || true)
  echo "#$id zoom: ${zoom:-none}"
  before=${zoom#data-zoom=\"}
  before=${before%% -*}
  after=${zoom##*&gt; }
  after=${after%\"}
  [ -n "$zoom" ] && [ "$before" != "$after" ] || fail "#$id: the wheel did not zoom"
done
grep -q 'straggler' "$work/trace.dom.html" || fail "the findings table does not name the straggler"
grep -q 'ETTR' "$work/trace.dom.html" || fail "the campaign section is empty"
grep -q 'server1.nic0-tor0.r0#0 (up)' "$work/flow.dom.html" || fail "the degraded link is not named by the link chart"
grep -q 'pipeline stage' "$work/flow.dom.html" || fail "the flow run's grid is not by pipeline stage"

# Each section alone: its screenshot is not blank.
shots=()
for id in breakdown heatmap grid timeline links campaign findings; do
  run_chromium "file://$work/trace.html#only=$id" --screenshot="$work/trace-$id.png" --window-size=1280,1000 \
    > /dev/null 2>&1 || fail "screenshot of #$id failed"
  shots+=("$work/trace-$id.png")
done
/usr/bin/python3 - "$work/trace.png" "$work/flow.png" "${shots[@]}" <<'PY' || status=1
import sys
import matplotlib.image as mpimg
bad = 0
for path in sys.argv[1:]:
    img = mpimg.imread(path)[:, :, :3]
    sample = img[::4, ::4].reshape(-1, 3)
    colours = {tuple((px * 255).astype(int)) for px in sample}
    inked = float(((sample < 0.9).any(axis=1)).mean())
    ok = len(colours) >= 8 and inked > 0.01
    print(f"{path}: {img.shape[1]}x{img.shape[0]}, {len(colours)} colours, {100 * inked:.1f} % inked: {'ok' if ok else 'FAIL'}")
    bad |= not ok
sys.exit(bad)
PY
exit $status
