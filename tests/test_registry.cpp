// The architecture and feature-map registries (mixers/registry.h, mixers/feature_maps/registry.h),
// walked as tables: every entry has both halves (the LibTorch module and the fast decoder's twin),
// a one-line description and the memory figures, and the two forms agree on random weights.
// Adding an architecture or a feature map adds a row here without editing this file.
//
// T = tokens, D = d_model, H = heads, Dh = d_head, F' = feature width per head.
#include "seqlab/infer/fast_mixer.h"
#include "seqlab/infer/feature_maps/feature_map.h"
#include "seqlab/mixers/feature_maps/registry.h"
#include "seqlab/mixers/registry.h"
#include "seqlab/model/model_dir.h"

#include "mixer_testing.h"

#include <cmath>
#include <set>

using namespace seqlab;
using namespace seqlab::testing;

namespace {

constexpr int64_t kT = 9;

// Moves every parameter off its structured init, so every term of the maths is exercised.
void perturb(torch::nn::Module& m, uint64_t seed) {
  torch::NoGradGuard ng;
  torch::manual_seed(seed);
  for (auto& p : m.parameters()) p.add_(torch::randn_like(p) * 0.2);
}

// The fast twin stepped over x [T,D] -> y [T,D].
torch::Tensor run_fast(const infer::FastMixer& fm, const torch::Tensor& x) {
  const int64_t T = x.size(0), D = x.size(1);
  std::vector<float> state(fm.state_size()), scratch(fm.scratch_size()), y(T * D);
  auto xc = x.contiguous();
  fm.reset(state.data());
  for (int64_t t = 0; t < T; ++t)
    fm.step(xc.data_ptr<float>() + t * D, y.data() + t * D, state.data(), scratch.data(), t);
  return torch::from_blob(y.data(), {T, D}, torch::kFloat).clone();
}

// The LibTorch step and the fast step agree over kT tokens for mixer config cfg.
void expect_forms_agree(const MixerConfig& cfg, const std::string& what) {
  torch::NoGradGuard ng;
  torch::manual_seed(1);
  const auto& entry = arch_entry(cfg.arch);
  Mixer m = entry.make(cfg);
  perturb(*m, 2);
  ASSERT_TRUE(entry.make_fast) << what << ": no fast form";
  auto fm = entry.make_fast(cfg, infer::Weights(model_tensors(*m)));
  torch::manual_seed(3);
  auto x = torch::randn({kT, cfg.d_model});  // [T,D]
  auto s = m->init_state(1);
  std::vector<torch::Tensor> ys;
  for (int64_t t = 0; t < kT; ++t) ys.push_back(m->step(x[t].unsqueeze(0), *s).squeeze(0));
  auto ref = torch::stack(ys);  // [T,D]
  auto got = run_fast(*fm, x);
  for (int64_t t = 0; t < kT; ++t)
    EXPECT_TRUE(rel_close(got[t], ref[t], 1e-4, what + ", token " + std::to_string(t)));
}

// Whether `want` appears in `have` in the same order (other names may stand between them).
bool in_order(const std::vector<std::string>& have, const std::vector<std::string>& want) {
  size_t i = 0;
  for (const auto& h : have)
    if (i < want.size() && h == want[i]) ++i;
  return i == want.size();
}

}  // namespace

TEST(ArchRegistry, ListsTheDocumentedArchitecturesInOrder) {
  // The CLI contract (shared/DESIGN.md): these names, in this order, in `seqlab archs`; an
  // architecture added later may stand anywhere among them.
  std::vector<std::string> names;
  for (const auto& e : mixer_registry()) names.push_back(e.name);
  EXPECT_TRUE(
      in_order(names, {"softmax", "linear", "elman", "gru", "lstm", "qrnn", "s4d", "mamba"}))
      << joined(names);
}

TEST(ArchRegistry, EveryEntryIsComplete) {
  ASSERT_FALSE(mixer_registry().empty());
  std::set<int> orders;
  for (const auto& e : mixer_registry()) {
    SCOPED_TRACE(e.name);
    EXPECT_TRUE(e.make) << "no LibTorch module (SEQLAB_REGISTER_ARCH in mixers/)";
    EXPECT_TRUE(e.make_fast) << "no fast form (SEQLAB_REGISTER_FAST_ARCH in infer/mixers/)";
    EXPECT_FALSE(e.description.empty());
    EXPECT_EQ(e.description.find('\n'), std::string::npos) << "the description is one line";
    EXPECT_GT(e.memory.matrices, 0);
    EXPECT_TRUE(orders.insert(e.order).second) << "two entries share order " << e.order;
    EXPECT_EQ(find_arch(e.name), &e);
  }
}

TEST(ArchRegistry, TraitsMatchWhatTheMixersDo) {
  for (const auto& e : mixer_registry()) {
    SCOPED_TRACE(e.name);
    auto cfg = small_config(e.name);
    cfg.validate();
    Mixer m = e.make(cfg);
    // Attention mixers expose their heads (MAE) and are the ones that may be bidirectional.
    EXPECT_EQ(dynamic_cast<HeadsMixer*>(m.get()) != nullptr, e.traits.attention);
    auto bidir = cfg;
    bidir.causal = false;
    if (e.traits.attention)
      EXPECT_NO_THROW(bidir.validate());
    else
      EXPECT_THROW(bidir.validate(), Error);
    // A mixer with a KV cache holds max_len positions of state; the others hold none.
    auto s = m->init_state(1);
    int64_t floats = 0;
    s->for_each([&](const std::string&, torch::Tensor& t) {
      if (t.defined()) floats += t.numel();
    });
    auto longer = cfg;
    longer.max_len *= 2;
    auto s2 = e.make(longer)->init_state(1);
    int64_t floats2 = 0;
    s2->for_each([&](const std::string&, torch::Tensor& t) {
      if (t.defined()) floats2 += t.numel();
    });
    EXPECT_EQ(floats2 > floats, e.traits.kv_cache);
    EXPECT_EQ(arch_label(cfg) != cfg.arch, e.traits.feature_map);
  }
}

TEST(ArchRegistry, FastFormEqualsLibTorchStepForEveryEntry) {
  for (const auto& e : mixer_registry()) {
    auto cfg = small_config(e.name);
    cfg.validate();
    expect_forms_agree(cfg, e.name);
  }
}

TEST(ArchRegistry, UnknownNamesListTheKnownOnes) {
  MixerConfig c;
  c.arch = "transformer-xl";
  try {
    c.validate();
    FAIL() << "an unknown architecture was accepted";
  } catch (const Error& err) {
    const std::string msg = err.what();
    for (const auto& e : mixer_registry()) EXPECT_NE(msg.find(e.name), std::string::npos) << msg;
    for (const auto& e : feature_map_registry())
      EXPECT_NE(msg.find(e.name), std::string::npos) << msg;
  }
}

TEST(FeatureMapRegistry, ListsTheDocumentedMapsInOrder) {
  std::vector<std::string> names;
  for (const auto& e : feature_map_registry()) names.push_back(e.name);
  EXPECT_TRUE(in_order(names, {"elu1", "relu", "rfa", "performer", "t2r", "hedgehog"}))
      << joined(names);
  // Aliases resolve to their map, in --feature-map and as an arch.
  ASSERT_NE(find_feature_map("elu"), nullptr);
  EXPECT_EQ(find_feature_map("elu")->name, "elu1");
  auto c = small_config("elu");
  c.validate();
  EXPECT_EQ(c.feature_map, "elu1");
}

TEST(FeatureMapRegistry, EveryEntryIsCompleteAndBothFormsAgree) {
  ASSERT_FALSE(feature_map_registry().empty());
  for (const auto& e : feature_map_registry()) {
    SCOPED_TRACE(e.name);
    EXPECT_TRUE(e.make) << "no LibTorch module (SEQLAB_REGISTER_FEATURE_MAP)";
    ASSERT_TRUE(e.make_fast) << "no fast form (SEQLAB_REGISTER_FAST_FEATURE_MAP)";
    EXPECT_FALSE(e.description.empty());
    // The map alone: phi of every head's query and key, fast against LibTorch.
    torch::NoGradGuard ng;
    auto cfg = small_config(e.name);  // a map's name as the arch: linear attention with it
    cfg.validate();
    ASSERT_EQ(cfg.feature_map, e.name);
    torch::manual_seed(5);
    Mixer m = make_mixer(cfg);
    perturb(*m, 6);
    auto tensors = model_tensors(*m);
    FeatureMap map = e.make(cfg);
    load_model_tensors(
        *map,
        [&] {
          std::map<std::string, torch::Tensor> own;
          const std::string prefix = "feature_map.";
          for (const auto& [name, t] : tensors)
            if (name.rfind(prefix, 0) == 0) own[name.substr(prefix.size())] = t;
          return own;
        }(),
        "the linear attention's feature_map.*");
    auto fast = e.make_fast(cfg, infer::Weights(tensors));
    ASSERT_EQ(fast->out_dim(), map->out_dim());
    ASSERT_EQ(fast->exponential(), map->exponential());
    const int64_t H = cfg.n_head, Dh = cfg.d_head(), Fo = map->out_dim();
    auto x = torch::randn({1, H, 1, Dh});  // [B,H,T,Dh]
    for (bool is_query : {true, false}) {
      auto ref = map->forward(x, is_query).reshape({H, Fo});  // [H,F']
      std::vector<float> out(Fo), tmp(Dh);
      for (int64_t h = 0; h < H; ++h) {
        float max_log = 0;
        auto xh = x[0][h][0].contiguous();
        fast->apply(xh.data_ptr<float>(), h, is_query, out.data(), tmp.data(), &max_log);
        auto got = torch::from_blob(out.data(), {Fo}, torch::kFloat).clone();
        // An exponential map removed its largest log-feature: put it back.
        if (fast->exponential()) got = got * std::exp(max_log);
        EXPECT_TRUE(
            rel_close(got, ref[h], 1e-5,
                      std::string(is_query ? "query" : "key") + ", head " + std::to_string(h)));
      }
    }
    // And inside linear attention, token by token.
    expect_forms_agree(cfg, "linear (" + e.name + ")");
  }
}
