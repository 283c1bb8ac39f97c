// The defsent suite's cells end to end on the fake WordNet (tests/dictionary_testing.h), tiny:
// the mlm cell writes an encoder and measures it before and after pretraining, a DefSent+ cell
// starts from it and reports each round, and the suite's report renders their rows. Cell specs
// with unknown fields or missing dependencies are refused.
#include "seqlab/exp/cells/defsent.h"

#include "seqlab/core/error.h"
#include "seqlab/exp/grid.h"
#include "seqlab/exp/suite.h"
#include "seqlab/methods/encoder.h"

#include "dictionary_testing.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <utility>

using namespace seqlab;
using namespace seqlab::testing;
namespace fs = std::filesystem;

namespace {

nlohmann::json cell(const std::string& id, const std::string& stage,
                    const std::string& arch = "softmax") {
  nlohmann::json c = {{"id", id},
                      {"kind", "defsent"},
                      {"stage", stage},
                      {"seed", 3},
                      {"encoder", {{"pooling", "mean"}, {"max_tokens", 24}}},
                      {"eval", {{"max_queries", 0}, {"n_pairs", 3}}}};
  if (stage == "mlm") {
    c["model"] = grid_model(arch, 16, 1, 24,
                            {{"n_head", 2},
                             {"causal", false},
                             {"head", "tag"},
                             {"vocab_size", 302},
                             {"n_classes", 302}});
    c["bpe_vocab"] = 300;
    c["mlm"] = {{"steps", 20}, {"batch", 4}, {"lr", 1e-3}};
  } else {
    c["from"] = "mlm";
    c["after"] = {"mlm"};
    c["train"] = {{"steps", 10}, {"batch", 4}, {"lr", 1e-3}, {"temperature", 0.1}};
    c["entries"] = 0;
  }
  return c;
}

}  // namespace

TEST(DefSentCell, MlmThenDefSentPlusOnFakeWordNet) {
  const auto wn = write_fake_wordnet("cell_wn");
  setenv("SEQLAB_WORDNET_DIR", wn.c_str(), 1);
  const auto runs = dict_scratch("cell_runs");
  auto m = run_defsent_cell(cell("mlm", "mlm"), (runs / "mlm").string());
  // Each encoder measured on valid, then test (disjoint held-out definitions).
  ASSERT_EQ(m["rows"].size(), 4u);
  EXPECT_EQ(m["rows"][0]["method"], "random");
  EXPECT_EQ(m["rows"][2]["method"], "mlm");
  for (const auto& r : m["rows"]) {
    const bool test = r["split"] == "test";
    EXPECT_EQ(r["split"], &r == &m["rows"][0] || &r == &m["rows"][2] ? "valid" : "test");
    EXPECT_EQ(r["queries"], test ? 5 : 3);  // test: able, live, cut, cas, dag; valid: bob, cot, fit
    EXPECT_EQ(r["candidates"], test ? 5 : 4);  // valid entries: bob, cot, dog, fit
    EXPECT_EQ(r["pairs"], 3);
    EXPECT_GT(r["mrr"].get<double>(), 0.0);
    EXPECT_FALSE(r.contains("lr"));
  }
  auto enc = load_encoder((runs / "mlm" / "model").string());
  EXPECT_EQ(enc.spec().pooling, "mean");
  auto c = cell("dplusw", "defsent_plus");
  c["rounds"] = 2;
  c["whiten"] = true;
  auto p = run_defsent_cell(c, (runs / "dplusw").string());
  unsetenv("SEQLAB_WORDNET_DIR");
  ASSERT_EQ(p["rows"].size(), 4u);
  EXPECT_EQ(p["rows"][0]["method"], "defsent+white");
  EXPECT_EQ(p["rows"][0]["round"], 1);
  EXPECT_EQ(p["rows"][1]["round"], 1);
  EXPECT_EQ(p["rows"][1]["split"], "test");
  EXPECT_EQ(p["rows"][3]["round"], 2);
  EXPECT_EQ(p["rows"][0]["lr"], 1e-3);
  EXPECT_EQ(p["rows"][0]["train_entries"], 11);  // every train entry of the fake
  EXPECT_TRUE(fs::exists(runs / "dplusw" / "model" / "config.json"));
  std::vector<nlohmann::json> rows;
  for (const auto& r : m["rows"]) rows.push_back(r);
  for (const auto& r : p["rows"]) rows.push_back(r);
  const auto md = make_suite("defsent", true).custom_report(rows, "");
  EXPECT_NE(md.find("| defsent+white | 1 |"), std::string::npos) << md;  // label = method here
  EXPECT_NE(md.find("## DefSent+ by round"), std::string::npos) << md;
  // With a plot directory: one scatter per metric, embedded in the report, each plotting its own
  // column of defsent.dat (2 = MRR, 3 = Spearman, 4 = mean cosine).
  const auto plots = dict_scratch("cell_plots");
  const auto with_plots = make_suite("defsent", true).custom_report(rows, plots.string());
  const std::pair<std::string, std::string> panels[] = {
      {"defsent_mrr", "1:2"}, {"defsent_spearman", "1:3"}, {"defsent_isotropy", "1:4"}};
  for (const auto& [stem, cols] : panels) {
    EXPECT_NE(with_plots.find("(plots/" + stem + ".svg)"), std::string::npos) << with_plots;
    std::ifstream f(plots / (stem + ".svg.gp"));
    const std::string gp((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    EXPECT_NE(gp.find("'defsent.dat' using " + cols + " "), std::string::npos)
        << stem << ": " << gp;
  }
}

// The report picks each method's learning rate on valid and shows only that rate's test numbers,
// even when test would have picked the other.
TEST(DefSentReport, LearningRateChosenOnValid) {
  std::vector<nlohmann::json> rows;
  auto row = [&](const std::string& method, double lr, const std::string& split, double mrr,
                 uint64_t seed) {
    DefsentRow r;
    r.cell = fmt::format("{}_{}_{}", method, lr, seed);
    r.method = r.label = method;
    r.arch = "softmax";
    r.seed = seed;
    r.split = split;
    if (lr > 0) r.lr = lr;
    r.mrr = mrr;
    r.spearman = 0.1;
    rows.push_back(r.to_json());
  };
  for (uint64_t seed : {1, 2}) {
    row("mlm", -1, "valid", 0.010, seed);
    row("mlm", -1, "test", 0.011, seed);
    row("defsent", 1e-3, "valid", 0.050 + 0.001 * seed, seed);  // best on valid
    row("defsent", 1e-3, "test", 0.0200, seed);
    row("defsent", 3e-3, "valid", 0.030, seed);
    row("defsent", 3e-3, "test", 0.0900, seed);  // best on test: must not be shown
  }
  const auto md = make_suite("defsent", true).custom_report(rows, "");
  EXPECT_NE(md.find("## Settings chosen on valid"), std::string::npos) << md;
  EXPECT_NE(md.find("| softmax | defsent | 0.001 | 2 | 0.0515"), std::string::npos) << md;
  EXPECT_NE(md.find("**chosen**"), std::string::npos) << md;
  EXPECT_NE(md.find("| defsent | 2 | 0.0200"), std::string::npos) << md;
  EXPECT_EQ(md.find("0.0900"), std::string::npos) << md;
}

// A linear-attention (ELU+1) encoder, bidirectional, through the same cell.
TEST(DefSentCell, LinearAttentionEncoder) {
  const auto wn = write_fake_wordnet("cell_wn_linear");
  setenv("SEQLAB_WORDNET_DIR", wn.c_str(), 1);
  const auto runs = dict_scratch("cell_runs_linear");
  auto m = run_defsent_cell(cell("mlm", "mlm", "elu1"), (runs / "mlm").string());
  unsetenv("SEQLAB_WORDNET_DIR");
  ASSERT_EQ(m["rows"].size(), 4u);  // random, mlm; each on valid and test
  EXPECT_EQ(m["rows"][3]["arch"], "elu1");
  auto enc = load_encoder((runs / "mlm" / "model").string());
  EXPECT_EQ(enc.model()->config().mixer.arch, "linear");
  EXPECT_FALSE(enc.model()->config().mixer.causal);
}

TEST(DefSentCell, BadSpecsAreRefused) {
  auto c = cell("d", "defsent");
  EXPECT_NO_THROW(check_defsent_cell(c));
  auto unknown = c;
  unknown["stpes"] = 1;
  EXPECT_THROW(check_defsent_cell(unknown), Error);
  auto no_wait = c;
  no_wait["after"] = nlohmann::json::array();
  EXPECT_THROW(check_defsent_cell(no_wait), Error);
  auto stage = c;
  stage["stage"] = "simcse";
  EXPECT_THROW(check_defsent_cell(stage), Error);
  auto pooling = c;
  pooling["encoder"]["pooling"] = "sum";
  EXPECT_THROW(check_defsent_cell(pooling), Error);
}
