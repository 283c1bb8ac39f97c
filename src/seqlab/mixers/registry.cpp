#include "seqlab/mixers/registry.h"

#include "seqlab/core/error.h"
#include "seqlab/mixers/elman.h"
#include "seqlab/mixers/linear_attention.h"
#include "seqlab/mixers/softmax_attention.h"
#include "seqlab/mixers/gru.h"
#include "seqlab/mixers/lstm.h"
#include "seqlab/mixers/mae.h"
#include "seqlab/mixers/mamba.h"
#include "seqlab/mixers/qrnn.h"
#include "seqlab/mixers/s4d.h"

namespace seqlab {

namespace {
template <class Impl>
Mixer make(const MixerConfig& c) {
  return std::make_shared<Impl>(c);
}
}  // namespace

const std::vector<MixerEntry>& mixer_registry() {
  static const std::vector<MixerEntry> r = {
      {"softmax", "multi-head softmax attention with a KV cache", make<SoftmaxAttentionImpl>},
      {"linear", "linear attention phi(q).S / (phi(q).z + eps); --feature-map picks phi",
       make<LinearAttentionImpl>},
      {"elman", "Elman RNN: h = tanh(W_ih x + W_hh h)", make<ElmanImpl>},
      {"gru", "GRU (PyTorch gate order r, z, n)", make<GRUImpl>},
      {"lstm", "LSTM (PyTorch gate order i, f, g, o), forget bias 1", make<LSTMImpl>},
      {"qrnn", "QRNN: gates from a causal conv over the input, f or fo pooling", make<QRNNImpl>},
      {"s4d", "S4D: diagonal complex SSM (S4D-Lin), FFT convolution / recurrence", make<S4DImpl>},
      {"mamba", "Mamba: selective SSM (input-dependent dt, B, C), conv + gate", make<MambaImpl>},
  };
  return r;
}

Mixer make_mixer(const MixerConfig& cfg) {
  // --mae wraps the attention mixer in a mixture of attentive experts (mae.h).
  if (cfg.mae) return std::make_shared<MaeImpl>(cfg);
  for (const auto& e : mixer_registry())
    if (e.name == cfg.arch) return e.make(cfg);
  std::string names;
  for (const auto& e : mixer_registry()) names += (names.empty() ? "" : ", ") + e.name;
  fail("unknown architecture '{}' (known: {})", cfg.arch, names);
}

}  // namespace seqlab
