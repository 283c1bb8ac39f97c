#include "seqlab/core/progress.h"

#include <gtest/gtest.h>

using namespace seqlab;

TEST(Progress, FormatDuration) {
  EXPECT_EQ(format_duration(0), "0s");
  EXPECT_EQ(format_duration(59.4), "59s");
  EXPECT_EQ(format_duration(61), "1m01s");
  EXPECT_EQ(format_duration(3725), "1h02m");
  EXPECT_EQ(format_duration(-1), "?");
}

TEST(Progress, FinishIsIdempotent) {
  Progress p("x", 3);
  p.update(3);
  p.finish();
  p.finish();  // no second final line, no crash
  SUCCEED();
}
