// seqlab calibrate, and the classifier side of seqlab eval (--exit-threshold, --swag-samples):
// early exit with calibrated confidence (Schwartz et al. 2020) and SWAG (Maddox et al. 2019).
#include "commands.h"

#include "seqlab/core/error.h"
#include "seqlab/core/safetensors.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/model/model_task.h"
#include "seqlab/tasks/registry.h"
#include "seqlab/methods/classify_eval.h"
#include "seqlab/train/trainer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <iostream>
#include <memory>

namespace seqlab::cli {

namespace {

namespace fs = std::filesystem;

// The task a model directory was trained on, and its training seed.
std::pair<TaskConfig, uint64_t> trained_task(const LoadedModel& lm, const std::string& dir) {
  auto tc = model_task(lm, dir);
  SEQLAB_CHECK(tc, "{}: no task recorded (a model that no training run wrote)", dir);
  return {*tc, trained_seed(lm, dir)};
}

void print_calibration(const std::vector<ExitCalibration>& cal) {
  fmt::print("{:>5} {:>6} {:>9} {:>8} {:>9} {:>9} {:>9} {:>9}\n", "exit", "layer", "accuracy", "T",
             "NLL(T=1)", "NLL(T)", "ECE(T=1)", "ECE(T)");
  for (size_t j = 0; j < cal.size(); ++j) {
    const auto& c = cal[j];
    fmt::print("{:>5} {:>6} {:>9.4f} {:>8.3f} {:>9.4f} {:>9.4f} {:>9.4f} {:>9.4f}\n", j, c.layer,
               c.accuracy, c.temperature, c.nll_before, c.nll_after, c.ece_before, c.ece_after);
  }
}

nlohmann::json calibration_json(const std::vector<ExitCalibration>& cal) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& c : cal)
    a.push_back({{"layer", c.layer},
                 {"accuracy", c.accuracy},
                 {"temperature", c.temperature},
                 {"nll_before", c.nll_before},
                 {"nll_after", c.nll_after},
                 {"ece_before", c.ece_before},
                 {"ece_after", c.ece_after}});
  return a;
}

nlohmann::json uncertainty_json(const std::string& method, const UncertaintyScore& s) {
  nlohmann::json j = {
      {"method", method}, {"accuracy", s.accuracy}, {"nll", s.nll}, {"ece", s.ece}, {"n", s.n}};
  if (s.annotators) {
    j["entropy_pearson"] = s.entropy_pearson;
    j["entropy_spearman"] = s.entropy_spearman;
    j["kl_annotators"] = s.kl;
  }
  return j;
}

struct CalibrateArgs {
  std::string model, split = "valid";
  int64_t n = 2000, batch = 64;
  bool json = false;
  Common common;
};

}  // namespace

std::vector<double> parse_thresholds(const std::string& s) {
  std::vector<double> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t end = std::min(s.find(',', start), s.size());
    const std::string item = s.substr(start, end - start);
    double v = 0;
    size_t used = 0;
    try {
      v = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    SEQLAB_CHECK(!item.empty() && used == item.size() && std::isfinite(v) && v >= 0,
                 "--exit-threshold: '{}' is not a number >= 0 (expected e.g. 0.5,0.9,1.1)", item);
    out.push_back(v);
    start = end + 1;
  }
  return out;
}

int eval_classifier(const ClassifierEvalArgs& a) {
  auto lm = load_model_dir(a.model);
  auto [tc, seed] = trained_task(lm, a.model);
  if (a.seed >= 0) seed = static_cast<uint64_t>(a.seed);
  auto task = make_task(tc);
  SEQLAB_CHECK(lm.config.head == "classify",
               "--exit-threshold and --swag-samples need a classifier; {} has a {} head", a.model,
               lm.config.head);
  const auto thresholds =
      a.exit_thresholds.empty() ? std::vector<double>{} : parse_thresholds(a.exit_thresholds);
  SEQLAB_CHECK(thresholds.empty() || lm.model->exits,
               "--exit-threshold: {} has no early exits (train it with --exits 1,2,...)", a.model);
  SEQLAB_CHECK(a.swag_samples >= 0, "--swag-samples must be >= 0, got {}", a.swag_samples);
  SEQLAB_CHECK(a.swag_scale >= 0, "--swag-scale must be >= 0, got {}", a.swag_scale);
  std::unique_ptr<Swag> swag;
  if (a.swag_samples > 0) {
    const auto path = (fs::path(a.model) / kSwagFile).string();
    SEQLAB_CHECK(fs::exists(path), "{}: missing; train with --swag-start to collect SWAG moments",
                 path);
    swag = std::make_unique<Swag>(Swag::from_tensors(load_safetensors(path).tensors, path));
  }
  const Split split = parse_split(a.split);
  const auto set = classify_set(*task, split, tc.max_len, a.n, a.batch, seed);
  nlohmann::json doc = {
      {"task", tc.task}, {"arch", lm.config.mixer.arch}, {"split", a.split}, {"n", set.n}};
  if (!a.json)
    fmt::print("{} on {} ({} split, {} examples)\n", lm.config.mixer.arch, tc.task, a.split, set.n);
  if (!thresholds.empty()) {
    const auto cal = exit_calibration(*lm.model, set);
    const auto curve = exit_curve(*lm.model, set, thresholds);
    doc["exits"] = calibration_json(cal);
    nlohmann::json c = nlohmann::json::array();
    for (const auto& p : curve)
      c.push_back({{"threshold", p.threshold},
                   {"accuracy", p.accuracy},
                   {"mean_layers", p.mean_layers},
                   {"examples_per_s", p.examples_per_s},
                   {"exit_share", p.exit_share},
                   {"difficulty_spearman", p.difficulty_rho}});
    doc["curve"] = c;
    if (!a.json) {
      fmt::print(
          "\nper exit, with the temperatures in the model (`seqlab calibrate` fits them):\n");
      print_calibration(cal);
      fmt::print("\nearly exit, one example at a time ({} layers in all):\n", lm.config.n_layer);
      fmt::print("{:>9} {:>9} {:>11} {:>9} {:>12}  {}\n", "threshold", "accuracy", "mean layers",
                 "speed-up", "examples/s",
                 set.difficulty.defined() ? "rho(layers,difficulty)" : "");
      for (const auto& p : curve)
        fmt::print("{:>9.3f} {:>9.4f} {:>11.3f} {:>8.2f}x {:>12.1f}  {}\n", p.threshold, p.accuracy,
                   p.mean_layers, lm.config.n_layer / p.mean_layers, p.examples_per_s,
                   set.difficulty.defined() ? fmt::format("{:.3f}", p.difficulty_rho) : "");
    }
  }
  if (swag) {
    std::vector<std::pair<std::string, UncertaintyScore>> rows;
    rows.emplace_back("sgd", score_probs(predict_probs(*lm.model, set), set));
    rows.emplace_back("swa", score_probs(swag_probs(*lm.model, *swag, set, 1, 0.0, seed), set));
    rows.emplace_back(
        fmt::format("swag (N={}, scale {})", a.swag_samples, a.swag_scale),
        score_probs(swag_probs(*lm.model, *swag, set, a.swag_samples, a.swag_scale, seed), set));
    nlohmann::json u = nlohmann::json::array();
    for (const auto& [m, s] : rows) u.push_back(uncertainty_json(m, s));
    doc["uncertainty"] = u;
    doc["swag_snapshots"] = swag->snapshots();
    if (!a.json) {
      fmt::print("\nuncertainty ({} SWAG snapshots, rank {}):\n", swag->snapshots(),
                 swag->columns());
      const bool ann = rows.front().second.annotators;
      fmt::print("{:<26} {:>9} {:>8} {:>8}{}\n", "method", "accuracy", "NLL", "ECE",
                 ann ? "  r(H,H_ann)  rho(H,H_ann)  KL(ann||p)" : "");
      for (const auto& [m, s] : rows)
        fmt::print("{:<26} {:>9.4f} {:>8.4f} {:>8.4f}{}\n", m, s.accuracy, s.nll, s.ece,
                   ann ? fmt::format("  {:>10.3f}  {:>12.3f}  {:>10.4f}", s.entropy_pearson,
                                     s.entropy_spearman, s.kl)
                       : "");
    }
  }
  if (a.json) std::cout << doc.dump() << "\n";
  return 0;
}

void add_classify_commands(CLI::App& app, Actions& actions) {
  auto a = std::make_shared<CalibrateArgs>();
  auto* cmd = app.add_subcommand(
      "calibrate", "fit a temperature per early exit on held-out data; writes them into the model");
  cmd->footer(
      "Temperature scaling (Guo et al. 2017) for each exit of a classifier trained with --exits:\n"
      "the temperature that minimises the negative log-likelihood of the exit's softmax on --n\n"
      "examples of --split. The temperatures are saved in the model directory (tensor\n"
      "exit_temperature) and used by `seqlab eval --exit-threshold`.\n"
      "Example: seqlab calibrate --model runs/supersense");
  cmd->add_option("--model", a->model, "model directory (a classifier trained with --exits)")
      ->required();
  cmd->add_option("--split", a->split, "split to fit on (valid, test, train)")
      ->capture_default_str();
  cmd->add_option("--n", a->n, "examples to fit on")->capture_default_str();
  cmd->add_option("--batch", a->batch, "examples per batch")->capture_default_str();
  cmd->add_flag("--json", a->json, "print one JSON document on stdout");
  a->common.add(cmd);
  actions.push_back(
      {cmd, [a] {
         a->common.apply();
         auto lm = load_model_dir(a->model);
         SEQLAB_CHECK(lm.model->exits, "{} has no early exits (train a classifier with --exits)",
                      a->model);
         auto [tc, seed] = trained_task(lm, a->model);
         SEQLAB_CHECK(a->n > 0 && a->batch > 0, "--n and --batch must be positive");
         auto task = make_task(tc);
         auto set = classify_set(*task, parse_split(a->split), tc.max_len, a->n, a->batch, seed);
         auto cal = calibrate_exits(*lm.model, set);
         save_model_dir(a->model, *lm.model, lm.sections);
         if (a->json) {
           std::cout << nlohmann::json{{"split", a->split},
                                       {"n", set.n},
                                       {"exits", calibration_json(cal)}}
                            .dump()
                     << "\n";
         } else {
           fmt::print("calibrated {} exits of {} on {} {} examples of {}\n", cal.size(), a->model,
                      set.n, a->split, tc.task);
           print_calibration(cal);
         }
         return 0;
       }});
}

}  // namespace seqlab::cli
