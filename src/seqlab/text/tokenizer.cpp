#include "seqlab/text/tokenizer.h"

#include "seqlab/core/error.h"
#include "seqlab/text/bpe_tokenizer.h"
#include "seqlab/text/byte_tokenizer.h"

#include <filesystem>

namespace seqlab {

std::unique_ptr<Tokenizer> make_tokenizer(const std::string& spec) {
  namespace fs = std::filesystem;
  if (spec == "byte") return std::make_unique<ByteTokenizer>();
  if (spec == "gpt2") {
    const std::string dir = gpt2_dir();
    SEQLAB_CHECK(
        fs::exists(fs::path(dir) / "encoder.json") && fs::exists(fs::path(dir) / "vocab.bpe"),
        "tokenizer gpt2: no encoder.json + vocab.bpe in {} (run scripts/setup.sh, or set "
        "SEQLAB_GPT2_DIR)",
        dir);
    return BpeTokenizer::load(dir, "gpt2");
  }
  std::string dir = spec;
  if (spec.rfind("bpe:", 0) == 0) {
    dir = spec.substr(4);
    SEQLAB_CHECK(!dir.empty(), "tokenizer '{}': expected bpe:<directory>", spec);
  } else {
    SEQLAB_CHECK(fs::is_directory(spec),
                 "unknown tokenizer '{}' (expected byte, gpt2, bpe:<dir>, or a BPE directory)",
                 spec);
  }
  // The spec names an absolute path, so a model directory that records it loads from anywhere.
  return BpeTokenizer::load(dir, "bpe:" + fs::absolute(dir).lexically_normal().string());
}

}  // namespace seqlab
