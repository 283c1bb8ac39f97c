#include "seqlab/model/model.h"

#include "model_testing.h"

using namespace seqlab;
using namespace seqlab::testing;

namespace {

ModelConfig tiny(const std::string& arch, const std::string& head = "lm") {
  ModelConfig c;
  c.mixer = small_config(arch);
  c.n_layer = 2;
  c.vocab_size = 11;
  c.head = head;
  c.n_classes = head == "lm" ? 0 : 3;
  c.validate();
  return c;
}

}  // namespace

class ModelArchs : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelArchs, StepMatchesForward) {
  torch::manual_seed(3);
  SeqModelImpl m(tiny(GetParam()));
  EXPECT_TRUE(model_step_matches_forward(m, 2, 9));
}

INSTANTIATE_TEST_SUITE_P(All, ModelArchs,
                         ::testing::Values("softmax", "elu1", "relu", "rfa", "performer", "t2r",
                                           "hedgehog", "elman", "gru", "lstm", "qrnn", "s4d",
                                           "mamba"));

TEST(Model, ParameterNamesAreTheContract) {
  SeqModelImpl m(tiny("softmax"));
  auto p = m.named_parameters();
  for (auto n : {"wte.weight", "wpe.weight", "blocks.0.ln1.weight", "blocks.0.mixer.q.weight",
                 "blocks.1.mlp.fc1.weight", "blocks.1.mlp.fc2.bias", "ln_f.weight"})
    EXPECT_TRUE(p.contains(n)) << n;
  EXPECT_FALSE(p.contains("head.weight")) << "a tied lm head has no weight of its own";
}

TEST(Model, RecurrentMixersGetNoPositionsByDefault) {
  SeqModelImpl m(tiny("lstm"));
  EXPECT_FALSE(m.named_parameters().contains("wpe.weight"));
}

TEST(Model, TagAndClassifyHeadShapes) {
  torch::NoGradGuard ng;
  SeqModelImpl tag(tiny("gru", "tag"));
  auto tokens = torch::randint(0, 11, {2, 7}, torch::kLong);
  EXPECT_EQ(tag.forward(tokens).sizes(), (std::vector<int64_t>{2, 7, 3}));
  SeqModelImpl cls(tiny("gru", "classify"));
  EXPECT_EQ(cls.forward(tokens).sizes(), (std::vector<int64_t>{2, 3}));
  auto s = cls.init_state(2);
  EXPECT_THROW(cls.step(tokens.select(1, 0), s), seqlab::Error);
}

// --tie-tag-head: no head weights; class c's logit is ln_f(h) . wte[c], computed independently
// here from the model's hidden states, in the parallel and the recurrent form.
TEST(Model, TiedTagHeadScoresClassesWithTheirTokenRows) {
  torch::NoGradGuard ng;
  torch::manual_seed(4);
  auto c = tiny("softmax", "tag");
  c.tie_tag_head = true;
  c.validate();
  SeqModelImpl m(c);
  EXPECT_FALSE(m.named_parameters().contains("head.weight"));
  EXPECT_FALSE(m.named_parameters().contains("head.bias"));
  auto tokens = torch::randint(0, 11, {2, 7}, torch::kLong);
  auto logits = m.forward(tokens);  // [2,7,3]
  ASSERT_EQ(logits.sizes(), (std::vector<int64_t>{2, 7, 3}));
  auto h = m.hidden(tokens);  // [2,7,D]
  for (int64_t cls = 0; cls < 3; ++cls) {
    auto expect = (h * m.wte->weight[cls]).sum(-1);  // [2,7]
    EXPECT_TRUE(all_close(logits.select(2, cls), expect, 1e-5, "tied class logit"));
  }
  EXPECT_TRUE(model_step_matches_forward(m, 2, 7));
  // The gradient of a class logit reaches that class's embedding row.
  torch::GradMode::set_enabled(true);
  m.zero_grad();
  m.forward(tokens).select(2, 1).sum().backward();
  EXPECT_GT(m.wte->weight.grad()[1].abs().sum().item<double>(), 0.0);
  torch::GradMode::set_enabled(false);
}

TEST(Model, SinusoidalPositionsAreShiftConsistent) {
  auto all = sinusoidal_positions(0, 10, 8);
  auto tail = sinusoidal_positions(4, 6, 8);
  EXPECT_TRUE(all_close(all.narrow(0, 4, 6), tail, 1e-6));
  EXPECT_NEAR(all[0][1].item<double>(), 1.0, 1e-7);  // cos(0)
}

TEST(Model, SinusoidalModelStepMatchesForward) {
  auto c = tiny("elu1");
  c.pos = "sinusoidal";
  torch::manual_seed(4);
  SeqModelImpl m(c);
  EXPECT_TRUE(model_step_matches_forward(m, 2, 9));
}

TEST(Model, TooLongForLearnedPositionsIsAnError) {
  SeqModelImpl m(tiny("softmax"));  // max_len 64
  auto tokens = torch::zeros({1, 65}, torch::kLong);
  EXPECT_THROW(m.forward(tokens), seqlab::Error);
}

TEST(Model, StateCloneBranchesIndependently) {
  torch::NoGradGuard ng;
  SeqModelImpl m(tiny("softmax"));
  auto s = m.init_state(1);
  m.step(torch::tensor({1}, torch::kLong), s);
  auto c = s.clone();
  auto a = m.step(torch::tensor({2}, torch::kLong), s);
  auto b = m.step(torch::tensor({2}, torch::kLong), c);
  EXPECT_TRUE(all_close(a, b, 0.0));
  EXPECT_EQ(s.pos, 2);
}

TEST(Model, LayersDrawTheirOwnRandomFeatures) {
  for (auto arch : {"rfa", "performer"}) {
    SeqModelImpl m(tiny(arch));
    auto b = m.named_buffers();
    ASSERT_TRUE(b.contains("blocks.0.mixer.feature_map.w")) << arch;
    EXPECT_FALSE(b["blocks.0.mixer.feature_map.w"].equal(b["blocks.1.mixer.feature_map.w"]))
        << arch << ": two layers share one random matrix";
  }
}
