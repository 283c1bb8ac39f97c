// Shared checks for the mixer contract: the recurrent form equals the parallel form, outputs are
// causal, a cloned state is independent, the parameter names are fixed, and gradients reach every
// parameter.
//
// Every check returns ::testing::AssertionResult, and on failure its message says what was seen
// (the first values of both tensors and the max difference, the missing names, ...) so that the
// failure explains itself (after llm.c's test_gpt2.c). Checks that draw random inputs draw them
// from the global generator and do not reseed it: the test seeds it, as before.
//
// B = batch, T = time, D = d_model.
#pragma once

#include "seqlab/mixers/mixer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace seqlab::testing {

inline std::string head_values(const torch::Tensor& t, int64_t n = 6) {
  auto f = t.flatten().to(torch::kDouble);
  std::ostringstream os;
  for (int64_t i = 0; i < std::min<int64_t>(n, f.numel()); ++i) os << f[i].item<double>() << " ";
  return os.str();
}

// Max |a - b| with a readable failure message when it exceeds tol.
// Max |a - b| / max |ref| (a fast result a against its LibTorch reference ref), with both
// tensors' first values on failure.
inline ::testing::AssertionResult rel_close(const torch::Tensor& a, const torch::Tensor& ref,
                                            double tol, const std::string& what) {
  const double scale = std::max(ref.abs().max().item<double>(), 1e-6);
  const double err = (a.to(torch::kDouble) - ref.to(torch::kDouble)).abs().max().item<double>();
  if (err / scale <= tol) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << what << ": max |diff| " << err << " = " << err / scale << " of the scale " << scale
         << " > " << tol << "\n  fast:  " << head_values(a) << "\n  torch: " << head_values(ref);
}

inline ::testing::AssertionResult all_close(const torch::Tensor& a, const torch::Tensor& b,
                                            double tol, const std::string& what = "") {
  if (a.sizes() != b.sizes())
    return ::testing::AssertionFailure()
           << what << ": shapes differ " << a.sizes() << " vs " << b.sizes();
  const double diff = (a.to(torch::kDouble) - b.to(torch::kDouble)).abs().max().item<double>();
  if (!(diff <= tol))
    return ::testing::AssertionFailure()
           << what << ": max abs diff " << diff << " > " << tol
           << "\n  first of a: " << head_values(a) << "\n  first of b: " << head_values(b);
  return ::testing::AssertionSuccess();
}

// Runs step() over x [B,T,D] token by token and stacks the outputs: [B,T,D].
inline torch::Tensor run_steps(MixerImpl& m, const torch::Tensor& x) {
  auto s = m.init_state(x.size(0));
  std::vector<torch::Tensor> ys;
  for (int64_t t = 0; t < x.size(1); ++t) ys.push_back(m.step(x.select(1, t), *s));
  return torch::stack(ys, 1);
}

// The central contract test: step() over T tokens equals forward(), fp32, within tol.
inline ::testing::AssertionResult step_matches_forward(MixerImpl& m, int64_t B, int64_t T,
                                                       double tol = 1e-5, uint64_t seed = 0) {
  torch::NoGradGuard ng;
  torch::manual_seed(seed);
  auto x = torch::randn({B, T, m.config().d_model});
  auto par = m.forward(x);
  auto rec = run_steps(m, x);
  return all_close(par, rec, tol, "step vs forward");
}

// A small config for tests: D = 16, H = 2, T long enough to cross chunk boundaries.
inline MixerConfig small_config(const std::string& arch) {
  MixerConfig c;
  c.arch = arch;
  c.d_model = 16;
  c.n_head = 2;
  c.d_state = 4;
  c.chunk_size = 5;
  c.max_len = 64;
  c.validate();
  return c;
}

// A sequence-to-sequence function [B,T,D] -> [B,T,D]: a mixer's forward() or one of its forms.
using SeqFn = std::function<torch::Tensor(const torch::Tensor&)>;

// Adds 1 to every channel of x [B,T,D] at position t.
inline torch::Tensor changed_at(const torch::Tensor& x, int64_t t) {
  auto x2 = x.clone();
  x2.select(1, t).add_(1.0);
  return x2;
}

// Causality: changing x at position `changed` must leave the outputs before it within past_tol
// (0 = bit-identical) and must move the output at `changed` by more than changed_tol (so that the
// check cannot pass on a mixer that ignores its input).
inline ::testing::AssertionResult is_causal(const SeqFn& f, const torch::Tensor& x, int64_t changed,
                                            double past_tol = 0.0, double changed_tol = 1e-6) {
  torch::NoGradGuard ng;
  auto y1 = f(x);                       // [B,T,D]
  auto y2 = f(changed_at(x, changed));  // [B,T,D]
  auto past = all_close(y1.narrow(1, 0, changed), y2.narrow(1, 0, changed), past_tol,
                        "outputs before the changed position t = " + std::to_string(changed));
  auto here = all_close(y1.narrow(1, changed, 1), y2.narrow(1, changed, 1), changed_tol,
                        "output at the changed position");
  if (past && !here) return ::testing::AssertionSuccess();
  auto r = ::testing::AssertionFailure() << "not causal:";
  if (!past) r << "\n  the past moved. " << past.message();
  if (here)
    r << "\n  the output at t = " << changed << " moved by at most " << changed_tol
      << ", so the change did not reach it";
  return r;
}

// The same on m.forward() over x = randn [B,T,D] drawn here.
inline ::testing::AssertionResult is_causal(MixerImpl& m, int64_t B, int64_t T, int64_t changed,
                                            double past_tol = 0.0, double changed_tol = 1e-6) {
  auto x = torch::randn({B, T, m.config().d_model});
  return is_causal([&](const torch::Tensor& v) { return m.forward(v); }, x, changed, past_tol,
                   changed_tol);
}

// The opposite, for a bidirectional mixer: changing x at position `changed` moves the first output
// by more than tol.
inline ::testing::AssertionResult sees_the_future(MixerImpl& m, const torch::Tensor& x,
                                                  int64_t changed, double tol = 1e-6) {
  torch::NoGradGuard ng;
  auto y1 = m.forward(x).narrow(1, 0, 1);                       // [B,1,D]
  auto y2 = m.forward(changed_at(x, changed)).narrow(1, 0, 1);  // [B,1,D]
  if (!all_close(y1, y2, tol)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "changing x at t = " << changed << " moved the first output by at most " << tol
         << ": the mixer does not see the future";
}

// Copies our input and recurrence projections into a one-layer torch::nn::GRU or torch::nn::LSTM
// `ref`, which stacks its gates along dim 0 in the same order as w_ih and w_hh do.
inline void copy_rnn_weights(torch::nn::Module& ref, const torch::nn::Linear& w_ih,
                             const torch::nn::Linear& w_hh) {
  torch::NoGradGuard ng;
  auto p = ref.named_parameters();
  p["weight_ih_l0"].copy_(w_ih->weight);
  p["weight_hh_l0"].copy_(w_hh->weight);
  p["bias_ih_l0"].copy_(w_ih->bias);
  p["bias_hh_l0"].copy_(w_hh->bias);
}

// The names of a state's tensors, in for_each order.
inline std::vector<std::string> state_names(MixerState& s) {
  std::vector<std::string> names;
  s.for_each([&](const std::string& n, torch::Tensor&) { names.push_back(n); });
  return names;
}

// The clone of a fresh state is deep: after one step() of the original on x = randn [B,D] every
// tensor of the original has moved off zero and every tensor of the clone is still all zero. Both
// the state and its clone must be of type S.
template <class S>
::testing::AssertionResult clone_is_deep(MixerImpl& m, int64_t B) {
  torch::NoGradGuard ng;
  auto s = m.init_state(B);
  auto c = s->clone();
  if (!dynamic_cast<S*>(s.get()) || !dynamic_cast<S*>(c.get()))
    return ::testing::AssertionFailure()
           << "the state or its clone is not of the mixer's state type";
  m.step(torch::randn({B, m.config().d_model}), *s);
  std::ostringstream bad;
  s->for_each([&](const std::string& n, torch::Tensor& t) {
    if (!(t.abs().sum().item<double>() > 0.0))
      bad << "\n  original's " << n << " is still zero after a step";
  });
  c->for_each([&](const std::string& n, torch::Tensor& t) {
    const double sum = t.abs().sum().item<double>();
    if (sum != 0.0)
      bad << "\n  clone's " << n << " moved with the original (sum |.| = " << sum << ")";
  });
  if (bad.str().empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "clone is not deep:" << bad.str();
}

inline std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

inline std::vector<std::string> parameter_names(const torch::nn::Module& m) {
  std::vector<std::string> names;
  for (const auto& kv : m.named_parameters()) names.push_back(kv.key());
  return names;
}

// Every name in `names` is a parameter of m (m may have others).
inline ::testing::AssertionResult has_parameters(const torch::nn::Module& m,
                                                 const std::vector<std::string>& names) {
  auto p = m.named_parameters();
  std::vector<std::string> missing;
  for (const auto& n : names)
    if (!p.contains(n)) missing.push_back(n);
  if (missing.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "missing parameters: " << joined(missing)
                                       << "\n  the module has: " << joined(parameter_names(m));
}

// m's parameters are exactly `names`; with others_under set, parameters whose name starts with
// that prefix are allowed too.
inline ::testing::AssertionResult parameters_are(const torch::nn::Module& m,
                                                 const std::vector<std::string>& names,
                                                 const std::string& others_under = "") {
  auto has = has_parameters(m, names);
  if (!has) return has;
  std::vector<std::string> extra;
  for (const auto& n : parameter_names(m)) {
    const bool listed = std::find(names.begin(), names.end(), n) != names.end();
    const bool allowed = !others_under.empty() && n.rfind(others_under, 0) == 0;
    if (!listed && !allowed) extra.push_back(n);
  }
  if (extra.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "unexpected parameters: " << joined(extra)
         << (others_under.empty() ? "" : " (not under \"" + others_under + "\")");
}

// Gradients reach every parameter: after backward() of sum(forward(x)^2) over x = randn [B,T,D],
// every parameter has a defined, non-zero gradient.
inline ::testing::AssertionResult gradient_reaches_every_parameter(MixerImpl& m, int64_t B,
                                                                   int64_t T) {
  m.forward(torch::randn({B, T, m.config().d_model})).pow(2).sum().backward();
  std::vector<std::string> undefined, zero;
  for (const auto& p : m.named_parameters()) {
    if (!p.value().grad().defined())
      undefined.push_back(p.key());
    else if (!(p.value().grad().abs().sum().item<double>() > 0.0))
      zero.push_back(p.key());
  }
  if (undefined.empty() && zero.empty()) return ::testing::AssertionSuccess();
  auto r = ::testing::AssertionFailure() << "gradient does not reach every parameter:";
  if (!undefined.empty()) r << "\n  no gradient: " << joined(undefined);
  if (!zero.empty()) r << "\n  zero (or NaN) gradient: " << joined(zero);
  return r;
}

}  // namespace seqlab::testing
