// seqlab import-hf / export-hf: Hugging Face directories (GPT-2, Llama, Mistral, Qwen2, GPT-NeoX)
// <-> seqlab model directories (src/seqlab/model/hf_import.h; one file per family has its
// tensor mapping).
#include "commands.h"

#include "seqlab/model/hf_import.h"

#include <fmt/format.h>

#include <memory>

namespace seqlab::cli {

namespace {

struct HfArgs {
  std::string in, out;
  int64_t max_context = 0;
  Common common;
};

std::string describe(const HfConversion& r) {
  const auto& c = r.model.config;
  const std::string kv =
      c.mixer.kv_heads() == c.mixer.n_head ? "" : fmt::format(" ({} kv heads)", c.mixer.kv_heads());
  return fmt::format("{}: {} layers, d_model {}, {} heads{}, vocab {}, context {}, {:.1f}M params",
                     hf_family_name(r.model_type), c.n_layer, c.mixer.d_model, c.mixer.n_head, kv,
                     c.vocab_size, c.mixer.max_len, count_parameters(*r.model.model) / 1e6);
}

}  // namespace

void add_hf_commands(CLI::App& app, Actions& actions) {
  auto im = std::make_shared<HfArgs>();
  auto* import_cmd = app.add_subcommand(
      "import-hf",
      "convert a Hugging Face checkpoint (GPT-2, Llama, Mistral, Qwen2, GPT-NeoX) into "
      "a seqlab model directory");
  import_cmd->footer(
      "The HF directory is what transformers' save_pretrained writes: config.json and\n"
      "model.safetensors (or a sharded model.safetensors.index.json), F32/F16/BF16. config.json's\n"
      "model_type picks the family: gpt2 (GPT2LMHeadModel), llama, mistral, qwen2\n"
      "(LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM) or gpt_neox (GPTNeoXForCausalLM,\n"
      "Pythia). The result is a softmax-attention seqlab model whose logits equal the "
      "checkpoint's.\n"
      "A tokenizer.json beside it is copied, and the task becomes {\"task\": \"lm\", "
      "\"tokenizer\":\n"
      "\"hf\"} (GPT-2's 50257-token vocabulary: \"gpt2\"). What seqlab cannot reproduce exactly "
      "is\n"
      "refused by name: rope_scaling, quantized checkpoints, Qwen2's sliding window, GPT-2 with "
      "an\n"
      "untied head, ... (docs/hf_import.md).\n"
      "Example: seqlab import-hf --hf ~/models/pythia-70m --out runs/pythia-70m");
  import_cmd->add_option("--hf", im->in, "Hugging Face model directory to read")->required();
  import_cmd
      ->add_option("--out", im->out,
                   "seqlab model directory to write (must not exist, or be empty)")
      ->required();
  import_cmd
      ->add_option("--max-context", im->max_context,
                   "cap the context (the KV cache is allocated for all of it; RoPE models only; "
                   "0 = the checkpoint's max_position_embeddings)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  im->common.add(import_cmd, /*with_threads=*/false);
  actions.push_back({import_cmd, [im] {
                       im->common.apply();
                       auto r = import_hf(im->in, im->out, im->max_context);
                       fmt::print("imported {}\n{}\n", describe(r), im->out);
                       return 0;
                     }});

  auto ex = std::make_shared<HfArgs>();
  auto* export_cmd = app.add_subcommand(
      "export-hf",
      "write a seqlab model as a Hugging Face directory (GPT-2, Llama, Qwen2, GPT-NeoX)");
  export_cmd->footer(
      "The family follows from the model: RoPE + RMSNorm + SwiGLU -> llama (qwen2 when q/k/v have\n"
      "biases and the output projection none), RoPE + LayerNorm + plain MLP -> gpt_neox, learned\n"
      "positions + LayerNorm + plain MLP with a tied head -> gpt2. The model must be a causal\n"
      "softmax-attention LM; others are refused with the reason. Adapters are merged first. The\n"
      "output (F32) loads with transformers' AutoModelForCausalLM.from_pretrained(out); the\n"
      "model directory's tokenizer.json, if any, is copied.\n"
      "Example: seqlab export-hf --model runs/pythia-70m --out ~/models/pythia-70m-seqlab");
  export_cmd->add_option("--model", ex->in, "seqlab model directory to read")->required();
  export_cmd->add_option("--out", ex->out, "HF directory to write (must not exist, or be empty)")
      ->required();
  ex->common.add(export_cmd, /*with_threads=*/false);
  actions.push_back({export_cmd, [ex] {
                       ex->common.apply();
                       auto r = export_hf(ex->in, ex->out);
                       fmt::print("exported {}\n{}\n", describe(r), ex->out);
                       return 0;
                     }});
}

}  // namespace seqlab::cli
