// seqlab eval: measure a model directory on its task (or another with the same vocabulary and
// head): accuracy at given lengths (src/seqlab/train/evaluate.h), perplexity on held-out text for
// language models (src/seqlab/train/evaluate_lm.h, or with --engine fast the fast decoder's logits
// in a weight format: src/seqlab/infer/fast_eval.h); classifiers' early-exit and SWAG evaluations
// are in cmd_classify.cpp.
#include "commands.h"

#include "seqlab/core/error.h"
#include "seqlab/core/quant.h"
#include "seqlab/infer/fast_eval.h"
#include "seqlab/infer/fast_model.h"
#include "seqlab/mixers/registry.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/model/model_task.h"
#include "seqlab/tasks/registry.h"
#include "seqlab/train/evaluate.h"
#include "seqlab/train/evaluate_lm.h"
#include "seqlab/train/evaluate_positions.h"
#include "seqlab/train/trainer.h"

#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <sstream>

namespace seqlab::cli {

namespace {

struct EvalArgs {
  std::string model, task, lengths;
  int64_t n = 256, batch = 32;
  int64_t seed = -1;
  bool json = false;
  std::string split = "valid";   // lm models: the corpus split to measure
  int64_t max_tokens = 0;        // lm models: score only the split's first N tokens (0 = all)
  int64_t context = 0;           // lm models: window length (0 = the training length)
  int64_t by_position = 0;       // lm models: perplexity per bucket of this many positions
  std::string engine = "torch";  // lm models: torch (SeqModel::forward) | fast (infer/)
  std::string weights;           // --engine fast: the decoder's weight format ("" = as stored)
  std::string exit_thresholds;   // classifiers: early-exit curve at these thresholds
  int64_t swag_samples = 0;      // classifiers: SWAG Bayesian model average of N samples
  double swag_scale = 0.5;
  Common common;
};

std::vector<int64_t> parse_lengths(const std::string& s) {
  std::vector<int64_t> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    SEQLAB_CHECK(used == item.size() && !item.empty() && v > 0,
                 "--lengths: '{}' is not a positive integer (expected e.g. 64,256,1024)", item);
    out.push_back(v);
  }
  SEQLAB_CHECK(!out.empty(), "--lengths is empty");
  return out;
}

// A language model is measured by perplexity on held-out text, in windows of its training
// length, rather than on synthetic lengths.
// --by-position: perplexity per bucket of positions within windows of `context` tokens.
void eval_lm_positions(const EvalArgs& a, LoadedModel& lm, const LmTask& task, Split split,
                       int64_t context) {
  const auto rows =
      evaluate_lm_positions(*lm.model, task, split, context, a.by_position, a.batch, a.max_tokens);
  if (a.json) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& r : rows)
      j.push_back(
          {{"lo", r.lo}, {"hi", r.hi}, {"tokens", r.tokens}, {"nll", r.nll}, {"ppl", r.ppl}});
    std::cout << nlohmann::json{{"split", a.split}, {"context", context}, {"by_position", j}}.dump()
              << "\n";
    return;
  }
  fmt::print("{} perplexity by position, windows of {} tokens ({} predictions per position)\n",
             a.split, context, rows.front().tokens / (rows.front().hi - rows.front().lo));
  fmt::print("{:>14} {:>10} {:>10}\n", "positions", "nll", "ppl");
  for (const auto& r : rows)
    fmt::print("{:>14} {:>10.4f} {:>10.3f}\n", fmt::format("{}-{}", r.lo, r.hi - 1), r.nll, r.ppl);
}

// --engine fast: the same windows as evaluate_lm, scored with the fast decoder's logits in the
// requested weight format (infer/fast_eval.h).
// `format` receives the format measured.
LmEvalResult eval_lm_fast(const EvalArgs& a, LoadedModel& lm, const LmTask& task, Split split,
                          int64_t context, WeightFormat& format) {
  format = a.weights.empty() ? lm.weights : parse_weight_format(a.weights);
  if (lm.model->adapters) lm.model->merge_adapters();
  infer::FastModel fast(*lm.model, format);
  const auto r = infer::fast_perplexity(
      fast, task.tokens(split), context, a.batch, a.max_tokens,
      fmt::format("the {} split of corpus '{}'", split_name(split), task.corpus()));
  LmEvalResult out;
  out.nll = r.nll;
  out.ppl = r.ppl;
  out.tokens = r.tokens;
  return out;
}

void eval_lm(const EvalArgs& a, LoadedModel& lm, const TaskConfig& tc, const LmTask& task) {
  const auto& mc = lm.config;
  const Split split = parse_split(a.split);
  SEQLAB_CHECK(a.max_tokens >= 0, "--max-tokens must be >= 0, got {}", a.max_tokens);
  SEQLAB_CHECK(a.context >= 0, "--context must be >= 0, got {}", a.context);
  SEQLAB_CHECK(a.by_position >= 0, "--by-position must be >= 0, got {}", a.by_position);
  const int64_t context = a.context > 0 ? a.context : tc.max_len;
  SEQLAB_CHECK(context <= mc.mixer.max_len || !lm.model->uses_learned_positions(),
               "--context {} is longer than the model's {} learned positions", context,
               mc.mixer.max_len);
  const bool fast = a.engine == "fast";
  if (a.by_position > 0) {
    SEQLAB_CHECK(!fast, "--by-position needs --engine torch");
    return eval_lm_positions(a, lm, task, split, context);
  }
  WeightFormat format = WeightFormat::f32;
  const auto r = fast ? eval_lm_fast(a, lm, task, split, context, format)
                      : evaluate_lm(*lm.model, task, split, context, a.batch, a.max_tokens);
  if (a.json) {
    nlohmann::json doc = {{"task", tc.task}, {"arch", mc.mixer.arch}, {"split", a.split},
                          {"ppl", r.ppl},    {"nll", r.nll},          {"tokens", r.tokens}};
    if (fast) {
      doc["engine"] = a.engine;
      doc["weights"] = weight_format_name(format);
    }
    std::cout << doc.dump() << "\n";
    return;
  }
  fmt::print(
      "{} on {} ({}, {}): {} perplexity {:.4f} (nll {:.4f} nats over {} tokens, "
      "context {}{})\n",
      mc.mixer.arch, tc.task, tc.corpus, tc.tokenizer, a.split, r.ppl, r.nll, r.tokens, context,
      fast ? fmt::format("; fast engine, {} weights", weight_format_name(format)) : std::string());
}

void print_eval_table(const ModelConfig& mc, const std::string& task, const nlohmann::json& results,
                      const std::vector<std::string>& extra_lines) {
  const std::string arch = arch_label(mc.mixer);
  fmt::print("{} on {}\n{:>8} {:>10} {:>10} {:>10} {:>8} {:>10}\n", arch, task, "length",
             "accuracy", "seq_acc", "loss", "n", "blind");
  for (const auto& r : results)
    fmt::print("{:>8} {:>10.4f} {:>10.4f} {:>10.4f} {:>8} {:>10}\n", r["length"].get<int64_t>(),
               r["accuracy"].get<double>(), r["seq_accuracy"].get<double>(),
               r["loss"].get<double>(), r["n"].get<int64_t>(),
               r.contains("blind_accuracy")
                   ? fmt::format("{:.4f}", r["blind_accuracy"].get<double>())
                   : std::string("-"));
  fmt::print(
      "(blind: accuracy of always guessing the most frequent class at each scored position, on "
      "the same sequences; - where the length alone fixes the answer)\n");
  for (const auto& line : extra_lines) fmt::print("{}\n", line);  // see the task's header
}

// --engine / --weights: checked before anything is loaded that they name a setting that exists,
// and that the fast engine is asked only for what it can measure.
void check_engine(const EvalArgs& a) {
  SEQLAB_CHECK(a.engine == "torch" || a.engine == "fast",
               "--engine must be torch or fast, got '{}'", a.engine);
  if (!a.weights.empty()) parse_weight_format(a.weights);
  SEQLAB_CHECK(
      a.engine == "fast" || a.weights.empty() || a.weights == "f32",
      "--weights {} needs --engine fast (the torch engine runs the weights as loaded, in fp32)",
      a.weights);
  SEQLAB_CHECK(a.engine != "fast" || (a.exit_thresholds.empty() && a.swag_samples == 0),
               "--engine fast measures language models' perplexity; --exit-threshold and "
               "--swag-samples are classifier evaluations (use --engine torch)");
}

int run_eval(const EvalArgs& a) {
  a.common.apply();
  check_engine(a);
  if (!a.exit_thresholds.empty() || a.swag_samples != 0) {
    SEQLAB_CHECK(a.task.empty() && a.lengths.empty(),
                 "--exit-threshold / --swag-samples evaluate on the model's own task and length; "
                 "drop --task / --lengths");
    ClassifierEvalArgs c;
    c.model = a.model;
    c.split = a.split;
    c.exit_thresholds = a.exit_thresholds;
    c.n = a.n;
    c.batch = a.batch;
    c.seed = a.seed;
    c.swag_samples = a.swag_samples;
    c.swag_scale = a.swag_scale;
    c.json = a.json;
    eval_classifier(c);
    return 0;
  }
  auto lm = load_model_dir(a.model);
  TaskConfig tc = model_task(lm, a.model).value_or(TaskConfig{});
  uint64_t seed = trained_seed(lm, a.model);
  if (a.seed >= 0) seed = static_cast<uint64_t>(a.seed);
  if (!a.task.empty()) tc.task = a.task;
  auto task = make_task(tc);
  const auto& mc = lm.config;
  // An lm may have more embedding rows than its tokenizer has ids (Pythia pads 50277 to 50304,
  // Qwen2 151665 to 151936): the extra rows are never a target.
  const bool padded_lm =
      mc.head == "lm" && task->head() == "lm" && task->vocab_size() <= mc.vocab_size;
  SEQLAB_CHECK((mc.vocab_size == task->vocab_size() || padded_lm) && mc.head == task->head() &&
                   mc.n_classes == task->n_classes(),
               "model {} was built for a different task (vocab {}, head {}) than '{}' (vocab {}, "
               "head {})",
               a.model, mc.vocab_size, mc.head, tc.task, task->vocab_size(), task->head());
  SEQLAB_CHECK(a.n > 0 && a.batch > 0, "--n and --batch must be positive");
  if (a.engine == "fast") {
    const auto why = infer::fast_support(lm.config);
    SEQLAB_CHECK(why.empty(), "--engine fast: the fast decoder cannot run model {}: {}", a.model,
                 why);
  }
  if (const auto* lmt = dynamic_cast<const LmTask*>(task.get())) {
    eval_lm(a, lm, tc, *lmt);
    return 0;
  }
  SEQLAB_CHECK(a.engine == "torch",
               "--engine fast measures perplexity on lm tasks; task '{}' is scored by the torch "
               "engine only",
               tc.task);
  const auto lengths =
      a.lengths.empty() ? std::vector<int64_t>{tc.max_len} : parse_lengths(a.lengths);
  for (auto L : lengths)
    SEQLAB_CHECK(L >= task->min_length(), "--lengths: {} is below task {}'s minimum length {}", L,
                 tc.task, task->min_length());
  nlohmann::json results = nlohmann::json::array();
  std::vector<std::string> extra_lines;  // the task's own metrics, one line per length
  for (auto L : lengths) {
    auto r = evaluate(*lm.model, *task, L, a.n, a.batch, seed, parse_split(a.split));
    nlohmann::json row = {{"length", r.length},
                          {"accuracy", r.accuracy},
                          {"seq_accuracy", r.seq_accuracy},
                          {"loss", r.loss},
                          {"n", r.n}};
    if (task->has_blind_baseline())
      row["blind_accuracy"] =
          evaluate_blind(*task, L, a.n, a.batch, seed, parse_split(a.split)).accuracy;
    std::string kv;
    for (const auto& [k, v] : r.extra) {
      row[k] = v;
      kv += fmt::format("{}{} {:.4f}", kv.empty() ? "" : ", ", k, v);
    }
    if (!kv.empty()) extra_lines.push_back(fmt::format("length {}: {}", r.length, kv));
    results.push_back(row);
  }
  if (a.json) {
    nlohmann::json doc = {{"task", tc.task}, {"arch", mc.mixer.arch}, {"results", results}};
    if (const auto map = feature_map_of(mc.mixer); !map.empty()) doc["feature_map"] = map;
    std::cout << doc.dump() << "\n";
    return 0;
  }
  print_eval_table(mc, tc.task, results, extra_lines);
  return 0;
}

}  // namespace

void add_eval_commands(CLI::App& app, Actions& actions) {
  auto ea = std::make_shared<EvalArgs>();
  auto* eval = app.add_subcommand("eval", "evaluate a model directory on a task at given lengths");
  eval->add_option("--model", ea->model, "model directory")->required();
  eval->add_option("--task", ea->task, "task (default: the one the model was trained on)");
  eval->add_option("--lengths", ea->lengths,
                   "comma-separated test lengths (default: the longest training length)");
  eval->add_option("--n", ea->n, "sequences per length")->capture_default_str();
  eval->add_option("--batch", ea->batch, "sequences per batch")->capture_default_str();
  eval->add_option("--seed", ea->seed, "evaluation seed (default: the training seed)");
  eval->add_flag("--json", ea->json, "print one JSON document on stdout");
  eval->add_option("--exit-threshold", ea->exit_thresholds,
                   "classifiers with --exits: comma-separated confidence thresholds; prints the "
                   "speed/accuracy curve (accuracy, mean layers, examples/s at batch 1) and "
                   "per-exit ECE (a threshold above 1 runs every layer)");
  eval->add_option("--swag-samples", ea->swag_samples,
                   "classifiers trained with --swag-start: Bayesian model average of N SWAG "
                   "samples, beside SWA and the plain weights (accuracy, NLL, ECE, agreement with "
                   "annotators)");
  eval->add_option("--swag-scale", ea->swag_scale,
                   "SWAG: covariance scale of the samples (0 = SWA)")
      ->capture_default_str();
  eval->add_option("--split", ea->split,
                   "corpus split to measure (valid, test, train): lm models and dataset tasks")
      ->capture_default_str();
  eval->add_option("--max-tokens", ea->max_tokens,
                   "lm models: score the split's first N tokens only (0 = all)")
      ->capture_default_str();
  eval->add_option("--context", ea->context,
                   "lm models: window length in tokens (0 = the training length); longer "
                   "windows measure length extrapolation")
      ->capture_default_str();
  eval->add_option("--by-position", ea->by_position,
                   "lm models: perplexity per bucket of N positions within each window (whole "
                   "windows only), e.g. --context 1024 --by-position 128")
      ->capture_default_str();
  eval->add_option("--engine", ea->engine,
                   "lm models: torch (LibTorch forward) or fast (the fast decoder's logits, the "
                   "same windows and scoring)")
      ->capture_default_str();
  eval->add_option("--weights", ea->weights,
                   "--engine fast: weight format of the decoder (f32, bf16, int8; default: the "
                   "format the model directory stores, f32 for most)");
  ea->common.add(eval);
  actions.push_back({eval, [ea] { return run_eval(*ea); }});
}

}  // namespace seqlab::cli
