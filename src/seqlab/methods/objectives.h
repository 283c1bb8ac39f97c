// Pretraining objectives on the synthetic multilingual corpus (tasks/grammar.h), after Li et al.
// (2024), "A Comparison of Language Modeling and Translation as Multilingual Pretraining
// Objectives" (Helsinki-NLP lm-vs-mt).
//
//   objective  stack    example (one row)                          loss on
//   clm        decoder  BOS s EOS                                  every next token
//   clm_pairs  decoder  BOS s SEP <2t> t EOS (s, t translations)   every next token
//   mlm        encoder  BOS s EOS, 15% of words masked (80% MASK,  the masked words
//                       10% a random word, 10% unchanged)
//   denoise    encdec   src: BOS noised(s) EOS; dec: <2s> s -> s EOS  every target token
//                       (text infilling: ~30% of words in spans of 1-3, each span one MASK)
//   translate  encdec   src: BOS s EOS;         dec: <2t> t -> t EOS  every target token
//   none       any      no pretraining (the random-initialisation baseline)
//
// Stacks: decoder = SeqModel with causal mixers; encoder = SeqModel with bidirectional mixers (the
// single-stack model for MLM); encdec = model/encdec.h. A stack's n_layer is its total number of
// blocks: encdec splits it into n_layer/2 encoder and n_layer/2 decoder layers, so the stacks have
// comparable parameter counts (encdec adds cross-attention).
//
// Equal compute: every objective trains the same number of steps, and every step processes the
// same number of token positions, 16·batch: single-sentence objectives (clm, mlm) take `batch`
// rows of 16; objectives whose rows hold two sentence-lengths (clm_pairs: one row of 32; denoise
// and translate: 16 encoder + 16 decoder positions) take batch/2 rows. Example j of step s is
// meaning j of the same stream for every objective (pair objectives use the first batch/2), so the
// objectives see the same data.
//
// Every sequence is right-padded to its fixed length (16 or 32), so a sentence's representation
// never depends on what else is in its batch, also under bidirectional attention (which attends
// to the padding; mixers have no key mask).
#pragma once

#include "seqlab/core/fields.h"
#include "seqlab/model/encdec.h"
#include "seqlab/model/model.h"
#include "seqlab/tasks/grammar.h"

#include <torch/torch.h>

#include <string>
#include <vector>

namespace seqlab {

constexpr int64_t kSentenceLen = Grammar::kMaxSentence + 2;  // BOS s EOS, padded
constexpr int64_t kPairLen = 2 * kSentenceLen;               // BOS s SEP <2t> t EOS, padded

// One pretraining run and its downstream evaluation, as one field list (CLI flags, cell JSON).
struct ObjectivesConfig {
  std::string objective, stack, arch;
  int64_t d_model = 0, n_head = 0, n_layer = 0, mlp_ratio = 0;
  int64_t steps = 0, batch = 0, warmup = 0;
  double lr = 0, mlm_prob = 0, noise = 0;
  uint64_t seed = 0;
  int64_t probe_train = 0, probe_steps = 0;
  double probe_lr = 0;
  int64_t ft_train = 0, ft_steps = 0, ft_batch = 0;
  double ft_lr = 0;
  int64_t test_size = 0, threads = 0;

  template <class V>
  void visit(V&& v) {
    v(objective, "objective", std::string("clm"),
      "pretraining objective: clm|mlm|clm_pairs|denoise|translate|none");
    v(stack, "stack", std::string("auto"),
      "architecture: decoder (causal) | encoder (bidirectional) | encdec | auto (the objective's "
      "own: clm, clm_pairs -> decoder; mlm -> encoder; denoise, translate -> encdec)");
    v(arch, "arch", std::string("softmax"),
      "sequence mixer (encoder and encdec need softmax or linear)");
    v(d_model, "d-model", int64_t{64}, "width of the residual stream");
    v(n_head, "n-head", int64_t{4}, "attention heads");
    v(n_layer, "n-layer", int64_t{4}, "blocks in all (encdec: half encoder, half decoder)");
    v(mlp_ratio, "mlp-ratio", int64_t{4}, "MLP width as a multiple of d_model");
    v(steps, "steps", int64_t{1500}, "pretraining steps");
    v(batch, "batch", int64_t{32},
      "sentence-lengths per step: 16·batch token positions (pair objectives: batch/2 rows)");
    v(warmup, "warmup", int64_t{100}, "linear warmup steps of pretraining");
    v(lr, "lr", 2e-3, "peak pretraining learning rate (cosine to 10%)");
    v(mlm_prob, "mlm-prob", 0.15, "mlm: fraction of words selected");
    v(noise, "noise", 0.3, "denoise: fraction of words masked (in spans of 1-3)");
    v(seed, "seed", uint64_t{0}, "seed of initialisation, pretraining data and heads");
    v(probe_train, "probe-train", int64_t{2000}, "probing: training sentences per language");
    v(probe_steps, "probe-steps", int64_t{1000}, "probing: steps of the head (batch 256)");
    v(probe_lr, "probe-lr", 1e-2, "probing: learning rate of the head");
    v(ft_train, "ft-train", int64_t{500}, "finetuning: training sentences per language");
    v(ft_steps, "ft-steps", int64_t{200}, "finetuning: steps");
    v(ft_batch, "ft-batch", int64_t{32}, "finetuning: batch");
    v(ft_lr, "ft-lr", 1e-3, "finetuning: peak learning rate");
    v(test_size, "test-size", int64_t{1000}, "test sentences per language");
    v(threads, "threads", int64_t{1}, "intra-op threads");
  }
  ObjectivesConfig() { visit(DefaultsVisitor{}); }
  // Resolves stack auto and checks that the objective fits the architecture; throws seqlab::Error
  // with a one-line reason otherwise.
  void validate();
  nlohmann::json to_json() const;
  static ObjectivesConfig from_json(const nlohmann::json& j, const std::string& source);
};

const std::vector<std::string>& objective_names();

// A pretraining batch. Single-stack objectives fill input/target/mask; encdec ones also src.
struct ObjectiveBatch {
  torch::Tensor input;      // [B,T] int64: the stream (single stack) or decoder input (encdec)
  torch::Tensor target;     // [B,T] int64
  torch::Tensor mask;       // [B,T] bool: scored positions
  torch::Tensor src;        // [B,16] int64 encoder input (encdec only)
  torch::Tensor src_valid;  // [B,16] bool: non-padding source positions
};

// Rows of one step for an objective with this batch (batch, or batch/2 for two-length rows).
int64_t rows_per_step(const std::string& objective, int64_t batch);
// The batch of pretraining step `step` (deterministic in seed and step).
ObjectiveBatch objective_batch(const Grammar& g, const ObjectivesConfig& cfg, uint64_t seed,
                               int64_t step);

// The model of a stack: a SeqModel (decoder / encoder, lm head tied to the embedding) or an
// EncDec, with what pretraining and the downstream tasks need.
class PretrainModel {
 public:
  PretrainModel(const ObjectivesConfig& cfg, int64_t vocab_size);
  torch::nn::Module& module();
  // Mean cross-entropy of the objective on a batch.
  torch::Tensor loss(const ObjectiveBatch& b);
  // Downstream representation of sentences (BOS s EOS PAD, [B,16]) -> [B,16,D]: the final
  // normalised states of a single stack, the encoder's output of an encdec.
  torch::Tensor features(const torch::Tensor& tokens);
  // The parameters pretraining and finetuning update (all but the encoder's unused head), by name.
  std::vector<std::pair<std::string, torch::Tensor>> trainable();
  int64_t d_model() const { return d_model_; }
  bool is_encdec() const { return static_cast<bool>(encdec); }

  SeqModel single{nullptr};
  EncDec encdec{nullptr};

 private:
  int64_t d_model_;
};

struct PretrainOutcome {
  double first_loss = 0, last_loss = 0;  // mean training loss over the first / last 10% of steps
  double heldout_loss = 0;               // the objective's loss on 512 held-out rows
  double seconds = 0;
  int64_t parameters = 0;
};

// Pretrains with AdamW (warmup + cosine to 10%, clip 1). Does nothing for objective none except
// measuring the held-out loss where the stack has one.
PretrainOutcome pretrain(PretrainModel& m, const Grammar& g, const ObjectivesConfig& cfg);

}  // namespace seqlab
