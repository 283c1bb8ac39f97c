#!/usr/bin/env bash
# The README's demo: the main job of seqlab, end to end, on a real pretrained model. Sets itself
# up, then takes the shipped teacher (models/teacher-en: a Llama-layout softmax LM, 5.3 M
# parameters, pretrained by seqlab on 9.8 M tokens of Debian-packaged English) and
#   1. converts it into an RNN: the LoLCATs hybrid, exact softmax over the last 64 tokens plus
#      Hedgehog linear attention for older ones, its new parameters trained to match each
#      softmax attention's output (seqlab convert --to hybrid --transfer output);
#   2. finetunes the converted model briefly with LoRA (seqlab finetune --adapter lora --merge);
#   3. measures teacher and RNN on the same held-out text, by position out to 4x the teacher's
#      256-token training context (seqlab eval --by-position);
#   4. samples from both with the fast decoder: the teacher's KV cache grows with the context,
#      the RNN's state stays the same size.
# About 3-5 minutes on 2 cores once built. Output under ${OUT:-runs/demo}; rerunning resumes.
# The full comparison (every method, 3 seeds, control and scratch baselines) is
# `seqlab suite conversion_full` (docs/results/conversion-full/).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >&2
bash scripts/build.sh seqlab_cli >&2
OUT=${OUT:-runs/demo}
TEACHER=models/teacher-en
S=./build/seqlab
mkdir -p "$OUT"

echo "== 1. convert $TEACHER into the hybrid RNN (window 64 + Hedgehog), output transfer" >&2
if [ ! -f "$OUT/converted/config.json" ]; then
  $S convert --model "$TEACHER" --to hybrid --window 64 --feature-map hedgehog \
    --transfer output --distill-steps 40 --distill-batch 8 --out "$OUT/converted"
fi

# LoRA, merged at the end: the recipe that matched the control in suite conversion_full (full
# finetuning at this budget undoes part of the transfer; docs/RESULTS.md).
echo "== 2. finetune the converted model with LoRA (60 steps of 8 x 256 tokens)" >&2
if [ ! -f "$OUT/rnn/config.json" ]; then
  $S finetune --model "$OUT/converted" --out "$OUT/rnn" --steps 60 --batch 8 --max-len 256 \
    --min-len 256 --adapter lora --lora-rank 16 --lora-targets q,k,v,o,gate,up,down --lr 2e-3 \
    --warmup 6 --eval-every 30 --eval-tokens 16384 --checkpoint-every 20 --merge
else
  $S finetune --out "$OUT/rnn" --resume  # finishes an interrupted run; a finished one is kept
fi

echo "== 3. held-out perplexity by position (windows of 1024 = 4x the training context)" >&2
eval_args=(--max-tokens 65537 --context 1024 --by-position 256 --split test)
for m in "$TEACHER" "$OUT/converted" "$OUT/rnn"; do
  echo
  echo "### $m"
  $S eval --model "$m" "${eval_args[@]}" -q
done

echo
echo "== 4. samples (fast decoder; temperature 0.8, top-p 0.9, the same seed for both)"
for m in "$TEACHER" "$OUT/rnn"; do
  echo
  echo "### $m"
  $S generate --model "$m" --prompt "The meaning of a word is" -n 48 --temperature 0.8 \
    --top-p 0.9 --seed 1 -q
  echo
done
echo
echo "outputs: $OUT (converted/, rnn/: seqlab model directories; try seqlab serve --model $OUT/rnn)"
