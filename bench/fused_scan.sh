#!/usr/bin/env bash
# The CPU time of one training run with the fused scans (Mamba's selective scan,
# mixers/selective_scan.h; the QRNN's linear recurrence, mixers/linear_scan.h; the LSTM's, GRU's
# and Elman RNN's, mixers/{lstm,gru,elman}_scan.h; the default) against their per-token references
# (SEQLAB_SCAN=reference), alternating, same binary, same run: a chomsky grid cell
# (reverse_string, n <= 40, so T <= 81; width 64, 2 layers, batch 32) of ARCH cut to STEPS steps.
# Prints each rep's user+sys CPU seconds and final training loss, and the ratio of the medians (CPU time rather than wall time, since the
# machine is shared). The two paths round differently, so the weights are not bitwise equal; the
# final losses are printed side by side instead.
#
#   bench/fused_scan.sh [BIN] [STEPS]      (defaults: build/seqlab, 200)
# Environment: ARCH (mamba; or qrnn, lstm, gru, elman), REPS (3), TASK (reverse_string), LEN (81), D (64), EXTRA (more `seqlab train`
# arguments; an MQAR cell of P = 64: TASK=mqar LEN=256 EXTRA='--vocab 256 --n-pairs 64').
set -euo pipefail
bin="${1:-build/seqlab}" steps="${2:-200}" reps="${REPS:-3}"
arch="${ARCH:-mamba}" task="${TASK:-reverse_string}" len="${LEN:-81}" d="${D:-64}" extra="${EXTRA:-}"
[ -x /usr/bin/time ] || { echo "error: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
[ -x "$bin" ] || { echo "error: $bin is not an executable (build it: bash scripts/build.sh seqlab)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run() {  # mode rep -> "cpu_seconds final_loss"
  local mode="$1" out="$work/$1.$2"
  local env=(env)
  [ "$mode" = reference ] && env+=(SEQLAB_SCAN=reference)
  "${env[@]}" /usr/bin/time -f "%U %S" -o "$work/time" "$bin" train --task "$task" \
    --max-len "$len" --arch "$arch" --d-model "$d" --n-layer 2 --batch 32 --lr 3e-3 \
    --steps "$steps" --eval-every "$steps" --eval-size 64 --threads 1 --seed 0 -q \
    $extra --out "$out" > /dev/null
  local loss
  loss=$(tail -n 1 "$out/metrics.jsonl" | sed -n 's/.*"loss":\([-0-9.eE+]*\).*/\1/p')
  awk -v l="$loss" '{ printf "%.2f %s\n", $1 + $2, l }' "$work/time"
}
source "$(dirname "$0")/ab_lib.sh"
printf '%-10s %4s %10s %12s\n' mode rep "cpu s" "final loss"
ab_reps reference fused "$reps" '%-10s %4d %10.2f %12s\n'
mr=$(ab_median reference) mf=$(ab_median fused)
awk -v r="$mr" -v f="$mf" -v a="$arch" -v t="$task" -v w="$d" -v L="$len" -v s="$steps" 'BEGIN {
  printf "median cpu s: reference %.2f, fused %.2f; fused / reference = %.3f (%s, %s, T <= %s, width %s, %s steps)\n", r, f, f / r, a, t, L, w, s }'
