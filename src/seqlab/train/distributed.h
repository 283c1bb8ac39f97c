// Data-parallel training on PyTorch's own distributed backend (c10d in LibTorch): a TCPStore for
// the rendezvous and ProcessGroupGloo for the collectives (ProcessGroupNCCL would slot in where
// LibTorch has CUDA; this build is CPU-only).
//
// The scheme (train/trainer.cpp):
//   - every rank builds the same model from the same configs, which rank 0 resolves (reading
//     config.json on --resume) and hands to the others through the store; rank 0's weights and
//     optimizer state are then broadcast, so a finetuned or resumed start is the same everywhere;
//   - training batch s is sampled by every rank from the same seed (the data cursor is the step
//     number, as in one process) and rank r keeps its own contiguous shard of the rows;
//   - each rank's loss is its shard's cross-entropy sum over the global count of scored positions,
//     so the all-reduced (summed, bucketed) gradient is the gradient of the one-process loss on
//     the whole batch, and every rank applies the same update: the weights stay identical;
//   - rank 0 alone evaluates and writes metrics and checkpoints.
// A worker that dies closes its sockets, and the others' next collective fails with an error
// naming the lost peer; a hung worker is caught by the collective timeout.
#pragma once

#include "seqlab/tasks/task.h"

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

namespace seqlab {

// A collective that failed because a peer is gone or stuck (the CLI exits with code 3 for it, so
// that a launcher can tell the workers that lost a peer from the one that failed first).
class CollectiveError : public Error {
 public:
  using Error::Error;
};

struct DistConfig {
  int64_t rank = -1, world_size = 0;  // -1 / 0: take RANK / WORLD_SIZE from the environment
  int64_t local_world_size = 0;       // workers on this machine (0: LOCAL_WORLD_SIZE, else 1)
  std::string master_addr;            // "": MASTER_ADDR, else 127.0.0.1
  int64_t master_port = 0;            // 0: MASTER_PORT, else 29500
  double timeout = 300;               // seconds: rendezvous, and any one collective

  // Fills the unset fields from the environment (RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR,
  // MASTER_PORT, the names torchrun uses) and defaults; validates. world_size 1 means no
  // distribution.
  DistConfig resolved() const;
  bool distributed() const { return world_size > 1; }
};

class DataParallel {
 public:
  // Joins the group: rank 0 serves the store at master_addr:master_port, the others connect.
  // Throws seqlab::Error naming the cause: master unreachable, workers missing after the timeout,
  // a worker with another world size, two workers with one rank.
  explicit DataParallel(const DistConfig& resolved);
  ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  int64_t rank() const { return rank_; }
  int64_t world_size() const { return world_; }
  int64_t local_world_size() const { return local_; }
  bool root() const { return rank_ == 0; }

  // Rank 0 publishes `value` under `key`; every rank returns it. When rank 0 failed before it
  // could publish, it calls publish_error() instead, and the others throw with its message
  // (rank 0 waits, up to 5 s, until they have read it: its store must outlive their reads).
  std::string share(const std::string& key, const std::string& value);
  void publish_error(const std::string& key, const std::string& message);

  // Rank 0's tensors copied into every rank's (same shapes), in place.
  void broadcast(const std::vector<torch::Tensor>& tensors);
  // Sums float32 tensors over the ranks in place, packed into buckets of about bucket_bytes.
  void allreduce_sum(const std::vector<torch::Tensor>& tensors, int64_t bucket_bytes = 25 << 20);
  // Sums a few doubles over the ranks.
  std::vector<double> allreduce_values(std::vector<double> values);
  void barrier();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int64_t rank_ = 0, world_ = 1, local_ = 1;
  double timeout_ = 0;
};

// Rows [begin, end) of rank's contiguous shard of a batch of `batch` rows over `world` ranks.
std::pair<int64_t, int64_t> shard_rows(int64_t batch, int64_t rank, int64_t world);

// The rows [begin, end) of every tensor of a batch.
Batch slice_rows(const Batch& b, int64_t begin, int64_t end);

// What task_loss averages over: sequences (classify targets [B]) or scored positions (the mask).
int64_t scored_count(const Batch& b);

// A TCP port on 127.0.0.1 free at the time of the call (for local launches).
int free_local_port();

}  // namespace seqlab
