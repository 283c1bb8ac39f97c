// seqlab quantize: a model directory -> a copy whose matrices are stored as bf16 or int8 (issue 35;
// the format: src/seqlab/model/quantized_dir.h, docs/DESIGN.md "Data and file formats").
//
// The new directory is written beside --out under a temporary name and renamed into place once
// complete, so a killed run leaves no half-written model. The source's other files (tokenizer,
// learning curve, anything else) are copied; the resume point and SWAG moments, which describe the
// fp32 weights of a training run, are left behind. Unmerged adapters are merged first.
#include "commands.h"

#include "seqlab/core/error.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/model/quantized_dir.h"
#include "seqlab/train/swag.h"
#include "seqlab/train/trainer.h"

#include <fmt/format.h>

#include <filesystem>
#include <iostream>

namespace seqlab::cli {

namespace {

namespace fs = std::filesystem;

struct QuantizeArgs {
  std::string model, out, to;
  bool force = false, json = false;
  Common common;
};

// Absolute, symbolic links resolved, no trailing separator.
fs::path normal(const std::string& p) {
  auto c = fs::weakly_canonical(fs::absolute(p));
  return c.has_filename() ? c : c.parent_path();
}

bool inside(const std::string& p, const std::string& dir) {
  const auto a = normal(p), d = normal(dir);
  for (auto ia = a.begin(), id = d.begin(); id != d.end(); ++ia, ++id)
    if (ia == a.end() || *ia != *id) return false;
  return true;
}

// --out must be new, empty, or (with --force) a model directory to replace; never the source or a
// directory holding it.
void check_out(const QuantizeArgs& a) {
  SEQLAB_CHECK(!inside(a.model, a.out), "--out {} holds --model {}; choose a new directory", a.out,
               a.model);
  SEQLAB_CHECK(!inside(a.out, a.model), "--out {} is inside --model {}; choose a new directory",
               a.out, a.model);
  if (!fs::exists(a.out)) return;
  SEQLAB_CHECK(fs::is_directory(a.out), "--out {} exists and is not a directory", a.out);
  if (fs::is_empty(a.out)) return;
  SEQLAB_CHECK(a.force, "--out {} exists and is not empty (--force replaces a model directory)",
               a.out);
  SEQLAB_CHECK(fs::exists(fs::path(a.out) / kConfigFile),
               "--out {} is not a model directory (no {}); --force only replaces one", a.out,
               kConfigFile);
}

// Everything in the source directory but the weights, the config and the fp32 training state.
void copy_other_files(const fs::path& from, const fs::path& to) {
  for (const auto& e : fs::directory_iterator(from)) {
    const auto name = e.path().filename().string();
    if (name == kConfigFile || name == kWeightsFile || name == kTrainStateFile ||
        name == kSwagFile || name.find(".tmp-") != std::string::npos)
      continue;
    fs::copy(e.path(), to / name, fs::copy_options::recursive);
  }
}

int run_quantize(const QuantizeArgs& a) {
  a.common.apply();
  const WeightFormat f = parse_weight_format(a.to);
  SEQLAB_CHECK(f != WeightFormat::f32,
               "--to f32: quantize stores bf16 or int8 (seqlab pack --dtype f32 writes fp32)");
  check_out(a);
  auto m = load_model_dir(a.model);
  if (m.model->adapters) {
    log_info("merging the unmerged adapters of {} into its weights first", a.model);
    m.model->merge_adapters();
  }
  // Written under a temporary name beside --out, then renamed into place.
  const fs::path out = normal(a.out);
  const fs::path tmp = out.parent_path() / (out.filename().string() + ".tmp-quantize");
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  EncodeStats stats;
  int64_t n_tensors = 0;
  try {
    copy_other_files(a.model, tmp);
    save_stored_model_dir(tmp.string(), *m.model, m.sections, f, &stats);
    n_tensors = static_cast<int64_t>(model_tensors(*m.model).size());
    if (fs::exists(out)) fs::remove_all(out);
    fs::rename(tmp, out);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
  const auto before = fs::file_size(fs::path(a.model) / kWeightsFile);
  const auto after = fs::file_size(out / kWeightsFile);
  log_info(
      "quantized {} -> {}: {} of {} tensors as {}, weights {:.2f} MB -> {:.2f} MB, max |error| "
      "{:.3g}",
      a.model, a.out, stats.matrices, n_tensors, a.to, before / 1e6, after / 1e6,
      stats.max_abs_error);
  if (a.json)
    std::cout << nlohmann::json{{"model", a.model},
                                {"out", a.out},
                                {"weights", a.to},
                                {"bytes_before", before},
                                {"bytes_after", after},
                                {"tensors", n_tensors},
                                {"tensors_quantized", stats.matrices},
                                {"max_abs_error", stats.max_abs_error}}
                     .dump()
              << "\n";
  return 0;
}

}  // namespace

void add_quantize_commands(CLI::App& app, Actions& actions) {
  auto qa = std::make_shared<QuantizeArgs>();
  auto* cmd = app.add_subcommand(
      "quantize",
      "write a copy of a model directory whose matrices are stored as int8 (blocks of 32 with an "
      "fp32 scale each) or bf16; every command loads it (as fp32)");
  cmd->footer(
      "Stored format: config.json gains \"weights\": {\"format\": \"int8\", \"block\": 32} (or "
      "{\"format\": \"bf16\"}) beside \"model\". In model.safetensors every 2-D *.weight tensor "
      "(the mixers' and MLPs' projections, the embedding, an untied head) of shape [out, in] is "
      "stored as <name> I8 [out, in] plus <name>_scale F32 [out, ceil(in/32)] (w = q * scale, one "
      "scale per block of 32 inputs), or as <name> BF16 [out, in]; every other tensor (norms, "
      "biases, gates) stays F32. Unmerged adapters are merged first. The tokenizer and other files "
      "are copied; train_state.safetensors and swag.safetensors are not.\n"
      "Example: seqlab quantize --model models/teacher-en --to int8 --out models/teacher-en-int8");
  cmd->add_option("--model", qa->model, "the model directory to quantize")->required();
  cmd->add_option("--to", qa->to, "stored weight format: int8 | bf16")->required();
  cmd->add_option("--out", qa->out, "new model directory to write")->required();
  cmd->add_flag("--force", qa->force, "replace --out when it already holds a model directory");
  cmd->add_flag("--json", qa->json,
                "print a JSON summary on stdout (bytes before/after, tensors quantized, max abs "
                "error)");
  qa->common.add(cmd);
  actions.push_back({cmd, [qa] { return run_quantize(*qa); }});
}

}  // namespace seqlab::cli
