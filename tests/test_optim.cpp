#include "seqlab/train/optim.h"

#include "mixer_testing.h"

using namespace seqlab;
using namespace seqlab::testing;

// Our AdamW against LibTorch's on the same gradients: the reference for the hand-written update.
TEST(AdamW, MatchesTorchAdamW) {
  torch::manual_seed(0);
  auto w1 = torch::randn({4, 3}, torch::requires_grad());  // a matrix: decayed in both
  auto w2 = w1.detach().clone().requires_grad_(true);
  AdamWOptions o;
  o.weight_decay = 0.1;
  AdamW ours({{"w", w1}}, o);
  torch::optim::AdamW ref({w2}, torch::optim::AdamWOptions(0.01).weight_decay(0.1));
  for (int i = 0; i < 5; ++i) {
    auto x = torch::randn({3});
    ours.zero_grad();
    ref.zero_grad();
    torch::matmul(w1, x).pow(2).sum().backward();
    torch::matmul(w2, x).pow(2).sum().backward();
    ours.step(0.01);
    ref.step();
  }
  EXPECT_TRUE(all_close(w1, w2, 1e-6, "ours vs torch::optim::AdamW"));
}

TEST(AdamW, NoDecayOnVectors) {
  auto b = torch::ones({3}, torch::requires_grad());
  AdamWOptions o;
  o.weight_decay = 0.5;
  AdamW opt({{"b", b}}, o);
  b.mutable_grad() = torch::zeros({3});
  opt.step(0.1);
  EXPECT_TRUE(all_close(b, torch::ones({3}), 0.0));
}

TEST(AdamW, StateRoundTripContinuesIdentically) {
  torch::manual_seed(1);
  auto a = torch::randn({2, 2}, torch::requires_grad());
  auto b = a.detach().clone().requires_grad_(true);
  AdamW oa({{"p", a}}, {});
  AdamW ob({{"p", b}}, {});
  auto g = torch::randn({2, 2});
  a.mutable_grad() = g.clone();
  oa.step(0.1);
  b.mutable_grad() = g.clone();
  ob.step(0.1);
  std::map<std::string, torch::Tensor> s;
  for (auto& [k, v] : oa.state()) s[k] = v.clone();
  AdamW oc({{"p", b}}, {});
  oc.load_state(s, "state");
  EXPECT_EQ(oc.steps(), 1);
  a.mutable_grad() = g.clone();
  oa.step(0.1);
  b.mutable_grad() = g.clone();
  oc.step(0.1);
  EXPECT_TRUE(a.equal(b));
  s.erase("adam.v.p");
  EXPECT_THROW(oc.load_state(s, "state"), seqlab::Error);
}

TEST(Schedule, WarmupThenCosine) {
  EXPECT_DOUBLE_EQ(lr_at(0, 100, 10, 1.0, 0.1), 0.1);
  EXPECT_DOUBLE_EQ(lr_at(9, 100, 10, 1.0, 0.1), 1.0);
  EXPECT_DOUBLE_EQ(lr_at(10, 100, 10, 1.0, 0.1), 1.0);
  EXPECT_NEAR(lr_at(55, 100, 10, 1.0, 0.1), 0.55, 1e-12);
  EXPECT_NEAR(lr_at(100, 100, 10, 1.0, 0.1), 0.1, 1e-12);
}

TEST(ClipGradNorm, ScalesToMaxNorm) {
  auto p = torch::zeros({2}, torch::requires_grad());
  p.mutable_grad() = torch::tensor({3.0f, 4.0f});
  EXPECT_NEAR(clip_grad_norm({p}, 1.0), 5.0, 1e-6);
  EXPECT_NEAR(p.grad().norm().item<double>(), 1.0, 1e-5);
}
