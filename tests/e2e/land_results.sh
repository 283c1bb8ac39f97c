#!/usr/bin/env bash
# ctest land_results: scripts/land_results.sh rebuilds a committed results directory from two
# halves of its rows. docs/results/mqar-quick is split by cell into a "run" (the first two cells,
# with a cells/ folder carrying train_seconds and, for one, the machine) and a "committed" directory (the rest, with a stale
# report and a stray plot); landing the run must give back the committed rows and report byte for
# byte, write train_seconds.tsv in grid order, and drop the stray plot. A retired cell's row (in
# the directory, not in the grid) stays where it was; a run's row from a cell the grid does not
# list must fail and leave the directory untouched.
#
#   tests/e2e/land_results.sh SEQLAB_BINARY
set -euo pipefail
BIN=$1
cd "$(dirname "$0")/../.."
src=docs/results/mqar-quick
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mapfile -t cells < <(sed -n 's/.*"cell":"\([^"]*\)".*/\1/p' "$src/results.jsonl" | uniq)
[ ${#cells[@]} -ge 4 ] || fail "$src has fewer than 4 cells"
run=$tmp/run dest=$tmp/mqar-quick
mkdir -p "$run/cells" "$dest/plots"
for c in "${cells[1]}" "${cells[0]}"; do  # out of grid order on purpose
  grep -e "\"cell\":\"$c\"" "$src/results.jsonl" >>"$run/results.jsonl"  # raw lines, not re-serialised
  echo "{\"train_seconds\": 12.34}" >"$run/cells/$c.result.json"
done
# A cell that recorded its machine (cmd_suite.cpp); the other ran before that existed.
echo '{"train_seconds": 12.34, "machine": {"cpu": "AMD EPYC", "cpu_family": 26, "cpu_model": 2,
  "cores": 2, "blas_core": "Haswell", "blas_config": "OpenBLAS 0.3.21"}}' \
  >"$run/cells/${cells[1]}.result.json"
grep -v -e "\"cell\":\"${cells[0]}\"" -e "\"cell\":\"${cells[1]}\"" "$src/results.jsonl" \
  >"$dest/results.jsonl"
printf 'cell\ttrain_seconds\n%s\t3.0\n' "${cells[2]}" >"$dest/train_seconds.tsv"
echo stale >"$dest/report.md"
echo stray >"$dest/plots/gone.dat"

date=$(sed -n 's/^Generated \([0-9-]*\) from .*/\1/p' "$src/report.md")
SOURCE_DATE_EPOCH=$(date -u -d "$date" +%s) bash scripts/land_results.sh --bin "$BIN" mqar \
  "$run" "$dest" 2>/dev/null || fail "land_results.sh exited $?"
cmp -s "$src/results.jsonl" "$dest/results.jsonl" || fail "rows differ from $src"
cmp -s "$src/report.md" "$dest/report.md" || fail "report.md differs from $src"
for f in "$src"/plots/*.dat "$src"/plots/*.svg.gp; do
  cmp -s "$f" "$dest/plots/$(basename "$f")" || fail "plots/$(basename "$f") differs"
done
[ ! -e "$dest/plots/gone.dat" ] || fail "a plot the report no longer makes was kept"
want=$(printf 'cell\ttrain_seconds\tmachine\n%s\t12.3\t\n%s\t12.3\t%s\n%s\t3.0\t' "${cells[0]}" \
  "${cells[1]}" "AMD EPYC (family 26, model 2), 2 cores, OpenBLAS core Haswell" "${cells[2]}")
[ "$(grep -v '^#' "$dest/train_seconds.tsv")" = "$want" ] || fail "train_seconds.tsv: $(cat "$dest/train_seconds.tsv")"

# A retired cell (in the directory, no longer in the grid) is kept where it was.
n0=$(grep -c -e "\"cell\":\"${cells[0]}\"" "$dest/results.jsonl")
sed -i "${n0}a {\"cell\":\"retired_s0\",\"accuracy\":0.5}" "$dest/results.jsonl"
mkdir -p "$tmp/empty" && : >"$tmp/empty/results.jsonl"
bash scripts/land_results.sh --bin "$BIN" mqar "$tmp/empty" "$dest" 2>/dev/null ||
  fail "landing next to a retired cell exited $?"
[ "$(sed -n "$((n0 + 1))p" "$dest/results.jsonl")" = '{"cell":"retired_s0","accuracy":0.5}' ] ||
  fail "the retired cell's row moved"

cp -r "$dest" "$tmp/before"
echo '{"cell":"not_a_cell_s0","accuracy":1.0}' >>"$run/results.jsonl"
if bash scripts/land_results.sh --bin "$BIN" mqar "$run" "$dest" 2>"$tmp/err"; then
  fail "a cell outside the grid was landed"
fi
grep -q "not_a_cell_s0" "$tmp/err" || fail "the error does not name the cell: $(cat "$tmp/err")"
diff -r "$tmp/before" "$dest" >/dev/null || fail "a failed landing changed the directory"
echo "land_results: ok"
