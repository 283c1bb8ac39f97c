// Cell kind defsent (exp/cells/defsent.h): the masked-LM encoder, DefSent and DefSent+.
#include "seqlab/exp/cells/defsent.h"

#include "seqlab/core/error.h"
#include "seqlab/core/log.h"
#include "seqlab/exp/cells/kinds.h"
#include "seqlab/methods/defsent.h"
#include "seqlab/methods/embed_eval.h"
#include "seqlab/mixers/registry.h"
#include "seqlab/text/bpe_trainer.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <set>

namespace seqlab {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t kEntrySampleSeed = 0xde75e7ULL;  // the same entry sample for every cell

// The evaluation sets of one split.
struct EvalSplit {
  std::string split;
  ReverseDictSet rd;
  SimilaritySet sim;
};
using Eval = std::vector<EvalSplit>;  // valid, then test

// A fixed sample of n train entries (all when n <= 0 or n >= their number).
std::vector<int32_t> entry_sample(const Dictionary& d, int64_t n) {
  auto e = d.split_entries(Split::train);
  std::mt19937_64 rng(kEntrySampleSeed);
  std::shuffle(e.begin(), e.end(), rng);
  if (n > 0 && static_cast<int64_t>(e.size()) > n) e.resize(static_cast<size_t>(n));
  std::sort(e.begin(), e.end());
  return e;
}

DefsentRow base_row(const DefsentCellConfig& c, const Encoder& e, const std::string& method) {
  const auto& m = e.model()->config();
  DefsentRow r;
  r.cell = c.id;
  r.method = method;
  r.label = c.label.value_or(method);
  r.round = 0;
  r.seed = c.seed;
  r.arch = arch_short_name(m.mixer);
  r.d_model = m.mixer.d_model;
  r.n_layer = m.n_layer;
  r.pooling = e.spec().pooling;
  r.train_length = e.spec().max_tokens;
  r.test_length = e.spec().max_tokens;
  return r;
}

void measure(DefsentRow& row, const Encoder& e, const EvalSplit& ev) {
  const auto r = evaluate_embeddings(e, ev.rd, ev.sim);
  row.mrr = r.retrieval.mrr;
  row.recall10 = r.retrieval.recall;
  row.accuracy = r.retrieval.recall;
  row.queries = r.retrieval.queries;
  row.candidates = r.candidates;
  row.spearman = r.spearman;
  row.pairs = r.pairs;
  row.mean_cos = r.iso.mean_cos;
  row.partition = r.iso.partition;
  row.top_pc = r.iso.top_pc;
  log_info("{} round {} ({}): MRR {:.4f} R@10 {:.4f} Spearman {:.4f} mean cos {:.3f}", row.method,
           row.round, row.split, r.retrieval.mrr, r.retrieval.recall, r.spearman, r.iso.mean_cos);
}

// Measures the encoder on every split: one row each.
void add_eval(nlohmann::json& rows, DefsentRow row, const Encoder& e, const Eval& ev) {
  for (const auto& sp : ev) {
    row.split = sp.split;
    measure(row, e, sp);
    rows.push_back(row.to_json());
  }
}

void add_train(DefsentRow& row, const TrainReport& t, int64_t entries, int64_t examples) {
  row.train_entries = entries;
  row.train_examples = examples;
  row.steps = t.steps;
  row.train_seconds = t.seconds;
  row.first_loss = t.first_loss;
  row.last_loss = t.last_loss;
}

DefTrainOptions train_options(const DefsentTrainSection& t, uint64_t seed,
                              const std::string& label) {
  DefTrainOptions o;
  o.steps = t.steps;
  o.batch = t.batch;
  o.lr = t.lr;
  o.warmup = std::max<int64_t>(1, o.steps / 20);
  o.temperature = t.temperature.value_or(o.temperature);
  o.seed = seed;
  o.progress = label;
  return o;
}

// Stage mlm: learns the BPE, measures the random encoder, pretrains it, measures it again.
nlohmann::json run_mlm_stage(const DefsentCellConfig& c, std::shared_ptr<Dictionary> dict,
                             const Eval& ev, const std::string& run_dir) {
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
  bo.vocab_size = *c.bpe_vocab;
  bo.progress = false;
  save_bpe(train_bpe(texts, bo), bpe_dir);
  std::shared_ptr<const Tokenizer> tok = make_tokenizer("bpe:" + fs::absolute(bpe_dir).string());
  auto base = *c.model;
  base.mixer.init_seed = c.seed;
  auto enc = make_encoder(base, tok, c.encoder);
  nlohmann::json rows = nlohmann::json::array();
  auto r0 = base_row(c, enc, "random");
  r0.label = "random init (no training)";
  add_eval(rows, r0, enc, ev);
  MlmOptions mo;
  mo.steps = c.mlm->steps;
  mo.batch = c.mlm->batch;
  mo.lr = c.mlm->lr;
  mo.warmup = std::max<int64_t>(1, mo.steps / 20);
  mo.seed = c.seed;
  mo.progress = "mlm";
  auto tr = pretrain_mlm(enc, texts, mo);
  save_encoder((fs::path(run_dir) / "model").string(), enc);
  auto r = base_row(c, enc, "mlm");
  add_train(r, tr, 0, static_cast<int64_t>(texts.size()));
  add_eval(rows, r, enc, ev);
  return {{"id", c.id}, {"train_seconds", tr.seconds}, {"rows", rows}};
}

// Stage defsent: DefSent on every one-token train entry.
double run_defsent_stage(const DefsentCellConfig& c, const Dictionary& dict, const Encoder& base,
                         const Eval& ev, const std::string& model_dir, nlohmann::json& rows) {
  // DefSent's entries are limited by the vocabulary, not by the sample: every train entry that
  // is one token.
  const auto ex = one_token_examples(dict, dict.split_entries(Split::train), base.tokenizer());
  auto enc = clone_encoder(base);
  auto tr = train_defsent(enc, ex, train_options(*c.train, c.seed, "defsent"));
  save_encoder(model_dir, enc);
  auto r = base_row(c, enc, "defsent");
  std::set<int64_t> words;
  for (const auto& x : ex) words.insert(x.target);
  const auto n_entries = static_cast<int64_t>(words.size());
  add_train(r, tr, n_entries, static_cast<int64_t>(ex.size()));
  r.lr = c.train->lr;
  add_eval(rows, r, enc, ev);
  return tr.seconds;
}

// Stage defsent_plus: DefSent+ rounds, each from a fresh copy of the MLM encoder.
double run_defsent_plus_stage(const DefsentCellConfig& c, const Dictionary& dict,
                              const Encoder& base, const Eval& ev, const std::string& model_dir,
                              nlohmann::json& rows) {
  const auto pool = entry_sample(dict, *c.entries);
  const bool white = *c.whiten;
  const auto ex = entry_examples(dict, pool);
  double seconds = 0;
  Encoder cur = clone_encoder(base);
  for (int64_t round = 1; round <= *c.rounds; ++round) {
    auto E = entry_embeddings(cur, dict, pool);  // [K,D] from the previous round's encoder
    if (white) E = whiten(E);
    auto enc = clone_encoder(base);  // separate training: each round starts from the MLM encoder
    auto tr = train_to_entries(
        enc, ex, E,
        train_options(*c.train, c.seed + 7919 * round, fmt::format("defsent+ round {}", round)));
    seconds += tr.seconds;
    auto r = base_row(c, enc, white ? "defsent+white" : "defsent+");
    r.round = round;
    add_train(r, tr, static_cast<int64_t>(pool.size()), static_cast<int64_t>(ex.size()));
    r.lr = c.train->lr;
    add_eval(rows, r, enc, ev);
    cur = enc;
  }
  save_encoder(model_dir, cur);
  return seconds;
}

}  // namespace

DefsentCellConfig DefsentCellConfig::from_json(const nlohmann::json& cell) {
  const auto c = read_spec<DefsentCellConfig>(cell, cell_source(cell));
  const auto& id = c.id;
  SEQLAB_CHECK(c.stage == "mlm" || c.stage == "defsent" || c.stage == "defsent_plus",
               "cell {}: unknown stage '{}' (mlm, defsent, defsent_plus)", id, c.stage);
  auto need = [&](bool has, const char* key) {
    SEQLAB_CHECK(has, "cell {}: stage {} needs field '{}'", id, c.stage, key);
  };
  if (c.stage == "mlm") {
    need(c.model.has_value(), "model");
    need(c.bpe_vocab.has_value(), "bpe_vocab");
    need(c.mlm.has_value(), "mlm");
    SEQLAB_CHECK(*c.bpe_vocab >= 257, "cell {}: bpe_vocab must be >= 257", id);
    auto mc = *c.model;
    mc.mixer.causal = false;
    mc.head = "tag";
    mc.n_classes = mc.vocab_size = *c.bpe_vocab + 2;
    mc.mixer.max_len = std::max(mc.mixer.max_len, c.encoder.max_tokens);
    mc.validate();
    SEQLAB_CHECK(c.mlm->steps >= 1, "cell {}: mlm steps < 1", id);
  } else {
    need(c.from.has_value(), "from");
    need(c.train.has_value(), "train");
    need(c.entries.has_value(), "entries");
    SEQLAB_CHECK(std::find(c.after.begin(), c.after.end(), *c.from) != c.after.end(),
                 "cell {}: starts from {} without waiting for it", id, *c.from);
    SEQLAB_CHECK(c.train->steps >= 1, "cell {}: train steps < 1", id);
    if (c.stage == "defsent_plus") {
      need(c.rounds.has_value(), "rounds");
      need(c.whiten.has_value(), "whiten");
      SEQLAB_CHECK(*c.rounds >= 1, "cell {}: rounds < 1", id);
    }
  }
  return c;
}

void check_defsent_cell(const nlohmann::json& cell) {
  DefsentCellConfig::from_json(cell);
}

nlohmann::json run_defsent_cell(const nlohmann::json& cell, const std::string& run_dir) {
  const auto c = DefsentCellConfig::from_json(cell);
  torch::manual_seed(c.seed);
  auto dict = std::make_shared<Dictionary>(load_wordnet());
  const WuPalmer wp(dict->wordnet());
  Eval ev;
  for (Split sp : {Split::valid, Split::test})
    ev.push_back({split_name(sp), reverse_dictionary_set(*dict, c.eval.max_queries, sp),
                  similarity_set(*dict, wp, c.eval.n_pairs, sp)});
  if (c.stage == "mlm") return run_mlm_stage(c, dict, ev, run_dir);
  const fs::path runs = fs::path(run_dir).parent_path();
  const auto from = (runs / *c.from / "model").string();
  auto base = load_encoder(from, c.encoder.pooling);
  const auto model_dir = (fs::path(run_dir) / "model").string();
  nlohmann::json rows = nlohmann::json::array();
  const double seconds = c.stage == "defsent"
                             ? run_defsent_stage(c, *dict, base, ev, model_dir, rows)
                             : run_defsent_plus_stage(c, *dict, base, ev, model_dir, rows);
  return {{"id", c.id}, {"train_seconds", seconds}, {"rows", rows}};
}

SEQLAB_REGISTER_CELL_KIND("defsent", 80,
                          "a sentence encoder: masked-LM pretraining, DefSent or DefSent+",
                          run_defsent_cell, check_defsent_cell);

}  // namespace seqlab
