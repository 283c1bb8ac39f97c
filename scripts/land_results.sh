#!/usr/bin/env bash
# Lands a suite run (or a slice of one) in a committed results directory: merges the run's rows
# into DEST/results.jsonl, rebuilds DEST's report.md and plots from the merged rows, and keeps
# DEST/train_seconds.tsv. What it writes is what scripts/check_reports.sh regenerates byte for
# byte, so a slice can be committed the moment it finishes and the next slice merged on top.
#
#   scripts/land_results.sh [--bin SEQLAB] SUITE RUN_DIR DEST
#
# DEST holds a --quick grid when its name contains "quick" (as check_reports.sh decides).
# - Rows: every row of RUN_DIR/results.jsonl replaces DEST's rows of the same cell (a rerun of a
#   cell wins whole, never row by row); then the rows are ordered as the grid lists its cells
#   (`seqlab suite SUITE --list`), each cell's rows in their own order. A run's cell the grid
#   does not list is an error: the rows would belong to another grid (or another --quick).
#   DEST's rows of cells the grid no longer lists (a retired configuration) are kept, each right
#   after the listed cell it followed.
# - Report: `seqlab suite SUITE --report-only` on the merged rows, dated today (UTC) unless
#   SOURCE_DATE_EPOCH is set; check_reports.sh reads the date back from its "Generated" line.
# - Plots: the .svg, .svg.gp and .dat files (no .png: the report links the SVGs). Plots DEST has
#   that the new report does not make are removed.
# - train_seconds.tsv: each cell's `train_seconds` and `machine` (CPU and OpenBLAS core) from
#   RUN_DIR/cells/<id>.result.json, merged with DEST's file the same way, in grid order. Not
#   written for a run without cells/ results.
#
# Exit status: 0 when landed, 1 on a failure (nothing in DEST is changed then), 2 on bad usage.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  sed -n '/^#   scripts/p' "$0" | sed 's/^#   /usage: /' >&2
  exit 2
}
BIN=build/seqlab quick=()
while [ $# -gt 0 ]; do
  case $1 in
    --bin) [ $# -ge 2 ] || usage; BIN=$2; shift 2 ;;
    -h | --help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "land_results: unknown option $1" >&2; usage ;;
    *) break ;;
  esac
done
[ $# -eq 3 ] || usage
suite=$1 run=$2 dest=${3%/}
case $(basename "$dest") in *quick*) quick=(--quick) ;; esac
[ -x "$BIN" ] || { echo "land_results: $BIN not found (build seqlab_cli first)" >&2; exit 2; }
[ -f "$run/results.jsonl" ] || { echo "land_results: $run/results.jsonl not found" >&2; exit 2; }
command -v gnuplot >/dev/null || { echo "land_results: gnuplot not found" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$BIN" suite "$suite" "${quick[@]}" --list -q >"$tmp/grid.txt"
mkdir -p "$tmp/out"
python3 - "$tmp/grid.txt" "$run" "$dest" "$tmp/out" <<'EOF'
import json, os, sys

grid_file, run, dest, out = sys.argv[1:5]
order = {c: i for i, c in enumerate(open(grid_file).read().split())}


def rows(path):  # (cell, raw line): lines are copied as they are, never re-serialised
    if not os.path.exists(path):
        return []
    return [(json.loads(l)["cell"], l.rstrip("\n")) for l in open(path) if l.strip()]


def merge(old, new, key):
    unknown = sorted({key(r) for r in new if key(r) not in order})
    if unknown:
        sys.exit(f"land_results: cells not in the grid: {', '.join(unknown[:5])}")
    fresh = {key(r) for r in new}
    # Sort key (grid index, 0 = listed / 1 = retired, position). A retired cell (in DEST, no longer
    # in the grid) stays right after the listed cell it followed in DEST.
    keyed, at = [], -1
    for i, r in enumerate(old):
        if key(r) in order:
            at = order[key(r)]
        if key(r) not in fresh:
            keyed.append(((at, key(r) not in order, i), r))
    keyed += [((order[key(r)], False, len(old) + i), r) for i, r in enumerate(new)]
    retired = {key(r) for r in old if key(r) not in order}
    if retired:
        print(f"land_results: kept {len(retired)} cells the grid no longer lists", file=sys.stderr)
    return [r for _, r in sorted(keyed, key=lambda kr: kr[0])]


new_rows = rows(os.path.join(run, "results.jsonl"))
merged = merge(rows(os.path.join(dest, "results.jsonl")), new_rows, lambda r: r[0])
with open(os.path.join(out, "results.jsonl"), "w") as f:
    f.writelines(line + "\n" for _, line in merged)

cells = os.path.join(run, "cells")
if not os.path.isdir(cells):
    sys.exit(0)


def machine(m):  # as MachineFacts::summary() (src/seqlab/core/machine.h); "" for older cells
    if not m:
        return ""
    s = m.get("cpu") or "unknown CPU"
    if m.get("cpu_family", -1) >= 0:
        s += f" (family {m['cpu_family']}, model {m.get('cpu_model', -1)})"
    s += f", {m.get('cores', 0)} cores"
    return s + (f", OpenBLAS core {m['blas_core']}" if m.get("blas_core") else "")


secs = []
for c in sorted({c for c, _ in new_rows}):
    p = os.path.join(cells, c + ".result.json")
    if os.path.exists(p):
        r = json.load(open(p))
        s = r.get("train_seconds")
        secs.append((c, "" if s is None else f"{s:.1f}", machine(r.get("machine"))))
old = []
tsv = os.path.join(dest, "train_seconds.tsv")
if os.path.exists(tsv):  # files from before the machine column get an empty one
    old = [tuple(l.rstrip("\n").split("\t")) for l in open(tsv) if l[0] != "#"][1:]
    old = [(r + ("",))[:3] for r in old]
secs = merge(old, secs, lambda r: r[0])
with open(os.path.join(out, "train_seconds.tsv"), "w") as f:
    f.write("# Training seconds of each cell: `train_seconds` of its cells/<id>.result.json\n")
    f.write("# (not committed; from cells/), in results.jsonl order, and the machine it ran on\n")
    f.write("# (its `machine`; empty for cells run before it was recorded).\n")
    f.write("cell\ttrain_seconds\tmachine\n")
    for r in secs:
        f.write("\t".join(r) + "\n")
EOF
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(date -u -d "$(date -u +%Y-%m-%d)" +%s)} \
  "$BIN" suite "$suite" "${quick[@]}" --out "$tmp/out" --report-only -q >/dev/null
mkdir -p "$dest/plots"
find "$dest/plots" -maxdepth 1 -type f \( -name '*.svg' -o -name '*.svg.gp' -o -name '*.dat' \) \
  -delete
for f in "$tmp"/out/plots/*.svg "$tmp"/out/plots/*.svg.gp "$tmp"/out/plots/*.dat; do
  [ -f "$f" ] && cp "$f" "$dest/plots/"
done
rmdir "$dest/plots" 2>/dev/null || true
cp "$tmp/out/report.md" "$tmp/out/results.jsonl" "$dest/"
[ -f "$tmp/out/train_seconds.tsv" ] && cp "$tmp/out/train_seconds.tsv" "$dest/"
echo "land_results: $dest: $(wc -l <"$dest/results.jsonl") rows, report and plots rebuilt" >&2
