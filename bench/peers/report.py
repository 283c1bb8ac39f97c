#!/usr/bin/env python3
"""The table of bench/peers/run.sh: mean ± sd over repetitions per engine x model x weights x
threads x context, with generation speed as a ratio to rwkv.cpp fp32 and to ggml gpt-2 fp32 at
the same threads and context (measured in the same run, interleaved).

    /usr/bin/python3 bench/peers/report.py OUT/results.jsonl [--peers OUT/peers.json]
                                           [--commit C] [--format md|json]
"""
import argparse
import json
import statistics
import sys

KEY = ("engine", "model", "weights", "threads", "context")
ORDER = {"rwkv.cpp": 0, "ggml-gpt2": 1, "seqlab": 2}


def mean_sd(xs):
    return statistics.mean(xs), (statistics.stdev(xs) if len(xs) > 1 else 0.0)


def aggregate(rows):
    groups = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in KEY), []).append(r)
    out = []
    for key, rs in groups.items():
        g = dict(zip(KEY, key))
        g["reps"] = len(rs)
        for f in ("tg_tokens_per_s", "pp_tokens_per_s", "ms_per_token"):
            g[f], g[f + "_sd"] = mean_sd([r[f] for r in rs])
        g["weight_bytes"] = rs[0]["weight_bytes"]
        g["peak_rss_mib"] = max(r["peak_rss_mib"] for r in rs)
        g["load_avg"] = statistics.mean(r["load_avg_before"] for r in rs)
        floors = [r["floor_ms"] for r in rs if r.get("floor_ms")]
        g["floor_ms"] = statistics.mean(floors) if floors else None
        out.append(g)
    base = {(g["engine"], g["threads"], g["context"]): g["tg_tokens_per_s"] for g in out
            if g["weights"] == "f32" and g["engine"] in ("rwkv.cpp", "ggml-gpt2")}
    for g in out:
        for engine, name in (("rwkv.cpp", "x_rwkv_f32"), ("ggml-gpt2", "x_ggml_f32")):
            b = base.get((engine, g["threads"], g["context"]))
            g[name] = g["tg_tokens_per_s"] / b if b else None
    out.sort(key=lambda g: (g["context"], g["threads"], ORDER.get(g["engine"], 9), g["model"],
                            g["weights"] != "f32", g["weights"]))
    return out


def fmt_ratio(x):
    return "%.2f×" % x if x else ""


# Each peer format and the seqlab format of the same width: 8-bit against 8-bit.
PEER_TO_SEQLAB = {"f32": "f32", "q8_0": "int8"}


def summary(groups):
    """seqlab's fastest model of each kind against each peer format, in the matching seqlab format
    (rwkv.cpp Q8_0 against seqlab int8), same threads and context."""
    by = {(g["engine"], g["model"], g["weights"], g["threads"], g["context"]): g for g in groups}
    out = ["Side by side (generation tokens/s, same threads and context, 8-bit against 8-bit):", ""]
    seqlab_threads = {g["threads"] for g in groups if g["engine"] == "seqlab"}
    for (ctx, t) in sorted({(g["context"], g["threads"]) for g in groups}):
        for kinds, peer, pmodel in ((("t2r", "hedgehog"), "rwkv.cpp", "rwkv4"),
                                    (("softmax",), "ggml-gpt2", "gpt2")):
            for pw, sw in PEER_TO_SEQLAB.items():
                p = by.get((peer, pmodel, pw, t, ctx))
                ours = [g for g in groups if g["engine"] == "seqlab" and g["model"] in kinds
                        and g["weights"] == sw and g["threads"] == t and g["context"] == ctx]
                if not p or not ours:
                    continue
                best = max(ours, key=lambda g: g["tg_tokens_per_s"])
                out.append("- context %d, %d thread(s): seqlab %s %s (%.1f tokens/s) = %.2f× %s "
                           "%s (%.1f tokens/s)"
                           % (ctx, t, best["model"], sw, best["tg_tokens_per_s"],
                              best["tg_tokens_per_s"] / p["tg_tokens_per_s"], peer, pw,
                              p["tg_tokens_per_s"]))
    if seqlab_threads == {1}:
        out.append("- seqlab's fast decoder ran on one thread only (this build's `bench decode` "
                   "has no `--decoder-threads`): it has no 2-thread rows.")
    if not any(g["engine"] == "seqlab" and g["weights"] == "int8" for g in groups):
        out.append("- no seqlab int8 rows (this build's `bench decode` has no `--weights`): the "
                   "8-bit peers have no seqlab counterpart here.")
    return out


def markdown(groups, rows, peers, commit):
    lines = []
    machine = rows[0].get("machine", "?")
    loads = [r["load_avg_before"] for r in rows]
    reps = max(g["reps"] for g in groups)
    lines.append("Machine: %s (lscpu model name), %s cores; load average %.1f–%.1f before the "
                 "measurements; %d repetition(s), interleaved; %d generated tokens after the "
                 "context." % (machine, rows[0].get("cores", "?"), min(loads), max(loads), reps,
                               rows[0]["gen"]))
    if peers:
        lines.append("Peers: rwkv.cpp %s (ggml %s), ggml gpt-2 at %s; seqlab %s."
                     % (peers["rwkv.cpp"]["commit"][:10], peers["rwkv.cpp"]["ggml_submodule"][:10],
                        peers["ggml"]["commit"][:10], commit or "?"))
    built = {r.get("seqlab_built") for r in rows if r.get("seqlab_built")}
    if built:
        lines.append("seqlab binary: built %s." % ", ".join(sorted(built)))
    lines.append("")
    lines.append("| context | threads | engine | model | weights | weight MB | tg tokens/s | "
                 "ms/token | pp tokens/s | peak RSS MiB | GB/s | tg / rwkv.cpp f32 | "
                 "tg / ggml f32 |")
    lines.append("|---:|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for g in groups:
        wb = g["weight_bytes"]
        lines.append("| %d | %d | %s | %s | %s | %s | %.1f ± %.1f | %.2f | %.0f ± %.0f | %.0f | "
                     "%s | %s | %s |"
                     % (g["context"], g["threads"], g["engine"], g["model"], g["weights"],
                        "%.1f" % (wb / 1e6) if wb else "?", g["tg_tokens_per_s"],
                        g["tg_tokens_per_s_sd"], g["ms_per_token"], g["pp_tokens_per_s"],
                        g["pp_tokens_per_s_sd"], g["peak_rss_mib"],
                        "%.1f" % (wb / (g["ms_per_token"] * 1e6)) if wb else "?",
                        fmt_ratio(g["x_rwkv_f32"]), fmt_ratio(g["x_ggml_f32"])))
    lines.append("")
    lines.extend(summary(groups))
    lines.append("")
    lines.append("GB/s = weight file bytes / ms per generated token (the embedding table is "
                 "counted whole though a token reads one row of it). seqlab's bf16 and int8 are "
                 "chosen at load time (`--weights`), so their weight MB is bench decode's count of "
                 "the bytes a token reads in that format (the embedding and the learned position "
                 "table one row each, the tied head whole), not a file's size. seqlab's peak RSS "
                 "includes the LibTorch runtime and its LibTorch copy of the weights.")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results")
    ap.add_argument("--peers", help="build.sh's peers.json")
    ap.add_argument("--commit", help="seqlab's commit, for the header")
    ap.add_argument("--format", default="md", choices=["md", "json"])
    a = ap.parse_args()
    try:
        rows = [json.loads(line) for line in open(a.results) if line.strip()]
    except (OSError, ValueError) as e:
        print("report.py: cannot read %s: %s" % (a.results, e), file=sys.stderr)
        return 2
    if not rows:
        print("report.py: %s has no rows" % a.results, file=sys.stderr)
        return 2
    groups = aggregate(rows)
    if a.format == "json":
        json.dump(groups, sys.stdout, indent=1, sort_keys=True)
        print()
        return 0
    peers = json.load(open(a.peers)) if a.peers else None
    print(markdown(groups, rows, peers, a.commit))
    return 0


if __name__ == "__main__":
    sys.exit(main())
