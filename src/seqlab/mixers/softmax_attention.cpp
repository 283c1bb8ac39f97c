#include "seqlab/mixers/softmax_attention.h"

#include "seqlab/mixers/registry.h"
#include "seqlab/mixers/rope.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

namespace seqlab {

SEQLAB_REGISTER_ARCH(SoftmaxAttentionImpl, {"multi-head softmax attention with a KV cache",
                                            10,
                                            {/*attention=*/true, /*feature_map=*/false,
                                             /*kv_cache=*/true, /*windowed=*/false,
                                             /*projections=*/true, /*short_conv=*/false},
                                            {/*matrices=*/4, [](const MixerConfig&, int64_t T) {
                                               return 3.0 * static_cast<double>(T);
                                             }}});

SoftmaxAttentionImpl::SoftmaxAttentionImpl(const MixerConfig& cfg) : MixerImpl(cfg) {
  register_qkvo(*this, cfg, q, k, v, o);
}

torch::Tensor SoftmaxAttentionImpl::split_heads(const torch::Tensor& x, int64_t n) const {
  const int64_t B = x.size(0), T = x.size(1);
  return x.view({B, T, n, cfg_.d_head()}).transpose(1, 2);  // [B,T,n*Dh] -> [B,n,T,Dh]
}

torch::Tensor SoftmaxAttentionImpl::forward(const torch::Tensor& x) {
  return o(forward_heads(x));  // [B,T,D]
}

namespace {

std::atomic<int64_t> g_query_block{0};  // tests: a fixed block (0 = sized by memory)

// SEQLAB_ATTENTION_BLOCKS=0 keeps the one [B,H,T,T] product without autograd too
// (bench/attention_eval.sh compares the two); read once.
bool blocked_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("SEQLAB_ATTENTION_BLOCKS");
    return !(v && std::string(v) == "0");
  }();
  return on;
}

// Query rows per block of the no-grad forward: each block's [B,H,Q,T] scores hold about 2^22
// floats (16 MiB), below glibc's mmap threshold as tuned (core/malloc_tune.h), so the blocks reuse
// heap memory instead of faulting in fresh pages.
int64_t query_block(int64_t B, int64_t H, int64_t T) {
  if (const int64_t fixed = g_query_block.load()) return std::min(fixed, T);
  return std::clamp<int64_t>((int64_t{1} << 22) / std::max<int64_t>(1, B * H * T), 1, T);
}

}  // namespace

torch::Tensor SoftmaxAttentionImpl::forward_heads(const torch::Tensor& x) {
  if (!torch::GradMode::is_enabled() && blocked_enabled()) return forward_heads_blocked(x);
  auto w = attention_weights(x);  // [B,H,T,T] (checks x)
  const int64_t B = x.size(0), T = x.size(1);
  const int64_t rep = cfg_.n_head / cfg_.kv_heads();
  auto y = torch::matmul(w, repeat_kv(split_heads(v(x), cfg_.kv_heads()), rep));  // [B,H,T,Dh]
  return y.transpose(1, 2).reshape({B, T, cfg_.d_model});                         // [B,T,D]
}

torch::Tensor SoftmaxAttentionImpl::forward_heads_blocked(const torch::Tensor& x) {
  check_input(x);
  const int64_t B = x.size(0), T = x.size(1), G = cfg_.kv_heads(), rep = cfg_.n_head / G;
  const double scale = 1.0 / std::sqrt(static_cast<double>(cfg_.d_head()));
  auto qh = apply_rope(cfg_, split_heads(q(x), cfg_.n_head), 0);            // [B,H,T,Dh]
  auto kh = repeat_kv(apply_rope(cfg_, split_heads(k(x), G), 0), rep);      // [B,H,T,Dh]
  auto vh = repeat_kv(split_heads(v(x), G), rep);                           // [B,H,T,Dh]
  auto y = torch::empty({B, cfg_.n_head, T, cfg_.d_head()}, qh.options());  // [B,H,T,Dh]
  const int64_t Q = query_block(B, cfg_.n_head, T);
  for (int64_t i0 = 0; i0 < T; i0 += Q) {
    const int64_t rows = std::min(Q, T - i0), keys = cfg_.causal ? i0 + rows : T;
    auto scores = torch::matmul(qh.narrow(2, i0, rows), kh.narrow(2, 0, keys).transpose(-1, -2));
    scores.mul_(scale);  // [B,H,rows,keys]
    if (cfg_.causal) {   // row r is query i0 + r: keys j > i0 + r are its future
      auto future = torch::ones({rows, keys}, x.options().dtype(torch::kBool)).triu(i0 + 1);
      scores.masked_fill_(future, -std::numeric_limits<double>::infinity());
    }
    y.narrow(2, i0, rows).copy_(torch::matmul(torch::softmax(scores, -1), vh.narrow(2, 0, keys)));
  }
  return y.transpose(1, 2).reshape({B, T, cfg_.d_model});  // [B,T,D]
}

void SoftmaxAttentionImpl::check_input(const torch::Tensor& x) const {
  SEQLAB_CHECK(x.dim() == 3 && x.size(2) == cfg_.d_model,
               "softmax attention: expected x [B,T,{}], got {}", cfg_.d_model,
               fmt::join(x.sizes().vec(), ","));
}

namespace detail {
void set_attention_query_block(int64_t rows) {
  g_query_block = rows;
}
}  // namespace detail

torch::Tensor SoftmaxAttentionImpl::attention_weights(const torch::Tensor& x) {
  check_input(x);
  const int64_t T = x.size(1);
  const double scale = 1.0 / std::sqrt(static_cast<double>(cfg_.d_head()));
  const int64_t G = cfg_.kv_heads();
  auto qh = apply_rope(cfg_, split_heads(q(x), cfg_.n_head), 0);                    // [B,H,T,Dh]
  auto kh = repeat_kv(apply_rope(cfg_, split_heads(k(x), G), 0), cfg_.n_head / G);  // [B,H,T,Dh]
  auto scores = torch::matmul(qh, kh.transpose(-1, -2)) * scale;                    // [B,H,T,T]
  if (cfg_.causal) {
    auto future = torch::ones({T, T}, x.options().dtype(torch::kBool)).triu(1);     // [T,T]
    scores = scores.masked_fill(future, -std::numeric_limits<double>::infinity());  // [B,H,T,T]
  }
  return torch::softmax(scores, -1);  // [B,H,T,T]
}

std::unique_ptr<MixerState> SoftmaxAttentionImpl::init_state(int64_t batch) const {
  auto s = std::make_unique<SoftmaxAttentionState>();
  const auto opt = state_options();
  s->k = torch::zeros({batch, cfg_.kv_heads(), cfg_.max_len, cfg_.d_head()}, opt);
  s->v = torch::zeros({batch, cfg_.kv_heads(), cfg_.max_len, cfg_.d_head()}, opt);
  s->len = torch::zeros({}, torch::kLong);
  return s;
}

torch::Tensor SoftmaxAttentionImpl::step(const torch::Tensor& x_t, MixerState& st) {
  return o(step_heads(x_t, st));  // [B,D]
}

torch::Tensor SoftmaxAttentionImpl::step_heads(const torch::Tensor& x_t, MixerState& st) {
  auto& s = state_as<SoftmaxAttentionState>(st, kArch);
  check_step_input(x_t, "softmax attention");
  const int64_t B = x_t.size(0), H = cfg_.n_head, G = cfg_.kv_heads(), Dh = cfg_.d_head();
  const int64_t t = s.len.item<int64_t>();
  SEQLAB_CHECK(t < cfg_.max_len,
               "softmax attention: the KV cache is full (max_len = {}); cannot step token {}",
               cfg_.max_len, t + 1);
  SEQLAB_CHECK(s.k.size(0) == B, "softmax attention: state batch {} != input batch {}", s.k.size(0),
               B);
  const double scale = 1.0 / std::sqrt(static_cast<double>(Dh));
  auto qt = apply_rope(cfg_, q(x_t).view({B, H, 1, Dh}), t).to(s.k.dtype());   // [B,H,1,Dh]
  s.k.narrow(2, t, 1).copy_(apply_rope(cfg_, k(x_t).view({B, G, 1, Dh}), t));  // k_t [B,G,1,Dh]
  s.v.narrow(2, t, 1).copy_(v(x_t).view({B, G, 1, Dh}));  // cache[:, :, t] = v_t [B,G,1,Dh]
  s.len.fill_(t + 1);
  auto kc = repeat_kv(s.k.narrow(2, 0, t + 1), H / G);            // [B,H,t+1,Dh]
  auto vc = repeat_kv(s.v.narrow(2, 0, t + 1), H / G);            // [B,H,t+1,Dh]
  auto scores = torch::matmul(qt, kc.transpose(-1, -2)) * scale;  // [B,H,1,t+1]
  auto y = torch::matmul(torch::softmax(scores, -1), vc);         // [B,H,1,Dh]
  return y.reshape({B, cfg_.d_model}).to(x_t.dtype());            // [B,D]
}

}  // namespace seqlab
