#include "seqlab/tasks/supersense.h"

#include "seqlab/core/error.h"
#include "seqlab/tasks/seq2seq.h"

#include <algorithm>

namespace seqlab {

SupersenseTask::SupersenseTask(const TaskConfig& cfg, bool coarse) : coarse_(coarse) {
  tokenizer_ = make_tokenizer(cfg.tokenizer);
  wn_ = load_wordnet();
  const auto& all = wn_->synsets();
  for (size_t i = 0; i < all.size(); ++i)
    examples_[static_cast<size_t>(all[i].split)].push_back(static_cast<int32_t>(i));
  for (Split s : {Split::train, Split::valid, Split::test})
    SEQLAB_CHECK(!examples(s).empty(), "task {}: WordNet in {} has no synsets in its {} split",
                 name(), wn_->dir(), split_name(s));
}

int64_t SupersenseTask::label(const Synset& s) const {
  return coarse_ ? wordnet_pos_class(s.pos) : s.lex_filenum;
}

std::vector<std::string> SupersenseTask::class_names() const {
  if (coarse_) return {"noun", "verb", "adj", "adv"};
  std::vector<std::string> out;
  for (int64_t i = 0; i < kWordNetLexFiles; ++i) out.emplace_back(wordnet_lexname(i));
  return out;
}

Batch SupersenseTask::sample_split(int64_t batch, int64_t length, uint64_t seed,
                                   Split split) const {
  SEQLAB_CHECK(batch > 0, "task {}: batch must be positive, got {}", name(), batch);
  SEQLAB_CHECK(length >= min_length(), "task {}: length {} is below the minimum {}", name(), length,
               min_length());
  const auto& pool = examples(split);
  std::mt19937_64 rng(seed);
  std::vector<std::vector<int64_t>> tokens(batch);
  std::vector<int64_t> targets(batch);
  for (int64_t i = 0; i < batch; ++i) {
    const Synset& s = wn_->synsets()[pool[draw_below(rng, static_cast<int64_t>(pool.size()))]];
    tokens[i] = tokenizer_->encode(s.definition());
    targets[i] = label(s);
  }
  return pack_padded_rows(tokens, targets, length, pad());
}

std::unique_ptr<Task> make_supersense(const TaskConfig& cfg) {
  return std::make_unique<SupersenseTask>(cfg, false);
}
std::unique_ptr<Task> make_supersense_pos(const TaskConfig& cfg) {
  return std::make_unique<SupersenseTask>(cfg, true);
}

Batch pack_padded_rows(const std::vector<std::vector<int64_t>>& tokens,
                       const std::vector<int64_t>& targets, int64_t length, int64_t pad) {
  const auto batch = static_cast<int64_t>(tokens.size());
  SEQLAB_CHECK(batch > 0 && targets.size() == tokens.size(),
               "pack_padded_rows: {} rows but {} targets", batch, targets.size());
  std::vector<int64_t> input(batch * length, pad), n_valid(batch);
  for (int64_t i = 0; i < batch; ++i) {
    const int64_t n = std::min<int64_t>(length, static_cast<int64_t>(tokens[i].size()));
    std::copy(tokens[i].begin(), tokens[i].begin() + n, input.begin() + i * length);
    n_valid[i] = std::max<int64_t>(n, 1);  // an empty text keeps one PAD to pool
  }
  Batch b;
  b.input = rows_to_tensor(input, batch, length);   // [B,T]
  b.target = torch::tensor(targets, torch::kLong);  // [B]
  b.valid = torch::arange(length).unsqueeze(0).lt(
      torch::tensor(n_valid, torch::kLong).unsqueeze(1));  // [1,T] < [B,1] -> [B,T]
  b.mask = b.valid;
  return b;
}

}  // namespace seqlab
