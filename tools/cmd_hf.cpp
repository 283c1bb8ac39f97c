// seqlab import-hf / export-hf: Hugging Face GPT-2 directories <-> seqlab model directories
// (src/seqlab/model/hf_gpt2.h has the tensor mapping).
#include "commands.h"

#include "seqlab/model/hf_gpt2.h"

#include <fmt/format.h>

#include <memory>

namespace seqlab::cli {

namespace {

struct HfArgs {
  std::string in, out;
  Common common;
};

std::string describe(const LoadedModel& lm) {
  const auto& c = lm.config;
  return fmt::format("GPT-2: {} layers, d_model {}, {} heads, vocab {}, context {}, {:.1f}M params",
                     c.n_layer, c.mixer.d_model, c.mixer.n_head, c.vocab_size, c.mixer.max_len,
                     count_parameters(*lm.model) / 1e6);
}

}  // namespace

void add_hf_commands(CLI::App& app, Actions& actions) {
  auto im = std::make_shared<HfArgs>();
  auto* import_cmd = app.add_subcommand(
      "import-hf", "convert a Hugging Face GPT-2 directory into a seqlab model directory");
  import_cmd->footer(
      "The HF directory is what transformers' save_pretrained writes for GPT2LMHeadModel (or "
      "GPT2Model):\nconfig.json with model_type \"gpt2\" and model.safetensors (or a sharded "
      "model.safetensors.index.json).\nThe result is a softmax-attention seqlab model with learned "
      "positions, activation gelu_tanh and a tied\nlm head, whose logits equal GPT-2's. With "
      "GPT-2's vocabulary (50257) it records the task\n{\"task\": \"lm\", \"tokenizer\": "
      "\"gpt2\"}. Checkpoints seqlab cannot reproduce exactly (layer_norm_epsilon\nother than "
      "1e-5, n_inner not a multiple of n_embd, untied lm head, ...) are refused.\n"
      "Example: seqlab import-hf --hf ~/models/gpt2 --out runs/gpt2");
  import_cmd->add_option("--hf", im->in, "HF GPT-2 directory to read")->required();
  import_cmd
      ->add_option("--out", im->out,
                   "seqlab model directory to write (must not exist, or be empty)")
      ->required();
  im->common.add(import_cmd, /*with_threads=*/false);
  actions.push_back({import_cmd, [im] {
                       im->common.apply();
                       auto lm = import_hf_gpt2(im->in, im->out);
                       fmt::print("imported {}\n{}\n", describe(lm), im->out);
                       return 0;
                     }});

  auto ex = std::make_shared<HfArgs>();
  auto* export_cmd =
      app.add_subcommand("export-hf", "write a seqlab model as a Hugging Face GPT-2 directory");
  export_cmd->footer(
      "The model must be one GPT-2 can express: softmax attention, causal, with an MLP, learned "
      "positions\nand an lm head tied to the embedding (activation gelu_tanh -> gelu_new, gelu -> "
      "gelu). The output\nloads with transformers' GPT2LMHeadModel.from_pretrained(out).\n"
      "Example: seqlab export-hf --model runs/gpt2 --out ~/models/gpt2-seqlab");
  export_cmd->add_option("--model", ex->in, "seqlab model directory to read")->required();
  export_cmd->add_option("--out", ex->out, "HF directory to write (must not exist, or be empty)")
      ->required();
  ex->common.add(export_cmd, /*with_threads=*/false);
  actions.push_back({export_cmd, [ex] {
                       ex->common.apply();
                       auto lm = export_hf_gpt2(ex->in, ex->out);
                       fmt::print("exported {}\n{}\n", describe(lm), ex->out);
                       return 0;
                     }});
}

}  // namespace seqlab::cli
