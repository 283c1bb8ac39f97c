#!/usr/bin/env bash
# Rebuilds every committed suite report under docs/results from its own results.jsonl and checks
# that it comes back byte for byte.
#
# For each docs/results/*/ with a report.md whose first line names a known suite (`# Suite
# `NAME``), it copies results.jsonl into a temporary directory, runs
#   seqlab suite NAME [--quick] --out TMP --report-only
# (--quick for directories named *quick*, the copies of `--quick` runs) with SOURCE_DATE_EPOCH set
# to the report's "Generated" date, and compares: report.md and results.jsonl (which
# --report-only rewrites when rows lack the input-blind baseline) byte for byte, and every
# committed plot's data (.dat) and gnuplot script (.svg.gp). Committed SVGs are compared too, but
# a difference there is only a note: they are gnuplot's output and change with its version.
# Every image a report links to must be committed.
#
# Usage: scripts/check_reports.sh [SEQLAB_BINARY]   (default build/seqlab; needs gnuplot)
# Exit status 0 when every report regenerates, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build/seqlab}
[ -x "$BIN" ] || { echo "check_reports: $BIN not found (build seqlab_cli first)" >&2; exit 2; }
command -v gnuplot >/dev/null || { echo "check_reports: gnuplot not found" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0 checked=0
for dir in docs/results/*/; do
  dir=${dir%/}
  name=$(basename "$dir")
  [ -f "$dir/report.md" ] || continue
  suite=$(sed -n '1s/^# Suite `\(.*\)`$/\1/p' "$dir/report.md")
  if [ -z "$suite" ] || ! "$BIN" suite "$suite" --list >/dev/null 2>&1; then
    echo "skip $name: report.md names no known suite"
    continue
  fi
  if [ ! -f "$dir/results.jsonl" ]; then
    echo "FAIL $name: no results.jsonl"
    failed=1
    continue
  fi
  quick=()
  case $name in *quick*) quick=(--quick) ;; esac
  date=$(sed -n 's/^Generated \([0-9-]*\) from .*/\1/p' "$dir/report.md")
  out="$tmp/$name"
  mkdir -p "$out"
  cp "$dir/results.jsonl" "$out/"
  if ! SOURCE_DATE_EPOCH=$(date -u -d "$date" +%s) "$BIN" suite "$suite" "${quick[@]}" \
    --out "$out" --report-only -q >/dev/null 2>"$out.err"; then
    echo "FAIL $name: seqlab suite $suite --report-only: $(tail -1 "$out.err")"
    failed=1
    continue
  fi
  bad=()
  cmp -s "$dir/report.md" "$out/report.md" || bad+=(report.md)
  cmp -s "$dir/results.jsonl" "$out/results.jsonl" || bad+=(results.jsonl)
  notes=()
  for f in "$dir"/plots/*; do
    [ -f "$f" ] || continue
    b=$(basename "$f")
    if [ ! -f "$out/plots/$b" ]; then
      bad+=("plots/$b (not made)")
    elif ! cmp -s "$f" "$out/plots/$b"; then
      case $b in
        *.svg) notes+=("plots/$b") ;;
        *) bad+=("plots/$b") ;;
      esac
    fi
  done
  for img in $(grep -o '](plots/[^)]*)' "$dir/report.md" | sed 's/^](//; s/)$//'); do
    [ -f "$dir/$img" ] || bad+=("$img (linked, not committed)")
  done
  checked=$((checked + 1))
  if [ ${#bad[@]} -gt 0 ]; then
    echo "FAIL $name ($suite${quick[*]:+ --quick}): ${bad[*]}"
    [[ " ${bad[*]} " == *" report.md "* ]] && diff "$dir/report.md" "$out/report.md" | head -20
    failed=1
  else
    echo "ok   $name ($suite${quick[*]:+ --quick})${notes[*]:+; SVGs differ (gnuplot version?): ${notes[*]}}"
  fi
done
echo "check_reports: $checked reports checked, $([ $failed = 0 ] && echo all regenerate byte for byte || echo some differ)"
exit $failed
