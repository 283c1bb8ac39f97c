#include "seqlab/methods/encoder.h"

#include "seqlab/core/atomic_file.h"
#include "seqlab/core/error.h"
#include "seqlab/core/progress.h"
#include "seqlab/model/model_dir.h"

#include <algorithm>
#include <filesystem>
#include <map>

namespace seqlab {

namespace fs = std::filesystem;

namespace {

constexpr const char* kTokenizerDir = "tokenizer";
// The files a BPE tokenizer directory may hold (HF's names, or GPT-2's original ones).
constexpr const char* kTokenizerFiles[] = {"vocab.json", "merges.txt", "encoder.json", "vocab.bpe"};

}  // namespace

nlohmann::json EncoderSpec::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  const_cast<EncoderSpec*>(this)->visit(ToJsonVisitor{j});
  return j;
}

EncoderSpec EncoderSpec::from_json(const nlohmann::json& j, const std::string& source) {
  SEQLAB_CHECK(j.is_object(), "{}: the encoder section must be an object", source);
  EncoderSpec s;
  FromJsonVisitor v{j, source, {}};
  s.visit(v);
  for (auto it = j.begin(); it != j.end(); ++it)
    SEQLAB_CHECK(v.known.count(it.key()), "{}: unknown encoder field '{}'", source, it.key());
  check_pooling(s.pooling);
  SEQLAB_CHECK(s.max_tokens >= 2, "{}: encoder max_tokens must be >= 2, got {}", source,
               s.max_tokens);
  return s;
}

void check_pooling(const std::string& p) {
  SEQLAB_CHECK(p == "cls" || p == "mean" || p == "max", "unknown pooling '{}' (cls, mean, max)", p);
}

ModelConfig encoder_model_config(ModelConfig c, const Tokenizer& tok, int64_t max_tokens) {
  c.mixer.causal = false;
  c.head = "tag";
  c.vocab_size = tok.vocab_size() + 2;
  c.n_classes = c.vocab_size;
  c.mixer.max_len = std::max(c.mixer.max_len, max_tokens);
  c.validate();
  return c;
}

Encoder::Encoder(SeqModel model, std::shared_ptr<const Tokenizer> tok, EncoderSpec spec)
    : model_(std::move(model)), tok_(std::move(tok)), spec_(std::move(spec)) {
  check_pooling(spec_.pooling);
  const auto& c = model_->config();
  SEQLAB_CHECK(
      c.head == "tag" && !c.tie_tag_head && c.vocab_size == tok_->vocab_size() + 2 &&
          c.n_classes == c.vocab_size,
      "not an encoder: the model needs an untied tag head over the tokenizer's {} tokens + 2 "
      "(it has head {}{}, vocabulary {}, classes {})",
      tok_->vocab_size(), c.head, c.tie_tag_head ? " (tied)" : "", c.vocab_size, c.n_classes);
  SEQLAB_CHECK(spec_.max_tokens >= 2 && spec_.max_tokens <= c.mixer.max_len,
               "encoder max_tokens {} must be in [2, the model's max_context {}]", spec_.max_tokens,
               c.mixer.max_len);
}

void Encoder::set_pooling(const std::string& p) {
  check_pooling(p);
  spec_.pooling = p;
}

std::vector<int64_t> Encoder::tokens(std::string_view text) const {
  std::vector<int64_t> ids = {cls_id()};
  const auto t = tok_->encode(text);
  const size_t room = static_cast<size_t>(spec_.max_tokens) - 1;
  ids.insert(ids.end(), t.begin(),
             t.begin() + static_cast<std::ptrdiff_t>(std::min(room, t.size())));
  return ids;
}

torch::Tensor Encoder::pool(const torch::Tensor& h) const {
  if (spec_.pooling == "cls") return h.select(1, 0);                 // [B,D]
  if (spec_.pooling == "max") return std::get<0>(h.max(/*dim=*/1));  // [B,D]
  return h.mean(1);                                                  // [B,D]
}

torch::Tensor Encoder::forward(const torch::Tensor& tokens) const {
  return pool(model_.ptr()->hidden(tokens));  // [B,T] -> [B,T,D] -> [B,D]
}

torch::Tensor Encoder::embed(const std::vector<std::string>& texts, int64_t batch,
                             const std::string& label) const {
  SEQLAB_CHECK(batch >= 1, "embedding batch must be >= 1, got {}", batch);
  const int64_t N = static_cast<int64_t>(texts.size());
  const int64_t D = model_->config().mixer.d_model;
  auto out = torch::zeros({N, D});
  if (N == 0) return out;
  std::vector<std::vector<int64_t>> ids(N);
  std::map<size_t, std::vector<int64_t>> by_len;  // token length -> text indices
  for (int64_t i = 0; i < N; ++i) {
    ids[i] = tokens(texts[i]);
    by_len[ids[i].size()].push_back(i);
  }
  const bool was_training = model_->is_training();
  model_.ptr()->eval();
  torch::NoGradGuard ng;
  std::unique_ptr<Progress> bar;
  if (!label.empty()) bar = std::make_unique<Progress>(label, N);
  int64_t done = 0;
  for (const auto& [T, rows] : by_len)
    for (size_t s = 0; s < rows.size(); s += static_cast<size_t>(batch)) {
      const size_t e = std::min(rows.size(), s + static_cast<size_t>(batch));
      auto tok = torch::empty({static_cast<int64_t>(e - s), static_cast<int64_t>(T)}, torch::kLong);
      auto* p = tok.data_ptr<int64_t>();
      for (size_t r = s; r < e; ++r)
        std::copy(ids[rows[r]].begin(), ids[rows[r]].end(), p + (r - s) * T);
      auto emb = forward(tok);  // [b,D]
      auto idx = torch::tensor(std::vector<int64_t>(rows.begin() + s, rows.begin() + e));
      out.index_copy_(0, idx, emb.to(torch::kFloat));
      done += static_cast<int64_t>(e - s);
      if (bar) bar->update(done);
    }
  if (bar) bar->finish();
  if (was_training) model_.ptr()->train();
  return out;
}

Encoder make_encoder(const ModelConfig& base, std::shared_ptr<const Tokenizer> tok,
                     const EncoderSpec& spec) {
  auto cfg = encoder_model_config(base, *tok, spec.max_tokens);
  return Encoder(SeqModel(cfg), std::move(tok), spec);
}

Encoder clone_encoder(const Encoder& e) {
  SeqModel m(e.model()->config());
  torch::NoGradGuard ng;
  load_model_tensors(*m, model_tensors(*e.model()), "encoder copy");
  for (auto& p : m->parameters()) p.set_requires_grad(true);
  return Encoder(m, e.shared_tokenizer(), e.spec());
}

void save_encoder(const std::string& dir, const Encoder& e, const nlohmann::json& sections) {
  EncoderSpec spec = e.spec();
  const std::string tspec = e.tokenizer().spec();
  if (tspec.rfind("bpe:", 0) == 0) {
    // Copy the tokenizer's files in, so the directory stands alone.
    const fs::path src = tspec.substr(4), dst = fs::path(dir) / kTokenizerDir;
    ensure_dir(dst.string());
    int copied = 0;
    for (const char* f : kTokenizerFiles)
      if (fs::exists(src / f) && fs::absolute(src) != fs::absolute(dst)) {
        write_file_atomic((dst / f).string(), read_file((src / f).string()));
        ++copied;
      } else if (fs::exists(src / f)) {
        ++copied;
      }
    SEQLAB_CHECK(copied > 0, "tokenizer directory {} holds no vocabulary files", src.string());
    spec.tokenizer = kTokenizerDir;
  } else {
    spec.tokenizer = tspec;
  }
  nlohmann::json s = sections;
  s["encoder"] = spec.to_json();
  save_model_dir(dir, *e.model(), s);
}

Encoder load_encoder(const std::string& dir, const std::string& pooling) {
  auto lm = load_model_dir(dir);
  SEQLAB_CHECK(lm.sections.contains("encoder"),
               "{}: not a sentence encoder (config.json has no \"encoder\" section)", dir);
  auto spec =
      EncoderSpec::from_json(lm.sections["encoder"], (fs::path(dir) / kConfigFile).string());
  std::string tspec = spec.tokenizer;
  if (tspec != "byte" && tspec != "gpt2" && tspec.rfind("bpe:", 0) != 0 &&
      fs::path(tspec).is_relative())
    tspec = "bpe:" + fs::absolute(fs::path(dir) / tspec).lexically_normal().string();
  std::shared_ptr<const Tokenizer> tok = make_tokenizer(tspec);
  spec.tokenizer = tok->spec();
  if (!pooling.empty()) spec.pooling = pooling;
  return Encoder(lm.model, tok, spec);
}

}  // namespace seqlab
