#!/usr/bin/python3
"""peer_pytorch.py: the decoder a user would otherwise write in PyTorch eager, as a baseline for
`seqlab bench decode`.

Reads a seqlab model directory (config.json + model.safetensors, F32), rebuilds the causal lm
forward in plain PyTorch (no seqlab code) and decodes token by token, batch 1, under
torch.no_grad():
  - softmax attention: a KV cache preallocated to the length the run needs (prompt + new tokens),
    scores = q K^T / sqrt(Dh) over the filled prefix, softmax, times V;
  - linear attention (feature map t2r, hedgehog or elu1): the recurrent form, per head
    S += phi(k) v^T, z += phi(k), y = phi(q) S / (phi(q) . z + 1e-6).
Blocks are pre-norm (x + mixer(ln1(x)), x + mlp(ln2(x))), LayerNorm eps 1e-5, MLP gelu (erf) or
gelu_tanh, final ln_f and a tied (wte) or untied head; positions learned, sinusoidal or none.

Run with Debian's python (python3-torch):
  /usr/bin/python3 bench/peer_pytorch.py --model DIR [--check --seqlab build/seqlab]
      [--contexts 128,1024,4096,16384] [--gen 64] [--reps 3] [--threads 1] [--seed 0]
--check compares greedy token ids with `seqlab generate --engine torch/fast --temperature 0`
(seqlab prints no logits, so ids are compared: equal ids = pass).
With --seqlab BIN it also runs `BIN bench decode ... --engines fast,torch --format json` and
prints both side by side with python/fast and python/seqlab-torch ratios.
"""

import argparse
import json
import math
import os
import statistics
import struct
import subprocess
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    sys.exit("error: no torch module; run with Debian's /usr/bin/python3 (apt install python3-torch)")

EPS_LN = 1e-5
EPS_LIN = 1e-6


def die(msg):
    sys.exit("error: " + msg)


def load_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        die(f"{path}: too short for a safetensors file")
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n].decode("utf-8"))
    base = 8 + n
    buf = bytearray(data)  # writable, so torch.frombuffer does not warn
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            die(f"{path}: tensor {name} is {info['dtype']}; only F32 is supported")
        a, b = info["data_offsets"]
        shape = info["shape"]
        count = (b - a) // 4
        t = torch.frombuffer(buf, dtype=torch.float32, count=count, offset=base + a)
        out[name] = t.reshape(shape) if shape else t.reshape(())
    return out


def sinusoidal(p, D):
    i = torch.arange(0, D, 2, dtype=torch.float32)
    ang = p * torch.exp(i * (-math.log(10000.0) / D))
    pe = torch.zeros(D)
    pe[0::2] = torch.sin(ang)
    pe[1::2] = torch.cos(ang)[: D // 2]
    return pe


class PeerModel:
    def __init__(self, model_dir):
        with open(os.path.join(model_dir, "config.json")) as f:
            cfg = json.load(f)["model"]
        self.cfg = cfg
        if cfg.get("head", "lm") != "lm" or not cfg.get("causal", True):
            die("only causal lm models are supported")
        arch = cfg["arch"]
        if arch in ("t2r", "hedgehog", "elu1"):  # aliases for linear + feature map
            arch, cfg["feature_map"] = "linear", arch
        if arch == "softmax":
            self.kind = "softmax"
        elif arch == "linear":
            if cfg["feature_map"] not in ("t2r", "hedgehog", "elu1"):
                die(f"feature map {cfg['feature_map']} not supported (t2r, hedgehog, elu1)")
            self.kind = cfg["feature_map"]
        else:
            die(f"mixer {arch} not supported (softmax, or linear with t2r/hedgehog/elu1)")
        act = cfg.get("activation", "gelu")
        if act not in ("gelu", "gelu_tanh"):
            die(f"activation {act} not supported")
        self.approx = "tanh" if act == "gelu_tanh" else "none"
        pos = cfg.get("pos", "auto")
        self.pos = "learned" if pos == "auto" else pos  # both attention mixers need positions
        if self.pos not in ("learned", "sinusoidal", "none"):
            die(f"positions {self.pos} not supported")
        if cfg.get("mlp_ratio", 4) == 0:
            die("mlp_ratio 0 not supported")
        self.D, self.H, self.L = cfg["d_model"], cfg["n_head"], cfg["n_layer"]
        self.Dh = self.D // self.H
        self.max_len = cfg["max_context"]
        w = load_safetensors(os.path.join(model_dir, "model.safetensors"))
        if any(".adapters." in k or k.startswith("adapters.") for k in w):
            die("model has unmerged adapters; merge them first (seqlab finetune --merge)")
        self.w = w
        self.wte = w["wte.weight"]
        self.head = self.wte if cfg.get("tie_embeddings", True) else w["head.weight"]
        self.head_b = w.get("head.bias")
        self.blocks = []
        for i in range(self.L):
            p = lambda n: w[f"blocks.{i}.{n}"]
            blk = {
                "ln1": (p("ln1.weight"), p("ln1.bias")),
                "ln2": (p("ln2.weight"), p("ln2.bias")),
                # q, k, v fused into one [3D, D] matmul, as a user would
                "qkv_w": torch.cat([p("mixer.q.weight"), p("mixer.k.weight"), p("mixer.v.weight")]),
                "qkv_b": torch.cat([p("mixer.q.bias"), p("mixer.k.bias"), p("mixer.v.bias")]),
                "o": (p("mixer.o.weight"), p("mixer.o.bias")),
                "fc1": (p("mlp.fc1.weight"), p("mlp.fc1.bias")),
                "fc2": (p("mlp.fc2.weight"), p("mlp.fc2.bias")),
            }
            if self.kind == "t2r":
                blk["fw"], blk["fb"] = p("mixer.feature_map.w"), p("mixer.feature_map.b")
            elif self.kind == "hedgehog":
                blk["fwq"], blk["fbq"] = p("mixer.feature_map.wq"), p("mixer.feature_map.bq")
                blk["fwk"], blk["fbk"] = p("mixer.feature_map.wk"), p("mixer.feature_map.bk")
            self.blocks.append(blk)
        self.ln_f = (w["ln_f.weight"], w["ln_f.bias"])

    # phi: x [H,Dh] -> [H,F']
    def phi(self, blk, x, is_query):
        if self.kind == "elu1":
            return F.elu(x) + 1
        if self.kind == "t2r":
            return torch.relu(torch.bmm(blk["fw"], x.unsqueeze(-1)).squeeze(-1) + blk["fb"])
        wq, bq = (blk["fwq"], blk["fbq"]) if is_query else (blk["fwk"], blk["fbk"])
        u = torch.bmm(wq, x.unsqueeze(-1)).squeeze(-1) + bq  # [H,F]
        return torch.cat([torch.softmax(u, -1), torch.softmax(-u, -1)], -1)

    def init_state(self, length):
        st = {"pos": 0, "layers": []}
        for blk in self.blocks:
            if self.kind == "softmax":
                # preallocated KV cache for the whole run
                st["layers"].append([torch.zeros(self.H, length, self.Dh),
                                     torch.zeros(self.H, length, self.Dh)])
            else:
                Fo = self.phi(blk, torch.zeros(self.H, self.Dh), False).shape[-1]
                st["layers"].append([torch.zeros(self.H, Fo, self.Dh), torch.zeros(self.H, Fo)])
        return st

    @staticmethod
    def clone_state(st):
        return {"pos": st["pos"], "layers": [[t.clone() for t in l] for l in st["layers"]]}

    def step(self, token, st):
        """One token (int) -> logits [V]; advances st."""
        t = st["pos"]
        if self.pos != "none" and t >= self.max_len:
            die(f"position {t} is past the model's max context {self.max_len}")
        x = self.wte[token]
        if self.pos == "learned":
            x = x + self.w["wpe.weight"][t]
        elif self.pos == "sinusoidal":
            x = x + sinusoidal(t, self.D)
        H, Dh = self.H, self.Dh
        for blk, ls in zip(self.blocks, st["layers"]):
            h = F.layer_norm(x, (self.D,), blk["ln1"][0], blk["ln1"][1], EPS_LN)
            q, k, v = F.linear(h, blk["qkv_w"], blk["qkv_b"]).view(3, H, Dh)
            if self.kind == "softmax":
                K, V = ls
                if t >= K.shape[1]:
                    die("KV cache full")
                K[:, t] = k
                V[:, t] = v
                s = torch.bmm(K[:, : t + 1], q.unsqueeze(-1)).squeeze(-1) / math.sqrt(Dh)  # [H,t+1]
                y = torch.bmm(torch.softmax(s, -1).unsqueeze(1), V[:, : t + 1]).squeeze(1)  # [H,Dh]
            else:
                S, z = ls
                fq, fk = self.phi(blk, q, True), self.phi(blk, k, False)  # [H,F]
                S.add_(fk.unsqueeze(-1) * v.unsqueeze(-2))
                z.add_(fk)
                num = torch.bmm(fq.unsqueeze(1), S).squeeze(1)  # [H,Dh]
                den = (fq * z).sum(-1, keepdim=True)            # [H,1]
                y = num / (den + EPS_LIN)
            x = x + F.linear(y.reshape(self.D), *blk["o"])
            h = F.layer_norm(x, (self.D,), blk["ln2"][0], blk["ln2"][1], EPS_LN)
            h = F.gelu(F.linear(h, *blk["fc1"]), approximate=self.approx)
            x = x + F.linear(h, *blk["fc2"])
        st["pos"] = t + 1
        x = F.layer_norm(x, (self.D,), self.ln_f[0], self.ln_f[1], EPS_LN)
        return F.linear(x, self.head, self.head_b)


def save_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name, t in tensors.items():
        b = t.contiguous().numpy().tobytes() if hasattr(t, "numpy") else bytes(t)
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for b in blobs:
            f.write(b)


def perturbed_copy(model_dir, scale, seed, out_dir):
    """A copy of the model with every weight w -> w + scale * std(w) * N(0,1): a barely trained
    model greedily repeats one token, which makes an id comparison vacuous."""
    import shutil
    os.makedirs(out_dir, exist_ok=True)
    shutil.copy(os.path.join(model_dir, "config.json"), out_dir)
    w = load_safetensors(os.path.join(model_dir, "model.safetensors"))
    g = torch.Generator().manual_seed(seed)
    out = {}
    for k, t in w.items():
        sd = float(t.std()) if t.numel() > 1 else 0.0
        sd = sd if sd > 0 else 0.02
        out[k] = t + scale * sd * torch.randn(t.shape, generator=g)
    save_safetensors(os.path.join(out_dir, "model.safetensors"), out)


def random_tokens(n, vocab, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, (n,), generator=g).tolist()


def greedy(m, prompt, n_new):
    st = m.init_state(len(prompt) + n_new)
    logits = None
    for tok in prompt:
        logits = m.step(tok, st)
    out = []
    for _ in range(n_new):
        tok = int(torch.argmax(logits))
        out.append(tok)
        logits = m.step(tok, st)
    return out


def check(m, args):
    model_dir = args.model
    if args.check_noise > 0:
        import tempfile
        model_dir = tempfile.mkdtemp(prefix="peer_check_")
        perturbed_copy(args.model, args.check_noise, args.seed + 7, model_dir)
        m = PeerModel(model_dir)
        print(f"check on a perturbed copy (noise {args.check_noise} x std per tensor): {model_dir}")
    vocab = m.cfg["vocab_size"]
    prompt = random_tokens(16, vocab, args.seed + 12345)
    n_new = 32
    with torch.no_grad():
        mine = greedy(m, prompt, n_new)
    print(f"check: prompt {len(prompt)} random ids (seed {args.seed + 12345}), {n_new} greedy ids")
    print(f"  python      : {' '.join(map(str, mine))}")
    if not args.seqlab:
        print("  (no --seqlab BIN: nothing to compare against)")
        return True
    ok = True
    for engine in ("torch", "fast"):
        cmd = [args.seqlab, "generate", "--model", model_dir, "--prompt-ids",
               " ".join(map(str, prompt)), "--max-new", str(n_new), "--temperature", "0",
               "--engine", engine, "--json", "-q", "--threads", "1"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"  seqlab {engine}: failed: {r.stderr.strip()}")
            ok = False
            continue
        theirs = json.loads(r.stdout)["generated_ids"]
        same = theirs == mine
        first = next((i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b), None)
        print(f"  seqlab {engine:5s}: {' '.join(map(str, theirs))}")
        print(f"  -> {'PASS (ids equal)' if same else f'FAIL (first difference at new token {first})'}")
        ok = ok and same
    if args.check_noise > 0:
        import shutil
        shutil.rmtree(model_dir, ignore_errors=True)
    return ok


def bench(m, args, contexts):
    vocab = m.cfg["vocab_size"]
    rows = {}
    with torch.no_grad():
        for C in contexts:
            toks = random_tokens(C + 1, vocab, args.seed)
            st = m.init_state(C + args.gen + 1)
            t0 = time.perf_counter()
            logits = None
            for tok in toks[:C]:  # prefill token by token (untimed for the table)
                logits = m.step(tok, st)
            pre = time.perf_counter() - t0
            times = []
            for _ in range(args.reps):
                s = PeerModel.clone_state(st)
                lg = logits
                t0 = time.perf_counter()
                for _ in range(args.gen):
                    tok = int(torch.argmax(lg))
                    lg = m.step(tok, s)
                times.append((time.perf_counter() - t0) * 1000.0 / args.gen)
            mean = statistics.mean(times)
            sd = statistics.stdev(times) if len(times) > 1 else 0.0
            rows[C] = (mean, sd)
            print(f"  context {C}: prefill {pre:.1f} s ({pre * 1000 / max(C, 1):.3f} ms/token), "
                  f"generation {mean:.3f} ± {sd:.3f} ms/token", file=sys.stderr, flush=True)
    return rows


def seqlab_bench(args, contexts):
    cmd = [args.seqlab, "bench", "decode", "--model", args.model,
           "--contexts", ",".join(map(str, contexts)), "--gen", str(args.gen),
           "--reps", str(args.reps), "--engines", "fast,torch", "--threads", str(args.threads),
           "--format", "json", "-q"]
    print("running: " + " ".join(cmd), file=sys.stderr, flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        die(f"seqlab bench decode failed: {r.stderr.strip()}")
    out = {}
    for row in json.loads(r.stdout):
        if row.get("test") == "tg" and "ms_per_token" in row:
            tps, sd = row["tokens_per_s"], row.get("sd", 0.0)
            ms = row["ms_per_token"]
            # sd of ms/token from sd of tokens/s (first order)
            ms_sd = 1000.0 * sd / (tps * tps) if tps else 0.0
            out[(row["engine"], row["context"])] = (ms, ms_sd)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="seqlab model directory")
    ap.add_argument("--contexts", default="128,1024,4096,16384")
    ap.add_argument("--gen", type=int, default=64)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--check", action="store_true", help="compare greedy ids with seqlab generate")
    ap.add_argument("--check-noise", type=float, default=0.0,
                    help="--check on a copy with Gaussian noise (this x each tensor's std) added "
                         "to the weights, so that a barely trained model's greedy ids vary")
    ap.add_argument("--no-bench", action="store_true", help="only --check")
    ap.add_argument("--seqlab", help="seqlab binary: also run its bench decode side by side")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    m = PeerModel(args.model)
    print(f"model {args.model}: {m.kind}, d_model {m.D}, {m.H} heads, {m.L} layers, "
          f"vocab {m.cfg['vocab_size']}, max context {m.max_len}; torch {torch.__version__}, "
          f"{torch.get_num_threads()} thread(s)")
    ok = True
    if args.check:
        ok = check(m, args)
    if args.no_bench:
        sys.exit(0 if ok else 1)
    req = [int(c) for c in args.contexts.split(",") if c]
    limit = m.max_len - args.gen if m.pos != "none" else None
    contexts = [c for c in req if limit is None or c <= limit]
    for c in req:
        if c not in contexts:
            print(f"note: context {c} + {args.gen} new tokens exceeds max context {m.max_len}; "
                  f"skipped")
    py = bench(m, args, contexts)
    sl = seqlab_bench(args, contexts) if args.seqlab else {}
    fmt = lambda v: f"{v[0]:.3f} ± {v[1]:.3f}" if v else "–"
    kv = "KV cache preallocated" if m.kind == "softmax" else "recurrent state"
    print(f"\nms/token generating {args.gen} tokens after C random tokens, mean ± sd over "
          f"{args.reps} reps, batch 1, {args.threads} thread(s); python: eager, {kv}\n")
    if sl:
        print("| model | context | seqlab fast | seqlab torch | python | python/fast | "
              "python/seqlab-torch |")
        print("|---|---:|---:|---:|---:|---:|---:|")
    else:
        print("| model | context | python ms/token |")
        print("|---|---:|---:|")
    for C in contexts:
        p = py[C]
        if sl:
            f, t = sl.get(("fast", C)), sl.get(("torch", C))
            rf = f"{p[0] / f[0]:.1f}×" if f else "–"
            rt = f"{p[0] / t[0]:.2f}×" if t else "–"
            print(f"| {m.kind} | {C} | {fmt(f)} | {fmt(t)} | {fmt(p)} | {rf} | {rt} |")
        else:
            print(f"| {m.kind} | {C} | {fmt(p)} |")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
