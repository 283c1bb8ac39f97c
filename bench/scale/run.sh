#!/usr/bin/env bash
# Real-scale measurement of the conversion pipeline (issue 32): for GPT-2 small (124M) and a
# SmolLM-135M-shaped Llama, random weights in the exact Hugging Face hub layout
# (bench/scale/make_hub_models.py), it runs
#   import-hf -> convert --to hedgehog --distill-steps STEPS (attention transfer)
#   -> finetune --steps STEPS (the converted model, on the WordNet-gloss lm corpus the import
#   names) -> generate, greedy, NEW tokens, --engine fast and --engine torch, on the imported
#   softmax model and on the converted one,
# each under /usr/bin/time -v (wall time, peak RSS) with the load average beside it, appends one
# JSON row per command to docs/results/scale/results.jsonl and rewrites report.md from all rows
# (bench/scale/report.py: the table and the projections to the papers' token budgets).
#
# Usage: bench/scale/run.sh [gpt2|smollm ...]        (default: both, one after the other)
# Environment: SEQLAB (build/seqlab), WORK (runs/scale: the models, ~3 GB), STEPS (20),
#   BATCH (4), LEN (256), NEW (32), DP=1 also times the transfer with --nproc 2.
# Run it on an otherwise idle machine where possible: every number depends on the cores it gets.
set -euo pipefail
cd "$(dirname "$0")/../.."
SEQLAB=${SEQLAB:-build/seqlab}
WORK=${WORK:-runs/scale}
STEPS=${STEPS:-20}
BATCH=${BATCH:-4}
LEN=${LEN:-256}
NEW=${NEW:-32}
OUT=docs/results/scale
PY=/usr/bin/python3
[ -x "$SEQLAB" ] || { echo "run.sh: $SEQLAB not found (build it first)" >&2; exit 2; }
mkdir -p "$WORK" "$OUT"
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(gpt2 smollm)
commit=$(git rev-parse --short HEAD)
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
cores=$(nproc)

# measure MODEL STAGE ENGINE CMD...: runs CMD under /usr/bin/time -v, appends a row with its wall
# time, peak RSS, load averages and (when it printed one) its JSON summary.
measure() {
  local model=$1 stage=$2 what=$3
  shift 3
  local log="$WORK/$model.$stage.$what"
  local load_before load_after
  load_before=$(cut -d' ' -f1-3 /proc/loadavg)
  echo "== $model $stage $what: $*" >&2
  /usr/bin/time -v -o "$log.time" "$@" >"$log.out" 2>"$log.err" ||
    { echo "FAILED: $* (see $log.err)" >&2; tail -3 "$log.err" >&2; return 1; }
  load_after=$(cut -d' ' -f1-3 /proc/loadavg)
  "$PY" - "$model" "$stage" "$what" "$log" "$load_before" "$load_after" "$commit" "$cpu" \
    "$cores" "$STEPS" "$BATCH" "$LEN" "$*" >>"$OUT/results.jsonl" <<'EOF'
import datetime, json, re, sys
model, stage, what, log, lb, la, commit, cpu, cores, steps, batch, length, cmd = sys.argv[1:]
t = open(log + ".time").read()
def field(name):
    return re.search(re.escape(name) + r": (.*)", t).group(1).strip()
wall = field("Elapsed (wall clock) time (h:mm:ss or m:ss)").split(":")
secs = sum(float(x) * 60 ** i for i, x in enumerate(reversed(wall)))
summary = None
for line in reversed(open(log + ".out").read().splitlines()):
    if line.startswith("{"):
        summary = json.loads(line)
        break
row = {"model": model, "stage": stage, "what": what, "wall_s": round(secs, 2),
       "user_s": float(field("User time (seconds)")), "sys_s": float(field("System time (seconds)")),
       "peak_rss_mb": round(int(field("Maximum resident set size (kbytes)")) / 1024, 1),
       "load_before": lb, "load_after": la, "steps": int(steps), "batch": int(batch),
       "length": int(length), "cpu": cpu, "cores": int(cores), "commit": commit,
       "date": datetime.date.today().isoformat(), "command": cmd}
if summary is not None:
    for k in ("convert", "generated_tokens", "generation_s", "prefill_tokens", "prefill_s",
              "engine", "loop_seconds", "eval_seconds", "seconds", "steps", "start_step",
              "first_loss", "last_loss", "eval_ppl", "parameters", "trainable"):
        if k in summary:
            row.setdefault("summary", {})[k] = summary[k]
print(json.dumps(row, sort_keys=True))
EOF
}

for m in "${models[@]}"; do
  case $m in
    gpt2) hub=gpt2-small ;;
    smollm) hub=smollm-135m ;;
    *) echo "run.sh: unknown model '$m' (gpt2|smollm)" >&2; exit 2 ;;
  esac
  [ -f "$WORK/$hub/config.json" ] || "$PY" bench/scale/make_hub_models.py "$WORK" --only "$m"
  imported="$WORK/$hub-seqlab" converted="$WORK/$hub-hedgehog" tuned="$WORK/$hub-finetuned"
  rm -rf "$imported" "$converted" "$tuned" "$converted-dp"
  measure "$hub" import - "$SEQLAB" import-hf --hf "$WORK/$hub" --out "$imported"
  measure "$hub" transfer - "$SEQLAB" convert --model "$imported" --out "$converted" \
    --to hedgehog --distill-steps "$STEPS" --distill-batch "$BATCH" --distill-len "$LEN" --json
  if [ "${DP:-0}" = 1 ]; then
    measure "$hub" transfer nproc2 "$SEQLAB" convert --model "$imported" --out "$converted-dp" \
      --to hedgehog --distill-steps "$STEPS" --distill-batch "$BATCH" --distill-len "$LEN" \
      --nproc 2 --json
  fi
  measure "$hub" finetune - "$SEQLAB" finetune --model "$converted" --out "$tuned" \
    --steps "$STEPS" --batch "$BATCH" --min-len "$LEN" --max-len "$LEN" --json
  for dir in "$imported" "$tuned"; do
    kind=softmax
    [ "$dir" = "$tuned" ] && kind=hedgehog
    for engine in fast torch; do
      measure "$hub" "generate-$kind" "$engine" "$SEQLAB" generate --model "$dir" \
        --engine "$engine" --prompt "A word is a unit of language that" -n "$NEW" \
        --temperature 0 --json
    done
  done
done
"$PY" bench/scale/report.py "$OUT/results.jsonl" >"$OUT/report.md"
echo "wrote $OUT/results.jsonl and $OUT/report.md" >&2
