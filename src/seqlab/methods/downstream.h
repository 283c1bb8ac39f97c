// Downstream evaluation of a pretrained model (methods/objectives.h) on the synthetic corpus, per
// language:
//
//   task   pos    part-of-speech tag of every word (7 classes), a head on each word's state
//          label  the subject's number (2 classes), a head on the mean of the word states
//   mode   probe     the model frozen; features computed once; a linear head trained on them
//          finetune  the model and a fresh linear head trained together (AdamW, warmup + cosine)
//
// Inputs are BOS s EOS, padded to 16: the format every stack saw in pretraining (an encdec model
// is evaluated through its encoder). Downstream sentences come from streams of their own, the
// same for every seed and objective, so all models are scored on the same sentences.
#pragma once

#include "seqlab/methods/objectives.h"

#include <map>
#include <string>

namespace seqlab {

struct DownstreamData {
  torch::Tensor tokens;  // [N,16] int64: BOS s EOS PAD...
  torch::Tensor tags;    // [N,16] int64: the word's tag, -1 off the words
  torch::Tensor labels;  // [N] int64: the sentence label
};

// n sentences of one language from a stream (train and test use different streams).
DownstreamData downstream_data(const Grammar& g, int lang, int64_t n, uint64_t stream);

// Accuracy (over words for pos, over sentences for label) of a linear probe on frozen features.
double probe_accuracy(PretrainModel& m, const std::string& task, const DownstreamData& train,
                      const DownstreamData& test, const ObjectivesConfig& cfg, uint64_t seed);

// Accuracy after finetuning a copy of the model holding `weights` (its named parameters and
// buffers) together with a new linear head.
double finetune_accuracy(const ObjectivesConfig& cfg, int64_t vocab_size,
                         const std::map<std::string, torch::Tensor>& weights,
                         const std::string& task, const DownstreamData& train,
                         const DownstreamData& test, uint64_t seed);

// The named parameters and buffers of a module, cloned.
std::map<std::string, torch::Tensor> module_weights(const torch::nn::Module& m);
// Copies weights into a module with exactly that set of names and shapes.
void load_module_weights(torch::nn::Module& m, const std::map<std::string, torch::Tensor>& w,
                         const std::string& source);

}  // namespace seqlab
