// LoRA and Tied-LoRA: zero delta at the start, merged == unmerged, trainable counts equal their
// formulas (computed here from the shapes, independently of AdaptersImpl), only adapter factors
// receive gradients, and adapters survive a save/load.
#include "seqlab/model/adapters.h"
#include "seqlab/model/model.h"
#include "seqlab/model/model_dir.h"

#include "mixer_testing.h"

#include <filesystem>

using namespace seqlab;
using namespace seqlab::testing;

namespace {

// D = 16, MLP width 64, 3 layers, vocab 13.
ModelConfig base_config(const std::string& arch = "softmax") {
  ModelConfig c;
  c.mixer = small_config(arch);
  c.mixer.d_model = 16;
  c.mixer.n_head = 2;
  c.n_layer = 3;
  c.mlp_ratio = 4;
  c.vocab_size = 13;
  c.validate();
  return c;
}

AdapterConfig lora(const std::string& targets, int64_t r = 4) {
  AdapterConfig a;
  a.kind = "lora";
  a.rank = r;
  a.alpha = 8;
  a.targets = targets;
  return a;
}

// Tied-LoRA at rank 4 training `train`, sharing `share` (default: both A and B).
AdapterConfig tied(const std::string& targets, const std::string& train,
                   const std::string& share = "A,B") {
  AdapterConfig a = lora(targets, 4);
  a.kind = "tied_lora";
  a.train = train;
  a.share = share;
  return a;
}

torch::Tensor tokens(int64_t B = 2, int64_t T = 7) {
  torch::manual_seed(11);
  return torch::randint(0, 13, {B, T}, torch::kLong);
}

// Moves every adapter factor (trainable or not) away from its initialisation.
void perturb_adapters(SeqModelImpl& m) {
  torch::NoGradGuard ng;
  torch::manual_seed(5);
  for (auto& p : m.adapters->parameters()) p.add_(torch::randn_like(p) * 0.3);
}

void freeze_base(SeqModelImpl& m) {
  for (auto& p : m.parameters()) p.set_requires_grad(false);
}

}  // namespace

TEST(Adapters, LoraStartsAtTheBaseModelAndMergesExactly) {
  torch::manual_seed(1);
  SeqModelImpl m(base_config());
  torch::NoGradGuard ng;
  auto x = tokens();
  auto base = m.forward(x);
  m.attach_adapters(lora("q,v,fc1"));
  EXPECT_TRUE(all_close(m.forward(x), base, 0.0, "B = 0: adapted == base"));
  perturb_adapters(m);
  auto adapted = m.forward(x);
  EXPECT_GT((adapted - base).abs().max().item<double>(), 1e-3) << "the adapters change nothing";
  // The recurrent form sees the adapted weights too.
  auto s = m.init_state(2);
  std::vector<torch::Tensor> ys;
  for (int64_t t = 0; t < x.size(1); ++t) ys.push_back(m.step(x.select(1, t), s));
  EXPECT_TRUE(all_close(torch::stack(ys, 1), adapted, 2e-5, "adapted step vs forward"));
  m.merge_adapters();
  EXPECT_FALSE(m.adapters);
  EXPECT_TRUE(all_close(m.forward(x), adapted, 1e-5, "merged vs unmerged"));
  for (const auto& p : m.named_parameters())
    EXPECT_EQ(p.key().find("adapters"), std::string::npos) << p.key();
}

TEST(Adapters, LoraMergeEqualsWPlusScaledBA) {
  torch::manual_seed(2);
  SeqModelImpl m(base_config());
  auto w0 = m.blocks->ptr<BlockImpl>(1)->mixer->named_parameters()["q.weight"].clone();
  m.attach_adapters(lora("q"));
  perturb_adapters(m);
  auto params = m.named_parameters();
  auto A = params["adapters.layers.1.q.A"].clone(), B = params["adapters.layers.1.q.B"].clone();
  m.merge_adapters();
  auto w1 = m.blocks->ptr<BlockImpl>(1)->mixer->named_parameters()["q.weight"];
  EXPECT_TRUE(all_close(w1, w0 + (8.0 / 4) * torch::matmul(B, A), 1e-6, "W + alpha/r B A"));
}

TEST(Adapters, LoraTrainableCountMatchesFormula) {
  torch::manual_seed(3);
  SeqModelImpl m(base_config());
  freeze_base(m);
  m.attach_adapters(lora("q,k,v,o,fc1,fc2", 4));
  // L * r * (in + out): four [16,16] attention projections, fc1 [64,16], fc2 [16,64]; L = 3.
  const int64_t expect = 3 * 4 * (4 * (16 + 16) + (16 + 64) + (64 + 16));
  EXPECT_EQ(count_parameters(m, true), expect);
  EXPECT_EQ(m.adapters->expected_trainable(), expect);
}

TEST(Adapters, TiedLoraEveryTrainFreezeCombination) {
  const char* names[] = {"A", "B", "u", "v"};
  for (int mask = 0; mask < 16; ++mask) {
    std::string train;
    for (int f = 0; f < 4; ++f)
      if (mask & (1 << f)) train += (train.empty() ? "" : ",") + std::string(names[f]);
    SCOPED_TRACE("tied-train '" + train + "'");
    torch::manual_seed(4);
    SeqModelImpl m(base_config());
    torch::NoGradGuard ng;
    auto x = tokens();
    auto base = m.forward(x);
    freeze_base(m);
    m.attach_adapters(tied("q,fc2", train));
    // Shared A [r,in] and B [out,r] per target; u [r] and v [out] per layer; L = 3.
    //   q: in 16, out 16;  fc2: in 64, out 16.
    const bool tA = mask & 1, tB = mask & 2, tu = mask & 4, tv = mask & 8;
    const int64_t expect = (tA ? 4 * 16 + 4 * 64 : 0) + (tB ? 16 * 4 + 16 * 4 : 0) +
                           3 * 2 * ((tu ? 4 : 0) + (tv ? 16 : 0));
    EXPECT_EQ(count_parameters(m, true), expect);
    EXPECT_EQ(m.adapters->expected_trainable(), expect);
    EXPECT_TRUE(all_close(m.forward(x), base, 0.0, "tied start == base"));
    // The shared factors are one tensor for all layers.
    auto p = m.named_parameters();
    EXPECT_TRUE(p.contains("adapters.shared.q.A") && p.contains("adapters.layers.2.fc2.v"));
    EXPECT_FALSE(p.contains("adapters.layers.0.q.A"));
    perturb_adapters(m);
    auto adapted = m.forward(x);
    m.merge_adapters();
    EXPECT_TRUE(all_close(m.forward(x), adapted, 1e-5, "tied merged vs unmerged"));
  }
}

// --tied-share: a factor not shared is one tensor per layer; the count follows the formula
// with n_X = L for it, the start is the base model, and merged == unmerged.
TEST(Adapters, TiedLoraSharingAOrBOrNeither) {
  for (const std::string share : {"A", "B", ""}) {
    for (const std::string train : {"A,B", "A,B,u,v", "B,v", "u,v"}) {
      SCOPED_TRACE("tied-share '" + share + "', tied-train '" + train + "'");
      torch::manual_seed(4);
      SeqModelImpl m(base_config());
      torch::NoGradGuard ng;
      auto x = tokens();
      auto base = m.forward(x);
      freeze_base(m);
      m.attach_adapters(tied("q,fc2", train, share));
      const bool sA = share == "A", sB = share == "B";
      const bool tA = train.find('A') != std::string::npos,
                 tB = train.find('B') != std::string::npos,
                 tu = train.find('u') != std::string::npos,
                 tv = train.find('v') != std::string::npos;
      // q: in 16, out 16; fc2: in 64, out 16; L = 3; r = 4.
      const int64_t expect = (tA ? (4 * 16 + 4 * 64) * (sA ? 1 : 3) : 0) +
                             (tB ? (16 * 4 + 16 * 4) * (sB ? 1 : 3) : 0) +
                             3 * 2 * ((tu ? 4 : 0) + (tv ? 16 : 0));
      EXPECT_EQ(count_parameters(m, true), expect);
      EXPECT_EQ(m.adapters->expected_trainable(), expect);
      auto p = m.named_parameters();
      EXPECT_EQ(p.contains("adapters.shared.q.A"), sA);
      EXPECT_EQ(p.contains("adapters.layers.2.q.A"), !sA);
      EXPECT_EQ(p.contains("adapters.shared.fc2.B"), sB);
      EXPECT_EQ(p.contains("adapters.layers.1.fc2.B"), !sB);
      EXPECT_TRUE(all_close(m.forward(x), base, 0.0, "start == base"));
      perturb_adapters(m);
      auto adapted = m.forward(x);
      EXPECT_GT((adapted - base).abs().max().item<double>(), 1e-3);
      m.merge_adapters();
      EXPECT_TRUE(all_close(m.forward(x), adapted, 1e-5, "merged vs unmerged"));
    }
  }
}

// Sharing nothing and training A, B is LoRA's form: same count, same zero start, and the same
// function once the factors hold the same values.
TEST(Adapters, TiedLoraSharingNothingIsLora) {
  torch::manual_seed(9);
  SeqModelImpl m(base_config()), n(base_config());
  torch::NoGradGuard ng;
  for (auto& p : n.named_parameters()) p.value().copy_(m.named_parameters()[p.key()]);
  freeze_base(m);
  freeze_base(n);
  m.attach_adapters(lora("q,fc1", 4));
  n.attach_adapters(tied("q,fc1", "A,B", ""));
  EXPECT_EQ(count_parameters(m, true), count_parameters(n, true));
  perturb_adapters(m);
  auto np = n.named_parameters();
  for (const auto& p : m.adapters->named_parameters()) np["adapters." + p.key()].copy_(p.value());
  auto x = tokens();
  EXPECT_TRUE(all_close(n.forward(x), m.forward(x), 1e-6, "tied (share none) vs LoRA"));
}

TEST(Adapters, OnlyTrainableFactorsGetGradients) {
  torch::manual_seed(6);
  SeqModelImpl m(base_config());
  freeze_base(m);
  AdapterConfig a = lora("v", 2);
  a.kind = "tied_lora";
  a.train = "B,v";
  m.attach_adapters(a);
  perturb_adapters(m);
  m.forward(tokens()).pow(2).mean().backward();
  for (const auto& p : m.named_parameters()) {
    const auto& k = p.key();
    const bool trains = k == "adapters.shared.v.B" ||
                        (k.rfind("adapters.layers.", 0) == 0 && k.substr(k.size() - 2) == ".v");
    EXPECT_EQ(p.value().grad().defined(), trains) << k;
  }
}

TEST(Adapters, SurviveSaveAndLoad) {
  torch::manual_seed(7);
  SeqModelImpl m(base_config("t2r"));
  m.attach_adapters(lora("q,o", 3));
  perturb_adapters(m);
  m.eval();
  torch::NoGradGuard ng;
  auto x = tokens();
  auto want = m.forward(x);
  const auto dir =
      (std::filesystem::temp_directory_path() / ("seqlab_adapters." + std::to_string(getpid())))
          .string();
  std::filesystem::remove_all(dir);
  save_model_dir(dir, m);
  EXPECT_TRUE(read_config_json(dir).contains("adapters"));
  auto loaded = load_model_dir(dir);
  ASSERT_TRUE(loaded.model->adapters);
  EXPECT_TRUE(all_close(loaded.model->forward(x), want, 0.0, "reloaded adapters"));
  loaded.model->merge_adapters();
  std::filesystem::remove_all(dir);
  save_model_dir(dir, *loaded.model);
  EXPECT_FALSE(read_config_json(dir).contains("adapters"));
  EXPECT_TRUE(all_close(load_model_dir(dir).model->forward(x), want, 1e-5, "merged reload"));
  std::filesystem::remove_all(dir);
}

TEST(Adapters, BadConfigsAreErrors) {
  torch::manual_seed(8);
  SeqModelImpl m(base_config());
  auto expect_error = [&](AdapterConfig a, const std::string& needle) {
    try {
      m.attach_adapters(a);
      ADD_FAILURE() << "no error; expected '" << needle << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error(lora("q,wq"), "adapter target 'wq' names no linear layer in block 0");
  expect_error(lora("q,wq"), "available: q,k,v,o,fc1,fc2");
  expect_error(lora("q", 0), "--lora-rank must be positive");
  expect_error(lora(""), "--lora-targets is empty");
  expect_error(lora("q,q"), "names 'q' twice");
  AdapterConfig t = lora("q");
  t.kind = "tied_lora";
  t.train = "A,W";
  expect_error(t, "'W' is not one of A,B,u,v");
  t.train = "A";
  t.share = "A,u";
  expect_error(t, "--tied-share: 'u' is not one of A,B");
  t.kind = "dora";
  expect_error(t, "--adapter must be none, lora or tied_lora");
  EXPECT_FALSE(m.adapters) << "a failed attach left adapters behind";
}
