#include "seqlab/exp/cells/attention_shape.h"

#include "seqlab/convert/convert.h"
#include "seqlab/core/error.h"
#include "seqlab/exp/attention_shape.h"
#include "seqlab/exp/cells/kinds.h"
#include "seqlab/mixers/linear_attention.h"
#include "seqlab/mixers/softmax_attention.h"
#include "seqlab/model/model.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/model/model_task.h"
#include "seqlab/tasks/lm.h"
#include "seqlab/tasks/registry.h"

#include <cmath>

namespace seqlab {

namespace {

template <class Mixer>
std::shared_ptr<Mixer> mixer_of(SeqModelImpl& m, size_t l) {
  return std::dynamic_pointer_cast<Mixer>(m.blocks->ptr<BlockImpl>(l)->mixer);
}

// The first `windows` windows of `length` tokens of the teacher's valid split: [N, length].
torch::Tensor valid_windows(const std::string& teacher_dir, int64_t windows, int64_t length) {
  const auto j = read_config_json(teacher_dir);
  SEQLAB_CHECK(j.contains("task"), "attention_shape: {} has no task section", teacher_dir);
  auto task_cfg = TaskConfig::from_json(j["task"], teacher_dir);
  resolve_task_tokenizer(task_cfg, teacher_dir);
  const auto task = make_task(task_cfg);
  const auto* lm = dynamic_cast<const LmTask*>(task.get());
  SEQLAB_CHECK(lm, "attention_shape: {}'s task is not a language model", teacher_dir);
  const auto& toks = lm->tokens(Split::valid);
  SEQLAB_CHECK(static_cast<int64_t>(toks.size()) >= windows * length,
               "attention_shape: the valid split has {} tokens, {} windows of {} need more",
               toks.size(), windows, length);
  return torch::tensor(std::vector<int64_t>(toks.begin(), toks.begin() + windows * length))
      .view({windows, length});
}

// The student's linear attention weights of layer l on x, or the teacher's own for "softmax".
torch::Tensor student_weights(SeqModelImpl* student, size_t l, const torch::Tensor& x,
                              const torch::Tensor& softmax) {
  if (!student) return softmax;
  auto lin = mixer_of<LinearAttentionImpl>(*student, l);
  SEQLAB_CHECK(lin, "attention_shape: layer {} of the model is not linear attention", l);
  return lin->attention_weights(x);
}

nlohmann::json run_attention_shape(const nlohmann::json& cell, const std::string&) {
  const auto c = read_spec<AttentionShapeCellConfig>(cell, cell_source(cell));
  SEQLAB_CHECK(c.to.has_value() != c.from.has_value(),
               "cell {}: give exactly one of \"to\" (a feature map) and \"from\" (a model "
               "directory)",
               c.id);
  torch::NoGradGuard ng;
  auto teacher = load_model_dir(c.teacher).model;
  teacher->eval();
  SeqModel student{nullptr};
  std::string map = "softmax";
  if (c.from) {
    student = load_model_dir(*c.from).model;
    map = student->config().mixer.feature_map;
  } else if (*c.to != "softmax") {
    ConvertConfig cc;
    cc.to = *c.to;
    cc.init_seed = c.init_seed;
    student = convert_model(*teacher, cc);
    map = *c.to;
  }
  if (student) student->eval();
  const auto tokens = valid_windows(c.teacher, c.windows, c.length);
  const auto inputs = teacher->mixer_inputs(tokens);
  nlohmann::json rows = nlohmann::json::array();
  for (size_t l = 0; l < inputs.size(); ++l) {
    auto soft = mixer_of<SoftmaxAttentionImpl>(*teacher, l);
    SEQLAB_CHECK(soft, "attention_shape: layer {} of {} is not softmax attention", l, c.teacher);
    const auto ref = soft->attention_weights(inputs[l]);  // [N,H,T,T]
    const auto w = student_weights(student ? student.get() : nullptr, l, inputs[l], ref);
    for (const auto& h : attention_shape(ref, w, static_cast<int64_t>(l))) {
      AttentionShapeRow r;
      r.cell = c.id, r.label = c.label.value_or(c.id), r.map = map, r.source = c.source;
      r.layer = h.layer, r.head = h.head, r.windows = c.windows, r.length = c.length;
      r.rows = h.rows, r.rows_rho = h.rows_rho;
      r.entropy_softmax = h.entropy_ref, r.entropy = h.entropy, r.negative_mass = h.negative_mass;
      if (!std::isnan(h.spearman)) r.spearman = h.spearman;
      rows.push_back(r.to_json());
    }
  }
  return {{"id", c.id}, {"rows", rows}};
}

}  // namespace

SEQLAB_REGISTER_CELL_KIND("attention_shape", 90,
                          "Hedgehog's spikiness (row entropy) and monotonicity (Spearman rho with "
                          "softmax) of a linear attention against its softmax teacher",
                          run_attention_shape, check_spec<AttentionShapeCellConfig>);

}  // namespace seqlab
