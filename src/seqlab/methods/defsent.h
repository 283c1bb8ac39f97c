// Sentence embeddings trained from dictionary definitions.
//
// DefSent (Tsukagoshi, Sasano and Takeda, ACL 2021): the encoder reads a definition, its pooled
// state goes through the masked-LM prediction layer (kept frozen) and the loss is the
// cross-entropy of predicting the defined word. Only words that are one token of the vocabulary
// can be entries (one_token_examples). Logits = head(pool(h)) over the whole vocabulary.
//
// DefSent+ (Liu 2024, "progressive separate training"): an entry's embedding is the mean of the
// encoder's own pooled embeddings of all its definitions (entry_embeddings), so any entry works,
// multi-word ones included; optionally whitened (whiten) towards an isotropic space. A fresh copy
// of the starting encoder is then trained to predict the entry of each definition against those
// fixed entry embeddings, with logits = cos(pool(h), E_k) / temperature over all K entries; the
// next round rebuilds E from the encoder just trained and trains another fresh copy.
//
// Both train every encoder parameter except the frozen ones (DefSent: the prediction layer
// head.*) with AdamW, warmup and cosine decay; batches are grouped by length (methods/mlm.h).
#pragma once

#include "seqlab/text/dictionary.h"
#include "seqlab/methods/encoder.h"
#include "seqlab/methods/mlm.h"

#include <cstdint>
#include <string>
#include <vector>

namespace seqlab {

struct DefExample {
  std::string definition;
  int64_t target = 0;  // DefSent: a token id; DefSent+: a row of the entry matrix
};

struct DefTrainOptions {
  int64_t steps = 500;
  int64_t batch = 32;
  double lr = 3e-4;
  int64_t warmup = 25;
  double temperature = 0.05;  // DefSent+ only
  uint64_t seed = 0;
  std::string progress;  // progress-bar label ("" = none)
};

// (definition, token) for every definition of every entry in `entries` whose word, with a
// leading space (" word", as GPT-2-style BPE spells a word inside text), is exactly one token.
std::vector<DefExample> one_token_examples(const Dictionary& d, const std::vector<int32_t>& entries,
                                           const Tokenizer& tok);
// (definition, k) for every definition of entries[k].
std::vector<DefExample> entry_examples(const Dictionary& d, const std::vector<int32_t>& entries);

// DefSent: trains e so that head(pool(definition)) predicts the word's token; head.* frozen.
TrainReport train_defsent(Encoder& e, const std::vector<DefExample>& ex, const DefTrainOptions& o);

// DefSent+ entry embeddings [K,D]: row k is the mean of e.embed() over entries[k]'s definitions.
torch::Tensor entry_embeddings(const Encoder& e, const Dictionary& d,
                               const std::vector<int32_t>& entries, int64_t batch = 64);
// Whitening (Su et al. 2021): (E - mean) U diag(1/sqrt(s)) with U, s the eigenvectors and
// eigenvalues of the covariance of E's rows; the result has zero mean and identity covariance.
// Eigenvalues are floored at 1e-6 of the largest, so the width stays D.
torch::Tensor whiten(const torch::Tensor& E);
// DefSent+: trains e so that cos(pool(definition), E_target) / temperature wins a softmax over
// the rows of E [K,D] (fixed).
TrainReport train_to_entries(Encoder& e, const std::vector<DefExample>& ex, const torch::Tensor& E,
                             const DefTrainOptions& o);

// The mean loss of each objective on examples (no gradient), for tests and reports.
double defsent_loss(const Encoder& e, const std::vector<DefExample>& ex, int64_t batch);
double entries_loss(const Encoder& e, const std::vector<DefExample>& ex, const torch::Tensor& E,
                    double temperature, int64_t batch);

}  // namespace seqlab
