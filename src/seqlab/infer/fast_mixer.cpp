#include "seqlab/infer/fast_mixer.h"

#include "seqlab/core/error.h"
#include "seqlab/infer/fast_rope.h"
#include "seqlab/mixers/registry.h"

#include <fmt/format.h>

namespace seqlab::infer {

std::vector<float> Weights::take(const std::string& name, const std::vector<int64_t>& shape) const {
  auto it = t_.find(name);
  SEQLAB_CHECK(it != t_.end(), "fast decoder: missing tensor '{}'", name);
  const auto& t = it->second;
  SEQLAB_CHECK(t.sizes().vec() == shape, "fast decoder: tensor '{}' is [{}], expected [{}]", name,
               fmt::join(t.sizes().vec(), ","), fmt::join(shape, ","));
  auto c = t.detach().to(torch::kFloat).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

std::shared_ptr<const FastRope> Weights::rope(const MixerConfig& cfg) const {
  if (!cfg.rope) return nullptr;
  if (rope_) {
    SEQLAB_CHECK(rope_->dims() == cfg.rope_dims(),
                 "fast decoder: shared RoPE tables rotate {} dims, the mixer {}", rope_->dims(),
                 cfg.rope_dims());
    return rope_;
  }
  return std::make_shared<FastRope>(cfg, cfg.max_len);
}

Dense::Dense(const Weights& wt, const std::string& name, int64_t out_, int64_t in_)
    : out(out_), in(in_) {
  w = wt.take(name + ".weight", {out, in});
  if (wt.has(name + ".bias")) b = wt.take(name + ".bias", {out});
  convert(wt.format());
}

void Dense::convert(WeightFormat format) {
  if (format == WeightFormat::f32 || qw.format == format) return;
  SEQLAB_CHECK(qw.format == WeightFormat::f32, "Dense: converting between two narrow formats");
  qw = QuantMatrix(w.data(), out, in, format);
  w = std::vector<float>();  // the narrow copy is the one the products read
}

std::unique_ptr<FastMixer> make_fast_mixer(const MixerConfig& cfg, const Weights& w) {
  SEQLAB_CHECK(cfg.causal, "fast decoder: a bidirectional mixer has no recurrent form");
  const auto& entry = arch_entry(cfg.arch);
  SEQLAB_CHECK(entry.make_fast, "fast decoder: no fast form for mixer '{}'", cfg.arch);
  return entry.make_fast(cfg, w);
}

}  // namespace seqlab::infer
