// infer/roofline.h and infer::fast_support: the bytes and FLOPs one generated token costs,
// counted for small models and compared with a count by hand from the architecture; the floor's
// arithmetic; the machine measurements are positive and consistent (matvec never beats the FMA
// ceiling); and the fast decoder refuses configs it does not implement, by name.
#include "seqlab/infer/fast_model.h"
#include "seqlab/infer/roofline.h"
#include "seqlab/model/model.h"

#include <gtest/gtest.h>

#include <cstdlib>

using namespace seqlab;
using namespace seqlab::infer;

namespace {

ModelConfig tiny(const std::string& arch, bool tied) {
  ModelConfig c;
  c.mixer.arch = arch;
  c.mixer.feature_map = "t2r";
  c.mixer.d_model = 8;
  c.mixer.n_head = 2;
  c.mixer.max_len = 16;
  c.n_layer = 2;
  c.mlp_ratio = 4;
  c.vocab_size = 10;
  c.tie_embeddings = tied;
  c.validate();
  return c;
}

}  // namespace

TEST(Roofline, SoftmaxTokenCostEqualsAHandCount) {
  const auto cfg = tiny("softmax", /*tied=*/true);
  SeqModel m(cfg);
  const int64_t D = 8, V = 10, L = 2, R = 4 * D, p = 5;
  // Per block: ln1 and ln2 (2D each), q k v o (D×D + D each), fc1 (R×D + R), fc2 (D×R + D).
  const int64_t block = 2 * D + 4 * (D * D + D) + 2 * D + (R * D + R) + (D * R + D);
  // The tied embedding is read whole as the head, one learned position row, ln_f.
  const int64_t weights = V * D + D + L * block + 2 * D;
  const int64_t madds = V * D + L * (4 * D * D + 2 * R * D);
  const auto c = token_cost(*m, p);
  EXPECT_EQ(c.weight_bytes, 4 * weights);
  EXPECT_EQ(c.state_bytes, 4 * L * 2 * (p + 1) * D) << "keys and values of p + 1 tokens";
  EXPECT_EQ(c.flops, 2 * madds + L * 4 * (p + 1) * D);
  EXPECT_EQ(c.bytes(), c.weight_bytes + c.state_bytes);
}

TEST(Roofline, LinearUntiedTokenCostEqualsAHandCount) {
  const auto cfg = tiny("linear", /*tied=*/false);
  SeqModel m(cfg);
  const int64_t D = 8, V = 10, L = 2, R = 4 * D, H = 2, F = 4, Dh = 4;
  // t2r's feature map: w [H,F,Dh] and b [H,F] per block; learned positions (auto, for an
  // attention mixer): one row; an untied head [V,D] and one embedding row.
  const int64_t block =
      2 * D + 4 * (D * D + D) + H * F * Dh + H * F + 2 * D + (R * D + R) + (D * R + D);
  const int64_t weights = D + D + L * block + 2 * D + V * D;
  // The counting rule takes every tensor of two or more dimensions as multiply-adds, so t2r's
  // bias b [H,F] is counted too (an over-count of H·F per block, documented in roofline.h).
  const int64_t madds = V * D + L * (4 * D * D + H * F * Dh + H * F + 2 * R * D);
  const int64_t state = L * (H * F * Dh + H * F + H);  // S, z and the offset m per block
  for (int64_t p : {0, 100}) {
    const auto c = token_cost(*m, p);
    EXPECT_EQ(c.weight_bytes, 4 * weights);
    EXPECT_EQ(c.state_bytes, 4 * state) << "a recurrent state does not grow with p";
    EXPECT_EQ(c.flops, 2 * madds + 4 * state);
  }
}

TEST(Roofline, FloorIsTheLargerOfBytesAndFlops) {
  TokenCost c;
  c.weight_bytes = 800'000'000;
  c.state_bytes = 200'000'000;
  c.flops = 1'000'000'000;
  auto f = floor_of(c, 10.0, 100.0);  // 1e9 B / 10 GB/s = 100 ms; 1e9 / 100 GFLOP/s = 10 ms
  EXPECT_DOUBLE_EQ(f.bytes_ms, 100.0);
  EXPECT_DOUBLE_EQ(f.flops_ms, 10.0);
  EXPECT_DOUBLE_EQ(f.ms(), 100.0);
  EXPECT_STREQ(f.bound(), "bytes");
  f = floor_of(c, 1000.0, 5.0);
  EXPECT_DOUBLE_EQ(f.ms(), 200.0);
  EXPECT_STREQ(f.bound(), "flops");
  EXPECT_THROW(floor_of(c, 0.0, 1.0), Error);
}

TEST(Roofline, MeasurementsArePositiveAndMatvecStaysUnderTheFmaCeiling) {
  const double bw = read_bandwidth_gbs(1 << 20, 3, 0.005);
  const double peak = peak_fma_gflops(3);
  const double mv = matvec_gflops(256, 256, 3);
  EXPECT_GT(bw, 0.5);
  EXPECT_LT(bw, 10000.0);
  EXPECT_GT(peak, 0.5);
  // One core: 2 FMA units × 16 fp32 lanes × 2 FLOPs × 5 GHz is 320 GFLOP/s even with AVX-512.
  EXPECT_LT(peak, 1000.0) << "the FMA loop was optimised away";
  EXPECT_GT(mv, 0.1);
  // Every FLOP of a matvec is half of an FMA: on one core it cannot beat the FMA ceiling (a
  // factor 2 of slack for noise between the two timings and turbo clocks).
  EXPECT_LT(mv, 2.0 * peak) << "matvec " << mv << " GFLOP/s, FMA peak " << peak;
}

TEST(FastSupport, RefusesWhatTheFastDecoderDoesNotImplement) {
  auto ok = tiny("softmax", true);
  EXPECT_EQ(fast_support(ok), "");
  EXPECT_EQ(fast_support(tiny("linear", false)), "");

  auto tag = ok;
  tag.head = "tag";
  tag.n_classes = 3;
  EXPECT_NE(fast_support(tag).find("head is 'tag'"), std::string::npos) << fast_support(tag);

  auto bidi = ok;
  bidi.mixer.causal = false;
  EXPECT_NE(fast_support(bidi).find("bidirectional"), std::string::npos);

  // Fields added after the fast decoder was written are refused by name when not default.
  auto mae = ok;
  mae.mixer.mae = true;
  EXPECT_NE(fast_support(mae).find("mae = true"), std::string::npos) << fast_support(mae);
  auto deq = ok;
  deq.deq.enabled = true;
  deq.n_layer = 1;
  EXPECT_NE(fast_support(deq).find("deq = true"), std::string::npos) << fast_support(deq);

  // Unmerged adapters: refused by fast_support and by FastModel itself.
  SeqModel m(ok);
  EXPECT_EQ(fast_support(*m), "");
  AdapterConfig a;
  a.kind = "lora";
  a.rank = 2;
  a.alpha = 4;
  a.targets = "q";
  m->attach_adapters(a);
  EXPECT_NE(fast_support(*m).find("adapters"), std::string::npos) << fast_support(*m);
  EXPECT_THROW(FastModel fm(*m), Error);
}
