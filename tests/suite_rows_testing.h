// A suite's results.jsonl read back by cell, one map per split (lm suites write a valid and a
// test row per model), for the CLI tests of the conversion and Tied-LoRA grids.
#pragma once

#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <string>

namespace seqlab::testing {

struct SplitRows {
  std::map<std::string, nlohmann::json> valid, test;  // by cell id
};

inline SplitRows read_split_rows(const std::string& results_jsonl) {
  SplitRows rows;
  std::ifstream f(results_jsonl);
  std::string line;
  while (std::getline(f, line)) {
    auto j = nlohmann::json::parse(line);
    (j["split"] == "test" ? rows.test : rows.valid)[j["cell"].get<std::string>()] = j;
  }
  return rows;
}

}  // namespace seqlab::testing
