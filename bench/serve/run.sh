#!/usr/bin/env bash
# `seqlab serve` under load: a softmax teacher (4 layers, d_model 256, byte vocabulary, trained a
# few steps on WordNet glosses) and its T2R conversion, each served in turn and driven by
# bench/serve/load.py: tokens/s, time to first token and inter-token latency at 1, 4 and 16
# concurrent streams, then resident memory with 10 and 1000 cached sessions, under a 1 GiB cache budget.
# Usage: bench/serve/run.sh [OUT_DIR]   (results.jsonl there; docs/serve.md has a run's numbers)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
seqlab="$root/build/seqlab"
out="${1:-/tmp/seqlab_bench_serve}"
mkdir -p "$out"
conc="${CONC:-1,4,16}"
secs="${SECS:-10}"
sessions="${SESSIONS:-10,1000}"
if [ ! -f "$out/teacher/config.json" ]; then
  "$seqlab" train --task lm --arch softmax --n-layer 4 --d-model 256 --n-head 4 --max-context 512 \
    --max-len 64 --steps 20 --batch 8 --lr 3e-3 --seed 1 --threads 2 --eval-every 20 --eval-tokens 2048 --eval-size 8 -q \
    --out "$out/teacher"
  "$seqlab" convert --model "$out/teacher" --to t2r --out "$out/t2r" -q
fi
: >"$out/results.jsonl"
# Starts `seqlab serve` on the model, runs load.py with the given arguments, stops the server.
drive() {
  local m="$1"
  shift
  local log="$out/serve_$m.log"
  "$seqlab" serve --model "$out/$m" --port 0 --max-batch 16 --max-queue 64 \
    --cache-bytes $((1 << 30)) --threads 1 2>"$log" &
  local pid=$!
  for _ in $(seq 100); do grep -q "http://" "$log" && break; sleep 0.1; done
  local port
  port=$(grep -o '127.0.0.1:[0-9]*' "$log" | head -1 | cut -d: -f2)
  /usr/bin/python3 "$root/bench/serve/load.py" --port "$port" --pid "$pid" --model "$m" "$@" |
    tee -a "$out/results.jsonl"
  kill -TERM "$pid"
  wait "$pid"
}
for m in teacher t2r; do
  drive "$m" --concurrency "$conc" --seconds "$secs" --sessions ""
  drive "$m" --concurrency "" --sessions "$sessions"  # a fresh server: an empty cache
done
