// The typed experiment cells (exp/cells/): every grid's cells read as their kind's config, specs
// are read strictly, and result rows survive a round trip through JSON unchanged (so results.jsonl
// rows keep their keys and values).
#include "seqlab/exp/cell.h"
#include "seqlab/exp/cells/classify.h"
#include "seqlab/exp/cells/defsent.h"
#include "seqlab/exp/cells/kinds.h"
#include "seqlab/exp/cells/lm.h"
#include "seqlab/exp/cells/mae_deq.h"
#include "seqlab/exp/cells/objectives.h"
#include "seqlab/exp/cells/plain.h"
#include "seqlab/exp/grid.h"
#include "seqlab/exp/suite.h"

#include <gtest/gtest.h>

#include <set>

using namespace seqlab;

// Every cell of every suite, quick and full, is of a registered kind and reads as its config:
// a grid that writes a key no kind reads fails here, not in a worker an hour into a run.
TEST(Cells, EveryGridCellReadsAsItsKind) {
  std::set<std::string> used;
  for (const auto& e : suite_registry())
    for (bool quick : {true, false})
      for (const auto& c : make_suite(e.name, quick).cells) {
        const auto& kind = cell_kind_of(c);
        used.insert(kind.name);
        EXPECT_NO_THROW(kind.check(c)) << e.name << " " << c.at("id");
      }
  // Each registered kind is used by some grid, and each has both entry points.
  for (const auto& k : cell_kinds()) {
    EXPECT_TRUE(used.count(k.name)) << k.name << " is used by no suite";
    EXPECT_TRUE(k.run && k.check) << k.name;
    EXPECT_FALSE(k.help.empty()) << k.name;
  }
}

TEST(Cells, UnknownKindNamesTheKnownOnes) {
  try {
    cell_kind_of({{"id", "x"}, {"kind", "lm_trian"}});
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("lm_trian"), std::string::npos) << m;
    EXPECT_NE(m.find("lm_train"), std::string::npos) << m;
    EXPECT_NE(m.find("defsent"), std::string::npos) << m;
  }
  EXPECT_EQ(cell_kind_of({{"id", "x"}}).name, kPlainCellKind);
}

TEST(Cells, SpecsAreReadStrictly) {
  nlohmann::json c = {{"id", "t"},
                      {"kind", "lm_train"},
                      {"model", grid_model("softmax", 16, 1, 32)},
                      {"task", grid_task("lm", 32, 32, {{"corpus", "wordnet"}})},
                      {"train", grid_train(10, 4, 1e-3, 0)},
                      {"eval", {{"context", 32}}}};
  const auto cfg = read_spec<LmTrainCellConfig>(c, "t");
  EXPECT_EQ(cfg.eval.context.value_or(-1), 32);
  EXPECT_EQ(cfg.eval.max_tokens, 65536);  // the default
  EXPECT_FALSE(cfg.label.has_value());
  EXPECT_EQ(cfg.init, "scratch");
  auto typo = c;
  typo["lable"] = "x";
  EXPECT_THROW(read_spec<LmTrainCellConfig>(typo, "t"), Error);
  auto inner = c;
  inner["eval"]["max_tokns"] = 5;
  EXPECT_THROW(read_spec<LmTrainCellConfig>(inner, "t"), Error);
  auto missing = c;
  missing.erase("train");
  EXPECT_THROW(read_spec<LmTrainCellConfig>(missing, "t"), Error);
  auto fraction = c;
  fraction["eval"]["context"] = 2.5;
  EXPECT_THROW(read_spec<LmTrainCellConfig>(fraction, "t"), Error);
  // A nested config is read (and validated) by its own reader.
  auto bad_model = c;
  bad_model["model"]["arch"] = "nonesuch";
  EXPECT_THROW(read_spec<LmTrainCellConfig>(bad_model, "t"), Error);
  // A core config's flag-named fields (d-feature) read from their JSON keys (d_feature).
  nlohmann::json f = {{"id", "f"},
                      {"kind", "lm_finetune"},
                      {"from", "teacher/model"},
                      {"convert", {{"to", "hedgehog"}, {"d_feature", 8}, {"distill_steps", 3}}},
                      {"train", grid_train(10, 4, 1e-3, 0)}};
  const auto ft = read_spec<LmFinetuneCellConfig>(f, "f");
  ASSERT_TRUE(ft.convert.has_value());
  EXPECT_EQ(ft.convert->d_feature, 8);
  EXPECT_EQ(ft.convert->distill_steps, 3);
  EXPECT_FALSE(ft.adapter.has_value());
}

// A row written by a cell and read back by a report is the same row, key for key; unset optional
// fields write nothing.
template <class Row>
void expect_round_trip(const nlohmann::json& j) {
  EXPECT_EQ(read_row<Row>(j).to_json(), j) << j.dump();
}

TEST(Cells, RowsRoundTripThroughJson) {
  LmRow lm;
  lm.cell = "conv_t2r";
  lm.label = "T2R, converted";
  lm.init = "converted";
  lm.arch = "linear";
  lm.feature_map = "t2r";
  lm.ppl = 3.25;
  lm.seed = 7;
  lm.curve = {{5, 200.5}, {10, 150.25}};
  lm.adapter = "none";
  lm.ppl_converted = 9.5;
  lm.distill_before = std::vector<double>{1.5, 2.5};
  const auto j = lm.to_json();
  EXPECT_EQ(j.at("kind"), "lm");
  EXPECT_EQ(j.at("curve"), nlohmann::json::parse("[[5, 200.5], [10, 150.25]]"));
  EXPECT_FALSE(j.contains("adapter_rank"));
  EXPECT_FALSE(j.contains("distill_after"));
  expect_round_trip<LmRow>(j);

  MaeDeqRow m;
  m.cell = "deq_implicit";
  m.deq_trace = std::vector<DeqTracePoint>{{5, 8, 0.5, 8, 0.25, 0.75}, {10, 8, 0.125, 0, 0.0, 0.0}};
  m.deq_convergence = std::vector<double>{0.5, 0.25};
  m.accuracy_by_task = std::map<std::string, double>{{"copy", 1.0}, {"sort", 0.5}};
  const auto mj = m.to_json();
  EXPECT_EQ(mj.at("deq_trace").dump(), "[[5,8,0.5,8,0.25,0.75],[10,8,0.125,0,0.0,0.0]]");
  expect_round_trip<MaeDeqRow>(mj);
  // A trace written before the Jacobian entry (five per point) still reads, with 0 there.
  auto old = mj;
  old["deq_trace"] = nlohmann::json::parse("[[5,8,0.5,8,0.25]]");
  const auto back = read_row<MaeDeqRow>(old);
  ASSERT_EQ(back.deq_trace->size(), 1u);
  EXPECT_EQ(back.deq_trace->front().jacobian, 0.0);
  EXPECT_EQ(back.deq_trace->front().bwd_residual, 0.25);

  UncertaintyRow u;
  u.kind = "uncertainty";
  u.method = "swag";
  u.entropy_pearson = 0.5;
  expect_round_trip<UncertaintyRow>(u.to_json());
  ExitCurveRow e;
  e.kind = "exit_curve";
  e.exit_share = {0.25, 0.75};
  expect_round_trip<ExitCurveRow>(e.to_json());
  DefsentRow d;
  d.method = "random";
  EXPECT_FALSE(d.to_json().contains("train_seconds"));
  expect_round_trip<DefsentRow>(d.to_json());
  ObjectivesRow o;
  EXPECT_FALSE(o.to_json().contains("cell"));  // `seqlab pretrain`'s rows have none
  expect_round_trip<ObjectivesRow>(o.to_json());
}

// A plain row keeps the task's metrics and the cell's tags; a row from before train_task existed
// was trained on its test task.
TEST(Cells, PlainRowKeepsTaskMetricsAndTags) {
  const auto j = nlohmann::json::parse(
      R"({"task": "dyck_bounded", "arch": "lstm", "seed": 1, "test_length": 16, "accuracy": 0.5,
          "pos_share": 0.5, "pos_right": 0.25, "width": 64, "saturation_scale": 2.0})");
  const auto r = PlainRow::from_json(j);
  EXPECT_EQ(r.train_task, "dyck_bounded");
  EXPECT_EQ(r.scale(), 2.0);
  EXPECT_FALSE(r.blind_accuracy.has_value());
  EXPECT_EQ(r.metric("pos_right").value_or(-1), 0.25);
  EXPECT_FALSE(r.metric("neg_right").has_value());
  EXPECT_EQ(r.extra.at("width"), 64);
  const auto back = r.to_json();
  for (auto it = j.begin(); it != j.end(); ++it) EXPECT_EQ(back.at(it.key()), it.value());
}
