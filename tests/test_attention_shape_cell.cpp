// The attention_shape cell and its suite's report on the shipped teacher (models/teacher-en):
// the teacher against itself must give rho = 1 and its own entropy, a converted map a row per
// layer and head, and the report a row per (map, source).
#include "seqlab/exp/cell.h"
#include "seqlab/exp/cells/attention_shape.h"
#include "seqlab/exp/suite.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

using namespace seqlab;

namespace {

// Runs a cell from the repository root (the teacher's corpus paths are relative to it).
nlohmann::json run_from_root(nlohmann::json cell) {
  const auto prev = std::filesystem::current_path();
  std::filesystem::current_path(std::getenv("SEQLAB_SOURCE_DIR"));
  cell["kind"] = "attention_shape";
  cell["teacher"] = "models/teacher-en";
  cell["windows"] = 1;
  cell["length"] = 32;
  nlohmann::json out;
  try {
    out = run_cell(cell, "");
  } catch (...) {
    std::filesystem::current_path(prev);
    throw;
  }
  std::filesystem::current_path(prev);
  return out;
}

}  // namespace

TEST(AttentionShapeCell, TeacherAgainstItselfAndAConvertedMap) {
  if (!std::getenv("SEQLAB_SOURCE_DIR"))
    GTEST_SKIP() << "SEQLAB_SOURCE_DIR not set (ctest sets it)";
  const auto self = run_from_root({{"id", "softmax"}, {"to", "softmax"}, {"source", "reference"}});
  ASSERT_EQ(self["rows"].size(), 16u);  // 4 layers x 4 heads
  for (const auto& j : self["rows"]) {
    const auto r = read_row<AttentionShapeRow>(j);
    EXPECT_EQ(r.map, "softmax");
    EXPECT_EQ(r.rows, 31);
    EXPECT_NEAR(*r.spearman, 1, 1e-9);
    EXPECT_NEAR(r.entropy, r.entropy_softmax, 1e-9);
  }
  const auto elu = run_from_root({{"id", "u"}, {"to", "elu1"}});
  ASSERT_EQ(elu["rows"].size(), 16u);
  const auto r = read_row<AttentionShapeRow>(elu["rows"][0]);
  EXPECT_EQ(r.map, "elu1");
  EXPECT_EQ(r.source, "untrained");
  EXPECT_GT(r.entropy, 0);
  EXPECT_LT(r.entropy, std::log(32.0));
  // Exactly one of to / from.
  EXPECT_THROW(run_from_root({{"id", "x"}}), std::exception);

  std::vector<nlohmann::json> rows;
  for (const auto& j : self["rows"]) rows.push_back(j);
  for (const auto& j : elu["rows"]) rows.push_back(j);
  const auto md = make_suite("attention_shape", true).custom_report(rows, "");
  EXPECT_NE(md.find("| softmax | reference | 1 | 16 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| elu1 | untrained | 1 | 16 |"), std::string::npos) << md;
}
