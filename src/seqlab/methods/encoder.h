// A sentence encoder: a bidirectional SeqModel (softmax or linear attention with causal = false)
// read through a tokenizer, whose final states are pooled into one vector per text. DefSent and
// DefSent+ (methods/defsent.h) train it; `seqlab embed` runs it.
//
// Tokens: [CLS] + tokenizer.encode(text), cut to max_tokens. The model's vocabulary is the
// tokenizer's plus two special tokens: CLS = tokenizer.vocab_size(), MASK = CLS + 1 (masked-LM
// pretraining, methods/mlm.h). The model has a `tag` head over the whole vocabulary, which is the
// masked-LM prediction layer (the word-prediction layer DefSent keeps frozen).
//
// Pooling of the final (ln_f) states h [B,T,D]: cls = h[:,0]; mean = the average over all T
// positions; max = the element-wise maximum over T.
//
// Batching without padding: the mixers have no key-padding mask, so a padded row would attend to
// its padding. embed() therefore groups texts of exactly the same token length, so a text's
// embedding never depends on what else is in the batch (tested against one text at a time).
//
// A model directory written by save_encoder holds config.json with an "encoder" section
// (EncoderSpec's fields), model.safetensors, and tokenizer/ (vocab.json + merges.txt) when the
// tokenizer is a BPE; the directory can be moved.
#pragma once

#include "seqlab/core/fields.h"
#include "seqlab/model/model.h"
#include "seqlab/text/tokenizer.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace seqlab {

struct EncoderSpec {
  std::string
      tokenizer;        // byte | gpt2 | bpe:<absolute dir>; in a model dir: "tokenizer" (relative)
  std::string pooling;  // cls | mean | max
  int64_t max_tokens = 0;  // longest input, [CLS] included; longer texts are cut

  template <class V>
  void visit(V&& v) {
    v(tokenizer, "tokenizer", std::string("byte"), "tokenizer: byte | gpt2 | bpe:<dir>");
    v(pooling, "pooling", std::string("mean"), "pooling of the final states: cls | mean | max");
    v(max_tokens, "max-tokens", int64_t{64}, "longest input in tokens ([CLS] included)");
  }
  EncoderSpec() { visit(DefaultsVisitor{}); }
  nlohmann::json to_json() const;
  static EncoderSpec from_json(const nlohmann::json& j, const std::string& source);
};

// Throws seqlab::Error unless p is cls, mean or max.
void check_pooling(const std::string& p);

// The model config of an encoder: `base` (arch, width, depth, ...) made bidirectional, with a tag
// head over vocab = tokenizer vocab + 2 and room for max_tokens positions. Validated.
ModelConfig encoder_model_config(ModelConfig base, const Tokenizer& tok, int64_t max_tokens);

class Encoder {
 public:
  Encoder(SeqModel model, std::shared_ptr<const Tokenizer> tok, EncoderSpec spec);

  int64_t cls_id() const { return tok_->vocab_size(); }
  int64_t mask_id() const { return tok_->vocab_size() + 1; }
  // [CLS] + the text's tokens, cut to max_tokens.
  std::vector<int64_t> tokens(std::string_view text) const;
  // Pooling of final states: h [B,T,D] -> [B,D].
  torch::Tensor pool(const torch::Tensor& h) const;
  // tokens [B,T] -> pooled embeddings [B,D] (differentiable; the model's current mode).
  torch::Tensor forward(const torch::Tensor& tokens) const;
  // Embeddings of many texts [N,D] float32, in eval mode without gradients, in groups of equal
  // token length of at most `batch` texts. label: a progress bar on stderr ("" = none).
  torch::Tensor embed(const std::vector<std::string>& texts, int64_t batch = 64,
                      const std::string& label = "") const;

  SeqModel model() const { return model_; }
  const Tokenizer& tokenizer() const { return *tok_; }
  std::shared_ptr<const Tokenizer> shared_tokenizer() const { return tok_; }
  const EncoderSpec& spec() const { return spec_; }
  void set_pooling(const std::string& p);

 private:
  SeqModel model_;
  std::shared_ptr<const Tokenizer> tok_;
  EncoderSpec spec_;
};

// A fresh encoder (initialised by the model's own init seed).
Encoder make_encoder(const ModelConfig& base, std::shared_ptr<const Tokenizer> tok,
                     const EncoderSpec& spec);
// A deep copy (weights cloned; the tokenizer is shared, it is immutable).
Encoder clone_encoder(const Encoder& e);
// Writes a model directory (see the header comment); `sections` adds other config.json sections.
void save_encoder(const std::string& dir, const Encoder& e,
                  const nlohmann::json& sections = nlohmann::json::object());
// Reads one; `pooling` (non-empty) overrides the recorded pooling. Throws seqlab::Error naming the
// directory when it is not an encoder.
Encoder load_encoder(const std::string& dir, const std::string& pooling = "");

}  // namespace seqlab
