#include "seqlab/mixers/qrnn.h"

#include "mixer_testing.h"

#include <cmath>

using namespace seqlab;
using namespace seqlab::testing;

namespace {

MixerConfig qrnn_config(int64_t window, const std::string& pooling) {
  auto c = small_config("qrnn");
  c.qrnn_window = window;
  c.qrnn_pooling = pooling;
  c.validate();
  return c;
}

const std::vector<std::pair<int64_t, std::string>> kVariants = {
    {1, "f"}, {1, "fo"}, {2, "f"}, {2, "fo"}};

std::string variant_name(int64_t window, const std::string& pooling) {
  return "window " + std::to_string(window) + ", pooling " + pooling;
}

// The QRNN written straight from the paper's equations, in double precision, one scalar at a time:
// no tensor op of the module is reused.
torch::Tensor reference(QRNNImpl& m, const torch::Tensor& x_in) {
  const auto& cfg = m.config();
  const int64_t B = x_in.size(0), T = x_in.size(1), D = cfg.d_model, k = cfg.qrnn_window;
  const bool fo = cfg.qrnn_pooling == "fo";
  auto x = x_in.to(torch::kDouble).contiguous();
  auto W = m.w_ih->weight.to(torch::kDouble).contiguous();
  auto bias = m.w_ih->bias.to(torch::kDouble).contiguous();
  auto Wo = m.o->weight.to(torch::kDouble).contiguous();
  auto bo = m.o->bias.to(torch::kDouble).contiguous();
  auto xa = x.accessor<double, 3>();
  auto Wa = W.accessor<double, 2>();
  auto ba = bias.accessor<double, 1>();
  auto Woa = Wo.accessor<double, 2>();
  auto boa = bo.accessor<double, 1>();
  auto sigmoid = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  auto y = torch::zeros({B, T, D}, torch::kDouble);
  auto ya = y.accessor<double, 3>();
  for (int64_t b = 0; b < B; ++b) {
    std::vector<double> c(D, 0.0), h(D);
    for (int64_t t = 0; t < T; ++t) {
      // The window [x_{t-1}; x_t] (or just x_t), zero before the sequence starts.
      std::vector<double> win;
      if (k == 2)
        for (int64_t i = 0; i < D; ++i) win.push_back(t > 0 ? xa[b][t - 1][i] : 0.0);
      for (int64_t i = 0; i < D; ++i) win.push_back(xa[b][t][i]);
      auto gate = [&](int64_t row) {
        double s = ba[row];
        for (size_t i = 0; i < win.size(); ++i) s += Wa[row][i] * win[i];
        return s;
      };
      for (int64_t d = 0; d < D; ++d) {
        const double z = std::tanh(gate(d)), f = sigmoid(gate(D + d));
        c[d] = f * c[d] + (1 - f) * z;
        h[d] = fo ? sigmoid(gate(2 * D + d)) * c[d] : c[d];
      }
      for (int64_t j = 0; j < D; ++j) {
        double s = boa[j];
        for (int64_t d = 0; d < D; ++d) s += Woa[j][d] * h[d];
        ya[b][t][j] = s;
      }
    }
  }
  return y;
}

}  // namespace

TEST(QRNN, StepMatchesForwardForEveryWindowAndPooling) {
  for (const auto& [window, pooling] : kVariants) {
    torch::manual_seed(1);
    QRNNImpl m(qrnn_config(window, pooling));
    EXPECT_TRUE(step_matches_forward(m, 3, 13)) << variant_name(window, pooling);
  }
}

TEST(QRNN, MatchesHandWrittenLoop) {
  torch::NoGradGuard ng;
  for (const auto& [window, pooling] : kVariants) {
    torch::manual_seed(5);
    QRNNImpl m(qrnn_config(window, pooling));
    auto x = torch::randn({2, 13, 16});
    EXPECT_TRUE(all_close(m.forward(x), reference(m, x), 1e-5, variant_name(window, pooling)));
  }
}

TEST(QRNN, IsCausalAndWindowSized) {
  // Changing x_5 must leave outputs before t = 5 untouched and change the output at t = 5.
  for (const auto& [window, pooling] : kVariants) {
    torch::manual_seed(2);
    QRNNImpl m(qrnn_config(window, pooling));
    EXPECT_TRUE(is_causal(m, 2, 8, 5)) << variant_name(window, pooling);
  }
}

TEST(QRNN, ParameterNamesAndShapes) {
  for (const auto& [window, pooling] : kVariants) {
    QRNNImpl m(qrnn_config(window, pooling));
    EXPECT_TRUE(parameters_are(m, {"w_ih.weight", "w_ih.bias", "o.weight", "o.bias"}))
        << variant_name(window, pooling);
    const int64_t gates = pooling == "fo" ? 3 : 2;
    EXPECT_EQ(m.w_ih->weight.sizes(), (std::vector<int64_t>{gates * 16, window * 16}))
        << variant_name(window, pooling);
  }
}

TEST(QRNN, StateCarriesThePreviousInputOnlyForWindowTwo) {
  torch::NoGradGuard ng;
  for (int64_t window : {1, 2}) {
    QRNNImpl m(qrnn_config(window, "fo"));
    const std::vector<std::string> expected =
        window == 1 ? std::vector<std::string>{"c"} : std::vector<std::string>{"c", "x_prev"};
    EXPECT_EQ(state_names(*m.init_state(2)), expected);
  }
  QRNNImpl m(qrnn_config(2, "fo"));
  auto s = m.init_state(2);
  auto x = torch::randn({2, 16});
  m.step(x, *s);
  EXPECT_TRUE(all_close(dynamic_cast<QRNNState&>(*s).x_prev, x, 0.0, "x_prev"));
}

TEST(QRNN, CloneIsDeep) {
  QRNNImpl m(qrnn_config(2, "fo"));
  EXPECT_TRUE(clone_is_deep<QRNNState>(m, 2));  // over both c and x_prev
}
