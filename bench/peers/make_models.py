#!/usr/bin/env python3
"""Writes the random-weight models of bench/peers/run.sh (issue 35), all of one shape:

    /usr/bin/python3 bench/peers/make_models.py OUT [--d-model 512] [--n-layer 6] [--n-head 8]
                                                    [--vocab 8192] [--n-positions 4224] [--seed 35]

  OUT/gpt2-hf/           a GPT2LMHeadModel in the Hugging Face layout (config.json,
                         model.safetensors F32, tokenizer.json: GPT-2's byte-level BPE cut to
                         --vocab ids), for `seqlab import-hf` (seqlab's softmax model, which
                         `seqlab convert` turns into T2R and Hedgehog)
  OUT/gpt2-ggml-f32.bin  the SAME weights in the legacy file of ggml's examples/gpt-2, fp32:
                           int32 magic 0x67676d6c ("ggml"), then int32 n_vocab, n_ctx (=
                           n_positions), n_embd, n_head, n_layer, ftype (0 = f32);
                           int32 n_vocab, then per token: uint32 length + its string (UTF-8);
                           per tensor: int32 n_dims, name length, type (0 = f32), then n_dims
                           int32 sizes innermost first (ggml's ne[0], ne[1]), the name, the data.
                         Names are model/wte, model/wpe, model/ln_f/{g,b} and
                         model/h{i}/{ln_1,ln_2}/{g,b}, model/h{i}/attn/{c_attn,c_proj}/{w,b},
                         model/h{i}/mlp/{c_fc,c_proj}/{w,b}. ggml multiplies a [ne1, ne0] matrix by
                         a vector of ne0, so every projection is written [out, in]: the transpose
                         of the Conv1D [in, out] that Hugging Face stores. No model/lm_head: the
                         example ties it to wte, as GPT-2 does.
  OUT/rwkv4.pth          an RWKV-4 PyTorch state dict (torch.save) of the same width, depth and
                         vocabulary, for rwkv.cpp's python/convert_pytorch_to_ggml.py. Per layer:
                         att.{key,value,receptance,output}.weight [D, D], ffn.key.weight [4D, D],
                         ffn.value.weight [D, 4D], ffn.receptance.weight [D, D], time_mix_* [1,1,D],
                         time_decay / time_first [D]; emb and head [V, D]; ln0 in block 0.

Weights are drawn as GPT-2 initialises them (normal, std 0.02; residual projections 0.02 /
sqrt(2 n_layer); norms 1, biases 0) from --seed, so a rerun writes the same bytes. RWKV-4's
time_decay spans -5..3 per channel and its time_mix lies in (0, 1), as in trained checkpoints,
so its recurrence stays finite. Only the shapes matter: the benchmark measures speed.
Needs PyTorch (Debian python3-torch) only.
"""
import argparse
import math
import os
import struct
import sys

import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "scripts"))
sys.path.insert(0, os.path.join(ROOT, "bench", "scale"))
from make_hf_fixtures import write_checkpoint, write_json  # noqa: E402
from make_hub_models import byte_level_bpe, normal  # noqa: E402


def gpt2_weights(a, gen):
    """GPT2Model's state dict (no "transformer." prefix), fp32, Conv1D weights [in, out]."""
    D, L, V, P = a.d_model, a.n_layer, a.vocab, a.n_positions
    resid = 0.02 / math.sqrt(2 * L)
    W = {"wte.weight": normal(gen, V, D), "wpe.weight": normal(gen, P, D, std=0.01),
         "ln_f.weight": torch.ones(D), "ln_f.bias": torch.zeros(D)}
    for i in range(L):
        p = "h.%d." % i
        W[p + "ln_1.weight"], W[p + "ln_1.bias"] = torch.ones(D), torch.zeros(D)
        W[p + "ln_2.weight"], W[p + "ln_2.bias"] = torch.ones(D), torch.zeros(D)
        W[p + "attn.c_attn.weight"] = normal(gen, D, 3 * D)
        W[p + "attn.c_attn.bias"] = torch.zeros(3 * D)
        W[p + "attn.c_proj.weight"] = normal(gen, D, D, std=resid)
        W[p + "attn.c_proj.bias"] = torch.zeros(D)
        W[p + "mlp.c_fc.weight"] = normal(gen, D, 4 * D)
        W[p + "mlp.c_fc.bias"] = torch.zeros(4 * D)
        W[p + "mlp.c_proj.weight"] = normal(gen, 4 * D, D, std=resid)
        W[p + "mlp.c_proj.bias"] = torch.zeros(D)
    return W


def write_gpt2_hf(d, a, W):
    os.makedirs(d, exist_ok=True)
    tok, eos = byte_level_bpe(a.vocab, a.n_positions)
    config = {"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"],
              "attn_pdrop": 0.0, "bos_token_id": eos, "embd_pdrop": 0.0, "eos_token_id": eos,
              "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "model_type": "gpt2",
              "n_ctx": a.n_positions, "n_embd": a.d_model, "n_head": a.n_head, "n_inner": None,
              "n_layer": a.n_layer, "n_positions": a.n_positions,
              "reorder_and_upcast_attn": False, "resid_pdrop": 0.0,
              "scale_attn_by_inverse_layer_idx": False, "scale_attn_weights": True,
              "tie_word_embeddings": True, "torch_dtype": "float32",
              "transformers_version": "4.44.2", "use_cache": True, "vocab_size": a.vocab}
    write_json(os.path.join(d, "config.json"), config)
    write_checkpoint(d, W, 1)
    write_json(os.path.join(d, "tokenizer.json"), tok)
    write_json(os.path.join(d, "tokenizer_config.json"),
               {"eos_token": "<|endoftext|>", "bos_token": "<|endoftext|>",
                "model_max_length": a.n_positions, "tokenizer_class": "GPT2Tokenizer"})
    return tok


def ggml_name(hf):
    """GPT2Model's tensor name -> the name examples/gpt-2 looks up."""
    if not hf.startswith("h."):
        return {"wte.weight": "model/wte", "wpe.weight": "model/wpe",
                "ln_f.weight": "model/ln_f/g", "ln_f.bias": "model/ln_f/b"}[hf]
    _, i, rest = hf.split(".", 2)
    module, kind = rest.rsplit(".", 1)
    suffix = {"ln_1": {"weight": "g", "bias": "b"}, "ln_2": {"weight": "g", "bias": "b"}}.get(
        module, {"weight": "w", "bias": "b"})[kind]
    return "model/h%s/%s/%s" % (i, module.replace(".", "/"), suffix)


def token_strings(tok, vocab):
    """Each id's string as tokenizer.json spells it (GPT-2's byte-level symbols), UTF-8. The
    example's own converter writes the raw bytes instead; nothing here tokenizes text, so the
    vocabulary only has to have n_vocab entries."""
    out = [b""] * vocab
    for s, i in tok["model"]["vocab"].items():
        out[i] = s.encode()
    for t in tok["added_tokens"]:
        out[t["id"]] = t["content"].encode()
    return out


def write_gpt2_ggml(path, a, W, tok):
    with open(path, "wb") as f:
        f.write(struct.pack("<7i", 0x67676D6C, a.vocab, a.n_positions, a.d_model, a.n_head,
                            a.n_layer, 0))
        words = token_strings(tok, a.vocab)
        f.write(struct.pack("<i", len(words)))
        for w in words:
            f.write(struct.pack("<I", len(w)) + w)
        for hf in sorted(W, key=lambda n: (n.startswith("h."), n)):
            t = W[hf]
            if t.dim() == 2 and hf.startswith("h."):
                t = t.t()  # Conv1D [in, out] -> [out, in]
            t = t.contiguous().float()
            name = ggml_name(hf).encode()
            f.write(struct.pack("<3i", t.dim(), len(name), 0))
            f.write(struct.pack("<%di" % t.dim(), *reversed(t.shape)))
            f.write(name)
            f.write(t.numpy().tobytes())


def rwkv4_weights(a, gen):
    D, L, V = a.d_model, a.n_layer, a.vocab
    W = {"emb.weight": normal(gen, V, D), "blocks.0.ln0.weight": torch.ones(D),
         "blocks.0.ln0.bias": torch.zeros(D), "ln_out.weight": torch.ones(D),
         "ln_out.bias": torch.zeros(D), "head.weight": normal(gen, V, D)}
    for i in range(L):
        p = "blocks.%d." % i
        for ln in ("ln1", "ln2"):
            W[p + ln + ".weight"], W[p + ln + ".bias"] = torch.ones(D), torch.zeros(D)
        W[p + "att.time_decay"] = torch.linspace(-5, 3, D)
        W[p + "att.time_first"] = torch.full((D,), math.log(0.3))
        for m in ("k", "v", "r"):
            W[p + "att.time_mix_" + m] = torch.rand(1, 1, D, generator=gen)
        for m in ("key", "value", "receptance", "output"):
            W[p + "att.%s.weight" % m] = normal(gen, D, D)
        for m in ("k", "r"):
            W[p + "ffn.time_mix_" + m] = torch.rand(1, 1, D, generator=gen)
        W[p + "ffn.key.weight"] = normal(gen, 4 * D, D)
        W[p + "ffn.receptance.weight"] = normal(gen, D, D)
        W[p + "ffn.value.weight"] = normal(gen, D, 4 * D)
    return W


def rwkv52_weights(a, gen, head_size=64):
    """RWKV-5.2 (Eagle) of the same shape, to check which version rwkv.cpp runs faster: v4's
    tensors plus a gate [D, D] and time_mix_g per layer, a group norm ln_x, and per-head
    time_decay / time_faaaa [H, head_size] in place of time_first."""
    W, D = rwkv4_weights(a, gen), a.d_model
    H = D // head_size
    for i in range(a.n_layer):
        p = "blocks.%d.att." % i
        del W[p + "time_first"]
        W[p + "time_decay"] = torch.linspace(-5, 3, D).view(H, head_size)
        W[p + "time_faaaa"] = torch.full((H, head_size), 0.3)
        W[p + "time_mix_g"] = torch.rand(1, 1, D, generator=gen)
        W[p + "gate.weight"] = normal(gen, D, D)
        W[p + "ln_x.weight"], W[p + "ln_x.bias"] = torch.ones(D), torch.zeros(D)
    return W


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="directory to write the models under")
    ap.add_argument("--d-model", type=int, default=512)
    ap.add_argument("--n-layer", type=int, default=6)
    ap.add_argument("--n-head", type=int, default=8)
    ap.add_argument("--vocab", type=int, default=8192)
    ap.add_argument("--n-positions", type=int, default=4224, help="GPT-2's learned positions")
    ap.add_argument("--seed", type=int, default=35)
    ap.add_argument("--rwkv52", action="store_true",
                    help="also write OUT/rwkv5.pth, an RWKV-5.2 of the same shape")
    a = ap.parse_args()
    if a.d_model % a.n_head or a.d_model % 32:
        ap.error("--d-model must be a multiple of --n-head and of 32 (Q8_0 blocks)")
    if a.vocab < 258:
        ap.error("--vocab must be at least 258 (256 bytes, a merge, <|endoftext|>)")
    os.makedirs(a.out, exist_ok=True)
    W = gpt2_weights(a, torch.Generator().manual_seed(a.seed))
    tok = write_gpt2_hf(os.path.join(a.out, "gpt2-hf"), a, W)
    write_gpt2_ggml(os.path.join(a.out, "gpt2-ggml-f32.bin"), a, W, tok)
    torch.save(rwkv4_weights(a, torch.Generator().manual_seed(a.seed + 1)),
               os.path.join(a.out, "rwkv4.pth"))
    if a.rwkv52:
        torch.save(rwkv52_weights(a, torch.Generator().manual_seed(a.seed + 2)),
                   os.path.join(a.out, "rwkv5.pth"))
    n = sum(t.numel() for t in W.values())
    print("make_models: D %d, %d layers, vocab %d: GPT-2 %.1fM parameters (%.0f MB fp32) -> %s"
          % (a.d_model, a.n_layer, a.vocab, n / 1e6, 4 * n / 1e6, a.out), file=sys.stderr)


if __name__ == "__main__":
    main()
