// Pretraining objectives (methods/objectives.h) and downstream evaluation (methods/downstream.h):
// which objective fits which architecture, what every batch holds (checked against the corpus
// generator sentence by sentence), equal token positions per step, and that pretraining and
// finetuning learn.
#include "seqlab/methods/objectives.h"

#include "seqlab/core/error.h"
#include "seqlab/tasks/task.h"
#include "seqlab/methods/downstream.h"

#include <gtest/gtest.h>

namespace seqlab {
namespace {

ObjectivesConfig tiny(const std::string& objective, const std::string& stack = "auto") {
  ObjectivesConfig c;
  c.objective = objective;
  c.stack = stack;
  c.d_model = 32;
  c.n_head = 4;
  c.n_layer = 2;
  c.mlp_ratio = 2;
  c.batch = 16;
  c.steps = 80;
  c.warmup = 5;
  c.validate();
  return c;
}

void expect_refused(ObjectivesConfig c, const std::string& needle) {
  try {
    c.validate();
    ADD_FAILURE() << c.objective << " on " << c.stack << " / " << c.arch << " accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Objectives, WhichObjectiveFitsWhichArchitecture) {
  EXPECT_EQ(tiny("clm").stack, "decoder");
  EXPECT_EQ(tiny("clm_pairs").stack, "decoder");
  EXPECT_EQ(tiny("mlm").stack, "encoder");
  EXPECT_EQ(tiny("denoise").stack, "encdec");
  EXPECT_EQ(tiny("translate").stack, "encdec");
  for (const char* s : {"decoder", "encoder", "encdec"}) EXPECT_EQ(tiny("none", s).stack, s);
  ObjectivesConfig c;
  c.objective = "mlm";
  c.stack = "decoder";
  expect_refused(c, "masked LM needs a bidirectional");
  c.stack = "encdec";
  expect_refused(c, "masked LM");
  c.objective = "clm";
  c.stack = "encoder";
  expect_refused(c, "causal LM objective");
  c.objective = "translate";
  c.stack = "decoder";
  expect_refused(c, "needs --stack encdec");
  c.stack = "auto";
  c.arch = "gru";
  expect_refused(c, "bidirectional mixer");
  c.objective = "mlm";
  expect_refused(c, "bidirectional mixer");
  c.objective = "none";
  expect_refused(c, "explicit --stack");
  c.objective = "bogus";
  expect_refused(c, "unknown objective");
  // A recurrent mixer is fine for the causal decoder.
  c.objective = "clm";
  c.arch = "gru";
  c.stack = "auto";
  EXPECT_NO_THROW(c.validate());
}

std::vector<int64_t> row_tokens(const torch::Tensor& t, int64_t i) {
  auto r = t[i].contiguous();
  return std::vector<int64_t>(r.data_ptr<int64_t>(), r.data_ptr<int64_t>() + r.numel());
}

// The language whose rendering of m is exactly `s`, or -1.
int language_of_render(const Grammar& g, const Meaning& m, const std::vector<int64_t>& s) {
  for (int l = 0; l < Grammar::kLanguages; ++l)
    if (g.render(m, l).tokens == s) return l;
  return -1;
}

std::vector<int64_t> slice(const std::vector<int64_t>& v, size_t a, size_t b) {
  return std::vector<int64_t>(v.begin() + a, v.begin() + b);
}

TEST(Objectives, BatchesHoldTheCorpusAndEqualTokenCounts) {
  Grammar g;
  const uint64_t seed = 5;
  const int64_t step = 3;
  const uint64_t stream = mix_seed(seed, step);
  for (const auto& obj : {"clm", "clm_pairs", "mlm", "denoise", "translate"}) {
    auto c = tiny(obj);
    auto b = objective_batch(g, c, seed, step);
    const int64_t positions = b.input.numel() + (b.src.defined() ? b.src.numel() : 0);
    EXPECT_EQ(positions, kSentenceLen * c.batch) << obj;
    EXPECT_EQ(b.target.sizes(), b.input.sizes()) << obj;
    EXPECT_EQ(b.mask.sizes(), b.input.sizes()) << obj;
    for (int64_t j = 0; j < b.input.size(0); ++j) {
      const auto m = g.sample(stream, j);
      const auto in = row_tokens(b.input, j), tg = row_tokens(b.target, j);
      const auto mk = row_tokens(b.mask.to(torch::kLong), j);
      if (std::string(obj) == "clm" || std::string(obj) == "clm_pairs") {
        for (size_t t = 0; t + 1 < in.size(); ++t) EXPECT_EQ(in[t + 1], tg[t]);  // next token
        for (size_t t = 0; t < tg.size(); ++t) EXPECT_EQ(mk[t], tg[t] != Grammar::kPad);
        ASSERT_EQ(in[0], Grammar::kBos);
        if (std::string(obj) == "clm") {
          size_t e = 1;
          while (in[e] != Grammar::kEos) ++e;
          EXPECT_GE(language_of_render(g, m, slice(in, 1, e)), 0) << "clm row " << j;
        } else {
          size_t sep = 1;
          while (in[sep] != Grammar::kSep) ++sep;
          size_t e = sep + 2;
          while (tg[e - 1] != Grammar::kEos) ++e;  // tg[e-1] = in[e]
          const int sl = language_of_render(g, m, slice(in, 1, sep));
          const int tl = static_cast<int>(in[sep + 1] - Grammar::kLangTag0);
          EXPECT_GE(sl, 0) << "source of row " << j;
          EXPECT_NE(sl, tl);
          EXPECT_EQ(slice(in, sep + 2, e), g.render(m, tl).tokens) << "target of row " << j;
        }
      } else if (std::string(obj) == "mlm") {
        size_t e = 1;
        while (tg[e] != Grammar::kEos) ++e;
        EXPECT_GE(language_of_render(g, m, slice(tg, 1, e)), 0);
        for (size_t t = 0; t < in.size(); ++t) {
          if (mk[t]) {
            EXPECT_TRUE(t >= 1 && t < e) << "only words are selected";
          } else {
            EXPECT_EQ(in[t], tg[t]) << "an unselected position changed";
          }
        }
      } else {
        const auto src = row_tokens(b.src, j);
        size_t e = 0;
        while (tg[e] != Grammar::kEos) ++e;
        const int tl = static_cast<int>(in[0] - Grammar::kLangTag0);
        EXPECT_EQ(slice(tg, 0, e), g.render(m, tl).tokens);
        EXPECT_EQ(slice(in, 1, e + 1), slice(tg, 0, e));  // teacher forcing
        size_t se = 1;
        while (src[se] != Grammar::kEos) ++se;
        const auto x = slice(src, 1, se);
        if (std::string(obj) == "translate") {
          const int sl = language_of_render(g, m, x);
          EXPECT_GE(sl, 0);
          EXPECT_NE(sl, tl);
        } else {
          // Text infilling: the kept words are a subsequence of the target, some are hidden,
          // and no two MASKs are adjacent (each run became one).
          const auto y = g.render(m, tl).tokens;
          size_t yi = 0, kept = 0;
          int masks = 0;
          for (size_t xi = 0; xi < x.size(); ++xi) {
            if (x[xi] == Grammar::kMask) {
              ++masks;
              if (xi > 0) {
                EXPECT_NE(x[xi - 1], Grammar::kMask);
              }
              continue;
            }
            while (yi < y.size() && y[yi] != x[xi]) ++yi;
            ASSERT_LT(yi, y.size()) << "kept word not in order";
            ++yi;
            ++kept;
          }
          EXPECT_GE(masks, 1);
          EXPECT_LT(kept, y.size());
        }
      }
    }
  }
}

TEST(Objectives, MaskingRatesAreAsConfigured) {
  Grammar g;
  auto c = tiny("mlm");
  c.batch = 512;
  auto b = objective_batch(g, c, 1, 0);
  const double words = ((b.target >= Grammar::kFirstWord).sum()).item<double>();
  const double selected = b.mask.sum().item<double>();
  EXPECT_NEAR(selected / words, 0.15, 0.03);
  const double masked = (b.input == Grammar::kMask).sum().item<double>();
  EXPECT_NEAR(masked / selected, 0.8, 0.05);
}

TEST(Objectives, PretrainingLearnsAndIsDeterministic) {
  Grammar g;
  for (const auto& obj : {"clm", "mlm", "translate"}) {
    auto c = tiny(obj);
    c.steps = 150;
    PretrainModel a(c, g.vocab_size());
    auto oa = pretrain(a, g, c);
    EXPECT_LT(oa.last_loss, oa.first_loss - 0.4) << obj;
    EXPECT_LT(oa.heldout_loss, oa.first_loss) << obj;
    if (std::string(obj) == "clm") {
      PretrainModel b(c, g.vocab_size());
      EXPECT_EQ(pretrain(b, g, c).heldout_loss, oa.heldout_loss);
    }
  }
}

TEST(Downstream, DataProbeAndFinetune) {
  Grammar g;
  auto d = downstream_data(g, 2, 40, 9);
  for (int64_t i = 0; i < 40; ++i) {
    const auto r = g.render(g.sample(9, i), 2);
    const auto toks = row_tokens(d.tokens, i), tags = row_tokens(d.tags, i);
    EXPECT_EQ(slice(toks, 1, 1 + r.tokens.size()), r.tokens);
    EXPECT_EQ(slice(tags, 1, 1 + r.tags.size()), r.tags);
    EXPECT_EQ(tags[0], -1);
    EXPECT_EQ(d.labels[i].item<int64_t>(), Grammar::label(g.sample(9, i)));
  }
  auto c = tiny("none", "decoder");
  c.probe_steps = 300;
  c.ft_steps = 120;
  const auto train = downstream_data(g, 0, 300, 1), test = downstream_data(g, 0, 200, 2);
  PretrainModel m(c, g.vocab_size());
  // A probe on a random network learns something (more than the most frequent tag, NOUN)...
  const double noun =
      (test.tags == kPosNoun).sum().item<double>() / (test.tags >= 0).sum().item<double>();
  const double probe = probe_accuracy(m, "pos", train, test, c, 3);
  EXPECT_GT(probe, noun + 0.05) << "most frequent tag: " << noun;
  const auto w = module_weights(m.module());
  // ...and finetuning the whole network learns the tags.
  EXPECT_GT(finetune_accuracy(c, g.vocab_size(), w, "pos", train, test, 3), std::max(0.85, probe));
  // The model's weights are untouched by probing and finetuning.
  const auto after = module_weights(m.module());
  for (const auto& [k, t] : w) EXPECT_TRUE(torch::equal(t, after.at(k))) << k;
  auto bad = w;
  bad.erase(bad.begin());
  PretrainModel m2(c, g.vocab_size());
  EXPECT_THROW(load_module_weights(m2.module(), bad, "test"), Error);
}

}  // namespace
}  // namespace seqlab
