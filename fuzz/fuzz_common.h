// Shared by the fuzz targets: what counts as a finding, and writing seed corpora.
//
// A target feeds the bytes to one reader. seqlab::Error is the expected answer to bad input;
// anything else (another exception, a crash, an ASan/UBSan report, a leak, a timeout, an
// allocation over libFuzzer's -malloc_limit_mb) is a finding. Oracles that must hold on every
// accepted input (a round trip, two implementations agreeing) call finding(), which aborts.
//
// Seeds: run a target with SEQLAB_FUZZ_WRITE_SEEDS=<dir> and it writes its seed inputs there and
// exits (fuzz/corpus/<target>/ holds the committed ones).
#pragma once

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace seqlab::fuzz {

[[noreturn]] inline void finding(const std::string& what) {
  fmt::print(stderr, "FINDING: {}\n", what);
  std::abort();
}

// Writes seeds[i] to <SEQLAB_FUZZ_WRITE_SEEDS>/seed<i> and exits, if that variable is set.
inline void maybe_write_seeds(const std::vector<std::string>& seeds) {
  const char* dir = std::getenv("SEQLAB_FUZZ_WRITE_SEEDS");
  if (!dir) return;
  for (size_t i = 0; i < seeds.size(); ++i) {
    const std::string path = fmt::format("{}/seed{}", dir, i);
    std::ofstream(path, std::ios::binary) << seeds[i];
    fmt::print(stderr, "wrote {} ({} bytes)\n", path, seeds[i].size());
  }
  std::exit(0);
}

}  // namespace seqlab::fuzz
