#!/usr/bin/env bash
# Pretrains seqlab's in-house teacher (issue 33): a Llama-layout softmax LM (RoPE, RMSNorm,
# SwiGLU, no biases; d_model 256, 4 layers, 4 heads, d_mlp 688: 3.2 M non-embedding parameters,
# 5.26 M with the tied 8192 x 256 embedding) on the English corpus of Debian packages
# (scripts/make_english_corpus.py + WordNet glosses; 15.0 M BPE tokens in the train split), with
# a byte-level BPE of 8192 tokens learned on that train split. 2400 steps of 16 x 256 tokens
# = 9.8 M tokens seen; checkpoints every 100 steps, so rerunning the script resumes.
# Usage: bench/teacher/pretrain.sh [OUT]   (default runs/teacher; a few hours on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-runs/teacher}
bash scripts/setup.sh >&2
bash scripts/build.sh seqlab_cli >&2
mkdir -p "$OUT"
[ -f "$OUT/tok/merges.txt" ] ||
  ./build/seqlab tokenizer train --corpus wordnet,data/english --vocab-size 8192 --out "$OUT/tok"
if [ -f "$OUT/model/config.json" ]; then
  exec ./build/seqlab train --out "$OUT/model" --resume
fi
exec ./build/seqlab train --task lm --corpus wordnet,data/english --tokenizer "$OUT/tok" \
  --min-len 256 --max-len 256 --arch softmax --rope 1 --norm rms --mlp swiglu --d-mlp 688 \
  --qkv-bias 0 --o-bias 0 --mlp-bias 0 --d-model 256 --n-head 4 --n-layer 4 --max-context 1024 \
  --steps 2400 --batch 16 --lr 1.5e-3 --warmup 100 --min-lr-ratio 0.1 --weight-decay 0.1 \
  --eval-every 250 --eval-tokens 131072 --checkpoint-every 100 --threads 2 --seed 0 \
  --out "$OUT/model"
