// Cells of the `defsent` suite (exp/suites/defsent.cpp), kind "defsent": sentence embeddings from
// WordNet definitions (methods/defsent.h), measured by methods/embed_eval.h.
//
//   {"id", "kind": "defsent", "stage": "mlm" | "defsent" | "defsent_plus", "label", "seed",
//    "model": ModelConfig (the encoder's arch and size; made bidirectional),
//    "encoder": {"pooling", "max_tokens"}, "bpe_vocab" (mlm: BPE learned on the train glosses),
//    "mlm": {"steps", "batch", "lr"} (mlm), "train": {"steps", "batch", "lr", "temperature"}
//    (defsent, defsent_plus), "entries" (train entries used, 0 = all; a fixed sample),
//    "rounds", "whiten" (defsent_plus), "from" (the mlm cell it starts from; in "after"),
//    "eval": {"max_queries", "n_pairs"}}
//
// Stage mlm learns the BPE, measures the randomly initialised encoder (method "random"), pretrains
// it with masked LM and measures it again ("mlm", the untrained pooled baseline); it writes
// runs/<id>/model. Stage defsent trains a copy of that encoder with DefSent on every one-token
// train entry (the entry sample is not used there) ("defsent"); stage defsent_plus runs DefSent+
// for `rounds` rounds on all entries of the sample, each round from a fresh copy of the MLM
// encoder against entry embeddings built by the previous round's encoder (round 1: the MLM
// encoder), whitened or not ("defsent+" / "defsent+white", one row per round).
//
// Two DefsentRows per measured encoder: split "valid" (where the suite's settings are chosen) and
// "test" (reported), on disjoint held-out definitions (methods/embed_eval.h).
#pragma once

#include "seqlab/exp/cells/fields.h"
#include "seqlab/methods/encoder.h"
#include "seqlab/model/model_config.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace seqlab {

// Masked-LM pretraining of stage mlm ("mlm").
struct DefsentMlmSection {
  int64_t steps = 0, batch = 0;
  double lr = 0;

  template <class V>
  void visit(V&& v) {
    v(steps, "steps", kRequired, "masked-LM steps");
    v(batch, "batch", kRequired, "definitions per step");
    v(lr, "lr", kRequired, "peak learning rate");
  }
  DefsentMlmSection() { visit(FieldDefaults{}); }
};

// Definition training of stages defsent and defsent_plus ("train").
struct DefsentTrainSection {
  int64_t steps = 0, batch = 0;
  double lr = 0;
  std::optional<double> temperature;  // DefSent+; default DefTrainOptions'

  template <class V>
  void visit(V&& v) {
    v(steps, "steps", kRequired, "steps (per round)");
    v(batch, "batch", kRequired, "definitions per step");
    v(lr, "lr", kRequired, "peak learning rate");
    v(temperature, "temperature", kUnset, "DefSent+ contrastive temperature");
  }
  DefsentTrainSection() { visit(FieldDefaults{}); }
};

struct DefsentEvalSection {
  int64_t max_queries = 0, n_pairs = 0;

  template <class V>
  void visit(V&& v) {
    v(max_queries, "max_queries", kRequired, "reverse-dictionary queries (0 = all)");
    v(n_pairs, "n_pairs", kRequired, "definition pairs of the similarity proxy");
  }
  DefsentEvalSection() { visit(FieldDefaults{}); }
};

struct DefsentCellConfig : CellSpec {
  std::string stage;
  std::optional<std::string> label;
  uint64_t seed = 0;
  std::optional<ModelConfig> model;  // mlm
  EncoderSpec encoder;
  std::optional<int64_t> bpe_vocab;  // mlm
  std::optional<DefsentMlmSection> mlm;
  std::optional<DefsentTrainSection> train;  // defsent, defsent_plus
  std::optional<int64_t> entries, rounds;    // rounds: defsent_plus
  std::optional<bool> whiten;                // defsent_plus
  std::optional<std::string> from;           // defsent, defsent_plus: the mlm cell
  DefsentEvalSection eval;

  template <class V>
  void visit(V&& v) {
    CellSpec::visit(v);
    v(stage, "stage", kRequired, "mlm | defsent | defsent_plus");
    v(label, "label", kUnset, "the rows' name in the report (default the method)");
    v(seed, "seed", kRequired, "seed of initialisation and training");
    v(model, "model", kUnset, "mlm: the encoder's arch and size (made bidirectional)");
    v(encoder, "encoder", kRequired, "pooling and max_tokens");
    v(bpe_vocab, "bpe_vocab", kUnset, "mlm: BPE vocabulary learned on the train glosses");
    v(mlm, "mlm", kUnset, "mlm: masked-LM pretraining");
    v(train, "train", kUnset, "defsent, defsent_plus: definition training");
    v(entries, "entries", kUnset, "train entries used (0 = all; a fixed sample)");
    v(rounds, "rounds", kUnset, "defsent_plus: rounds");
    v(whiten, "whiten", kUnset, "defsent_plus: whiten the entry embeddings");
    v(from, "from", kUnset, "defsent, defsent_plus: the mlm cell to start from");
    v(eval, "eval", kRequired, "reverse dictionary and similarity sizes");
  }
  DefsentCellConfig() { visit(FieldDefaults{}); }

  // Reads and checks a spec: unknown fields, fields a stage needs, impossible values.
  static DefsentCellConfig from_json(const nlohmann::json& cell);
};

struct DefsentRow {
  std::string kind;  // "defsent"
  std::string cell;
  std::string method;  // random | mlm | defsent | defsent+ | defsent+white
  std::string label;
  int64_t round;  // DefSent+ round, 0 otherwise
  uint64_t seed;
  std::string split;         // valid | test: the evaluation split (methods/embed_eval.h)
  std::optional<double> lr;  // definition training's learning rate (absent for random / mlm)
  std::string task;          // "wordnet_defsent"
  std::string arch;          // the feature map for linear attention, else the mixer
  int64_t d_model, n_layer;
  std::string pooling;
  int64_t train_length, test_length;  // the encoder's max_tokens
  // Training (absent for the random initialisation).
  std::optional<int64_t> train_entries, train_examples, steps;
  std::optional<double> train_seconds, first_loss, last_loss;
  // Reverse dictionary, similarity proxy, isotropy (methods/embed_eval.h).
  double mrr, recall10, accuracy;  // accuracy = recall10
  int64_t queries, candidates;
  double spearman;
  int64_t pairs;
  double mean_cos, partition, top_pc;

  template <class V>
  void visit(V&& v) {
    v(kind, "kind", std::string("defsent"), "");
    v(cell, "cell", std::string(), "");
    v(method, "method", std::string(), "");
    v(label, "label", std::string(), "");
    v(round, "round", int64_t{0}, "");
    v(seed, "seed", uint64_t{0}, "");
    v(split, "split", std::string("test"), "");
    v(lr, "lr", kUnset, "");
    v(task, "task", std::string("wordnet_defsent"), "");
    v(arch, "arch", std::string(), "");
    v(d_model, "d_model", int64_t{0}, "");
    v(n_layer, "n_layer", int64_t{0}, "");
    v(pooling, "pooling", std::string(), "");
    v(train_length, "train_length", int64_t{0}, "");
    v(test_length, "test_length", int64_t{0}, "");
    v(train_entries, "train_entries", kUnset, "");
    v(train_examples, "train_examples", kUnset, "");
    v(steps, "steps", kUnset, "");
    v(train_seconds, "train_seconds", kUnset, "");
    v(first_loss, "first_loss", kUnset, "");
    v(last_loss, "last_loss", kUnset, "");
    v(mrr, "mrr", 0.0, "");
    v(recall10, "recall10", 0.0, "");
    v(accuracy, "accuracy", 0.0, "");
    v(queries, "queries", int64_t{0}, "");
    v(candidates, "candidates", int64_t{0}, "");
    v(spearman, "spearman", 0.0, "");
    v(pairs, "pairs", int64_t{0}, "");
    v(mean_cos, "mean_cos", 0.0, "");
    v(partition, "partition", 0.0, "");
    v(top_pc, "top_pc", 0.0, "");
  }
  DefsentRow() { visit(FieldDefaults{}); }
  nlohmann::json to_json() const { return write_fields(*this); }
};

nlohmann::json run_defsent_cell(const nlohmann::json& cell, const std::string& run_dir);

// Throws seqlab::Error when a defsent cell's fields are missing, unknown or impossible.
void check_defsent_cell(const nlohmann::json& cell);

}  // namespace seqlab
