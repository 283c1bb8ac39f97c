#include "seqlab/exp/mae_deq_cell.h"

#include "seqlab/core/atomic_file.h"
#include "seqlab/core/error.h"
#include "seqlab/mixers/mae.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/tasks/copy_reverse_sort.h"
#include "seqlab/tasks/lm.h"
#include "seqlab/tasks/registry.h"
#include "seqlab/train/evaluate.h"
#include "seqlab/train/evaluate_lm.h"
#include "seqlab/train/trainer.h"

#include <malloc.h>
#include <sys/resource.h>

#include <cmath>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace seqlab {

namespace fs = std::filesystem;

namespace {

double peak_rss_mb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024.0;  // Linux: kilobytes
}

// A field of /proc/self/status in MB ("VmRSS", "VmHWM"); -1 when unreadable.
double status_mb(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1)) / 1024.0;
  return -1;
}

// The memory one training step (forward + loss + backward, at the training batch and length)
// needs above what the process holds before it: the autograd graph's saved tensors, solver
// history and temporaries, the part a DEQ saves. Measured as the rise of the resident-set high
// water mark (VmHWM, reset through /proc/self/clear_refs) over VmRSS just before the step, after a
// warm-up step has allocated the gradients; malloc's mmap threshold is fixed at 64 KiB so that
// freed tensors go back to the kernel instead of being reused from the heap unseen. The minimum of
// three steps; -1 where the kernel does not allow the reset.
double step_memory_mb(SeqModelImpl& model, const Task& task, int64_t batch, int64_t length,
                      uint64_t seed) {
  mallopt(M_MMAP_THRESHOLD, 64 * 1024);
  model.train();
  auto b = task.sample(batch, length, seed);
  auto step = [&] { task_loss(model.forward(b.input), b).backward(); };
  step();
  double best = -1;
  for (int i = 0; i < 3; ++i) {
    malloc_trim(0);
    const double base = status_mb("VmRSS");
    {
      std::ofstream clear("/proc/self/clear_refs");
      clear << "5";
      clear.flush();
      if (!clear) return -1;
    }
    step();
    const double d = status_mb("VmHWM") - base;
    best = best < 0 ? d : std::min(best, d);
  }
  return best;
}

// Mutual information (bits) of a joint count table [rows][cols].
double mutual_information(const std::vector<std::vector<double>>& n) {
  double total = 0;
  std::vector<double> r(n.size(), 0), c(n.empty() ? 0 : n[0].size(), 0);
  for (size_t i = 0; i < n.size(); ++i)
    for (size_t j = 0; j < n[i].size(); ++j) {
      r[i] += n[i][j];
      c[j] += n[i][j];
      total += n[i][j];
    }
  double mi = 0;
  for (size_t i = 0; i < n.size(); ++i)
    for (size_t j = 0; j < n[i].size(); ++j)
      if (n[i][j] > 0) mi += n[i][j] / total * std::log2(n[i][j] * total / (r[i] * c[j]));
  return mi;
}

// [[step, iters, residual, bwd_iters, bwd_residual], ..] from a run's metrics.jsonl.
nlohmann::json deq_trace(const std::string& dir) {
  nlohmann::json t = nlohmann::json::array();
  std::stringstream ss(read_file((fs::path(dir) / kMetricsFile).string()));
  std::string line;
  while (std::getline(ss, line)) {
    try {
      auto j = nlohmann::json::parse(line);
      if (!j.contains("deq_iters")) continue;
      t.push_back({j["step"], j["deq_iters"], j["deq_residual"], j.value("deq_bwd_iters", 0),
                   j.value("deq_bwd_residual", 0.0)});
    } catch (const nlohmann::json::exception&) {
    }
  }
  return t;
}

// The mixture: accuracy per task, and for an MAE the gate's first-ranked expert at SEP per layer.
void measure_mixture(SeqModelImpl& model, const CopyReverseSortTask& task, int64_t length,
                     int64_t n, uint64_t seed, nlohmann::json& row) {
  torch::NoGradGuard ng;
  model.eval();
  auto b = task.sample(n, length, seed);
  auto tasks = task.task_of(b.input);                   // [N]
  auto pred = model.forward(b.input).argmax(-1);        // [N,T]
  auto right = (pred == b.target).logical_and(b.mask);  // [N,T]
  nlohmann::json by_task = nlohmann::json::object();
  for (int64_t k = 0; k < CopyReverseSortTask::kTasks; ++k) {
    auto rows = tasks == k;  // [N]
    auto scored = b.mask.index({rows}).sum().item<double>();
    by_task[CopyReverseSortTask::kNames[k]] =
        scored > 0 ? right.index({rows}).sum().item<double>() / scored : 0.0;
  }
  row["accuracy_by_task"] = by_task;
  if (!model.config().mixer.mae) return;
  const int64_t sep = task.input_length(length);  // the SEP token's position
  auto inputs = model.mixer_inputs(b.input);
  nlohmann::json mi = nlohmann::json::array(), counts = nlohmann::json::array();
  for (size_t l = 0; l < inputs.size(); ++l) {
    auto mae = std::dynamic_pointer_cast<MaeImpl>(model.blocks->ptr<BlockImpl>(l)->mixer);
    SEQLAB_CHECK(mae, "layer {} is not an MAE", l);
    auto expert = mae->responsibilities(inputs[l]).select(1, sep).argmax(-1);  // [N]
    const int64_t H = model.config().mixer.n_head;
    std::vector<std::vector<double>> c(CopyReverseSortTask::kTasks, std::vector<double>(H, 0));
    auto ta = tasks.accessor<int64_t, 1>();
    auto ea = expert.accessor<int64_t, 1>();
    for (int64_t i = 0; i < n; ++i) c[ta[i]][ea[i]] += 1;
    mi.push_back(mutual_information(c));
    counts.push_back(c);
  }
  row["mi_bits"] = mi;
  row["experts_by_task"] = counts;
}

}  // namespace

nlohmann::json run_mae_deq_cell(const nlohmann::json& cell, const std::string& run_dir) {
  const auto id = cell.at("id").get<std::string>();
  const std::string src = "cell " + id;
  auto mc = ModelConfig::from_json(cell.at("model"), src);
  auto tc = TaskConfig::from_json(cell.at("task"), src);
  auto trc = TrainConfig::from_json(cell.at("train"), src);
  const std::string model_dir = (fs::path(run_dir) / "model").string();
  const double rss_start = peak_rss_mb();
  auto o = train_model(mc, tc, trc, model_dir, /*resume=*/true);
  const double rss_peak = peak_rss_mb();
  auto m = load_model_dir(model_dir);
  const auto& cfg = m.config;
  const auto task = make_task(tc);
  nlohmann::json row = {{"kind", "mae_deq"},
                        {"cell", id},
                        {"group", cell.value("group", "")},
                        {"label", cell.value("label", id)},
                        {"task", tc.task},
                        {"arch", cfg.mixer.arch},
                        {"mae", cfg.mixer.mae},
                        {"mae_schedule", trc.mae_schedule},
                        {"deq", cfg.deq.enabled ? cfg.deq.backward : ""},
                        {"deq_solver", cfg.deq.enabled ? cfg.deq.solver : ""},
                        {"depth", cfg.deq.enabled ? cfg.deq.max_iter : cfg.n_layer},
                        {"d_model", cfg.mixer.d_model},
                        {"n_layer", cfg.n_layer},
                        {"parameters", o.parameters},
                        {"steps", o.steps},
                        {"batch", trc.batch},
                        {"train_length", tc.max_len},
                        {"train_seconds", o.seconds},
                        {"seed", trc.seed},
                        {"rss_start_mb", rss_start},
                        {"rss_peak_mb", rss_peak},
                        {"train_mem_mb", rss_peak - rss_start},
                        {"resumed", o.start_step > 0}};
  if (const auto* lm = dynamic_cast<const LmTask*>(task.get())) {
    const int64_t context =
        cell.contains("eval") ? cell["eval"].value("context", tc.max_len) : tc.max_len;
    const int64_t tokens = cell.contains("eval") ? cell["eval"].value("max_tokens", 65536) : 65536;
    auto r = evaluate_lm(*m.model, *lm, Split::valid, context, 8, tokens);
    row["ppl"] = r.ppl;
    row["eval_tokens"] = r.tokens;
    row["eval_context"] = context;
  } else {
    const int64_t n = cell.value("eval_size", 600);
    auto ev = evaluate(*m.model, *task, tc.max_len, n, 64, trc.seed);
    row["accuracy"] = ev.accuracy;
    row["seq_accuracy"] = ev.seq_accuracy;
    if (const auto* crs = dynamic_cast<const CopyReverseSortTask*>(task.get()))
      measure_mixture(*m.model, *crs, tc.max_len, n, eval_seed(trc.seed, tc.max_len) + 1, row);
  }
  if (cfg.deq.enabled) row["deq_trace"] = deq_trace(model_dir);
  if (cell.value("group", "") == "deq")
    row["step_mem_mb"] = step_memory_mb(*m.model, *task, trc.batch, tc.max_len, trc.seed);
  return {{"id", id}, {"train_seconds", o.seconds}, {"rows", {row}}};
}

}  // namespace seqlab
