// Conversion keeps every pretrained tensor and only adds feature maps; the attention weights the
// transfer loss compares are the ones each mixer actually applies; attention transfer lowers the
// transfer loss and changes nothing but the feature maps.
#include "seqlab/convert/convert.h"
#include "seqlab/mixers/linear_attention.h"
#include "seqlab/mixers/softmax_attention.h"
#include "seqlab/tasks/registry.h"

#include "model_testing.h"

using namespace seqlab;
using namespace seqlab::testing;

namespace {

ModelConfig teacher_config(const std::string& arch = "softmax") {
  ModelConfig c;
  c.mixer = small_config(arch);
  c.mixer.d_model = 16;
  c.mixer.n_head = 2;
  c.n_layer = 2;
  c.vocab_size = 10;
  c.validate();
  return c;
}

ConvertConfig to(const std::string& fm) {
  ConvertConfig c;
  c.to = fm;
  return c;
}

// Runs a mixer's attention weights through its own value and output projections: this must be
// the mixer's forward, or the weights are not the ones it applies.
template <class M>
torch::Tensor apply_weights(M& m, const torch::Tensor& x) {
  const int64_t B = x.size(0), T = x.size(1), H = m.config().n_head, Dh = m.config().d_head();
  auto w = m.attention_weights(x);                        // [B,H,T,T]
  auto v = m.v(x).view({B, T, H, Dh}).transpose(1, 2);    // [B,H,T,Dh]
  auto y = torch::matmul(w, v.to(w.dtype()));             // [B,H,T,Dh]
  return m.o(y.transpose(1, 2).reshape({B, T, H * Dh}));  // [B,T,D]
}

}  // namespace

TEST(Convert, AttentionWeightsAreTheOnesEachMixerApplies) {
  torch::NoGradGuard ng;
  torch::manual_seed(1);
  auto x = torch::randn({2, 9, 16});
  for (const char* fm : {"softmax", "t2r", "hedgehog", "elu1", "performer"}) {
    SCOPED_TRACE(fm);
    auto cfg = small_config(fm);
    cfg.d_model = 16;
    cfg.n_head = 2;
    cfg.validate();
    if (cfg.arch == "softmax") {
      SoftmaxAttentionImpl m(cfg);
      EXPECT_TRUE(all_close(apply_weights(m, x), m.forward(x), 1e-5, "softmax"));
      EXPECT_TRUE(all_close(m.attention_weights(x).sum(-1), torch::ones({2, 2, 9}), 1e-5, "rows"));
    } else {
      LinearAttentionImpl m(cfg);
      EXPECT_TRUE(all_close(apply_weights(m, x), m.forward(x), 1e-5, "linear"));
      auto w = m.attention_weights(x);
      EXPECT_TRUE(all_close(w.sum(-1), torch::ones({2, 2, 9}), 1e-4, "rows sum to one"));
      EXPECT_TRUE(all_close(w.triu(1), torch::zeros_like(w), 0.0, "causal"));
    }
  }
}

TEST(Convert, KeepsEveryPretrainedTensorAndAddsOnlyFeatureMaps) {
  torch::manual_seed(2);
  SeqModelImpl teacher(teacher_config());
  auto tp = teacher.named_parameters();
  for (const char* fm : {"t2r", "hedgehog", "elu", "relu", "rfa", "performer"}) {
    SCOPED_TRACE(fm);
    auto student = convert_model(teacher, to(fm));
    EXPECT_EQ(student->config().mixer.arch, "linear");
    int64_t extra = 0;
    for (const auto& p : student->named_parameters()) {
      if (p.key().find(".feature_map.") != std::string::npos) {
        ++extra;
        continue;
      }
      ASSERT_TRUE(tp.contains(p.key())) << p.key();
      EXPECT_TRUE(torch::equal(p.value(), tp[p.key()])) << p.key();
    }
    EXPECT_EQ(student->named_parameters().size() - extra, tp.size());
    // The converted model is an RNN: its recurrent step equals its forward.
    EXPECT_TRUE(model_step_matches_forward(*student, 2, 8));
  }
}

TEST(Convert, RefusesWhatIsNotACausalSoftmaxModel) {
  torch::manual_seed(3);
  auto expect_error = [](SeqModelImpl& m, const ConvertConfig& c, const std::string& needle) {
    try {
      convert_model(m, c);
      ADD_FAILURE() << "no error; expected '" << needle << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  SeqModelImpl lin(teacher_config("t2r"));
  expect_error(lin, to("hedgehog"), "not a softmax-attention model");
  SeqModelImpl lstm(teacher_config("lstm"));
  expect_error(lstm, to("t2r"), "its mixer is 'lstm'");
  SeqModelImpl soft(teacher_config());
  expect_error(soft, to("lstm"), "--to must name a linear-attention feature map");
  expect_error(soft, to("cosformer"), "unknown architecture 'cosformer'");
}

TEST(Convert, AttentionTransferLowersTheLossAndTouchesOnlyFeatureMaps) {
  TaskConfig tc;
  tc.task = "copy";
  tc.max_len = 12;
  auto task = make_task(tc);
  auto mc = teacher_config();
  mc.vocab_size = task->vocab_size();
  torch::manual_seed(4);
  SeqModelImpl teacher(mc);
  {
    // A random teacher attends almost uniformly, and every row cross-entropy then sits at the
    // teacher's own entropy whatever the student does. Sharpen it, as training would.
    torch::NoGradGuard ng;
    for (auto& p : teacher.named_parameters())
      if (p.key().find("mixer.q.weight") != std::string::npos) p.value().mul_(6.0);
  }
  for (const char* fm : {"hedgehog", "t2r"}) {
    SCOPED_TRACE(fm);
    ConvertConfig c = to(fm);
    c.distill_steps = 60;
    c.distill_lr = 3e-2;
    auto student = convert_model(teacher, c);
    auto before = student->named_parameters();
    std::map<std::string, torch::Tensor> snap;
    for (const auto& p : before) snap[p.key()] = p.value().clone();
    auto rep = distill_attention(teacher, *student, *task, c, 12);
    ASSERT_EQ(rep.before.size(), 2u);
    ASSERT_EQ(rep.after.size(), 2u);
    // The report's numbers are the transfer loss on a held-out batch: recomputed here by hand.
    // Cross-entropy = teacher entropy + KL(teacher || student); transfer must cut the KL part.
    auto held = task->sample(c.distill_batch, 12, mix_seed(c.distill_seed, ~0ULL));
    torch::NoGradGuard ng;
    auto inputs = teacher.mixer_inputs(held.input);
    for (size_t l = 0; l < 2; ++l) {
      auto sm =
          std::dynamic_pointer_cast<SoftmaxAttentionImpl>(teacher.blocks->ptr<BlockImpl>(l)->mixer);
      auto lm =
          std::dynamic_pointer_cast<LinearAttentionImpl>(student->blocks->ptr<BlockImpl>(l)->mixer);
      auto A = sm->attention_weights(inputs[l]).to(torch::kDouble);
      auto Bw = lm->attention_weights(inputs[l]).to(torch::kDouble);
      const int64_t T = A.size(2);
      double ce = 0, entropy = 0;
      for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j <= t; ++j) {
          auto a = A.select(2, t).select(2, j), b = Bw.select(2, t).select(2, j);
          ce -= (a * torch::log(b.clamp_min(1e-12))).sum().item<double>();
          entropy -= (a * torch::log(a.clamp_min(1e-300))).sum().item<double>();
        }
      const double n = static_cast<double>(A.size(0) * A.size(1) * T);
      ce /= n;
      entropy /= n;
      EXPECT_NEAR(rep.after[l], ce, 1e-4) << "layer " << l;
      EXPECT_LT(rep.after[l] - entropy, 0.7 * (rep.before[l] - entropy))
          << "layer " << l << ": KL before " << rep.before[l] - entropy << ", after "
          << rep.after[l] - entropy;
    }
    for (const auto& p : student->named_parameters()) {
      const bool fm_param = p.key().find(".feature_map.") != std::string::npos;
      EXPECT_EQ(torch::equal(p.value(), snap[p.key()]), !fm_param) << p.key();
      EXPECT_TRUE(p.value().requires_grad()) << "requires_grad not restored: " << p.key();
    }
  }
}

TEST(Convert, TransferNeedsFeatureMapParameters) {
  TaskConfig tc;
  tc.task = "copy";
  auto task = make_task(tc);
  auto mc = teacher_config();
  mc.vocab_size = task->vocab_size();
  torch::manual_seed(5);
  SeqModelImpl teacher(mc);
  ConvertConfig c = to("elu1");
  c.distill_steps = 3;
  auto student = convert_model(teacher, c);
  EXPECT_THROW(distill_attention(teacher, *student, *task, c, 8), Error);
}
