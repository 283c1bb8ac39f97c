#!/usr/bin/env python3
"""A bounded load generator for `seqlab serve` (stdlib only): C concurrent clients each send
streaming /v1/completions requests back to back for a fixed time; measures aggregate generated
tokens/s, time to first token and inter-token latency (p50/p99), errors and lost requests. Then,
optionally, fills the session cache with N distinct conversations of a stated length (token-id
prompts) and reads the server's resident memory (/proc/PID/status VmRSS) and /metrics' cache
figures.

Usage: load.py --port P --pid PID --model NAME [--concurrency 1,8,32,128] [--seconds 10]
               [--max-tokens 64] [--prompt-len 32] [--sessions 10,1000,10000]
               [--session-len 64] [--vocab 8192]
(an empty --concurrency or --sessions skips that part; run the sessions on a fresh server)
Prints one JSON object per line (test = "gen" or "sessions").

The requests ask for no logprobs (the server would compute a log-softmax over the vocabulary per
token): tokens/s is the server's exact count (/metrics) over the wall time; the client counts
stream events, one per token except where the server holds text back (an incomplete UTF-8
character), so inter-token latency is the gap between events.
"""
import argparse
import http.client
import json
import random
import threading
import time


def stream_once(port, prompt, max_tokens, seed):
    """One streaming request; returns (ttft, [inter-token gaps], tokens) or raises."""
    body = json.dumps({"prompt": prompt, "max_tokens": max_tokens, "temperature": 1.0,
                       "seed": seed, "stream": True, "ignore_eos": True})
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    t0 = time.perf_counter()
    c.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200:
        raise RuntimeError(f"HTTP {r.status}: {r.read()[:200]}")
    ttft, last, gaps, tokens = None, None, [], 0
    buf = b""
    while True:
        chunk = r.read1(65536)
        if not chunk:
            break
        buf += chunk
        while b"\n\n" in buf:
            event, buf = buf.split(b"\n\n", 1)
            if not event.startswith(b"data: "):
                continue
            data = event[6:]
            if data == b"[DONE]":
                c.close()
                return ttft, gaps, tokens
            j = json.loads(data)
            if "error" in j:
                raise RuntimeError(j["error"]["message"])
            if not j["choices"][0].get("text"):
                continue
            now = time.perf_counter()
            if ttft is None:
                ttft = now - t0
            else:
                gaps.append(now - last)
            last = now
            tokens += 1
    raise RuntimeError("stream ended without [DONE]")


def pct(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100.0 * len(xs)))]


def run_gen(a, conc):
    stop = time.perf_counter() + a.seconds
    lock = threading.Lock()
    stats = {"ttft": [], "gaps": [], "tokens": 0, "errors": 0, "requests": 0, "sent": 0}

    def client(k):
        rnd = random.Random(k)
        while time.perf_counter() < stop:
            prompt = "".join(rnd.choice("abcdefghij klmnop") for _ in range(a.prompt_len))
            with lock:
                stats["sent"] += 1
            try:
                ttft, gaps, tokens = stream_once(a.port, prompt, a.max_tokens, rnd.randrange(1 << 30))
                with lock:
                    stats["ttft"].append(ttft)
                    stats["gaps"] += gaps
                    stats["tokens"] += tokens
                    stats["requests"] += 1
            except Exception as e:  # noqa: BLE001 - counted and reported
                with lock:
                    stats["errors"] += 1
                    stats["last_error"] = str(e)

    m0 = metrics(a.port)
    t0 = time.perf_counter()
    ths = [threading.Thread(target=client, args=(k,)) for k in range(conc)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    wall = time.perf_counter() - t0
    m1 = metrics(a.port)
    d = lambda k: m1[k] - m0[k]  # noqa: E731
    steps = d("seqlab_batch_steps_total")
    ms = lambda v: None if v is None else round(1000 * v, 2)  # noqa: E731
    return {"test": "gen", "model": a.model, "concurrency": conc, "requests": stats["requests"],
            "errors": stats["errors"],
            # Sent, but neither finished nor failed (0 unless a thread died).
            "lost": stats["sent"] - stats["requests"] - stats["errors"],
            "finished_server": int(d("seqlab_requests_finished_total")),
            # The server's own token count over the wall time, the client's stream events, and the
            # mean rows per batched step.
            "tokens_per_s": round(d("seqlab_generated_tokens_total") / wall, 1),
            "client_events_per_s": round(stats["tokens"] / wall, 1),
            "mean_batch": round(d("seqlab_batch_rows_total") / steps, 2) if steps else None,
            "ttft_p50_ms": ms(pct(stats["ttft"], 50)), "ttft_p99_ms": ms(pct(stats["ttft"], 99)),
            "itl_p50_ms": ms(pct(stats["gaps"], 50)), "itl_p99_ms": ms(pct(stats["gaps"], 99)),
            "last_error": stats.get("last_error")}


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return None


def metrics(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", "/metrics")
    out = {}
    for line in c.getresponse().read().decode().splitlines():
        if line and not line.startswith("#") and "{" not in line:
            k, v = line.split()
            out[k] = float(v)
    return out


def run_sessions(a, n, done):
    # Distinct conversations: a prompt of session-len - 8 random token ids, then 8 generated tokens
    # (the cached state has consumed session-len - 1 tokens: the last one sampled is never fed).
    for i in range(done, n):
        rnd = random.Random(1000003 * i + 7)
        prompt = [rnd.randrange(a.vocab) for _ in range(a.session_len - 8)]
        body = json.dumps({"prompt": prompt, "max_tokens": 8, "temperature": 0, "ignore_eos": True})
        c = http.client.HTTPConnection("127.0.0.1", a.port, timeout=60)
        c.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
        r = c.getresponse()
        r.read()
        if r.status != 200:
            raise RuntimeError(f"HTTP {r.status}")
    m = metrics(a.port)
    return {"test": "sessions", "model": a.model, "sessions_sent": n,
            "session_len": a.session_len, "sessions_cached": int(m["seqlab_cache_sessions"]),
            "evictions": int(m["seqlab_cache_evictions_total"]),
            "cache_mb": round(m["seqlab_cache_bytes"] / 2**20, 2),
            "state_kb": round(m["seqlab_state_bytes"] / 1024, 1), "rss_mb": round(rss_mb(a.pid), 1)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--pid", type=int, required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--concurrency", default="1,8,32,128")
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--prompt-len", type=int, default=32)
    p.add_argument("--sessions", default="")
    p.add_argument("--session-len", type=int, default=64)
    p.add_argument("--vocab", type=int, default=8192)
    a = p.parse_args()
    for conc in [int(x) for x in a.concurrency.split(",") if x]:
        print(json.dumps(run_gen(a, conc)), flush=True)
    done = 0
    if a.sessions:
        print(json.dumps({"test": "sessions", "model": a.model, "sessions_sent": 0,
                          "rss_mb": round(rss_mb(a.pid), 1)}), flush=True)
    for n in [int(x) for x in a.sessions.split(",") if x]:
        print(json.dumps(run_sessions(a, n, done)), flush=True)
        done = n


if __name__ == "__main__":
    main()
