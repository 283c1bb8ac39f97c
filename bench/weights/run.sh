#!/usr/bin/env bash
# Perplexity and speed per weight format (issue 35 §5), on the shipped teacher and its
# conversions: the table rwkv.cpp's README gives for its formats (format, size, perplexity, Δ vs
# fp32, speed), for seqlab's fast decoder.
#
#   bench/weights/run.sh OUT        # OUT/ppl.jsonl, OUT/speed.jsonl, OUT/results.jsonl, OUT/report.md
#
# 1. Perplexity: per model, `seqlab eval --engine torch` once (the reference) and
#    `seqlab eval --engine fast --weights F` per format, on the conversion suite's settings
#    (test split, windows of 256, the first 131072 tokens: docs/results/conversion-full).
#    Rows appended to OUT/ppl.jsonl; a (model, engine, format) already there is skipped, so a rerun
#    resumes. Not timed: the background experiment keeps running.
# 2. Speed: REPS repetitions of `seqlab bench decode --engines fast --decoder-threads 1
#    --weights F` per model and format, interleaved, batch 1, context BENCH_CONTEXT then GEN
#    generated tokens; rows to OUT/speed.jsonl (replaced). With PAUSE_GRID=1 the background
#    seqlab-grid processes are paused (SIGSTOP) for this step only and resumed (SIGCONT) at its end,
#    on any exit, and by a watchdog after PAUSE_MAX seconds at most. It waits (up to 10 min) while
#    another `bench decode` is running, so two timings never overlap.
# 3. bench/weights/report.py: OUT/results.jsonl (one row per model x format) and OUT/report.md.
#
# Environment: SEQLAB (build/seqlab), MODELS (label=dir,...; default the teacher and seed 0 of the
#   suite's T2R, Hedgehog + attention transfer and hybrid W=64 conversions, read only),
#   FORMATS (f32,bf16,int8), SPLIT (test), CONTEXT (256), MAX_TOKENS (131072), BATCH (32 windows
#   per step_batch), BENCH_CONTEXT (256), GEN (128), REPS (3), PAUSE_GRID (0), PAUSE_MAX (540),
#   SKIP_PPL=1 / SKIP_SPEED=1 to run one step only.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: bench/weights/run.sh OUT" >&2; exit 2; }
OUT=$1
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PY=/usr/bin/python3
SEQLAB=${SEQLAB:-$ROOT/build/seqlab}
RUNS=$ROOT/runs/conversion-full/runs
MODELS=${MODELS:-teacher=$ROOT/models/teacher-en,t2r=$RUNS/t2r_s0/model,hedgehog_at=$RUNS/hedgehog_at_s0/model,hybrid=$RUNS/hybrid_s0/model}
FORMATS=${FORMATS:-f32,bf16,int8}
SPLIT=${SPLIT:-test}
CONTEXT=${CONTEXT:-256}
MAX_TOKENS=${MAX_TOKENS:-131072}
BATCH=${BATCH:-32}
BENCH_CONTEXT=${BENCH_CONTEXT:-256}
GEN=${GEN:-128}
REPS=${REPS:-3}
PAUSE_MAX=${PAUSE_MAX:-540}
[ -x "$SEQLAB" ] || { echo "run.sh: $SEQLAB not found (build seqlab first)" >&2; exit 2; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
# The binary is copied, so a rebuild during the run changes nothing; its provenance goes in rows.
BUILT="$(date -u -r "$SEQLAB" +%FT%TZ) $(git -C "$ROOT" describe --always --dirty)"
mkdir -p "$OUT/bin"
cp "$SEQLAB" "$OUT/bin/seqlab"
SEQLAB=$OUT/bin/seqlab
IFS=, read -r -a models <<<"$MODELS"
IFS=, read -r -a formats <<<"$FORMATS"
for m in "${models[@]}"; do
  [ -e "${m#*=}/config.json" ] || { echo "run.sh: ${m#*=}/config.json missing ($m)" >&2; exit 2; }
done
echo "run.sh: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(nproc) cores," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg); seqlab $BUILT" >&2

# One JSON row: the command's last JSON line plus the given fields, appended to a file.
append_row() {  # FILE JSON_LINE key=value...
  local file=$1 line=$2
  shift 2
  "$PY" - "$line" "$@" >>"$file" <<'PY'
import json, sys
row = json.loads(sys.argv[1])
for kv in sys.argv[2:]:
    k, v = kv.split("=", 1)
    try:
        row[k] = json.loads(v)
    except ValueError:
        row[k] = v
print(json.dumps(row, sort_keys=True))
PY
}

status=0
PPL=$OUT/ppl.jsonl
touch "$PPL"
if [ "${SKIP_PPL:-0}" != 1 ]; then
  for m in "${models[@]}"; do
    label=${m%%=*} dir=${m#*=}
    for run in torch:f32 "${formats[@]/#/fast:}"; do
      engine=${run%%:*} w=${run#*:}
      if grep -q "\"engine\": \"$engine\".*\"label\": \"$label\".*\"weights\": \"$w\"" "$PPL"; then
        continue
      fi
      t0=$(date +%s.%N)
      flags="--engine $engine"
      [ "$engine" = fast ] && flags="$flags --weights $w"
      if line=$("$SEQLAB" eval --model "$dir" --split "$SPLIT" --context "$CONTEXT" \
                  --max-tokens "$MAX_TOKENS" --batch "$BATCH" --threads 1 --json -q $flags \
                  2>"$OUT/eval.err" | tail -1); then
        append_row "$PPL" "$line" label="$label" dir="$dir" engine="$engine" weights="$w" \
          context="$CONTEXT" max_tokens="$MAX_TOKENS" \
          wall_s="$(echo "$(date +%s.%N) - $t0" | bc)" seqlab_built="$BUILT"
        echo "run.sh: ppl $label $engine $w: $(echo "$line" | sed 's/.*"ppl":\([0-9.]*\).*/\1/')" >&2
      else
        echo "run.sh: ppl $label $engine $w failed: $(tail -1 "$OUT/eval.err")" >&2
        status=1
      fi
    done
  done
fi

SPEED=$OUT/speed.jsonl
paused=0 watchdog=
resume() {
  if [ "$paused" = 1 ]; then pkill -CONT -f seqlab-grid || true; paused=0; fi
  if [ -n "$watchdog" ]; then kill "$watchdog" 2>/dev/null || true; watchdog=; fi
}
trap resume EXIT INT TERM
if [ "${SKIP_SPEED:-0}" != 1 ]; then
  for i in $(seq 1 60); do  # another timing in progress: wait for it (10 min at most)
    pgrep -f "bench decode" >/dev/null || break
    [ "$i" = 1 ] && echo "run.sh: waiting for another bench decode to finish" >&2
    sleep 10
  done
  if pgrep -f "bench decode" >/dev/null; then
    echo "run.sh: another bench decode is still running; not timing" >&2
    exit 1
  fi
  : >"$SPEED"
  if [ "${PAUSE_GRID:-0}" = 1 ] && pgrep -f seqlab-grid >/dev/null; then
    pkill -STOP -f seqlab-grid && paused=1
    (sleep "$PAUSE_MAX"; pkill -CONT -f seqlab-grid) &
    watchdog=$!
    sleep 2
  fi
  load=$(cut -d' ' -f1 /proc/loadavg)
  for rep in $(seq 1 "$REPS"); do
    for m in "${models[@]}"; do
      label=${m%%=*} dir=${m#*=}
      for w in "${formats[@]}"; do
        if rows=$("$SEQLAB" bench decode --model "$dir" --contexts "$BENCH_CONTEXT" --gen "$GEN" \
                    --reps 1 --engines fast --decoder-threads 1 --weights "$w" -o json -q \
                    2>"$OUT/bench.err"); then
          line=$("$PY" -c 'import json,sys; print(json.dumps([r for r in json.load(sys.stdin) if r.get("test") == "tg"][0]))' <<<"$rows")
          append_row "$SPEED" "$line" label="$label" dir="$dir" weights="$w" rep="$rep" \
            paused_grid="$paused" load_avg_before="$load" seqlab_built="$BUILT"
        else
          echo "run.sh: bench decode $label $w failed: $(tail -1 "$OUT/bench.err")" >&2
          status=1
        fi
      done
    done
  done
  resume
fi

"$PY" "$HERE/report.py" --ppl "$PPL" --speed "$SPEED" --results "$OUT/results.jsonl" \
  --machine "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(nproc) cores" \
  | tee "$OUT/report.md"
exit $status
