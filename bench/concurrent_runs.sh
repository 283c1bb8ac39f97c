#!/usr/bin/env bash
# `seqlab train --threads 1` sharing the machine, for two seqlab binaries side by side. Written to
# measure the OpenBLAS thread cap of `--threads` (docs/RESULTS.md). Two tables:
#   beside: one run started by hand (OPENBLAS_NUM_THREADS unset) while one busy run per core goes
#           on in the background with OPENBLAS_NUM_THREADS=1 (as `seqlab suite` starts its
#           workers) — a run by hand next to a suite;
#   alike:  one run per core at once, all of the same binary, OPENBLAS_NUM_THREADS unset.
# Each rep's time is the slowest run's training-loop seconds; reps interleave the binaries. All
# reps are printed: the slowdown this measures comes and goes with scheduling, so a best-of hides it.
#
#   bench/concurrent_runs.sh OLD_BIN NEW_BIN [STEPS]
# Environment: ARCHS (lstm softmax), D (64), LAYERS (1), BATCH (32), LEN (40), REPS (3).
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,13p' "$0" >&2; exit 2; }
old="$1" new="$2" steps="${3:-300}"
for b in "$old" "$new"; do [ -x "$b" ] || { echo "error: $b is not an executable" >&2; exit 2; }; done
archs="${ARCHS:-lstm softmax}" d="${D:-64}" layers="${LAYERS:-1}" batch="${BATCH:-32}"
len="${LEN:-40}" reps="${REPS:-3}" cores=$(nproc)
work=$(mktemp -d)
bg=()
trap '[ ${#bg[@]} -eq 0 ] || kill "${bg[@]}" 2>/dev/null; rm -rf "$work"' EXIT
unset OPENBLAS_NUM_THREADS OMP_NUM_THREADS
train() {  # bin arch out steps; always started with `&`: it execs, so $! is seqlab's own pid
  local bin="$1" arch="$2" out="$3" n="$4"
  exec "$bin" train --task parity --arch "$arch" --d-model "$d" --n-layer "$layers" --batch "$batch" \
    --max-len "$len" --steps "$n" --eval-every "$n" --eval-size 8 --log-every "$n" --threads 1 \
    -q --json --out "$out"
}
runs_at_once() {  # runs bin arch -> training-loop seconds of the slowest run
  local runs="$1" bin="$2" arch="$3" pids=() i
  for ((i = 0; i < runs; ++i)); do train "$bin" "$arch" "$work/run$i" "$steps" >"$work/out$i" & pids+=($!); done
  wait "${pids[@]}"
  for ((i = 0; i < runs; ++i)); do sed -n 's/.*"seconds":\([0-9.e+-]*\).*/\1/p' "$work/out$i"; done |
    sort -g | tail -1
  rm -rf "$work"/run*
}
table() {  # title runs
  echo
  echo "| $1 ($(date -u +%F), $cores cores, $steps steps, d$d x$layers, batch $batch, n <= $len) | old: s, each rep | new: s, each rep | old / new, total time |"
  echo "|---|---|---|---:|"
  local arch r all_old all_new
  for arch in $archs; do
    all_old="" all_new=""
    for ((r = 0; r < reps; ++r)); do
      all_old+=" $(runs_at_once "$2" "$old" "$arch")"
      all_new+=" $(runs_at_once "$2" "$new" "$arch")"
    done
    awk -v a="$arch" -v o="$all_old" -v n="$all_new" 'BEGIN{
      k = split(o, x, " "); split(n, y, " "); so = sn = 0; lo = ln = ""
      for (i = 1; i <= k; ++i) { so += x[i]; sn += y[i]; lo = lo sprintf("%s%.1f", i > 1 ? ", " : "", x[i]); ln = ln sprintf("%s%.1f", i > 1 ? ", " : "", y[i]) }
      printf "| %s | %s | %s | %.2fx |\n", a, lo, ln, so / sn }'
  done
}
for ((i = 0; i < cores; ++i)); do
  OPENBLAS_NUM_THREADS=1 train "$new" lstm "$work/bg$i" 100000000 >/dev/null 2>&1 &
  bg+=($!)
done
sleep 3
table "beside: 1 run by hand next to $cores suite-like runs" 1
kill "${bg[@]}" 2>/dev/null || true
wait "${bg[@]}" 2>/dev/null || true
bg=()
table "alike: $cores runs at once" "$cores"
