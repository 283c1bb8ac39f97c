// Cell kind objectives (exp/cells/objectives.h): pretrain with one objective, then probe and
// finetune on the downstream tasks in every language.
#include "seqlab/exp/cells/objectives.h"

#include "seqlab/core/atomic_file.h"
#include "seqlab/core/blas_check.h"
#include "seqlab/core/error.h"
#include "seqlab/core/json_read.h"
#include "seqlab/core/log.h"
#include "seqlab/core/safetensors.h"
#include "seqlab/exp/cells/kinds.h"
#include "seqlab/methods/downstream.h"
#include "seqlab/tasks/task.h"

#include <chrono>
#include <filesystem>

namespace seqlab {

namespace fs = std::filesystem;

namespace {

constexpr const char* kPretrainedFile = "pretrained.safetensors";
// Downstream sentence streams: fixed, so every seed and objective is scored on the same data.
constexpr uint64_t kProbeStream = 0x70726f6265ULL, kFinetuneStream = 0x66696e65ULL,
                   kTestStream = 0x74657374ULL;

}  // namespace

nlohmann::json run_objectives(ObjectivesConfig cfg, const std::string& run_dir) {
  cfg.validate();
  set_compute_threads(static_cast<int>(cfg.threads));
  const auto t0 = std::chrono::steady_clock::now();
  Grammar g;
  PretrainModel m(cfg, g.vocab_size());
  ensure_dir(run_dir);
  const std::string path = (fs::path(run_dir) / kPretrainedFile).string();
  PretrainOutcome o;
  const std::string cfg_text = cfg.to_json().dump();
  if (fs::exists(path)) {
    auto f = load_safetensors(path);
    SEQLAB_CHECK(f.metadata.count("config") && f.metadata["config"] == cfg_text,
                 "{}: pretrained for another configuration; use a fresh directory", path);
    load_module_weights(m.module(), f.tensors, path);
    const auto j = parse_json(f.metadata.at("pretrain"), path);
    o.first_loss = j.at("first_loss").get<double>();
    o.last_loss = j.at("last_loss").get<double>();
    o.heldout_loss = j.at("heldout_loss").get<double>();
    o.seconds = j.at("seconds").get<double>();
    o.parameters = j.at("parameters").get<int64_t>();
    log_info("{}: pretrained weights found, downstream only", path);
  } else {
    o = pretrain(m, g, cfg);
    const nlohmann::json j = {{"first_loss", o.first_loss},
                              {"last_loss", o.last_loss},
                              {"heldout_loss", o.heldout_loss},
                              {"seconds", o.seconds},
                              {"parameters", o.parameters}};
    save_safetensors(path, module_weights(m.module()),
                     {{"config", cfg_text}, {"pretrain", j.dump()}});
  }
  const auto weights = module_weights(m.module());
  nlohmann::json rows = nlohmann::json::array();
  for (int l = 0; l < Grammar::kLanguages; ++l) {
    const auto& lang = g.language(l);
    const auto probe_train = downstream_data(g, l, cfg.probe_train, mix_seed(kProbeStream, l));
    const auto ft_train = downstream_data(g, l, cfg.ft_train, mix_seed(kFinetuneStream, l));
    const auto test = downstream_data(g, l, cfg.test_size, mix_seed(kTestStream, l));
    const auto words = (test.tags >= 0).sum().item<int64_t>();
    for (const std::string task : {"pos", "label"}) {
      const uint64_t head_seed = mix_seed(cfg.seed, static_cast<uint64_t>(l * 2 + (task == "pos")));
      auto row = [&](const std::string& mode, double acc) {
        ObjectivesRow r;
        r.objective = cfg.objective;
        r.stack = cfg.stack;
        r.arch = cfg.arch;
        r.task = task;
        r.mode = mode;
        r.language = lang.name;
        r.order = lang.order;
        r.accuracy = acc;
        r.n = task == "pos" ? words : cfg.test_size;
        r.seed = cfg.seed;
        r.d_model = cfg.d_model;
        r.n_layer = cfg.n_layer;
        r.parameters = o.parameters;
        r.steps = cfg.objective == "none" ? 0 : cfg.steps;
        r.batch = cfg.batch;
        r.tokens_per_step = kSentenceLen * cfg.batch;
        r.probe_train = cfg.probe_train;
        r.ft_train = cfg.ft_train;
        r.test_size = cfg.test_size;
        r.pretrain_first_loss = o.first_loss;
        r.pretrain_last_loss = o.last_loss;
        r.pretrain_heldout_loss = o.heldout_loss;
        r.pretrain_seconds = o.seconds;
        r.train_length = kSentenceLen;
        r.test_length = kSentenceLen;
        return r.to_json();
      };
      const double p = probe_accuracy(m, task, probe_train, test, cfg, head_seed);
      rows.push_back(row("probe", p));
      if (cfg.ft_steps > 0) {
        const double f =
            finetune_accuracy(cfg, g.vocab_size(), weights, task, ft_train, test, head_seed);
        rows.push_back(row("finetune", f));
        log_info("{} ({}) {} {}: probe {:.3f} finetune {:.3f}", cfg.objective, cfg.stack, lang.name,
                 task, p, f);
      } else {
        log_info("{} ({}) {} {}: probe {:.3f}", cfg.objective, cfg.stack, lang.name, task, p);
      }
    }
  }
  log_info("{} ({}): done in {:.0f} s", cfg.objective, cfg.stack,
           std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return rows;
}

namespace {

nlohmann::json run_objectives_cell(const nlohmann::json& cell, const std::string& run_dir) {
  const auto c = read_spec<ObjectivesCellConfig>(cell, cell_source(cell));
  const auto t0 = std::chrono::steady_clock::now();
  auto rows = run_objectives(c.config, run_dir);
  for (auto& r : rows) r["cell"] = c.id;
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return {{"id", c.id}, {"train_seconds", secs}, {"rows", rows}};
}

}  // namespace

SEQLAB_REGISTER_CELL_KIND("objectives", 70,
                          "pretrain with one objective, then probe and finetune downstream",
                          run_objectives_cell, check_spec<ObjectivesCellConfig>);

}  // namespace seqlab
