#!/usr/bin/env bash
# The CPU time of one training run with seqlab's malloc settings (core/malloc_tune.h, the default)
# against glibc's defaults (SEQLAB_MALLOC_TUNE=0), alternating, same binary, same run: an MQAR
# cell of the grid (P = 32, T = 128, softmax attention, width 32, batch 32) cut to STEPS steps,
# or with SHAPE=lm a language model of the shipped teacher's shape (models/teacher-en's BPE, 8192
# types, width 256, 4 layers, T2R, batch 16 x 256 tokens: conversion_full's scratch cells), whose
# logits are blocks of 128 MiB.
# Prints each rep's user+sys CPU seconds, the minor page faults, and the ratio of the medians
# (CPU time rather than wall time, since the machine is shared). The trained weights are compared
# too: the settings must not change them.
#
#   bench/malloc_tune.sh [BIN] [STEPS]      (defaults: build/seqlab, 300)
# Environment: REPS (3), ARCH (softmax), D (32), PAIRS (32); SHAPE (mqar, or lm: ARCH, D and
# PAIRS then do not apply).
set -euo pipefail
bin="${1:-build/seqlab}" steps="${2:-300}" reps="${REPS:-3}"
arch="${ARCH:-softmax}" d="${D:-32}" pairs="${PAIRS:-32}"
[ -x /usr/bin/time ] || { echo "error: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
[ -x "$bin" ] || { echo "error: $bin is not an executable (build it: bash scripts/build.sh seqlab)" >&2; exit 2; }
len=$(( pairs * 4 > 64 ? pairs * 4 : 64 ))
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run() {  # mode rep -> "cpu_seconds faults"
  local mode="$1" out="$work/$1.$2"
  local env=(env)
  [ "$mode" = default ] && env+=(SEQLAB_MALLOC_TUNE=0)
  local shape=(--task mqar --vocab 256 --n-pairs "$pairs" --max-len "$len" --arch "$arch"
    --n-head 1 --d-model "$d" --n-layer 2 --batch 32 --eval-size 64)
  [ "${SHAPE:-mqar}" = lm ] && shape=(--task lm --corpus wordnet,data/english
    --tokenizer models/teacher-en --min-len 256 --max-len 256 --arch t2r --n-head 4
    --d-model 256 --n-layer 4 --mlp swiglu --d-mlp 688 --mlp-bias 0 --norm rms --rope 1
    --batch 16 --eval-size 8 --eval-tokens 4096)
  "${env[@]}" /usr/bin/time -f "%U %S %R" -o "$work/time" "$bin" train "${shape[@]}" \
    --lr 1e-3 --steps "$steps" --eval-every "$steps" --threads 1 -q --out "$out" > /dev/null
  awk '{ printf "%.2f %d\n", $1 + $2, $3 }' "$work/time"
}
source "$(dirname "$0")/ab_lib.sh"
ab_after_rep() {
  cmp -s "$work/default.$1/model.safetensors" "$work/tuned.$1/model.safetensors" ||
    { echo "error: rep $1: the tuned run's weights differ from the default's" >&2; exit 1; }
}
printf '%-8s %4s %10s %12s\n' mode rep "cpu s" "page faults"
ab_reps default tuned "$reps" '%-8s %4d %10.2f %12d\n'
md=$(ab_median default) mt=$(ab_median tuned)
echo "weights: identical in every rep"
what="$arch, width $d, P = $pairs"
[ "${SHAPE:-mqar}" = lm ] && what="lm, teacher-en shape"
awk -v d="$md" -v t="$mt" -v a="$what" -v s="$steps" 'BEGIN {
  printf "median cpu s: default %.2f, tuned %.2f; tuned / default = %.3f (%s, %s steps)\n", d, t, t / d, a, s }'
