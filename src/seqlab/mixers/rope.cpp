#include "seqlab/mixers/rope.h"

namespace seqlab {

std::pair<torch::Tensor, torch::Tensor> rope_tables(const MixerConfig& cfg, int64_t p0, int64_t T) {
  const int64_t R = cfg.rope_dims();
  SEQLAB_CHECK(R > 0, "rope_tables: this mixer has no rotary embedding");
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
  // transformers: 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
  auto exponent = torch::arange(0, R, 2, torch::kInt64).to(torch::kFloat32) / static_cast<float>(R);
  auto inv_freq = 1.0 / torch::pow(torch::scalar_tensor(cfg.rope_theta, f32), exponent);  // [R/2]
  auto pos = torch::arange(p0, p0 + T, torch::kInt64).to(torch::kFloat32);                // [T]
  auto angle = torch::outer(pos, inv_freq);                                               // [T,R/2]
  auto emb = torch::cat({angle, angle}, -1);                                              // [T,R]
  return {emb.cos(), emb.sin()};
}

torch::Tensor apply_rope(const MixerConfig& cfg, const torch::Tensor& x, int64_t p0) {
  if (!cfg.rope) return x;
  const int64_t R = cfg.rope_dims(), Dh = x.size(-1), T = x.size(2);
  auto [cos, sin] = rope_tables(cfg, p0, T);  // [T,R]
  cos = cos.to(x.device());
  sin = sin.to(x.device());
  auto xf = x.to(torch::kFloat32);
  auto rot = xf.narrow(-1, 0, R);  // [B,H,T,R]
  auto half = torch::cat({-rot.narrow(-1, R / 2, R / 2), rot.narrow(-1, 0, R / 2)}, -1);
  auto out = rot * cos + half * sin;                                  // [B,H,T,R]
  if (R < Dh) out = torch::cat({out, xf.narrow(-1, R, Dh - R)}, -1);  // [B,H,T,Dh]
  return out.to(x.dtype());
}

void register_qkvo(torch::nn::Module& m, const MixerConfig& cfg, torch::nn::Linear& q,
                   torch::nn::Linear& k, torch::nn::Linear& v, torch::nn::Linear& o) {
  const int64_t D = cfg.d_model, Dkv = cfg.kv_heads() * cfg.d_head();
  using torch::nn::Linear;
  using torch::nn::LinearOptions;
  q = m.register_module("q", Linear(LinearOptions(D, D).bias(cfg.qkv_bias)));
  k = m.register_module("k", Linear(LinearOptions(D, Dkv).bias(cfg.qkv_bias)));
  v = m.register_module("v", Linear(LinearOptions(D, Dkv).bias(cfg.qkv_bias)));
  o = m.register_module("o", Linear(LinearOptions(D, D).bias(cfg.o_bias)));
}

torch::Tensor repeat_kv(const torch::Tensor& x, int64_t rep) {
  if (rep == 1) return x;
  const int64_t B = x.size(0), G = x.size(1), T = x.size(2), Dh = x.size(3);
  return x.unsqueeze(2).expand({B, G, rep, T, Dh}).reshape({B, G * rep, T, Dh});
}

}  // namespace seqlab
