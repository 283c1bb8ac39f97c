#include "seqlab/text/tokenizer.h"

#include "seqlab/core/error.h"
#include "seqlab/text/bpe_tokenizer.h"
#include "seqlab/text/byte_tokenizer.h"
#include "seqlab/text/hf_tokenizer.h"

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
  // A Hugging Face tokenizer.json; the spec records the absolute path, as bpe: does below.
  const auto hf = [](const std::string& path) -> std::unique_ptr<Tokenizer> {
    return HfTokenizer::load(path, "hf:" + fs::absolute(path).lexically_normal().string());
  };
  SEQLAB_CHECK(spec != "hf",
               "tokenizer 'hf' means the tokenizer.json of a model directory (a model's task "
               "section); elsewhere give hf:<tokenizer.json or the directory holding it>");
  if (spec.rfind("hf:", 0) == 0) {
    SEQLAB_CHECK(spec.size() > 3, "tokenizer '{}': expected hf:<tokenizer.json or its directory>",
                 spec);
    return hf(spec.substr(3));
  }
  std::string dir = spec;
  if (spec.rfind("bpe:", 0) == 0) {
    dir = spec.substr(4);
    SEQLAB_CHECK(!dir.empty(), "tokenizer '{}': expected bpe:<directory>", spec);
  } else {
    SEQLAB_CHECK(fs::is_directory(spec),
                 "unknown tokenizer '{}' (expected byte, gpt2, bpe:<dir>, hf:<tokenizer.json>, "
                 "or a directory holding tokenizer.json or a BPE's vocab.json + merges.txt)",
                 spec);
    // A directory with a tokenizer.json is read through it: it describes the whole pipeline,
    // where vocab.json + merges.txt beside it (as on the Hub) leave out the pre-tokenizer.
    if (fs::is_regular_file(fs::path(spec) / "tokenizer.json")) return hf(spec);
  }
  // The spec names an absolute path, so a model directory that records it loads from anywhere.
  return BpeTokenizer::load(dir, "bpe:" + fs::absolute(dir).lexically_normal().string());
}

}  // namespace seqlab
