// The parts both attention mixers share: rotary position embeddings, grouped-query heads and
// the q, k, v, o projections.
//
// Rotary position embeddings (Su et al. 2021, "RoFormer"), in Hugging Face's rotate-half
// convention (LlamaRotaryEmbedding / GPTNeoXRotaryEmbedding, apply_rotary_pos_emb):
//
//   R = cfg.rope_dims() rotated dims of each head (all of Dh, or NeoX's int(Dh * rotary_pct)),
//   inv_freq_i = 1 / theta^(2i / R),  i = 0 .. R/2-1,     angle(p, i) = p * inv_freq_i
//   cos, sin = cos/sin of [angle, angle]                  [P,R] (the R/2 angles twice)
//   x_rot = x[..., :R] * cos + rotate_half(x[..., :R]) * sin,   rotate_half(u) = [-u2, u1]
//   x[..., R:] passes through unchanged.
//
// All of it in fp32, the angles computed the way transformers computes them (fp32 inv_freq from
// theta ** (arange(0, R, 2) / R), times the fp32 position), so imported checkpoints match their
// reference logits. It is applied to q and k after the head split and before anything else sees
// them (scores, feature maps). There are no parameters and no buffers: nothing is saved.
#pragma once

#include "seqlab/mixers/mixer_config.h"

#include <torch/torch.h>

namespace seqlab {

// cos and sin for positions p0 .. p0+T-1: two fp32 tensors [T,R] (R = cfg.rope_dims()).
std::pair<torch::Tensor, torch::Tensor> rope_tables(const MixerConfig& cfg, int64_t p0, int64_t T);

// x [B,H,T,Dh] at positions p0 .. p0+T-1 -> x with its first R dims of every head rotated.
// Without cfg.rope, x itself.
torch::Tensor apply_rope(const MixerConfig& cfg, const torch::Tensor& x, int64_t p0);

// The projections q, k, v, o of an attention mixer, registered on m under those names: q and o
// [D,D], k and v [G*Dh,D] (G = cfg.kv_heads()), biases as cfg.qkv_bias / cfg.o_bias.
void register_qkvo(torch::nn::Module& m, const MixerConfig& cfg, torch::nn::Linear& q,
                   torch::nn::Linear& k, torch::nn::Linear& v, torch::nn::Linear& o);

// Grouped-query attention: x [B,G,T,Dh] -> [B,G*rep,T,Dh], kv head j serving query heads
// j*rep .. j*rep+rep-1 (transformers' repeat_kv). rep = 1 returns x.
torch::Tensor repeat_kv(const torch::Tensor& x, int64_t rep);

}  // namespace seqlab
