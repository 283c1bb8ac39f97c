#!/usr/bin/env bash
# The README's demo: sets itself up, then trains three small models on parity (lengths 1-40)
# and evaluates them on longer strings, the classic contrast between recurrent models and
# attention. About a minute on 2 cores once built. Writes everything under ${OUT:-runs/demo}.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >&2
bash scripts/build.sh seqlab_cli >&2
OUT=${OUT:-runs/demo}
SEQLAB=./build/seqlab
rm -rf "$OUT"
mkdir -p "$OUT"
common=(--task parity --min-len 1 --max-len 40 --d-model 32 --n-head 4 --n-layer 1 --batch 32
        --steps 1000 --lr 0.01 --seed 0)
for arch in lstm softmax t2r; do
  echo "== training $arch on parity (lengths 1-40)" >&2
  $SEQLAB train "${common[@]}" --arch "$arch" --out "$OUT/$arch" >/dev/null
  $SEQLAB eval --model "$OUT/$arch" --lengths 40,80,160 --json > "$OUT/$arch/eval.json"
done
echo
echo "per-token accuracy on parity; trained on lengths 1-40 (chance = 0.5)"
for arch in lstm softmax t2r; do
  $SEQLAB eval --model "$OUT/$arch" --lengths 40,80,160 -q
  echo
done
echo "models (config.json, model.safetensors, metrics.jsonl) and eval.json are in $OUT" >&2
