// HfTokenizer's encode and decode over the state hf_tokenizer.cpp read (hf_tokenizer_impl.h).
#include "seqlab/core/error.h"
#include "seqlab/text/hf_tokenizer_impl.h"

#include <algorithm>

namespace seqlab {

std::string HfTokenizer::spec() const {
  return impl_->spec;
}

int64_t HfTokenizer::vocab_size() const {
  return impl_->vocab_size;
}

std::vector<int64_t> HfTokenizer::encode(std::string_view text) const {
  return encode(text, HfEncodeOptions{});
}

std::vector<int64_t> HfTokenizer::encode(std::string_view text, const HfEncodeOptions& opt) const {
  const Impl& t = *impl_;
  const auto& raw = opt.split_special_tokens ? t.raw_plain : t.raw_all;
  const auto& norm = opt.split_special_tokens ? t.norm_plain : t.norm_all;
  std::vector<int64_t> out;
  out.reserve(text.size() / 3 + 4);
  if (opt.add_special_tokens) out = t.post.prefix;
  const auto model_text = [&](std::string_view s) {
    for (const std::string& piece : t.pre.apply(s)) t.model->encode_piece(piece, &out);
  };
  const auto normalized_text = [&](std::string_view s) {
    const std::string n = t.normalizer.steps.empty() ? std::string(s) : t.normalizer.apply(s);
    if (norm.empty()) return model_text(n);
    for (const auto& p : norm.split(n)) {
      if (p.token >= 0)
        out.push_back(t.added[p.token].id);
      else
        model_text(std::string_view(n).substr(p.begin, p.end - p.begin));
    }
  };
  if (raw.empty()) {
    normalized_text(text);
  } else {
    for (const auto& p : raw.split(text)) {
      if (p.token >= 0)
        out.push_back(t.added[p.token].id);
      else
        normalized_text(text.substr(p.begin, p.end - p.begin));
    }
  }
  if (opt.add_special_tokens) out.insert(out.end(), t.post.suffix.begin(), t.post.suffix.end());
  return out;
}

std::string HfTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string s;
  for (int64_t id : ids) {
    SEQLAB_CHECK(id >= 0 && id < impl_->vocab_size, "{}: token id {} is outside [0, {})",
                 impl_->spec, id, impl_->vocab_size);
    s += impl_->decoded[id];
  }
  return s;
}

int64_t HfTokenizer::eos_id() const {
  if (impl_->eos < 0) fail("{}", impl_->eos_error);
  return impl_->eos;
}

int64_t HfTokenizer::bos_id() const {
  return impl_->bos;
}

bool HfTokenizer::is_special(int64_t id) const {
  return id >= 0 && id < impl_->vocab_size && impl_->special[id];
}

std::vector<std::string> HfTokenizer::pre_tokenize(std::string_view text) const {
  return impl_->pre.apply(impl_->normalizer.apply(text));
}

}  // namespace seqlab
