// The sentence encoder: tokens with [CLS], the three poolings recomputed from the hidden states,
// batched embedding equal to one text at a time (no padding leaks in), and a model directory that
// carries its BPE tokenizer and loads back to the same embeddings.
#include "seqlab/methods/encoder.h"

#include "seqlab/core/error.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/text/bpe_trainer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

using namespace seqlab;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) {
  auto p = fs::temp_directory_path() / ("seqlab_test_encoder." + std::to_string(getpid())) / name;
  fs::remove_all(p);
  fs::create_directories(p.parent_path());
  return p;
}

ModelConfig tiny(const std::string& arch = "softmax") {
  ModelConfig c;
  c.mixer.arch = arch;
  c.mixer.d_model = 16;
  c.mixer.n_head = 2;
  c.mixer.max_len = 32;
  c.n_layer = 2;
  c.mlp_ratio = 2;
  return c;
}

Encoder byte_encoder(const std::string& pooling, const std::string& arch = "softmax") {
  EncoderSpec s;
  s.pooling = pooling;
  s.max_tokens = 24;
  return make_encoder(tiny(arch), make_tokenizer("byte"), s);
}

const std::vector<std::string> kTexts = {
    "a dog", "",  "the cat sat",
    "a cow", "x", "a very long text that will be cut at twenty-four tokens"};

void expect_close(const torch::Tensor& a, const torch::Tensor& b, double tol,
                  const std::string& what) {
  const double d = (a - b).abs().max().item<double>();
  EXPECT_LE(d, tol) << what << ": max difference " << d << "\nfirst: " << a.flatten().slice(0, 0, 4)
                    << "\nvs: " << b.flatten().slice(0, 0, 4);
}

}  // namespace

TEST(Encoder, TokensStartWithClsAndAreCut) {
  auto e = byte_encoder("mean");
  EXPECT_EQ(e.cls_id(), 257);
  EXPECT_EQ(e.mask_id(), 258);
  EXPECT_EQ(e.model()->config().vocab_size, 259);
  EXPECT_EQ(e.tokens("ab"), (std::vector<int64_t>{257, 'a', 'b'}));
  EXPECT_EQ(e.tokens(""), (std::vector<int64_t>{257}));
  EXPECT_EQ(e.tokens(kTexts.back()).size(), 24u);
  EXPECT_FALSE(e.model()->config().mixer.causal);
}

TEST(Encoder, PoolingsFromHiddenStates) {
  auto e = byte_encoder("mean");
  e.model()->eval();
  torch::NoGradGuard ng;
  auto tok = torch::tensor(e.tokens("pooling!")).unsqueeze(0);  // [1,T]
  auto h = e.model()->hidden(tok)[0];                           // [T,D]
  const int64_t T = h.size(0), D = h.size(1);
  auto mean = torch::zeros({D}), mx = torch::full({D}, -1e30);
  for (int64_t t = 0; t < T; ++t) {
    mean += h[t] / T;
    mx = torch::maximum(mx, h[t]);
  }
  expect_close(e.forward(tok)[0], mean, 1e-6, "mean");
  e.set_pooling("max");
  expect_close(e.forward(tok)[0], mx, 0, "max");
  e.set_pooling("cls");
  expect_close(e.forward(tok)[0], h[0], 0, "cls");
  EXPECT_THROW(e.set_pooling("first"), Error);
}

TEST(Encoder, BatchedEmbeddingEqualsOneTextAtATime) {
  for (const char* arch : {"softmax", "linear"})
    for (const char* pooling : {"mean", "max", "cls"}) {
      auto e = byte_encoder(pooling, arch);
      auto E = e.embed(kTexts, 3);  // [N,D]
      ASSERT_EQ(E.size(0), static_cast<int64_t>(kTexts.size()));
      torch::NoGradGuard ng;
      e.model()->eval();
      for (size_t i = 0; i < kTexts.size(); ++i)
        expect_close(E[i], e.forward(torch::tensor(e.tokens(kTexts[i])).unsqueeze(0))[0], 1e-5,
                     std::string(arch) + " " + pooling + " text " + std::to_string(i));
    }
  EXPECT_EQ(byte_encoder("mean").embed({}).size(0), 0);
}

TEST(Encoder, DirectoryCarriesItsTokenizer) {
  const auto bpe = scratch("bpe"), dir = scratch("model");
  BpeTrainOptions bo;
  bo.vocab_size = 300;
  bo.progress = false;
  save_bpe(train_bpe({"the dog and the cat", "a dog barked at the cat"}, bo), bpe.string());
  EncoderSpec s;
  s.max_tokens = 20;
  auto e = make_encoder(tiny(), make_tokenizer("bpe:" + bpe.string()), s);
  EXPECT_EQ(e.model()->config().vocab_size, e.tokenizer().vocab_size() + 2);
  auto before = e.embed(kTexts);
  save_encoder(dir.string(), e);
  fs::remove_all(bpe);  // the directory must stand alone
  ASSERT_TRUE(fs::exists(dir / "tokenizer" / "vocab.json"));
  auto j = read_config_json(dir.string());
  EXPECT_EQ(j["encoder"]["tokenizer"], "tokenizer");
  EXPECT_EQ(j["encoder"]["pooling"], "mean");
  auto l = load_encoder(dir.string());
  expect_close(l.embed(kTexts), before, 0, "reloaded");
  EXPECT_EQ(load_encoder(dir.string(), "max").spec().pooling, "max");
  EXPECT_THROW(load_encoder(dir.string(), "sum"), Error);
  // A model directory that is not an encoder.
  const auto lm = scratch("lm");
  ModelConfig c = tiny();
  c.vocab_size = 10;
  c.validate();
  SeqModel m(c);
  save_model_dir(lm.string(), *m);
  try {
    load_encoder(lm.string());
    ADD_FAILURE() << "no error";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("not a sentence encoder"), std::string::npos)
        << err.what();
  }
}
