#include "seqlab/mixers/s4d.h"

#include "mixer_testing.h"

#include <cmath>
#include <complex>

using namespace seqlab;
using namespace seqlab::testing;

namespace {

using cplx = std::complex<double>;

// The discretised SSM of one (channel, mode), from the paper's formulas in std::complex<double>.
struct RefMode {
  cplx abar, bbar, c;
};

// [D][M] modes, written independently of the module's real/imag-pair arithmetic.
std::vector<std::vector<RefMode>> reference_modes(const S4DImpl& m) {
  auto lar = m.log_a_real.to(torch::kDouble).contiguous();
  auto ai = m.a_imag.to(torch::kDouble).contiguous();
  auto ldt = m.log_dt.to(torch::kDouble).contiguous();
  auto b = m.b.to(torch::kDouble).contiguous();
  auto c = m.c.to(torch::kDouble).contiguous();
  auto lara = lar.accessor<double, 2>(), aia = ai.accessor<double, 2>();
  auto ldta = ldt.accessor<double, 1>();
  auto ba = b.accessor<double, 3>(), ca = c.accessor<double, 3>();
  std::vector<std::vector<RefMode>> out(lar.size(0));
  for (int64_t d = 0; d < lar.size(0); ++d)
    for (int64_t k = 0; k < lar.size(1); ++k) {
      const cplx A(-std::exp(lara[d][k]), aia[d][k]);
      const double dt = std::exp(ldta[d]);
      const cplx abar = std::exp(dt * A);
      const cplx bbar = (abar - 1.0) / A * cplx(ba[d][k][0], ba[d][k][1]);
      out[d].push_back({abar, bbar, cplx(ca[d][k][0], ca[d][k][1])});
    }
  return out;
}

// Runs the recurrence s_t = Abar s_{t-1} + Bbar u_t, y_t = 2 Re(sum C s_t) + skip u_t over
// u [B,T,D] in double precision.
torch::Tensor reference_ssm(const S4DImpl& m, const torch::Tensor& u_in) {
  auto modes = reference_modes(m);
  auto u = u_in.to(torch::kDouble).contiguous();
  auto skip = m.skip.to(torch::kDouble).contiguous();
  auto ua = u.accessor<double, 3>();
  auto sa = skip.accessor<double, 1>();
  auto y = torch::zeros_like(u);
  auto ya = y.accessor<double, 3>();
  for (int64_t b = 0; b < u.size(0); ++b)
    for (int64_t d = 0; d < u.size(2); ++d) {
      std::vector<cplx> s(modes[d].size(), 0.0);
      for (int64_t t = 0; t < u.size(1); ++t) {
        double acc = sa[d] * ua[b][t][d];
        for (size_t k = 0; k < s.size(); ++k) {
          s[k] = modes[d][k].abar * s[k] + modes[d][k].bbar * ua[b][t][d];
          acc += 2.0 * (modes[d][k].c * s[k]).real();
        }
        ya[b][t][d] = acc;
      }
    }
  return y;
}

MixerConfig s4d_config() {
  auto c = small_config("s4d");
  c.d_state = 8;  // M = 4 complex modes per channel
  c.validate();
  return c;
}

// Spreads dt over a wider range than the init, so that both fast- and slow-decaying modes are
// tested.
void widen_dt(S4DImpl& m) {
  torch::NoGradGuard ng;
  m.log_dt.uniform_(std::log(0.01), std::log(0.8));
}

}  // namespace

TEST(S4D, StepMatchesForward) {
  torch::manual_seed(1);
  S4DImpl m(s4d_config());
  widen_dt(m);
  EXPECT_TRUE(step_matches_forward(m, 3, 13));
}

TEST(S4D, StepMatchesForwardOnALongerSequence) {
  // The FFT convolution's rounding grows with T; it must stay within the contract's 1e-5 at a
  // few hundred steps too (about 8e-7 measured at T = 300).
  torch::manual_seed(6);
  S4DImpl m(s4d_config());
  EXPECT_TRUE(step_matches_forward(m, 2, 300));
}

TEST(S4D, KernelMatchesImpulseResponseOfDoubleRecurrence) {
  // K is the SSM's response to a unit impulse at t = 0 (without the skip path).
  torch::NoGradGuard ng;
  torch::manual_seed(3);
  S4DImpl m(s4d_config());
  widen_dt(m);
  const int64_t T = 40, D = 16;
  auto impulse = torch::zeros({1, T, D});
  impulse.select(1, 0).fill_(1.0);
  auto ref = reference_ssm(m, impulse)[0].t();  // [D,T]
  ref.select(1, 0) -= m.skip.to(torch::kDouble);
  EXPECT_TRUE(all_close(m.kernel(T), ref, 1e-5, "kernel vs impulse response"));
}

TEST(S4D, ForwardMatchesDoubleRecurrence) {
  torch::NoGradGuard ng;
  torch::manual_seed(4);
  S4DImpl m(s4d_config());
  widen_dt(m);
  auto x = torch::randn({2, 13, 16});
  auto xd = x.to(torch::kDouble);
  auto u = torch::matmul(xd, m.w_ih->weight.to(torch::kDouble).t()) +
           m.w_ih->bias.to(torch::kDouble);            // [B,T,D]
  auto y = reference_ssm(m, u);                        // [B,T,D]
  y = 0.5 * y * (1 + torch::erf(y / std::sqrt(2.0)));  // exact GELU
  auto ref = torch::matmul(y, m.o->weight.to(torch::kDouble).t()) + m.o->bias.to(torch::kDouble);
  EXPECT_TRUE(all_close(m.forward(x), ref, 1e-5, "forward vs double recurrence"));
}

TEST(S4D, IsCausal) {
  torch::manual_seed(2);
  S4DImpl m(s4d_config());
  // The FFT mixes all positions numerically, so "unchanged" means within rounding.
  EXPECT_TRUE(is_causal(m, 2, 8, 5, /*past_tol=*/1e-6, /*changed_tol=*/1e-3));
}

TEST(S4D, ParameterNamesShapesAndInit) {
  S4DImpl m(s4d_config());
  EXPECT_TRUE(parameters_are(m, {"w_ih.weight", "w_ih.bias", "o.weight", "o.bias", "log_a_real",
                                 "a_imag", "log_dt", "b", "c", "skip"}));
  EXPECT_EQ(m.b.sizes(), (std::vector<int64_t>{16, 4, 2}));
  // S4D-Lin: A_m = -1/2 + i pi m.
  EXPECT_TRUE(all_close(-torch::exp(m.log_a_real[0]), torch::full({4}, -0.5), 1e-7, "Re A"));
  EXPECT_TRUE(all_close(m.a_imag[3], std::acos(-1.0) * torch::arange(4.0), 1e-6, "Im A"));
  auto dt = torch::exp(m.log_dt);
  EXPECT_GE(dt.min().item<double>(), 0.001 * (1 - 1e-6));
  EXPECT_LE(dt.max().item<double>(), 0.1 * (1 + 1e-6));
}

TEST(S4D, EveryParameterGetsAGradient) {
  torch::manual_seed(7);
  S4DImpl m(s4d_config());
  EXPECT_TRUE(gradient_reaches_every_parameter(m, 2, 9));
}

TEST(S4D, RejectsAnOddStateSize) {
  auto c = small_config("s4d");
  c.d_state = 3;
  EXPECT_THROW(S4DImpl m(c), seqlab::Error);
}

TEST(S4D, CloneIsDeep) {
  S4DImpl m(s4d_config());
  EXPECT_TRUE(clone_is_deep<S4DState>(m, 2));  // over both s_re and s_im
  auto s = m.init_state(2);
  EXPECT_EQ(dynamic_cast<S4DState&>(*s).s_re.sizes(), (std::vector<int64_t>{2, 16, 4}));
}
