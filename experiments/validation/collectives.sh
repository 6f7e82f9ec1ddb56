#!/usr/bin/env bash
# Section B of ../shared/reference/validation.md: the collective anchors (nccl-tests on
# DGX A100 servers), simulated with `twinscale collective` in both modes.
#   - 8 × A100 in one server, all-reduce busbw at 8 GiB vs 220–232 GB/s (midpoint 226);
#   - 4 and 8 DGX A100 servers (8 × HDR 200G each), all-reduce busbw at 8 GiB vs ≈ 192 GB/s;
#   - small messages: busbw at 1 MiB as a fraction of the 8 GiB figure (published: "a
#     fraction", no number, so no error is computed for that row).
# Usage: experiments/validation/collectives.sh OUTDIR
# Writes OUTDIR/validation-collectives.csv (source,row,gpus,predicted,published,unit,
# error_pct,mode) and OUTDIR/raw/collective-*.json; prints the rows. Takes a few seconds.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:?usage: collectives.sh OUTDIR}"
cli="${TWINSCALE:-$root/build/cli/twinscale}"
mkdir -p "$out/raw"
exec /usr/bin/python3 - "$cli" "$out" <<'PY'
import csv, json, os, subprocess, sys

cli, out = sys.argv[1], sys.argv[2]
FIELDS = ["source", "row", "gpus", "predicted", "published", "unit", "error_pct", "mode"]
GIB = "8G"


def busbw(name, gpus, size, mode):
    args = [cli, "collective", "--cluster", "dgx-a100-superpod", "--op", "all-reduce", "--gpus", str(gpus),
            "-b", size, "-e", size, "--mode", mode, "--json"]
    text = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    with open(os.path.join(out, "raw", f"collective-{name}-{size}-{mode}.json"), "w") as f:
        f.write(text)
    return json.loads(text)["rows"][0]["busbw_gb_per_s"]


rows = []
for mode in ("analytic", "flow"):
    anchors = [("nccl-tests-1server", "8xA100 one server all-reduce busbw (8 GiB)", 8, 226.0),
               ("nccl-tests-4server", "4 DGX A100 8xHDR all-reduce busbw (8 GiB)", 32, 192.0),
               ("nccl-tests-8server", "8 DGX A100 8xHDR all-reduce busbw (8 GiB)", 64, 192.0)]
    for name, row, gpus, published in anchors:
        pred = busbw(name, gpus, GIB, mode)
        rows.append({"source": "nccl-tests", "row": row, "gpus": gpus, "predicted": round(pred, 2),
                     "published": published, "unit": "GB/s busbw",
                     "error_pct": round(100 * (pred - published) / published, 2), "mode": mode})
    small = busbw("nccl-tests-4server", 32, "1M", mode)
    large = busbw("nccl-tests-4server", 32, GIB, mode)
    rows.append({"source": "nccl-tests", "row": "4 DGX A100 all-reduce busbw 1 MiB / 8 GiB (published: a fraction)",
                 "gpus": 32, "predicted": round(small / large, 3), "published": "", "unit": "ratio",
                 "error_pct": "", "mode": mode})

path = os.path.join(out, "validation-collectives.csv")
with open(path, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=FIELDS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
width = [max(len(str(r[k])) for r in rows + [dict(zip(FIELDS, FIELDS))]) for k in FIELDS]
for r in [dict(zip(FIELDS, FIELDS))] + rows:
    print("  ".join(str(r[k]).ljust(w) for k, w in zip(FIELDS, width)))
print(f"wrote {path}")
PY
