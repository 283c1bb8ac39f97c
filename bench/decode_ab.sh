#!/usr/bin/env bash
# Generation speed of two seqlab builds on one model, alternating, in one run: `seqlab bench decode`
# (fast engine, greedy) of binary A, then binary B, REPS times. Prints each rep's tokens/s per batch
# size, each rep's ratio B / A, and the median ratio (the machine is shared, so the pairs, taken
# side by side, are what to read; the absolute figures hold only for this machine).
#
#   bench/decode_ab.sh BIN_A BIN_B MODEL_DIR
# Environment: REPS (5), GEN (512 tokens), CONTEXT (16 prompt tokens), BATCH (1,8), WEIGHTS (f32).
# A model to try (a random Mamba of width 256, 4 layers; speed does not depend on training):
#   build/seqlab train --task copy --arch mamba --d-model 256 --n-layer 4 --steps 1 --out /tmp/m256
set -euo pipefail
[ $# -eq 3 ] || { sed -n '2,10p' "$0" >&2; exit 2; }
a="$1" b="$2" model="$3"
reps="${REPS:-5}" gen="${GEN:-512}" ctx="${CONTEXT:-16}" batch="${BATCH:-1,8}"
weights="${WEIGHTS:-f32}"
for bin in "$a" "$b"; do
  [ -x "$bin" ] || { echo "error: $bin is not an executable" >&2; exit 2; }
done
[ -f "$model/config.json" ] || { echo "error: $model has no config.json" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# tokens/s of each batch size, "B:tps B:tps ...", from the csv's generation rows.
speeds() {
  "$1" bench decode --model "$model" --contexts "$ctx" --gen "$gen" --reps 3 --batch "$batch" \
    --weights "$weights" --engines fast -q -o csv |
    awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) c[$i] = i; next }
             $c["test"] == "tg" { printf "%s:%s ", $c["batch"], $c["tokens_per_s"] }'
}
printf '%4s  %-40s %-40s %s\n' rep "A tokens/s (batch:tps)" "B tokens/s" "B / A"
for r in $(seq 1 "$reps"); do
  sa=$(speeds "$a") sb=$(speeds "$b")
  ratios=$(paste <(tr ' ' '\n' <<< "$sa" | grep .) <(tr ' ' '\n' <<< "$sb" | grep .) |
    awk -F'[:\t]' '{ printf "%s:%.3f ", $1, $4 / $2 }')
  printf '%4d  %-40s %-40s %s\n' "$r" "$sa" "$sb" "$ratios"
  echo "$ratios" >> "$work/ratios"
done
# The median ratio per batch size.
tr ' ' '\n' < "$work/ratios" | grep . | sort -t: -k1,1n -k2,2g |
  awk -F: '{ v[$1] = v[$1] " " $2; n[$1]++ }
           END { for (k in v) { split(substr(v[k], 2), x, " "); m = n[k];
                 med = (m % 2) ? x[(m + 1) / 2] : (x[m / 2] + x[m / 2 + 1]) / 2;
                 printf "batch %s: median B / A %.2f over %d reps\n", k, med, m } }' | sort -k2,2n
