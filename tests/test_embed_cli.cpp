// seqlab embed and embed-eval from the command line: JSONL and .npy output equal the encoder's
// own embeddings of each line; bad input is one "error:" line and exit code 2.
#include "seqlab/methods/encoder.h"

#include "cli_testing.h"
#include "dictionary_testing.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <sstream>

using namespace seqlab;
using namespace seqlab::testing;

namespace {

const std::vector<std::string> kLines = {"hello", "a dog barked", "", "x", "the cat"};

std::string model_dir() {
  static const std::string dir = [] {
    ModelConfig c;
    c.mixer.arch = "softmax";
    c.mixer.d_model = 16;
    c.mixer.n_head = 2;
    c.mixer.max_len = 32;
    c.n_layer = 1;
    c.mlp_ratio = 2;
    EncoderSpec s;
    s.max_tokens = 24;
    auto e = make_encoder(c, make_tokenizer("byte"), s);
    const auto d = cli_tmp("encoder");
    save_encoder(d, e);
    return d;
  }();
  return dir;
}

std::string input() {
  std::string s;
  for (const auto& l : kLines) s += l + "\n";
  return s;
}

torch::Tensor expected(const std::string& pooling = "") {
  return load_encoder(model_dir(), pooling).embed(kLines);
}

torch::Tensor parse_jsonl(const std::string& text) {
  std::vector<torch::Tensor> rows;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    rows.push_back(torch::tensor(nlohmann::json::parse(line).get<std::vector<float>>()));
  return torch::stack(rows);
}

void expect_close(const torch::Tensor& a, const torch::Tensor& b) {
  ASSERT_EQ(a.sizes(), b.sizes());
  EXPECT_LE((a - b).abs().max().item<double>(), 1e-6);
}

}  // namespace

TEST(EmbedCli, JsonlOnStdout) {
  auto r = run_seqlab("embed --model " + model_dir() + " -q", input());
  ASSERT_EQ(r.code, 0) << r.err;
  expect_close(parse_jsonl(r.out), expected());
  auto m = run_seqlab("embed --model " + model_dir() + " --pooling max -q", input());
  ASSERT_EQ(m.code, 0) << m.err;
  expect_close(parse_jsonl(m.out), expected("max"));
  auto empty = run_seqlab("embed --model " + model_dir() + " -q", "");
  EXPECT_EQ(empty.code, 0);
  EXPECT_EQ(empty.out, "");
}

TEST(EmbedCli, FilesJsonlAndNpy) {
  const auto in = cli_tmp("lines.txt"), npy = cli_tmp("out.npy"), jl = cli_tmp("out.jsonl");
  std::ofstream(in) << input();
  auto r = run_seqlab("embed --model " + model_dir() + " --input " + in + " --output " + npy +
                      " --batch 2");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("embed"), std::string::npos) << "no progress on stderr: " << r.err;
  const auto bytes = slurp_file(npy);
  ASSERT_GT(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(0, 6), "\x93NUMPY");
  const size_t hlen =
      static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  EXPECT_EQ((10 + hlen) % 64, 0u);
  const auto header = bytes.substr(10, hlen);
  EXPECT_NE(header.find("'descr': '<f4'"), std::string::npos) << header;
  EXPECT_NE(header.find("'shape': (5, 16)"), std::string::npos) << header;
  ASSERT_EQ(bytes.size(), 10 + hlen + 5 * 16 * 4);
  auto got = torch::empty({5, 16});
  std::memcpy(got.data_ptr<float>(), bytes.data() + 10 + hlen, 5 * 16 * 4);
  expect_close(got, expected());
  auto j = run_seqlab("embed -q --model " + model_dir() + " --input " + in + " --output " + jl);
  ASSERT_EQ(j.code, 0) << j.err;
  expect_close(parse_jsonl(slurp_file(jl)), expected());
}

TEST(EmbedCli, BadInputIsAnError) {
  expect_cli_error("embed --model " + model_dir() + " --pooling sum", "unknown pooling", input());
  expect_cli_error("embed --model " + cli_tmp("nonesuch"), "nonesuch", input());
  expect_cli_error("embed --model " + model_dir() + " --format npy", "--output", input());
  expect_cli_error("embed --model " + model_dir() + " --format csv", "format", input());
  expect_cli_error("embed --model " + model_dir() + " --input " + cli_tmp("missing.txt"),
                   "missing.txt");
  expect_cli_error("embed-eval --model " + model_dir() + " --pooling sum", "unknown pooling");
  const auto empty = write_empty_wordnet("cli_empty");
  setenv("SEQLAB_WORDNET_DIR", empty.c_str(), 1);
  expect_cli_error("embed-eval --model " + model_dir(), "no synsets");
  unsetenv("SEQLAB_WORDNET_DIR");
}

// On the fake WordNet the held-out definitions are able, live (queries: candidates able, live),
// cut, cas and dag (the only three noun pairs).
TEST(EmbedCli, EvalOnFakeWordNetIsOneJsonDocument) {
  const auto wn = write_fake_wordnet("cli_fake");
  setenv("SEQLAB_WORDNET_DIR", wn.c_str(), 1);
  auto r = run_seqlab("embed-eval --model " + model_dir() + " --json --pairs 3 -q");
  unsetenv("SEQLAB_WORDNET_DIR");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["candidates"], 5);  // able, cas, cut, dag, live
  EXPECT_EQ(j["queries"], 5);
  EXPECT_EQ(j["pairs"], 3);
  EXPECT_GE(j["mrr"].get<double>(), 1.0 / 5);
  EXPECT_LE(j["mrr"].get<double>(), 1.0);
  EXPECT_EQ(j["recall10"], 1.0);  // 5 candidates: every gold is in the top 10
}
