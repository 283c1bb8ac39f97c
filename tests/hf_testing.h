// Shared pieces of the Hugging Face import tests (test_hf_*.cpp): the committed fixtures in
// tests/data/hf/<family>/ (scripts/make_hf_fixtures.py writes them, with reference.json: the
// logits of a 16-token prompt and its 8-token greedy continuation from each family's own math in
// Python), scratch directories, and the checks every family runs.
#pragma once

#include <gtest/gtest.h>

#include "seqlab/core/atomic_file.h"
#include "seqlab/core/error.h"
#include "seqlab/core/safetensors.h"
#include "seqlab/model/hf_import.h"
#include "seqlab/model/model_dir.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace seqlab::testing {

namespace hf_fs = std::filesystem;

inline hf_fs::path hf_fixture(const std::string& family) {
  const char* src = std::getenv("SEQLAB_SOURCE_DIR");
  const hf_fs::path data =
      src ? hf_fs::path(src) / "tests" / "data" : hf_fs::path(__FILE__).parent_path() / "data";
  return data / "hf" / family;
}

// This process's scratch directory (removed at exit by the caller's environment or left in /tmp).
inline hf_fs::path hf_scratch() {
  static const hf_fs::path d = [] {
    auto p = hf_fs::temp_directory_path() / ("seqlab_test_hf." + std::to_string(getpid()));
    hf_fs::remove_all(p);
    hf_fs::create_directories(p);
    return p;
  }();
  return d;
}

struct HfScratchCleanup : ::testing::Environment {
  void TearDown() override {
    std::error_code ec;
    hf_fs::remove_all(hf_scratch(), ec);
  }
};

// A fresh (removed) path in the scratch directory.
inline std::string hf_tmp(const std::string& name) {
  auto d = hf_scratch() / name;
  hf_fs::remove_all(d);
  return d.string();
}

// A copy of a fixture, to edit.
inline std::string hf_copy(const std::string& family, const std::string& name) {
  const auto d = hf_tmp(name);
  hf_fs::copy(hf_fixture(family), d, hf_fs::copy_options::recursive);
  return d;
}

inline nlohmann::json hf_read_json(const std::string& path) {
  return nlohmann::json::parse(read_file(path));
}

inline void hf_edit_config(const std::string& dir,
                           const std::function<void(nlohmann::json&)>& edit) {
  auto j = hf_read_json(dir + "/config.json");
  edit(j);
  write_file_atomic(dir + "/config.json", j.dump(2));
}

struct HfReference {
  std::vector<int64_t> tokens, greedy;
  torch::Tensor logits;  // [T,V] float64
};

inline HfReference hf_reference(const std::string& family) {
  const auto j = hf_read_json((hf_fixture(family) / "reference.json").string());
  HfReference r;
  r.tokens = j["tokens"].get<std::vector<int64_t>>();
  r.greedy = j["greedy"].get<std::vector<int64_t>>();
  std::vector<double> flat;
  for (const auto& row : j["logits"])
    for (const auto& v : row) flat.push_back(v.get<double>());
  r.logits = torch::tensor(flat, torch::kFloat64).view({static_cast<int64_t>(r.tokens.size()), -1});
  return r;
}

// max over elements of |got - ref| / max(1, |ref|).
inline double hf_rel_error(const torch::Tensor& got, const torch::Tensor& ref) {
  const auto r = ref.to(torch::kFloat64);
  return ((got.to(torch::kFloat64) - r).abs() / r.abs().clamp_min(1.0)).max().item<double>();
}

inline std::string hf_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const seqlab::Error& e) {
    return e.what();
  }
  return "(no error)";
}

#define EXPECT_HF_HAS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

// forward on the prompt equals the reference within 1e-4 relative; step() equals forward at
// every position; the greedy continuation by step() equals the reference's.
inline void hf_expect_matches_reference(SeqModelImpl& m, const HfReference& ref) {
  torch::NoGradGuard ng;
  const auto T = static_cast<int64_t>(ref.tokens.size());
  auto tokens = torch::tensor(ref.tokens, torch::kLong).view({1, T});
  auto logits = m.forward(tokens)[0];  // [T,V]
  ASSERT_EQ(logits.sizes(), ref.logits.sizes());
  EXPECT_LE(hf_rel_error(logits, ref.logits), 1e-4)
      << "forward: first logits " << logits[0].slice(0, 0, 4) << "\nreference "
      << ref.logits[0].slice(0, 0, 4);
  EXPECT_GT(ref.logits.abs().max().item<double>(), 1.0);  // the check is not vacuous

  auto state = m.init_state(1);
  torch::Tensor last;
  for (int64_t t = 0; t < T; ++t) {
    last = m.step(tokens.select(1, t), state)[0];  // [V]
    EXPECT_LE(hf_rel_error(last, logits[t]), 2e-5) << "step " << t;
  }
  std::vector<int64_t> greedy;
  for (size_t i = 0; i < ref.greedy.size(); ++i) {
    greedy.push_back(last.argmax().item<int64_t>());
    last = m.step(torch::tensor({greedy.back()}, torch::kLong), state)[0];
  }
  EXPECT_EQ(greedy, ref.greedy);
}

// Import -> export -> import: the exported file holds the fixture's tensors (bar the dropped
// buffers and a tied head) bit for bit in fp32, under the same names, with {"format": "pt"}; the
// second import equals the first bit for bit. Returns the exported config.json.
inline nlohmann::json hf_expect_round_trip(const std::string& family,
                                           const std::function<bool(const std::string&)>& dropped) {
  const auto out1 = hf_tmp(family + "_rt1"), hf2 = hf_tmp(family + "_rt_hf"),
             out2 = hf_tmp(family + "_rt2");
  auto first = import_hf(hf_fixture(family).string(), out1);
  export_hf(out1, hf2);

  const auto original = read_hf_weights(hf_fixture(family).string()).tensors;
  auto file = load_safetensors(hf2 + "/model.safetensors");
  EXPECT_EQ(file.metadata.at("format"), "pt");
  size_t n = 0;
  for (const auto& [name, t] : original) {
    if (dropped(name)) continue;
    ++n;
    auto it = file.tensors.find(name);
    if (it == file.tensors.end()) {
      ADD_FAILURE() << family << ": export lacks " << name;
      continue;
    }
    EXPECT_EQ(it->second.scalar_type(), torch::kFloat32) << name;
    EXPECT_TRUE(torch::equal(it->second, t.to(torch::kFloat32))) << family << ": " << name;
  }
  EXPECT_EQ(file.tensors.size(), n) << family << ": the export has extra tensors";

  auto second = import_hf(hf2, out2);
  auto t1 = model_tensors(*first.model.model), t2 = model_tensors(*second.model.model);
  EXPECT_EQ(t1.size(), t2.size());
  for (const auto& [name, t] : t1) EXPECT_TRUE(torch::equal(t, t2.at(name))) << family << name;
  EXPECT_EQ(first.model.config.to_json(), second.model.config.to_json()) << family;
  const auto cfg = hf_read_json(hf2 + "/config.json");
  EXPECT_EQ(cfg["torch_dtype"], "float32");
  return cfg;
}

}  // namespace seqlab::testing
