#include "seqlab/exp/defsent_cell.h"

#include "seqlab/core/error.h"
#include "seqlab/core/log.h"
#include "seqlab/text/bpe_trainer.h"
#include "seqlab/methods/defsent.h"
#include "seqlab/methods/embed_eval.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <set>

namespace seqlab {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t kEntrySampleSeed = 0xde75e7ULL;  // the same entry sample for every cell

struct Eval {
  ReverseDictSet rd;
  SimilaritySet sim;
};

// A fixed sample of n train entries (all when n <= 0 or n >= their number).
std::vector<int32_t> entry_sample(const Dictionary& d, int64_t n) {
  auto e = d.split_entries(Split::train);
  std::mt19937_64 rng(kEntrySampleSeed);
  std::shuffle(e.begin(), e.end(), rng);
  if (n > 0 && static_cast<int64_t>(e.size()) > n) e.resize(static_cast<size_t>(n));
  std::sort(e.begin(), e.end());
  return e;
}

nlohmann::json base_row(const nlohmann::json& cell, const Encoder& e, const std::string& method) {
  const auto& c = e.model()->config();
  return {{"kind", "defsent"},
          {"cell", cell.at("id")},
          {"method", method},
          {"label", cell.value("label", method)},
          {"round", 0},
          {"seed", cell.at("seed")},
          {"task", "wordnet_defsent"},
          {"arch", c.mixer.arch == "linear" ? c.mixer.feature_map : c.mixer.arch},
          {"d_model", c.mixer.d_model},
          {"n_layer", c.n_layer},
          {"pooling", e.spec().pooling},
          {"train_length", e.spec().max_tokens},
          {"test_length", e.spec().max_tokens}};
}

void add_eval(nlohmann::json& row, const Encoder& e, const Eval& ev) {
  const auto r = evaluate_embeddings(e, ev.rd, ev.sim);
  row["mrr"] = r.retrieval.mrr;
  row["recall10"] = r.retrieval.recall;
  row["accuracy"] = r.retrieval.recall;
  row["queries"] = r.retrieval.queries;
  row["candidates"] = r.candidates;
  row["spearman"] = r.spearman;
  row["pairs"] = r.pairs;
  row["mean_cos"] = r.iso.mean_cos;
  row["partition"] = r.iso.partition;
  row["top_pc"] = r.iso.top_pc;
  log_info("{} round {}: MRR {:.4f} R@10 {:.4f} Spearman {:.4f} mean cos {:.3f}",
           row["method"].get<std::string>(), row["round"].get<int64_t>(), r.retrieval.mrr,
           r.retrieval.recall, r.spearman, r.iso.mean_cos);
}

void add_train(nlohmann::json& row, const TrainReport& t, int64_t entries, int64_t examples) {
  row["train_entries"] = entries;
  row["train_examples"] = examples;
  row["steps"] = t.steps;
  row["train_seconds"] = t.seconds;
  row["first_loss"] = t.first_loss;
  row["last_loss"] = t.last_loss;
}

DefTrainOptions train_options(const nlohmann::json& t, uint64_t seed, const std::string& label) {
  DefTrainOptions o;
  o.steps = t.at("steps").get<int64_t>();
  o.batch = t.at("batch").get<int64_t>();
  o.lr = t.at("lr").get<double>();
  o.warmup = std::max<int64_t>(1, o.steps / 20);
  o.temperature = t.value("temperature", o.temperature);
  o.seed = seed;
  o.progress = label;
  return o;
}

const std::vector<std::string> kKeys = {
    "id",  "kind",  "stage",   "label",  "seed",   "model", "encoder", "bpe_vocab",
    "mlm", "train", "entries", "rounds", "whiten", "from",  "after",   "eval"};

}  // namespace

void check_defsent_cell(const nlohmann::json& c) {
  const auto id = c.at("id").get<std::string>();
  for (auto it = c.begin(); it != c.end(); ++it)
    SEQLAB_CHECK(std::find(kKeys.begin(), kKeys.end(), it.key()) != kKeys.end(),
                 "cell {}: unknown field '{}'", id, it.key());
  const auto stage = c.at("stage").get<std::string>();
  SEQLAB_CHECK(stage == "mlm" || stage == "defsent" || stage == "defsent_plus",
               "cell {}: unknown stage '{}' (mlm, defsent, defsent_plus)", id, stage);
  EncoderSpec spec = EncoderSpec::from_json(c.at("encoder"), id);
  c.at("seed").get<uint64_t>();
  c.at("eval").at("max_queries").get<int64_t>();
  c.at("eval").at("n_pairs").get<int64_t>();
  if (stage == "mlm") {
    auto mc = ModelConfig::from_json(c.at("model"), id);
    SEQLAB_CHECK(c.at("bpe_vocab").get<int64_t>() >= 257, "cell {}: bpe_vocab must be >= 257", id);
    mc.mixer.causal = false;
    mc.head = "tag";
    mc.n_classes = mc.vocab_size = c.at("bpe_vocab").get<int64_t>() + 2;
    mc.mixer.max_len = std::max(mc.mixer.max_len, spec.max_tokens);
    mc.validate();
    SEQLAB_CHECK(c.at("mlm").at("steps").get<int64_t>() >= 1, "cell {}: mlm steps < 1", id);
  } else {
    const auto from = c.at("from").get<std::string>();
    const auto after = c.value("after", std::vector<std::string>{});
    SEQLAB_CHECK(std::find(after.begin(), after.end(), from) != after.end(),
                 "cell {}: starts from {} without waiting for it", id, from);
    SEQLAB_CHECK(c.at("train").at("steps").get<int64_t>() >= 1, "cell {}: train steps < 1", id);
    c.at("entries").get<int64_t>();
    if (stage == "defsent_plus") {
      SEQLAB_CHECK(c.at("rounds").get<int64_t>() >= 1, "cell {}: rounds < 1", id);
      c.at("whiten").get<bool>();
    }
  }
}

nlohmann::json run_defsent_cell(const nlohmann::json& cell, const std::string& run_dir) {
  check_defsent_cell(cell);
  const auto id = cell.at("id").get<std::string>();
  const auto stage = cell.at("stage").get<std::string>();
  const uint64_t seed = cell.at("seed").get<uint64_t>();
  torch::manual_seed(seed);
  auto dict = std::make_shared<Dictionary>(load_wordnet());
  const WuPalmer wp(dict->wordnet());
  Eval ev{reverse_dictionary_set(*dict, cell["eval"]["max_queries"].get<int64_t>()),
          similarity_set(*dict, wp, cell["eval"]["n_pairs"].get<int64_t>())};
  const auto model_dir = (fs::path(run_dir) / "model").string();
  nlohmann::json rows = nlohmann::json::array();

  if (stage == "mlm") {
    // Masked LM on the definitions that definition training may see (synsets with a train
    // entry); the BPE is learned on the same texts.
    std::vector<std::string> texts;
    for (size_t s = 0; s < dict->wordnet().synsets().size(); ++s) {
      const auto& en = dict->synset_entries(static_cast<int32_t>(s));
      bool train = false;
      for (auto i : en) train = train || dict->entries()[i].split == Split::train;
      if (train) texts.push_back(dict->definition(static_cast<int32_t>(s)));
    }
    const auto bpe_dir = (fs::path(run_dir) / "bpe").string();
    BpeTrainOptions bo;
    bo.vocab_size = cell.at("bpe_vocab").get<int64_t>();
    bo.progress = false;
    save_bpe(train_bpe(texts, bo), bpe_dir);
    std::shared_ptr<const Tokenizer> tok = make_tokenizer("bpe:" + fs::absolute(bpe_dir).string());
    auto base = ModelConfig::from_json(cell.at("model"), id);
    base.mixer.init_seed = seed;
    auto enc = make_encoder(base, tok, EncoderSpec::from_json(cell.at("encoder"), id));
    auto r0 = base_row(cell, enc, "random");
    r0["label"] = "random init (no training)";
    add_eval(r0, enc, ev);
    rows.push_back(r0);
    const auto& m = cell.at("mlm");
    MlmOptions mo;
    mo.steps = m.at("steps").get<int64_t>();
    mo.batch = m.at("batch").get<int64_t>();
    mo.lr = m.at("lr").get<double>();
    mo.warmup = std::max<int64_t>(1, mo.steps / 20);
    mo.seed = seed;
    mo.progress = "mlm";
    auto tr = pretrain_mlm(enc, texts, mo);
    save_encoder(model_dir, enc);
    auto r = base_row(cell, enc, "mlm");
    add_train(r, tr, 0, static_cast<int64_t>(texts.size()));
    add_eval(r, enc, ev);
    rows.push_back(r);
    return {{"id", id}, {"train_seconds", tr.seconds}, {"rows", rows}};
  }

  const fs::path runs = fs::path(run_dir).parent_path();
  const auto from = (runs / cell.at("from").get<std::string>() / "model").string();
  const auto pooling = cell.at("encoder").at("pooling").get<std::string>();
  auto base = load_encoder(from, pooling);
  double seconds = 0;
  if (stage == "defsent") {
    // DefSent's entries are limited by the vocabulary, not by the sample: every train entry that
    // is one token.
    const auto ex = one_token_examples(*dict, dict->split_entries(Split::train), base.tokenizer());
    auto enc = clone_encoder(base);
    auto tr = train_defsent(enc, ex, train_options(cell.at("train"), seed, "defsent"));
    seconds += tr.seconds;
    save_encoder(model_dir, enc);
    auto r = base_row(cell, enc, "defsent");
    std::set<int64_t> words;
    for (const auto& x : ex) words.insert(x.target);
    const auto n_entries = static_cast<int64_t>(words.size());
    add_train(r, tr, n_entries, static_cast<int64_t>(ex.size()));
    add_eval(r, enc, ev);
    rows.push_back(r);
  } else {
    const auto pool = entry_sample(*dict, cell.at("entries").get<int64_t>());
    const bool white = cell.at("whiten").get<bool>();
    const auto ex = entry_examples(*dict, pool);
    const int64_t rounds = cell.at("rounds").get<int64_t>();
    Encoder cur = clone_encoder(base);
    for (int64_t round = 1; round <= rounds; ++round) {
      auto E = entry_embeddings(cur, *dict, pool);  // [K,D] from the previous round's encoder
      if (white) E = whiten(E);
      auto enc = clone_encoder(base);  // separate training: each round starts from the MLM encoder
      auto tr = train_to_entries(enc, ex, E,
                                 train_options(cell.at("train"), seed + 7919 * round,
                                               fmt::format("defsent+ round {}", round)));
      seconds += tr.seconds;
      auto r = base_row(cell, enc, white ? "defsent+white" : "defsent+");
      r["round"] = round;
      add_train(r, tr, static_cast<int64_t>(pool.size()), static_cast<int64_t>(ex.size()));
      add_eval(r, enc, ev);
      rows.push_back(r);
      cur = enc;
    }
    save_encoder(model_dir, cur);
  }
  return {{"id", id}, {"train_seconds", seconds}, {"rows", rows}};
}

}  // namespace seqlab
