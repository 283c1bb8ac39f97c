// Cells of the `mae_deq` suite (exp/suites/mae_deq.cpp), kind "mae_deq": train one model (an LM on
// WordNet glosses or the copy_reverse_sort mixture), then measure it.
//
//   {"id", "kind": "mae_deq", "group": "lm" | "mix" | "deq", "label", "model", "task", "train",
//    "eval": {"context", "max_tokens"} (lm tasks), "eval_size" (synthetic tasks)}
//
// One MaeDeqRow. Memory is the worker process's own resident high-water mark (VmHWM,
// core/own_memory.h): every cell runs in its own process (exp/suite.h), so the peak belongs to
// that one training run and nothing else.
#pragma once

#include "seqlab/exp/cells/fields.h"
#include "seqlab/exp/cells/lm.h"
#include "seqlab/model/model_config.h"
#include "seqlab/tasks/task.h"
#include "seqlab/train/trainer.h"

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace seqlab {

struct MaeDeqCellConfig : CellSpec {
  std::string group;                 // lm | mix | deq: the report's section
  std::optional<std::string> label;  // default the id
  ModelConfig model;
  TaskConfig task;
  TrainConfig train;
  LmEvalConfig eval;  // lm tasks; the context defaults to the task's max_len
  int64_t eval_size = 0;

  template <class V>
  void visit(V&& v) {
    CellSpec::visit(v);
    v(group, "group", std::string(), "the report's section: lm | mix | deq");
    v(label, "label", kUnset, "the row's name in the report (default the id)");
    v(model, "model", kRequired, "the model");
    v(task, "task", kRequired, "an lm task or copy_reverse_sort");
    v(train, "train", kRequired, "the training run");
    v(eval, "eval", LmEvalConfig{}, "lm tasks: validation perplexity");
    v(eval_size, "eval_size", int64_t{600}, "synthetic tasks: test sequences");
  }
  MaeDeqCellConfig() { visit(FieldDefaults{}); }
};

// Evaluations of f in the convergence measurement of a trained DEQ (MaeDeqRow::deq_convergence).
inline constexpr int64_t kDeqConvergenceIters = 40;

// One logged training step of a DEQ: [step, iters, residual, bwd_iters, bwd_residual, jacobian]
// in JSON (jacobian: the |J_f|_F^2 / numel estimate under --deq-jac-reg, else 0; rows written
// before it have five entries).
struct DeqTracePoint {
  int64_t step = 0, iters = 0;
  double residual = 0;
  int64_t bwd_iters = 0;
  double bwd_residual = 0;
  double jacobian = 0;
};
void to_json(nlohmann::json& j, const DeqTracePoint& p);
void from_json(const nlohmann::json& j, DeqTracePoint& p);

struct MaeDeqRow {
  std::string kind;  // "mae_deq"
  std::string cell, group, label, task, arch;
  bool mae;
  std::string mae_schedule;
  std::string deq, deq_solver;  // backward mode and solver of a DEQ, "" otherwise
  int64_t depth;                // blocks, or applications of f (DEQ: the solver's threshold)
  int64_t d_model, n_layer, parameters, steps, batch, train_length;
  double train_seconds;
  uint64_t seed;
  // Peak RSS of the worker before training (LibTorch, the binary) and after it; their difference
  // is what training added at its peak.
  double rss_start_mb, rss_peak_mb, train_mem_mb;
  bool resumed;
  // lm tasks
  std::optional<double> ppl;
  std::optional<int64_t> eval_tokens, eval_context;
  // the mixture
  std::optional<double> accuracy, seq_accuracy;
  std::optional<std::map<std::string, double>> accuracy_by_task;
  // an MAE on the mixture: per layer, the mutual information (bits) between the task and the
  // expert the gate ranks first at SEP (log2 3 = 1.585 at most), and the counts behind it,
  // [layer][task][expert]
  std::optional<std::vector<double>> mi_bits;
  std::optional<std::vector<std::vector<std::vector<double>>>> experts_by_task;
  std::optional<std::vector<DeqTracePoint>> deq_trace;  // from metrics.jsonl
  std::optional<double> step_mem_mb;  // group deq: what one training step adds (VmHWM)
  // A DEQ: its trained solver tolerance and Jacobian-regularisation weight, and its forward solve
  // on validation windows after training, run to kDeqConvergenceIters evaluations whatever the
  // residual: the relative residual after each evaluation.
  double deq_tol = 0, deq_jac_reg = 0;
  std::optional<std::vector<double>> deq_convergence;

  template <class V>
  void visit(V&& v) {
    v(kind, "kind", std::string("mae_deq"), "");
    v(cell, "cell", std::string(), "");
    v(group, "group", std::string(), "");
    v(label, "label", std::string(), "");
    v(task, "task", std::string(), "");
    v(arch, "arch", std::string(), "");
    v(mae, "mae", false, "");
    v(mae_schedule, "mae_schedule", std::string(), "");
    v(deq, "deq", std::string(), "");
    v(deq_solver, "deq_solver", std::string(), "");
    v(depth, "depth", int64_t{0}, "");
    v(d_model, "d_model", int64_t{0}, "");
    v(n_layer, "n_layer", int64_t{0}, "");
    v(parameters, "parameters", int64_t{0}, "");
    v(steps, "steps", int64_t{0}, "");
    v(batch, "batch", int64_t{0}, "");
    v(train_length, "train_length", int64_t{0}, "");
    v(train_seconds, "train_seconds", 0.0, "");
    v(seed, "seed", uint64_t{0}, "");
    v(rss_start_mb, "rss_start_mb", 0.0, "");
    v(rss_peak_mb, "rss_peak_mb", 0.0, "");
    v(train_mem_mb, "train_mem_mb", 0.0, "");
    v(resumed, "resumed", false, "");
    v(ppl, "ppl", kUnset, "");
    v(eval_tokens, "eval_tokens", kUnset, "");
    v(eval_context, "eval_context", kUnset, "");
    v(accuracy, "accuracy", kUnset, "");
    v(seq_accuracy, "seq_accuracy", kUnset, "");
    v(accuracy_by_task, "accuracy_by_task", kUnset, "");
    v(mi_bits, "mi_bits", kUnset, "");
    v(experts_by_task, "experts_by_task", kUnset, "");
    v(deq_trace, "deq_trace", kUnset, "");
    v(step_mem_mb, "step_mem_mb", kUnset, "");
    v(deq_tol, "deq_tol", 0.0, "");
    v(deq_jac_reg, "deq_jac_reg", 0.0, "");
    v(deq_convergence, "deq_convergence", kUnset, "");
  }
  MaeDeqRow() { visit(FieldDefaults{}); }
  nlohmann::json to_json() const { return write_fields(*this); }
};

}  // namespace seqlab
