// seqlab pack: a trained model directory -> a self-contained one to ship: weights stored in
// bf16 / f16 / f32, the tokenizer files copied in (so the directory works wherever it is moved),
// the learning curve kept, the resume state left behind.
#include "cli_fields.h"
#include "commands.h"

#include "seqlab/core/error.h"
#include "seqlab/model/model_dir.h"

#include <fmt/format.h>

#include <filesystem>
#include <iostream>

namespace seqlab::cli {

namespace {

namespace fs = std::filesystem;

struct PackArgs {
  std::string model, out, dtype = "bf16";
  bool json = false;
  Common common;
};

torch::ScalarType parse_dtype(const std::string& d) {
  if (d == "bf16") return torch::kBFloat16;
  if (d == "f16") return torch::kHalf;
  if (d == "f32") return torch::kFloat;
  fail("--dtype must be bf16, f16 or f32, got '{}'", d);
}

// Copies the tokenizer a task section names into out and returns the section pointing at it
// ("bpe" / "hf": the model directory's own files, model/model_task.h).
nlohmann::json local_tokenizer(nlohmann::json task, const std::string& from, const std::string& out) {
  if (!task.contains("tokenizer") || !task["tokenizer"].is_string()) return task;
  const std::string spec = task["tokenizer"].get<std::string>();
  auto copy = [&](const fs::path& src_dir, const char* name, bool required) {
    const auto src = src_dir / name;
    SEQLAB_CHECK(!required || fs::exists(src), "tokenizer file {} is missing", src.string());
    if (fs::exists(src))
      fs::copy_file(src, fs::path(out) / name, fs::copy_options::overwrite_existing);
  };
  // A bare directory names the tokenizer.json or the vocab.json + merges.txt it holds.
  const bool dir_hf = fs::is_directory(spec) && fs::exists(fs::path(spec) / "tokenizer.json");
  const bool dir_bpe = fs::is_directory(spec) && !dir_hf;
  if (spec.rfind("bpe:", 0) == 0 || dir_bpe) {
    const fs::path dir = dir_bpe ? spec : spec.substr(4);
    copy(dir, "vocab.json", true);
    copy(dir, "merges.txt", true);
    task["tokenizer"] = "bpe";
  } else if (spec == "hf" || spec.rfind("hf:", 0) == 0 || dir_hf) {
    fs::path file = spec == "hf" ? fs::path(from) / "tokenizer.json"
                    : dir_hf     ? fs::path(spec)
                                 : fs::path(spec.substr(3));
    if (fs::is_directory(file)) file /= "tokenizer.json";
    copy(file.parent_path(), "tokenizer.json", true);
    copy(file.parent_path(), "tokenizer_config.json", false);
    task["tokenizer"] = "hf";
  }
  return task;  // byte / gpt2 need no files
}

int run_pack(const PackArgs& a) {
  a.common.apply();
  const auto dtype = parse_dtype(a.dtype);
  SEQLAB_CHECK(fs::absolute(a.model).lexically_normal() != fs::absolute(a.out).lexically_normal(),
               "--out must differ from --model");
  SEQLAB_CHECK(!fs::exists(fs::path(a.out) / kConfigFile),
               "{} already holds a model; pack writes a new directory", a.out);
  auto m = load_model_dir(a.model);
  fs::create_directories(a.out);
  nlohmann::json sections = m.sections;
  if (sections.contains("task")) sections["task"] = local_tokenizer(sections["task"], a.model, a.out);
  const auto metrics = fs::path(a.model) / "metrics.jsonl";
  if (fs::exists(metrics))
    fs::copy_file(metrics, fs::path(a.out) / "metrics.jsonl", fs::copy_options::overwrite_existing);
  save_model_dir(a.out, *m.model, sections, dtype);
  const auto bytes = fs::file_size(fs::path(a.out) / kWeightsFile);
  if (a.json) {
    std::cout << nlohmann::json{{"out", a.out}, {"dtype", a.dtype}, {"weights_bytes", bytes}}.dump()
              << "\n";
    return 0;
  }
  fmt::print("packed {} -> {}: weights {} ({:.1f} MB)\n", a.model, a.out, a.dtype, bytes / 1e6);
  return 0;
}

}  // namespace

void add_pack_commands(CLI::App& app, Actions& actions) {
  auto pa = std::make_shared<PackArgs>();
  auto* cmd = app.add_subcommand(
      "pack",
      "write a self-contained copy of a model directory to ship: weights stored as bf16 (or f16 / "
      "f32), its tokenizer files copied in, the learning curve kept, the resume state left out");
  cmd->footer("Example: seqlab pack --model runs/teacher/model --out models/teacher --dtype bf16");
  cmd->add_option("--model", pa->model, "the model directory to pack")->required();
  cmd->add_option("--out", pa->out, "new model directory to write")->required();
  cmd->add_option("--dtype", pa->dtype, "weight storage: bf16 | f16 | f32")->capture_default_str();
  cmd->add_flag("--json", pa->json, "print a JSON summary on stdout");
  pa->common.add(cmd);
  actions.push_back({cmd, [pa] { return run_pack(*pa); }});
}

}  // namespace seqlab::cli
