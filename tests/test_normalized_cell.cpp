// normalized_cell: a spec written before a config field existed compares equal to the spec the
// current code writes, section by section (here the convert section, which gained short_conv), and
// a field at another value, or a key no config knows, still makes them differ.
#include "seqlab/convert/convert.h"
#include "seqlab/exp/grid.h"

#include <gtest/gtest.h>

using namespace seqlab;

namespace {

nlohmann::json conversion_cell() {
  ConvertConfig cc;
  cc.visit(DefaultsVisitor{});
  cc.to = "hedgehog";
  cc.distill_steps = 30;
  return {{"id", "c"}, {"kind", "lm_finetune"}, {"convert", cc.to_json()}};
}

}  // namespace

TEST(NormalizedCell, AConvertSectionWithoutANewerFieldIsTheSameSpec) {
  const auto now = conversion_cell();
  auto old = now;
  ASSERT_EQ(old["convert"].erase("short_conv"), 1u);
  EXPECT_NE(old, now);
  EXPECT_EQ(normalized_cell(old), normalized_cell(now));
  auto changed = now;
  changed["convert"]["short_conv"] = 4;
  EXPECT_NE(normalized_cell(changed), normalized_cell(now));
  auto unknown = old;
  unknown["convert"]["short_conv_width"] = 0;  // not a field: compared as written
  EXPECT_NE(normalized_cell(unknown), normalized_cell(now));
}
