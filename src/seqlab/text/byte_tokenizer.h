// The byte tokenizer: token b (0..255) is the byte b, 256 is <|endoftext|>. Vocab 257.
#pragma once

#include "seqlab/text/tokenizer.h"

namespace seqlab {

class ByteTokenizer : public Tokenizer {
 public:
  static constexpr int64_t kEos = 256;
  std::string spec() const override { return "byte"; }
  int64_t vocab_size() const override { return 257; }
  std::vector<int64_t> encode(std::string_view text) const override;
  std::string decode(const std::vector<int64_t>& ids) const override;
  int64_t eos_id() const override { return kEos; }
};

}  // namespace seqlab
