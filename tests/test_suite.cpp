#include "seqlab/exp/suite.h"

#include "seqlab/core/atomic_file.h"
#include "seqlab/convert/convert.h"
#include "seqlab/exp/cell.h"
#include "seqlab/exp/cells/attention_shape.h"
#include "seqlab/exp/cells/defsent.h"
#include "seqlab/exp/cells/kinds.h"
#include "seqlab/exp/grid.h"
#include "seqlab/model/adapters.h"
#include "seqlab/methods/objectives.h"
#include "seqlab/train/trainer.h"
#include "seqlab/model/model_config.h"
#include "seqlab/tasks/registry.h"
#include "seqlab/train/evaluate.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

using namespace seqlab;
namespace fs = std::filesystem;

// An LM cell (exp/cells/lm.h): its configs load, and the model it starts from belongs to a cell it
// waits for.
void expect_valid_lm_cell(const nlohmann::json& c) {
  const auto id = c.at("id").get<std::string>();
  const auto kind = c.at("kind").get<std::string>();
  const auto after = c.value("after", std::vector<std::string>{});
  auto waits_for = [&](const std::string& from) {
    const auto cell = from.substr(0, from.find('/'));
    EXPECT_NE(std::find(after.begin(), after.end(), cell), after.end())
        << id << " reads " << from << " without waiting for " << cell;
  };
  if (kind == "lm_train") {
    auto mc = ModelConfig::from_json(c.at("model"), id);
    auto tc = TaskConfig::from_json(c.at("task"), id);
    EXPECT_EQ(tc.task, "lm") << id;
    EXPECT_LE(tc.max_len, mc.mixer.max_len) << id;
    EXPECT_NO_THROW(TrainConfig::from_json(c.at("train"), id).validate()) << id;
  } else if (kind == "lm_external") {
    EXPECT_TRUE(std::filesystem::exists(c.at("path").get<std::string>() + "/config.json")) << id;
  } else if (kind == "lm_finetune") {
    waits_for(c.at("from").get<std::string>());
    if (c.contains("kl")) waits_for(c["kl"].at("teacher").get<std::string>());
    EXPECT_NO_THROW(TrainConfig::from_json(c.at("train"), id).validate()) << id;
    if (c.contains("adapter")) {
      EXPECT_NO_THROW(AdapterConfig::from_json(c["adapter"], id)) << id;
    }
    if (c.contains("convert")) {
      ConvertConfig cc;
      FromJsonVisitor v{c["convert"], id, {}};
      cc.visit(v);
      EXPECT_EQ(v.known.size(), c["convert"].size()) << id << ": unknown convert keys";
      EXPECT_NO_THROW(cc.validate()) << id;
    }
  } else if (kind == "lm_bench") {
    for (const auto& m : c.at("models")) waits_for(m.at("from").get<std::string>());
    EXPECT_FALSE(c.at("contexts").empty()) << id;
  } else if (kind == "mae_deq") {
    auto mc = ModelConfig::from_json(c.at("model"), id);
    auto tc = TaskConfig::from_json(c.at("task"), id);
    auto task = make_task(tc);
    EXPECT_LE(tc.max_len, mc.mixer.max_len) << id;
    EXPECT_NO_THROW(task->sample(2, tc.max_len, 1)) << id;
    EXPECT_NO_THROW(TrainConfig::from_json(c.at("train"), id).validate()) << id;
  } else if (kind == "classify_exit" || kind == "classify_swag") {
    auto mc = ModelConfig::from_json(c.at("model"), id);
    auto tc = TaskConfig::from_json(c.at("task"), id);
    auto task = make_task(tc);
    EXPECT_EQ(task->head(), "classify") << id;
    EXPECT_LE(tc.max_len, mc.mixer.max_len) << id;
    EXPECT_NO_THROW(task->sample_split(2, tc.max_len, 1, Split::test)) << id;
    auto tr = TrainConfig::from_json(c.at("train"), id);
    EXPECT_NO_THROW(tr.validate()) << id;
    if (kind == "classify_exit") {
      EXPECT_FALSE(mc.exit_layers().empty()) << id;
      EXPECT_GT(c.at("thresholds").back().get<double>(), 1.0) << id << ": needs a full-model row";
    } else {
      EXPECT_GT(tr.swag_start, 0) << id;
    }
  } else if (kind == "defsent") {
    EXPECT_NO_THROW(check_defsent_cell(c)) << id;
    if (c.contains("from")) waits_for(c.at("from").get<std::string>());
  } else if (kind == "attention_shape") {
    const auto a = read_spec<AttentionShapeCellConfig>(c, id);
    EXPECT_NE(a.to.has_value(), a.from.has_value()) << id << ": needs exactly one of to, from";
    if (a.from) EXPECT_TRUE(std::filesystem::exists(*a.from + "/config.json")) << id;
  } else if (kind == "objectives") {
    EXPECT_NO_THROW(ObjectivesConfig::from_json(c.at("config"), id).validate()) << id;
  } else {
    ADD_FAILURE() << id << ": unknown cell kind " << kind;
  }
}

// Every suite, quick and full, builds cells whose configs load and whose tasks accept every
// training and test length: a typo in a grid fails here, not an hour into a run.
TEST(Suite, EveryGridIsValid) {
  for (const auto& e : suite_registry())
    for (bool quick : {true, false}) {
      auto spec = make_suite(e.name, quick);
      EXPECT_FALSE(spec.cells.empty()) << e.name;
      std::set<std::string> earlier;
      for (const auto& c : spec.cells) {
        const auto id = c.at("id").get<std::string>();
        // Dependencies name cells that come earlier in the same suite.
        for (const auto& dep : c.value("after", std::vector<std::string>{}))
          EXPECT_TRUE(earlier.count(dep)) << id << " waits on " << dep;
        earlier.insert(id);
        if (c.contains("kind")) {
          expect_valid_lm_cell(c);
          continue;
        }
        EXPECT_NO_THROW(cell_kind_of(c).check(c)) << id;  // the plain cell's own check
        auto mc = ModelConfig::from_json(c.at("model"), id);
        auto tc = TaskConfig::from_json(c.at("task"), id);
        auto task = make_task(tc);
        for (int64_t L : c.at("test_lengths").get<std::vector<int64_t>>()) {
          EXPECT_GE(L, task->min_length()) << id;
          EXPECT_NO_THROW(task->sample(2, L, 1)) << id << " at length " << L;
          const bool learned =
              mc.resolved_pos(mc.mixer.arch == "softmax" || mc.mixer.arch == "linear") == "learned";
          if (learned) {
            EXPECT_LE(L, mc.mixer.max_len) << id << ": test length past max_context";
          }
        }
        EXPECT_NO_THROW(task->sample(2, tc.max_len, 1)) << id;
        // min_len 0 means the task's own minimum, as the trainer resolves it.
        EXPECT_NO_THROW(task->sample(2, std::max(tc.min_len, task->min_length()), 1)) << id;
      }
    }
}

TEST(Suite, QuickGridsAreSmall) {
  for (const auto& e : suite_registry())
    EXPECT_LE(make_suite(e.name, true).cells.size(), 40u) << e.name;
}

// Rows from before the baseline existed get it from their cell's task and seed, with no model:
// the value evaluate_blind gives for the test set the row was scored on.
TEST(Suite, BlindAccuracyIsAddedFromTheCellsTestSets) {
  std::vector<nlohmann::json> cells = {
      make_cell("bs_lstm", grid_model("lstm", 8, 1, 81), grid_task("bucket_sort", 3, 81),
                grid_train(10, 16, 3e-3, 2), {81, 201}, 64),
      make_cell("bs_t2r", grid_model("t2r", 8, 1, 81), grid_task("bucket_sort", 3, 81),
                grid_train(10, 16, 3e-3, 2), {81, 201}, 64)};
  cells.push_back(make_cell("anbn_lstm", grid_model("lstm", 8, 1, 42), grid_task("anbn", 4, 42),
                            grid_train(10, 16, 3e-3, 2), {42}, 64));
  cells[1]["eval_sizes"] = {64, 32};  // bs_t2r is scored on 32 sequences at 201
  nlohmann::json lm = cells[0];
  lm["id"] = "an_lm_cell";
  lm["kind"] = "lm_train";
  cells.push_back(lm);
  std::vector<nlohmann::json> rows;
  for (auto id : {"bs_lstm", "bs_t2r", "an_lm_cell"})
    for (int64_t L : {81, 201})
      rows.push_back({{"cell", id}, {"task", "bucket_sort"}, {"test_length", L}, {"seed", 2}});
  rows.push_back({{"cell", "anbn_lstm"}, {"task", "anbn"}, {"test_length", 42}, {"seed", 2}});
  rows[1]["blind_accuracy"] = 0.123;  // already there: kept
  EXPECT_EQ(add_blind_accuracy(cells, rows), 3);
  auto task = make_task(TaskConfig::from_json(cells[0]["task"], "test"));
  const double b81 = evaluate_blind(*task, 81, 64, 16, 2).accuracy;
  const double b201 = evaluate_blind(*task, 201, 64, 16, 2).accuracy;
  EXPECT_EQ(rows[0]["blind_accuracy"].get<double>(), b81);
  EXPECT_EQ(rows[1]["blind_accuracy"].get<double>(), 0.123);
  EXPECT_EQ(rows[2]["blind_accuracy"].get<double>(), b81);  // same test set, other architecture
  // The baseline of a length with its own eval size is measured on that many sequences.
  const double b201_32 = evaluate_blind(*task, 201, 32, 16, 2).accuracy;
  EXPECT_NE(b201_32, b201);
  EXPECT_EQ(rows[3]["blind_accuracy"].get<double>(), b201_32);
  EXPECT_GT(b201, b81);                              // bucket_sort's blind score rises with length
  EXPECT_FALSE(rows[4].contains("blind_accuracy"));  // lm cells have no such baseline
  EXPECT_FALSE(rows[6].contains("blind_accuracy"));  // nor has anbn (one string per length)
  EXPECT_EQ(add_blind_accuracy(cells, rows), 0);
}

TEST(Suite, UnknownSuiteIsAnError) {
  EXPECT_THROW(make_suite("nonesuch", true), seqlab::Error);
}

// A two-cell grid end to end through worker processes, then a rerun that skips both cells.
TEST(Suite, RunsInWorkersAndResumes) {
  const char* bin = std::getenv("SEQLAB_BIN");
  if (!bin) GTEST_SKIP() << "SEQLAB_BIN not set (run through ctest)";
  SuiteSpec spec;
  spec.name = "tiny";
  for (auto arch : {"lstm", "gru", "softmax"})
    spec.cells.push_back(make_cell(std::string("parity_") + arch, grid_model(arch, 8, 1, 64),
                                   grid_task("parity", 2, 8), grid_train(20, 8, 3e-3, 0), {8, 16},
                                   16, {{"width", 8}}));
  spec.cells[0]["saturation"] = std::vector<double>{4};
  // Attention has no recurrence weights to scale: no saturation rows rather than copies.
  spec.cells[2]["saturation"] = std::vector<double>{4};
  const auto out =
      (fs::temp_directory_path() / ("seqlab_test_suite_" + std::to_string(getpid()))).string();
  fs::remove_all(out);
  SuiteOptions opt;
  opt.out = out;
  opt.jobs = 2;
  opt.worker_exe = bin;
  opt.plots = false;
  auto r = run_suite(spec, opt);
  EXPECT_EQ(r.ran, 3);
  EXPECT_EQ(r.failed, 0);
  auto jsonl = read_file((fs::path(out) / "results.jsonl").string());
  std::vector<nlohmann::json> rows;
  std::stringstream ss(jsonl);
  std::string line;
  while (std::getline(ss, line)) rows.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(rows.size(), 8u);  // lstm: 2 lengths + 2 saturated; gru, softmax: 2 lengths
  for (const auto& row : rows)
    for (auto k : {"task", "arch", "d_model", "n_layer", "seed", "train_length", "test_length",
                   "accuracy", "blind_accuracy"})
      EXPECT_TRUE(row.contains(k)) << k << " missing in " << row.dump();
  EXPECT_EQ(rows[2]["saturation_scale"], 4.0);
  for (size_t i = 6; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i]["arch"], "softmax");
    EXPECT_FALSE(rows[i].contains("saturation_scale")) << rows[i].dump();
  }
  EXPECT_TRUE(fs::exists(fs::path(out) / "report.md"));
  auto again = run_suite(spec, opt);
  EXPECT_EQ(again.ran, 0);
  EXPECT_EQ(again.skipped, 3);
  EXPECT_EQ(read_file((fs::path(out) / "results.jsonl").string()), jsonl);
}

// Options for a tiny grid run by the seqlab binary in workers, into a fresh temporary directory
// named after the test and this process, one worker, no plots.
SuiteOptions tiny_suite_options(const char* bin, const std::string& name) {
  SuiteOptions opt;
  opt.out =
      (fs::temp_directory_path() / ("seqlab_test_suite_" + name + "_" + std::to_string(getpid())))
          .string();
  fs::remove_all(opt.out);
  opt.jobs = 1;
  opt.worker_exe = bin;
  opt.plots = false;
  return opt;
}

// The progress line's per-cell status reads the newest metrics.jsonl of the cell's run directory,
// at its top or one folder down (an LM cell's model/).
TEST(Suite, CellStepReadsTheNewestMetrics) {
  const auto dir =
      fs::temp_directory_path() / ("seqlab_test_step_status_" + std::to_string(getpid()));
  fs::remove_all(dir);
  EXPECT_EQ(cell_step((dir / "missing").string()), -1);
  fs::create_directories(dir / "model");
  EXPECT_EQ(cell_step(dir.string()), -1);
  std::ofstream(dir / "model" / "metrics.jsonl") << "{\"loss\":2.0,\"step\":10}\n"
                                                 << "{\"loss\":1.5,\"step\":20}\n";
  EXPECT_EQ(cell_step(dir.string()), 20);
  EXPECT_EQ(cell_step_status("c", cell_step(dir.string()), 100), "c 20/100");
  EXPECT_EQ(cell_step_status("c", 20, 0), "c step 20");
  EXPECT_EQ(cell_step_status("c", -1, 100), "");
  // A half-written last line is skipped, not an error.
  std::ofstream(dir / "model" / "metrics.jsonl", std::ios::app) << "{\"loss\":1.";
  EXPECT_EQ(cell_step(dir.string()), -1);
  fs::remove_all(dir);
}

// results.jsonl is rewritten as each cell finishes, so a suite stopped part-way (a session's end, a
// crash) leaves its finished rows: a worker that copies results.jsonl before it runs a cell sees
// the earlier cells' rows.
TEST(Suite, ResultsGrowAsCellsFinish) {
  const char* bin = std::getenv("SEQLAB_BIN");
  if (!bin) GTEST_SKIP() << "SEQLAB_BIN not set (run through ctest)";
  SuiteSpec spec;
  spec.name = "grow";
  for (auto arch : {"lstm", "gru", "elman"})
    spec.cells.push_back(make_cell(std::string("parity_") + arch, grid_model(arch, 8, 1, 64),
                                   grid_task("parity", 2, 8), grid_train(5, 8, 3e-3, 0), {8, 16},
                                   8));
  auto opt = tiny_suite_options(bin, "grow");
  fs::create_directories(opt.out);
  // The worker: args are suite-cell --cell SPEC ...; it saves results.jsonl as seen_<spec name>.
  const auto worker = (fs::path(opt.out) / "worker.sh").string();
  std::ofstream(worker) << "#!/bin/sh\nout=" << opt.out
                        << "\nname=$(basename \"$3\" .json)\n"
                           "cp \"$out/results.jsonl\" \"$out/seen_$name\" 2>/dev/null\n"
                           "exec "
                        << bin << " \"$@\"\n";
  fs::permissions(worker, fs::perms::owner_all);
  opt.worker_exe = worker;
  EXPECT_EQ(run_suite(spec, opt).ran, 3);
  auto cells_in = [&](const std::string& file) {
    std::vector<std::string> ids;
    if (!fs::exists(file)) return ids;
    std::stringstream ss(read_file(file));
    for (std::string line; std::getline(ss, line);) {
      auto row = nlohmann::json::parse(line);
      EXPECT_FALSE(row.contains("blind_accuracy")) << "mid-run rows carry no baseline yet";
      if (ids.empty() || ids.back() != row.at("cell")) ids.push_back(row.at("cell"));
    }
    return ids;
  };
  EXPECT_FALSE(fs::exists(fs::path(opt.out) / "seen_parity_lstm"));
  EXPECT_EQ(cells_in(opt.out + "/seen_parity_gru"), (std::vector<std::string>{"parity_lstm"}));
  EXPECT_EQ(cells_in(opt.out + "/seen_parity_elman"),
            (std::vector<std::string>{"parity_lstm", "parity_gru"}));
  // The end of the run adds the baselines.
  const auto rows = read_results(opt.out);
  for (const auto& row : rows) EXPECT_TRUE(row.contains("blind_accuracy")) << row.dump();
  EXPECT_EQ(rows.size(), 6u);
  fs::remove_all(opt.out);
}

// Rerunning into a directory whose finished cells ran with other settings is an error, not a
// silent mix of old and new results.
TEST(Suite, ChangedSpecOfAFinishedCellIsAnError) {
  const char* bin = std::getenv("SEQLAB_BIN");
  if (!bin) GTEST_SKIP() << "SEQLAB_BIN not set (run through ctest)";
  SuiteSpec spec;
  spec.name = "tiny2";
  spec.cells.push_back(make_cell("parity_elman", grid_model("elman", 8, 1, 64),
                                 grid_task("parity", 2, 8), grid_train(5, 8, 3e-3, 0), {8}, 8));
  const auto opt = tiny_suite_options(bin, "changed");
  EXPECT_EQ(run_suite(spec, opt).ran, 1);
  // A spec written before a config field existed (here: without tie_tag_head, which defaults to
  // false) is the same spec: the finished cell is skipped.
  const auto spec_file = fs::path(opt.out) / "cells" / "parity_elman.json";
  auto old_spec = nlohmann::json::parse(seqlab::read_file(spec_file.string()));
  ASSERT_EQ(old_spec["model"].erase("tie_tag_head"), 1u);
  std::ofstream(spec_file, std::ios::trunc) << old_spec.dump();
  auto again = run_suite(spec, opt);
  EXPECT_EQ(again.ran, 0);
  EXPECT_EQ(again.skipped, 1);
  spec.cells[0]["train"]["steps"] = 6;
  EXPECT_THROW(run_suite(spec, opt), seqlab::Error);
  spec.cells[0]["train"]["steps"] = 5;
  spec.cells[0]["model"]["tie_tag_head"] = true;  // a new field at another value is a change
  EXPECT_THROW(run_suite(spec, opt), seqlab::Error);
}

// --only: a regex over cell ids, keeping grid order and pulling in the cells a kept one waits on.
TEST(Suite, OnlyKeepsMatchingCellsAndWhatTheyWaitOn) {
  SuiteSpec spec;
  spec.name = "slice";
  for (auto id : {"a_lstm_s0", "b_gru_s0", "c_lstm_s1", "d_final_s0"})
    spec.cells.push_back(make_cell(id, grid_model("lstm", 8, 1, 64), grid_task("parity", 2, 8),
                                   grid_train(5, 8, 3e-3, 0), {8}, 8));
  spec.cells[3]["after"] = std::vector<std::string>{"b_gru_s0"};
  auto ids = [](const SuiteSpec& s) {
    std::vector<std::string> v;
    for (const auto& c : s.cells) v.push_back(c.at("id").get<std::string>());
    return v;
  };
  auto lstm = spec;
  keep_cells(lstm, "_lstm_");
  EXPECT_EQ(ids(lstm), (std::vector<std::string>{"a_lstm_s0", "c_lstm_s1"}));
  auto final_only = spec;
  keep_cells(final_only, "^d_");
  EXPECT_EQ(ids(final_only), (std::vector<std::string>{"b_gru_s0", "d_final_s0"}));
  auto either = spec;
  keep_cells(either, "s1$|^b");
  EXPECT_EQ(ids(either), (std::vector<std::string>{"b_gru_s0", "c_lstm_s1"}));
  auto none = spec;
  EXPECT_THROW(keep_cells(none, "mamba"), seqlab::Error);
  EXPECT_THROW(keep_cells(none, "(unclosed"), seqlab::Error);
  // A real grid: the full separations grid's string-equality slice is its 3 archs x 5 widths x
  // 3 seeds at each of its 4 lengths.
  auto sep = make_suite("separations", false);
  keep_cells(sep, "^string_equality_");
  EXPECT_EQ(sep.cells.size(), 4u * 3 * 5 * 3);
}

// A slice runs only its cells, but results.jsonl covers every finished cell: rerunning a slice in
// a finished directory does not shrink it.
TEST(Suite, ASliceRunsItsCellsAndReportsTheWholeGrid) {
  const char* bin = std::getenv("SEQLAB_BIN");
  if (!bin) GTEST_SKIP() << "SEQLAB_BIN not set (run through ctest)";
  SuiteSpec spec;
  spec.name = "sliced";
  for (auto arch : {"elman", "gru"})
    spec.cells.push_back(make_cell(std::string("parity_") + arch, grid_model(arch, 8, 1, 64),
                                   grid_task("parity", 2, 8), grid_train(5, 8, 3e-3, 0), {8}, 8));
  auto opt = tiny_suite_options(bin, "slice");
  const auto out = opt.out;
  auto row_cells = [&] {
    std::vector<std::string> cells;
    std::stringstream ss(read_file((fs::path(out) / "results.jsonl").string()));
    std::string line;
    while (std::getline(ss, line)) cells.push_back(nlohmann::json::parse(line).at("cell"));
    return cells;
  };
  opt.only = "elman";
  auto first = run_suite(spec, opt);
  EXPECT_EQ(first.ran, 1);
  EXPECT_EQ(first.cells, 1);
  EXPECT_EQ(row_cells(), (std::vector<std::string>{"parity_elman"}));
  opt.only.clear();
  EXPECT_EQ(run_suite(spec, opt).ran, 1);  // only the gru cell is left
  opt.only = "gru";
  EXPECT_EQ(run_suite(spec, opt).ran, 0);
  EXPECT_EQ(row_cells(), (std::vector<std::string>{"parity_elman", "parity_gru"}));
  fs::remove_all(out);
}
