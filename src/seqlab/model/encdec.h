// An encoder-decoder Transformer (Vaswani et al. 2017), the "double-stack" architecture of the
// pretraining-objectives comparison (denoising à la BART, translation).
//
//   encoder: token + learned position embeddings, n_enc_layer seqlab Blocks with the mixer built
//            bidirectional (causal = false: softmax or linear attention), final LayerNorm ln_enc
//   decoder: token + learned positions, n_dec_layer DecoderBlocks
//              x + self(ln1(x))                     causal mixer of the same arch
//              x + cross(ln2(x), memory)            softmax cross-attention over encoder states
//              x + mlp(ln3(x))
//            final LayerNorm ln_dec, logits through the shared (tied) token embedding.
//
// One token embedding wte [V,D] serves encoder input, decoder input and output.
//
// Parameter names: wte.weight, enc_wpe.weight, dec_wpe.weight [max_len,D], enc.{i}.* (a Block:
// ln1, mixer.*, ln2, mlp.*), ln_enc.*, dec.{i}.{ln1,self.*,ln2,cross.{q,k,v,o},ln3,mlp.*},
// ln_dec.*.
//
// The decoder has a recurrent form like SeqModel: init_state(memory) precomputes every layer's
// cross-attention keys and values once; step(token, state) advances one position and equals the
// teacher-forced forward (tests/test_encdec.cpp).
#pragma once

#include "seqlab/mixers/mixer.h"
#include "seqlab/model/model.h"

#include <torch/torch.h>

#include <memory>
#include <vector>

namespace seqlab {

struct EncDecConfig {
  MixerConfig mixer;  // arch, d_model, n_head, max_len (per stream), init_seed; causal is set here
  int64_t vocab_size = 0;
  int64_t n_enc_layer = 0, n_dec_layer = 0;
  int64_t mlp_ratio = 4;
  std::string activation = "gelu";
  // Throws seqlab::Error unless the arch has a bidirectional form (the encoder needs one).
  void validate();
};

// Multi-head softmax attention of queries x over a memory, with a key padding mask.
struct CrossAttentionImpl : torch::nn::Module {
  CrossAttentionImpl(int64_t d_model, int64_t n_head);
  // Keys and values of a memory [B,S,D] -> k, v [B,H,S,Dh].
  std::pair<torch::Tensor, torch::Tensor> keys_values(const torch::Tensor& memory);
  // x [B,T,D] over precomputed k, v [B,H,S,Dh]; valid [B,S] bool (undefined = all) -> [B,T,D].
  // Every row needs at least one valid key.
  torch::Tensor attend(const torch::Tensor& x, const torch::Tensor& k, const torch::Tensor& v,
                       const torch::Tensor& valid);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& memory,
                        const torch::Tensor& valid);
  torch::nn::Linear q{nullptr}, k{nullptr}, v{nullptr}, o{nullptr};  // [D,D] each
  int64_t n_head;
};
TORCH_MODULE(CrossAttention);

struct DecoderBlockImpl : torch::nn::Module {
  DecoderBlockImpl(const EncDecConfig& cfg, int64_t index);
  // x [B,T,D], memory k/v of this layer -> [B,T,D]
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mk, const torch::Tensor& mv,
                        const torch::Tensor& valid);
  // x_t [B,D] -> [B,D]; advances s
  torch::Tensor step(const torch::Tensor& x_t, MixerState& s, const torch::Tensor& mk,
                     const torch::Tensor& mv, const torch::Tensor& valid);
  torch::nn::LayerNorm ln1{nullptr}, ln2{nullptr}, ln3{nullptr};
  Mixer self;
  CrossAttention cross{nullptr};
  Mlp mlp{nullptr};
};
TORCH_MODULE(DecoderBlock);

// The decoder's recurrent state for one batch of encoded sources.
struct DecoderState {
  std::vector<std::unique_ptr<MixerState>> self;  // one per decoder layer
  std::vector<torch::Tensor> k, v;                // cross keys / values per layer [B,H,S,Dh]
  torch::Tensor valid;                            // [B,S] bool
  int64_t pos = 0;
};

class EncDecImpl : public torch::nn::Module {
 public:
  explicit EncDecImpl(EncDecConfig cfg);

  // src [B,S] int64 -> memory [B,S,D] (after ln_enc). The encoder is bidirectional: padding is
  // attended like any token (seqlab pads every source to one fixed length, so a sentence's
  // encoding does not depend on its batch).
  torch::Tensor encode(const torch::Tensor& src);
  // Teacher-forced decoder: tgt_in [B,T] over memory [B,S,D], src_valid [B,S] bool -> [B,T,V].
  torch::Tensor decode(const torch::Tensor& tgt_in, const torch::Tensor& memory,
                       const torch::Tensor& src_valid);
  torch::Tensor forward(const torch::Tensor& src, const torch::Tensor& src_valid,
                        const torch::Tensor& tgt_in);

  DecoderState init_state(const torch::Tensor& memory, const torch::Tensor& src_valid);
  // token [B] int64 -> logits [B,V]; advances s.
  torch::Tensor step(const torch::Tensor& token, DecoderState& s);

  const EncDecConfig& config() const { return cfg_; }

  torch::nn::Embedding wte{nullptr};                        // [V,D]
  torch::nn::Embedding enc_wpe{nullptr}, dec_wpe{nullptr};  // [max_len,D]
  torch::nn::ModuleList enc{nullptr}, dec{nullptr};
  torch::nn::LayerNorm ln_enc{nullptr}, ln_dec{nullptr};

 private:
  torch::Tensor embed(torch::nn::Embedding& wpe, const torch::Tensor& tokens, int64_t p0);
  EncDecConfig cfg_;
  std::vector<Block> enc_list_;
  std::vector<DecoderBlock> dec_list_;
};
TORCH_MODULE(EncDec);

}  // namespace seqlab
