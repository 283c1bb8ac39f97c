// core/malloc_tune.h: the seqlab binary's malloc settings change where memory comes from, not what
// is computed. The same MQAR training run with them (the default) and without
// (SEQLAB_MALLOC_TUNE=0) writes byte-identical weights and the same metrics.
#include "cli_testing.h"

#include <cstdlib>

using namespace seqlab::testing;

namespace {

// Trains a small MQAR model (the grid's shape at P = 8, width 32) into a fresh directory.
std::string train_mqar(const std::string& name, bool tuned) {
  const auto dir = cli_tmp(name);
  if (tuned)
    unsetenv("SEQLAB_MALLOC_TUNE");
  else
    setenv("SEQLAB_MALLOC_TUNE", "0", 1);
  auto r = run_seqlab(
      "train --task mqar --vocab 256 --n-pairs 8 --max-len 64 --arch softmax "
      "--n-head 1 --d-model 32 --n-layer 2 --steps 40 --batch 16 --lr 3e-3 "
      "--threads 1 --eval-every 40 --eval-size 16 --out " +
      dir);
  unsetenv("SEQLAB_MALLOC_TUNE");
  EXPECT_EQ(r.code, 0) << r.err;
  return dir;
}

}  // namespace

TEST(MallocTune, TunedAndDefaultMallocTrainTheSameWeights) {
  const auto tuned = train_mqar("tuned", true), plain = train_mqar("plain", false);
  const auto a = slurp_file(tuned + "/model.safetensors"),
             b = slurp_file(plain + "/model.safetensors");
  ASSERT_GT(a.size(), 1000u);
  EXPECT_TRUE(a == b) << "the weights differ";
  EXPECT_EQ(slurp_file(tuned + "/metrics.jsonl").size() > 0, true);
}
