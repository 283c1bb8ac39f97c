#include "seqlab/model/encdec.h"

#include "seqlab/core/error.h"
#include "seqlab/mixers/registry.h"

#include <cmath>
#include <limits>

namespace seqlab {

void EncDecConfig::validate() {
  SEQLAB_CHECK(arch_entry(mixer.arch).traits.attention,
               "an encoder-decoder needs a bidirectional encoder, which only {} have (not '{}')",
               attention_arch_names("and"), mixer.arch);
  MixerConfig enc = mixer;
  enc.causal = false;
  enc.validate();
  mixer.validate();
  SEQLAB_CHECK(vocab_size > 0, "encoder-decoder: vocab_size must be positive, got {}", vocab_size);
  SEQLAB_CHECK(n_enc_layer > 0 && n_dec_layer > 0,
               "encoder-decoder: needs at least one encoder and one decoder layer (got {} and {})",
               n_enc_layer, n_dec_layer);
  SEQLAB_CHECK(mlp_ratio >= 0, "encoder-decoder: mlp_ratio must be >= 0, got {}", mlp_ratio);
}

CrossAttentionImpl::CrossAttentionImpl(int64_t d_model, int64_t n_head_) : n_head(n_head_) {
  SEQLAB_CHECK(n_head > 0 && d_model % n_head == 0,
               "cross-attention: d_model ({}) must be divisible by n_head ({})", d_model, n_head);
  q = register_module("q", torch::nn::Linear(d_model, d_model));
  k = register_module("k", torch::nn::Linear(d_model, d_model));
  v = register_module("v", torch::nn::Linear(d_model, d_model));
  o = register_module("o", torch::nn::Linear(d_model, d_model));
}

std::pair<torch::Tensor, torch::Tensor> CrossAttentionImpl::keys_values(
    const torch::Tensor& memory) {
  const int64_t B = memory.size(0), S = memory.size(1), D = memory.size(2), Dh = D / n_head;
  auto kh = k(memory).view({B, S, n_head, Dh}).transpose(1, 2);  // [B,S,D] -> [B,H,S,Dh]
  auto vh = v(memory).view({B, S, n_head, Dh}).transpose(1, 2);  // [B,S,D] -> [B,H,S,Dh]
  return {kh, vh};
}

torch::Tensor CrossAttentionImpl::attend(const torch::Tensor& x, const torch::Tensor& kh,
                                         const torch::Tensor& vh, const torch::Tensor& valid) {
  const int64_t B = x.size(0), T = x.size(1), D = x.size(2), Dh = D / n_head;
  auto qh = q(x).view({B, T, n_head, Dh}).transpose(1, 2);  // [B,T,D] -> [B,H,T,Dh]
  auto scores = torch::matmul(qh, kh.transpose(-1, -2)) / std::sqrt(static_cast<double>(Dh));
  // scores [B,H,T,S]; padded memory positions get no weight.
  if (valid.defined())
    scores = scores.masked_fill(valid.logical_not().view({B, 1, 1, -1}),
                                -std::numeric_limits<double>::infinity());  // [B,H,T,S]
  auto y = torch::matmul(torch::softmax(scores, -1), vh);                   // [B,H,T,Dh]
  return o(y.transpose(1, 2).reshape({B, T, D}));                           // [B,T,D]
}

torch::Tensor CrossAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& memory,
                                          const torch::Tensor& valid) {
  auto [kh, vh] = keys_values(memory);
  return attend(x, kh, vh, valid);  // [B,T,D]
}

DecoderBlockImpl::DecoderBlockImpl(const EncDecConfig& cfg, int64_t index) {
  const int64_t D = cfg.mixer.d_model;
  ln1 = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({D})));
  MixerConfig mc = cfg.mixer;
  mc.causal = true;
  // Decoder layers draw their random matrices from seeds of their own, apart from the encoder's.
  mc.init_seed = cfg.mixer.init_seed + 7919ULL + 1000003ULL * static_cast<uint64_t>(index);
  self = register_module("self", make_mixer(mc));
  ln2 = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({D})));
  cross = register_module("cross", CrossAttention(D, cfg.mixer.n_head));
  ln3 = register_module("ln3", torch::nn::LayerNorm(torch::nn::LayerNormOptions({D})));
  if (cfg.mlp_ratio > 0) mlp = register_module("mlp", Mlp(D, cfg.mlp_ratio * D, cfg.activation));
}

torch::Tensor DecoderBlockImpl::forward(const torch::Tensor& x, const torch::Tensor& mk,
                                        const torch::Tensor& mv, const torch::Tensor& valid) {
  auto h = x + self->forward(ln1(x));            // [B,T,D]
  h = h + cross->attend(ln2(h), mk, mv, valid);  // [B,T,D]
  return mlp ? h + mlp(ln3(h)) : h;              // [B,T,D]
}

torch::Tensor DecoderBlockImpl::step(const torch::Tensor& x_t, MixerState& s,
                                     const torch::Tensor& mk, const torch::Tensor& mv,
                                     const torch::Tensor& valid) {
  auto h = x_t + self->step(ln1(x_t), s);                                // [B,D]
  h = h + cross->attend(ln2(h).unsqueeze(1), mk, mv, valid).squeeze(1);  // [B,D]
  return mlp ? h + mlp(ln3(h)) : h;                                      // [B,D]
}

EncDecImpl::EncDecImpl(EncDecConfig cfg) : cfg_(std::move(cfg)) {
  cfg_.validate();
  const int64_t D = cfg_.mixer.d_model, L = cfg_.mixer.max_len;
  wte = register_module("wte", torch::nn::Embedding(cfg_.vocab_size, D));
  torch::nn::init::normal_(wte->weight, 0.0, 0.02);
  enc_wpe = register_module("enc_wpe", torch::nn::Embedding(L, D));
  dec_wpe = register_module("dec_wpe", torch::nn::Embedding(L, D));
  torch::nn::init::normal_(enc_wpe->weight, 0.0, 0.02);
  torch::nn::init::normal_(dec_wpe->weight, 0.0, 0.02);
  ModelConfig ec;
  ec.mixer = cfg_.mixer;
  ec.mixer.causal = false;
  ec.mlp_ratio = cfg_.mlp_ratio;
  ec.activation = cfg_.activation;
  enc = register_module("enc", torch::nn::ModuleList());
  for (int64_t i = 0; i < cfg_.n_enc_layer; ++i) {
    enc_list_.push_back(Block(ec, i));
    enc->push_back(enc_list_.back());
  }
  ln_enc = register_module("ln_enc", torch::nn::LayerNorm(torch::nn::LayerNormOptions({D})));
  dec = register_module("dec", torch::nn::ModuleList());
  for (int64_t i = 0; i < cfg_.n_dec_layer; ++i) {
    dec_list_.push_back(DecoderBlock(cfg_, i));
    dec->push_back(dec_list_.back());
  }
  ln_dec = register_module("ln_dec", torch::nn::LayerNorm(torch::nn::LayerNormOptions({D})));
}

torch::Tensor EncDecImpl::embed(torch::nn::Embedding& wpe, const torch::Tensor& tokens,
                                int64_t p0) {
  SEQLAB_CHECK(tokens.dim() == 2, "encoder-decoder: tokens must be [B,T], got {} dims",
               tokens.dim());
  const int64_t T = tokens.size(1);
  SEQLAB_CHECK(p0 + T <= cfg_.mixer.max_len,
               "encoder-decoder: sequence of {} tokens is longer than max_len ({})", p0 + T,
               cfg_.mixer.max_len);
  return wte(tokens) + wpe(torch::arange(p0, p0 + T, tokens.options()));  // [B,T,D]
}

torch::Tensor EncDecImpl::encode(const torch::Tensor& src) {
  auto x = embed(enc_wpe, src, 0);  // [B,S,D]
  for (auto& b : enc_list_) x = b->forward(x);
  return ln_enc(x);  // [B,S,D]
}

torch::Tensor EncDecImpl::decode(const torch::Tensor& tgt_in, const torch::Tensor& memory,
                                 const torch::Tensor& src_valid) {
  auto x = embed(dec_wpe, tgt_in, 0);  // [B,T,D]
  for (auto& b : dec_list_) {
    auto [mk, mv] = b->cross->keys_values(memory);  // [B,H,S,Dh] each
    x = b->forward(x, mk, mv, src_valid);           // [B,T,D]
  }
  return torch::matmul(ln_dec(x), wte->weight.t());  // [B,T,D] x [D,V] -> [B,T,V]
}

torch::Tensor EncDecImpl::forward(const torch::Tensor& src, const torch::Tensor& src_valid,
                                  const torch::Tensor& tgt_in) {
  return decode(tgt_in, encode(src), src_valid);  // [B,T,V]
}

DecoderState EncDecImpl::init_state(const torch::Tensor& memory, const torch::Tensor& src_valid) {
  DecoderState s;
  for (auto& b : dec_list_) {
    s.self.push_back(b->self->init_state(memory.size(0)));
    auto [mk, mv] = b->cross->keys_values(memory);
    s.k.push_back(mk);
    s.v.push_back(mv);
  }
  s.valid = src_valid;
  return s;
}

torch::Tensor EncDecImpl::step(const torch::Tensor& token, DecoderState& s) {
  SEQLAB_CHECK(token.dim() == 1, "encoder-decoder step: token must be [B], got {} dims",
               token.dim());
  auto x = embed(dec_wpe, token.unsqueeze(1), s.pos).squeeze(1);  // [B,D]
  for (size_t l = 0; l < dec_list_.size(); ++l)
    x = dec_list_[l]->step(x, *s.self[l], s.k[l], s.v[l], s.valid);  // [B,D]
  ++s.pos;
  return torch::matmul(ln_dec(x), wte->weight.t());  // [B,V]
}

}  // namespace seqlab
