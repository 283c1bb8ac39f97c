// Cell kind mae_deq (exp/cells/mae_deq.h): train one model, then measure its perplexity or
// mixture accuracy, its gate's specialisation (MAE), its solver (DEQ) and its training memory.
#include "seqlab/exp/cells/mae_deq.h"

#include "seqlab/core/atomic_file.h"
#include "seqlab/core/error.h"
#include "seqlab/core/own_memory.h"
#include "seqlab/exp/cells/kinds.h"
#include "seqlab/mixers/mae.h"
#include "seqlab/model/deq.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/tasks/copy_reverse_sort.h"
#include "seqlab/tasks/lm.h"
#include "seqlab/tasks/registry.h"
#include "seqlab/train/evaluate.h"
#include "seqlab/train/evaluate_lm.h"

#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace seqlab {

namespace fs = std::filesystem;

void to_json(nlohmann::json& j, const DeqTracePoint& p) {
  j = nlohmann::json::array({p.step, p.iters, p.residual, p.bwd_iters, p.bwd_residual, p.jacobian});
}

void from_json(const nlohmann::json& j, DeqTracePoint& p) {
  p.step = j.at(0).get<int64_t>();
  p.iters = j.at(1).get<int64_t>();
  p.residual = j.at(2).get<double>();
  p.bwd_iters = j.at(3).get<int64_t>();
  p.bwd_residual = j.at(4).get<double>();
  p.jacobian = j.size() > 5 ? j.at(5).get<double>() : 0.0;
}

namespace {

// A field of /proc/self/status in MB ("VmRSS", "VmHWM"); -1 when unreadable.
double status_mb(const std::string& field) {
  const int64_t kb = proc_status_kb(field);
  return kb < 0 ? -1 : static_cast<double>(kb) / 1024.0;
}

// This worker's own resident high-water mark (core/own_memory.h: not getrusage's ru_maxrss,
// which in a worker spawned by the suite process starts at the suite process's peak).
double peak_rss_mb() {
  return status_mb("VmHWM");
}

// The memory one training step (forward + loss + backward, at the training batch and length)
// needs above what the process holds before it: the autograd graph's saved tensors, solver
// history and temporaries, the part a DEQ saves. Measured as the rise of the resident-set high
// water mark (VmHWM, reset through /proc/self/clear_refs) over VmRSS just before the step, after a
// warm-up step has allocated the gradients; malloc's mmap threshold is fixed at 64 KiB so that
// freed tensors go back to the kernel instead of being reused from the heap unseen. That needs the
// rest of glibc's defaults, from the start of the process: a mae_deq worker does not tune malloc
// (CellKind::measures_memory; measured on the quick cells, under tune_malloc's settings this
// read 151 MB instead of 138 for the unrolled model and 48 instead of 39 for the implicit DEQ).
// The minimum of three steps; -1 where the kernel does not allow the reset.
double step_memory_mb(SeqModelImpl& model, const Task& task, int64_t batch, int64_t length,
                      uint64_t seed) {
  mallopt(M_MMAP_THRESHOLD, 64 * 1024);
  model.train();
  auto b = task.sample(batch, length, seed);
  auto step = [&] {  // the training loss, with a DEQ's Jacobian term when it has one
    auto loss = task_loss(model.forward(b.input), b);
    if (model.deq)
      if (auto reg = model.deq->take_regularizer(); reg.defined()) loss = loss + reg;
    loss.backward();
  };
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

// Every logged step's solver trace from a run's metrics.jsonl.
std::vector<DeqTracePoint> deq_trace(const std::string& dir) {
  std::vector<DeqTracePoint> t;
  std::stringstream ss(read_file((fs::path(dir) / kMetricsFile).string()));
  std::string line;
  while (std::getline(ss, line)) {
    try {
      auto j = nlohmann::json::parse(line);
      if (!j.contains("deq_iters")) continue;
      t.push_back({j["step"].get<int64_t>(), j["deq_iters"].get<int64_t>(),
                   j["deq_residual"].get<double>(), j.value("deq_bwd_iters", int64_t{0}),
                   j.value("deq_bwd_residual", 0.0), j.value("deq_jacobian", 0.0)});
    } catch (const nlohmann::json::exception&) {
    }
  }
  return t;
}

// A trained DEQ's forward solve on the first validation windows (up to 16 of `length` tokens),
// run to kDeqConvergenceIters evaluations of f with a tolerance it cannot reach: the relative
// residual after each evaluation. The solver's own limits are restored after it.
std::vector<double> deq_convergence(SeqModelImpl& model, const LmTask& lm, int64_t length) {
  torch::NoGradGuard ng;
  model.eval();
  const auto& v = lm.tokens(Split::valid);
  const int64_t n = std::min<int64_t>(16, static_cast<int64_t>(v.size()) / length);
  SEQLAB_CHECK(n >= 1, "mae_deq: the valid split has fewer than {} tokens", length);
  auto x = torch::tensor(std::vector<int64_t>(v.begin(), v.begin() + n * length))
               .view({n, length});  // [n, length]
  model.deq->set_forward_limits(kDeqConvergenceIters, 1e-12);
  model.forward(x);
  const auto& d = model.config().deq;
  model.deq->set_forward_limits(d.max_iter, d.tol);
  return model.deq->stats().forward_residuals;
}

// The mixture: accuracy per task, and for an MAE the gate's first-ranked expert at SEP per layer.
void measure_mixture(SeqModelImpl& model, const CopyReverseSortTask& task, int64_t length,
                     int64_t n, uint64_t seed, MaeDeqRow& row) {
  torch::NoGradGuard ng;
  model.eval();
  auto b = task.sample(n, length, seed);
  auto tasks = task.task_of(b.input);                   // [N]
  auto pred = model.forward(b.input).argmax(-1);        // [N,T]
  auto right = (pred == b.target).logical_and(b.mask);  // [N,T]
  std::map<std::string, double> by_task;
  for (int64_t k = 0; k < CopyReverseSortTask::kTasks; ++k) {
    auto rows = tasks == k;  // [N]
    auto scored = b.mask.index({rows}).sum().item<double>();
    by_task[CopyReverseSortTask::kNames[k]] =
        scored > 0 ? right.index({rows}).sum().item<double>() / scored : 0.0;
  }
  row.accuracy_by_task = by_task;
  if (!model.config().mixer.mae) return;
  const int64_t sep = task.input_length(length);  // the SEP token's position
  auto inputs = model.mixer_inputs(b.input);
  std::vector<double> mi;
  std::vector<std::vector<std::vector<double>>> counts;
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
  row.mi_bits = mi;
  row.experts_by_task = counts;
}

// The row's fields that do not depend on the measurement.
MaeDeqRow base_row(const MaeDeqCellConfig& c, const ModelConfig& cfg, const TrainOutcome& o,
                   double rss_start, double rss_peak) {
  MaeDeqRow row;
  row.cell = c.id;
  row.group = c.group;
  row.label = c.label.value_or(c.id);
  row.task = c.task.task;
  row.arch = cfg.mixer.arch;
  row.mae = cfg.mixer.mae;
  row.mae_schedule = c.train.mae_schedule;
  row.deq = cfg.deq.enabled ? cfg.deq.backward : "";
  row.deq_solver = cfg.deq.enabled ? cfg.deq.solver : "";
  row.depth = cfg.deq.enabled ? cfg.deq.max_iter : cfg.n_layer;
  row.deq_tol = cfg.deq.enabled ? cfg.deq.tol : 0.0;
  row.deq_jac_reg = cfg.deq.enabled ? cfg.deq.jac_reg : 0.0;
  row.d_model = cfg.mixer.d_model;
  row.n_layer = cfg.n_layer;
  row.parameters = o.parameters;
  row.steps = o.steps;
  row.batch = c.train.batch;
  row.train_length = c.task.max_len;
  row.train_seconds = o.seconds;
  row.seed = c.train.seed;
  row.rss_start_mb = rss_start;
  row.rss_peak_mb = rss_peak;
  row.train_mem_mb = rss_peak - rss_start;
  row.resumed = o.start_step > 0;
  return row;
}

nlohmann::json run_mae_deq(const nlohmann::json& cell, const std::string& run_dir) {
  const auto c = read_spec<MaeDeqCellConfig>(cell, cell_source(cell));
  const auto& tc = c.task;
  const auto& trc = c.train;
  const std::string model_dir = (fs::path(run_dir) / "model").string();
  const double rss_start = peak_rss_mb();
  auto o = train_model(c.model, tc, trc, model_dir, /*resume=*/true);
  const double rss_peak = peak_rss_mb();
  auto m = load_model_dir(model_dir);
  const auto& cfg = m.config;
  const auto task = make_task(tc);
  auto row = base_row(c, cfg, o, rss_start, rss_peak);
  if (const auto* lm = dynamic_cast<const LmTask*>(task.get())) {
    const int64_t context = c.eval.context.value_or(tc.max_len);
    auto r = evaluate_lm(*m.model, *lm, Split::valid, context, 8, c.eval.max_tokens);
    row.ppl = r.ppl;
    row.eval_tokens = r.tokens;
    row.eval_context = context;
    if (cfg.deq.enabled) row.deq_convergence = deq_convergence(*m.model, *lm, tc.max_len);
  } else {
    const int64_t n = c.eval_size;
    auto ev = evaluate(*m.model, *task, tc.max_len, n, 64, trc.seed);
    row.accuracy = ev.accuracy;
    row.seq_accuracy = ev.seq_accuracy;
    if (const auto* crs = dynamic_cast<const CopyReverseSortTask*>(task.get()))
      measure_mixture(*m.model, *crs, tc.max_len, n, eval_seed(trc.seed, tc.max_len) + 1, row);
  }
  if (cfg.deq.enabled) row.deq_trace = deq_trace(model_dir);
  if (c.group == "deq")
    row.step_mem_mb = step_memory_mb(*m.model, *task, trc.batch, tc.max_len, trc.seed);
  return {{"id", c.id}, {"train_seconds", o.seconds}, {"rows", {row.to_json()}}};
}

}  // namespace

SEQLAB_REGISTER_CELL_KIND("mae_deq", 60,
                          "train an MAE, DEQ or reference model; perplexity or mixture accuracy, "
                          "expert specialisation, solver trace, training memory",
                          run_mae_deq, check_spec<MaeDeqCellConfig>, /*measures_memory=*/true);

}  // namespace seqlab
