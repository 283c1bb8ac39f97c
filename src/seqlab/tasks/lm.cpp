#include "seqlab/tasks/lm.h"

#include "seqlab/core/error.h"
#include "seqlab/core/log.h"
#include "seqlab/tasks/seq2seq.h"

#include <chrono>

namespace seqlab {

namespace {

std::vector<int64_t> tokenize_docs(const std::vector<std::string>& docs, const Tokenizer& tok) {
  size_t bytes = 0;
  for (const auto& d : docs) bytes += d.size() + 1;
  std::vector<int64_t> stream;
  stream.reserve(bytes);  // exact for bytes, an upper bound for BPE
  for (const auto& d : docs) {
    const auto ids = tok.encode_plain(d);
    stream.insert(stream.end(), ids.begin(), ids.end());
    stream.push_back(tok.eos_id());
  }
  stream.shrink_to_fit();
  return stream;
}

}  // namespace

LmTask::LmTask(const TaskConfig& cfg) : corpus_(cfg.corpus) {
  tokenizer_ = make_tokenizer(cfg.tokenizer);
  train_docs_ = load_corpus(corpus_, Split::train);
  SEQLAB_CHECK(!train_docs_.empty(), "task lm: corpus '{}' has no documents in its train split",
               corpus_);
  // Every document is at least one token plus EOS, so most corpora pass without tokenizing here.
  const int64_t need = cfg.max_len + 1;
  if (static_cast<int64_t>(2 * train_docs_.size()) < need) {
    const int64_t n = static_cast<int64_t>(tokens(Split::train).size());
    SEQLAB_CHECK(n >= need,
                 "task lm: the train split of corpus '{}' is {} tokens ({}), too short for "
                 "windows of --max-len {} (+1 target)",
                 corpus_, n, cfg.tokenizer, cfg.max_len);
  }
}

const std::vector<int64_t>& LmTask::tokens(Split split) const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto i = static_cast<size_t>(split);
  if (built_[i]) return streams_[i];
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> docs;
  if (split == Split::train)
    docs.swap(train_docs_);
  else
    docs = load_corpus(corpus_, split);
  streams_[i] = tokenize_docs(docs, *tokenizer_);
  built_[i] = true;
  log_info("lm: {} split of {}: {} documents, {} tokens ({}) in {:.2f} s", split_name(split),
           corpus_, docs.size(), streams_[i].size(), tokenizer_->spec(),
           std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return streams_[i];
}

Batch LmTask::sample(int64_t batch, int64_t length, uint64_t seed) const {
  SEQLAB_CHECK(batch > 0, "task lm: batch must be positive, got {}", batch);
  SEQLAB_CHECK(length >= 1, "task lm: length must be positive, got {}", length);
  const auto& s = tokens(Split::train);
  const auto n = static_cast<int64_t>(s.size());
  SEQLAB_CHECK(n >= length + 1, "task lm: the train stream ({} tokens) is shorter than {} + 1", n,
               length);
  std::mt19937_64 rng(seed);
  std::vector<int64_t> input(batch * length), target(batch * length);
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t off = draw_below(rng, n - length);  // window s[off .. off + T]
    std::copy(s.begin() + off, s.begin() + off + length, input.begin() + b * length);
    std::copy(s.begin() + off + 1, s.begin() + off + length + 1, target.begin() + b * length);
  }
  Batch out;
  out.input = rows_to_tensor(input, batch, length);       // [B,T]
  out.target = rows_to_tensor(target, batch, length);     // [B,T]
  out.mask = torch::ones({batch, length}, torch::kBool);  // [B,T]
  return out;
}

}  // namespace seqlab
