#include "seqlab/mixers/mamba.h"

#include "mixer_testing.h"

using namespace seqlab;
using namespace seqlab::testing;

namespace {

MixerConfig mamba_config(int64_t d_conv = 4) {
  auto c = small_config("mamba");  // D = 16, N = 4; expand 2 -> E = 32
  c.d_conv = d_conv;
  c.validate();
  return c;
}

}  // namespace

TEST(Mamba, StepMatchesForward) {
  for (int64_t k : {1, 2, 4}) {
    torch::manual_seed(1);
    MambaImpl m(mamba_config(k));
    EXPECT_TRUE(step_matches_forward(m, 3, 13)) << "d_conv " << k;
  }
}

TEST(Mamba, ScanMatchesNaiveLoop) {
  // The selective scan against the recurrence written out index by index, in double precision.
  torch::NoGradGuard ng;
  torch::manual_seed(3);
  MambaImpl m(mamba_config());
  // Spread A beyond its init so that every (e, n) decays at its own rate.
  m.a_log.add_(torch::randn_like(m.a_log) * 0.5);
  const int64_t B = 2, T = 6, E = 32, N = 4;
  auto u = torch::randn({B, T, E});
  auto delta = torch::softplus(torch::randn({B, T, E}));
  auto Bm = torch::randn({B, T, N});
  auto Cm = torch::randn({B, T, N});
  auto y = m.scan(u, delta, Bm, Cm);  // [B,T,E]

  auto A = (-torch::exp(m.a_log.to(torch::kDouble))).contiguous();
  auto ud = u.to(torch::kDouble), dd = delta.to(torch::kDouble);
  auto bd = Bm.to(torch::kDouble), cd = Cm.to(torch::kDouble);
  auto Aa = A.accessor<double, 2>();
  auto ua = ud.accessor<double, 3>(), da = dd.accessor<double, 3>();
  auto ba = bd.accessor<double, 3>(), ca = cd.accessor<double, 3>();
  auto ref = torch::zeros({B, T, E}, torch::kDouble);
  auto ra = ref.accessor<double, 3>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t e = 0; e < E; ++e)
      for (int64_t n = 0; n < N; ++n) {
        double h = 0;
        for (int64_t t = 0; t < T; ++t) {
          h = std::exp(da[b][t][e] * Aa[e][n]) * h + da[b][t][e] * ba[b][t][n] * ua[b][t][e];
          ra[b][t][e] += ca[b][t][n] * h;
        }
      }
  EXPECT_TRUE(all_close(y, ref, 1e-5, "scan vs naive loop"));
}

TEST(Mamba, IsCausal) {
  torch::manual_seed(2);
  MambaImpl m(mamba_config());
  EXPECT_TRUE(is_causal(m, 2, 8, 5, /*past_tol=*/1e-7, /*changed_tol=*/1e-6));
}

TEST(Mamba, ParameterNamesShapesAndInit) {
  torch::manual_seed(4);
  MambaImpl m(mamba_config());
  EXPECT_TRUE(
      parameters_are(m, {"in_proj.weight", "conv1d.weight", "conv1d.bias", "x_proj.weight",
                         "dt_proj.weight", "dt_proj.bias", "o.weight", "o.bias", "a_log", "skip"}));
  EXPECT_EQ(m.in_proj->weight.sizes(), (std::vector<int64_t>{64, 16}));
  EXPECT_EQ(m.conv1d->weight.sizes(), (std::vector<int64_t>{32, 1, 4}));
  EXPECT_EQ(m.x_proj->weight.sizes(), (std::vector<int64_t>{1 + 2 * 4, 32}));
  EXPECT_EQ(m.o->weight.sizes(), (std::vector<int64_t>{16, 32}));
  // S4D-Real: A_en = -(n + 1) in every channel.
  EXPECT_TRUE(all_close(-torch::exp(m.a_log[7]), -torch::arange(1.0, 5.0), 1e-6, "A"));
  // softplus(dt bias) is the initial dt, log-uniform in [0.001, 0.1].
  auto dt = torch::softplus(m.dt_proj->bias);
  EXPECT_GE(dt.min().item<double>(), 0.001 * (1 - 1e-4));
  EXPECT_LE(dt.max().item<double>(), 0.1 * (1 + 1e-4));
}

TEST(Mamba, EveryParameterGetsAGradient) {
  torch::manual_seed(7);
  MambaImpl m(mamba_config());
  EXPECT_TRUE(gradient_reaches_every_parameter(m, 2, 9));
}

TEST(Mamba, CloneIsDeep) {
  MambaImpl m(mamba_config());
  EXPECT_TRUE(clone_is_deep<MambaState>(m, 2));  // over both conv and h
  auto s = m.init_state(2);
  auto& ss = dynamic_cast<MambaState&>(*s);
  EXPECT_EQ(ss.conv.sizes(), (std::vector<int64_t>{2, 32, 3}));
  EXPECT_EQ(ss.h.sizes(), (std::vector<int64_t>{2, 32, 4}));
}
