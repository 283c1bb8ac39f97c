// Cells of language-model suites (conversion): lm_train, lm_finetune and lm_bench, one file each
// (exp/cells/lm_train.cpp, lm_finetune.cpp, lm_bench.cpp). Every cell writes its model to
// <run_dir>/model; "from" names a model directory relative to the suite's runs/ folder (e.g.
// "teacher/model"), and the cell lists the cells it needs in "after".
//
//   lm_train     {"model", "task", "train", "eval"}: train from random initialisation.
//   lm_finetune  {"from", "convert" (ConvertConfig, optional), "adapter" (AdapterConfig),
//                 "train", "eval"}: convert the "from" model into <run_dir>/converted (with
//                 attention transfer when convert.distill_steps > 0), then finetune it (fully or
//                 with adapters). Without "convert", finetunes "from" itself.
//   lm_bench     {"models": [{"label", "from"}], "contexts": [..]}: generation speed and state
//                memory of each model, token by token through its recurrent form (the teacher's
//                is its KV cache), batch 1, at growing context lengths, in both engines.
// "eval": {"context": C, "max_tokens": N}: validation perplexity over consecutive windows of C
// tokens of the first N tokens of the valid split (train/evaluate_lm.h).
//
// Rows: lm_train / lm_finetune give one LmRow (kind "lm"); lm_bench one BenchRow (kind "bench")
// per (model, engine, context).
#pragma once

#include "seqlab/convert/convert.h"
#include "seqlab/exp/cells/fields.h"
#include "seqlab/model/adapters.h"
#include "seqlab/model/model_config.h"
#include "seqlab/tasks/task.h"
#include "seqlab/train/trainer.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace seqlab {

// Validation perplexity settings of a cell ("eval").
struct LmEvalConfig {
  std::optional<int64_t> context;  // window; default the kind's (lm cells 128, mae_deq the task's)
  int64_t max_tokens = 0;
  bool test = false;             // also a row for the test split
  int64_t position_context = 0;  // > 0: perplexity by position in windows this long (test split)
  int64_t position_bucket = 64;  // positions per bucket of that curve

  template <class V>
  void visit(V&& v) {
    v(context, "context", kUnset, "tokens per window");
    v(max_tokens, "max_tokens", int64_t{65536}, "tokens of the valid split scored");
    v(test, "test", false, "also measure the test split (a second row, split \"test\")");
    v(position_context, "position_context", int64_t{0},
      "perplexity by position in windows of this many tokens on the test split (0 = off; "
      "train/evaluate_positions.h)");
    v(position_bucket, "position_bucket", int64_t{64}, "positions per bucket of that curve");
  }
  LmEvalConfig() { visit(FieldDefaults{}); }
};

// What lm_train and lm_finetune share: the row's name and origin, the perplexity settings.
struct LmCellSpec : CellSpec {
  std::optional<std::string> label;  // default the id
  std::string init;                  // the row's "init": scratch | teacher | control | converted
  std::string method;                // the row's method (one per seed in a seeded grid)
  int64_t base_tokens = 0;           // tokens the starting model was trained on before this cell
  LmEvalConfig eval;

  template <class V>
  void visit(V&& v) {
    CellSpec::visit(v);
    v(label, "label", kUnset, "the row's name in the report (default the id)");
    v(init, "init", std::string("scratch"), "how the model started, for the report");
    v(method, "method", std::string(), "the method, grouping a grid's seeds (default: the id)");
    v(base_tokens, "base_tokens", int64_t{0},
      "tokens the starting model saw before this cell (the row's tokens add this cell's own)");
    v(eval, "eval", LmEvalConfig{}, "validation perplexity");
  }
};

struct LmTrainCellConfig : LmCellSpec {
  ModelConfig model;
  TaskConfig task;
  TrainConfig train;

  template <class V>
  void visit(V&& v) {
    LmCellSpec::visit(v);
    v(model, "model", kRequired, "the model");
    v(task, "task", kRequired, "the lm task");
    v(train, "train", kRequired, "the training run");
  }
  LmTrainCellConfig() { visit(FieldDefaults{}); }
};

// End-to-end distillation while finetuning (StartFrom's teacher / kl_weight / kl_temperature).
struct LmKlSpec {
  std::string teacher;  // model directory, relative to the suite's runs/
  double weight = 0, temperature = 1;

  template <class V>
  void visit(V&& v) {
    v(teacher, "teacher", kRequired, "the teacher's model directory, relative to runs/");
    v(weight, "weight", kRequired, "w: loss = CE + w * T^2 * KL(teacher || student)");
    v(temperature, "temperature", 1.0, "T, the softmax temperature of both distributions");
  }
  LmKlSpec() { visit(FieldDefaults{}); }
};
void to_json(nlohmann::json& j, const LmKlSpec& k);
void from_json(const nlohmann::json& j, LmKlSpec& k);

struct LmFinetuneCellConfig : LmCellSpec {
  std::string from;  // model directory, relative to the suite's runs/
  std::optional<ConvertConfig> convert;
  std::optional<AdapterConfig> adapter;
  std::optional<LmKlSpec> kl;
  TrainConfig train;

  template <class V>
  void visit(V&& v) {
    LmCellSpec::visit(v);
    v(from, "from", kRequired, "the model to start from, relative to runs/");
    v(convert, "convert", kUnset, "convert it first (with attention transfer if distill_steps)");
    v(adapter, "adapter", kUnset, "finetune adapters only (the base frozen)");
    v(kl, "kl", kUnset, "add a KL-to-teacher term to the finetuning loss");
    v(train, "train", kRequired, "the finetuning run");
  }
  LmFinetuneCellConfig() { visit(FieldDefaults{}); }
};

// A model trained elsewhere (a shipped teacher): copied into <run_dir>/model and measured, so
// the suite's other cells start from "<id>/model" as from any trained cell.
struct LmExternalCellConfig : LmCellSpec {
  std::string path;  // relative to the working directory (the repository root)

  template <class V>
  void visit(V&& v) {
    LmCellSpec::visit(v);
    v(path, "path", kRequired, "the model directory, relative to the working directory");
  }
  LmExternalCellConfig() { visit(FieldDefaults{}); }
};

// One model of an lm_bench cell.
struct BenchModelSpec {
  std::optional<std::string> label;  // default the directory
  std::string from;                  // relative to runs/

  template <class V>
  void visit(V&& v) {
    v(label, "label", kUnset, "the row's name in the report");
    v(from, "from", kRequired, "model directory, relative to runs/");
  }
  BenchModelSpec() { visit(FieldDefaults{}); }
};
void to_json(nlohmann::json& j, const BenchModelSpec& m);
void from_json(const nlohmann::json& j, BenchModelSpec& m);

struct LmBenchCellConfig : CellSpec {
  std::vector<BenchModelSpec> models;
  std::vector<int64_t> contexts;

  template <class V>
  void visit(V&& v) {
    CellSpec::visit(v);
    v(models, "models", kRequired, "the models to measure");
    v(contexts, "contexts", kRequired, "context lengths to time (>= 2)");
  }
  LmBenchCellConfig() { visit(FieldDefaults{}); }
};

// A trained or finetuned LM, measured (kind "lm").
struct LmRow {
  std::string kind;  // "lm"
  std::string cell, label, init, method;
  std::string split;              // valid | test
  std::string arch, feature_map;  // feature_map: "" unless arch is linear
  int64_t d_model, n_layer;
  double ppl, nll;
  int64_t eval_tokens, eval_context;
  int64_t parameters, trainable, steps;
  int64_t tokens;       // training tokens the model has seen in all (base_tokens + this cell's)
  int64_t cell_tokens;  // of which this cell's: finetuning (and transfer) or training
  uint64_t seed;
  double train_seconds;
  std::vector<std::pair<int64_t, double>> curve;  // [step, eval_ppl] from metrics.jsonl
  int64_t distill_steps;                          // attention transfer steps (0: none)
  std::string adapter;                            // none | lora | tied_lora
  std::optional<int64_t> adapter_rank;
  std::optional<std::string> adapter_targets, adapter_train, adapter_share;
  std::optional<double> ppl_converted;  // the converted model before finetuning
  // Attention transfer: per layer, the loss before and after, and its time.
  std::optional<std::vector<double>> distill_before, distill_after;
  std::optional<double> distill_seconds;
  // Perplexity by position (test rows, eval.position_context > 0): [first position, ppl] per
  // bucket of position_bucket positions, in windows of position_context tokens.
  std::vector<std::pair<int64_t, double>> by_position;
  int64_t position_context;
  std::string kl_teacher;  // finetuned with a KL-to-teacher term ("" = none)
  double kl_weight;

  template <class V>
  void visit(V&& v) {
    v(kind, "kind", std::string("lm"), "");
    v(cell, "cell", std::string(), "");
    v(label, "label", std::string(), "");
    v(init, "init", std::string(), "");
    v(method, "method", std::string(), "");
    v(split, "split", std::string("valid"), "");
    v(arch, "arch", std::string(), "");
    v(feature_map, "feature_map", std::string(), "");
    v(d_model, "d_model", int64_t{0}, "");
    v(n_layer, "n_layer", int64_t{0}, "");
    v(ppl, "ppl", 0.0, "");
    v(nll, "nll", 0.0, "");
    v(eval_tokens, "eval_tokens", int64_t{0}, "");
    v(eval_context, "eval_context", int64_t{0}, "");
    v(parameters, "parameters", int64_t{0}, "");
    v(trainable, "trainable", int64_t{0}, "");
    v(steps, "steps", int64_t{0}, "");
    v(tokens, "tokens", int64_t{0}, "");
    v(cell_tokens, "cell_tokens", int64_t{0}, "");
    v(seed, "seed", uint64_t{0}, "");
    v(train_seconds, "train_seconds", 0.0, "");
    v(curve, "curve", std::vector<std::pair<int64_t, double>>{}, "");
    v(distill_steps, "distill_steps", int64_t{0}, "");
    v(adapter, "adapter", std::string(), "");
    v(adapter_rank, "adapter_rank", kUnset, "");
    v(adapter_targets, "adapter_targets", kUnset, "");
    v(adapter_train, "adapter_train", kUnset, "");
    v(adapter_share, "adapter_share", kUnset, "");
    v(ppl_converted, "ppl_converted", kUnset, "");
    v(distill_before, "distill_before", kUnset, "");
    v(distill_after, "distill_after", kUnset, "");
    v(distill_seconds, "distill_seconds", kUnset, "");
    v(by_position, "by_position", std::vector<std::pair<int64_t, double>>{}, "");
    v(position_context, "position_context", int64_t{0}, "");
    v(kl_teacher, "kl_teacher", std::string(), "");
    v(kl_weight, "kl_weight", 0.0, "");
  }
  LmRow() { visit(FieldDefaults{}); }
  nlohmann::json to_json() const { return write_fields(*this); }
};

// Generation speed and state memory of one model in one engine at one context (kind "bench").
struct BenchRow {
  std::string kind;  // "bench"
  std::string cell, label;
  std::string engine;  // torch | fast (rows from before the fast engine: torch)
  std::string arch;
  int64_t context, window;  // window: the tokens timed, the last before `context`
  double tokens_per_s;
  int64_t state_bytes;

  template <class V>
  void visit(V&& v) {
    v(kind, "kind", std::string("bench"), "");
    v(cell, "cell", std::string(), "");
    v(label, "label", std::string(), "");
    v(engine, "engine", std::string("torch"), "");
    v(arch, "arch", std::string(), "");
    v(context, "context", int64_t{0}, "");
    v(window, "window", int64_t{0}, "");
    v(tokens_per_s, "tokens_per_s", 0.0, "");
    v(state_bytes, "state_bytes", int64_t{0}, "");
  }
  BenchRow() { visit(FieldDefaults{}); }
  nlohmann::json to_json() const { return write_fields(*this); }
};

// Shared by the lm cells (exp/cells/lm_row.cpp): the row of the model in model_dir (valid
// split), trained with outcome `o` (steps, seconds, parameter counts), its perplexity measured on
// `task` (an lm task) with `c.eval`; label, init, method and base_tokens from the cell.
LmRow lm_model_row(const LmCellSpec& c, const std::string& model_dir, const TrainOutcome& o,
                   const Task& task);
// The cell's rows: `valid` as given, then (eval.test) the same model on the test split, with
// the perplexity by position when eval.position_context > 0.
nlohmann::json lm_split_rows(const LmCellSpec& c, const LmRow& valid, const std::string& model_dir,
                             const Task& task);
// Validation perplexity of the model in `dir`.
double lm_perplexity(const std::string& dir, const Task& task, const LmEvalConfig& eval,
                     const std::string& id);
// The window of the lm cells' perplexity.
inline int64_t lm_eval_context(const LmEvalConfig& e) {
  return e.context.value_or(128);
}

}  // namespace seqlab
