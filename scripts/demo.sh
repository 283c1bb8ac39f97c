#!/usr/bin/env bash
# The README's demo: the main job of seqlab, end to end, on embedded defaults. Sets itself up,
# then runs `seqlab suite conversion --quick`: pretrains a small softmax Transformer LM on WordNet
# glosses (byte level), converts it into RNNs (T2R; Hedgehog with and without attention
# transfer; ELU+1; RFA), finetunes each, trains the same RNNs from scratch for comparison, adds
# LoRA / Tied-LoRA finetuning, and measures generation speed and state memory up to a 4k
# context. Prints the perplexity and generation tables; writes report.md with plots.
# A few minutes on 2 cores once built. Output under ${OUT:-runs/demo}; rerunning resumes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >&2
bash scripts/build.sh seqlab_cli >&2
OUT=${OUT:-runs/demo}
./build/seqlab suite conversion --quick --out "$OUT" >&2
report="$OUT/report.md"
# The tables: perplexity, targets, attention transfer, generation speed and memory.
sed -n '/^## Validation perplexity/,/^## Plots/p' "$report" | sed '$d'
echo "report with plots: $report"
