#include "seqlab/mixers/linear_attention.h"

#include "seqlab/mixers/registry.h"
#include "seqlab/mixers/rope.h"

#include "seqlab/mixers/feature_maps/registry.h"

#include <limits>

namespace seqlab {

SEQLAB_REGISTER_ARCH(LinearAttentionImpl,
                     {"linear attention phi(q).S / (phi(q).z + eps); --feature-map picks phi",
                      20,
                      {/*attention=*/true, /*feature_map=*/true, /*kv_cache=*/false,
                       /*windowed=*/false,
                       /*projections=*/true, /*short_conv=*/true},
                      {/*matrices=*/4, [](const MixerConfig& c, int64_t T) {
                         return 3.0 * static_cast<double>(std::min<int64_t>(T, c.chunk_size));
                       }}});

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

// [T,T] bool, true above the diagonal: the keys j > t that query t must not see.
torch::Tensor future_mask(int64_t T, const torch::Device& dev) {
  return torch::ones({T, T}, torch::TensorOptions().dtype(torch::kBool).device(dev)).triu(1);
}

// y = num / (den + eps * rho): the normalizer rule of every form (see linear_attention.h).
// q [...,F] and z [...,F] are the query features and the key sum that query sees, den [...] their
// dot product, num [...,Dh]; scaled (exponential maps) selects rho = max_f q_f z_f, else rho = 1.
// A normalizer that underflowed to exactly 0 (then num is 0 too) gives y = 0, not NaN.
torch::Tensor normalize(const torch::Tensor& num, const torch::Tensor& den, const torch::Tensor& q,
                        const torch::Tensor& z, bool scaled) {
  auto rho = scaled ? (q * z).amax(-1) : torch::ones_like(den);  // [...]
  auto norm = den + LinearAttentionImpl::kEps * rho;             // [...]
  return num / norm.masked_fill(norm == 0, 1.0).unsqueeze(-1);   // [...,Dh]
}
}  // namespace

LinearAttentionImpl::LinearAttentionImpl(const MixerConfig& cfg) : MixerImpl(cfg) {
  register_qkvo(*this, cfg, q, k, v, o);
  feature_map = register_module("feature_map", make_feature_map(cfg));
  if (cfg.short_conv > 0) {
    const int64_t C = cfg.d_model + 2 * cfg.kv_heads() * cfg.d_head();
    conv = register_module(
        "conv",
        torch::nn::Conv1d(torch::nn::Conv1dOptions(C, C, cfg.short_conv).groups(C).bias(false)));
  }
}

std::array<torch::Tensor, 3> LinearAttentionImpl::project(const torch::Tensor& x,
                                                          torch::Tensor* tail) {
  if (!conv) return {q(x), k(x), v(x)};
  const int64_t B = x.size(0), K = cfg_.short_conv, Dkv = cfg_.kv_heads() * cfg_.d_head();
  auto qkv = torch::cat({q(x), k(x), v(x)}, -1);  // [B,T,C]
  auto past = tail ? tail->to(qkv.dtype()) : torch::zeros({B, K - 1, qkv.size(2)}, qkv.options());
  auto window = torch::cat({past, qkv}, 1);  // [B,K-1+T,C]: oldest first
  if (tail)
    *tail = window.narrow(1, window.size(1) - (K - 1), K - 1).to(torch::kFloat).contiguous();
  // No padding: output t is the dot of the kernel with window rows t .. t+K-1, i.e. the inputs
  // t-K+1 .. t, so it never sees the future.
  auto y = conv(window.transpose(1, 2)).transpose(1, 2);  // [B,T,C]
  auto parts = y.split_with_sizes({cfg_.d_model, Dkv, Dkv}, -1);
  return {parts[0], parts[1], parts[2]};
}

LinearAttentionImpl::Features LinearAttentionImpl::featurize(const torch::Tensor& x, int64_t p0,
                                                             torch::Tensor* tail) {
  SEQLAB_CHECK(x.dim() == 3 && x.size(2) == cfg_.d_model,
               "linear attention: expected x [B,T,{}], got {}", cfg_.d_model,
               fmt::join(x.sizes().vec(), ","));
  const int64_t B = x.size(0), T = x.size(1), H = cfg_.n_head, G = cfg_.kv_heads();
  const int64_t Dh = cfg_.d_head();
  auto heads = [&](const torch::Tensor& p, int64_t n) {
    return p.view({B, T, n, Dh}).transpose(1, 2);  // [B,T,n*Dh] -> [B,n,T,Dh]
  };
  const auto [xq, xk, xv] = project(x, tail);                      // [B,T,D], [B,T,G*Dh] x 2
  auto qh = apply_rope(cfg_, heads(xq, H), p0);                    // [B,H,T,Dh]
  auto kh = repeat_kv(apply_rope(cfg_, heads(xk, G), p0), H / G);  // [B,H,T,Dh]
  Features f;
  f.v = repeat_kv(heads(xv, G), H / G).to(torch::kFloat);  // [B,H,T,Dh]
  if (feature_map->exponential()) {
    auto lq = feature_map->log_features(qh, true).to(torch::kFloat);   // [B,H,T,F]
    auto lk = feature_map->log_features(kh, false).to(torch::kFloat);  // [B,H,T,F]
    f.q = torch::exp(lq - lq.amax(-1, true).detach());                 // [B,H,T,F]
    f.key_max = lk.amax(-1).detach();                                  // [B,H,T]
    f.k = torch::exp(lk - f.key_max.unsqueeze(-1));                    // [B,H,T,F]
  } else {
    f.q = feature_map->forward(qh, true).to(torch::kFloat);   // [B,H,T,F]
    f.k = feature_map->forward(kh, false).to(torch::kFloat);  // [B,H,T,F]
  }
  return f;
}

torch::Tensor LinearAttentionImpl::quadratic(const Features& f) {
  auto [a, z] = scores(f);
  auto num = torch::matmul(a, f.v);                       // [B,H,T,Dh]
  return normalize(num, a.sum(-1), f.q, z, z.defined());  // [B,H,T,Dh]
}

torch::Tensor LinearAttentionImpl::attention_weights(const torch::Tensor& x) {
  auto f = featurize(x);
  auto [a, z] = scores(f);  // [B,H,T,T]
  // Row t of A V / normalizer with V = the identity: the weight query t gives each key.
  return normalize(a, a.sum(-1), f.q, z, z.defined());  // [B,H,T,T]
}

void LinearAttentionImpl::set_identity_conv() {
  SEQLAB_CHECK(conv, "linear attention: no short convolution to set (--short-conv 0)");
  torch::NoGradGuard ng;
  conv->weight.zero_();
  conv->weight.select(2, cfg_.short_conv - 1).fill_(1.0);  // [C,1]: out_t = in_t
}

std::pair<torch::Tensor, torch::Tensor> LinearAttentionImpl::scores(const Features& f) {
  const int64_t T = f.q.size(2);
  auto a = torch::matmul(f.q, f.k.transpose(-1, -2));  // [B,H,T,T]: a[t,j] = phi(q_t).phi(k_j)
  auto future = future_mask(T, a.device());            // [T,T]
  torch::Tensor z;                                     // [B,H,T,F]: the key sum query t sees
  if (f.key_max.defined()) {
    // Weight of key j seen from query t: exp(M_j - m_t), m_t = max of M over the keys t sees.
    auto m = cfg_.causal ? std::get<0>(f.key_max.cummax(-1))               // [B,H,T]
                         : f.key_max.amax(-1, true).expand_as(f.key_max);  // [B,H,T]
    auto e = f.key_max.unsqueeze(-2) - m.unsqueeze(-1);                    // [B,H,T,T]
    if (cfg_.causal) e = e.masked_fill(future, -kInf);                     // [B,H,T,T]
    auto w = torch::exp(e);                                                // [B,H,T,T]
    a = a * w;                                                             // [B,H,T,T]
    z = torch::matmul(w, f.k);                                             // [B,H,T,F]
  } else if (cfg_.causal) {
    a = a.masked_fill(future, 0.0);  // [B,H,T,T]
  }
  return {a, z};
}

torch::Tensor LinearAttentionImpl::chunked(const Features& f) {
  const int64_t B = f.q.size(0), H = f.q.size(1), T = f.q.size(2), F = f.q.size(3);
  const bool offsets = f.key_max.defined();
  if (!cfg_.causal) {
    // Bidirectional: one state over all T tokens, read by every query.
    auto kw = f.k;  // [B,H,T,F]
    if (offsets) {
      auto m = f.key_max.amax(-1, true);                   // [B,H,1]
      kw = f.k * torch::exp(f.key_max - m).unsqueeze(-1);  // [B,H,T,F]
    }
    auto S = torch::matmul(kw.transpose(-1, -2), f.v);           // [B,H,F,Dh]
    auto z = kw.sum(2);                                          // [B,H,F]
    auto num = torch::matmul(f.q, S);                            // [B,H,T,Dh]
    auto den = torch::matmul(f.q, z.unsqueeze(-1)).squeeze(-1);  // [B,H,T]
    return normalize(num, den, f.q, z.unsqueeze(2), offsets);    // [B,H,T,Dh]
  }
  const int64_t C = cfg_.chunk_size;
  auto opt = f.q.options();
  auto S = torch::zeros({B, H, F, f.v.size(3)}, opt);        // [B,H,F,Dh]
  auto z = torch::zeros({B, H, F}, opt);                     // [B,H,F]
  auto m = torch::full({B, H}, offsets ? -kInf : 0.0, opt);  // [B,H]
  std::vector<torch::Tensor> ys;
  for (int64_t c0 = 0; c0 < T; c0 += C) {
    const int64_t n = std::min(C, T - c0);
    auto qc = f.q.narrow(2, c0, n);                                   // [B,H,n,F]
    auto kc = f.k.narrow(2, c0, n);                                   // [B,H,n,F]
    auto vc = f.v.narrow(2, c0, n);                                   // [B,H,n,Dh]
    auto a = torch::matmul(qc, kc.transpose(-1, -2));                 // [B,H,n,n]
    auto inter_num = torch::matmul(qc, S);                            // [B,H,n,Dh]
    auto inter_den = torch::matmul(qc, z.unsqueeze(-1)).squeeze(-1);  // [B,H,n]
    auto future = future_mask(n, a.device());                         // [n,n]
    auto kw = kc;                                                     // [B,H,n,F]
    torch::Tensor m_new;                                              // [B,H]
    torch::Tensor carry;                                              // [B,H]
    torch::Tensor zc;  // [B,H,n,F]: the key sum each query of the chunk sees
    if (offsets) {
      auto mc = f.key_max.narrow(2, c0, n);                                       // [B,H,n]
      auto mt = torch::maximum(std::get<0>(mc.cummax(-1)), m.unsqueeze(-1));      // [B,H,n]
      auto e = (mc.unsqueeze(-2) - mt.unsqueeze(-1)).masked_fill(future, -kInf);  // [B,H,n,n]
      auto w = torch::exp(e);                                                     // [B,H,n,n]
      a = a * w;                                                                  // [B,H,n,n]
      auto r = torch::exp(m.unsqueeze(-1) - mt);                                  // [B,H,n]
      zc = torch::matmul(w, kc) + z.unsqueeze(-2) * r.unsqueeze(-1);              // [B,H,n,F]
      inter_num = inter_num * r.unsqueeze(-1);                                    // [B,H,n,Dh]
      inter_den = inter_den * r;                                                  // [B,H,n]
      m_new = mt.select(-1, n - 1);                                               // [B,H]
      kw = kc * torch::exp(mc - m_new.unsqueeze(-1)).unsqueeze(-1);               // [B,H,n,F]
      carry = torch::exp(m - m_new);                                              // [B,H]
    } else {
      a = a.masked_fill(future, 0.0);  // [B,H,n,n]
    }
    auto num = torch::matmul(a, vc) + inter_num;              // [B,H,n,Dh]
    auto den = a.sum(-1) + inter_den;                         // [B,H,n]
    ys.push_back(normalize(num, den, qc, zc, zc.defined()));  // [B,H,n,Dh]
    auto ds = torch::matmul(kw.transpose(-1, -2), vc);        // [B,H,F,Dh]
    auto dz = kw.sum(2);                                      // [B,H,F]
    if (offsets) {
      S = S * carry.unsqueeze(-1).unsqueeze(-1) + ds;  // [B,H,F,Dh]
      z = z * carry.unsqueeze(-1) + dz;                // [B,H,F]
      m = m_new;
    } else {
      S = S + ds;  // [B,H,F,Dh]
      z = z + dz;  // [B,H,F]
    }
  }
  return torch::cat(ys, 2);  // [B,H,T,Dh]
}

torch::Tensor LinearAttentionImpl::recur(const Features& f, int64_t t, LinearAttentionState& s) {
  auto qt = f.q.select(2, t);  // [B,H,F]
  auto kt = f.k.select(2, t);  // [B,H,F]
  auto vt = f.v.select(2, t);  // [B,H,Dh]
  if (f.key_max.defined()) {
    auto mt = f.key_max.select(2, t);                // [B,H]
    auto m_new = torch::maximum(s.m, mt);            // [B,H]
    auto carry = torch::exp(s.m - m_new);            // [B,H]
    kt = kt * torch::exp(mt - m_new).unsqueeze(-1);  // [B,H,F]
    s.S = s.S * carry.unsqueeze(-1).unsqueeze(-1);   // [B,H,F,Dh]
    s.z = s.z * carry.unsqueeze(-1);                 // [B,H,F]
    s.m = m_new;
  }
  s.S = s.S + kt.unsqueeze(-1) * vt.unsqueeze(-2);              // [B,H,F,Dh]
  s.z = s.z + kt;                                               // [B,H,F]
  auto num = torch::matmul(qt.unsqueeze(-2), s.S).squeeze(-2);  // [B,H,Dh]
  auto den = (qt * s.z).sum(-1);                                // [B,H]
  return normalize(num, den, qt, s.z, f.key_max.defined());     // [B,H,Dh]
}

torch::Tensor LinearAttentionImpl::concat_heads(const torch::Tensor& y, const torch::Tensor& x) {
  const int64_t B = y.size(0), T = y.size(2);
  return y.transpose(1, 2).reshape({B, T, cfg_.d_model}).to(x.dtype());  // [B,T,D]
}

torch::Tensor LinearAttentionImpl::merge_heads(const torch::Tensor& y, const torch::Tensor& x) {
  return o(concat_heads(y, x));  // [B,T,D]
}

torch::Tensor LinearAttentionImpl::forward_heads(const torch::Tensor& x) {
  return concat_heads(chunked(featurize(x)), x);  // [B,T,D]
}

torch::Tensor LinearAttentionImpl::forward(const torch::Tensor& x) {
  return forward_form(x, Form::chunked);
}

torch::Tensor LinearAttentionImpl::forward_form(const torch::Tensor& x, Form form) {
  SEQLAB_CHECK(cfg_.causal || form != Form::recurrent,
               "linear attention: a bidirectional mixer has no recurrent form");
  auto f = featurize(x);
  if (form == Form::quadratic) return merge_heads(quadratic(f), x);
  if (form == Form::chunked) return merge_heads(chunked(f), x);
  auto s = init_state(x.size(0));
  auto& ls = static_cast<LinearAttentionState&>(*s);
  std::vector<torch::Tensor> ys;
  for (int64_t t = 0; t < x.size(1); ++t) ys.push_back(recur(f, t, ls));  // [B,H,Dh]
  return merge_heads(torch::stack(ys, 2), x);                             // [B,T,D]
}

std::unique_ptr<MixerState> LinearAttentionImpl::init_state(int64_t batch) const {
  auto s = std::make_unique<LinearAttentionState>();
  const auto opt = state_options();
  const int64_t H = cfg_.n_head, F = feature_map->out_dim();
  s->S = torch::zeros({batch, H, F, cfg_.d_head()}, opt);
  s->z = torch::zeros({batch, H, F}, opt);
  s->m = torch::full({batch, H}, feature_map->exponential() ? -kInf : 0.0, opt);
  s->pos = torch::zeros({}, torch::kLong);
  if (conv) s->conv = torch::zeros({batch, cfg_.short_conv - 1, conv->weight.size(0)}, opt);
  return s;
}

torch::Tensor LinearAttentionImpl::step(const torch::Tensor& x_t, MixerState& st) {
  return o(step_heads(x_t, st));  // [B,D]
}

torch::Tensor LinearAttentionImpl::step_heads(const torch::Tensor& x_t, MixerState& st) {
  auto& s = state_as<LinearAttentionState>(st, kArch);
  check_step_input(x_t, "linear attention");
  SEQLAB_CHECK(s.S.size(0) == x_t.size(0), "linear attention: state batch {} != input batch {}",
               s.S.size(0), x_t.size(0));
  const int64_t t = s.pos.item<int64_t>();
  auto f = featurize(x_t.unsqueeze(1), t, conv ? &s.conv : nullptr);  // features of [B,1,D]
  s.pos.fill_(t + 1);
  auto y = recur(f, 0, s);                                           // [B,H,Dh]
  return concat_heads(y.unsqueeze(2), x_t.unsqueeze(1)).squeeze(1);  // [B,D]
}

}  // namespace seqlab
