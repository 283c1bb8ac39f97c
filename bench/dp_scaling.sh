#!/usr/bin/env bash
# Data-parallel scaling of `seqlab train` on this machine: the same run (same global batch, same
# steps) as 1 process using every core, 1 process with 1 thread, and N local workers
# (--nproc N, cores/N threads each), side by side; prints a markdown table with training tokens/s
# and the ratio to the 1-process run.
#
#   bench/dp_scaling.sh [SEQLAB_BIN] [NPROC] [STEPS]
# Environment: ARCH (softmax), D (128), LAYERS (4), BATCH (32), LEN (128), REPS (3).
set -euo pipefail
bin="${1:-build/seqlab}"
nproc_="${2:-2}"
steps="${3:-40}"
arch="${ARCH:-softmax}" d="${D:-128}" layers="${LAYERS:-4}" batch="${BATCH:-32}" len="${LEN:-128}"
reps="${REPS:-3}"
cores=$(nproc)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run() {  # label, extra flags -> seconds of the training loop (from --json)
  local out="$work/run$RANDOM"
  "$bin" train --task parity --arch "$arch" --d-model "$d" --n-layer "$layers" --batch "$batch" \
    --min-len "$len" --max-len "$len" --steps "$steps" --eval-every "$steps" --eval-size 8 \
    --log-every "$steps" -q --json --out "$out" "$@" |
    sed -n 's/.*"seconds":\([0-9.e+-]*\).*/\1/p'
  rm -rf "$out"
}
declare -A best
configs=("1 process, $cores threads|--threads $cores" "1 process, 1 thread|--threads 1"
         "$nproc_ processes, $((cores / nproc_ > 0 ? cores / nproc_ : 1)) thread(s) each|--nproc $nproc_")
for ((r = 0; r < reps; ++r)); do  # interleaved, so load drifts hit every configuration alike
  for c in "${configs[@]}"; do
    s=$(run ${c#*|})
    key=${c%%|*}
    if [ -z "${best[$key]:-}" ] || awk "BEGIN{exit !($s < ${best[$key]})}"; then best[$key]=$s; fi
  done
done
tokens=$((steps * batch * len))
base=${best["${configs[0]%%|*}"]}
echo "| $arch d$d x$layers, batch $batch x $len, $steps steps ($(date -u +%F), $cores cores, load $(cut -d' ' -f1 /proc/loadavg)) | seconds (best of $reps) | tokens/s | vs 1 process |"
echo "|---|---|---|---|"
for c in "${configs[@]}"; do
  key=${c%%|*}
  s=${best[$key]}
  awk -v k="$key" -v s="$s" -v t="$tokens" -v b="$base" \
    'BEGIN{printf "| %s | %.2f | %.0f | %.2fx |\n", k, s, t / s, b / s}'
done
