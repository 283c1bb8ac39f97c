// dyck_bounded: is a bracket string in Dyck-(k, m), the balanced strings over k bracket types
// with nesting depth at most m?
//
// Bounded-depth Dyck is regular, yet it is the core of hierarchical structure: Yao et al. (ACL
// 2021, "Self-Attention Networks Can Process Bounded Hierarchical Languages") build Transformers
// for it, and Bhattamishra et al. (NeurIPS 2024, "Separations in the Representational Capabilities
// of Transformers and Recurrent Architectures") use it to contrast the state a recurrent model
// needs (O(m log k) bits) with what attention needs.
//
// Token ids: open_j = j, close_j = k + j for types j in [0, k) (k = cfg.n_types, default 2), and
// PAD = 2k. m = cfg.depth (default 2). The whole string is classified (head classify, class 1 =
// in Dyck-(k, m)); a per-prefix tag would mostly teach "not yet closed". The string fills the
// stream; an odd T gets one leading PAD, so the last position, which a last-token classifier
// reads, is always a bracket. min_length 2.
//
// Labels are balanced exactly (ceil(B/2) positives, shuffled). Every negative is a positive of the
// same length with ONE edit, chosen to be hard:
//   deep  (30%) transpose a ")(" at depth m into "()": balanced and matched, depth m + 1;
//   swap  (30%) transpose a "()" into ")(": counts intact, a prefix dips below zero or mismatches;
//   type  (25%) change the type of one bracket (k >= 2): counts intact, one pair mismatched;
//   flip  (15%) turn one open into a close or back: the counts no longer agree.
// A kind that the string does not admit falls back to the next one; every negative is checked.
//
// score() adds, beside accuracy, which examples a model gets right, split by what the string
// is rather than by the edit that made it (a swap can also give a string whose only fault is its
// depth or its types). As shares of all scored sequences, so that they average exactly over
// batches (X_share: the kind's share of the sequences; X_right: the share that are of the kind
// and classified right; the accuracy on a kind is X_right / X_share):
//   pos          members;
//   neg_depth    negatives that are balanced and matched (in Dyck-k) but deeper than m;
//   neg_type     negatives whose open/close skeleton is in Dyck-(1, m): only the types mismatch;
//   neg_shape    the rest: the skeleton itself is unbalanced, dips below zero or is too deep.
// A model that checks the depth bound but not the bracket types scores ~0 on neg_type and ~1 on
// the rest; one that checks matching but not the depth, ~0 on neg_depth.
#pragma once

#include "seqlab/tasks/task.h"

#include <random>
#include <vector>

namespace seqlab {

class DyckBoundedTask : public Task {
 public:
  explicit DyckBoundedTask(const TaskConfig& cfg);
  std::string name() const override { return "dyck_bounded"; }
  int64_t vocab_size() const override { return 2 * n_types_ + 1; }
  std::string head() const override { return "classify"; }
  int64_t n_classes() const override { return 2; }
  int64_t min_length() const override { return 2; }
  Batch sample(int64_t batch, int64_t length, uint64_t seed) const override;
  Score score(const torch::Tensor& logits, const Batch& b) const override;

  int64_t pad() const { return 2 * n_types_; }
  // Whether s (bracket ids only) is in Dyck-(k, m).
  bool is_member(const std::vector<int64_t>& s) const;
  // Whether s is balanced and matched, whatever its depth (in Dyck-k).
  bool is_matched(const std::vector<int64_t>& s) const;
  // Whether s with its types erased (every open the same, every close the same) is in Dyck-(1, m).
  bool is_shape_member(const std::vector<int64_t>& s) const;

 private:
  std::vector<int64_t> one_edit(std::mt19937_64& rng, std::vector<int64_t> s) const;

  int64_t n_types_;  // k
  int64_t depth_;    // m
};

}  // namespace seqlab
