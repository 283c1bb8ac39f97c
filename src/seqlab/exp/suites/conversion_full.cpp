// Suite `conversion_full`: the conversion grid on the shipped in-house teacher (models/teacher-en,
// a Llama-layout softmax LM pretrained by seqlab on Debian-packaged English, BPE 8192), issue 33.
//
// Per seed (3): the control (the teacher finetuned for the same tokens); T2R, Hedgehog with and
// without attention transfer, ELU+1, RFA; the LoLCATs hybrid (softmax over the last 64 tokens +
// Hedgehog, output-matching transfer), gated Hedgehog (Liger-style key gate), the hybrid with a
// KL-to-teacher term, and LoRA / Tied-LoRA finetuning of the converted hybrid. Then each recurrent
// architecture trained from scratch on the tokens of teacher plus conversion, and generation
// speed / state memory. Every model is measured on valid and test, with perplexity by position
// out to 4x the teacher's context on test. The report is exp/suites/conversion_full_report.cpp.
//
// Cells are ordered seed by seed, scratch baselines last, so an interrupted run has whole seeds;
// every cell resumes (train checkpoints every 50 steps) and a rerun skips finished cells.
#include "seqlab/convert/convert.h"
#include "seqlab/core/error.h"
#include "seqlab/exp/grid.h"
#include "seqlab/exp/suites/suites.h"
#include "seqlab/model/adapters.h"
#include "seqlab/model/model_config.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/tasks/task.h"
#include "seqlab/train/launch.h"
#include "seqlab/train/trainer.h"

#include <fmt/format.h>

#include <filesystem>
#include <sstream>

namespace seqlab {

std::string conversion_full_report(const std::vector<nlohmann::json>& rows,
                                   const std::string& plot_dir);

namespace {

constexpr const char* kTeacherDir = "models/teacher-en";

struct Teacher {
  std::string dir;     // kTeacherDir, or its absolute path when found beside the executable
  std::string corpus;  // its task's corpus, files made absolute when dir is
  nlohmann::json model, task;
  int64_t tokens = 0, context = 0, batch = 0;
};

// Where the shipped teacher is: models/teacher-en under the working directory (the repository
// root, where the grid runs: its corpus paths are relative to it), else in the repository the
// executable was built in (build/seqlab, build/tests_*), so the grid can be listed and checked
// from anywhere.
std::string find_teacher() {
  namespace fs = std::filesystem;
  if (fs::exists(fs::path(kTeacherDir) / kConfigFile)) return kTeacherDir;
  const auto beside = fs::path(self_executable()).parent_path().parent_path() / kTeacherDir;
  SEQLAB_CHECK(fs::exists(beside / kConfigFile),
               "suite conversion_full: {} not found; run it from the repository root",
               (fs::path(kTeacherDir) / kConfigFile).string());
  return beside.lexically_normal().string();
}

// The shipped teacher's model and task sections and the tokens it was pretrained on.
Teacher read_teacher() {
  Teacher t;
  t.dir = find_teacher();
  const auto j = read_config_json(t.dir);
  t.model = j.at("model");
  t.task = j.at("task");
  const auto train = TrainConfig::from_json(j.at("train"), t.dir);
  const auto task = TaskConfig::from_json(t.task, t.dir);
  t.tokens = train.steps * train.batch * task.max_len;
  t.batch = train.batch;
  // The corpus files are relative to the repository root (the teacher's own run): found beside
  // the executable, they are made absolute too.
  t.corpus = task.corpus;
  if (t.dir != kTeacherDir) {
    const auto root = std::filesystem::path(t.dir).parent_path().parent_path();
    std::string joined, item;
    std::stringstream ss(task.corpus);
    while (std::getline(ss, item, ','))
      joined +=
          (joined.empty() ? "" : ",") +
          (item == "wordnet" || std::filesystem::path(item).is_absolute() ? item
                                                                          : (root / item).string());
    t.corpus = joined;
  }
  t.context = task.max_len;
  return t;
}

// The learning rate the seed-0 check picks for the control on valid (add_lr_check): the one
// the teacher's cosine ended at. The control runs at it for every seed.
constexpr double kTunedLr = 1.5e-4;
constexpr const char* kTunedLrTag = "1.5e-4";

struct Budget {
  bool quick;
  int64_t ft_steps, batch, distill_steps, scratch_steps, scratch_batch;
  double lr, adapter_lr;
  std::vector<uint64_t> seeds;

  // Tokens of one attention / output transfer.
  int64_t transfer_tokens(const Teacher& t) const { return distill_steps * batch * t.context; }
};

nlohmann::json train_section(int64_t steps, int64_t batch, double lr, uint64_t seed) {
  auto t = grid_train(steps, batch, lr, seed);
  t["eval_every"] = std::max<int64_t>(1, steps / 5);
  t["eval_size"] = 32;
  t["eval_tokens"] = 16384;
  t["warmup"] = std::max<int64_t>(1, steps / 10);
  t["checkpoint_every"] = 50;
  t["log_every"] = 10;
  return t;
}

// A finetuning cell of `method` for `seed` at learning rate `lr`: from the teacher, or (`from` a
// cell id) from that cell's converted model, whose transfer tokens then count in its base.
nlohmann::json finetune_cell(const Budget& b, const Teacher& t, const nlohmann::json& eval,
                             const std::string& method, const std::string& label,
                             const std::string& init, uint64_t seed, double lr,
                             const std::string& from = "") {
  nlohmann::json c = {{"id", fmt::format("{}_s{}", method, seed)},
                      {"kind", "lm_finetune"},
                      {"label", label},
                      {"method", method},
                      {"init", init},
                      {"after", {"teacher"}},
                      {"from", "teacher/model"},
                      {"base_tokens", t.tokens},
                      {"train", train_section(b.ft_steps, b.batch, lr, seed)},
                      {"eval", eval}};
  if (!from.empty()) {
    c["after"] = {from};
    c["from"] = from + "/converted";
    c["base_tokens"] = t.tokens + b.transfer_tokens(t);
  }
  return c;
}

// One seed's conversion cells: each method's label, init and convert / adapter / kl sections.
void add_seed(SuiteSpec& s, const Budget& b, const Teacher& t, uint64_t seed,
              const nlohmann::json& eval) {
  const auto hybrid = fmt::format("hybrid_s{}", seed);
  auto cell = [&](const std::string& method, const std::string& label, const std::string& init) {
    return finetune_cell(b, t, eval, method, label, init, seed, b.lr);
  };
  s.cells.push_back(cell("control", "teacher + same finetuning (control)", "control"));
  // The control at the tuned rate: seeds 1, 2 (seed 0 is the lr check's own cell), so the tuned
  // control has three seeds like every method.
  if (seed > 0 && !b.quick)
    s.cells.push_back(finetune_cell(b, t, eval, std::string("control_lr") + kTunedLrTag,
                                    fmt::format("control, lr {} (lr check)", kTunedLrTag),
                                    "control", seed, kTunedLr));
  auto conv = [&](const std::string& to, int64_t window, const std::string& gate,
                  const std::string& transfer, int64_t distill) {
    ConvertConfig cc;
    cc.to = to;
    cc.window = window;
    cc.gate = gate;
    cc.transfer = transfer;
    cc.distill_steps = distill;
    cc.distill_batch = b.batch;
    cc.init_seed = 1 + seed;
    cc.distill_seed = seed;
    return cc.to_json();
  };
  struct M {
    std::string method, label;
    nlohmann::json convert;
  };
  const std::vector<M> ms = {
      {"t2r", "T2R", conv("t2r", 0, "none", "weights", 0)},
      {"hedgehog", "Hedgehog, no transfer", conv("hedgehog", 0, "none", "weights", 0)},
      {"hedgehog_at", "Hedgehog + attention transfer",
       conv("hedgehog", 0, "none", "weights", b.distill_steps)},
      {"elu", "ELU+1", conv("elu1", 0, "none", "weights", 0)},
      {"rfa", "RFA", conv("rfa", 0, "none", "weights", 0)},
      {"hybrid", "Hybrid W=64 + output transfer",
       conv("hybrid", 64, "none", "output", b.distill_steps)},
      {"gla", "Gated Hedgehog (key gate) + attention transfer",
       conv("hybrid", 0, "key", "weights", b.distill_steps)},
  };
  for (const auto& m : ms) {
    auto c = cell(m.method, m.label, "converted");
    c["convert"] = m.convert;
    s.cells.push_back(c);
  }
  // From the hybrid's converted model (the same transfer): KL-to-teacher finetuning, LoRA and
  // Tied-LoRA.
  auto kl =
      finetune_cell(b, t, eval, "hybrid_kl", "Hybrid W=64 + output transfer, finetuned with KL",
                    "converted", seed, b.lr, hybrid);
  kl["after"] = {"teacher", hybrid};
  kl["kl"] = {{"teacher", "teacher/model"}, {"weight", 1.0}, {"temperature", 1.0}};
  s.cells.push_back(kl);
  for (const char* kind : {"lora", "tied_lora"}) {
    AdapterConfig ac;
    ac.kind = kind;
    ac.rank = 16;
    ac.targets = "q,k,v,o,gate,up,down";  // the teacher's SwiGLU MLP
    ac.seed = 7 + seed;
    auto c = finetune_cell(b, t, eval, std::string("hybrid_") + kind,
                           std::string("Hybrid W=64 + output transfer, ") +
                               (std::string(kind) == "lora" ? "LoRA" : "Tied-LoRA"),
                           "converted", seed, b.adapter_lr, hybrid);
    c["adapter"] = ac.to_json();
    s.cells.push_back(c);
  }
}

// The finetuning learning rate, checked on seed 0 (valid split): the control and the hybrid at
// kTunedLr (where the teacher's cosine ended) and at twice the grid's rate. Re-warming the teacher
// to the grid's 5e-4 may cost the control some quality; these rows say how much. The pure linear
// maps start far from the teacher, so theirs is checked upwards (2x and 4x the grid's rate), for
// T2R and the two best maps: a linear map must not lose to the hybrid for want of a tuned rate.
void add_lr_check(SuiteSpec& s, const Budget& b, const Teacher& t, const nlohmann::json& eval) {
  for (const auto& [lr, tag] :
       std::vector<std::pair<double, std::string>>{{kTunedLr, kTunedLrTag}, {1e-3, "1e-3"}})
    for (const bool hybrid : {false, true})
      s.cells.push_back(
          finetune_cell(b, t, eval, std::string(hybrid ? "hybrid" : "control") + "_lr" + tag,
                        std::string(hybrid ? "Hybrid W=64 + output transfer" : "control") +
                            ", lr " + tag + " (lr check)",
                        hybrid ? "converted" : "control", 0, lr, hybrid ? "hybrid_s0" : ""));
  struct Linear {
    std::string method, label;
    int64_t transfer_steps;  // its conversion's transfer (counted in the base tokens)
  };
  const std::vector<Linear> linear = {
      {"t2r", "T2R", 0},
      {"hedgehog_at", "Hedgehog + attention transfer", b.distill_steps},
      {"gla", "Gated Hedgehog (key gate) + attention transfer", b.distill_steps}};
  for (const auto& [lr, tag] :
       std::vector<std::pair<double, std::string>>{{1e-3, "1e-3"}, {2e-3, "2e-3"}})
    for (const auto& m : linear) {
      auto c =
          finetune_cell(b, t, eval, m.method + "_lr" + tag, m.label + ", lr " + tag + " (lr check)",
                        "converted", 0, lr, m.method + "_s0");
      c["base_tokens"] = t.tokens + m.transfer_steps * b.batch * t.context;
      s.cells.push_back(c);
    }
}

// Each recurrent architecture from random initialisation, on the teacher's tokens plus one
// conversion's (transfer + finetuning), in the teacher's shape.
void add_scratch(SuiteSpec& s, const Budget& b, const Teacher& t, uint64_t seed,
                 const nlohmann::json& eval) {
  // The teacher's task names its tokenizer "bpe" (the one inside its model directory).
  auto scratch_task = t.task;
  scratch_task["tokenizer"] = t.dir;
  scratch_task["corpus"] = t.corpus;
  struct A {
    std::string method, label;
    nlohmann::json extra;
  };
  for (const auto& a : std::vector<A>{
           {"scratch_t2r", "T2R, from scratch", {{"arch", "t2r"}}},
           {"scratch_hedgehog", "Hedgehog, from scratch", {{"arch", "hedgehog"}}},
           {"scratch_elu", "ELU+1, from scratch", {{"arch", "elu1"}}},
           {"scratch_rfa", "RFA, from scratch", {{"arch", "rfa"}}},
           {"scratch_gla",
            "Gated Hedgehog, from scratch",
            {{"arch", "hybrid"}, {"feature_map", "hedgehog"}, {"window", 0}, {"gate", "key"}}},
           {"scratch_hybrid",
            "Hybrid W=64, from scratch",
            {{"arch", "hybrid"}, {"feature_map", "hedgehog"}, {"window", 64}}},
       }) {
    auto model = t.model;
    for (auto it = a.extra.begin(); it != a.extra.end(); ++it) model[it.key()] = it.value();
    model["d_feature"] = 0;
    model["init_seed"] = 1234 + seed;
    model = ModelConfig::from_json(model, "conversion_full " + a.method).to_json();
    s.cells.push_back({{"id", fmt::format("{}_s{}", a.method, seed)},
                       {"kind", "lm_train"},
                       {"label", a.label},
                       {"method", a.method},
                       {"init", "scratch"},
                       {"model", model},
                       {"task", scratch_task},
                       {"train", train_section(b.scratch_steps, b.scratch_batch, 1e-3, seed)},
                       {"eval", eval}});
  }
}

}  // namespace

SuiteSpec conversion_full_suite(bool quick) {
  SuiteSpec s;
  s.name = "conversion_full";
  s.description =
      "The conversion grid on the shipped teacher (models/teacher-en): T2R, Hedgehog +/- "
      "transfer, ELU+1, RFA, LoLCATs hybrid W=64, gated Hedgehog, KL distillation, LoRA / "
      "Tied-LoRA, x3 seeds, against the control and scratch baselines; valid/test perplexity, "
      "by position to 4x context, speed and memory.";
  s.claims = conversion_claims();
  const Teacher t = read_teacher();
  Budget b;
  b.quick = quick;
  b.ft_steps = quick ? 4 : 200;
  b.batch = 8;
  b.distill_steps = quick ? 2 : 100;
  b.lr = 5e-4;
  b.adapter_lr = 2e-3;
  b.seeds = quick ? std::vector<uint64_t>{0} : std::vector<uint64_t>{0, 1, 2};
  // Scratch: the teacher's tokens plus one conversion's, in the teacher's batches.
  b.scratch_batch = t.batch;
  const int64_t conv_tokens = b.ft_steps * b.batch * t.context + b.transfer_tokens(t);
  b.scratch_steps = quick ? 4 : (t.tokens + conv_tokens) / (b.scratch_batch * t.context);
  const nlohmann::json eval = {{"context", t.context},
                               {"max_tokens", quick ? 4096 : 131072},
                               {"test", true},
                               {"position_context", 4 * t.context},
                               {"position_bucket", t.context / 4}};
  s.cells.push_back({{"id", "teacher"},
                     {"kind", "lm_external"},
                     {"label", "teacher (softmax, pretrained)"},
                     {"method", "teacher"},
                     {"init", "teacher"},
                     {"path", t.dir},
                     {"base_tokens", 0},
                     {"eval", eval}});
  // Seed 0, then the learning-rate check, then the other seeds: an interrupted run has whole
  // seeds and the check early.
  for (auto seed : b.seeds) {
    add_seed(s, b, t, seed, eval);
    if (seed == 0 && !quick) add_lr_check(s, b, t, eval);
  }
  nlohmann::json models = nlohmann::json::array(
      {{{"label", "teacher (softmax, KV cache)"}, {"from", "teacher/model"}}});
  nlohmann::json after = {"teacher"};
  for (const char* m : {"t2r", "hedgehog_at", "hybrid", "gla"}) {
    models.push_back({{"label", m}, {"from", fmt::format("{}_s0/model", m)}});
    after.push_back(fmt::format("{}_s0", m));
  }
  s.cells.push_back({{"id", "bench"},
                     {"kind", "lm_bench"},
                     {"after", after},
                     {"models", models},
                     {"contexts", {t.context, 4 * t.context}}});
  for (auto seed : b.seeds) add_scratch(s, b, t, seed, eval);
  s.custom_report = conversion_full_report;
  return s;
}

}  // namespace seqlab
