// Multi-head softmax attention, "Attention Is All You Need" (Vaswani et al. 2017, eq. 1):
//
//   Attention(Q, K, V) = softmax(Q K^T / sqrt(Dh) + mask) V,   per head, then o(concat heads)
//
// causal (default): query t sees keys j <= t. causal = false: bidirectional, no mask, and no
// recurrent form (step() is an error). Attention knows no order by itself: needs_positions().
//
// The recurrent form is the KV cache: step() appends k_t, v_t to a cache preallocated to
// cfg.max_len and attends over the filled prefix. Writing a token past max_len is an error.
//
// Options for pretrained layouts (Llama, Qwen2, GPT-NeoX): grouped-query attention (G = n_kv_head
// key/value heads; the cache holds G heads, query head h reads kv head h / (H / G)), rotary
// position embeddings on q and k (mixers/rope.h; the token's position is the cache length), and
// projections without biases (qkv_bias, o_bias).
#pragma once

#include "seqlab/mixers/mixer.h"

namespace seqlab {

struct SoftmaxAttentionState : MixerStateBase<SoftmaxAttentionState> {
  torch::Tensor k;    // [B,G,L,Dh] key cache (G = kv heads, L = max_len; RoPE applied);
                      // positions >= len are unused
  torch::Tensor v;    // [B,G,L,Dh] value cache
  torch::Tensor len;  // [] int64 on CPU: tokens cached so far (a tensor so snapshots carry it)
  void for_each(const std::function<void(const std::string&, torch::Tensor&)>& f) override {
    f("k", k);
    f("v", v);
    f("len", len);
  }
};

class SoftmaxAttentionImpl : public MixerImpl, public HeadsMixer {
 public:
  static constexpr const char* kArch = "softmax";  // --arch, written only here
  explicit SoftmaxAttentionImpl(const MixerConfig& cfg);
  torch::Tensor forward(const torch::Tensor& x) override;
  // softmax(Q K^T / sqrt(Dh) + mask) per head: x [B,T,D] -> [B,H,T,T], rows summing to one.
  torch::Tensor attention_weights(const torch::Tensor& x);
  std::unique_ptr<MixerState> init_state(int64_t batch) const override;
  torch::Tensor step(const torch::Tensor& x_t, MixerState& s) override;
  bool needs_positions() const override { return true; }
  // forward() and step() before the output projection o: the heads' outputs side by side,
  // x [B,T,D] -> [B,T,D] (head h in columns h*Dh..(h+1)*Dh) and x_t [B,D] -> [B,D]. The mixture
  // of attentive experts (mae.h) reweights the heads there.
  torch::Tensor forward_heads(const torch::Tensor& x) override;
  torch::Tensor step_heads(const torch::Tensor& x_t, MixerState& s) override;

  torch::nn::Linear q{nullptr};  // weight [D,D], bias [D] (qkv_bias)
  torch::nn::Linear k{nullptr};  // weight [G*Dh,D], bias [G*Dh] (qkv_bias)
  torch::nn::Linear v{nullptr};  // weight [G*Dh,D], bias [G*Dh] (qkv_bias)
  torch::nn::Linear o{nullptr};  // weight [D,D], bias [D] (o_bias)

 private:
  // [B,T,n*Dh] -> [B,n,T,Dh]
  torch::Tensor split_heads(const torch::Tensor& x, int64_t n) const;
  void check_input(const torch::Tensor& x) const;
  // forward_heads without autograd (evaluation, decoding's prefill): the same attention in
  // blocks of query rows, each against only the keys up to its last row when causal, so no
  // [B,H,T,T] tensor exists. At T = 1501 the full one was 1.15 GB a layer (batch 32, 4 heads).
  // SEQLAB_ATTENTION_BLOCKS=0 turns it off (bench/attention_eval.sh times both).
  torch::Tensor forward_heads_blocked(const torch::Tensor& x);
};

namespace detail {
// Tests only: blocks of this many query rows in the no-grad forward (0 = sized by memory).
void set_attention_query_block(int64_t rows);
}  // namespace detail

}  // namespace seqlab
