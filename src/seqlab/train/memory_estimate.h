// Refusing a training run that cannot fit, before it starts: an estimate of the peak memory of
// one training step, against what the machine (or its cgroup) has.
//
// The estimate, in fp32 bytes:
//   weights     16 per trainable parameter (weight, gradient, AdamW m and v) + 4 per frozen one;
//               k and v count G/H of a D x D matrix under grouped-query attention, a SwiGLU MLP
//               of width I holds 3 I D weights, a plain one 2 I D
//   activations what autograd keeps for the backward pass, per block: 20 B*T*D + 3 B*T*I values
//               (4 B*T*I for SwiGLU) (norms, projections, mixer output, MLP hidden before and
//               after its activation, and the gradients alive at the peak) plus 3 B*H*T*T for
//               softmax attention's scores, probabilities and their gradient (3 B*H*T*C for chunked
//               linear attention); plus 3 B*T*V for the logits, their log-softmax and gradient
// Calibrated on measured peaks (peak RSS over a tiny run's, d_model 128, 2 blocks, T 128-256): the
// estimate came within 0.87-1.2x of softmax, linear and LSTM runs; tests/test_memory_estimate.cpp
// checks a real run stays within 2x. It only refuses runs that exceed the whole machine.
#pragma once

#include "seqlab/model/model_config.h"

#include <cstdint>
#include <string>

namespace seqlab {

struct MemoryEstimate {
  double weights = 0, activations = 0;  // bytes
  double total() const { return weights + activations; }
};

// Parameters counted from the config (no model is built): embeddings, head, and per block the
// mixer's matrices (4 D^2 for attention, 9 D^2 for an LSTM, ...) and the MLP's 2 I D (3 I D).
// frozen_base: finetuning through adapters, where every base weight is frozen.
MemoryEstimate estimate_training_memory(const ModelConfig& m, int64_t batch, int64_t length,
                                        bool frozen_base = false);

// Floating-point operations of one forward pass per token at sequence length `length`, from the
// config: 2 per weight of the blocks and the head (embedding lookups are free) plus, for softmax
// attention, 4 D per layer and position attended. GPT-2 small at length 256: 2.6e8. What the
// trainer scales its periodic evaluation by (train/trainer.h, --eval-tokens).
double forward_flops_per_token(const ModelConfig& m, int64_t length);

// Bytes this process may use: MemTotal, or the cgroup's memory.max when lower; 0 if unknown.
double machine_memory_bytes();

// Throws seqlab::Error with the estimate and its parts when `processes` runs of it (data-parallel
// workers on this machine) exceed the machine's memory.
void check_training_fits(const MemoryEstimate& e, double machine_bytes, int64_t processes = 1);

}  // namespace seqlab
