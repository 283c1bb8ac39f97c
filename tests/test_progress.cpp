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

// Hour-long units (suite cells) get an eta from the running ones' partial work, before any ends.
TEST(Progress, EtaCountsPartialWork) {
  // No unit done and no partial work: no rate, no eta.
  EXPECT_EQ(progress_eta(100, 10, 0, 0, 0.0, 0.0), -1);
  // Two running units each a quarter through after 100 s: 0.5 units in 100 s, 9.5 left.
  EXPECT_DOUBLE_EQ(progress_eta(100, 10, 0, 0, 0.0, 0.5), 1900);
  // Resumed units: the work done before they started is not counted as this run's.
  EXPECT_DOUBLE_EQ(progress_eta(100, 10, 0, 0, 0.4, 0.5), 9.5 * 1000);
  // ... and stays subtracted once they finish: one resumed at 0.4 finished, one at 0.5 running.
  EXPECT_DOUBLE_EQ(progress_rate(100, 0, 1, 0.4, 0.5), 0.011);
  // Skipped units (start) are neither rate nor remainder: 3 of 10 done, 1 of them this run.
  EXPECT_DOUBLE_EQ(progress_eta(100, 10, 2, 3, 0.0, 0.0), 700);
  EXPECT_EQ(progress_eta(0, 10, 0, 1, 0.0, 0.0), -1);
}

TEST(Progress, FinishIsIdempotent) {
  Progress p("x", 3);
  p.update(3);
  p.finish();
  p.finish();  // no second final line, no crash
  SUCCEED();
}
