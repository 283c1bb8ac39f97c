#!/usr/bin/env bash
# Softmax attention's evaluation without autograd in blocks of query rows (the default,
# mixers/softmax_attention.h) against one [B,H,T,T] product (SEQLAB_ATTENTION_BLOCKS=0),
# alternating, same binary, same model: a chomsky grid model (duplicate_string, width 64,
# 2 layers, 4 heads) after 2 training steps, scored at stream length LEN (1501 is the paper
# range's n = 500) on N sequences in batches of 32. Prints each rep's user+sys CPU seconds and
# peak RSS, the ratio of the medians, and both runs' accuracy and loss (they must agree).
#
#   bench/attention_eval.sh [BIN] [LEN]      (defaults: build/seqlab, 1501)
# Environment: REPS (3), N (128), ARCH (softmax; mae takes the same path).
set -euo pipefail
bin="${1:-build/seqlab}" len="${2:-1501}" reps="${REPS:-3}" n="${N:-128}" arch="${ARCH:-softmax}"
[ -x /usr/bin/time ] || { echo "error: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
[ -x "$bin" ] || { echo "error: $bin is not an executable (build it: bash scripts/build.sh seqlab)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin" train --task duplicate_string --max-len 121 --arch "$arch" --d-model 64 --n-layer 2 \
  --batch 32 --steps 2 --eval-every 2 --eval-size 32 --threads 1 -q --out "$work/model" > /dev/null
run() {  # mode rep -> "cpu_seconds peak_mib"; the JSON goes to $work/$mode.json
  local env=(env)
  [ "$1" = full ] && env+=(SEQLAB_ATTENTION_BLOCKS=0)
  "${env[@]}" /usr/bin/time -f "%U %S %M" -o "$work/time" "$bin" eval --model "$work/model" \
    --lengths "$len" --n "$n" --batch 32 --threads 1 --json > "$work/$1.json"
  awk '{ printf "%.2f %d\n", $1 + $2, $3 / 1024 }' "$work/time"
}
source "$(dirname "$0")/ab_lib.sh"
printf '%-8s %4s %10s %14s\n' mode rep "cpu s" "peak RSS MiB"
ab_reps full blocked "$reps" '%-8s %4d %10.2f %14s\n'
mf=$(ab_median full) mb=$(ab_median blocked)
for mode in full blocked; do
  printf '%-8s %s\n' "$mode" "$(sed -n 's/.*"accuracy":\([^,]*\).*"loss":\([^,]*\).*/accuracy \1, loss \2/p' "$work/$mode.json")"
done
awk -v f="$mf" -v b="$mb" -v a="$arch" -v L="$len" -v n="$n" 'BEGIN {
  printf "median cpu s: full %.2f, blocked %.2f; blocked / full = %.3f (%s, T = %s, %s sequences)\n", f, b, b / f, a, L, n }'
