#include "seqlab/exp/cells/state_bytes.h"

#include "seqlab/core/error.h"
#include "seqlab/mixers/softmax_attention.h"

namespace seqlab {

int64_t model_state_bytes(const ModelState& s) {
  int64_t n = 0;
  for (const auto& layer : s.layers) {
    if (auto* kv = dynamic_cast<SoftmaxAttentionState*>(layer.get())) {
      // The filled part of the preallocated cache.
      const int64_t len = kv->len.item<int64_t>();
      n += 2 * kv->k.numel() / kv->k.size(2) * len * kv->k.element_size();
      continue;
    }
    auto clone = layer->clone();
    clone->for_each(
        [&](const std::string&, torch::Tensor& t) { n += t.numel() * t.element_size(); });
  }
  return n;
}

int64_t state_bytes_after(SeqModelImpl& model, const torch::Tensor& tokens) {
  SEQLAB_CHECK(tokens.dim() == 2 && tokens.size(0) == 1, "state_bytes_after: tokens must be [1,T]");
  torch::NoGradGuard ng;
  auto state = model.init_state(1);
  for (int64_t t = 0; t < tokens.size(1); ++t) model.step(tokens.select(1, t), state);
  return model_state_bytes(state);
}

}  // namespace seqlab
