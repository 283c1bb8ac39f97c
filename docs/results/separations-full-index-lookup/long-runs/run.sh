#!/bin/bash
# Index lookup N = 128 (T = 130), 1-layer softmax: a grid cell's settings but 16000 steps instead
# of 4000, to see whether the chance-level cells are a plateau or a limit. What ran:
#   bash run.sh 8 2 "0 1"    (softmax1_d8_s0_16k, softmax1_d8_s1_16k)
#   bash run.sh 64 4 0       (softmax1_d64_s0_16k)
# Kept here: runs.jsonl, a line per run with its config.json and its eval's JSON (the shell's
# $d.eval.json); loss_curves.tsv, each run's training curve from its metrics.jsonl.
set -e
B=${SEQLAB:-build/seqlab}  # the runs used a copy of build/seqlab at 705d0c8
D_MODEL=$1 N_HEAD=$2 SEEDS=$3
for s in $SEEDS; do
  d=softmax1_d${D_MODEL}_s${s}_16k
  [ -f $d/model.safetensors ] && [ -f $d.eval.json ] && continue
  $B train -q --task index_lookup --min-len 130 --max-len 130 --arch softmax --d-model $D_MODEL \
    --n-head $N_HEAD --n-layer 1 --max-context 130 --steps 16000 --batch 32 --lr 3e-3 \
    --warmup 100 --seed $s --threads 1 --eval-every 2000 --eval-size 64 --log-every 50 --out $d
  $B eval --model $d --n 512 -q --threads 1 --json > $d.eval.json
done
