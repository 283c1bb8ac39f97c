#!/usr/bin/env python3
"""Writes tests/data/hf/<family>/: tiny random-weight Hugging Face checkpoints in the exact hub
layout, and reference.json with each one's logits and greedy continuation.

    /usr/bin/python3 scripts/make_hf_fixtures.py            # from the repository root

Needs PyTorch only (Debian: python3-torch), not transformers: the state dicts are written with the
names transformers' save_pretrained writes, by a small safetensors writer below, and the reference
forward passes are the families' own math written out here, independently of seqlab:

  llama            LlamaForCausalLM: RMSNorm, rotate-half RoPE, grouped-query attention
                   (repeat_kv), SwiGLU MLP, untied lm_head; BF16, sharded in two files with
                   model.safetensors.index.json, per-layer rotary_emb.inv_freq buffers, a
                   tokenizer.json + tokenizer_config.json
  qwen2            Qwen2ForCausalLM: as Llama, plus q/k/v biases, tied embeddings (no
                   lm_head.weight in the file); BF16
  mistral          MistralForCausalLM: as Llama, multi-query (1 kv head), sliding_window null;
                   F32, a model-level rotary_emb.inv_freq buffer
  gpt_neox         GPTNeoXForCausalLM (Pythia): LayerNorm, packed query_key_value [H,3,Dh],
                   partial rotary (rotary_pct 0.25), parallel residual, exact GELU, untied
                   embed_out; F16, the attention.bias / masked_bias / rotary_emb.inv_freq
                   buffers, a tokenizer.json
  gpt_neox_seq     the same family with use_parallel_residual false, rotary_pct 0.5, tied; F32

Weights are rounded to the file's dtype first; the reference runs in float64 on those rounded
values (RoPE's cos/sin are computed in fp32 as transformers computes them). The output is
deterministic: rerunning rewrites the same bytes.
"""
import json
import math
import os
import struct
import sys

import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "hf")
PROMPT = [1, 17, 42, 99, 5, 64, 23, 88, 3, 120, 77, 31, 9, 56, 101, 12]  # 16 tokens < V = 128
N_GREEDY = 8
TRANSFORMERS_VERSION = "4.44.2"

DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
          torch.bool: "BOOL", torch.int64: "I64"}


# ---- safetensors ---------------------------------------------------------------------------------

def tensor_bytes(t):
    t = t.contiguous().cpu()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().tobytes()  # numpy has no bfloat16; same bytes
    return t.numpy().tobytes()


def write_safetensors(path, tensors):
    """8-byte little-endian header length, JSON header, raw little-endian data (the format)."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(tensors):
        t = tensors[name]
        b = tensor_bytes(t)
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=2, sort_keys=True)
        f.write("\n")


def write_checkpoint(d, tensors, shards):
    """model.safetensors, or `shards` files named as save_pretrained names them plus the index."""
    if shards == 1:
        write_safetensors(os.path.join(d, "model.safetensors"), tensors)
        return
    names = sorted(tensors)
    per = (len(names) + shards - 1) // shards
    weight_map, total = {}, 0
    for s in range(shards):
        fname = "model-%05d-of-%05d.safetensors" % (s + 1, shards)
        part = {n: tensors[n] for n in names[s * per:(s + 1) * per]}
        write_safetensors(os.path.join(d, fname), part)
        for n, t in part.items():
            weight_map[n] = fname
            total += t.numel() * t.element_size()
    write_json(os.path.join(d, "model.safetensors.index.json"),
               {"metadata": {"total_size": total}, "weight_map": weight_map})


def write_tokenizer(d, vocab, model_max_length):
    """A small, valid tokenizers-library file: byte-level BPE over the first `vocab` byte symbols,
    no merges. Only the copy into the imported directory is tested with it."""
    # GPT-2's byte-to-unicode table: printable bytes map to themselves, the rest to 256 + i.
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    symbols = [chr(c) for _, c in sorted(zip(bs, cs))][:vocab]
    tok = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
           "normalizer": None,
           "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                             "use_regex": True},
           "post_processor": None,
           "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                       "use_regex": True},
           "model": {"type": "BPE", "dropout": None, "unk_token": None,
                     "continuing_subword_prefix": None, "end_of_word_suffix": None,
                     "fuse_unk": False, "byte_fallback": False,
                     "vocab": {s: i for i, s in enumerate(symbols)}, "merges": []}}
    write_json(os.path.join(d, "tokenizer.json"), tok)
    write_json(os.path.join(d, "tokenizer_config.json"),
               {"add_prefix_space": False, "clean_up_tokenization_spaces": False,
                "model_max_length": model_max_length,
                "tokenizer_class": "PreTrainedTokenizerFast"})


# ---- shared math (float64) -----------------------------------------------------------------------

def rope_cos_sin(R, theta, T):
    """transformers' default RoPE tables: fp32 inv_freq and angles, then cos/sin of [a, a]."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, R, 2, dtype=torch.int64).float() / R))
    pos = torch.arange(T, dtype=torch.int64).float()
    freqs = torch.outer(pos, inv_freq)  # [T, R/2], fp32
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos().double(), emb.sin().double()


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


def apply_rope(x, cos, sin):
    """x [heads, T, Dh]: the first R = cos.shape[-1] dims rotate, the rest pass through."""
    R = cos.shape[-1]
    rot, rest = x[..., :R], x[..., R:]
    return torch.cat([rot * cos + rotate_half(rot) * sin, rest], dim=-1)


def causal_attention(q, k, v):
    """q [H,T,Dh], k/v [H,T,Dh] -> [T, H*Dh]."""
    H, T, Dh = q.shape
    s = q @ k.transpose(1, 2) / math.sqrt(Dh)
    s = s.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))
    return (s.softmax(-1) @ v).transpose(0, 1).reshape(T, H * Dh)


def rms_norm(x, w, eps):
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * w


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * w + b


def gelu_exact(x):
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def linear(x, w, b=None):
    y = x @ w.t()
    return y if b is None else y + b


# ---- Llama / Qwen2 / Mistral ----------------------------------------------------------------------

def llama_forward(W, c, tokens):
    """LlamaForCausalLM's forward (modeling_llama.py), float64: tokens -> logits [T, V]."""
    g = lambda n: W[n].double()
    D, H = c["hidden_size"], c["num_attention_heads"]
    G, Dh, T = c["num_key_value_heads"], c["hidden_size"] // c["num_attention_heads"], len(tokens)
    eps = c["rms_norm_eps"]
    cos, sin = rope_cos_sin(Dh, c["rope_theta"], T)
    opt = lambda n: g(n) if n in W else None
    x = g("model.embed_tokens.weight")[torch.tensor(tokens)]
    for i in range(c["num_hidden_layers"]):
        p = "model.layers.%d." % i
        h = rms_norm(x, g(p + "input_layernorm.weight"), eps)
        a = p + "self_attn."
        q = linear(h, g(a + "q_proj.weight"), opt(a + "q_proj.bias")).view(T, H, Dh).transpose(0, 1)
        k = linear(h, g(a + "k_proj.weight"), opt(a + "k_proj.bias")).view(T, G, Dh).transpose(0, 1)
        v = linear(h, g(a + "v_proj.weight"), opt(a + "v_proj.bias")).view(T, G, Dh).transpose(0, 1)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        k, v = k.repeat_interleave(H // G, dim=0), v.repeat_interleave(H // G, dim=0)  # repeat_kv
        x = x + linear(causal_attention(q, k, v), g(a + "o_proj.weight"), opt(a + "o_proj.bias"))
        h = rms_norm(x, g(p + "post_attention_layernorm.weight"), eps)
        m = p + "mlp."
        gate = linear(h, g(m + "gate_proj.weight"), opt(m + "gate_proj.bias"))
        up = linear(h, g(m + "up_proj.weight"), opt(m + "up_proj.bias"))
        x = x + linear(torch.nn.functional.silu(gate) * up, g(m + "down_proj.weight"),
                       opt(m + "down_proj.bias"))
    x = rms_norm(x, g("model.norm.weight"), eps)
    head = g("lm_head.weight") if "lm_head.weight" in W else g("model.embed_tokens.weight")
    return x @ head.t()


def llama_weights(c, gen, qkv_bias, o_bias, dtype):
    D, H, G, I = (c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"],
                  c["intermediate_size"])
    V, Dh = c["vocab_size"], D // H
    r = lambda *s, scale=1.0: (torch.randn(*s, generator=gen) * scale).to(dtype)
    W = {"model.embed_tokens.weight": r(V, D), "model.norm.weight": (1 + r(D, scale=0.1))}
    for i in range(c["num_hidden_layers"]):
        p = "model.layers.%d." % i
        W[p + "input_layernorm.weight"] = 1 + r(D, scale=0.1)
        W[p + "post_attention_layernorm.weight"] = 1 + r(D, scale=0.1)
        for n, out in (("q", H * Dh), ("k", G * Dh), ("v", G * Dh)):
            W[p + "self_attn.%s_proj.weight" % n] = r(out, D, scale=D ** -0.5)
            if qkv_bias:
                W[p + "self_attn.%s_proj.bias" % n] = r(out, scale=0.3)
        W[p + "self_attn.o_proj.weight"] = r(D, H * Dh, scale=D ** -0.5)
        if o_bias:
            W[p + "self_attn.o_proj.bias"] = r(D, scale=0.3)
        W[p + "mlp.gate_proj.weight"] = r(I, D, scale=D ** -0.5)
        W[p + "mlp.up_proj.weight"] = r(I, D, scale=D ** -0.5)
        W[p + "mlp.down_proj.weight"] = r(D, I, scale=I ** -0.5)
    if c["tie_word_embeddings"]:  # tied to unit-scale embeddings: keep the logits moderate
        W["model.norm.weight"] = W["model.norm.weight"] * 0.25
    else:
        W["lm_head.weight"] = r(V, D, scale=D ** -0.5)
    return {n: t.to(dtype) for n, t in W.items()}


def llama_config(model_type, arch, D, H, G, I, L, V, P, eps, theta, tied, dtype_name):
    c = {"architectures": [arch], "model_type": model_type, "attention_dropout": 0.0,
         "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu", "hidden_size": D,
         "initializer_range": 0.02, "intermediate_size": I, "max_position_embeddings": P,
         "num_attention_heads": H, "num_hidden_layers": L, "num_key_value_heads": G,
         "rms_norm_eps": eps, "rope_theta": theta, "tie_word_embeddings": tied,
         "torch_dtype": dtype_name, "transformers_version": TRANSFORMERS_VERSION,
         "use_cache": True, "vocab_size": V}
    if model_type == "llama":
        c.update({"attention_bias": False, "mlp_bias": False, "pretraining_tp": 1,
                  "rope_scaling": None})
    elif model_type == "qwen2":
        c.update({"max_window_layers": L, "rope_scaling": None, "sliding_window": None,
                  "use_sliding_window": False, "bos_token_id": 0, "eos_token_id": 0})
    elif model_type == "mistral":
        c.update({"sliding_window": None, "head_dim": D // H})
    return c


# ---- GPT-NeoX ------------------------------------------------------------------------------------

def neox_forward(W, c, tokens):
    """GPTNeoXForCausalLM's forward (modeling_gpt_neox.py), float64."""
    g = lambda n: W[n].double()
    D, H, T = c["hidden_size"], c["num_attention_heads"], len(tokens)
    Dh, eps = D // H, c["layer_norm_eps"]
    R = int(Dh * c["rotary_pct"])
    cos, sin = rope_cos_sin(R, c["rotary_emb_base"], T)
    x = g("gpt_neox.embed_in.weight")[torch.tensor(tokens)]
    for i in range(c["num_hidden_layers"]):
        p = "gpt_neox.layers.%d." % i
        ln = lambda h, n: layer_norm(h, g(p + n + ".weight"), g(p + n + ".bias"), eps)
        h = ln(x, "input_layernorm")
        qkv = linear(h, g(p + "attention.query_key_value.weight"),
                     g(p + "attention.query_key_value.bias"))
        qkv = qkv.view(T, H, 3 * Dh).transpose(0, 1)  # [H, T, 3 Dh]
        q, k, v = qkv[..., :Dh], qkv[..., Dh:2 * Dh], qkv[..., 2 * Dh:]
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        attn = linear(causal_attention(q, k, v), g(p + "attention.dense.weight"),
                      g(p + "attention.dense.bias"))
        mlp = lambda h: linear(gelu_exact(linear(h, g(p + "mlp.dense_h_to_4h.weight"),
                                                 g(p + "mlp.dense_h_to_4h.bias"))),
                               g(p + "mlp.dense_4h_to_h.weight"), g(p + "mlp.dense_4h_to_h.bias"))
        if c["use_parallel_residual"]:
            x = x + attn + mlp(ln(x, "post_attention_layernorm"))
        else:
            x = x + attn
            x = x + mlp(ln(x, "post_attention_layernorm"))
    x = layer_norm(x, g("gpt_neox.final_layer_norm.weight"), g("gpt_neox.final_layer_norm.bias"),
                   eps)
    head = g("embed_out.weight") if "embed_out.weight" in W else g("gpt_neox.embed_in.weight")
    return x @ head.t()


def neox_weights(c, gen, dtype):
    D, I, V = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    r = lambda *s, scale=1.0: (torch.randn(*s, generator=gen) * scale).to(dtype)
    ln = lambda p: {p + ".weight": 1 + r(D, scale=0.1), p + ".bias": r(D, scale=0.1)}
    W = {"gpt_neox.embed_in.weight": r(V, D)}
    W.update(ln("gpt_neox.final_layer_norm"))
    for i in range(c["num_hidden_layers"]):
        p = "gpt_neox.layers.%d." % i
        W.update(ln(p + "input_layernorm"))
        W.update(ln(p + "post_attention_layernorm"))
        W[p + "attention.query_key_value.weight"] = r(3 * D, D, scale=D ** -0.5)
        W[p + "attention.query_key_value.bias"] = r(3 * D, scale=0.3)
        W[p + "attention.dense.weight"] = r(D, D, scale=D ** -0.5)
        W[p + "attention.dense.bias"] = r(D, scale=0.3)
        W[p + "mlp.dense_h_to_4h.weight"] = r(I, D, scale=D ** -0.5)
        W[p + "mlp.dense_h_to_4h.bias"] = r(I, scale=0.3)
        W[p + "mlp.dense_4h_to_h.weight"] = r(D, I, scale=I ** -0.5)
        W[p + "mlp.dense_4h_to_h.bias"] = r(D, scale=0.3)
    if c["tie_word_embeddings"]:  # tied to unit-scale embeddings: keep the logits moderate
        W["gpt_neox.final_layer_norm.weight"] = W["gpt_neox.final_layer_norm.weight"] * 0.25
    else:
        W["embed_out.weight"] = r(V, D, scale=D ** -0.5)
    return {n: t.to(dtype) for n, t in W.items()}


def neox_buffers(c, dtype):
    """The buffers older transformers saved with GPT-NeoX: causal mask, masked_bias, inv_freq."""
    P, Dh = c["max_position_embeddings"], c["hidden_size"] // c["num_attention_heads"]
    R = int(Dh * c["rotary_pct"])
    B = {}
    for i in range(c["num_hidden_layers"]):
        p = "gpt_neox.layers.%d.attention." % i
        B[p + "bias"] = torch.ones(P, P, dtype=torch.bool).tril().view(1, 1, P, P)
        B[p + "masked_bias"] = torch.tensor(-1e9).to(dtype)
        B[p + "rotary_emb.inv_freq"] = (1.0 / (c["rotary_emb_base"] ** (
            torch.arange(0, R, 2, dtype=torch.int64).float() / R))).to(dtype)
    return B


def neox_config(D, H, I, L, V, P, pct, parallel, tied, dtype_name):
    return {"architectures": ["GPTNeoXForCausalLM"], "model_type": "gpt_neox",
            "attention_bias": True, "attention_dropout": 0.0, "bos_token_id": 0,
            "classifier_dropout": 0.1, "eos_token_id": 0, "hidden_act": "gelu",
            "hidden_dropout": 0.0, "hidden_size": D, "initializer_range": 0.02,
            "intermediate_size": I, "layer_norm_eps": 1e-5, "max_position_embeddings": P,
            "num_attention_heads": H, "num_hidden_layers": L, "rope_scaling": None,
            "rotary_emb_base": 10000, "rotary_pct": pct, "tie_word_embeddings": tied,
            "torch_dtype": dtype_name, "transformers_version": TRANSFORMERS_VERSION,
            "use_cache": True, "use_parallel_residual": parallel, "vocab_size": V}


# ---- references ----------------------------------------------------------------------------------

def reference(forward, W, c):
    """Logits of PROMPT and its greedy continuation (argmax, recomputing the whole sequence)."""
    with torch.no_grad():
        logits = forward(W, c, PROMPT)
        seq, margins = list(PROMPT), []
        for _ in range(N_GREEDY):
            last = forward(W, c, seq)[-1]
            top = last.topk(2).values
            margins.append(float(top[0] - top[1]))
            seq.append(int(last.argmax()))
    return {"tokens": PROMPT, "greedy": seq[len(PROMPT):],
            "min_greedy_margin": min(margins),
            "logits": [[float("%.9g" % v) for v in row] for row in logits.tolist()]}


def emit(name, c, W, buffers, forward, shards=1, tokenizer=False):
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.remove(os.path.join(d, f))
    write_json(os.path.join(d, "config.json"), c)
    write_checkpoint(d, dict(W, **buffers), shards)
    if tokenizer:
        write_tokenizer(d, c["vocab_size"], c["max_position_embeddings"])
    ref = reference(forward, W, c)
    assert ref["min_greedy_margin"] > 1e-3, (name, ref["min_greedy_margin"])
    with open(os.path.join(d, "reference.json"), "w") as f:
        json.dump(ref, f, separators=(",", ":"))
        f.write("\n")
    size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
    amax = max(abs(v) for row in ref["logits"] for v in row)
    print("%-14s %7d bytes  max |logit| %.2f  greedy %s  min margin %.3g" % (
        name, size, amax, ref["greedy"], ref["min_greedy_margin"]), file=sys.stderr)


def main():
    torch.manual_seed(0)
    V, P = 128, 64

    c = llama_config("llama", "LlamaForCausalLM", D=48, H=4, G=2, I=128, L=2, V=V, P=P, eps=1e-6,
                     theta=500000.0, tied=False, dtype_name="bfloat16")
    W = llama_weights(c, torch.Generator().manual_seed(1), False, False, torch.bfloat16)
    B = {"model.layers.%d.self_attn.rotary_emb.inv_freq" % i: (1.0 / (500000.0 ** (
        torch.arange(0, 12, 2, dtype=torch.int64).float() / 12))) for i in range(2)}
    emit("llama", c, W, B, llama_forward, shards=2, tokenizer=True)

    c = llama_config("qwen2", "Qwen2ForCausalLM", D=32, H=4, G=2, I=96, L=2, V=V, P=P, eps=1e-6,
                     theta=1000000.0, tied=True, dtype_name="bfloat16")
    W = llama_weights(c, torch.Generator().manual_seed(2), True, False, torch.bfloat16)
    emit("qwen2", c, W, {}, llama_forward)

    c = llama_config("mistral", "MistralForCausalLM", D=32, H=4, G=1, I=80, L=2, V=V, P=P,
                     eps=1e-5, theta=10000.0, tied=False, dtype_name="float32")
    W = llama_weights(c, torch.Generator().manual_seed(3), False, False, torch.float32)
    B = {"model.rotary_emb.inv_freq": 1.0 / (10000.0 ** (
        torch.arange(0, 8, 2, dtype=torch.int64).float() / 8))}
    emit("mistral", c, W, B, llama_forward)

    c = neox_config(D=64, H=4, I=128, L=2, V=V, P=P, pct=0.25, parallel=True, tied=False,
                    dtype_name="float16")
    W = neox_weights(c, torch.Generator().manual_seed(4), torch.float16)
    emit("gpt_neox", c, W, neox_buffers(c, torch.float16), neox_forward, tokenizer=True)

    c = neox_config(D=32, H=4, I=96, L=2, V=V, P=P, pct=0.5, parallel=False, tied=True,
                    dtype_name="float32")
    W = neox_weights(c, torch.Generator().manual_seed(5), torch.float32)
    emit("gpt_neox_seq", c, W, {}, neox_forward)


if __name__ == "__main__":
    main()
