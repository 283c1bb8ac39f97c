// Cell kind attention_shape (exp/cells/attention_shape.cpp): Hedgehog's spikiness and
// monotonicity (exp/attention_shape.h) of one linear-attention model against its softmax teacher.
//
//   {"teacher": DIR, "to": MAP}   the teacher converted to feature map MAP, untrained (the maps as
//                                 conversion initialises them; "softmax" compares the teacher
//                                 with itself, the check that the pipeline gives entropy = the
//                                 teacher's and rho = 1)
//   {"teacher": DIR, "from": DIR} a converted model directory (its maps trained by attention
//                                 transfer and/or finetuning)
// Data: the first `windows` consecutive windows of `length` tokens of the teacher's valid split.
// Both attentions read the teacher's layer inputs (Model::mixer_inputs), as the attention-transfer
// loss does, so each row compares the two over the same query and keys. Paths are relative to the
// working directory (the repository root). Rows: one AttentionShapeRow per (layer, head).
#pragma once

#include "seqlab/exp/cells/fields.h"

#include <optional>
#include <string>

namespace seqlab {

struct AttentionShapeCellConfig : CellSpec {
  std::optional<std::string> label;  // default the id
  std::string teacher;
  std::optional<std::string> to, from;  // exactly one
  std::string source;                   // what the report calls how the maps were trained
  uint64_t init_seed = 1;
  int64_t windows = 8, length = 256;

  template <class V>
  void visit(V&& v) {
    CellSpec::visit(v);
    v(label, "label", kUnset, "the row's name (default the id)");
    v(teacher, "teacher", kRequired, "the softmax teacher's model directory");
    v(to, "to", kUnset, "a feature map: convert the teacher to it, untrained (or softmax)");
    v(from, "from", kUnset, "a converted model directory (trained maps)");
    v(source, "source", std::string("untrained"),
      "how the maps were trained: untrained | transfer | finetuned");
    v(init_seed, "init_seed", uint64_t{1}, "seed of the untrained maps' parameters");
    v(windows, "windows", int64_t{8}, "validation windows measured");
    v(length, "length", int64_t{256}, "tokens per window");
  }
  AttentionShapeCellConfig() { visit(FieldDefaults{}); }
};

struct AttentionShapeRow {
  std::string kind = "attention_shape";
  std::string cell, label, map, source;
  int64_t layer = 0, head = 0, windows = 0, length = 0, rows = 0, rows_rho = 0;
  double entropy_softmax = 0, entropy = 0, negative_mass = 0;
  std::optional<double> spearman;  // absent when no row had a rank correlation

  template <class V>
  void visit(V&& v) {
    v(kind, "kind", std::string("attention_shape"), "row kind");
    v(cell, "cell", std::string(), "the cell");
    v(label, "label", std::string(), "the model's name");
    v(map, "map", std::string(), "the feature map (softmax: the teacher itself)");
    v(source, "source", std::string(), "untrained | transfer | finetuned");
    v(layer, "layer", int64_t{0}, "layer");
    v(head, "head", int64_t{0}, "head");
    v(windows, "windows", int64_t{0}, "validation windows");
    v(length, "length", int64_t{0}, "tokens per window");
    v(rows, "rows", int64_t{0}, "attention rows measured (queries with two or more keys)");
    v(rows_rho, "rows_rho", int64_t{0}, "rows with a rank correlation");
    v(entropy_softmax, "entropy_softmax", 0.0, "the teacher's mean row entropy, nats");
    v(entropy, "entropy", 0.0, "the linear attention's mean row entropy, nats");
    v(negative_mass, "negative_mass", 0.0, "mean share of negative weight per row");
    v(spearman, "spearman", kUnset, "mean Spearman rho with the softmax row");
  }
  nlohmann::json to_json() const { return write_fields(*this); }
};

}  // namespace seqlab
