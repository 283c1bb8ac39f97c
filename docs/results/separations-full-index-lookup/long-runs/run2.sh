#!/bin/bash
# Index lookup N = 128 (T = 130), 1-layer softmax d64: the grid's cell settings but 16000 steps
# instead of 4000, to see whether the chance-level cells are a plateau or a limit.
set -e
B=${SEQLAB:-build/seqlab}  # the runs used a copy of build/seqlab at 705d0c8
for s in 0; do
  d=softmax1_d64_s${s}_16k
  [ -f $d/model.safetensors ] && [ -f $d.eval.json ] && continue
  $B train -q --task index_lookup --min-len 130 --max-len 130 --arch softmax --d-model 64 --n-head 4 \
    --n-layer 1 --max-context 130 --steps 16000 --batch 32 --lr 3e-3 --warmup 100 --seed $s \
    --threads 1 --eval-every 2000 --eval-size 64 --log-every 50 --out $d
  $B eval --model $d --n 512 -q --threads 1 --json > $d.eval.json
done
