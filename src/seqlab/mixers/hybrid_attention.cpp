#include "seqlab/mixers/hybrid_attention.h"

#include "seqlab/mixers/registry.h"
#include "seqlab/mixers/rope.h"

#include "seqlab/mixers/feature_maps/registry.h"

#include <cmath>
#include <limits>

namespace seqlab {

SEQLAB_REGISTER_ARCH(HybridAttentionImpl,
                     {"hybrid: softmax over the last --window tokens + (gated) linear attention "
                      "for older ones (LoLCATs); --feature-map picks phi, --decay/--gate decay",
                      21,
                      {/*attention=*/false, /*feature_map=*/true, /*kv_cache=*/false,
                       /*windowed=*/true, /*projections=*/true, /*short_conv=*/false},
                      {/*matrices=*/4, [](const MixerConfig& c, int64_t T) {
                         const int64_t C = std::max(c.chunk_size, c.window);
                         return 6.0 * static_cast<double>(std::min<int64_t>(T, C));
                       }}});

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

// [n,m] int64: query index (q0 + row) minus key index (k0 + column).
torch::Tensor offsets(int64_t q0, int64_t n, int64_t k0, int64_t m, const torch::Device& dev) {
  auto opt = torch::TensorOptions().dtype(torch::kLong).device(dev);
  return torch::arange(q0, q0 + n, opt).unsqueeze(1) - torch::arange(k0, k0 + m, opt).unsqueeze(0);
}
}  // namespace

HybridAttentionImpl::HybridAttentionImpl(const MixerConfig& cfg) : MixerImpl(cfg) {
  SEQLAB_CHECK(cfg.causal, "hybrid attention is causal only");
  SEQLAB_CHECK(!cfg.mae, "hybrid attention has no mixture-of-experts form (--mae)");
  register_qkvo(*this, cfg, q, k, v, o);
  feature_map = register_module("feature_map", make_feature_map(cfg));
  SEQLAB_CHECK(!feature_map->exponential(),
               "hybrid attention needs a feature map without running offsets, not '{}'",
               cfg.feature_map);
  if (cfg.window > 0)
    window_factor = register_parameter("window_factor", torch::zeros({cfg.n_head}));
  if (cfg.gate == "key")
    gate_bias = register_parameter("gate_bias", torch::full({cfg.n_head}, kGateBiasInit));
}

torch::Tensor HybridAttentionImpl::log_decay(const torch::Tensor& k_raw) {
  const int64_t B = k_raw.size(0), T = k_raw.size(2), H = cfg_.n_head, G = cfg_.kv_heads();
  const double base = std::log(cfg_.decay);
  if (cfg_.gate != "key") return torch::full({B, H, T}, base, k_raw.options().dtype(torch::kFloat));
  auto pooled = k_raw.to(torch::kFloat).mean(-1).repeat_interleave(H / G, 1);  // [B,H,T]
  auto logit = pooled + gate_bias.to(torch::kFloat).view({1, H, 1});           // [B,H,T]
  return torch::log_sigmoid(logit) / kGateNorm + base;                         // [B,H,T]
}

torch::Tensor HybridAttentionImpl::factor() const {
  if (cfg_.window == 0) return {};
  return torch::sigmoid(window_factor.to(torch::kFloat)).view({-1, 1, 1});  // [H,1,1]
}

torch::Tensor HybridAttentionImpl::phi_keys(const torch::Tensor& kg) {
  const int64_t rep = cfg_.n_head / cfg_.kv_heads();
  return feature_map->forward(repeat_kv(kg, rep), false).to(torch::kFloat);  // [B,H,n,F]
}

HybridAttentionImpl::Inputs HybridAttentionImpl::prepare(const torch::Tensor& x, int64_t p0) {
  SEQLAB_CHECK(x.dim() == 3 && x.size(2) == cfg_.d_model,
               "hybrid attention: expected x [B,T,{}], got {}", cfg_.d_model,
               fmt::join(x.sizes().vec(), ","));
  const int64_t B = x.size(0), T = x.size(1), H = cfg_.n_head, G = cfg_.kv_heads();
  const int64_t Dh = cfg_.d_head();
  auto heads = [&](const torch::Tensor& p, int64_t n) {
    return p.view({B, T, n, Dh}).transpose(1, 2);  // [B,T,n*Dh] -> [B,n,T,Dh]
  };
  auto k_raw = heads(k(x), G);  // [B,G,T,Dh]
  auto qh = apply_rope(cfg_, heads(q(x), H), p0);
  Inputs in;
  in.kg = apply_rope(cfg_, k_raw, p0).to(torch::kFloat);     // [B,G,T,Dh]
  in.vg = heads(v(x), G).to(torch::kFloat);                  // [B,G,T,Dh]
  in.q = qh.to(torch::kFloat);                               // [B,H,T,Dh]
  in.k = repeat_kv(in.kg, H / G);                            // [B,H,T,Dh]
  in.v = repeat_kv(in.vg, H / G);                            // [B,H,T,Dh]
  in.fq = feature_map->forward(qh, true).to(torch::kFloat);  // [B,H,T,F]
  in.fk = phi_keys(in.kg);                                   // [B,H,T,F]
  in.g = log_decay(k_raw);                                   // [B,H,T]
  return in;
}

torch::Tensor HybridAttentionImpl::weights(const Inputs& in) {
  const int64_t T = in.q.size(2), W = cfg_.window;
  auto diff = offsets(0, T, 0, T, in.q.device());                             // [T,T] t - j
  auto b = in.g.cumsum(-1);                                                   // [B,H,T]
  auto e = (b.unsqueeze(-1) - b.unsqueeze(-2)).masked_fill(diff < W, -kInf);  // [B,H,T,T]
  auto lin = torch::matmul(in.fq, in.fk.transpose(-1, -2)) * torch::exp(e);   // [B,H,T,T]
  if (W == 0) return lin;
  const double scale = 1.0 / std::sqrt(static_cast<double>(cfg_.d_head()));
  auto s = torch::matmul(in.q, in.k.transpose(-1, -2)) * scale;  // [B,H,T,T]
  s = s.masked_fill((diff < 0).logical_or(diff >= W), -kInf);    // window only
  auto sm = torch::exp(s - s.amax(-1, true));                    // [B,H,T,T]
  auto f = factor();                                             // [H,1,1]
  return f * sm + (1 - f) * lin;                                 // [B,H,T,T]
}

torch::Tensor HybridAttentionImpl::quadratic(const Inputs& in) {
  auto a = weights(in);                                      // [B,H,T,T]
  return torch::matmul(a, in.v) / (a.sum(-1, true) + kEps);  // [B,H,T,Dh]
}

torch::Tensor HybridAttentionImpl::attention_weights(const torch::Tensor& x) {
  auto a = weights(prepare(x));         // [B,H,T,T]
  return a / (a.sum(-1, true) + kEps);  // [B,H,T,T]
}

torch::Tensor HybridAttentionImpl::chunked(const Inputs& in) {
  const int64_t B = in.q.size(0), H = in.q.size(1), T = in.q.size(2), F = in.fq.size(3);
  const int64_t Dh = in.v.size(3), W = cfg_.window;
  const int64_t C = std::max(cfg_.chunk_size, W);
  const double scale = 1.0 / std::sqrt(static_cast<double>(cfg_.d_head()));
  auto f = factor();  // [H,1,1] or undefined
  // Every key before the band's start bs, decayed to time bs - 1.
  auto S = torch::zeros({B, H, F, Dh}, in.q.options());  // [B,H,F,Dh]
  auto z = torch::zeros({B, H, F}, in.q.options());      // [B,H,F]
  int64_t bs = 0;
  std::vector<torch::Tensor> ys;
  for (int64_t c0 = 0; c0 < T; c0 += C) {
    const int64_t n = std::min(C, T - c0), m = c0 + n - bs;
    // The band's own cumulative log decay, b_i - b_{bs-1} for i in [bs, c0+n): bounded by the
    // band's length whatever T is, so long sequences keep fp32 precision.
    auto bl = in.g.narrow(2, bs, m).cumsum(-1);                                   // [B,H,m]
    auto bq = bl.narrow(2, c0 - bs, n);                                           // [B,H,n]
    auto diff = offsets(c0, n, bs, m, in.q.device());                             // [n,m]
    auto fqc = in.fq.narrow(2, c0, n);                                            // [B,H,n,F]
    auto e = (bq.unsqueeze(-1) - bl.unsqueeze(-2)).masked_fill(diff < W, -kInf);  // [B,H,n,m]
    auto a = torch::matmul(fqc, in.fk.narrow(2, bs, m).transpose(-1, -2)) * torch::exp(e);
    auto carry = torch::exp(bq);                                               // [B,H,n]
    auto inter_num = torch::matmul(fqc, S) * carry.unsqueeze(-1);              // [B,H,n,Dh]
    auto inter_den = torch::matmul(fqc, z.unsqueeze(-1)).squeeze(-1) * carry;  // [B,H,n]
    if (W > 0) {
      auto s = torch::matmul(in.q.narrow(2, c0, n), in.k.narrow(2, bs, m).transpose(-1, -2)) *
               scale;  // [B,H,n,m]
      s = s.masked_fill((diff < 0).logical_or(diff >= W), -kInf);
      auto sm = torch::exp(s - s.amax(-1, true));  // [B,H,n,m]
      a = f * sm + (1 - f) * a;
      inter_num = inter_num * (1 - f);
      inter_den = inter_den * (1 - f).squeeze(-1);
    }
    auto num = torch::matmul(a, in.v.narrow(2, bs, m)) + inter_num;  // [B,H,n,Dh]
    auto den = a.sum(-1) + inter_den;                                // [B,H,n]
    ys.push_back(num / (den + kEps).unsqueeze(-1));
    // The next band starts C before the next chunk: fold keys [bs, nbs) into the state.
    const int64_t nbs = std::max<int64_t>(0, c0 + n - C);
    if (nbs > bs && c0 + n < T) {
      const int64_t k = nbs - bs;
      auto b_end = bl.select(2, k - 1);                               // [B,H]
      auto w = torch::exp(b_end.unsqueeze(-1) - bl.narrow(2, 0, k));  // [B,H,k]
      auto kw = in.fk.narrow(2, bs, k) * w.unsqueeze(-1);             // [B,H,k,F]
      auto dec = torch::exp(b_end);                                   // [B,H]
      S = S * dec.unsqueeze(-1).unsqueeze(-1) +
          torch::matmul(kw.transpose(-1, -2), in.v.narrow(2, bs, k));
      z = z * dec.unsqueeze(-1) + kw.sum(2);
      bs = nbs;
    }
  }
  return torch::cat(ys, 2);  // [B,H,T,Dh]
}

torch::Tensor HybridAttentionImpl::recur(const Inputs& in, int64_t t, int64_t p,
                                         HybridAttentionState& s) {
  const int64_t W = cfg_.window, rep = cfg_.n_head / cfg_.kv_heads();
  auto gt = in.g.select(2, t);  // [B,H]
  auto decay = torch::exp(gt);  // [B,H]
  s.S = s.S * decay.unsqueeze(-1).unsqueeze(-1);
  s.z = s.z * decay.unsqueeze(-1);
  auto fqt = in.fq.select(2, t);  // [B,H,F]
  if (W == 0) {
    auto fkt = in.fk.select(2, t);  // [B,H,F]
    s.S = s.S + fkt.unsqueeze(-1) * in.v.select(2, t).unsqueeze(-2);
    s.z = s.z + fkt;
    auto num = torch::matmul(fqt.unsqueeze(-2), s.S).squeeze(-2);  // [B,H,Dh]
    auto den = (fqt * s.z).sum(-1);                                // [B,H]
    return num / (den + kEps).unsqueeze(-1);
  }
  const int64_t slot = p % W;
  // Token p - W (in the slot token p takes) leaves the window.
  torch::Tensor k_old, v_old;
  if (p >= W) {
    k_old = s.keys.narrow(2, slot, 1).clone();  // [B,G,1,Dh]
    v_old = s.vals.narrow(2, slot, 1).clone();  // [B,G,1,Dh]
  }
  s.keys.select(2, slot).copy_(in.kg.select(2, t));
  s.vals.select(2, slot).copy_(in.vg.select(2, t));
  s.gates.select(2, slot).copy_(gt);
  if (p >= W) {
    // Into S, decayed by g over tokens p-W+1 .. p: the slots' decays after writing p.
    auto since = s.gates.sum(-1);                                            // [B,H]
    auto fk = phi_keys(k_old).squeeze(2) * torch::exp(since).unsqueeze(-1);  // [B,H,F]
    s.S = s.S + fk.unsqueeze(-1) * repeat_kv(v_old, rep).squeeze(2).unsqueeze(-2);
    s.z = s.z + fk;
  }
  const double scale = 1.0 / std::sqrt(static_cast<double>(cfg_.d_head()));
  auto keys = repeat_kv(s.keys, rep), vals = repeat_kv(s.vals, rep);                   // [B,H,W,Dh]
  auto sc = torch::matmul(keys, in.q.select(2, t).unsqueeze(-1)).squeeze(-1) * scale;  // [B,H,W]
  if (p + 1 < W) {
    auto unused = torch::arange(W, torch::TensorOptions().device(sc.device())) > p;  // [W]
    sc = sc.masked_fill(unused, -kInf);
  }
  auto sm = torch::exp(sc - sc.amax(-1, true));  // [B,H,W]
  auto f = factor().squeeze(-1);                 // [H,1]
  auto num = f * torch::matmul(sm.unsqueeze(-2), vals).squeeze(-2) +
             (1 - f) * torch::matmul(fqt.unsqueeze(-2), s.S).squeeze(-2);             // [B,H,Dh]
  auto den = f.squeeze(-1) * sm.sum(-1) + (1 - f.squeeze(-1)) * (fqt * s.z).sum(-1);  // [B,H]
  return num / (den + kEps).unsqueeze(-1);
}

torch::Tensor HybridAttentionImpl::merge_heads(const torch::Tensor& y, const torch::Tensor& x) {
  const int64_t B = y.size(0), T = y.size(2);
  return o(y.transpose(1, 2).reshape({B, T, cfg_.d_model}).to(x.dtype()));  // [B,T,D]
}

torch::Tensor HybridAttentionImpl::forward(const torch::Tensor& x) {
  return forward_form(x, Form::chunked);
}

torch::Tensor HybridAttentionImpl::forward_form(const torch::Tensor& x, Form form) {
  auto in = prepare(x);
  if (form == Form::quadratic) return merge_heads(quadratic(in), x);
  if (form == Form::chunked) return merge_heads(chunked(in), x);
  auto st = init_state(x.size(0));
  auto& s = static_cast<HybridAttentionState&>(*st);
  std::vector<torch::Tensor> ys;
  for (int64_t t = 0; t < x.size(1); ++t) ys.push_back(recur(in, t, t, s));  // [B,H,Dh]
  return merge_heads(torch::stack(ys, 2), x);
}

std::unique_ptr<MixerState> HybridAttentionImpl::init_state(int64_t batch) const {
  auto s = std::make_unique<HybridAttentionState>();
  const auto opt = state_options();
  const int64_t H = cfg_.n_head, G = cfg_.kv_heads(), W = cfg_.window, Dh = cfg_.d_head();
  const int64_t F = feature_map->out_dim();
  s->S = torch::zeros({batch, H, F, Dh}, opt);
  s->z = torch::zeros({batch, H, F}, opt);
  s->keys = torch::zeros({batch, G, W, Dh}, opt);
  s->vals = torch::zeros({batch, G, W, Dh}, opt);
  s->gates = torch::zeros({batch, H, W}, opt);
  s->pos = torch::zeros({}, torch::kLong);
  return s;
}

torch::Tensor HybridAttentionImpl::step(const torch::Tensor& x_t, MixerState& st) {
  auto& s = state_as<HybridAttentionState>(st, kArch);
  check_step_input(x_t, "hybrid attention");
  SEQLAB_CHECK(s.S.size(0) == x_t.size(0), "hybrid attention: state batch {} != input batch {}",
               s.S.size(0), x_t.size(0));
  const int64_t p = s.pos.item<int64_t>();
  auto in = prepare(x_t.unsqueeze(1), p);
  s.pos.fill_(p + 1);
  auto y = recur(in, 0, p, s);                                      // [B,H,Dh]
  return merge_heads(y.unsqueeze(2), x_t.unsqueeze(1)).squeeze(1);  // [B,D]
}

}  // namespace seqlab
