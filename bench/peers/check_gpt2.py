#!/usr/bin/env python3
"""Checks that the gpt-2 example reads make_models.py's legacy file as the GPT-2 it is: the
logits of gpt2_bench (ggml, fp32 file) after a seeded random context and --gen greedy tokens,
against a float64 PyTorch GPT-2 written out here on the Hugging Face weights.

    /usr/bin/python3 bench/peers/check_gpt2.py OUT/models/gpt2-hf OUT/bin/gpt2_bench \
                                               OUT/models/gpt2-ggml-f32.bin [--context 16] [--gen 6]

A transposed, swapped or misnamed tensor changes the logits (random weights leave the greedy
tokens nearly blind to attention, so tokens alone would not show it). Exit status 0 when the
greedy tokens agree and the logits are within --tol (max |diff| / max |logit|), 1 otherwise.
"""
import argparse
import json
import math
import struct
import subprocess
import os
import sys
import tempfile

import torch


def load_safetensors(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    out = {}
    for k, v in json.loads(raw[8:8 + n]).items():
        if k == "__metadata__":
            continue
        a, b = v["data_offsets"]
        t = torch.frombuffer(bytearray(raw[8 + n + a:8 + n + b]), dtype=torch.float32)
        out[k] = t.view(v["shape"]).double()
    return out


def context_tokens(n, vocab, seed=0):
    """gpt2_bench's context: its 64-bit LCG, the same constants."""
    s, out = (seed * 2862933555777941757 + 3037000493) % 2**64, []
    for _ in range(n):
        s = (s * 6364136223846793005 + 1442695040888963407) % 2**64
        out.append((s >> 33) % vocab)
    return out


def logits(W, cfg, ids):
    """GPT2LMHeadModel's forward, [T] -> [T, V]: pre-LN blocks, gelu_new, tied head."""
    D, H, T = cfg["n_embd"], cfg["n_head"], len(ids)
    ln = lambda x, p: torch.nn.functional.layer_norm(x, (D,), W[p + ".weight"], W[p + ".bias"], 1e-5)
    x = W["wte.weight"][ids] + W["wpe.weight"][:T]                        # [T, D]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
    for i in range(cfg["n_layer"]):
        p = "h.%d." % i
        qkv = ln(x, p + "ln_1") @ W[p + "attn.c_attn.weight"] + W[p + "attn.c_attn.bias"]
        q, k, v = (t.view(T, H, -1).transpose(0, 1) for t in qkv.split(D, -1))  # [H, T, Dh]
        att = (q @ k.transpose(-1, -2) / math.sqrt(D // H)).masked_fill(mask, -math.inf)
        y = (att.softmax(-1) @ v).transpose(0, 1).reshape(T, D)
        x = x + y @ W[p + "attn.c_proj.weight"] + W[p + "attn.c_proj.bias"]
        m = ln(x, p + "ln_2") @ W[p + "mlp.c_fc.weight"] + W[p + "mlp.c_fc.bias"]
        m = 0.5 * m * (1 + torch.tanh(math.sqrt(2 / math.pi) * (m + 0.044715 * m ** 3)))
        x = x + m @ W[p + "mlp.c_proj.weight"] + W[p + "mlp.c_proj.bias"]
    return ln(x, "ln_f") @ W["wte.weight"].T                              # [T, V]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("hf_dir")
    ap.add_argument("gpt2_bench")
    ap.add_argument("ggml_file")
    ap.add_argument("--context", type=int, default=16)
    ap.add_argument("--gen", type=int, default=2)
    ap.add_argument("--tol", type=float, default=2e-3,
                    help="ggml's GELU goes through an fp16 table: ~4e-4 here; a swapped tensor: >5e-2")
    a = ap.parse_args()
    cfg = json.load(open(a.hf_dir + "/config.json"))
    W = load_safetensors(a.hf_dir + "/model.safetensors")
    ids = context_tokens(a.context, cfg["vocab_size"])
    for _ in range(a.gen):  # gpt2_bench evaluates the context, then GEN greedy tokens
        ids.append(int(logits(W, cfg, ids)[-1].argmax()))
    want = logits(W, cfg, ids)[-1]
    with tempfile.TemporaryDirectory() as tmp:
        dump = os.path.join(tmp, "logits.f32")
        p = subprocess.run([a.gpt2_bench, a.ggml_file, "1", str(a.context), str(a.gen)],
                           capture_output=True, text=True, env=dict(os.environ, GPT2_BENCH_LOGITS=dump))
        if p.returncode != 0:
            print("check_gpt2: gpt2_bench failed: %s" % p.stderr[-400:], file=sys.stderr)
            return 1
        got = torch.frombuffer(bytearray(open(dump, "rb").read()), dtype=torch.float32).double()
    token = json.loads(p.stdout.strip().splitlines()[-1])["last_token"]
    err = float((got - want).abs().max() / want.abs().max())
    ok = token == int(want.argmax()) and err <= a.tol
    print("check_gpt2: greedy %s; ggml's last token %d; logits max |diff| / max |logit| = %.2e "
          "(tolerance %.0e): %s" % (ids[a.context:] + [int(want.argmax())], token, err, a.tol,
                                    "agree" if ok else "DISAGREE"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
