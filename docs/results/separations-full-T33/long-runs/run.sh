#!/bin/bash
# String equality T = 33, 2-layer softmax: a grid cell's settings but 16000 steps instead of
# 4000, to see whether more training lifts it off the ln 2 plateau. What ran:
#   bash run.sh 32 4 "0 1"    (softmax2_d32_s0_16k, softmax2_d32_s1_16k; the two seeds in parallel)
# Kept here: runs.jsonl, a line per run with its config.json and its eval's JSON (the shell's
# $d.eval.json); loss_curves.tsv, each run's training curve from its metrics.jsonl.
set -e
B=${SEQLAB:-build/seqlab}  # the runs used /tmp/seqlab-grid7, a copy of build/seqlab at 88bb88e
D_MODEL=$1 N_HEAD=$2 SEEDS=$3
for s in $SEEDS; do
  (
  d=softmax2_d${D_MODEL}_s${s}_16k
  [ -f $d/model.safetensors ] && [ -f $d.eval.json ] && exit 0
  $B train -q --task string_equality --min-len 33 --max-len 33 --arch softmax --d-model $D_MODEL \
    --n-head $N_HEAD --n-layer 2 --pooling last --max-context 33 --steps 16000 --batch 32 --lr 3e-3 \
    --warmup 100 --seed $s --threads 1 --eval-every 2000 --eval-size 64 --log-every 50 --out $d
  $B eval --model $d --n 512 -q --threads 1 --json > $d.eval.json
  ) &
done
wait
