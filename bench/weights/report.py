#!/usr/bin/env python3
"""The table of bench/weights/run.sh: per model and weight format, the fast decoder's perplexity
(and its change against the same model's f32), the weights' size, generation speed on one thread
and peak memory; one JSON row per model x format (--results) and markdown on stdout.

    /usr/bin/python3 bench/weights/report.py --ppl OUT/ppl.jsonl [--speed OUT/speed.jsonl]
        [--results OUT/results.jsonl] [--machine TEXT]

The target (issue 35): int8 perplexity within 0.5% of f32, per model.
"""
import argparse
import json
import math
import os
import statistics
import struct
import sys

TARGET = 0.005  # int8 perplexity within 0.5% of f32
ORDER = {"f32": 0, "bf16": 1, "int8": 2}
Q8_BLOCK = 32


def read_rows(path):
    if not path or not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def matrix_bytes(fmt, out, inp):
    """core/quant.h weight_bytes: int8 is one byte a weight plus an fp32 scale per block of 32
    inputs (a row never shares a block)."""
    if fmt == "f32":
        return 4 * out * inp
    if fmt == "bf16":
        return 2 * out * inp
    return out * inp + 4 * out * ((inp + Q8_BLOCK - 1) // Q8_BLOCK)


def computed_weight_bytes(model_dir, fmt):
    """Bytes of the model's tensors when every 2-D tensor is stored in `fmt` and the rest (norms,
    biases) in fp32: read from model.safetensors' header (adapters.* left out: merged)."""
    path = os.path.join(model_dir, "model.safetensors")
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    total = 0
    for name, t in header.items():
        if name == "__metadata__" or name.startswith("adapters."):
            continue
        shape = t["shape"]
        if len(shape) == 2:
            total += matrix_bytes(fmt, shape[0], shape[1])
        else:
            total += 4 * math.prod(shape)
    return total


def mean_sd(xs):
    return statistics.mean(xs), (statistics.stdev(xs) if len(xs) > 1 else 0.0)


def build(ppl_rows, speed_rows):
    labels = []
    for r in ppl_rows + speed_rows:
        if r["label"] not in labels:
            labels.append(r["label"])
    out = []
    for label in labels:
        ppl = {r["weights"]: r for r in ppl_rows if r["label"] == label and r["engine"] == "fast"}
        torch = next((r for r in ppl_rows if r["label"] == label and r["engine"] == "torch"), None)
        formats = sorted({r["weights"] for r in ppl_rows + speed_rows if r["label"] == label
                          and r.get("engine", "fast") == "fast"}, key=lambda w: ORDER.get(w, 9))
        for w in formats:
            g = {"model": label, "weights": w}
            p = ppl.get(w)
            d = (p or torch or next(r for r in speed_rows if r["label"] == label))["dir"]
            g["dir"] = d
            if p:
                g.update(ppl=p["ppl"], nll=p["nll"], tokens=p["tokens"], split=p["split"],
                         context=p["context"])
                if "f32" in ppl:
                    g["delta_vs_f32"] = p["ppl"] / ppl["f32"]["ppl"] - 1
            if torch:
                g["torch_f32_ppl"] = torch["ppl"]
            sp = [r for r in speed_rows if r["label"] == label and r["weights"] == w]
            if sp:
                g["tg_tokens_per_s"], g["tg_tokens_per_s_sd"] = mean_sd(
                    [r["tg_tokens_per_s"] for r in sp])
                g["ms_per_token"] = statistics.mean(r["ms_per_token"] for r in sp)
                g["peak_rss_mb"] = max(r["peak_rss_mb"] for r in sp)
                floors = [r["floor_ms"] for r in sp if r.get("floor_ms")]
                g["floor_ms"] = statistics.mean(floors) if floors else None
                g["reps"] = len(sp)
                g["bench_context"] = sp[0]["context"]
                g["gen"] = sp[0]["tokens"]
                g["paused_grid"] = all(r.get("paused_grid") == 1 for r in sp)
                g["load_avg_before"] = statistics.mean(r["load_avg_before"] for r in sp)
                g["seqlab_built"] = sp[0].get("seqlab_built")
                own = sp[0].get("weight_bytes") or (sp[0].get("weight_mb") or 0) * 1e6
                if own:
                    g["weight_bytes"], g["weight_bytes_source"] = int(own), "bench decode"
            if "weight_bytes" not in g:
                g["weight_bytes"] = computed_weight_bytes(d, w)
                g["weight_bytes_source"] = "2-D tensors in the format, the rest fp32"
            if w == "int8" and "delta_vs_f32" in g:
                g["target_int8_within_0.5pct"] = abs(g["delta_vs_f32"]) <= TARGET
            out.append(g)
    return out


def cell(g, key, fmt, default=""):
    return fmt % g[key] if g.get(key) is not None else default


def markdown(groups, machine):
    lines = []
    if machine:
        lines.append("Machine: %s. Perplexity: the fast decoder's logits in each format "
                     "(`seqlab eval --engine fast --weights F`), %s split, windows of %s tokens, "
                     "%s predicted tokens; torch f32 = `seqlab eval --engine torch` on the same "
                     "windows (the reference)."
                     % (machine, groups[0].get("split", "?"), groups[0].get("context", "?"),
                        groups[0].get("tokens", "?")))
        timed = [g for g in groups if "tg_tokens_per_s" in g]
        if timed:
            lines.append("Speed: `seqlab bench decode --engines fast --decoder-threads 1 --weights F"
                         "`, batch 1, %d generated tokens after a context of %d, %d repetitions "
                         "interleaved (mean ± sd); background experiment %s; load average %.1f "
                         "before." % (timed[0]["gen"],
                                      timed[0]["bench_context"], timed[0]["reps"],
                                      "paused" if all(g["paused_grid"] for g in timed)
                                      else "running", timed[0]["load_avg_before"]))
        lines.append("")
    lines.append("| model | format | weights MB | perplexity | Δ vs f32 | torch f32 ppl | "
                 "tg tokens/s | ms/token | × floor | peak RSS MB |")
    lines.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for g in groups:
        x_floor = (g["ms_per_token"] / g["floor_ms"]) if g.get("floor_ms") else None
        lines.append("| %s | %s | %.1f | %s | %s | %s | %s | %s | %s | %s |" % (
            g["model"], g["weights"], g["weight_bytes"] / 1e6, cell(g, "ppl", "%.3f"),
            "%+.3f%%" % (100 * g["delta_vs_f32"]) if "delta_vs_f32" in g else "",
            cell(g, "torch_f32_ppl", "%.3f"),
            "%.1f ± %.1f" % (g["tg_tokens_per_s"], g["tg_tokens_per_s_sd"])
            if "tg_tokens_per_s" in g else "",
            cell(g, "ms_per_token", "%.3f"), "%.2f" % x_floor if x_floor else "",
            cell(g, "peak_rss_mb", "%.0f")))
    lines.append("")
    lines.append("Target: int8 perplexity within 0.5% of f32 (issue 35), per model:")
    lines.append("")
    for g in groups:
        if g["weights"] != "int8":
            continue
        if "delta_vs_f32" not in g:
            lines.append("- %s: not measured (no int8 or f32 perplexity)" % g["model"])
            continue
        lines.append("- %s: %s (int8 %+.3f%% vs f32)" % (
            g["model"], "met" if g["target_int8_within_0.5pct"] else "**not met**",
            100 * g["delta_vs_f32"]))
    if not any(g["weights"] == "int8" for g in groups):
        lines.append("- no int8 rows: this build's fast decoder has no int8 weights")
    lines.append("")
    lines.append("weights MB: %s. × floor: ms per token over bench decode's roofline floor "
                 "(the bytes a token reads at this machine's measured bandwidth). Peak RSS: the "
                 "bench decode child's, LibTorch runtime and its f32 copy of the weights included."
                 % "; ".join(sorted({g["weight_bytes_source"] for g in groups})))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ppl", required=True)
    ap.add_argument("--speed")
    ap.add_argument("--results", help="write one JSON row per model x format here")
    ap.add_argument("--machine", default="")
    a = ap.parse_args()
    try:
        ppl_rows, speed_rows = read_rows(a.ppl), read_rows(a.speed)
    except (OSError, ValueError) as e:
        print("report.py: %s" % e, file=sys.stderr)
        return 2
    if not ppl_rows and not speed_rows:
        print("report.py: no rows in %s / %s" % (a.ppl, a.speed), file=sys.stderr)
        return 2
    groups = build(ppl_rows, speed_rows)
    if a.results:
        with open(a.results, "w") as f:
            for g in groups:
                f.write(json.dumps(g, sort_keys=True) + "\n")
    print(markdown(groups, a.machine))
    return 0


if __name__ == "__main__":
    sys.exit(main())
