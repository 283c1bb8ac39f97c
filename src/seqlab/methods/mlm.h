// Masked-LM pretraining of a sentence encoder (methods/encoder.h) on plain texts, as BERT (Devlin et
// al. 2019): in every sequence each position after [CLS] is chosen with probability mask_prob;
// a chosen token becomes [MASK] 80% of the time, a random token of the tokenizer 10%, and stays
// 10%; the loss is the cross-entropy of the tag head's prediction of the original token at the
// chosen positions only. This is the "pretrained language model" DefSent starts from; nothing is
// downloaded, seqlab trains it.
//
// Batches (length_batches below): texts are grouped by token length, so a batch is cut to the
// length of its shortest member and holds no padding (the mixers have no padding mask); with many
// texts neighbours in length differ by at most a token, so little is cut.
//
// Determinism: batch order and masks come from mix_seed(seed, ·) streams; one thread gives the
// same weights on every run.
#pragma once

#include "seqlab/methods/encoder.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace seqlab {

struct MlmOptions {
  int64_t steps = 1000;
  int64_t batch = 32;
  double lr = 1e-3;
  int64_t warmup = 50;
  double mask_prob = 0.15;
  uint64_t seed = 0;
  std::string progress;  // progress-bar label on stderr ("" = none)
};

struct TrainReport {
  int64_t steps = 0;
  double first_loss = 0, last_loss = 0;  // means over the first / last 10% of steps
  double seconds = 0;
};

// Batches of indices into `lengths` for one epoch: indices in a seeded random order, stably sorted
// by length (so equal lengths stay shuffled), cut into consecutive groups of `batch`, and the
// groups shuffled. Every index appears exactly once.
std::vector<std::vector<int64_t>> length_batches(const std::vector<int64_t>& lengths, int64_t batch,
                                                 uint64_t seed);

// The rows of token sequences `ids` named by `rows`, as one [B,T] tensor cut to the shortest.
torch::Tensor batch_tokens(const std::vector<std::vector<int64_t>>& ids,
                           const std::vector<int64_t>& rows);

// The training loop masked-LM pretraining and definition training (methods/defsent.h) share:
// AdamW over `params`, linear warmup for `warmup` steps and cosine decay to 10% of lr, gradient
// norm clipped at 1, an optional progress bar; batches from length_batches over `lengths`, epoch
// after epoch, epoch k shuffled by mix_seed(seed, stream + k). step_loss(rows, step) returns the
// loss of the batch `rows` at that step.
struct LoopOptions {
  int64_t steps = 0, batch = 0, warmup = 0;
  double lr = 0;
  uint64_t seed = 0, stream = 0;
  std::string progress;
};
TrainReport train_length_batched(
    const std::vector<std::pair<std::string, torch::Tensor>>& params,
    const std::vector<int64_t>& lengths, const LoopOptions& o,
    const std::function<torch::Tensor(const std::vector<int64_t>& rows, int64_t step)>& step_loss);

// Trains e's whole model (every parameter) with train_length_batched. Throws seqlab::Error when
// texts is empty.
TrainReport pretrain_mlm(Encoder& e, const std::vector<std::string>& texts, const MlmOptions& o);

// The masked-LM loss of the model on these texts (no gradient), masks drawn from `seed`.
double mlm_loss(const Encoder& e, const std::vector<std::string>& texts, int64_t batch,
                uint64_t seed, double mask_prob = 0.15);

}  // namespace seqlab
