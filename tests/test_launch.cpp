// The --nproc launcher's argument filtering (train/launch.h, worker_args): what each worker runs
// with, before launch_local_workers appends its own rank and rendezvous. The launch itself (real
// workers, a killed one) is tested end to end in tests/test_distributed.cpp.
#include "seqlab/train/launch.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

using namespace seqlab;

namespace {

using Args = std::vector<std::string>;

Args words(const std::string& s) {
  Args out;
  std::istringstream in(s);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

}  // namespace

TEST(WorkerArgs, KeepsTheCommandLineAndAddsAShareOfTheCores) {
  const Args in = {"train", "--task", "parity", "--nproc", "2", "--out", "d"};
  Args want = in;
  want.insert(want.end(), {"--threads", "4"});
  EXPECT_EQ(worker_args(in, 2, /*threads_given=*/false, /*cores=*/8), want);
  // At least one thread each, however many workers share the cores.
  want.back() = "1";
  EXPECT_EQ(worker_args(in, 3, false, 2), want);
}

TEST(WorkerArgs, GivenThreadsAreLeftAlone) {
  const Args in = {"train", "--threads", "3", "--nproc", "2"};
  EXPECT_EQ(worker_args(in, 2, /*threads_given=*/true, 8), in);
}

TEST(WorkerArgs, DropsTheRendezvousFlagsInBothSpellings) {
  const Args in = words(
      "train --rank 1 --world-size=4 --nproc 2 --master-addr 127.0.0.1 --master-port=29501 "
      "--world-size 4 --master-port 7 --rank=0 --out d");
  const Args want = {"train", "--nproc", "2", "--out", "d"};
  EXPECT_EQ(worker_args(in, 2, true, 8), want);
}

TEST(WorkerArgs, ADanglingRendezvousFlagIsKept) {
  // Without a value there is nothing to drop with it; the worker's parser reports it.
  const Args in = {"train", "--out", "d", "--rank"};
  EXPECT_EQ(worker_args(in, 2, true, 8), in);
  // A flag that only starts like one of them is not one of them.
  const Args similar = {"train", "--ranks", "1", "--master-address", "x"};
  EXPECT_EQ(worker_args(similar, 2, true, 8), similar);
}
