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
// for `rounds` rounds
// on all entries of the sample, each round from a fresh copy of the MLM encoder against entry
// embeddings built by the previous round's encoder (round 1: the MLM encoder), whitened or not
// ("defsent+" / "defsent+white", one row per round).
//
// Row: {"kind": "defsent", cell, method, label, round, seed, task ("wordnet_defsent"), arch,
// d_model, n_layer, pooling, train_length and test_length (max_tokens), train_entries,
// train_examples, steps, train_seconds, first_loss, last_loss, mrr, recall10 (= accuracy),
// queries, candidates, spearman, pairs, mean_cos, partition, top_pc}.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace seqlab {

nlohmann::json run_defsent_cell(const nlohmann::json& cell, const std::string& run_dir);

// Throws seqlab::Error when a defsent cell's fields are missing, unknown or impossible.
void check_defsent_cell(const nlohmann::json& cell);

}  // namespace seqlab
