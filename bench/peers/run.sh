#!/usr/bin/env bash
# Side-by-side decoding benchmark of issue 35: seqlab's fast decoder (softmax, T2R, Hedgehog)
# against rwkv.cpp (RWKV-4) and ggml's gpt-2 example, all of one shape, random weights, in one
# run with the repetitions interleaved, then the table (bench/peers/report.py).
#
#   bench/peers/build.sh RWKV_GIT GGML_GIT OUT      # once: builds the peers into OUT
#   bench/peers/run.sh OUT                          # models (once, cached in OUT/models), then runs
#
# 1. models (skipped when OUT/models/READY exists; bench/peers/make_models.py documents them):
#    make_models.py -> OUT/models/{gpt2-hf, gpt2-ggml-f32.bin, rwkv4.pth};
#    rwkv.cpp's python/convert_pytorch_to_ggml.py (FP32) and python/quantize.py (Q8_0);
#    ggml's gpt-2-quantize (q8_0); seqlab import-hf, then seqlab convert --to t2r|hedgehog.
# 2. REPS repetitions of bench/peers/measure.py: per context (CONTEXTS), per thread count
#    (THREADS), every engine and weight format, each in a process of its own; rows are appended
#    to OUT/results.jsonl (a new run moves an old file to results.jsonl.N first).
# 3. bench/peers/report.py OUT/results.jsonl > OUT/report.md, also printed.
#
# Environment: SEQLAB (build/seqlab; copied to OUT/bin/seqlab first, so a rebuild during the
#   run changes nothing), REPS (3), CONTEXTS (128,4096), THREADS (1,2), GEN (64),
#   D_MODEL (512), N_LAYER (6), VOCAB (8192), WEIGHTS (f32,bf16,int8: seqlab's formats, each
#   passed as bench decode --weights, so the 8-bit rows are seqlab int8 beside the peers' Q8_0
#   files; a build without --weights measures f32 only), PAUSE_GRID=1 pauses the background experiment's
#   seqlab-grid processes during each repetition (SIGSTOP, then SIGCONT at its end and on any
#   exit; each pause lasts one repetition, a few minutes).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: bench/peers/run.sh OUT   (OUT from bench/peers/build.sh)" >&2; exit 2; }
OUT=$1
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PY=/usr/bin/python3
SEQLAB=${SEQLAB:-$ROOT/build/seqlab}
REPS=${REPS:-3}
CONTEXTS=${CONTEXTS:-128,4096}
THREADS=${THREADS:-1,2}
GEN=${GEN:-64}
for f in bin/rwkv_bench bin/gpt2_bench build/ggml/bin/gpt-2-quantize \
         src/rwkv.cpp/python/convert_pytorch_to_ggml.py peers.json; do
  [ -e "$OUT/$f" ] || { echo "run.sh: $OUT/$f missing: run bench/peers/build.sh first" >&2; exit 2; }
done
[ -x "$SEQLAB" ] || { echo "run.sh: $SEQLAB not found (build seqlab first)" >&2; exit 2; }
OUT=$(cd "$OUT" && pwd)
M=$OUT/models
# Provenance for the rows: build/seqlab may come from a working tree with uncommitted changes.
export SEQLAB_BUILT="$(date -u -r "$SEQLAB" +%FT%TZ) $(git -C "$ROOT" describe --always --dirty)"
cp "$SEQLAB" "$OUT/bin/seqlab"
SEQLAB=$OUT/bin/seqlab

if [ ! -e "$M/READY" ]; then
  rm -rf "$M"
  mkdir -p "$M"
  "$PY" "$HERE/make_models.py" "$M" --d-model "${D_MODEL:-512}" --n-layer "${N_LAYER:-6}" \
    --vocab "${VOCAB:-8192}" --n-positions $(( ${CONTEXTS##*,} + GEN + 64 ))
  (cd "$OUT/src/rwkv.cpp/python" &&
     "$PY" convert_pytorch_to_ggml.py "$M/rwkv4.pth" "$M/rwkv4-f32.bin" FP32 >"$M/rwkv4.convert.log" 2>&1 &&
     "$PY" quantize.py "$M/rwkv4-f32.bin" "$M/rwkv4-q8_0.bin" Q8_0 >"$M/rwkv4.quantize.log" 2>&1)
  "$OUT/build/ggml/bin/gpt-2-quantize" "$M/gpt2-ggml-f32.bin" "$M/gpt2-ggml-q8_0.bin" q8_0 \
    >"$M/gpt2.quantize.log" 2>&1
  "$SEQLAB" import-hf --hf "$M/gpt2-hf" --out "$M/seqlab-softmax" -q
  for to in t2r hedgehog; do
    "$SEQLAB" convert --model "$M/seqlab-softmax" --to $to --out "$M/seqlab-$to" -q
  done
  touch "$M/READY"
fi

paused=0
resume() { if [ "$paused" = 1 ]; then pkill -CONT -f seqlab-grid || true; paused=0; fi; }
trap resume EXIT INT TERM
RESULTS=$OUT/results.jsonl
if [ -e "$RESULTS" ]; then
  n=1; while [ -e "$RESULTS.$n" ]; do n=$((n + 1)); done
  mv "$RESULTS" "$RESULTS.$n"
fi
commit=$(git -C "$ROOT" rev-parse --short HEAD)
echo "run.sh: seqlab $commit (+ working tree), peers $(tr -d ' \n' <"$OUT/peers.json" | head -c 300)" >&2
echo "run.sh: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(nproc) cores," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
status=0
for rep in $(seq 1 "$REPS"); do
  if [ "${PAUSE_GRID:-0}" = 1 ] && pgrep -f seqlab-grid >/dev/null; then
    pkill -STOP -f seqlab-grid && paused=1
    sleep 2
  fi
  "$PY" "$HERE/measure.py" --out "$OUT" --rep "$rep" --contexts "$CONTEXTS" --threads "$THREADS" \
    --gen "$GEN" --seqlab "$SEQLAB" --results "$RESULTS" --weights "${WEIGHTS:-f32,bf16,int8}" \
    || status=1
  resume
done
"$PY" "$HERE/report.py" "$RESULTS" --peers "$OUT/peers.json" --commit "$commit" | tee "$OUT/report.md"
exit $status
