#!/usr/bin/env python3
"""One repetition of bench/peers/run.sh: every engine x model x weights x threads x context,
one after the other, each measurement in a process of its own; appends one JSON row each to
RESULTS (see run.sh for the whole run and README.md for the row's fields).

    /usr/bin/python3 bench/peers/measure.py --out OUT --rep R [--contexts 128,4096]
        [--threads 1,2] [--gen 64] [--seqlab build/seqlab] [--results OUT/results.jsonl]
        [--weights f32,bf16,int8]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time


def weight_bytes(path):
    """Bytes of the weight file(s): a file, or a model directory's *.safetensors."""
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path)
                   if f.endswith(".safetensors"))
    return os.path.getsize(path)


def last_json_line(text):
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise ValueError("no JSON line in the output")


def seqlab_axes(seqlab, formats):
    """What this build's `bench decode` offers: (threads flag or None, the weight formats to
    measure or None when it has no --weights flag). With the flag every format in `formats` is
    measured and passed explicitly (int8 is the counterpart of the peers' 8-bit files); a format
    the build refuses fails its rows loudly rather than being left out."""
    h = subprocess.run([seqlab, "bench", "decode", "--help"], capture_output=True, text=True).stdout
    threads_flag = "--decoder-threads" if "--decoder-threads" in h else None
    if "--weights" not in h:
        return threads_flag, None
    return threads_flag, formats


def run_peer(binary, model, threads, context, gen):
    p = subprocess.run([binary, model, str(threads), str(context), str(gen)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (binary, p.returncode, p.stderr.strip()[-400:]))
    r = last_json_line(p.stdout)
    return {"tg_tokens_per_s": r["tg_tokens_per_s"], "pp_tokens_per_s": r["pp_tokens_per_s"],
            "ms_per_token": r["ms_per_token"], "peak_rss_mib": r["peak_rss_mib"]}


def run_seqlab(seqlab, model, threads, context, gen, weights, threads_flag, has_weights):
    cmd = [seqlab, "bench", "decode", "--model", model, "--contexts", str(context), "--gen",
           str(gen), "--reps", "1", "--engines", "fast", "-o", "json", "-q"]
    if threads_flag:
        cmd += [threads_flag, str(threads)]
    if has_weights:
        cmd += ["--weights", weights]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("seqlab bench decode failed (%d): %s" % (p.returncode, p.stderr[-400:]))
    rows = {r["test"]: r for r in json.loads(p.stdout)
            if "test" in r and r.get("weights", weights) == weights and r.get("batch", 1) == 1}
    if "tg" not in rows or "pp" not in rows:
        raise RuntimeError("seqlab bench decode gave no pp/tg rows: %s" % p.stdout[-400:])
    tg, pp = rows["tg"], rows["pp"]
    r = {"tg_tokens_per_s": tg["tokens_per_s"], "pp_tokens_per_s": pp["tokens_per_s"],
         "ms_per_token": tg["ms_per_token"], "peak_rss_mib": tg["peak_rss_mb"],
         "floor_ms": tg.get("floor_ms")}
    # A format chosen at load time is not the file's: take bench decode's own count (the bytes a
    # token reads in that format; the embedding and a learned position table one row each) if it
    # has one. f32 rows keep the file's size, like the peers' rows.
    if weights != "f32" and "weight_bytes" in tg:
        r["weight_bytes"] = tg["weight_bytes"]
    elif "weight_mb" in tg:
        r["weight_bytes"] = int(tg["weight_mb"] * 1e6)
    elif weights != "f32":
        r["weight_bytes"] = None
    return r


def plan(a):
    """Every measurement of one repetition, in the order they run: context, then threads, then
    engines, so engines that are compared sit next to each other in time."""
    m = os.path.join(a.out, "models")
    bins = os.path.join(a.out, "bin")
    threads_flag, formats = seqlab_axes(a.seqlab, a.weights)
    has_weights = formats is not None
    formats = formats or ["f32"]
    cells = []
    for context in a.contexts:
        for threads in a.threads:
            for w in ("f32", "q8_0"):
                cells.append(("rwkv.cpp", "rwkv4", w, threads, context,
                              lambda w=w, t=threads, c=context: run_peer(
                                  os.path.join(bins, "rwkv_bench"),
                                  os.path.join(m, "rwkv4-%s.bin" % w), t, c, a.gen),
                              os.path.join(m, "rwkv4-%s.bin" % w)))
                cells.append(("ggml-gpt2", "gpt2", w, threads, context,
                              lambda w=w, t=threads, c=context: run_peer(
                                  os.path.join(bins, "gpt2_bench"),
                                  os.path.join(m, "gpt2-ggml-%s.bin" % w), t, c, a.gen),
                              os.path.join(m, "gpt2-ggml-%s.bin" % w)))
            # Without a decoder-threads flag seqlab's fast decoder runs on one thread: it is
            # measured once, in the threads-1 slot.
            if threads != a.threads[0] and not threads_flag:
                continue
            for model in ("softmax", "t2r", "hedgehog"):
                d = os.path.join(m, "seqlab-" + model)
                for w in formats:
                    cells.append(("seqlab", model, w, threads if threads_flag else 1, context,
                                  lambda d=d, t=threads, c=context, w=w: run_seqlab(
                                      a.seqlab, d, t, c, a.gen, w, threads_flag,
                                      has_weights), d))
    return cells


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="build.sh's OUT (bin/, models/)")
    ap.add_argument("--rep", type=int, required=True)
    ap.add_argument("--contexts", default="128,4096")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--gen", type=int, default=64)
    ap.add_argument("--seqlab", default="build/seqlab")
    ap.add_argument("--weights", default="f32,bf16,int8",
                    help="seqlab weight formats, where bench decode has --weights")
    ap.add_argument("--results", help="default OUT/results.jsonl")
    ap.add_argument("--only", help="comma-separated engines to run (rwkv.cpp, ggml-gpt2, seqlab)")
    a = ap.parse_args()
    a.contexts = [int(x) for x in a.contexts.split(",")]
    a.threads = [int(x) for x in a.threads.split(",")]
    a.weights = a.weights.split(",")
    results = a.results or os.path.join(a.out, "results.jsonl")
    machine = re.search(r"model name\s*:\s*(.*)", open("/proc/cpuinfo").read()).group(1).strip()
    only = set(a.only.split(",")) if a.only else None
    failed = 0
    for engine, model, w, threads, context, fn, path in plan(a):
        if only and engine not in only:
            continue
        load = os.getloadavg()[0]
        t0 = time.time()
        try:
            r = fn()
        except (RuntimeError, ValueError, OSError) as e:
            print("measure: %s %s %s t%d c%d: %s" % (engine, model, w, threads, context, e),
                  file=sys.stderr)
            failed += 1
            continue
        row = {"engine": engine, "model": model, "weights": w, "threads": threads,
               "context": context, "gen": a.gen, "rep": a.rep,
               "weight_bytes": r.pop("weight_bytes") if "weight_bytes" in r else weight_bytes(path),
               "load_avg_before": round(load, 2), "wall_s": round(time.time() - t0, 2),
               "machine": machine, "cores": os.cpu_count(),
               "seqlab_built": os.environ.get("SEQLAB_BUILT")}
        row.update(r)
        with open(results, "a") as f:
            f.write(json.dumps(row, sort_keys=True) + "\n")
        print("measure: rep %d %-9s %-8s %-4s t%d c%-5d tg %8.1f tok/s  pp %8.1f tok/s  (load %.1f)"
              % (a.rep, engine, model, w, threads, context, r["tg_tokens_per_s"],
                 r["pp_tokens_per_s"], load), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
