#!/usr/bin/env bash
# `seqlab serve` under load, for the shipped softmax teacher (models/teacher-en: Llama layout,
# d_model 256, 4 layers, 4 heads, BPE vocabulary 8192, max_context 1024) and its T2R conversions
# (feature width F = d_head = 64, the default, and F = 8; not finetuned: their text is not the
# point here, their speed and memory are), each served in turn and driven by bench/serve/load.py:
#   gen       tokens/s, time to first token and inter-token latency at CONC concurrent streams
#             (default 1,8,32,128), SECS seconds each, 64 tokens per request, temperature 1;
#   sessions  resident memory with SESSIONS cached conversations (default 10,1000,10000) of
#             SESSION_LEN tokens each (default 64: token-id prompts of 56, then 8 generated),
#             on a fresh server, under a CACHE_BYTES budget (default 4 GiB).
# First, unless DECODE=0, the batched step alone (no server): `seqlab bench decode --batch
# 1,8,32,128` at 1 and 2 decoder threads, context 128, 32 generated tokens (decode_t1.json,
# decode_t2.json). DECODER_THREADS (default 1) is `seqlab serve --decoder-threads`. With PAUSE_GRID=1 the
# background experiment (processes matching seqlab-grid) is paused with SIGSTOP during each timed
# part only (one model's gen runs, about a minute) and resumed with SIGCONT, also on exit.
# Usage: bench/serve/run.sh [OUT_DIR]   (results.jsonl there; docs/serve.md has a run's numbers)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
seqlab="$root/build/seqlab"
out="${1:-/tmp/seqlab_bench_serve}"
mkdir -p "$out"
conc="${CONC-1,8,32,128}"  # CONC= (empty) skips the gen runs
secs="${SECS:-10}"
sessions="${SESSIONS-10,1000,10000}"  # SESSIONS= (empty) skips the sessions runs
session_len="${SESSION_LEN:-64}"
cache_bytes="${CACHE_BYTES:-$((4 << 30))}"
threads="${DECODER_THREADS:-1}"
models="${MODELS:-teacher t2r t2r-f8}"
teacher="$root/models/teacher-en"

resume_grid() { if [ "${PAUSE_GRID:-0}" = 1 ]; then pkill -CONT -f seqlab-grid || true; fi; }
pause_grid() { if [ "${PAUSE_GRID:-0}" = 1 ]; then pkill -STOP -f seqlab-grid || true; fi; }
trap resume_grid EXIT

# The server's model id is its directory's name: the teacher is linked in as "teacher".
ln -sfn "$teacher" "$out/teacher"
[ -f "$out/t2r/config.json" ] || "$seqlab" convert --model "$teacher" --to t2r --out "$out/t2r" -q
[ -f "$out/t2r-f8/config.json" ] ||
  "$seqlab" convert --model "$teacher" --to t2r --d-feature 8 --out "$out/t2r-f8" -q
: >"$out/results.jsonl"

if [ "${DECODE:-1}" = 1 ]; then
  for t in 1 2; do
    pause_grid
    "$seqlab" bench decode --model "$out/teacher,$out/t2r,$out/t2r-f8" --contexts 128 --gen 32 \
      --batch 1,8,32,128 --engines fast --reps 2 --decoder-threads "$t" -q --format json \
      >"$out/decode_t$t.json"
    resume_grid
  done
fi

# Starts `seqlab serve` on the model, runs load.py with the given arguments, stops the server.
drive() {
  local m="$1"
  shift
  local log="$out/serve_$m.log"
  "$seqlab" serve --model "$out/$m" --port 0 --max-batch 128 --max-queue 256 \
    --cache-bytes "$cache_bytes" --decoder-threads "$threads" 2>"$log" &
  local pid=$!
  for _ in $(seq 300); do grep -q "http://" "$log" && break; sleep 0.1; done
  local port
  port=$(grep -o '127.0.0.1:[0-9]*' "$log" | head -1 | cut -d: -f2)
  /usr/bin/python3 "$root/bench/serve/load.py" --port "$port" --pid "$pid" --model "$m" "$@" |
    tee -a "$out/results.jsonl"
  kill -TERM "$pid"
  wait "$pid"
}
for m in $models; do
  if [ -n "$conc" ]; then
    pause_grid
    drive "$m" --concurrency "$conc" --seconds "$secs" --sessions ""
    resume_grid
  fi
  if [ -n "$sessions" ]; then  # a fresh server: an empty cache
    drive "$m" --concurrency "" --sessions "$sessions" --session-len "$session_len"
  fi
done
