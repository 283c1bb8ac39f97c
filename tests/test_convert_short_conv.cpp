// `convert --short-conv K`: the student gets linear attention's short convolution, initialised to
// the identity, so before any training it computes exactly what the plain conversion computes;
// attention transfer then trains the kernel with the feature maps, and the result is an RNN whose
// step equals its forward. Hybrid students have no convolution and are refused.
#include "seqlab/convert/convert.h"
#include "seqlab/mixers/linear_attention.h"
#include "seqlab/tasks/registry.h"

#include "model_testing.h"

using namespace seqlab;
using namespace seqlab::testing;

namespace {

ModelConfig teacher_config(int64_t vocab = 10) {
  ModelConfig c;
  c.mixer = small_config("softmax");
  c.n_layer = 2;
  c.vocab_size = vocab;
  c.validate();
  return c;
}

ConvertConfig to(const std::string& fm, int64_t short_conv) {
  ConvertConfig c;
  c.to = fm;
  c.short_conv = short_conv;
  return c;
}

}  // namespace

TEST(ConvertShortConv, IdentityKernelMatchesThePlainConversionAndStepsAsAnRnn) {
  torch::manual_seed(11);
  SeqModelImpl teacher(teacher_config());
  torch::NoGradGuard ng;
  auto tok = torch::randint(0, 10, {2, 9}, torch::kLong);
  for (const char* fm : {"hedgehog", "elu1", "t2r", "performer"}) {
    SCOPED_TRACE(fm);
    auto plain = convert_model(teacher, to(fm, 0));
    auto conv = convert_model(teacher, to(fm, 4));
    EXPECT_EQ(conv->config().mixer.short_conv, 4);
    auto y = conv->forward(tok);
    EXPECT_TRUE(all_close(y, plain->forward(tok), 1e-5, "identity short conv vs none"));
    // Not vacuous: a kernel that mixes in the previous token changes the outputs.
    auto lm =
        std::dynamic_pointer_cast<LinearAttentionImpl>(conv->blocks->ptr<BlockImpl>(0)->mixer);
    ASSERT_TRUE(lm && lm->conv);
    EXPECT_EQ(lm->conv->weight.select(2, 3).sum().item<double>(),
              static_cast<double>(lm->conv->weight.size(0)));
    EXPECT_EQ(lm->conv->weight.abs().sum().item<double>(),
              static_cast<double>(lm->conv->weight.size(0)));
    lm->conv->weight.select(2, 2).fill_(0.5);
    EXPECT_FALSE(all_close(conv->forward(tok), y, 1e-3, "a previous-token tap"));
    // The converted model is still an RNN: its recurrent step equals its forward.
    EXPECT_TRUE(model_step_matches_forward(*conv, 2, 9));
  }
}

TEST(ConvertShortConv, TheKernelIsNewAndAttentionTransferTrainsIt) {
  EXPECT_TRUE(is_conversion_param("blocks.0.mixer.conv.weight"));
  EXPECT_FALSE(is_conversion_param("blocks.0.mixer.q.weight"));
  TaskConfig tc;
  tc.task = "copy";
  tc.max_len = 12;
  auto task = make_task(tc);
  torch::manual_seed(12);
  SeqModelImpl teacher(teacher_config(task->vocab_size()));
  {
    torch::NoGradGuard ng;  // sharpen the random teacher's attention, as in test_convert.cpp
    for (auto& p : teacher.named_parameters())
      if (p.key().find("mixer.q.weight") != std::string::npos) p.value().mul_(6.0);
  }
  // ELU+1 has no feature-map parameters: with a short convolution the kernel alone is trained.
  for (const char* fm : {"hedgehog", "elu1"}) {
    SCOPED_TRACE(fm);
    ConvertConfig c = to(fm, 3);
    c.distill_steps = 40;
    c.distill_lr = 3e-2;
    auto student = convert_model(teacher, c);
    std::map<std::string, torch::Tensor> snap;
    for (const auto& p : student->named_parameters()) snap[p.key()] = p.value().clone();
    auto rep = distill_attention(teacher, *student, *task, c, 12);
    for (size_t l = 0; l < rep.before.size(); ++l)
      EXPECT_LT(rep.after[l], rep.before[l]) << "layer " << l;
    for (const auto& p : student->named_parameters()) {
      const bool added = is_conversion_param(p.key());
      EXPECT_EQ(torch::equal(p.value(), snap[p.key()]), !added) << p.key();
    }
  }
}

TEST(ConvertShortConv, RefusesANegativeWidthAndHybridStudents) {
  torch::manual_seed(13);
  SeqModelImpl teacher(teacher_config());
  auto expect_error = [&](const ConvertConfig& c, const std::string& needle) {
    try {
      convert_model(teacher, c);
      ADD_FAILURE() << "no error; expected '" << needle << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error(to("hedgehog", -1), "--short-conv must be >= 0");
  auto hybrid = to("hybrid", 4);
  hybrid.window = 8;
  expect_error(hybrid, "--short-conv");
}
