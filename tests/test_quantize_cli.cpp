// seqlab quantize (issue 35 §1): a trained model stored as int8 and bf16; the files shrink as the
// formats say, every command loads them, perplexity stays close to f32's without being equal, the
// fast engine runs a stored directory in its format, and the refusals.
#include "cli_testing.h"
#include "word_corpus_testing.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

using namespace seqlab::testing;
namespace fs = std::filesystem;

namespace {

const std::string& trained() {
  static const std::string dir = [] {
    const auto corpus = cli_tmp("quantize_corpus.txt");
    write_word_corpus(corpus, 300);
    const auto d = cli_tmp("quantize_model");
    auto r = run_seqlab("train --task lm --corpus " + corpus +
                        " --tokenizer byte --arch softmax --d-model 64 --n-head 2 --n-layer 2 "
                        "--min-len 24 --max-len 24 --steps 20 --batch 8 --lr 3e-3 --warmup 5 "
                        "--eval-every 20 --eval-size 8 --threads 1 -q --out " +
                        d);
    EXPECT_EQ(r.code, 0) << r.err;
    return d;
  }();
  return dir;
}

nlohmann::json run_json(const std::string& args) {
  auto r = run_seqlab(args);
  EXPECT_EQ(r.code, 0) << args << "\n" << r.err;
  if (r.code != 0) return nlohmann::json::object();
  return nlohmann::json::parse(r.out);
}

std::string quantize(const std::string& to) {
  const auto out = cli_tmp("quantize_" + to);
  fs::remove_all(out);
  const auto j =
      run_json("quantize --model " + trained() + " --to " + to + " --out " + out + " --json -q");
  EXPECT_EQ(j.value("weights", ""), to) << j.dump();
  EXPECT_GT(j.value("tensors_quantized", 0), 0) << j.dump();
  const double ratio = j.value("bytes_after", 0.0) / j.value("bytes_before", 1.0);
  // bf16 halves the matrices; int8 stores 34 bytes per 32 weights: a bit over a quarter.
  EXPECT_LT(ratio, to == "bf16" ? 0.55 : 0.32) << j.dump();
  EXPECT_GT(ratio, to == "bf16" ? 0.45 : 0.25) << j.dump();
  return out;
}

}  // namespace

TEST(QuantizeCli, StoredFormatsLoadEverywhereAndStayCloseToF32) {
  const double f32 = run_json("eval --model " + trained() + " --json --threads 1 -q")["ppl"];
  for (const auto& [to, tol] : {std::pair<std::string, double>{"bf16", 0.01}, {"int8", 0.02}}) {
    SCOPED_TRACE(to);
    const auto dir = quantize(to);
    const auto config = nlohmann::json::parse(slurp_file(dir + "/config.json"));
    EXPECT_EQ(config["weights"]["format"], to);
    EXPECT_TRUE(fs::exists(dir + "/tokenizer.json") == fs::exists(trained() + "/tokenizer.json"));
    const auto e = run_json("eval --model " + dir + " --json --threads 1 -q");
    const double p = e["ppl"];
    EXPECT_NEAR(p, f32, tol * f32);
    EXPECT_NE(p, f32) << "the weights did not change";
    const auto fast = run_json("eval --model " + dir + " --engine fast --json --threads 1 -q");
    EXPECT_EQ(fast["weights"], to) << "the fast engine runs a stored directory in its format";
  }
}

// The fast engine runs a stored int8 directory in int8 by default (--weights overrides it). It is
// close to `--weights int8` on the f32 directory, not bitwise equal: the matrices re-quantize to
// the same integers and scales, but the token embedding (stored int8 too) is looked up dequantized,
// where the fast decoder of an f32 directory keeps its embedding in fp32.
TEST(QuantizeCli, StoredInt8RunsInInt8AndMatchesRuntimeInt8Closely) {
  const auto dir = quantize("int8");
  const std::string gen = " --prompt-ids '1 2 3 4' -n 8 --json -q";
  EXPECT_EQ(run_json("generate --model " + dir + gen)["weights"], "int8");
  EXPECT_EQ(run_json("generate --model " + dir + " --weights f32" + gen)["weights"], "f32");
  const std::string ev = " --engine fast --json --threads 1 -q";
  const double stored = run_json("eval --model " + dir + ev)["ppl"];
  const double runtime = run_json("eval --model " + trained() + " --weights int8" + ev)["ppl"];
  EXPECT_NEAR(stored, runtime, 0.005 * runtime);
}

TEST(QuantizeCli, RefusesWhatItCannotDo) {
  const auto out = cli_tmp("quantize_refusals");
  fs::remove_all(out);
  auto r = run_seqlab("quantize --model " + trained() + " --to int4 --out " + out + " -q");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("int4"), std::string::npos) << r.err;
  fs::create_directories(out);
  std::ofstream(out + "/notes.txt") << "keep me";
  r = run_seqlab("quantize --model " + trained() + " --to int8 --out " + out + " -q");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("not empty"), std::string::npos) << r.err;
  r = run_seqlab("quantize --model " + trained() + " --to int8 --out " + out + " --force -q");
  EXPECT_NE(r.code, 0) << "--force replaces only a model directory";
  EXPECT_TRUE(fs::exists(out + "/notes.txt"));
  r = run_seqlab("quantize --model " + trained() + " --to int8 --out " + trained() + "/sub -q");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("inside --model"), std::string::npos) << r.err;
  r = run_seqlab("quantize --model " + cli_tmp("no_such_model") + " --to int8 --out " + out +
                 "2 -q");
  EXPECT_NE(r.code, 0);
  EXPECT_FALSE(fs::exists(out + "2/config.json"));
}
