// Early exits: the exits list, the per-exit logits, inference that stops, padding-aware pooling,
// and training on the sum of exit losses.
#include "seqlab/core/error.h"
#include "seqlab/core/safetensors.h"
#include "seqlab/model/model.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/tasks/registry.h"
#include "seqlab/methods/classify_eval.h"
#include "seqlab/train/trainer.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

using namespace seqlab;
namespace fs = std::filesystem;

namespace {

ModelConfig classifier(const std::string& arch, const std::string& exits, int64_t layers = 4) {
  ModelConfig c;
  c.mixer.arch = arch;
  c.mixer.d_model = 16;
  c.mixer.n_head = 2;
  c.mixer.max_len = 64;
  c.n_layer = layers;
  c.vocab_size = 7;
  c.head = "classify";
  c.n_classes = 3;
  c.exits = exits;
  c.validate();
  return c;
}

torch::Tensor tokens(int64_t B, int64_t T, uint64_t seed) {
  torch::manual_seed(seed);
  return torch::randint(0, 7, {B, T}, torch::kLong);
}

}  // namespace

TEST(EarlyExit, ExitListIsValidatedAndAlwaysEndsAtTheLastLayer) {
  EXPECT_EQ(classifier("softmax", "1,2").exit_layers(), (std::vector<int64_t>{1, 2, 4}));
  EXPECT_EQ(classifier("softmax", "1,4").exit_layers(), (std::vector<int64_t>{1, 4}));
  EXPECT_TRUE(classifier("softmax", "").exit_layers().empty());
  for (const std::string bad : {"0", "5", "2,1", "1,1", "a", "1,,2", "1.5", ","})
    EXPECT_THROW(classifier("softmax", bad), Error) << bad;
  ModelConfig lm = classifier("softmax", "");
  lm.head = "lm";
  lm.exits = "1";
  EXPECT_THROW(lm.validate(), Error);
}

TEST(EarlyExit, LastExitIsTheModelAndStoppingAboveOneRunsEverything) {
  for (const std::string arch : {"softmax", "t2r"}) {
    torch::manual_seed(1);
    SeqModel m(classifier(arch, "1,2"));
    m->eval();
    torch::NoGradGuard ng;
    auto x = tokens(5, 9, 2);
    auto full = m->forward(x);
    auto ex = m->exit_logits(x);
    ASSERT_EQ(ex.size(), 3u);
    EXPECT_TRUE(torch::equal(ex.back(), full)) << arch;
    auto r = m->classify_early(x, {}, 1.01);
    EXPECT_TRUE(torch::equal(r.logits, full)) << arch;
    EXPECT_TRUE(r.layers.eq(4).all().item<bool>());
    EXPECT_TRUE(r.exit.eq(2).all().item<bool>());
    // Threshold 0: everyone leaves at the first exit, with its logits.
    auto r0 = m->classify_early(x, {}, 0.0);
    EXPECT_TRUE(torch::allclose(r0.logits, ex[0], 1e-5, 1e-6));
    EXPECT_TRUE(r0.layers.eq(1).all().item<bool>());
  }
}

TEST(EarlyExit, EachSequenceStopsAtItsFirstConfidentExit) {
  torch::manual_seed(3);
  SeqModel m(classifier("softmax", "1,2,3"));
  m->eval();
  torch::NoGradGuard ng;
  // Sharpen the exits so that confidences spread over (1/3, 1).
  for (auto& p : m->named_parameters())
    if (p.key().find("head.weight") != std::string::npos) p.value().mul_(30.0);
  m->exit_temperature.copy_(torch::tensor({1.5, 0.8, 1.0, 1.2}));
  auto x = tokens(64, 11, 4);
  auto ex = m->exit_logits(x);
  const auto layers = m->config().exit_layers();
  for (double th : {0.5, 0.7, 0.9}) {
    auto r = m->classify_early(x, {}, th);
    int stopped_early = 0;
    for (int64_t i = 0; i < 64; ++i) {
      size_t want = ex.size() - 1;
      for (size_t j = 0; j < ex.size(); ++j) {
        auto p = torch::softmax(ex[j][i] / m->exit_temperature[static_cast<int64_t>(j)], -1);
        if (p.max().item<double>() >= th) {
          want = j;
          break;
        }
      }
      EXPECT_EQ(r.exit[i].item<int64_t>(), static_cast<int64_t>(want)) << th << " row " << i;
      EXPECT_EQ(r.layers[i].item<int64_t>(), layers[want]);
      EXPECT_TRUE(torch::allclose(r.logits[i], ex[want][i], 1e-4, 1e-5));
      stopped_early += want + 1 < ex.size();
    }
    EXPECT_GT(stopped_early, 0) << th;
  }
}

TEST(EarlyExit, LaterBlocksAreNotRunForSequencesThatStopped) {
  torch::manual_seed(5);
  SeqModel m(classifier("t2r", "1"));
  m->eval();
  torch::NoGradGuard ng;
  // Poison every block after the first: any sequence that ran them would get NaN logits.
  for (auto& p : m->named_parameters())
    if (p.key().rfind("blocks.0.", 0) != 0 && p.key().rfind("blocks.", 0) == 0)
      p.value().fill_(std::nan(""));
  auto r = m->classify_early(tokens(4, 8, 6), {}, 0.0);
  EXPECT_TRUE(torch::isfinite(r.logits).all().item<bool>());
  EXPECT_TRUE(torch::isnan(m->classify_early(tokens(4, 8, 6), {}, 1.01).logits).all().item<bool>());
}

TEST(EarlyExit, PoolingSkipsPaddingSoABatchEqualsEachSequenceAlone) {
  for (const std::string pooling : {"mean", "last"}) {
    torch::manual_seed(7);
    auto cfg = classifier("softmax", "2");
    cfg.pooling = pooling;
    SeqModel m(cfg);
    m->eval();
    torch::NoGradGuard ng;
    auto x = tokens(3, 10, 8);
    const int64_t lens[3] = {10, 4, 7};
    auto valid = torch::zeros({3, 10}, torch::kBool);
    for (int i = 0; i < 3; ++i) valid[i].narrow(0, 0, lens[i]).fill_(true);
    auto batched = m->forward(x, valid);
    auto ex = m->exit_logits(x, valid);
    for (int i = 0; i < 3; ++i) {
      auto alone = m->forward(x.narrow(0, i, 1).narrow(1, 0, lens[i]));
      EXPECT_TRUE(torch::allclose(batched[i], alone[0], 1e-4, 1e-5)) << pooling << " " << i;
      auto alone_ex = m->exit_logits(x.narrow(0, i, 1).narrow(1, 0, lens[i]));
      EXPECT_TRUE(torch::allclose(ex[0][i], alone_ex[0][0], 1e-4, 1e-5)) << pooling << " " << i;
    }
  }
}

// --tie-tag-head on a classify head: no head weights at any exit; each exit's logit for class c is
// its pooled, normalised state . wte[c]. Checked against the untied model whose every head holds
// wte[0..C) with zero bias, and through early-exit inference.
TEST(EarlyExit, TiedExitsScoreClassesWithTheirTokenRows) {
  torch::manual_seed(9);
  auto cfg = classifier("softmax", "1,2");
  cfg.pooling = "last";
  cfg.tie_tag_head = true;
  cfg.validate();
  SeqModel tied(cfg);
  cfg.tie_tag_head = false;
  SeqModel untied(cfg);
  tied->eval();
  untied->eval();
  torch::NoGradGuard ng;
  int64_t heads = 0;
  auto own = tied->named_parameters();
  for (auto& p : untied->named_parameters()) {
    if (own.contains(p.key())) {
      p.value().copy_(own[p.key()]);
    } else {  // head.* and exits.j.head.*: only the untied model has them
      ASSERT_NE(p.key().find("head."), std::string::npos) << p.key();
      ++heads;
      if (p.value().dim() == 2)
        p.value().copy_(tied->wte->weight.narrow(0, 0, 3));
      else
        p.value().zero_();
    }
  }
  EXPECT_EQ(heads, 6);  // 2 exit heads + the last, weight and bias each
  auto x = tokens(4, 9, 10);
  auto a = tied->exit_logits(x), b = untied->exit_logits(x);
  ASSERT_EQ(a.size(), 3u);
  for (size_t j = 0; j < a.size(); ++j)
    EXPECT_TRUE(torch::allclose(a[j], b[j], 1e-4, 1e-5)) << "exit " << j;
  auto r = tied->classify_early(x, {}, 0.0);
  EXPECT_TRUE(torch::allclose(r.logits, a[0], 1e-5, 1e-6));
  // A tied classify head needs the classes among the tokens.
  cfg.tie_tag_head = true;
  cfg.n_classes = cfg.vocab_size + 1;
  EXPECT_THROW(cfg.validate(), Error);
}

namespace {

std::string tmp_dir(const std::string& name) {
  auto d =
      fs::temp_directory_path() / ("seqlab_test_exit_" + std::to_string(getpid()) + "_" + name);
  fs::remove_all(d);
  return d.string();
}

struct ExitRun {
  ModelConfig m;
  TaskConfig t;
  TrainConfig tr;
  ExitRun() {
    m.mixer.arch = "softmax";
    m.mixer.d_model = 16;
    m.mixer.n_head = 2;
    m.n_layer = 3;
    m.exits = "1,2";
    t.task = "dyck_bounded";
    t.max_len = 12;
    tr.steps = 30;
    tr.batch = 16;
    tr.warmup = 3;
    tr.lr = 3e-3;
    tr.eval_size = 32;
    tr.log_every = 5;
    tr.threads = 1;
  }
};

}  // namespace

TEST(EarlyExit, TrainingFitsEveryExitAndCalibrationStoresTemperatures) {
  ExitRun r;
  const auto out = tmp_dir("train");
  auto res = train_model(r.m, r.t, r.tr, out, false);
  EXPECT_LT(res.last_loss, res.first_loss);
  auto lm = load_model_dir(out);
  ASSERT_TRUE(lm.model->exits);
  EXPECT_EQ(lm.model->exits->size(), 2u);
  auto task = make_task(r.t);
  auto set = classify_set(*task, Split::valid, 12, 96, 32, 0);
  // Every exit was trained: each beats chance (1/2) on the balanced Dyck task's loss at T=1.
  auto cal = calibrate_exits(*lm.model, set);
  ASSERT_EQ(cal.size(), 3u);
  for (const auto& c : cal) {
    EXPECT_LT(c.nll_before, std::log(2.0) + 0.05) << "exit at layer " << c.layer;
    EXPECT_LE(c.nll_after, c.nll_before + 1e-9);
    EXPECT_GT(c.temperature, 0);
  }
  save_model_dir(out, *lm.model, lm.sections);
  auto again = load_model_dir(out);
  for (int j = 0; j < 3; ++j)
    EXPECT_NEAR(again.model->exit_temperature[j].item<double>(), cal[j].temperature, 1e-6);
  auto curve = exit_curve(*again.model, set, {0.0, 1.01});
  EXPECT_DOUBLE_EQ(curve[0].mean_layers, 1.0);
  EXPECT_DOUBLE_EQ(curve[1].mean_layers, 3.0);
  auto full = score_probs(predict_probs(*again.model, set), set);
  EXPECT_DOUBLE_EQ(curve[1].accuracy, full.accuracy);
  fs::remove_all(out);
}

TEST(EarlyExit, SwagIsCollectedAndResumesExactly) {
  ExitRun r;
  r.m.exits = "";
  r.tr.swag_start = 10;
  r.tr.swag_every = 4;
  r.tr.swag_rank = 3;
  const auto whole = tmp_dir("swag_whole"), parts = tmp_dir("swag_parts");
  train_model(r.m, r.t, r.tr, whole, false);
  train_model(r.m, r.t, r.tr, parts, false, 0, /*stop_after=*/18);
  train_model(r.m, r.t, r.tr, parts, true);
  auto a = load_safetensors((fs::path(whole) / kSwagFile).string()).tensors;
  auto b = load_safetensors((fs::path(parts) / kSwagFile).string()).tensors;
  auto swag = Swag::from_tensors(a, "whole");
  EXPECT_EQ(swag.snapshots(), 5);  // after steps 14, 18, 22, 26, 30
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [k, v] : a) EXPECT_TRUE(torch::equal(v, b.at(k))) << k;
  // SWA (scale 0) evaluates the mean weights; the model's own weights are restored afterwards.
  auto lm = load_model_dir(whole);
  auto task = make_task(r.t);
  auto set = classify_set(*task, Split::valid, 12, 64, 32, 0);
  auto before = predict_probs(*lm.model, set);
  auto swa = swag_probs(*lm.model, swag, set, 1, 0.0, 1);
  EXPECT_FALSE(torch::allclose(swa, before));
  EXPECT_TRUE(torch::equal(predict_probs(*lm.model, set), before));
  auto bma = score_probs(swag_probs(*lm.model, swag, set, 4, 0.5, 1), set);
  EXPECT_GT(bma.accuracy, 0.0);
  fs::remove_all(whole);
  fs::remove_all(parts);
}

TEST(EarlyExit, SwagOptionsOutsideTheRunAreRefused) {
  TrainConfig tr;
  tr.steps = 100;
  tr.swag_start = 100;
  EXPECT_THROW(tr.validate(), Error);
  tr.swag_start = 0;
  tr.swag_rank = 5;
  EXPECT_THROW(tr.validate(), Error);
  tr.swag_rank = -1;
  tr.swag_lr = 0.1;
  EXPECT_THROW(tr.validate(), Error);
  tr.swag_lr = 0;
  tr.swag_start = 50;
  EXPECT_NO_THROW(tr.validate());
}
