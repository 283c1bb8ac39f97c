#include "seqlab/text/byte_tokenizer.h"

#include "seqlab/core/error.h"

namespace seqlab {

std::vector<int64_t> ByteTokenizer::encode(std::string_view text) const {
  std::vector<int64_t> ids(text.size());
  for (size_t i = 0; i < text.size(); ++i) ids[i] = static_cast<unsigned char>(text[i]);
  return ids;
}

std::string ByteTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string s;
  s.reserve(ids.size());
  for (auto id : ids) {
    SEQLAB_CHECK(id >= 0 && id <= kEos, "byte tokenizer: token id {} is outside [0, 256]", id);
    if (id != kEos) s.push_back(static_cast<char>(id));
  }
  return s;
}

}  // namespace seqlab
